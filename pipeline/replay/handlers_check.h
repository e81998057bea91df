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

// Checks every handler of `projectors` (those that run statements) with the server. Returns
// a line per handler for the dry run ("accounts: on 'X' (file:line), prepared: UPDATE ...");
// the first statement refused is an error naming its file and line.
Result<std::vector<std::string>> Prepare(Connection& c, const std::vector<const Projector*>& projectors);

}  // namespace rw::handlers_check
