#include "pipeline/replay/read_replica.h"

#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <random>

#include "base/fault.h"
#include "stages/control/sleep.h"
#include "stages/db/checkpoint_store.h"
#include "stages/db/table_admin.h"

namespace rw {
namespace {

// What to do about a read server that is not a usable replica.
constexpr const char* kWhatToDo =
    "point --read-host/--read-port/--read-socket at a replica of the primary that replicates this "
    "database, or drop them to read from the primary";

// The event table's columns as a server describes them, in order: "name type collation null".
Result<std::vector<std::string>> Columns(Connection& c, const std::string& table) {
  Result<Rows> rows = c.Query(
      fmt::format("SELECT COLUMN_NAME, COLUMN_TYPE, COALESCE(COLLATION_NAME, ''), IS_NULLABLE FROM "
                  "information_schema.COLUMNS "
                  "WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = {} ORDER BY ORDINAL_POSITION",
                  c.Quote(table)));
  if (!rows.ok()) return rows.status();
  std::vector<std::string> out;
  for (const auto& r : rows->rows) {
    out.push_back(fmt::format("{} {}{}{}", r[0].value_or(""), r[1].value_or(""),
                              r[2].value_or("").empty() ? "" : " " + *r[2],
                              r[3].value_or("") == "YES" ? " NULL" : " NOT NULL"));
  }
  return out;
}

Status NotTheSameServer(Connection& primary, Connection& replica, const std::string& lock_prefix,
                        const std::string& locked_table) {
  const std::string where = replica.options().Describe();
  Result<bool> free = table_admin::IsFree(replica, lock_prefix, locked_table);
  if (!free.ok()) return free.status();
  if (!*free) {
    return Status::InvalidInput(
        fmt::format("the read server {} holds this run's lock on {}: it is the primary itself, not "
                    "a replica; {}",
                    where, locked_table, kWhatToDo));
  }
  Result<std::optional<std::string>> ours = primary.QueryValue("SELECT @@server_id");
  if (!ours.ok()) return ours.status();
  Result<std::optional<std::string>> theirs = replica.QueryValue("SELECT @@server_id");
  if (!theirs.ok()) return theirs.status();
  if (*ours == *theirs) {
    return Status::InvalidInput(
        fmt::format("the read server {} has the primary's server_id ({}): it is not a replica of "
                    "it (a replica skips the "
                    "events that carry its own server_id); {}",
                    where, ours->value_or("?"), kWhatToDo));
  }
  return Status::Ok();
}

Status SameEventTable(Connection& primary, Connection& replica, const EventTableOptions& e) {
  const std::string where = replica.options().Describe();
  EventTableOptions checked = e;
  if (Status s = CheckEventTable(replica, checked); !s.ok()) {
    if (s.code() != Status::Code::kNotFound) {
      return s.With(fmt::format("checking the read server {}", where));
    }
    return Status::InvalidInput(
        fmt::format("the read server {} has no event table '{}' in database '{}': it "
                    "does not replicate the primary's events; {}",
                    where, e.table, replica.options().database, kWhatToDo));
  }
  Result<std::vector<std::string>> ours = Columns(primary, e.table);
  if (!ours.ok()) return ours.status();
  Result<std::vector<std::string>> theirs = Columns(replica, e.table);
  if (!theirs.ok()) return theirs.status();
  for (size_t i = 0; i < std::max(ours->size(), theirs->size()); ++i) {
    const std::string a = i < ours->size() ? (*ours)[i] : "(no column)";
    const std::string b = i < theirs->size() ? (*theirs)[i] : "(no column)";
    if (a == b) continue;
    return Status::InvalidInput(
        fmt::format("the event table '{}' differs on the read server {}: its column {} is `{}` on "
                    "the primary and `{}` "
                    "there; {}",
                    e.table, where, i + 1, a, b, kWhatToDo));
  }
  return Status::Ok();
}

std::string Token(const std::string& run_id) {
  std::random_device rd;
  const uint64_t r = (static_cast<uint64_t>(rd()) << 32) ^ rd();
  return fmt::format("{}-{:016x}", run_id, r).substr(0, 64);
}

}  // namespace

bool ReadsFromReplica(const RunSpec& o) { return !o.read_servers.empty(); }

std::vector<ConnectionOptions> ReadServers(const RunSpec& o) {
  std::vector<ConnectionOptions> out;
  for (const RunSpec::ReadServer& server : o.read_servers) {
    ConnectionOptions c = o.connection;
    c.socket = server.socket;
    c.host = server.host;
    c.port = server.port;
    out.push_back(c);
  }
  return out;
}

Result<std::unique_ptr<Connection>> ConnectToReadServer(const ConnectionOptions& where) {
  Result<std::unique_ptr<Connection>> c = Connection::Open(where);
  if (c.ok()) return c;
  if (c.status().code() == Status::Code::kNotFound) {  // no such database there
    return Status::InvalidInput(
        fmt::format("the read server {} has no database '{}': it does not replicate the "
                    "primary's database (or has not yet applied its creation); {}",
                    where.Describe(), where.database, kWhatToDo));
  }
  return c.status().With("connecting to the read server (--read-host/--read-port/--read-socket)");
}

Result<ReplicaCheck> CheckReplica(Connection& primary, Connection& replica,
                                  const EventTableOptions& events, const std::string& run_id,
                                  const std::string& lock_prefix, const std::string& locked_table,
                                  double wait_seconds, const std::atomic<bool>& stop) {
  const std::string where = replica.options().Describe();
  if (Status s = NotTheSameServer(primary, replica, lock_prefix, locked_table); !s.ok()) return s;
  if (Status s = SameEventTable(primary, replica, events); !s.ok()) return s;
  ReplicaCheck check;
  Result<EventId> head = ReadHeadId(primary, events);
  if (!head.ok()) return head.status();
  check.head = *head;
  const std::string token = Token(run_id);
  if (Status s = checkpoint_store::WriteReplicaMarker(primary, token, run_id); !s.ok()) {
    return s.With("writing the marker that measures the replica's lag");
  }
  const auto written = std::chrono::steady_clock::now();
  FaultPoint("replica-marker-written");
  const auto deadline = written + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                      std::chrono::duration<double>(wait_seconds));
  auto pause = std::chrono::milliseconds(1);
  bool seen = false;
  Status failed;
  for (;;) {
    Result<bool> s = checkpoint_store::ReplicaMarkerSeen(replica, token);
    if (!s.ok()) {
      failed = s.status().With(fmt::format("looking for the marker on the read server {}", where));
      break;
    }
    if (*s) {
      seen = true;
      check.lag_seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - written).count();
      break;
    }
    if (std::chrono::steady_clock::now() >= deadline) break;
    if (!SleepUnlessStopped(std::min<std::chrono::steady_clock::duration>(
                                pause, deadline - std::chrono::steady_clock::now()),
                            &stop)) {
      failed = Status::Error(Status::Code::kCancelled, "stopped while waiting for the replica");
      break;
    }
    pause = std::min<std::chrono::milliseconds>(pause * 2, std::chrono::milliseconds(100));
  }
  (void)checkpoint_store::DeleteReplicaMarker(primary, token);
  if (!failed.ok()) return failed;
  if (!seen) {
    return Status::InvalidInput(
        fmt::format("the read server {} did not show the marker rewind wrote into {} on the "
                    "primary within {} s: it is not "
                    "replicating from the primary (replication stopped, or another server), or "
                    "lags more than that; see SHOW "
                    "REPLICA STATUS there, pass a longer --read-wait, or {}",
                    where, kReplicaMarkerTable, wait_seconds, kWhatToDo));
  }
  if (check.head != kBeforeFirstId) {
    Result<std::optional<std::string>> ours = EventHash(primary, events, check.head);
    if (!ours.ok()) return ours.status();
    Result<std::optional<std::string>> theirs = EventHash(replica, events, check.head);
    if (!theirs.ok()) return theirs.status();
    if (*ours && *ours != *theirs) {
      return Status::InvalidInput(
          fmt::format("the read server {} shows rewind's marker but {} the primary's event {} of "
                      "'{}': it does not replicate "
                      "the event table (a replication filter?); {}",
                      where, *theirs ? "holds another event than" : "not", IdText(check.head),
                      events.table, kWhatToDo));
    }
  }
  return check;
}

