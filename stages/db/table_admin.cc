#include "stages/db/table_admin.h"

#include <fmt/core.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>

#include "base/sha256.h"
#include "stages/db/checkpoint_store.h"
#include "base/fault.h"
#include "stages/db/heartbeat.h"
#include "stages/db/table_schema.h"

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

Status ReleaseLock(Connection& c, const std::string& name) {
  return c.Execute(fmt::format("DO RELEASE_LOCK({})", c.Quote(name)));
}

namespace {

std::string DescribeRun(const RunRecord& run) {
  return fmt::format("rewind {} run {}, pid {} on {}", run.command, run.run_id, run.pid,
                     run.host.empty() ? "?" : run.host);
}

}  // namespace

Result<std::optional<LockHolder>> TakeLock(Connection& c, const std::string& name,
                                           const std::string& what) {
  using Clock = std::chrono::steady_clock;
  const std::string quoted = c.Quote(name);
  std::string watched;                  // the holder being judged
  std::optional<uint64_t> first_beats;  // its run's beats when first seen
  bool killed = false;
  Clock::time_point killed_at;
  for (;;) {
    Result<std::optional<std::string>> holder = TryLock(c, name);
    if (!holder.ok()) return holder.status();
    if (!*holder) return std::optional<LockHolder>();
    const std::string id = **holder;
    if (id != watched) {  // another holder (or the first): judged afresh
      watched = id;
      first_beats.reset();
      killed = false;
    }
    if (id != "?" && !killed) {
      Result<std::optional<RunRecord>> run = checkpoint_store::RunHoldingLocks(c, std::stoul(id));
      if (!run.ok()) return run.status();
      if (!*run) return std::optional<LockHolder>(LockHolder{id, std::nullopt});
      const RunRecord& r = **run;
      if (first_beats && r.beats != *first_beats) {
        return std::optional<LockHolder>(LockHolder{id, r});  // it beat again: alive
      }
      if (r.beat_age_seconds >= kStaleSeconds) {
        fmt::print(stderr,
                   "rewind: connection {} holds {}, but its run ({}) has not beaten for {:.1f} s "
                   "(a live run beats every {:.0f} s): it is dead and the server has not noticed "
                   "yet; stopping that connection (KILL {}) and waiting up to {:.0f} s for the "
                   "server to let the lock go\n",
                   id, what, DescribeRun(r), r.beat_age_seconds, kBeatIntervalSeconds, id,
                   kKilledHolderWaitSeconds);
        Status k = c.Execute("KILL CONNECTION " + id);
        if (!k.ok() && k.message().find("Unknown thread") == std::string::npos) {
          return k.With(fmt::format(
              "stopping connection {} of a dead rewind, which holds {} (if it belongs to another "
              "user, ask them or an administrator to run KILL {})",
              id, what, id));
        }
        (void)checkpoint_store::EndRun(c, r.id);
        killed = true;
        killed_at = Clock::now();
      } else if (!first_beats) {
        first_beats = r.beats;
        fmt::print(stderr,
                   "rewind: connection {} holds {}; its run ({}) beat {:.1f} s ago: waiting for "
                   "it to let go, to beat again (alive: refused) or to stay silent for {:.0f} s "
                   "(dead: stopped)\n",
                   id, what, DescribeRun(r), r.beat_age_seconds, kStaleSeconds);
      }
    }
    if (killed && std::chrono::duration<double>(Clock::now() - killed_at).count() >=
                      kKilledHolderWaitSeconds) {
      return Status::Error(
          Status::Code::kBusy,
          fmt::format("connection {} of a dead rewind still holds {} {:.0f} s after rewind "
                      "stopped it (KILL {}): the server is still ending it; try again later",
                      id, what, kKilledHolderWaitSeconds, id));
    }
    // Wait a beat inside the server: back at once when the holder lets go.
    Result<std::optional<std::string>> got =
        c.QueryValue(fmt::format("SELECT GET_LOCK({}, 1)", quoted));
    if (!got.ok()) return got.status();
    if (*got && **got == "1") return std::optional<LockHolder>();
  }
}

Status Lock(Connection& c, const std::vector<std::string>& tables, const std::string& prefix) {
  for (const std::string& table : tables) {
    const std::string doing =
        fmt::format("{} {}", prefix == "rewind" ? "rebuilding" : "verifying", table);
    Result<std::optional<LockHolder>> holder =
        TakeLock(c, LockName(prefix, c.options().database, table), "the lock on " + doing);
    if (!holder.ok()) return holder.status();
    if (!*holder) continue;
    const LockHolder& h = **holder;
    if (h.run) {
      return Status::Error(
          Status::Code::kBusy,
          fmt::format("another rewind (connection {}: {}, beating) is already {}; wait for it "
                      "to finish or stop it",
                      h.connection, DescribeRun(*h.run), doing));
    }
    return Status::Error(
        Status::Code::kBusy,
        fmt::format("another rewind (connection {}) is already {}; it keeps no heartbeat here "
                    "(an older rewind, or another program holding the lock), so rewind cannot "
                    "tell whether it is alive: wait for it to finish or stop it (when no rewind "
                    "runs, KILL {} in the server frees the lock)",
                    h.connection, doing, h.connection));
  }
  return Status::Ok();
}

