// EventGenerator: sample `stored_events` rows for the demo, the tests and the benchmark.
//
// Every event is built from a line of a real Apache access log (ip, user agent, path,
// the raw line), spread evenly over `span_days` with some jitter (so visitedAt is not
// monotonic in id order, as in real backfilled stores). The oldest `escaped_fraction`
// of events are encoded the old way (`\/` and `\uXXXX` escapes), the rest with literal
// UTF-8. Optional extras: odd URLs (quotes, backslashes, emoji, accents, 2,000 bytes),
// other event classes, and bad payloads of every kind the decoder must reject.
//
// Deterministic for a given seed. Thread-compatible.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "base/status.h"
#include "sample/shop_events.h"
#include "stages/db/connection.h"

namespace rw {

struct AccessLogLine {
  std::string ip, path, user_agent, raw;
};

struct GeneratorOptions {
  uint64_t events = 1'000'000;
  uint64_t seed = 42;
  uint64_t first_index = 0;        // index of the first event (to append more later)
  int32_t start_day = 18993;       // 2022-01-01, days since 1970-01-01
  int32_t span_days = 730;         // the events cover this many days
  uint64_t total_for_spread = 0;   // spread times as if there were this many (0: events)
  double escaped_fraction = 0.4;   // oldest share encoded with \/ and \uXXXX
  uint64_t other_class_every = 50; // every Nth event is of another class (0: none)
  uint64_t odd_url_every = 997;    // every Nth event gets an odd URL (0: none)
  uint64_t bad_every = 0;          // every Nth event has a bad payload (0: none)
  // Ids as production tables have them (0 and 0.0: the table's auto-increment, dense).
  // id_step N: ids go up by N (a Galera node's auto_increment_increment); holes F: each
  // id is burned (a rolled-back insert) with probability F, deterministically per seed.
  // The first id follows the table's highest id (1 on an empty table).
  uint64_t id_step = 0;
  double holes = 0;
};

// Ids that `options` gives its events (id_step and holes), the first one after `after`;
// empty when the table's auto-increment assigns them. Exposed for tests.
std::vector<int64_t> GeneratedIds(const GeneratorOptions& options, int64_t after);

// Parses a combined-format access log. Lines that do not parse are skipped.
Result<std::vector<AccessLogLine>> ReadAccessLog(const std::string& path);

// Writes the events as LOAD DATA rows: [id,] uuid, eventClass, payload (\N for NULL),
// createdAt; the id column only when `ids` is not empty (one per event).
void WriteEventRows(const GeneratorOptions& options, const std::vector<AccessLogLine>& log,
                    std::ostream& out, const std::vector<int64_t>& ids = {});

// The default event table (the blog's schema).
std::string EventTableDdl(const std::string& table);

// Creates the table if missing and appends the events (LOAD DATA LOCAL INFILE), with the
// ids of GeneratedIds when the options ask for a shape.
Status LoadEvents(Connection& connection, const std::string& table,
                  const GeneratorOptions& options, const std::vector<AccessLogLine>& log);

// Deletes the events whose ids are in [lo, hi] for each "lo:hi" of `ranges` (comma
// separated): an erasure request, a purged tenant.
Status DeleteIdRanges(Connection& connection, const std::string& table, const std::string& ranges);

// Appends shop events (sample/shop_events.h) to an existing event table, in
// multi-row INSERTs of about 1 MiB.
Status InsertShopEvents(Connection& connection, const std::string& table, const std::vector<shop::Event>& events);

// The access log fixture: $REWIND_ACCESS_LOG, else the copy installed beside an installed
// rewind-gen (<prefix>/share/rewind/apache-combined/access.log), else the copy inside this
// repository (tests/data/apache-combined/access.log, see SOURCE.md there for its origin and
// licence).
std::string FindAccessLog();

}  // namespace rw
