// rewind_tables: the tables rewind made and may replace or drop.
#include "stages/db/checkpoint_store.h"

#include <fmt/core.h>

#include <optional>

#include "stages/db/bookkeeping/older_targets.h"

namespace rw {
namespace checkpoint_store {

Status RecordTable(Connection& c, const std::string& table, const std::string& live_table,
                   const std::string& kind) {
  return c.Execute(fmt::format(
      "INSERT INTO rewind_tables (table_name, live_table, kind, created_at) VALUES ({}, {}, {}, "
      "NOW(6)) ON DUPLICATE KEY UPDATE live_table = VALUES(live_table), kind = VALUES(kind), "
      "created_at = VALUES(created_at), table_id = NULL",
      c.Quote(table), c.Quote(live_table), c.Quote(kind)));
}

namespace {

// The server's id of `table` now (InnoDB's TABLE_ID), or nullopt when it cannot be known:
// no such InnoDB table, or no PROCESS grant to read it (then ownership goes by the name).
std::optional<std::string> TableIdNow(Connection& c, const std::string& table) {
  Result<std::optional<std::string>> id = c.QueryValue(fmt::format(
      "SELECT TABLE_ID FROM information_schema.INNODB_SYS_TABLES WHERE NAME = CONCAT(DATABASE(), '/', {})",
      c.Quote(table)));
  return id.ok() ? *id : std::nullopt;
}

// Whether the table named `table` is not the one recorded under that name: both ids known
// and different.
Result<bool> Replaced(Connection& c, const std::string& table) {
  Result<int> version = Version(c);
  if (!version.ok()) return version.status();
  if (*version < 9) return false;
  Result<std::optional<std::string>> recorded =
      c.QueryValue(fmt::format("SELECT table_id FROM rewind_tables WHERE table_name = {}", c.Quote(table)));
  if (!recorded.ok()) return recorded.status();
  if (!*recorded) return false;
  const std::optional<std::string> now = TableIdNow(c, table);
  return now && *now != **recorded;
}

}  // namespace

Status RecordIdentity(Connection& c, const std::string& table) {
  const std::optional<std::string> id = TableIdNow(c, table);
  return c.Execute(fmt::format("UPDATE rewind_tables SET table_id = {} WHERE table_name = {}", id ? *id : "NULL",
                               c.Quote(table)));
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
  if (!*n || **n == "0") return false;
  Result<bool> replaced = Replaced(c, table);
  if (!replaced.ok()) return replaced.status();
  return !*replaced;
}

Result<std::optional<std::string>> RecordedKind(Connection& c, const std::string& table) {
  Result<int> version = Version(c);
  if (!version.ok()) return version.status();
  if (*version < 3) return std::optional<std::string>();  // no records of kinds yet
  Result<std::optional<std::string>> kind =
      c.QueryValue(fmt::format("SELECT kind FROM rewind_tables WHERE table_name = {}", c.Quote(table)));
  if (!kind.ok() || !*kind) return kind;
  Result<bool> replaced = Replaced(c, table);
  if (!replaced.ok()) return replaced.status();
  return *replaced ? std::optional<std::string>() : *kind;
}

}  // namespace checkpoint_store
}  // namespace rw
