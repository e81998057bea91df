#include "pipeline/replay/inspect.h"

#include <fmt/core.h>

#include <atomic>
#include <map>

#include "pipeline/replay/replay.h"
#include <nlohmann/json.hpp>

#include "stages/db/checkpoint_store.h"
#include "stages/db/table_admin.h"
#include "stages/db/connection.h"
#include "stages/control/progress.h"
#include "stages/flow/reader.h"

namespace rw {

int ListCommand(const ReplayOptions& o, std::FILE* out) {
  Result<std::vector<ProjectorInfo>> known = KnownReadModels(o);
  if (!known.ok()) {
    fmt::print(stderr, "rewind: {}\n", known.status().message());
    return exit_code::kUsage;
  }
  fmt::print(out, "{:<32} {:<9} {:<28} {}\n", "read model", "kind", "key", "event types");
  for (const ProjectorInfo& info : *known) {
    std::unique_ptr<Projector> p = info.make();
    std::string key;
    for (const Column& c : p->table().columns) {
      if (c.key()) key += (key.empty() ? "" : ", ") + c.name;
    }
    std::string classes = "PageVisited (--event-class)";
    if (p->reads_records()) {
      EventCatalog catalog;
      p->Bind(catalog);
      classes.clear();
      for (const std::string& c : catalog.classes()) classes += (classes.empty() ? "" : ", ") + c;
    }
    fmt::print(out, "{:<32} {:<9} {:<28} {}\n", info.name, info.origin.empty() ? "compiled" : "declared", key,
               classes);
    fmt::print(out, "    {}\n", info.description);
  }
  return 0;
}

int StatusCommand(const ReplayOptions& o, std::FILE* out) {
  Result<std::unique_ptr<Connection>> conn = Connection::Open(o.connection);
  if (!conn.ok()) {
    fmt::print(stderr, "rewind: {}\n", conn.status().message());
    return exit_code::kError;
  }
  // Read-only: status creates and migrates nothing (a SELECT-only user can run it).
  Connection& c = **conn;
  Result<int> version = checkpoint_store::Version(c);
  if (!version.ok()) {
    fmt::print(stderr, "rewind: {}\n", version.status().message());
    return exit_code::kError;
  }
  // Without a readable event table there is no head to measure lag against: say why (the
  // event table's check names what is missing), in the form asked for.
  Result<EventId> head = ReadHeadId(c, o.events);
  if (!head.ok()) {
    Status events = CheckEventTable(c, o.events, false);
    const std::string why = fmt::format("status needs the event table to measure the lag: {}",
                                        (events.ok() ? head.status() : events).message());
    if (o.json) fmt::print(out, "{}\n", nlohmann::json{{"error", why}}.dump(2));
    fmt::print(stderr, "rewind: {}\n", why);
    return exit_code::kError;
  }
  std::vector<checkpoint_store::StatusRow> rows;
  // Layouts 2 and 3 differ from the current one only by tables status does not read (the
  // ownership records, the heartbeats).
  if (*version >= 2 && *version <= kSchemaVersion) {
    Result<std::vector<checkpoint_store::StatusRow>> r = checkpoint_store::StatusRows(c, *head);
    if (!r.ok()) {
      fmt::print(stderr, "rewind: {}\n", r.status().message());
      return exit_code::kError;
    }
    rows = std::move(*r);
  } else if (*version != 0) {
    fmt::print(stderr, "rewind: the bookkeeping tables have the layout of an older rewind "
                       "(version {}); the next replay migrates them\n", *version);
  }
  const std::string head_text = *head == kBeforeFirstId ? std::string("-") : IdText(*head);
  // The text of each field as the table shows it ("-" for none): ids and counts in decimal,
  // seconds with their two decimals, the rate whole.
  auto v = [](const std::optional<std::string>& s) { return s.value_or("-"); };
  auto id = [](const std::optional<EventId>& i) { return i ? IdText(*i) : std::string("-"); };
  auto seconds = [](const std::optional<double>& s) {
    return s ? fmt::format("{:.2f}", *s) : std::string("-");
  };
  auto rate = [](const std::optional<double>& s) {
    return s ? fmt::format("{:.0f}", *s) : std::string("-");
  };
  // A row for the live table, or for a build beside it.
  // Declared read models (with --models): is the table built by today's declaration?
  std::map<std::string, std::string> versions;
  if (!o.models_file.empty()) {
    Result<std::vector<ProjectorInfo>> known = KnownReadModels(o);
    if (!known.ok()) {
      fmt::print(stderr, "rewind: {}\n", known.status().message());
      return exit_code::kUsage;
    }
    for (const ProjectorInfo& info : *known) {
      if (!info.origin.empty()) versions[info.name] = ReadModelVersion(*info.make());
    }
  }
  auto declaration = [&](const checkpoint_store::StatusRow& r) -> std::string {
    const auto it = versions.find(r.projector);
    if (it == versions.end()) return "";
    const std::string& source = r.source;
    return source.size() > it->second.size() && source.ends_with("-" + it->second) ? "current" : "older";
  };
  auto state = [&](const checkpoint_store::StatusRow& r) {
    std::string s = r.table == r.live_table ? r.status : r.status + " (" + r.table + ")";
    if (declaration(r) == "older") s += " [older declaration]";
    return s;
  };
  if (o.json) {
    // A number as JSON reads its decimal text (whole numbers beyond 64 bits become doubles).
    auto num = [](const std::string& s) -> nlohmann::json {
      return nlohmann::json::parse(s, nullptr, false).is_discarded() ? nlohmann::json(s)
                                                                     : nlohmann::json::parse(s);
    };
    auto id_json = [&](const std::optional<EventId>& i) {
      return i ? num(IdText(*i)) : nlohmann::json(nullptr);
    };
    auto real_json = [](const std::optional<double>& d) {
      return d ? nlohmann::json(*d) : nlohmann::json(nullptr);
    };
    auto rate_json = [&](const std::optional<double>& d) {
      return d ? num(rate(d)) : nlohmann::json(nullptr);
    };
    nlohmann::json j;
    j["head_event_id"] = *head == kBeforeFirstId ? nlohmann::json(nullptr) : num(IdText(*head));
    j["read_models"] = nlohmann::json::array();
    for (const auto& r : rows) {
      j["read_models"].push_back(
          {{"projector", r.projector},
           {"table", r.table},
           {"live_table", r.live_table},
           {"status", r.status},
           {"checkpoint", id_json(r.checkpoint)},
           {"behind", id_json(r.behind)},
           {"failures", r.failures},
           {"run_id", r.run_id},
           {"last_run_at", v(r.last_run_at)},
           {"seconds", real_json(r.seconds)},
           {"events_per_second", rate_json(r.events_per_second)},
           {"late_events", r.late_events},
           {"gaps_given_up", r.gaps_given_up},
           {"gaps_watched", r.gaps_watched},
           {"declaration",
            declaration(r).empty() ? nlohmann::json(nullptr) : nlohmann::json(declaration(r))}});
    }
    fmt::print(out, "{}\n", j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace));
    return exit_code::kOk;
  }
  fmt::print(out, "event store head: id {}\n", head_text);
  fmt::print(out, "{:<32} {:<12} {:>12} {:>10} {:>8} {:>6} {:>8} {:<27} {:>8} {:>10}\n", "read model",
             "status", "checkpoint", "behind", "failed", "late", "gave up", "last run", "seconds",
             "events/s");
  for (const auto& r : rows) {
    fmt::print(out, "{:<32} {:<12} {:>12} {:>10} {:>8} {:>6} {:>8} {:<27} {:>8} {:>10}\n",
               r.projector, state(r), id(r.checkpoint), id(r.behind), r.failures, r.late_events,
               r.gaps_given_up, v(r.last_run_at), seconds(r.seconds), rate(r.events_per_second));
  }
  if (rows.empty()) fmt::print(out, "(no read model has been rebuilt by rewind yet)\n");
  return exit_code::kOk;
}

