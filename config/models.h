// Declared read models: the TOML file a user writes instead of C++ (docs/read-models.md, "Your own read
// models"), parsed and checked into plans (projectors/declared.h) before any work.
//
// Every mistake is reported with the file, the line and what is wrong: TOML syntax, an
// unknown key anywhere, an unknown op, bucket or type, a path on a count, a `value` without
// `on`, duplicate or reserved column names, a name that is not a plain identifier or that
// clashes with the event table, rewind's own tables or a compiled read model, an empty
// `events` list.
//
// Thread safety: stateless functions.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "projectors/declared.h"

namespace rw {

// Parses `text` (read from `file`, named in messages). `events_table` is the event table's
// name, which no read model may take.
Result<std::vector<ModelPlan>> ParseModels(std::string_view text, const std::string& file,
                                           const std::string& events_table);
Result<std::vector<ModelPlan>> LoadModels(const std::string& file, const std::string& events_table);

}  // namespace rw
