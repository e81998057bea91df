// The statements of read models of handlers (the application's projector as SQL, issue 53),
// checked with the server before any work: each prepared against its read model's live
// table (syntax, tables, columns), its parameters counted, and refused when it names
// another table of the database (the event table, rewind's own, any other: a handler writes
// its read model's table alone, `{table}`).
//
// Thread safety: stateless; each call uses the connection it is given.
#pragma once

#include <string>
#include <vector>

#include "base/status.h"
#include "projectors/projector.h"
#include "stages/db/connection.h"

namespace rw::handlers_check {

// Checks every handler of `projectors` (those that run statements) with the server: the
// event-table columns its parameters name are columns of `events_table`, and its statement
// prepares against its live table (one that does not exist yet is left to live_shape's
// refusal). Returns a line per statement prepared, for the dry run ("accounts: on 'X'
// (file:line), prepared: UPDATE ..."); the first handler refused is an error naming its
// file and line.
Result<std::vector<std::string>> Prepare(Connection& c, const std::vector<const Projector*>& projectors,
                                         const std::string& events_table);

}  // namespace rw::handlers_check
