// `rewind stress`: the four questions an event-sourced team asks of its infrastructure,
// answered with numbers on the user's own MariaDB, beside the article "How Fast Can You
// Replay 100,000 Events? I Measured It." (EventStoreDB + PostgreSQL). First the server's
// commit (flush) latency, which decides every write figure; then
//   1 aggregate load time vs stream length (fetch, decode, fold apart)
//   2 snapshot + a 50-event tail vs full replay, the crossover length, the snapshot write
//     cost per command
//   3 projection rebuild at five volumes: one save per event, batches of 50 (one multi-row
//     statement and one commit each), rewind's pipeline (a declared read model), and a
//     projection of one event type in five (20 %) filtered in the server vs the client
//   4 append throughput, 1 to 100 writers (connected before the clock, which starts at a
//     barrier): commands of 11 events in one transaction, on distinct streams and on one
//     stream, there as the article (a writer keeps the order it knows; a conflict reads
//     only the events after its version) and reloaded whole at every attempt (a retry after
//     a jittered backoff; conflicts, retries and give-ups counted), then a check that no
//     acknowledged append is lost or duplicated.
// Each point runs --repeat times (median and min-max reported).
//
// It works in its own database (created; dropped at the end unless --keep; refused when it
// holds anything rewind stress did not create) and never touches the event table. Writes
// report.md, results.csv (question,case,metric,value,unit) and one PNG per question.
//
// Thread safety: StressCommand runs on the calling thread (its writers run on threads and
// connections of their own, joined before it returns); `stop` may be set from any thread.
#pragma once

#include <atomic>
#include <cstdio>

#include "config/options.h"

namespace rw {

// Returns the exit code: 0, or 1 on an error or a lost/duplicated append (after the report).
int StressCommand(const StressOptions& options, const std::atomic<bool>& stop, std::FILE* out);

}  // namespace rw
