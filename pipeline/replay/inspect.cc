#include "pipeline/replay/inspect.h"

#include "config/careful_file.h"

#include <fmt/core.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>

#include "base/aligned_table.h"
#include "pipeline/replay/replay.h"
#include "stages/control/progress.h"
#include "stages/db/checkpoint_store.h"
#include "stages/db/connection.h"
#include "stages/db/table_admin.h"
#include "stages/flow/reader.h"

namespace rw {

std::string PrometheusLabelValue(std::string_view value) {
  std::string out;
  out.reserve(value.size());
  for (char ch : value) {
    if (ch == '\\')
      out += "\\\\";
    else if (ch == '"')
      out += "\\\"";
    else if (ch == '\n')
      out += "\\n";
    else
      out += ch;
  }
  return out;
}

namespace {

// How far a checkpoint is behind the head of the event table, measured on the event table.
struct Lag {
  uint64_t events = 0;            // events with an id above the checkpoint, up to the head
  std::optional<double> seconds;  // the head event's time less the checkpoint event's
};

// The lag of one checkpoint: COUNT of the events above it, and (`with_time`) the difference
// of the time columns of the head event and of the last applied event, by the event clock
// (as the reader reads the time column: whole seconds). No time lag before the first event
// applied, or when either time does not read as a time.
Result<Lag> LagOf(Connection& c, const EventTableOptions& e, EventId head,
                  const std::optional<EventId>& checkpoint, bool with_time) {
  Lag lag;
  if (head == kBeforeFirstId) return lag;
  Result<uint64_t> n = CountEvents(c, e, checkpoint, head);
  if (!n.ok()) return n.status();
  lag.events = *n;
  if (!with_time || !checkpoint) return lag;
  auto t = TimesOf(c, e, *checkpoint, head);
  if (!t.ok()) return t.status();
  if (!t->first || !t->second) return lag;
  const std::optional<int64_t> applied = EventTimeSeconds(*t->first);
  const std::optional<int64_t> newest = EventTimeSeconds(*t->second);
  if (applied && newest)
    lag.seconds = static_cast<double>(std::max<int64_t>(0, *newest - *applied));
  return lag;
}

// The status rows in Prometheus' text exposition format (version 0.0.4): one family per
// figure, each with # HELP and # TYPE, labelled by read model and table.
std::string PrometheusText(const std::vector<checkpoint_store::StatusRow>& rows,
                           const std::vector<Lag>& lags) {
  std::string out;
  auto labels = [](const checkpoint_store::StatusRow& r) {
    return fmt::format("read_model=\"{}\",table=\"{}\"", PrometheusLabelValue(r.projector),
                       PrometheusLabelValue(r.table));
  };
  auto family = [&](const char* name, const char* type, const char* help, auto value) {
    out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
    for (size_t i = 0; i < rows.size(); ++i) {
      const std::optional<double> v = value(rows[i], lags[i]);
      if (v) out += fmt::format("{}{{{}}} {}\n", name, labels(rows[i]), *v);
    }
  };
  using Row = checkpoint_store::StatusRow;
  auto whole = [](uint64_t n) { return std::optional<double>(static_cast<double>(n)); };
  family("rewind_lag_events", "gauge",
         "Events in the event table above the read model's checkpoint, up to the head.",
         [&](const Row&, const Lag& l) { return whole(l.events); });
  family("rewind_lag_seconds", "gauge",
         "Time column of the newest event less that of the last applied one (the event clock, "
         "never the wall clock).",
         [](const Row&, const Lag& l) { return l.seconds; });
  family("rewind_events_applied_total", "counter",
         "Events applied to the table by its builds and follows.",
         [&](const Row& r, const Lag&) { return whole(r.events_applied); });
  family("rewind_failures_total", "counter",
         "Events of the table's last run that could not be applied (rewind_failures).",
         [&](const Row& r, const Lag&) { return whole(r.failures); });
  family("rewind_late_events_total", "counter",
         "Events that committed after a higher id had been read.",
         [&](const Row& r, const Lag&) { return whole(r.late_events); });
  family("rewind_gaps_given_up_total", "counter",
         "Holes in the ids given up on (never committed within --settle).",
         [&](const Row& r, const Lag&) { return whole(r.gaps_given_up); });
  family("rewind_reconciled_events_total", "counter",
         "Events a follow's reconciliation found after their hole was judged final, and applied.",
         [&](const Row& r, const Lag&) { return whole(r.reconciled_events); });
  family("rewind_missed_events_total", "counter",
         "Events found after their hole was judged final that the read model could not take "
         "(order-dependent, already past them): it needs a rebuild.",
         [&](const Row& r, const Lag&) { return whole(r.missed_events); });
  family("rewind_follows_binlog", "gauge",
         "1 when the read model was last followed by the server's binlog, 0 by polling the event "
         "table (rewind status says why); absent when it was never followed.",
         [](const Row& r, const Lag&) {
           return r.follow_source.empty() ? std::nullopt : std::optional<double>(r.follow_source == "binlog");
         });
  family("rewind_edited_events_total", "counter",
         "Event-table rows the binlog showed updated or deleted while the read model followed "
         "(events are immutable): it needs a rebuild.",
         [&](const Row& r, const Lag&) { return whole(r.edited_events); });
  family("rewind_needs_rebuild", "gauge",
         "1 when the read model missed an event or an event it followed was edited "
         "(rewind_missed_events_total or rewind_edited_events_total > 0): rebuild it.",
         [&](const Row& r, const Lag&) { return whole(r.needs_rebuild() ? 1 : 0); });
  family("rewind_last_run_events_per_second", "gauge",
         "Events per second of the last completed run.",
         [](const Row& r, const Lag&) { return r.events_per_second; });
  out +=
      "# HELP rewind_build_info The version of rewind that built the table.\n"
      "# TYPE rewind_build_info gauge\n";
  for (const Row& r : rows) {
    if (r.rewind_version) {
      out += fmt::format("rewind_build_info{{{},version=\"{}\"}} 1\n", labels(r),
                         PrometheusLabelValue(*r.rewind_version));
    }
  }
  return out;
}

// Writes `text` to `path` as node_exporter's textfile collector wants it: through a temp file
// in the same directory (not ending in .prom, so the collector never reads it half-written),
// made 0644 whatever the umask (the collector runs as another user), renamed over `path`.
Status WriteTextfile(const std::string& path, const std::string& text) {
  return WriteCarefully(path, text, "--textfile", 0644);
}

}  // namespace

int ListReadModels(const RunSpec& o, std::FILE* out) {
  using A = AlignedTable::Align;
  AlignedTable table({{"read model", A::kLeft}, {"kind", A::kLeft}, {"key", A::kLeft}, {"event types", A::kLeft}});
  std::string left_out;  // the compiled (blog's) read models --all does not take here
  for (const ProjectorInfo& info : o.known) {
    if (!InAll(o, info)) {
      left_out += (left_out.empty() ? "" : ", ") + info.name;
      continue;
    }
    std::unique_ptr<Projector> p = info.make();
    std::string key;
    for (const Column& c : p->table().columns) {
      if (c.key()) key += (key.empty() ? "" : ", ") + c.name;
    }
    std::string classes = "PageVisited (--event-class)";
    if (!p->origin().empty()) {  // declared: the classes it names
      EventCatalog catalog;
      p->Bind(catalog);
      classes.clear();
      for (const std::string& c : catalog.classes()) classes += (classes.empty() ? "" : ", ") + c;
    }
    table.Row({info.name, info.origin.empty() ? "compiled" : "declared", key, classes});
    table.Note("    " + info.description);
  }
  fmt::print(out, "{}", table.Text());
  if (!left_out.empty()) {
    fmt::print(out, "\nNot listed: the blog's compiled read models ({}). They read the blog's PageVisited events, "
                    "and {} is not the blog's event table; name one to rebuild it anyway.\n",
               left_out, o.events.table);
  }
  return 0;
}

namespace {

// The text of each field as the status table shows it ("-" for none): ids and counts in
// decimal, seconds with their two decimals, the rate whole.
std::string Text(const std::optional<std::string>& s) { return s.value_or("-"); }
std::string IdOrDash(const std::optional<EventId>& i) { return i ? IdText(*i) : std::string("-"); }
// An event id as the table writes it (a ULID, a UUID: base/id_form.h), "-" for none.
std::string ShownOrDash(const IdForm& form, const std::optional<EventId>& i) {
  return i && *i != kBeforeFirstId ? IdShown(form, *i) : std::string("-");
}
std::string Seconds2(const std::optional<double>& s) { return s ? fmt::format("{:.2f}", *s) : std::string("-"); }
std::string Rate(const std::optional<double>& s) { return s ? fmt::format("{:.0f}", *s) : std::string("-"); }

// Declared read models (with --models): the version of each one's declaration today, to say
// whether its table was built by it ("current") or by an older one.
struct Declarations {
  std::map<std::string, std::string> versions;
  std::string Of(const checkpoint_store::StatusRow& r) const {
    const auto it = versions.find(r.projector);
    if (it == versions.end()) return "";
    const std::string& source = r.source;
    return source.size() > it->second.size() && source.ends_with("-" + it->second) ? "current" : "older";
  }
  // A row's status, for the live table or for a build beside it.
  std::string State(const checkpoint_store::StatusRow& r) const {
    std::string s = r.table == r.live_table ? r.status : r.status + " (" + r.table + ")";
    if (Of(r) == "older") s += " [older declaration]";
    if (!r.follow_source.empty()) s += " (followed by " + r.follow_source + ")";
    if (r.missed_events > 0) s += fmt::format(" [needs rebuild: {} missed]", r.missed_events);
    if (r.edited_events > 0) s += fmt::format(" [needs rebuild: {} event(s) edited]", r.edited_events);
    return s;
  }
};

// status --format prometheus (to stdout or --textfile).
int StatusPrometheus(Connection& c, const RunSpec& o, const std::vector<checkpoint_store::StatusRow>& rows,
                     EventId head, std::FILE* out) {
  // The time lag needs the time column; without one the family has no samples.
  EventTableOptions events = o.events;
  const bool with_time = CheckEventTable(c, events, /*with_time_column=*/true).ok();
  std::vector<Lag> lags;
  for (const auto& r : rows) {
    Result<Lag> lag = LagOf(c, o.events, head, r.checkpoint, with_time);
    if (!lag.ok()) {
      fmt::print(stderr, "rewind: measuring the lag of {}: {}\n", r.projector,
                 lag.status().message());
      return exit_code::kError;
    }
    lags.push_back(*lag);
  }
  const std::string text = PrometheusText(rows, lags);
  if (o.textfile.empty()) {
    fmt::print(out, "{}", text);
    return exit_code::kOk;
  }
  if (Status s = WriteTextfile(o.textfile, text); !s.ok()) {
    fmt::print(stderr, "rewind: {}\n", s.message());
    return exit_code::kError;
  }
  return exit_code::kOk;
}

// status --json.
// `rewind status`'s text: the head, then one row per checkpoint in columns that fit.
void StatusText(const std::vector<checkpoint_store::StatusRow>& rows, EventId head, const IdForm& form, const Declarations& d,
                std::FILE* out) {
  fmt::print(out, "event store head: id {}\n", ShownOrDash(form, head));
  using A = AlignedTable::Align;
  AlignedTable table({{"read model", A::kLeft}, {"status", A::kLeft}, {"checkpoint", A::kRight},
                      {"behind", A::kRight}, {"failed", A::kRight}, {"late", A::kRight},
                      {"gave up", A::kRight}, {"last run", A::kLeft}, {"seconds", A::kRight},
                      {"events/s", A::kRight}});
  for (const auto& r : rows) {
    table.Row({r.projector, d.State(r), ShownOrDash(form, r.checkpoint), IdOrDash(r.behind),
               std::to_string(r.failures), std::to_string(r.late_events), std::to_string(r.gaps_given_up),
               Text(r.last_run_at), Seconds2(r.seconds), Rate(r.events_per_second)});
  }
  fmt::print(out, "{}", table.Text());
  if (rows.empty()) fmt::print(out, "(no read model has been rebuilt by rewind yet)\n");
}

void StatusJson(const std::vector<checkpoint_store::StatusRow>& rows, EventId head, const IdForm& form, const Declarations& d,
                std::FILE* out) {
  auto rate = [](const std::optional<double>& s) { return Rate(s); };
  auto v = [](const std::optional<std::string>& s) { return Text(s); };
  auto declaration = [&](const checkpoint_store::StatusRow& r) { return d.Of(r); };
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
  // Integer ids as numbers; ULIDs and UUIDs as the table writes them.
  auto event_json = [&](const std::optional<EventId>& i) {
    if (!i || *i == kBeforeFirstId) return nlohmann::json(nullptr);
    return form.integer() ? num(IdText(*i)) : nlohmann::json(IdShown(form, *i));
  };
  j["head_event_id"] = event_json(head);
  j["read_models"] = nlohmann::json::array();
  for (const auto& r : rows) {
    j["read_models"].push_back(
        {{"projector", r.projector},
         {"table", r.table},
         {"live_table", r.live_table},
         {"status", r.status},
         {"checkpoint", event_json(r.checkpoint)},
         {"behind", id_json(r.behind)},
         {"failures", r.failures},
         {"run_id", r.run_id},
         {"last_run_at", v(r.last_run_at)},
         {"seconds", real_json(r.seconds)},
         {"events_per_second", rate_json(r.events_per_second)},
         {"late_events", r.late_events},
         {"gaps_given_up", r.gaps_given_up},
         {"gaps_watched", r.gaps_watched},
         {"reconciled_events", r.reconciled_events},
         {"missed_events", r.missed_events},
         {"needs_rebuild", r.needs_rebuild()},
         {"follow_source", r.follow_source},
         {"edited_events", r.edited_events},
         {"events_applied", r.events_applied},
         {"rewind_version",
          r.rewind_version ? nlohmann::json(*r.rewind_version) : nlohmann::json(nullptr)},
         {"declaration",
          declaration(r).empty() ? nlohmann::json(nullptr) : nlohmann::json(declaration(r))}});
  }
  fmt::print(out, "{}\n", j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace));
}

}  // namespace