namespace {

// The keys whose values differ (or that one side lacks).
std::vector<std::string> Differing(const std::map<std::string, std::string>& a,
                                   const std::map<std::string, std::string>& b) {
  std::vector<std::string> keys;
  for (const auto& [k, v] : a) {
    auto it = b.find(k);
    if (it == b.end() || it->second != v) keys.push_back(k);
  }
  for (const auto& [k, v] : b) {
    if (!a.count(k)) keys.push_back(k);
  }
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  return keys;
}

std::string Described(const std::map<std::string, std::string>& m, const std::string& k) {
  auto it = m.find(k);
  if (it == m.end()) return "0 events";
  return it->second.substr(0, it->second.find(' ')) + " events";
}

}  // namespace

Result<ReplicaComparison> CompareWithPrimary(Connection& primary, Connection& replica,
                                             const EventTableOptions& events, EventId head, bool full,
                                             const std::string& run_id, const std::string& lock_prefix,
                                             const std::string& locked_table, double wait_seconds,
                                             const std::atomic<bool>& stop) {
  ReplicaComparison out;
  if (head == kBeforeFirstId) return out;
  Result<std::optional<EventId>> first = ReadFirstId(primary, events);
  if (!first.ok()) return first.status();
  const EventId lo = first->value_or(1) - 1;
  if (lo >= head) return out;
  const EventId chunk = std::max<EventId>(10'000, (head - lo) / 256 + 1);
  auto timed = [&](auto&& f) {
    const auto t0 = std::chrono::steady_clock::now();
    auto r = f();
    out.primary_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return r;
  };
  Result<std::map<std::string, std::string>> p =
      timed([&] { return ChunkSums(primary, events, lo, head, chunk, full, nullptr); });
  if (!p.ok()) return p.status().With("comparing the replica with the primary (on the primary)");
  Result<std::map<std::string, std::string>> r = ChunkSums(replica, events, lo, head, chunk, full, nullptr);
  if (!r.ok()) return r.status().With("comparing the replica with the primary (on the replica)");
  out.chunks = p->size();
  std::vector<std::string> differ = Differing(*p, *r);
  if (differ.empty()) return out;
  // Again, once a new marker shows that the replica holds what the primary had committed.
  p = timed([&] { return ChunkSums(primary, events, lo, head, chunk, full, &differ); });
  if (!p.ok()) return p.status();
  Result<ReplicaCheck> again =
      CheckReplica(primary, replica, events, run_id, lock_prefix, locked_table, wait_seconds, stop);
  if (!again.ok()) return again.status();
  r = ChunkSums(replica, events, lo, head, chunk, full, &differ);
  if (!r.ok()) return r.status();
  for (const std::string& k : Differing(*p, *r)) {
    const EventId n = ParseEventId(k).value_or(0);
    out.diverged.push_back({std::max(lo + 1, n * chunk), std::min(head, n * chunk + chunk - 1)});
    if (out.first_difference.empty()) {
      out.first_difference = fmt::format("primary {}, replica {}", Described(*p, k), Described(*r, k));
      if (Described(*p, k) == Described(*r, k)) out.first_difference += " (other ids or other contents)";
    }
  }
  return out;
}

}  // namespace rw
