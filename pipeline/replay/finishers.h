// The swap's finisher: what a rebuild does once its build is complete. Catch up (read what
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
// Thread safety: runs on the thread that drives the Build.
#pragma once

#include "base/status.h"
#include "pipeline/replay/replay_build.h"

namespace rw {

// REQUIRES: `build` prepared and rebuilt without error, its plan a swap.
Status FinishSwap(Build& build);

}  // namespace rw
