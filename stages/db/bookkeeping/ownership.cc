// rewind_tables: the tables rewind made and may replace or drop.
#include "stages/db/checkpoint_store.h"

#include <fmt/core.h>

#include "stages/db/bookkeeping/older_targets.h"

namespace rw {
namespace checkpoint_store {

Status RecordTable(Connection& c, const std::string& table, const std::string& live_table,
                   const std::string& kind) {
  return c.Execute(fmt::format(
      "INSERT INTO rewind_tables (table_name, live_table, kind, created_at) VALUES ({}, {}, {}, "
      "NOW(6)) ON DUPLICATE KEY UPDATE live_table = VALUES(live_table), kind = VALUES(kind), "
      "created_at = VALUES(created_at)",
      c.Quote(table), c.Quote(live_table), c.Quote(kind)));
}

Status ForgetTable(Connection& c, const std::string& table) {
  return c.Execute(fmt::format("DELETE FROM rewind_tables WHERE table_name = {}", c.Quote(table)));
}

Result<bool> Recorded(Connection& c, const std::string& table) {
  Result<int> version = Version(c);
  if (!version.ok()) return version.status();
  std::string sql;
  if (*version >= 3) {
    sql = fmt::format("SELECT COUNT(*) FROM rewind_tables WHERE table_name = {}", c.Quote(table));
  } else if (*version >= 1) {  // what the migration will record
    const char* column = *version == 1 ? "building_table" : "target_table";
    sql = fmt::format("SELECT COUNT(*) {} AND k.{} = {}", fmt::format(fmt::runtime(kOlderBuildTargets), column),
                      column, c.Quote(table));
  } else {
    return false;  // no bookkeeping: rewind made nothing here
  }
  Result<std::optional<std::string>> n = c.QueryValue(sql);
  if (!n.ok()) return n.status();
  return *n && **n != "0";
}

Result<std::optional<std::string>> RecordedKind(Connection& c, const std::string& table) {
  Result<int> version = Version(c);
  if (!version.ok()) return version.status();
  if (*version < 3) return std::optional<std::string>();  // no records of kinds yet
  return c.QueryValue(
      fmt::format("SELECT kind FROM rewind_tables WHERE table_name = {}", c.Quote(table)));
}

}  // namespace checkpoint_store
}  // namespace rw
