#include "pipeline/replay/dry_run.h"

#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <nlohmann/json.hpp>

#include "pipeline/replay/hand_over.h"
#include "pipeline/replay/handlers_check.h"
#include "pipeline/replay/read_replica.h"
#include "pipeline/replay/replay.h"
#include "pipeline/replay/replay_build.h"
#include "stages/flow/decoder.h"
#include "stages/control/progress.h"
#include "stages/flow/projector_runner.h"
#include "stages/flow/reader.h"
#include "stages/db/table_admin.h"
#include "stages/db/table_schema.h"

namespace rw {
namespace {

constexpr uint64_t kSampleEvents = 50'000;
constexpr double kSampleSeconds = 3.0;
// The write rate assumed for the estimate (rows/s): the write floor measured by perf/bench
// on the 2-core benchmark machine was 663k rows/s; a round, cautious figure.
constexpr double kAssumedWriteRowsPerSecond = 400'000;

struct ModelEstimate {
  std::string name, table;
  uint64_t sample_rows = 0, sample_bytes = 0;
  double rows = 0, bytes = 0;
  double state = 0;  // the memory its estimated rows would take held at once (state_bytes a row)
};

std::string Human(double bytes) {
  const char* units[] = {"B", "KB", "MB", "GB", "TB"};
  int u = 0;
  while (bytes >= 1024 && u < 4) {
    bytes /= 1024;
    ++u;
  }
  return fmt::format("{:.1f} {}", bytes, units[u]);
}

// The privileges the connecting user holds on the database (global and schema grants).
Result<std::vector<std::string>> HeldPrivileges(Connection& c) {
  Result<Rows> r = c.Query(
      "SELECT PRIVILEGE_TYPE FROM information_schema.USER_PRIVILEGES WHERE GRANTEE = "
      "CONCAT('''', SUBSTRING_INDEX(CURRENT_USER(), '@', 1), '''@''', "
      "SUBSTRING_INDEX(CURRENT_USER(), '@', -1), '''') UNION SELECT PRIVILEGE_TYPE FROM "
      "information_schema.SCHEMA_PRIVILEGES WHERE GRANTEE = CONCAT('''', "
      "SUBSTRING_INDEX(CURRENT_USER(), '@', 1), '''@''', SUBSTRING_INDEX(CURRENT_USER(), '@', -1), "
      "'''') AND DATABASE() LIKE TABLE_SCHEMA");
  if (!r.ok()) return r.status();
  std::vector<std::string> out;
  for (const auto& row : r->rows) out.push_back(row[0].value_or(""));
  return out;
}

// What the run would do to a read model's live table, in words (beneath its row).
std::string LiveTableWords(const std::string& live, bool exists, const live_shape::Judgement& j, bool swap) {
  using live_shape::Kind;
  if (!swap) return fmt::format("beside {} (left as it is){}", live,
                                j.kind == Kind::kApplications ? ", a copy LIKE the application's table" : "");
  if (!exists) return fmt::format("then creates {} (new, in rewind's shape)", live);
  switch (j.kind) {
    case Kind::kNew:
    case Kind::kRewinds: return fmt::format("then replaces {} (rewind's shape)", live);
    case Kind::kApplications:
      return j.problems.empty()
                 ? fmt::format("then replaces {} with a copy of its shape (the application's table: CREATE TABLE ... LIKE it, "
                               "the read model's columns written by name)", live)
                 : fmt::format("refused: the rows do not fit the application's table {}", live);
    case Kind::kReshaped:
      return fmt::format("then replaces {} with rewind's shape (--reshape), keeping the application's table as {}{}", live,
                         live, table_admin::kKeptSuffix);
  }
  return {};
}

// rewind's shape of a table with declared types (issue 38, part 2): each column's type and the key.
std::vector<std::string> DeclaredShape(const TableSpec& spec) {
  bool declared = false;
  for (const Column& c : spec.columns) declared = declared || c.storage.declared();
  if (!declared) return {};
  std::vector<std::string> lines;
  std::string keys;
  for (const Column& c : spec.columns) {
    lines.push_back(fmt::format("  {:<24} {}", c.name, table_schema::SqlType(c)));
    if (c.key()) keys += (keys.empty() ? "" : ", ") + c.name;
  }
  const std::string hash = table_schema::HashColumn(spec);
  lines.push_back(hash.empty() ? fmt::format("  key ({}): its PRIMARY KEY", keys)
                               : fmt::format("  key ({}): a unique key on {} (longer than an index holds)", keys, hash));
  return lines;
}

void PrintLiveTable(std::FILE* out, const TableSpec& spec, bool exists, const live_shape::Judgement& j, bool swap) {
  fmt::print(out, "  {}\n", LiveTableWords(spec.name, exists, j, swap));
  if (j.kind == live_shape::Kind::kApplications || j.kind == live_shape::Kind::kReshaped) {
    for (const std::string& line : j.account) fmt::print(out, "  {}\n", line);
  } else {
    for (const std::string& line : DeclaredShape(spec)) fmt::print(out, "  {}\n", line);
  }
}

nlohmann::json LiveTableJson(const std::string& live, bool exists, const live_shape::Judgement& j, bool swap) {
  static constexpr const char* kKinds[] = {"new", "rewinds", "applications", "reshaped"};
  nlohmann::json out = {{"name", live},
                        {"exists", exists},
                        {"shape", kKinds[static_cast<int>(j.kind)]},
                        {"does", LiveTableWords(live, exists, j, swap)},
                        {"fits", j.problems.empty()}};
  if (!j.account.empty()) out["account"] = j.account;
  if (!j.problems.empty()) out["problems"] = j.problems;
  return out;
}

// What the dry run found, for its text and its JSON.
struct Findings {
  uint64_t events = 0;  // in the range the run would read
  bool exact = true;    // counted, not the optimizer's estimate
  uint64_t sampled = 0, matched = 0;  // events read in the sample; of them, of the classes read
  double sample_seconds = 0;
  bool whole = false;  // the sample read the whole range
  double seconds = 0;  // the estimated duration
  size_t memory_budget = 0;  // --memory
  std::vector<ModelEstimate> models;
  struct TableState {
    bool exists = false, in_the_way = false;
    live_shape::Judgement shape;
    bool live_exists = false;
  };
  std::vector<TableState> tables;
  std::vector<hand_over::Step> hand_overs;
  // A follower started again (--resume --follow): per read model, the live build it would
  // continue (FindLiveBuild), or why it would be rebuilt.
  std::vector<LiveBuild> live_builds;
  std::vector<std::string> handlers;  // each statement of the read models of handlers, prepared
  // The application's live tables the swap checks for writes (CHECKSUM TABLE at the start and
  // before the cut-over), with their rows (the server's estimate): the cost of the check.
  std::vector<std::pair<std::string, uint64_t>> watched;
  std::vector<std::string> missing;  // grants
  std::string no_match;
  bool proves = false;  // missing ids proven final by the server
  bool id_times = false;  // judged by the times the ids carry (ULIDs, UUIDv7s)
  bool by_ids = false;  // else judged by ids alone
  std::string fallback_rule;
  std::optional<FollowChoice> follow;  // --follow: how it would learn of new commits
  std::vector<std::string> blockers;
};

// Events the run would read: exact from the index when that is quick, else the estimate.
void CountEvents(Connection& c, const RunSpec& o, EventId last, Findings& f) {
  Result<uint64_t> count = CountEvents(c, o.events, std::nullopt, last, /*max_seconds=*/3);
  if (count.ok()) {
    f.events = *count;
    return;
  }
  f.exact = false;
  Result<std::optional<std::string>> estimate = c.QueryValue(fmt::format(
      "SELECT TABLE_ROWS FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND "
      "TABLE_NAME = {}",
      c.Quote(o.events.table)));
  f.events = estimate.ok() && *estimate ? std::stoull(**estimate) : 0;
}

// A timed sample: the first batches (a tenth of the range, at least one batch, at most
// kSampleEvents), decoded and applied in memory by the runners, never written. Returns the
// rows each read model held at about half the sample, for how fast its keys still grow.
Result<std::vector<size_t>> Sample(const RunSpec& o, const ReadPlan& reads, EventSource& source, EventId last,
                                   std::vector<std::unique_ptr<ProjectorRunner>>& runners, Findings& f) {
  const Decoder decoder(reads.catalog);
  const uint64_t sample_target =
      std::clamp<uint64_t>(f.events / 10, std::min<uint64_t>(o.batch_size, kSampleEvents), kSampleEvents);
  const auto started = std::chrono::steady_clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count(); };
  std::vector<size_t> half_rows(runners.size(), 0);
  uint64_t half_events = 0;
  while (f.sampled < sample_target && elapsed() < kSampleSeconds) {
    if (half_events == 0 && f.sampled * 2 >= sample_target) {
      half_events = f.sampled;
      for (size_t i = 0; i < runners.size(); ++i) half_rows[i] = runners[i]->projector().pending_rows();
    }
    Result<std::unique_ptr<Batch>> batch = source.Next();
    if (!batch.ok()) return batch.status();
    if (*batch == nullptr) {
      f.whole = true;
      break;
    }
    decoder.Decode(**batch);
    f.sampled += (*batch)->rows_read;
    f.matched += (*batch)->rows_read - (*batch)->skipped;
    for (auto& r : runners) {
      // A flush due is not made: the sample stays in memory (it is bounded by kSampleEvents).
      if (Result<bool> folded = r->Fold(**batch); !folded.ok()) return folded.status();
    }
  }
  f.sample_seconds = elapsed();
  if (!f.whole && source.position() >= last) f.whole = true;
  half_rows.push_back(half_events);  // the last element: the events read by then
  return half_rows;
}

// Each read model's rows and bytes, from the sample scaled to the range.
void Estimate(std::vector<std::unique_ptr<ProjectorRunner>>& runners, const std::vector<size_t>& half, Findings& f) {
  const uint64_t half_events = half.back();
  const double scale =
      f.whole || f.sampled == 0 ? 1.0 : static_cast<double>(f.events) / static_cast<double>(f.sampled);
  double total_rows = 0;
  for (size_t i = 0; i < runners.size(); ++i) {
    ModelEstimate& m = f.models[i];
    // Every sampled event counts, held ones too (order-dependent read models hold the events
    // above a hole still open); the rows a flush would write go to a counting sink.
    runners[i]->ReleaseAllHeld();
    const size_t state = runners[i]->projector().state_bytes();
    const size_t kept = runners[i]->projector().kept_bytes();
    TsvBuilder tsv(runners[i]->projector().table());
    runners[i]->FlushInto(tsv);
    m.sample_rows = tsv.rows();
    m.sample_bytes = tsv.bytes();
    // Keys grow like events^a: a = 1 for keys that keep coming (minutes, URLs), near 0 for
    // keys that are all there already (years); a is measured between half and all of the
    // sample.
    double growth = 1.0;
    if (half_events > 0 && half_events < f.sampled && half[i] > 0 && m.sample_rows > 0) {
      growth = std::log(static_cast<double>(m.sample_rows) / static_cast<double>(half[i])) /
               std::log(static_cast<double>(f.sampled) / static_cast<double>(half_events));
      growth = std::clamp(growth, 0.0, 1.0);
    }
    const double row_scale = std::pow(scale, growth);
    m.rows = static_cast<double>(m.sample_rows) * row_scale;
    m.bytes = static_cast<double>(m.sample_bytes) * row_scale;
    m.state = static_cast<double>(state + kept) * row_scale;
    total_rows += m.rows;
  }
  f.seconds = f.sample_seconds * scale + total_rows / kAssumedWriteRowsPerSecond;
}

// Per read model: its build table exists already, and may be replaced (rewind made it), or
// is in the way (refused, as the real run would refuse it before any work); its live table:
// rewind's, or the application's (kept in its shape, or refused); a lock another run holds.
void JudgeTables(Connection& c, const RunSpec& o, const RunPlan& plan,
                 const std::vector<std::unique_ptr<ProjectorRunner>>& runners, Findings& f) {
  for (size_t i = 0; i < runners.size(); ++i) {
    const std::string& live = runners[i]->projector().table().name;
    Result<bool> exists = table_admin::Exists(c, f.models[i].table);
    Status way = CheckTablesInTheWay(c, plan, o.events.table, live);
    Findings::TableState state{exists.ok() && *exists, !way.ok(), {}, false};
    if (!way.ok()) f.blockers.push_back(way.message());
    Result<bool> live_exists = table_admin::Exists(c, live);
    state.live_exists = live_exists.ok() && *live_exists;
    Result<live_shape::Judgement> shape = JudgeLiveTable(c, runners[i]->projector(), o.reshape);
    if (shape.ok()) {
      state.shape = std::move(*shape);
    } else {
      // Refused: the account again, for the text below.
      Result<live_shape::Judgement> j = live_shape::Judge(c, runners[i]->projector().table(), false);
      if (j.ok()) state.shape = std::move(*j);
      f.blockers.push_back(shape.status().message().substr(0, shape.status().message().find(". Nothing was done")) +
                           " (--reshape replaces it with rewind's shape, keeping it aside)");
    }
    f.tables.push_back(std::move(state));
    Result<bool> free = table_admin::IsFree(c, plan.lock_prefix, LockedTable(plan, live));
    if (free.ok() && !*free) {
      f.blockers.push_back(fmt::format("another rewind is rebuilding {} (its lock is held)", f.models[i].name));
    }
  }
}

// The hand-overs the swap would run (checked with the server as the real run checks them),
// and the grants the run needs that the user lacks.
void CheckHandOversAndGrants(Connection& c, const RunSpec& o, const RunPlan& plan,
                             const std::vector<std::unique_ptr<ProjectorRunner>>& runners, Findings& f) {
  std::vector<const Projector*> ps;
  for (const auto& r : runners) ps.push_back(&r->projector());
  Result<std::vector<hand_over::Step>> h = hand_over::Prepare(c, ps, o.follow, plan.swap(), o.events.table);
  if (h.ok()) f.hand_overs = std::move(*h);
  else f.blockers.push_back(h.status().message());
  Result<std::vector<std::string>> handlers = handlers_check::Prepare(c, ps, o.events.table);
  if (handlers.ok()) f.handlers = std::move(*handlers);
  else f.blockers.push_back(handlers.status().message());
  std::vector<std::string> names;
  for (const ModelEstimate& m : f.models) names.push_back(m.name);
  for (const Projector* p : ps) {
    Result<LiveBuild> found = FindLiveBuild(c, o, plan, names, *p, f.hand_overs);
    if (!found.ok()) f.blockers.push_back(found.status().message());
    f.live_builds.push_back(found.ok() ? std::move(*found) : LiveBuild{});
  }
  for (size_t i = 0; plan.swap() && i < runners.size() && i < f.tables.size(); ++i) {
    const std::string& live = runners[i]->projector().table().name;
    if (f.live_builds[i].checkpoint) continue;  // continued in place: rewind's to write
    if (!f.tables[i].live_exists || !hand_over::ApplicationMayWrite(f.tables[i].shape.kind, live, f.hand_overs)) {
      continue;
    }
    Result<std::optional<std::string>> rows = c.QueryValue(fmt::format(
        "SELECT TABLE_ROWS FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = {}",
        c.Quote(live)));
    f.watched.emplace_back(live, rows.ok() && *rows ? std::stoull(**rows) : 0);
  }
  std::vector<std::string> needed = {"SELECT", "INSERT", "UPDATE", "DELETE", "CREATE", "DROP", "ALTER"};
  if (plan.swap()) needed.push_back("LOCK TABLES");
  Result<std::vector<std::string>> held = HeldPrivileges(c);
  if (held.ok()) {
    const bool all = std::find(held->begin(), held->end(), "ALL PRIVILEGES") != held->end();
    for (const std::string& g : needed) {
      if (!all && std::find(held->begin(), held->end(), g) == held->end()) f.missing.push_back(g);
    }
  }
  if (!f.missing.empty()) {
    std::string list;
    for (const std::string& m : f.missing) list += (list.empty() ? "" : ", ") + m;
    f.blockers.push_back(fmt::format("the user lacks the grants: {} (on {}.*)", list, o.connection.database));
  }
}

// No event of the classes read: say which classes the table holds (a bounded look at its
// first events), and refuse as the real run would when a live table has rows.
void CheckSomethingMatches(Connection& c, const RunSpec& o, const RunPlan& plan, const ReadPlan& reads,
                           const std::vector<std::unique_ptr<ProjectorRunner>>& runners, Findings& f) {
  if (f.matched != 0 || f.sampled == 0) return;
  std::string classes;
  Result<Rows> present = CommonClasses(c, o.events, /*first=*/10000, /*top=*/10);
  if (present.ok()) {
    for (const auto& row : present->rows) {
      classes += fmt::format("{}'{}' ({})", classes.empty() ? "" : ", ", row[0].value_or("NULL"), row[1].value_or("0"));
    }
  }
  std::string wanted;
  for (const std::string& w : reads.scope.classes) wanted += (wanted.empty() ? "'" : ", '") + w + "'";
  if (wanted.empty()) wanted = "'" + o.events.page_visited_class + "'";
  f.no_match = fmt::format("0 events match the class {} in {} of the {} events read{}; the classes of its first "
                           "events: {}",
                           wanted, o.events.table, WithThousands(f.sampled), f.whole ? " (all of them)" : "",
                           classes.empty() ? "(none)" : classes);
  bool live_rows = false;
  for (const auto& r : runners) {
    const std::string& live = r->projector().table().name;
    Result<bool> exists = table_admin::Exists(c, live);
    if (!exists.ok() || !*exists) continue;
    Result<std::optional<std::string>> any = c.QueryValue(fmt::format("SELECT 1 FROM {} LIMIT 1", QuoteIdentifier(live)));
    live_rows = live_rows || (any.ok() && *any);
  }
  if (f.whole && live_rows && plan.swap() && !o.allow_empty) {
    f.blockers.push_back(f.no_match + "; the run would swap nothing over live tables with rows (exit 7; "
                                      "--allow-empty to swap anyway)");
  }
}

// How the real run would prove missing ids final (stages/flow/reader.h, "Gaps"), and the
// fallback rule as the reader would apply it: by the times and ids, or by ids alone.
Status JudgeFinality(Connection& c, const RunSpec& o, Findings& f) {
  f.proves = !ReadsFromReplica(o) && o.events.id_form.integer() && CanSeeOpenTransactions(c);
  Result<std::string> why_ids = WhyJudgedByIds(c, o.events, o.settle_ids);
  if (!why_ids.ok()) return why_ids.status();
  f.by_ids = !why_ids->empty();
  if (!o.events.id_form.integer()) {
    f.id_times = true;
    f.fallback_rule = fmt::format("by the times the ids carry ({}s: the clients make them): final {} s below the head",
                                  IdFormName(o.events.id_form), o.settle_seconds);
    return Status::Ok();
  }
  f.fallback_rule = f.by_ids ? fmt::format("by ids alone: final {} ids below the head ({})",
                                           WithThousands(o.settle_ids > 0 ? o.settle_ids : kDefaultSettleIds), *why_ids)
                             : std::string("by the event table's times and ids");
  return Status::Ok();
}

// With --follow: how the run would learn of new commits (ChooseFollowSource, as Prepare asks);
// --follow-source binlog where the binlog cannot be had is a blocker.
void JudgeFollowSource(Connection& c, const RunSpec& o, const std::vector<std::unique_ptr<ProjectorRunner>>& runners,
                       Findings& f) {
  if (!o.follow) return;
  std::vector<std::string> in_order;
  for (const auto& r : runners) {
    if (r->projector().order_dependent() != nullptr) in_order.emplace_back(r->projector().name());
  }
  Result<FollowChoice> choice = ChooseFollowSource(c, o, in_order, f.proves);
  if (choice.ok()) {
    f.follow = *choice;
  } else {
    f.blockers.push_back(choice.status().message());
  }
}

// The event a continued read model's live table continues after (null: none, or not continued).
nlohmann::json ContinuesAfter(const LiveBuild& b, const IdForm& id) {
  if (!b.checkpoint || b.checkpoint->last_event_id == kBeforeFirstId) return nullptr;
  const EventId v = b.checkpoint->last_event_id;
  if (id.integer() && v >= INT64_MIN && v <= INT64_MAX) return static_cast<int64_t>(v);  // as the summary's ids
  return IdShown(id, v);
}

void PrintJson(std::FILE* out, const Findings& f, const std::vector<std::unique_ptr<ProjectorRunner>>& runners,
               bool swap, const IdForm& id) {
  nlohmann::json j;
  j["can_start"] = f.blockers.empty();
  j["blockers"] = f.blockers;
  j["events"] = {{"count", f.events}, {"exact", f.exact}};
  j["sample"] = {{"events", f.sampled}, {"matching", f.matched}, {"seconds", f.sample_seconds}, {"whole_range", f.whole}};
  if (!f.no_match.empty()) j["no_match"] = f.no_match;
  j["estimated_seconds"] = f.seconds;
  j["memory_budget_bytes"] = f.memory_budget;
  j["read_models"] = nlohmann::json::array();
  for (size_t i = 0; i < f.models.size(); ++i) {
    const ModelEstimate& m = f.models[i];
    const Findings::TableState& t = f.tables[i];
    j["read_models"].push_back({{"name", m.name},
                                {"table", m.table},
                                {"replaces_existing", t.exists && !t.in_the_way},
                                {"in_the_way", t.in_the_way},
                                {"live_table", LiveTableJson(runners[i]->projector().table().name, t.live_exists, t.shape, swap)},
                                {"continues_after", ContinuesAfter(f.live_builds[i], id)},
                                {"rebuilt_because", f.live_builds[i].why_rebuilt},
                                {"estimated_rows", static_cast<uint64_t>(m.rows)},
                                {"estimated_bytes", static_cast<uint64_t>(m.bytes)},
                                {"estimated_memory_bytes", static_cast<uint64_t>(m.state)},
                                {"estimate", !f.whole}});
  }
  j["missing_grants"] = f.missing;
  j["hand_overs"] = nlohmann::json::array();
  for (const hand_over::Step& h : f.hand_overs) j["hand_overs"].push_back({{"read_model", h.read_model}, {"sql", h.sql}});
  j["handlers"] = f.handlers;
  j["watched_tables"] = nlohmann::json::array();
  for (const auto& [table, rows] : f.watched) j["watched_tables"].push_back({{"table", table}, {"rows", rows}});
  j["finality"] = f.proves ? "server" : "fallback";
  if (!f.proves) j["fallback_rule"] = f.by_ids ? "ids" : "times and ids";
  if (f.follow) {
    j["follow_source"] = f.follow->binlog ? "binlog" : "poll";
    j["follow_source_why"] = f.follow->why;
  }
  fmt::print(out, "{}\n", j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace));
}