Result<bool> IsFree(Connection& c, const std::string& prefix, const std::string& table) {
  Result<std::optional<std::string>> v = c.QueryValue(fmt::format(
      "SELECT IS_FREE_LOCK({})", c.Quote(LockName(prefix, c.options().database, table))));
  if (!v.ok()) return v.status();
  return *v && **v == "1";
}

Result<bool> Exists(Connection& c, const std::string& table, const std::string& schema) {
  Result<std::optional<std::string>> v = c.QueryValue(fmt::format(
      "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = {} AND "
      "TABLE_NAME = {}",
      schema.empty() ? std::string("DATABASE()") : c.Quote(schema), c.Quote(table)));
  if (!v.ok()) return v.status();
  return *v && **v != "0";
}

namespace {

bool SameName(std::string_view a, std::string_view b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(), [](char x, char y) {
    return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
  });
}

}  // namespace

const char* OwnSuffixOf(std::string_view name) {
  for (const char* suffix : kOwnSuffixes) {
    const std::string_view s(suffix);
    if (name.size() >= s.size() && SameName(name.substr(name.size() - s.size()), s)) return suffix;
  }
  return nullptr;
}

Status CheckNotReserved(const std::string& table, const std::string& events_table,
                        const std::string& what) {
  if (!events_table.empty() && SameName(table, events_table)) {
    return Status::InvalidInput(fmt::format(
        "{} would be {}, the event table: rewind never replaces or drops it; nothing was done "
        "(choose another --into suffix or read model name)",
        what, table));
  }
  if (IsBookkeepingTable(table)) {
    return Status::InvalidInput(fmt::format(
        "{} would be {}, one of rewind's bookkeeping tables: rewind never replaces it with a "
        "read model; nothing was done (choose another --into suffix or read model name)",
        what, table));
  }
  return Status::Ok();
}

Status CheckMayReplace(Connection& c, const std::string& table, const std::string& events_table,
                       const std::string& what) {
  if (Status s = CheckNotReserved(table, events_table, what); !s.ok()) return s;
  Result<bool> exists = Exists(c, table);
  if (!exists.ok()) return exists.status();
  if (!*exists) return Status::Ok();
  Result<bool> recorded = checkpoint_store::Recorded(c, table);
  if (!recorded.ok()) return recorded.status();
  if (*recorded) return Status::Ok();
  return Status::InvalidInput(fmt::format(
      "the table {} is in the way: rewind would put {} there, but it did not create that table "
      "(its bookkeeping has no record of it), so it neither replaces nor drops it; nothing was "
      "done. If it is a leftover of an older rewind, drop it yourself (DROP TABLE {}); if it is "
      "yours, rename it{}",
      table, what, QuoteIdentifier(table), OwnSuffixOf(table) ? "" : " or choose another --into suffix"));
}

Status CreateOwned(Connection& c, const TableSpec& spec, const std::string& name,
                   const std::string& live, const std::string& kind,
                   const std::string& events_table) {
  if (Status s = CheckMayReplace(c, name, events_table, "the " + kind + " table of " + live); !s.ok()) {
    return s;
  }
  if (Status s = checkpoint_store::RecordTable(c, name, live, kind); !s.ok()) return s;
  if (Status s = c.Execute("DROP TABLE IF EXISTS " + QuoteIdentifier(name)); !s.ok()) return s;
  return c.Execute(table_schema::CreateTableSql(spec, name));
}

Status CreateOwnedLike(Connection& c, const std::string& name, const std::string& live,
                       const std::string& kind, const std::string& events_table) {
  if (Status s = CheckMayReplace(c, name, events_table, "the " + kind + " table of " + live); !s.ok()) {
    return s;
  }
  if (Status s = checkpoint_store::RecordTable(c, name, live, kind); !s.ok()) return s;
  if (Status s = c.Execute("DROP TABLE IF EXISTS " + QuoteIdentifier(name)); !s.ok()) return s;
  return c.Execute(fmt::format("CREATE TABLE {} LIKE {}", QuoteIdentifier(name), QuoteIdentifier(live)));
}

Status CopyRows(Connection& c, const std::string& from, const std::string& into) {
  // By name, generated columns left out: the server computes them (writing one is refused).
  Result<Rows> cols = c.Query(fmt::format(
      "SELECT COLUMN_NAME FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = {} AND "
      "EXTRA NOT LIKE '%GENERATED%' ORDER BY ORDINAL_POSITION",
      c.Quote(into)));
  if (!cols.ok()) return cols.status();
  std::string list;
  for (const auto& row : cols->rows) list += (list.empty() ? "" : ", ") + QuoteIdentifier(row[0].value_or(""));
  if (list.empty()) return Status::NotFound(fmt::format("the table {} has no column to copy into", into));
  return c.Execute(fmt::format("INSERT INTO {0} ({1}) SELECT {1} FROM {2}", QuoteIdentifier(into), list,
                               QuoteIdentifier(from)));
}

