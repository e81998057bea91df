// The three finishers of a build (replay.h), one file each: what a run does once its build is
// complete, by its plan's Finish.
//
// The swap's (cutover.cc): what a rebuild does once its build is complete. Catch up (read what
// the application appended meanwhile, and the ids that committed late, until little is
// left), check that no empty build would replace a live table with rows, check the failure
// budget, cut over, and with --follow keep applying new events to the live tables until
// stopped.
//
// The cut-over holds inserts into the event table off (LOCK TABLES ... READ on a connection
// of its own, waiting at most about a second for open transactions; once held, no insert is
// open, so every gap below the head is final), applies the last events, swaps every build
// table in with one RENAME TABLE (again waiting at most about a second), and releases. A
// wait that times out is reported and retried with backoff; after --cutover-timeout it gives
// up cleanly (kBusy, exit 6): the live tables untouched, every build committed and resumable.
//
// The built one's (finish_built.cc): a build that is not swapped in now (--into,
// --build-only) is, within the failure budget, complete ("built").
//
// The scratch one's (finish_scratch.cc, verify): the plan's check on the build (the
// compare), then the scratch tables go, whatever happened, then the failure budget.
//
// With --follow, the swap's finisher then follows (follow.cc): it keeps applying new events to
// the live tables until stopped, learning of new commits from the server's binlog or by
// polling the event table.
//
// Thread safety: each runs on the thread that drives the Build.
#pragma once

#include "base/status.h"
#include "pipeline/replay/replay_build.h"

namespace rw {

// REQUIRES: `build` prepared and rebuilt without error, its plan a swap.
Status FinishSwap(Build& build);
// REQUIRES: `build` prepared and rebuilt without error, its plan kInto or kBuildOnly.
Status FinishBuilt(Build& build);
// Keeps applying new events to the live tables until stopped (follow.cc). REQUIRES: the
// read models live (swapped in, or all continuing their live tables).
Status Follow(Build& build);
// `built`: the outcome of the build (its tables go whatever it is). Returns the first error.
Status FinishScratch(Build& build, Status built);

}  // namespace rw