void PrintText(std::FILE* out, const Findings& f, const std::vector<std::unique_ptr<ProjectorRunner>>& runners,
               bool swap, const IdForm& id) {
  fmt::print(out, "dry run: nothing was created, locked or written\n");
  fmt::print(out, "events to read: {} ({})\n", WithThousands(f.events),
             f.exact ? "exact" : "estimate (the optimizer's; counting took too long)");
  fmt::print(out, "sample: {} events read ({} of the classes read), decoded and applied in memory in {:.2f} s{}\n",
             WithThousands(f.sampled), WithThousands(f.matched), f.sample_seconds, f.whole ? " (the whole range)" : "");
  if (!f.no_match.empty()) fmt::print(out, "{}\n", f.no_match);
  fmt::print(out, "{:<26} {:<40} {:>14} {:>12}\n", "read model", "would create", "rows", "size");
  for (size_t i = 0; i < f.models.size(); ++i) {
    const ModelEstimate& m = f.models[i];
    const Findings::TableState& t = f.tables[i];
    const LiveBuild& live = f.live_builds[i];
    if (live.checkpoint) {  // a follower started again: nothing created
      fmt::print(out, "{:<26} {:<40}\n  continues its live table {} from its checkpoint, after event {} (a follower "
                      "started again): nothing rebuilt\n",
                 m.name, "(nothing)", live.checkpoint->live_table,
                 live.checkpoint->last_event_id == kBeforeFirstId ? "(none)" : IdShown(id, live.checkpoint->last_event_id));
      continue;
    }
    fmt::print(out, "{:<26} {:<40} {:>14} {:>12}{}\n", m.name,
               m.table + (t.in_the_way ? " (refused: see below)" : t.exists ? " (replaces a leftover)" : ""),
               WithThousands(static_cast<uint64_t>(m.rows)), Human(m.bytes), f.whole ? "" : "  (estimate)");
    if (!live.why_rebuilt.empty()) fmt::print(out, "  rebuilt from the first event: {}\n", live.why_rebuilt);
    PrintLiveTable(out, runners[i]->projector().table(), t.live_exists, t.shape, swap);
  }
  for (const auto& [table, rows] : f.watched) {
    fmt::print(out, "the application's table {}: nothing may write it until the swap (pause the application's "
                    "projector): the swap is refused when it changed; checked by CHECKSUM TABLE at the start and "
                    "before the cut-over, outside the hold (a scan of about {} rows each time)\n",
               table, WithThousands(rows));
  }
  for (const std::string& h : f.handlers) fmt::print(out, "handler: {}\n", h);
  for (const hand_over::Step& h : f.hand_overs) {
    fmt::print(out, "hand-over: at the swap, {} runs {} with the last event id applied (the application's "
                    "projector must be paused until then)\n", h.read_model, h.sql);
  }
  double state = 0;
  for (const ModelEstimate& m : f.models) state += m.state;
  fmt::print(out, "memory: the read models' state may hold {} (--memory); their estimated rows held at once would "
                  "take {} ({}; plus the reader's batches and the flushes in flight)\n",
             ShowSize(f.memory_budget), Human(state),
             state > static_cast<double>(f.memory_budget) ? "past it, they flush as it fills"
                                                           : "within it");
  fmt::print(out, "estimated duration: {:.1f} s (estimate: the sample's pace, plus writes at about {} rows/s)\n",
             f.seconds, WithThousands(static_cast<uint64_t>(kAssumedWriteRowsPerSecond)));
  fmt::print(out, "finality: {}\n",
             f.proves                     ? std::string("missing ids would be proven final by the server's open transactions")
             : f.id_times                  ? fmt::format("missing ids would be judged final {}", f.fallback_rule)
                                           : fmt::format("missing ids would be judged final {} (the server does not show its open "
                                    "transactions: grant PROCESS, or it is a Galera node or a replica)",
                                    f.fallback_rule));
  if (f.follow) {
    fmt::print(out, "follow source: {} ({})\n", f.follow->binlog ? "the server's binlog" : "polling", f.follow->why);
  }
  if (f.blockers.empty()) {
    fmt::print(out, "a real run could start: every grant is there and no other run holds a lock\n");
  } else {
    fmt::print(out, "a real run could NOT start:\n");
    for (const std::string& b : f.blockers) fmt::print(out, "  - {}\n", b);
  }
}

}  // namespace

