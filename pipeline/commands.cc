#include "pipeline/commands.h"

#include <fmt/core.h>

#include <atomic>

#include "pipeline/replay.h"
#include "stages/connection.h"
#include "stages/progress.h"
#include "stages/reader.h"

namespace rw {

int ListCommand(std::FILE* out) {
  fmt::print(out, "{:<26} {:<26} {:<28} {}\n", "read model", "table", "key", "event types");
  for (const ProjectorInfo& info : AllProjectors()) {
    std::unique_ptr<Projector> p = info.make();
    std::string key;
    for (size_t i = 0; i + 1 < p->table().columns.size(); ++i) {
      key += (i ? ", " : "") + p->table().columns[i].name;
    }
    fmt::print(out, "{:<26} {:<26} {:<28} {}\n", info.name, p->table().name, key,
               "PageVisited (--event-class)");
    fmt::print(out, "    {}\n", info.description);
  }
  return 0;
}

int StatusCommand(const ReplayOptions& o, std::FILE* out) {
  Result<std::unique_ptr<Connection>> conn = Connection::Open(o.connection);
  if (!conn.ok()) {
    fmt::print(stderr, "rewind: {}\n", conn.status().message());
    return 1;
  }
  Connection& c = **conn;
  if (Status s = EnsureBookkeepingTables(c); !s.ok()) {
    fmt::print(stderr, "rewind: {}\n", s.message());
    return 1;
  }
  Result<int64_t> head = ReadHeadId(c, o.events);
  if (!head.ok()) {
    fmt::print(stderr, "rewind: {}\n", head.status().message());
    return 1;
  }
  const std::string head_id = std::to_string(*head);
  Result<Rows> rows = c.Query(fmt::format(
      "SELECT k.projector, k.live_table, k.status, k.last_event_id, {head} - k.last_event_id, "
      "(SELECT COUNT(*) FROM {f} f WHERE f.run_id = k.run_id), k.run_id, "
      "COALESCE(k.finished_at, k.updated_at), ROUND(k.seconds, 2), ROUND(k.events_per_second) "
      "FROM {k} k ORDER BY k.projector",
      fmt::arg("head", head_id), fmt::arg("f", kFailureTable), fmt::arg("k", kCheckpointTable)));
  if (!rows.ok()) {
    fmt::print(stderr, "rewind: {}\n", rows.status().message());
    return 1;
  }
  auto v = [](const std::optional<std::string>& s) { return s.value_or("-"); };
  if (o.json) {
    fmt::print(out, "{{\"head_event_id\": {}, \"read_models\": [", head_id);
    for (size_t i = 0; i < rows->rows.size(); ++i) {
      const auto& r = rows->rows[i];
      auto num = [&](size_t k) { return r[k] ? *r[k] : std::string("null"); };
      fmt::print(out,
                 "{}{{\"projector\": \"{}\", \"table\": \"{}\", \"status\": \"{}\", "
                 "\"checkpoint\": {}, \"behind\": {}, \"failures\": {}, \"run_id\": \"{}\", "
                 "\"last_run_at\": \"{}\", \"seconds\": {}, \"events_per_second\": {}}}",
                 i ? ", " : "", v(r[0]), v(r[1]), v(r[2]), num(3), num(4), num(5), v(r[6]),
                 v(r[7]), num(8), num(9));
    }
    fmt::print(out, "]}}\n");
    return 0;
  }
  fmt::print(out, "event store head: id {}\n", head_id);
  fmt::print(out, "{:<26} {:<9} {:>12} {:>10} {:>8} {:<27} {:>8} {:>10}\n", "read model", "status",
             "checkpoint", "behind", "failed", "last run", "seconds", "events/s");
  for (const auto& r : rows->rows) {
    fmt::print(out, "{:<26} {:<9} {:>12} {:>10} {:>8} {:<27} {:>8} {:>10}\n", v(r[0]), v(r[2]),
               v(r[3]), v(r[4]), v(r[5]), v(r[7]), v(r[8]), v(r[9]));
  }
  if (rows->rows.empty()) fmt::print(out, "(no read model has been rebuilt by rewind yet)\n");
  return 0;
}

int VerifyCommand(const ReplayOptions& o, std::vector<std::unique_ptr<Projector>> projectors,
                  std::FILE* out) {
  std::atomic<bool> stop{false};
  VerifySummary v = Verify(o, std::move(projectors), stop);
  if (!v.replay.status.ok()) {
    fmt::print(stderr, "rewind: verify failed: {}\n", v.replay.status.message());
    return 1;
  }
  fmt::print(out, "{:<26} {:>10} {:>10} {:>12} {:>12} {:>9} {:>9} {:>9}  {}\n", "read model",
             "live rows", "rebuilt", "live total", "rebuilt tot", "only live", "only new",
             "differ", "verdict");
  for (const TableDiff& d : v.tables) {
    fmt::print(out, "{:<26} {:>10} {:>10} {:>12} {:>12} {:>9} {:>9} {:>9}  {}\n", d.table,
               d.live_rows, d.rebuilt_rows, d.live_total, d.rebuilt_total, d.only_live,
               d.only_rebuilt, d.count_differs, d.identical() ? "identical" : "DIFFERS");
    for (const std::string& e : d.examples) fmt::print(out, "    {}\n", e);
  }
  fmt::print(out, "{}\n", v.identical() ? "every read model is identical to a fresh rebuild"
                                         : "some read models differ from a fresh rebuild");
  return v.identical() ? 0 : 4;
}

}  // namespace rw
