// `rewind stress`: the four questions an event-sourced team asks of its infrastructure,
// answered with numbers on the user's own MariaDB, beside a published stress test of
// EventStoreDB + PostgreSQL:
//   1 aggregate load time vs stream length (fetch, decode, fold apart)
//   2 snapshot vs full replay, the crossover length, the snapshot write cost
//   3 projection rebuild: one save per event, batches of 50, rewind's pipeline (a declared
//     read model), and a projection of one event type filtered in the server vs the client
//   4 append throughput: 1, 10, 100 writers on distinct streams; 10 on one stream with
//     optimistic concurrency (conflicts and deadlocks retried), then a check that no
//     acknowledged append is lost or duplicated.
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
