// The events of perf/evtstore, written by the library itself: tests/client/app.js's `append`
// (evtstore 12.0.1, its Knex provider on MariaDB, the same aggregates, commands and
// deterministic generator, concurrent writers retrying their version conflicts), with one
// difference: every 4,000 commands go to 60 fresh accounts and 60 fresh customers. The
// application's own append draws every command from acc-0..59, which all get closed within a
// few thousand commands: its events stop at about 3,000 whatever the number of commands. Here
// every block of 4,000 commands is the application's mix again (the first block is exactly
// `app.js append 4000 WRITERS SEED`'s ids), so the events grow with the commands (~0.45 a
// command) and no aggregate grows past the application's own.
//
//   node perf/evtstore_append.js COMMANDS WRITERS SEED     (prints JSON {commands, conflicts})
//
// The connection: REWIND_SOCKET, REWIND_USER, REWIND_PASSWORD, REWIND_DATABASE. The packages
// are the test client's (tests/client/node_modules, installed by scripts/setup).
'use strict'
const path = require('path')
const clientRequire = require('module').createRequire(path.join(__dirname, '..', 'tests', 'client', 'app.js'))
const { createAggregate, createDomain, createCommands, VersionError } = clientRequire('evtstore')
const { createProvider } = clientRequire('evtstore/provider/knex')

const db = clientRequire('knex')({
  client: 'mysql2',
  connection: {
    socketPath: process.env.REWIND_SOCKET,
    user: process.env.REWIND_USER,
    password: process.env.REWIND_PASSWORD || '',
    database: process.env.REWIND_DATABASE,
    supportBigNumbers: true,
    bigNumberStrings: true,
  },
  pool: { min: 1, max: 8 },
  log: { warn: (m) => { if (!String(m).includes('.returning()')) console.warn(m) } },
})

const provider = createProvider({ limit: 1000, events: () => db.table('events'), bookmarks: () => db.table('bookmarks') })

// As in tests/client/app.js.
const accounts = createAggregate({
  stream: 'accounts',
  create: () => ({ open: false, closed: false, balance: 0 }),
  fold: (e, a) => {
    switch (e.type) {
      case 'opened': return { open: true }
      case 'deposited': return { balance: a.balance + e.amount }
      case 'withdrawn': return { balance: a.balance - e.amount }
      case 'closed': return { closed: true }
    }
  },
})
const customers = createAggregate({
  stream: 'customers',
  create: () => ({ registered: false, closed: false }),
  fold: (e) => {
    switch (e.type) {
      case 'registered': return { registered: true }
      case 'closed': return { closed: true }
    }
  },
})

const { domain } = createDomain({ provider }, { accounts, customers })

const accountCmd = createCommands(domain.accounts, {
  async open(cmd, agg) { if (!agg.open) return { type: 'opened' } },
  async deposit(cmd, agg) { if (agg.open && !agg.closed) return { type: 'deposited', amount: cmd.amount } },
  async withdraw(cmd, agg) { if (agg.open && !agg.closed) return { type: 'withdrawn', amount: cmd.amount } },
  async close(cmd, agg) { if (agg.open && !agg.closed) return { type: 'closed' } },
})
const customerCmd = createCommands(domain.customers, {
  async register(cmd, agg) { if (!agg.registered) return { type: 'registered' } },
  async close(cmd, agg) { if (agg.registered && !agg.closed) return { type: 'closed' } },
})

function rng(seed) {
  let s = seed >>> 0
  return () => ((s = (Math.imul(s, 1664525) + 1013904223) >>> 0) / 4294967296)
}

const BLOCK = 4000  // commands per set of 60 accounts and 60 customers

async function append(commands, writers, seed) {
  const r = rng(seed)
  const plan = []
  for (let i = 0; i < commands; ++i) {
    const n = Math.floor(r() * 60) + 60 * Math.floor(i / BLOCK)  // app.js: Math.floor(r() * 60)
    const pick = r()
    const cents = 1 + Math.floor(r() * 99999)
    if (pick < 0.08) plan.push(() => customerCmd[r() < 0.5 ? 'register' : 'close'](`cust-${n}`, {}))
    else if (pick < 0.15) plan.push(() => accountCmd.open(`acc-${n}`, {}))
    else if (pick < 0.17) plan.push(() => accountCmd.close(`acc-${n}`, {}))
    else if (pick < 0.65) plan.push(() => accountCmd.deposit(`acc-${n}`, { amount: cents / 100 }))
    else plan.push(() => accountCmd.withdraw(`acc-${n}`, { amount: cents / 100 }))
  }
  let next = 0, conflicts = 0
  async function writer() {
    while (next < plan.length) {
      const command = plan[next++]
      for (;;) {
        try { await command(); break } catch (e) {
          if (!(e instanceof VersionError) && e.name !== 'VersionError') throw e
          ++conflicts
        }
      }
    }
  }
  await Promise.all(Array.from({ length: writers }, writer))
  console.log(JSON.stringify({ commands, conflicts }))
}

const [commands, writers, seed] = process.argv.slice(2).map(Number)
if (!(commands > 0 && writers > 0 && Number.isFinite(seed))) {
  console.error('usage: node perf/evtstore_append.js COMMANDS WRITERS SEED')
  process.exit(2)
}
append(commands, writers, seed).then(async () => { await db.destroy(); process.exit(0) },
  async (e) => { console.error(e.stack || String(e)); await db.destroy(); process.exit(1) })
