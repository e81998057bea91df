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
// refused before the swap; the same for every application's table, hand_over or not), and runs the statements in one transaction committed only after
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
#include "stages/db/live_shape.h"

namespace rw::hand_over {

struct Step {
  std::string read_model;
  std::string live_table;
  std::string sql;
};

// A live table the application writes (its own table, or one handed back), and its checksum
// when the run started ("" when it had none).
struct Watched {
  std::string read_model;
  std::string live_table;
  std::string checksum;
};

// The read models' statements, each checked with the server (it prepares, with one
// parameter) before any work, and their live tables' checksums. Refuses statements with
// --follow (rewind would go on applying what the application's projector applies) and,
// without a swap (`swaps` false: --into, verify), runs none (an empty list). Refuses, before
// any work, a statement that names the event table (it would wait on the cut-over's own hold
// of that table) or a table whose engine cannot roll back (Aria, MyISAM: a swap that did not
// happen could not take the statement back, and the application's projector would skip
// events).
Result<std::vector<Step>> Prepare(Connection& c, const std::vector<const Projector*>& projectors, bool follow,
                                  bool swaps, const std::string& events_table);

// How many parameters the server finds in `sql`: it prepares it (syntax, tables, columns),
// and refuses what it cannot (the error, as InvalidInput).
Result<unsigned long> ServerParameters(Connection& c, const std::string& sql);

// The words of `sql` that may name a table: identifiers bare or in backquotes (the last
// part of db.table), string literals and comments left out. Exposed for the tests.
std::vector<std::string> NamedIdentifiers(std::string_view sql);

// Whether the application may write the live table `live` of shape `kind` during the rebuild:
// it is the application's own (kept in its shape, or reshaped), or a hand-over of `steps`
// names it. Such tables are watched (Watch) and must not change before the swap.
bool ApplicationMayWrite(live_shape::Kind kind, const std::string& live, const std::vector<Step>& steps);

// The checksums (CHECKSUM TABLE: a scan of each) of the live tables the application may
// write, `tables` as (read model, live table): taken when the run starts.
Result<std::vector<Watched>> Watch(Connection& c, const std::vector<std::pair<std::string, std::string>>& tables);

// Refuses when a watched table changed since Watch: something (the application's projector)
// writes it during the rebuild, and its writes would be lost at the RENAME. Runs before the
// cut-over's hold, so the hold is no longer for it.
Status CheckUntouched(Connection& c, const std::vector<Watched>& watched);

// On its own connection: START TRANSACTION, then every statement with `position` (the event's id
// as a SQL literal: IdSql) bound;
// the transaction is left open for Finish. Its waits for locks are bounded (about a
// second, as the RENAME's): a wait that times out is kRetryable, the cut-over tried again. `changed` gets the rows each changed.
Result<std::unique_ptr<Connection>> Begin(const ConnectionOptions& o, const std::vector<Step>& steps,
                                          const std::string& position, std::vector<uint64_t>* changed);

// After the swap: COMMIT when it succeeded (an error then says what to run by hand), else
// ROLLBACK. Returns `swapped` or the commit's error.
Status Finish(Connection& c, const std::vector<Step>& steps, const std::string& position, Status swapped);

}  // namespace rw::hand_over