namespace {

// The verify report, one table per read model; returns its exit code.
int PrintDiffs(const std::vector<TableDiff>& diffs, const std::string& other, std::FILE* out) {
  bool identical = true;
  fmt::print(out, "{:<26} {:>10} {:>10} {:>12} {:>12} {:>9} {:>9} {:>9}  {}\n", "read model",
             "live rows", other, "live total", other + " tot", "only live",
             "only " + other.substr(0, 4), "differ", "verdict");
  for (const TableDiff& d : diffs) {
    identical = identical && d.identical();
    fmt::print(out, "{:<26} {:>10} {:>10} {:>12} {:>12} {:>9} {:>9} {:>9}  {}\n", d.table,
               d.live_rows, d.rebuilt_rows, d.live_total, d.rebuilt_total, d.only_live,
               d.only_rebuilt, d.count_differs, d.identical() ? "identical" : "DIFFERS");
    for (const std::string& e : d.examples) fmt::print(out, "    {}\n", e);
  }
  fmt::print(out, "{}\n", identical ? "every read model is identical to the " + other + " one"
                                    : "some read models differ from the " + other + " one");
  return identical ? exit_code::kOk : exit_code::kDiffers;
}

// verify --against SUFFIX: the live tables against an --into build, nothing rebuilt.
int VerifyAgainst(const ReplayOptions& o, const std::vector<std::unique_ptr<Projector>>& projectors,
                  std::FILE* out) {
  Result<std::unique_ptr<Connection>> conn = Connection::Open(o.connection);
  if (!conn.ok()) {
    fmt::print(stderr, "rewind: {}\n", conn.status().message());
    return exit_code::kError;
  }
  std::vector<TableDiff> diffs;
  for (const auto& p : projectors) {
    const std::string other = p->table().name + o.against;
    Result<bool> exists = table_admin::Exists(**conn, other);
    if (!exists.ok() || !*exists) {
      fmt::print(stderr, "rewind: verify failed: there is no table {} (build it with rewind replay {} --into {})\n",
                 other, p->name(), o.against);
      return exit_code::kError;
    }
    Result<TableDiff> d = CompareTables(**conn, p->table(), p->table().name, other);
    if (!d.ok()) {
      fmt::print(stderr, "rewind: verify failed: {}\n", d.status().message());
      return exit_code::kError;
    }
    diffs.push_back(std::move(*d));
  }
  return PrintDiffs(diffs, o.against, out);
}

}  // namespace

int VerifyCommand(const ReplayOptions& o, std::vector<std::unique_ptr<Projector>> projectors,
                  std::FILE* out) {
  if (!o.against.empty()) return VerifyAgainst(o, projectors, out);
  std::atomic<bool> stop{false};
  VerifySummary v = Verify(o, std::move(projectors), stop);
  if (!v.replay.status.ok()) {
    fmt::print(stderr, "rewind: verify failed: {}\n", v.replay.status.message());
    return exit_code::kError;
  }
  return PrintDiffs(v.tables, "rebuilt", out);
}

}  // namespace rw
