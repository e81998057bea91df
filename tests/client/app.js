// An application written with a published event-sourcing library: evtstore 12.0.1 and its
// Knex provider on MariaDB (mysql2), as its README shows it. Its event table and bookmarks
// come from the library's own migrate(); its read-model table from the application's own
// Knex migration; the table is filled by the library's own event handler. Two aggregates,
// accounts and customers, share the event type "closed". tests/evtstore_test.cc drives it
// and compares what rewind rebuilds with what this handler builds (and with SQL).
//
//   node app.js migrate
//   node app.js append COMMANDS WRITERS SEED [BLOCK]   (concurrent writers: version conflicts
//                                             retried; BLOCK: every BLOCK commands go to 60
//                                             fresh accounts and customers, as perf/evtstore asks)
//   node app.js project                       (the handler, from its bookmark to the end)
//   node app.js rebuild                       (the library's own rebuild: empty table, bookmark 0)
//
// The connection: REWIND_SOCKET, REWIND_USER, REWIND_PASSWORD, REWIND_DATABASE.
'use strict'
const { createAggregate, createDomain, createCommands, VersionError } = require('evtstore')
const { createProvider, migrate } = require('evtstore/provider/knex')

const db = require('knex')({
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
  // The provider asks for .returning(), which MySQL has not: Knex warns on every append.
  log: { warn: (m) => { if (!String(m).includes('.returning()')) console.warn(m) } },
})

const provider = createProvider({ limit: 1000, events: () => db.table('events'), bookmarks: () => db.table('bookmarks') })

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

const { domain, createHandler } = createDomain({ provider }, { accounts, customers })

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

// The application's read model, as its own handler keeps it.
const BOOKMARK = 'account-balances'
function balancesHandler() {
  const h = createHandler(BOOKMARK, ['accounts'])
  const upsert = (id, row, merge) => db.table('account_balances').insert({ account_id: id, ...row }).onConflict('account_id').merge(merge)
  h.handle('accounts', 'opened', (id) => upsert(id, { status: 'open' }, ['status']))
  h.handle('accounts', 'deposited', (id, e) =>
    upsert(id, { balance: e.amount }, { balance: db.raw('balance + ?', [e.amount]) }))
  h.handle('accounts', 'withdrawn', (id, e) =>
    upsert(id, { balance: -e.amount }, { balance: db.raw('balance - ?', [e.amount]) }))
  h.handle('accounts', 'closed', (id) => upsert(id, { status: 'closed' }, ['status']))
  return h
}

async function migrateAll() {
  await migrate({ client: db, events: 'events', bookmarks: 'bookmarks' })
  if (!(await db.schema.hasTable('account_balances'))) {
    await db.schema.createTable('account_balances', (t) => {
      t.string('account_id').primary()
      t.decimal('balance', 14, 2).notNullable().defaultTo(0)
      t.string('status', 16).notNullable().defaultTo('open')
      t.comment('balances per account, kept by the account-balances handler')
    })
  }
}

// A small deterministic generator, so that a seed gives the same commands.
function rng(seed) {
  let s = seed >>> 0
  return () => ((s = (Math.imul(s, 1664525) + 1013904223) >>> 0) / 4294967296)
}

async function append(commands, writers, seed, block = Infinity) {
  const r = rng(seed)
  const plan = []
  for (let i = 0; i < commands; ++i) {
    const n = Math.floor(r() * 60) + 60 * Math.floor(i / block)
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
          ++conflicts  // another writer appended that version first: the command runs again
        }
      }
    }
  }
  await Promise.all(Array.from({ length: writers }, writer))
  console.log(JSON.stringify({ commands, conflicts }))
}

async function project() {
  const started = Date.now()
  const handled = await balancesHandler().runOnce()
  console.log(JSON.stringify({ handled, seconds: (Date.now() - started) / 1000 }))
}

async function main() {
  const [command, ...args] = process.argv.slice(2)
  if (command === 'migrate') await migrateAll()
  else if (command === 'append') await append(Number(args[0]), Number(args[1]), Number(args[2]), args[3] ? Number(args[3]) : Infinity)
  else if (command === 'project') await project()
  else if (command === 'rebuild') {
    await db.table('account_balances').del()
    await db.table('bookmarks').where('bookmark', BOOKMARK).del()
    await project()
  } else throw new Error(`unknown command ${command}`)
}

// The library's handler polls on a timer from its creation on: the process ends when the command has.
main().then(async () => { await db.destroy(); process.exit(0) },
  async (e) => { console.error(e.stack || String(e)); await db.destroy(); process.exit(1) })
