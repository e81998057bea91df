// rewind_runs: one heartbeat row per running rewind.
#include "stages/db/checkpoint_store.h"

#include <fmt/core.h>

namespace rw {
namespace {

// When the server started, by its clock (to within a second): connection ids are numbered
// afresh by each lifetime of the server, so an id means something only with it.
const char* const kServerStarted =
    "(NOW(6) - INTERVAL (SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS WHERE "
    "VARIABLE_NAME = 'UPTIME') SECOND)";
// A row of this lifetime of the server (the uptime is whole seconds: a margin of two).
const char* const kThisLifetime = "ABS(TIMESTAMPDIFF(SECOND, server_started_at, {})) <= 2";

}  // namespace

namespace checkpoint_store {

Result<uint64_t> StartRun(Connection& c, const RunRecord& run) {
  const std::string this_lifetime = fmt::format(fmt::runtime(kThisLifetime), kServerStarted);
  // Rows whose connections are certainly gone: of an earlier lifetime of the server, or of
  // this user's runs (the process list shows them all) that stopped beating a minute ago.
  if (Status s = c.Execute(fmt::format("DELETE FROM rewind_runs WHERE NOT {}", this_lifetime)); !s.ok()) {
    return s;
  }
  if (Status s = c.Execute(
          "DELETE FROM rewind_runs WHERE db_user = SUBSTRING_INDEX(USER(), '@', 1) AND beat_at < "
          "NOW(6) - INTERVAL 60 SECOND AND lock_connection NOT IN (SELECT ID FROM "
          "information_schema.PROCESSLIST)");
      !s.ok()) {
    return s;
  }
  if (Status s = c.Execute(fmt::format(
          "INSERT INTO rewind_runs (run_id, command, host, pid, db_user, lock_connection, "
          "connections, server_started_at, started_at, beat_at, beats) VALUES ({}, {}, {}, {}, "
          "SUBSTRING_INDEX(USER(), '@', 1), {}, {}, {}, NOW(6), NOW(6), 0)",
          c.Quote(run.run_id), c.Quote(run.command), c.Quote(ValidUtf8(run.host, 255)), run.pid,
          run.lock_connection, c.Quote(run.connections), kServerStarted));
      !s.ok()) {
    return s;
  }
  Result<std::optional<std::string>> id = c.QueryValue("SELECT LAST_INSERT_ID()");
  if (!id.ok()) return id.status();
  return *id ? std::stoull(**id) : 0;
}

Status Beat(Connection& c, uint64_t id, unsigned long lock_connection, const std::string& connections) {
  return c.Execute(fmt::format(
      "UPDATE rewind_runs SET beat_at = NOW(6), beats = beats + 1, lock_connection = {}, "
      "connections = {}, server_started_at = {} WHERE id = {}",
      lock_connection, c.Quote(connections), kServerStarted, id));
}

Status EndRun(Connection& c, uint64_t id) {
  return c.Execute(fmt::format("DELETE FROM rewind_runs WHERE id = {}", id));
}

Result<std::optional<RunRecord>> RunHoldingLocks(Connection& c, unsigned long connection) {
  Result<Rows> r = c.Query(fmt::format(
      "SELECT id, run_id, command, host, pid, lock_connection, connections, beats, "
      "TIMESTAMPDIFF(MICROSECOND, beat_at, NOW(6)) FROM rewind_runs WHERE lock_connection = {} "
      "AND {} ORDER BY beat_at DESC LIMIT 1",
      connection, fmt::format(fmt::runtime(kThisLifetime), kServerStarted)));
  if (!r.ok()) return r.status();
  if (r->rows.empty()) return std::optional<RunRecord>();
  const auto& row = r->rows[0];
  auto number = [&](size_t i) { return std::stoull(row[i].value_or("0")); };
  RunRecord run;
  run.id = number(0);
  run.run_id = row[1].value_or("");
  run.command = row[2].value_or("");
  run.host = row[3].value_or("");
  run.pid = number(4);
  run.lock_connection = number(5);
  run.connections = row[6].value_or("");
  run.beats = number(7);
  run.beat_age_seconds = std::stod(row[8].value_or("0")) / 1e6;
  return std::optional<RunRecord>(run);
}

}  // namespace checkpoint_store
}  // namespace rw