// The dry run: a Build that inspects (read-only), samples, and stops.
int DryRunCommand(const RunSpec& o, std::vector<std::unique_ptr<Projector>> projectors,
                  std::FILE* out) {
  auto fail = [&](const std::string& why) {
    if (o.json) {
      fmt::print(out, "{}\n", nlohmann::json{{"can_start", false}, {"blockers", {why}}}.dump(2));
    } else {
      fmt::print(out, "dry run: a real run could NOT start:\n  - {}\n", why);
    }
    return exit_code::kError;
  };
  const RunPlan plan = PlanFor(o);
  const std::atomic<bool> never{false};
  Build b(o, plan, never);
  if (Status s = b.Inspect(projectors); !s.ok()) return fail(s.message());
  Connection& c = b.admin();
  const EventId last = b.summary().head_id;
  const ReadPlan& reads = b.read_plan();
  Findings f;
  f.memory_budget = o.memory_bytes;
  CountEvents(c, o, last, f);
  for (const auto& p : projectors) f.models.push_back({std::string(p->name()), p->table().name + plan.table_suffix});
  // The runner's own apply step, in memory: nothing is written, the rows are counted.
  std::vector<std::unique_ptr<ProjectorRunner>> runners;
  for (auto& p : projectors) runners.push_back(ProjectorRunner::InMemory(std::move(p)));
  projectors.clear();
  Result<std::unique_ptr<EventSource>> source = b.SampleSource(kSampleEvents);
  if (!source.ok()) return fail(source.status().message());
  Result<std::vector<size_t>> half = Sample(o, reads, **source, last, runners, f);
  source->reset();  // its connection closes before the checks, as it always did
  if (!half.ok()) return fail(half.status().message());
  Estimate(runners, *half, f);
  JudgeTables(c, o, plan, runners, f);
  CheckHandOversAndGrants(c, o, plan, runners, f);
  CheckSomethingMatches(c, o, plan, reads, runners, f);
  if (Status s = JudgeFinality(c, o, f); !s.ok()) return fail(s.message());
  JudgeFollowSource(c, o, runners, f);
  if (o.json) {
    PrintJson(out, f, runners, plan.swap(), b.summary().id_form);
  } else {
    PrintText(out, f, runners, plan.swap(), b.summary().id_form);
  }
  return f.blockers.empty() ? exit_code::kOk : exit_code::kError;
}

}  // namespace rw
