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
      "created_at = VALUES(created_at), table_id = NULL",
      c.Quote(table), c.Quote(live_table), c.Quote(kind)));
}

namespace {

// The server's id of `table` now (NULL: unknown), as SQL.
std::string IdentitySql(Connection& c, const std::string& table) {
  return fmt::format("(SELECT TABLE_ID FROM information_schema.INNODB_SYS_TABLES WHERE NAME = CONCAT(DATABASE(), "
                     "'/', {}))",
                     c.Quote(table));
}

}  // namespace

Status RecordIdentity(Connection& c, const std::string& table) {
  return c.Execute(fmt::format("UPDATE rewind_tables SET table_id = {} WHERE table_name = {}", IdentitySql(c, table),
                               c.Quote(table)));
}

namespace {

// Whether the table named `table` is not the one recorded under that name: both ids known
// and different.
Result<bool> Replaced(Connection& c, const std::string& table) {
  Result<int> version = Version(c);
  if (!version.ok()) return version.status();
  if (*version < 9) return false;
  Result<std::optional<std::string>> differs = c.QueryValue(fmt::format(
      "SELECT r.table_id IS NOT NULL AND now.id IS NOT NULL AND r.table_id <> now.id FROM rewind_tables r, "
      "(SELECT {} AS id) now WHERE r.table_name = {}",
      IdentitySql(c, table), c.Quote(table)));
  if (!differs.ok()) return differs.status();
  return *differs && **differs == "1";
}

}  // namespace

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
