// The hand-over: the application's own projector takes over where the rebuild ended (issue
// 38, part 5). A declared read model's `hand_over` statement (Projector::hand_over), e.g.
// evtstore's "UPDATE bookmarks SET position = ? WHERE bookmark = 'balances'", is run at the
// swap, while the event table's inserts are held off, its `?` bound to the last event id
// applied: every event up to it is in the swapped table and none after it, so the
// application's projector, continuing from that position, applies every later event once.
//
// The application's projector must be paused from the start of the rebuild until the swap:
// what it wrote meanwhile would go with the old table, and a position it keeps in memory
// would skip or repeat events. rewind checks that the live tables did not change between
// the start and the cut-over (CHECKSUM TABLE, a scan of each: a projector still writing is
// refused before the swap), and runs the statements in one transaction committed only after
// the swap (rolled back when the swap fails).
//
// Thread safety: stateless functions; each call uses the connection it is given.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "base/event_id.h"
#include "projectors/projector.h"
#include "stages/db/connection.h"

namespace rw::hand_over {

struct Step {
  std::string read_model;
  std::string live_table;
  std::string sql;
  std::string checksum;  // of the live table when the run started ("" when it had none)
};

// The read models' statements, each checked with the server (it prepares, with one
// parameter) before any work, and their live tables' checksums. Refuses statements with
// --follow (rewind would go on applying what the application's projector applies) and,
// without a swap (`swaps` false: --into, verify), runs none (an empty list).
Result<std::vector<Step>> Prepare(Connection& c, const std::vector<const Projector*>& projectors, bool follow,
                                  bool swaps);

// Refuses when a live table changed since Prepare: something (the application's projector)
// writes it during the rebuild.
Status CheckUntouched(Connection& c, const std::vector<Step>& steps);

// On its own connection: START TRANSACTION, then every statement with `position` bound;
// the transaction is left open for Finish. `changed` gets the rows each changed.
Result<std::unique_ptr<Connection>> Begin(const ConnectionOptions& o, const std::vector<Step>& steps,
                                          EventId position, std::vector<uint64_t>* changed);

// After the swap: COMMIT when it succeeded (an error then says what to run by hand), else
// ROLLBACK. Returns `swapped` or the commit's error.
Status Finish(Connection& c, const std::vector<Step>& steps, EventId position, Status swapped);

}  // namespace rw::hand_over