int ShowStatus(const RunSpec& o, std::FILE* out) {
  const bool prometheus = o.format == "prometheus";
  if (o.json && prometheus) {
    fmt::print(stderr, "rewind: --json and --format prometheus ask for two formats: give one\n");
    return exit_code::kUsage;
  }
  if (!o.textfile.empty() && !prometheus) {
    fmt::print(stderr,
               "rewind: --textfile writes the Prometheus format: add --format prometheus\n");
    return exit_code::kUsage;
  }
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
    EventTableOptions checked = o.events;
    Status events = CheckEventTable(c, checked, false);
    const std::string why = fmt::format("status needs the event table to measure the lag: {}",
                                        (events.ok() ? head.status() : events).message());
    if (o.json) fmt::print(out, "{}\n", nlohmann::json{{"error", why}}.dump(2));
    fmt::print(stderr, "rewind: {}\n", why);
    return exit_code::kError;
  }
  std::vector<checkpoint_store::StatusRow> rows;
  // Layouts 2 to 4 differ from the current one only by tables status does not read (the
  // ownership records, the heartbeats) and the rewind_version column (read as none).
  if (*version >= 2 && *version <= kSchemaVersion) {
    Result<std::vector<checkpoint_store::StatusRow>> r =
        checkpoint_store::StatusRows(c, *head, *version);
    if (!r.ok()) {
      fmt::print(stderr, "rewind: {}\n", r.status().message());
      return exit_code::kError;
    }
    rows = std::move(*r);
  } else if (*version != 0) {
    fmt::print(stderr, "rewind: the bookkeeping tables have the layout of an older rewind "
                       "(version {}); the next replay migrates them\n", *version);
  }
  // Declared read models (with --models): is the table built by today's declaration?
  Declarations declarations;
  if (!o.models_file.empty()) {
    for (const ProjectorInfo& info : o.known) {
      if (!info.origin.empty()) declarations.versions[info.name] = ReadModelVersion(*info.make());
    }
  }
  if (prometheus) return StatusPrometheus(c, o, rows, *head, out);
  if (o.json) {
    StatusJson(rows, *head, o.events.id_form, declarations, out);
    return exit_code::kOk;
  }
  StatusText(rows, *head, o.events.id_form, declarations, out);
  return exit_code::kOk;
}

