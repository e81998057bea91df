#include "stages/table_admin.h"

#include "stages/table_schema.h"

#include <fmt/core.h>

#include "projectors/sha256.h"

namespace rw::table_admin {

std::string FitLockName(const std::string& prefix, const std::string& key) {
  std::string name = fmt::format("{}:{}", prefix, key);
  if (name.size() <= 64) return name;
  return fmt::format("{}:#{}", prefix.substr(0, 20), Sha256Hex(name, 20));
}

std::string LockName(const std::string& prefix, const std::string& database,
                     const std::string& table) {
  return FitLockName(prefix, database + "." + table);
}

Result<std::optional<std::string>> TryLock(Connection& c, const std::string& name) {
  const std::string quoted = c.Quote(name);
  Result<std::optional<std::string>> got =
      c.QueryValue(fmt::format("SELECT GET_LOCK({}, 0)", quoted));
  if (!got.ok()) return got.status();
  if (*got && **got == "1") return std::optional<std::string>();
  Result<std::optional<std::string>> holder =
      c.QueryValue(fmt::format("SELECT IS_USED_LOCK({})", quoted));
  return std::optional<std::string>(holder.ok() && *holder ? **holder : std::string("?"));
}

Status Lock(Connection& c, const std::vector<std::string>& tables, const std::string& prefix) {
  for (const std::string& table : tables) {
    Result<std::optional<std::string>> holder =
        TryLock(c, LockName(prefix, c.options().database, table));
    if (!holder.ok()) return holder.status();
    if (*holder) {
      return Status::Error(
          Status::Code::kBusy,
          fmt::format("another rewind (connection {}) is already {} {}; wait for it to finish "
                      "or stop it",
                      **holder, prefix == "rewind" ? "rebuilding" : "verifying", table));
    }
  }
  return Status::Ok();
}

Result<bool> IsFree(Connection& c, const std::string& prefix, const std::string& table) {
  Result<std::optional<std::string>> v = c.QueryValue(fmt::format(
      "SELECT IS_FREE_LOCK({})", c.Quote(LockName(prefix, c.options().database, table))));
  if (!v.ok()) return v.status();
  return *v && **v == "1";
}

Result<bool> Exists(Connection& c, const std::string& table) {
  Result<std::optional<std::string>> v = c.QueryValue(fmt::format(
      "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND "
      "TABLE_NAME = {}",
      c.Quote(table)));
  if (!v.ok()) return v.status();
  return *v && **v != "0";
}

Status Drop(Connection& c, const std::string& name) {
  return c.Execute("DROP TABLE IF EXISTS " + QuoteIdentifier(name));
}

Status Recreate(Connection& c, const TableSpec& spec, const std::string& name) {
  if (Status s = Drop(c, name); !s.ok()) return s;
  return c.Execute(table_schema::CreateTableSql(spec, name));
}

Status HoldWriters(Connection& lock, const std::string& events_table) {
  if (Status s = lock.Execute("SET SESSION lock_wait_timeout = 1"); !s.ok()) return s;
  return lock.Execute(fmt::format("LOCK TABLES {} READ", QuoteIdentifier(events_table)));
}

Status ReleaseWriters(Connection& lock) { return lock.Execute("UNLOCK TABLES"); }

Status SwapIn(Connection& c, const std::vector<std::string>& live_tables, const std::string& suffix) {
  std::vector<std::string> renames, olds;
  for (const std::string& live : live_tables) {
    const std::string old = live + "__rewind_old";
    Result<bool> exists = Exists(c, live);
    if (!exists.ok()) return exists.status();
    if (Status s = Drop(c, old); !s.ok()) return s;
    if (*exists) {
      renames.push_back(fmt::format("{} TO {}", QuoteIdentifier(live), QuoteIdentifier(old)));
      olds.push_back(old);
    }
    renames.push_back(fmt::format("{} TO {}", QuoteIdentifier(live + suffix), QuoteIdentifier(live)));
  }
  std::string sql = "SET STATEMENT lock_wait_timeout = 1 FOR RENAME TABLE ";
  for (size_t i = 0; i < renames.size(); ++i) sql += (i ? ", " : "") + renames[i];
  if (Status s = c.Execute(sql); !s.ok()) return s.With("swapping the rebuilt tables in");
  for (const std::string& old : olds) {
    if (Status s = Drop(c, old); !s.ok()) return s;
  }
  return Status::Ok();
}

}  // namespace rw::table_admin