Status DropOwned(Connection& c, const std::string& name) {
  Result<bool> exists = Exists(c, name);
  if (!exists.ok()) return exists.status();
  if (*exists) {
    Result<bool> recorded = checkpoint_store::Recorded(c, name);
    if (!recorded.ok()) return recorded.status();
    if (!*recorded || IsBookkeepingTable(name)) {
      return Status::InvalidInput(fmt::format(
          "rewind did not create the table {} (its bookkeeping has no record of it), so it does "
          "not drop it; if it is a leftover of an older rewind, drop it yourself",
          name));
    }
    if (Status s = c.Execute("DROP TABLE IF EXISTS " + QuoteIdentifier(name)); !s.ok()) return s;
  }
  return checkpoint_store::ForgetTable(c, name);
}

Status HoldWriters(Connection& lock, const std::string& events_table) {
  if (Status s = lock.Execute("SET SESSION lock_wait_timeout = 1"); !s.ok()) return s;
  return lock.Execute(fmt::format("LOCK TABLES {} READ", QuoteIdentifier(events_table)));
}

Status ReleaseWriters(Connection& lock) { return lock.Execute("UNLOCK TABLES"); }

Status CheckHold(Connection& lock, unsigned long holder, const std::string& events_table) {
  Result<std::optional<std::string>> id = lock.QueryValue("SELECT CONNECTION_ID()");
  const std::string now = id.ok() ? id->value_or("none") : "";
  if (id.ok() && now == std::to_string(holder)) return Status::Ok();
  return Status::Error(
      Status::Code::kRetryable,
      fmt::format("the hold on inserts into {} was lost before the swap (its connection {} {}): inserts may have "
                  "committed meanwhile; nothing was swapped, and the cut-over is done again",
                  events_table, holder,
                  id.ok() ? fmt::format("is now connection {}", now) : fmt::format("is gone: {}", id.status().message())));
}

Status SwapIn(Connection& c, const std::vector<Swapped>& tables, const std::string& suffix) {
  std::vector<std::string> renames, olds;
  for (const Swapped& t : tables) {
    const std::string& live = t.live;
    const std::string old = live + (t.keep_aside ? kKeptSuffix : kOldSuffix);
    Result<bool> exists = Exists(c, live);
    if (!exists.ok()) return exists.status();
    if (t.keep_aside) {
      Result<bool> in_way = Exists(c, old);
      if (!in_way.ok()) return in_way.status();
      if (*in_way) {
        return Status::InvalidInput(fmt::format(
            "the table {} is in the way: --reshape keeps the application's {} there; rename or drop it first",
            old, live));
      }
    } else if (Status s = DropOwned(c, old); !s.ok()) {
      return s;  // a recorded leftover of an earlier swap goes; anything else there is refused
    }
    if (*exists) {
      if (!t.keep_aside) {
        if (Status s = checkpoint_store::RecordTable(c, old, live, "old"); !s.ok()) return s;
        olds.push_back(old);
      }
      renames.push_back(fmt::format("{} TO {}", QuoteIdentifier(live), QuoteIdentifier(old)));
    }
    renames.push_back(fmt::format("{} TO {}", QuoteIdentifier(live + suffix), QuoteIdentifier(live)));
  }
  std::string sql = "SET STATEMENT lock_wait_timeout = 1 FOR RENAME TABLE ";
  for (size_t i = 0; i < renames.size(); ++i) sql += (i ? ", " : "") + renames[i];
  if (Status s = c.Execute(sql); !s.ok()) {
    for (const std::string& old : olds) (void)checkpoint_store::ForgetTable(c, old);  // not renamed
    return s.With("swapping the rebuilt tables in");
  }
  FaultPoint("after-rename");
  for (const Swapped& t : tables) {
    if (Status s = checkpoint_store::ForgetTable(c, t.live + suffix); !s.ok()) return s;  // now live
    // The live table is rewind's (rebuilt in its shape next time) or the application's.
    Status s = t.rewinds_shape ? checkpoint_store::RecordTable(c, t.live, t.live, "live")
                               : checkpoint_store::ForgetTable(c, t.live);
    if (!s.ok()) return s;
    // It is this table (best effort: without it, ownership goes by the name, as before).
    if (t.rewinds_shape) (void)checkpoint_store::RecordIdentity(c, t.live);
  }
  for (const std::string& old : olds) {
    if (Status s = DropOwned(c, old); !s.ok()) return s;
  }
  return Status::Ok();
}

}  // namespace rw::table_admin