namespace {

// The verify report, one table per read model; returns its exit code.
int PrintDiffs(const std::vector<TableDiff>& diffs, const std::string& other, std::FILE* out) {
  bool identical = true;
  using A = AlignedTable::Align;
  AlignedTable table({{"read model", A::kLeft}, {"live rows", A::kRight}, {other, A::kRight},
                      {"live total", A::kRight}, {other + " tot", A::kRight}, {"only live", A::kRight},
                      {"only " + other.substr(0, 4), A::kRight}, {"differ", A::kRight},
                      {"verdict", A::kLeft}});
  for (const TableDiff& d : diffs) {
    identical = identical && d.identical();
    table.Row({d.table, fmt::to_string(d.live_rows), fmt::to_string(d.rebuilt_rows), fmt::to_string(d.live_total),
               fmt::to_string(d.rebuilt_total), fmt::to_string(d.only_live), fmt::to_string(d.only_rebuilt),
               fmt::to_string(d.count_differs), d.identical() ? "identical" : "DIFFERS"});
    for (const std::string& e : d.examples) table.Note("    " + e);
  }
  fmt::print(out, "{}", table.Text());
  fmt::print(out, "{}\n", identical ? "every read model is identical to the " + other + " one"
                                    : "some read models differ from the " + other + " one");
  return identical ? exit_code::kOk : exit_code::kDiffers;
}

// verify --against SUFFIX: the live tables against an --into build, nothing rebuilt.
int VerifyAgainst(const RunSpec& o, const std::vector<std::unique_ptr<Projector>>& projectors,
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

int VerifyReadModels(const RunSpec& o, std::vector<std::unique_ptr<Projector>> projectors,
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
