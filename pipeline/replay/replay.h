// Replay: one whole rebuild run. It reads as Prepare -> Rebuild -> Catch up -> Cut over
// -> Follow:
//
//  1. Prepare: connect, check the event table (its id column included), bring rewind's
//     bookkeeping tables to the current layout, take a named lock per read model
//     (GET_LOCK), refuse any table in the way that rewind did not make (before any work),
//     create a shadow table `<table>__rewind_new` per read model, recorded as rewind's (or,
//     with --resume, find the interrupted one; a resume refuses a build of another event
//     source, another set of read models or another version of a read model).
//  2. Rebuild: one pass from the lowest checkpoint to the head id taken at the start;
//     every read model commits its rows with its checkpoint.
//  3. Catch up: the application kept appending; read what it appended (and the ids that
//     committed late) until little is left.
//  4. Cut over: hold inserts into the event table off (LOCK TABLES ... READ on a
//     connection of its own, waiting at most about a second for open transactions; once
//     held, no insert is open, so every gap below the head is final), apply the last
//     events, swap every shadow table in with one RENAME TABLE (again waiting at most
//     about a second), release. A wait that times out is reported and retried with
//     backoff; after --cutover-timeout the run gives up cleanly (exit 6): the live
//     tables untouched, every build committed and resumable.
//  5. Follow (--follow): keep applying new events, and late commits within the settle
//     window, to the live tables until stopped.
//
// On error nothing is swapped: the live tables are untouched and the shadow tables keep
// their committed checkpoints. On `stop` (a signal) every projector commits what it
// applied, and the run can be resumed.
//
// Thread safety: a run is driven from the calling thread (the graph decodes and applies on
// threads of its own, pipeline/engine/graph.h); `stop` may be set from any thread or a
// signal handler. Two runs on one read model are kept apart by the server's named locks.
#pragma once

#include <atomic>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "config/options.h"
#include "pipeline/engine/read_models.h"
#include "pipeline/engine/summary.h"
#include "pipeline/replay/verify.h"
#include "projectors/projector.h"
#include "stages/flow/reader.h"
#include "stages/db/checkpoint_store.h"
#include "stages/db/table_admin.h"

namespace rw {

// What distinguishes a rebuild from a verify run.
struct RunPlan {
  std::string table_suffix = table_admin::kShadowSuffix;  // where the build writes, beside each live table
  std::string lock_prefix = "rewind";        // its named locks
  bool swap = true;                          // cut over at the end
  // Scratch builds (verify) clean up after themselves, and before, what a killed run of
  // their kind left behind when nobody holds its lock.
  bool scratch = false;
  // Runs on the admin connection after a successful build, while the locks are held.
  std::function<Status(Connection&)> after_build;
};

// The plan of a replay with these options: a rebuild that swaps, or with --into a build
// beside the live tables that never does.
RunPlan PlanFor(const ReplayOptions& options);
// The table a run's named lock is on, for the read model whose live table is `live`: a
// build beside the live tables (--into) locks its own table, so it runs beside a rebuild
// or a follow of the live ones; the others lock the live table.
std::string LockedTable(const RunPlan& plan, const std::string& live);

// What a run of `plan` would create, replace or drop for the read model whose live table is
// `live`, checked against what rewind may touch: never the event table or rewind's
// bookkeeping, and beside the live table only tables rewind recorded creating (its build
// target, and for a swap the old copy). The first table in the way, named with what to do.
// Changes nothing; a run checks every read model before any work, as does --dry-run.
Status CheckTablesInTheWay(Connection& c, const RunPlan& plan, const std::string& events_table,
                           const std::string& live);
// Refuses an --until-id below the first event (an empty build) unless --allow-empty.
Status CheckUntilId(Connection& c, const ReplayOptions& options);

ReplaySummary RunRebuild(const ReplayOptions& options,
                         std::vector<std::unique_ptr<Projector>> projectors,
                         const std::atomic<bool>& stop, const RunPlan& plan);

// Rebuilds beside, cuts over; with options.follow, then keeps applying new events.
ReplaySummary Replay(const ReplayOptions& options,
                     std::vector<std::unique_ptr<Projector>> projectors,
                     const std::atomic<bool>& stop);

}  // namespace rw
