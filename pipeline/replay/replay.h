// Replay: one whole rebuild run of the selected read models from the event table, as a
// build and then one of three finishers (RunRebuild; the parts in replay_build.h and
// finishers.h):
//
//  Build (every kind of run)
//   1. Prepare: connect and check the event source (the event table, its id column,
//      --until-id); plan what to read and decode; name each read model's build table and
//      refuse any table in the way that rewind did not make (before any work); bring
//      rewind's bookkeeping tables to the current layout, start the heartbeat, take a named
//      lock per read model (GET_LOCK) and check the tables in the way again; read the head;
//      create a build table per read model, recorded as rewind's, with its checkpoint (or,
//      with --resume, find the interrupted one; a resume refuses a build of another event
//      source, another set of read models or another version of a read model), and give
//      it a runner; start the reader (and its throttle), the failure recorder and decoder.
//   2. Rebuild: one pass from the lowest checkpoint to the head id taken at the start;
//      every read model commits its rows with its checkpoint.
//   A stop asked by then ends the run here ("stopped before the swap"), resumable.
//
//  Then one finisher, by the plan:
//   - swap (a rebuild, `<table>__rewind_new`; cutover.cc): catch up on what the application
//     appended meanwhile, refuse an empty build over a live table with rows, check the
//     failure budget, cut over (hold inserts off, apply the last events, swap every shadow
//     table in with one RENAME TABLE; bounded waits retried until --cutover-timeout, then
//     exit 6 with the live tables untouched), and with --follow keep applying new events,
//     and late commits within the settle window, to the live tables until stopped.
//   - into (--into SUFFIX): check the failure budget, mark the build "built"; never swapped.
//   - build only (--build-only): the swap's build (`<table>__rewind_new`, the live table's
//     lock), finished as --into is: marked "built", not swapped. Builders on several hosts
//     each build some read models; then one swap run with --resume takes every built one
//     (whatever set it was built with; never one of another event source or read-model
//     version), catches it up to the head and swaps them all in one cut-over. With
//     --segment I/N a builder builds the share of each declared read model whose keys hash
//     to segment I; the swap first merges the N segments into one build (segments.h).
//   - scratch (verify, verify.h): the plan's after_build check (the compare), then drop the
//     scratch tables, then the failure budget.
//
// On error nothing is swapped: the live tables are untouched and the build tables keep
// their committed checkpoints. On `stop` (a signal) every projector commits what it
// applied, and the run can be resumed.
//
// Thread safety: RunRebuild and Replay run on the calling thread (the graph's own threads
// inside); `stop` may be set from any thread or a signal handler. Runs in separate
// processes exclude each other per read model by their named locks. The other functions
// are stateless, each using the connection it is given.
#pragma once

#include <atomic>
#include <cstdio>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "pipeline/engine/run_spec.h"
#include "pipeline/engine/read_models.h"
#include "pipeline/engine/summary.h"
#include "pipeline/replay/verify.h"
#include "projectors/projector.h"
#include "stages/flow/reader.h"
#include "stages/db/checkpoint_store.h"
#include "stages/db/live_shape.h"
#include "stages/db/table_admin.h"

namespace rw {

// What distinguishes a rebuild from a verify run.
struct RunPlan {
  std::string table_suffix = table_admin::kShadowSuffix;  // where the build writes, beside each live table
  std::string lock_prefix = "rewind";        // its named locks
  // How the run finishes: kSwap cuts over at the end; kInto keeps the build beside the
  // live tables, marked built; kBuildOnly builds the swap's shadow tables and marks them
  // built, for a later swap run (--resume) to take; kScratch (verify) checks and drops its
  // tables, and first drops what a killed run of its kind left behind when nobody holds
  // its lock.
  enum class Finish { kSwap, kInto, kBuildOnly, kScratch } finish = Finish::kSwap;
  bool swap() const { return finish == Finish::kSwap; }
  // Whether the build is the shadow a swap takes: now (kSwap) or in a later run (kBuildOnly).
  bool shadow() const { return finish == Finish::kSwap || finish == Finish::kBuildOnly; }
  bool scratch() const { return finish == Finish::kScratch; }
  // kBuildOnly with --segment: the share of each read model whose keys hash to it, in
  // `<table>__rewind_seg<I>of<N>` under a lock of its own (pipeline/replay/segments.h).
  std::optional<Segment> segment;
  // A scratch build's check: runs on the admin connection after a successful build, while
  // the locks are held, before the scratch tables are dropped.
  std::function<Status(Connection&)> after_build;
};

// The plan of a replay with these options: a rebuild that swaps, with --into a build
// beside the live tables that never does, or with --build-only the swap's build alone.
RunPlan PlanFor(const RunSpec& options);
// The table a run's named lock is on, for the read model whose live table is `live`: a
// build beside the live tables (--into) locks its own table, so it runs beside a rebuild
// or a follow of the live ones, and so does a segment's build (the lock names the segment:
// one builder per segment); the others lock the live table.
std::string LockedTable(const RunPlan& plan, const std::string& live);

// What a run of `plan` would create, replace or drop for the read model whose live table is
// `live`, checked against what rewind may touch: a build table's name the server can hold
// and not one of rewind's own; never the event table or rewind's
// bookkeeping, and beside the live table only tables rewind recorded creating (its build
// target, and for a swap the old copy). The first table in the way, named with what to do.
// Changes nothing; a run checks every read model before any work, as does --dry-run.
Status CheckTablesInTheWay(Connection& c, const RunPlan& plan, const std::string& events_table,
                           const std::string& live);
// How a run treats the live table of `p` (stages/db/live_shape.h): a compiled read model's
// is rewind's (kNew or kRewinds); a declared one's may be the application's, kept in its shape,
// or (`reshape`) replaced and kept aside. Refuses, with its column-by-column account, an
// application's table the read model's rows do not fit. Changes nothing.
Result<live_shape::Judgement> JudgeLiveTable(Connection& c, const Projector& p, bool reshape);
// Refuses an --until-id below the first event (an empty build) unless --allow-empty.
Status CheckUntilId(Connection& c, const RunSpec& options);

// Builds by `plan`, then finishes as the plan says (above). One build: it never runs another.
ReplaySummary RunRebuild(const RunSpec& options,
                         std::vector<std::unique_ptr<Projector>> projectors,
                         const std::atomic<bool>& stop, const RunPlan& plan);

// `rewind replay`: a swap that resumes first catches the segments of read models built in
// segments up (segments::CatchUp, a RunRebuild of each segment), then RunRebuild by the
// options' plan: rebuilds beside, cuts over; with options.follow, then keeps applying new events.
ReplaySummary Replay(const RunSpec& options,
                     std::vector<std::unique_ptr<Projector>> projectors,
                     const std::atomic<bool>& stop);

}  // namespace rw
