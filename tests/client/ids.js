// An application whose events have ids the clients make, as @schemeless/event-store's TypeORM
// adapter keeps them: a ULID (the published `ulid` package, monotonic per writer) or a UUIDv7
// (the published `uuid` package), as text or as 16 bytes, and a timestamp(6) time. Several
// writers, each with its own clock (SKEW_MS apart: application servers whose clocks disagree),
// and an importer whose transaction stays open while others commit. tests/ids_test.cc drives
// it and checks what rewind rebuilds against the server's own GROUP BY.
//
//   node ids.js create ulid|uuid|uuidbin
//   node ids.js append ulid|uuid|uuidbin EVENTS WRITERS SEED SKEW_MS
//   node ids.js hold ulid|uuid|uuidbin EVENTS FILE   (inserts EVENTS in one transaction, says
//                                                     "open" on stderr, commits once FILE exists)
//
// The connection: REWIND_SOCKET, REWIND_USER, REWIND_PASSWORD, REWIND_DATABASE.
'use strict'
const fs = require('fs')
const mysql = require('mysql2/promise')
const { monotonicFactory } = require('ulid')
const { v7: uuidv7, parse: uuidParse } = require('uuid')

const [, , command, form, ...rest] = process.argv

function connect () {
  return mysql.createConnection({
    socketPath: process.env.REWIND_SOCKET,
    user: process.env.REWIND_USER,
    password: process.env.REWIND_PASSWORD || '',
    database: process.env.REWIND_DATABASE,
  })
}

// A writer's id maker, its clock `skew` ms off.
function idMaker (skew) {
  const ulid = monotonicFactory()
  if (form === 'ulid') return () => ulid(Date.now() + skew)
  return () => {
    const text = uuidv7({ msecs: Date.now() + skew })
    return form === 'uuidbin' ? Buffer.from(uuidParse(text)) : text
  }
}

// A seeded generator (mulberry32), so that a run's events can be told again.
function random (seed) {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6D2B79F5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

function event (next, rnd) {
  const account = Math.floor(rnd() * 40)
  const type = ['deposited', 'deposited', 'withdrawn', 'renamed'][Math.floor(rnd() * 4)]
  const cents = 1 + Math.floor(rnd() * 99999)
  const payload = type === 'renamed' ? { name: `holder ${Math.floor(rnd() * 1000)}` } : { amount: cents / 100 }
  return [next(), 'bank', type, JSON.stringify(payload), `acc-${account}`, new Date()]
}

const kInsert = 'INSERT INTO event_store_entity (id, domain, type, payload, identifier, created) VALUES ?'

async function main () {
  const db = await connect()
  try {
    if (command === 'create') {
      const id = form === 'uuidbin' ? 'BINARY(16)' : form === 'uuid' ? 'CHAR(36)' : 'VARCHAR(255)'
      await db.query(`CREATE TABLE event_store_entity (id ${id} NOT NULL PRIMARY KEY, domain VARCHAR(255) NOT NULL,
        type VARCHAR(255) NOT NULL, meta TEXT NULL, payload TEXT NOT NULL, identifier VARCHAR(255) NOT NULL,
        correlationId VARCHAR(255) NULL, causationId VARCHAR(255) NULL, created TIMESTAMP(6) NOT NULL,
        KEY (identifier)) DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_general_ci`)
    } else if (command === 'append') {
      const [events, writers, seed, skew] = rest.map(Number)
      const jobs = []
      for (let w = 0; w < writers; ++w) {
        jobs.push((async () => {
          const c = await connect()
          const next = idMaker(-w * skew)
          const rnd = random(seed * 100 + w)
          for (let done = w; done < events;) {
            const rows = []
            for (; done < events && rows.length < 50; done += writers) rows.push(event(next, rnd))
            await c.query(kInsert, [rows])
          }
          await c.end()
        })())
      }
      await Promise.all(jobs)
    } else if (command === 'hold') {
      const [events, file] = [Number(rest[0]), rest[1]]
      const next = idMaker(0)
      const rnd = random(7)
      await db.beginTransaction()
      const rows = []
      for (let i = 0; i < events; ++i) rows.push(event(next, rnd))
      await db.query(kInsert, [rows])
      process.stderr.write('open\n')
      while (!fs.existsSync(file)) await new Promise((resolve) => setTimeout(resolve, 50))
      await db.commit()
    }
  } finally {
    await db.end()
  }
}

main().catch((e) => { console.error(e.message); process.exit(1) })
