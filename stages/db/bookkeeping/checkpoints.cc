// rewind_checkpoints: one row per (read model, target table), and `rewind status`'s view of it.
#include "stages/db/checkpoint_store.h"

#include <fmt/core.h>

#include <charconv>
#include <utility>

namespace rw {
namespace {

EventId IdOr(const std::optional<std::string>& v, EventId fallback) {
  if (!v) return fallback;
  return ParseEventId(*v).value_or(fallback);
}

Checkpoint FromRow(const std::vector<std::optional<std::string>>& r) {
  Checkpoint cp;
  cp.projector = r[0].value_or("");
  cp.target_table = r[1].value_or("");
  cp.live_table = r[2].value_or("");
  cp.status = ParseCheckpointStatus(r[3].value_or(""));
  cp.run_id = r[4].value_or("");
  cp.source = r[5].value_or("");
  cp.last_event_id = IdOr(r[6], kBeforeFirstId);
  cp.gaps = GapSet::Parse(r[7].value_or("")).value_or(GapSet());
  cp.head_event_id = IdOr(r[8], kBeforeFirstId);
  cp.events_applied = r[9] ? std::stoull(*r[9]) : 0;
  cp.failed_events = r[10] ? std::stoull(*r[10]) : 0;
  cp.missed_events = r.size() > 11 && r[11] ? std::stoull(*r[11]) : 0;
  cp.read_mark = r.size() > 12 ? r[12].value_or("") : "";
  return cp;
}

const char* const kCheckpointColumns =
    "projector, target_table, live_table, status, run_id, source, last_event_id, gaps, "
    "head_event_id, events_applied, failed_events, missed_events, read_mark";

constexpr std::pair<CheckpointStatus, std::string_view> kStatusTexts[] = {
    {CheckpointStatus::kBuilding, "building"},
    {CheckpointStatus::kBuilt, "built"},
    {CheckpointStatus::kLive, "live"},
    {CheckpointStatus::kFollowing, "following"},
};

}  // namespace

std::string_view CheckpointStatusText(CheckpointStatus status) {
  for (const auto& [s, text] : kStatusTexts) {
    if (s == status) return text;
  }
  return "";
}

std::optional<CheckpointStatus> ParseCheckpointStatus(std::string_view text) {
  for (const auto& [s, t] : kStatusTexts) {
    if (t == text) return s;
  }
  return std::nullopt;
}

namespace checkpoint_store {

Result<std::optional<Checkpoint>> Load(Connection& c, const std::string& projector,
                                       const std::string& target) {
  Result<Rows> r = c.Query(fmt::format("SELECT {} FROM rewind_checkpoints WHERE projector = {} "
                                       "AND target_table = {}",
                                       kCheckpointColumns, c.Quote(projector), c.Quote(target)));
  if (!r.ok()) return r.status();
  if (r->rows.empty()) return std::optional<Checkpoint>();
  return std::optional<Checkpoint>(FromRow(r->rows[0]));
}

Status Start(Connection& c, const Checkpoint& cp) {
  return c.Execute(fmt::format(
      "REPLACE INTO rewind_checkpoints (projector, target_table, live_table, status, run_id, "
      "source, rewind_version, last_event_id, gaps, head_event_id, started_at, updated_at) "
      "VALUES ({}, {}, {}, {}, {}, {}, {}, {}, {}, {}, NOW(6), NOW(6))",
      c.Quote(cp.projector), c.Quote(cp.target_table), c.Quote(cp.live_table),
      c.Quote(CheckpointStatusText(cp.status.value())), c.Quote(cp.run_id), c.Quote(cp.source),
      c.Quote(ValidUtf8(cp.rewind_version, 64)), IdText(cp.last_event_id), c.Quote(cp.gaps.Text()),
      IdText(cp.head_event_id)));
}

Status SetHead(Connection& c, const std::string& projector, const std::string& target, EventId head) {
  return c.Execute(fmt::format("UPDATE rewind_checkpoints SET head_event_id = {}, updated_at = "
                               "NOW(6) WHERE projector = {} AND target_table = {}",
                               IdText(head), c.Quote(projector), c.Quote(target)));
}

std::string AdvanceSql(Connection& c, const std::string& projector, const std::string& target,
                       EventId last_id, const GapSet& gaps, uint64_t events, uint64_t rows,
                       uint64_t late, uint64_t failed, uint64_t reconciled, uint64_t missed) {
  return fmt::format(
      "UPDATE rewind_checkpoints SET last_event_id = {}, gaps = {}, events_applied = "
      "events_applied + {}, rows_written = rows_written + {}, late_events = late_events + {}, "
      "failed_events = failed_events + {}, reconciled_events = reconciled_events + {}, "
      "missed_events = missed_events + {}, updated_at = NOW(6) WHERE projector = {} AND "
      "target_table = {}",
      IdText(last_id), c.Quote(gaps.Text()), events, rows, late, failed, reconciled, missed,
      c.Quote(projector), c.Quote(target));
}

std::string MoveToFailedSql(Connection& c, const std::string& projector, const std::string& target,
                            uint64_t events) {
  return fmt::format("UPDATE rewind_checkpoints SET events_applied = events_applied - {0}, failed_events = "
                     "failed_events + {0} WHERE projector = {1} AND target_table = {2}",
                     events, c.Quote(projector), c.Quote(target));
}

std::string SetReadMarkSql(Connection& c, const std::string& projector, const std::string& target,
                           const std::string& mark) {
  return fmt::format("UPDATE rewind_checkpoints SET read_mark = {} WHERE projector = {} AND target_table = {}",
                     c.Quote(mark), c.Quote(projector), c.Quote(target));
}

Status BecomeLive(Connection& c, const std::string& projector, const std::string& built,
                  const std::string& live, CheckpointStatus status, double seconds,
                  double rate, uint64_t given_up) {
  if (Status s = c.Execute(fmt::format(
          "DELETE FROM rewind_checkpoints WHERE projector = {} AND target_table = {}",
          c.Quote(projector), c.Quote(live)));
      !s.ok())
    return s;
  return c.Execute(fmt::format(
      "UPDATE rewind_checkpoints SET target_table = {}, status = {}, finished_at = NOW(6), "
      "seconds = {}, events_per_second = {}, gaps_given_up = gaps_given_up + {} WHERE "
      "projector = {} AND target_table = {}",
      c.Quote(live), c.Quote(CheckpointStatusText(status)), seconds, rate, given_up, c.Quote(projector), c.Quote(built)));
}

Status SetStatus(Connection& c, const std::string& projector, const std::string& target,
                 CheckpointStatus status, uint64_t given_up) {
  return c.Execute(fmt::format(
      "UPDATE rewind_checkpoints SET status = {}, gaps_given_up = gaps_given_up + {}, "
      "updated_at = NOW(6) WHERE projector = {} AND target_table = {}",
      c.Quote(CheckpointStatusText(status)), given_up, c.Quote(projector), c.Quote(target)));
}

Status SetFollowSource(Connection& c, const std::string& projector, const std::string& target,
                       const std::string& source) {
  return c.Execute(fmt::format("UPDATE rewind_checkpoints SET follow_source = {} WHERE projector = {} AND target_table = {}",
                               c.Quote(source), c.Quote(projector), c.Quote(target)));
}

Status AddEdited(Connection& c, const std::string& projector, const std::string& target, uint64_t edited) {
  return c.Execute(fmt::format(
      "UPDATE rewind_checkpoints SET edited_events = edited_events + {} WHERE projector = {} AND target_table = {}",
      edited, c.Quote(projector), c.Quote(target)));
}

Status Delete(Connection& c, const std::string& projector, const std::string& target) {
  return c.Execute(fmt::format(
      "DELETE FROM rewind_checkpoints WHERE projector = {} AND target_table = {}",
      c.Quote(projector), c.Quote(target)));
}

Result<std::vector<Checkpoint>> WithTargetSuffix(Connection& c, const std::string& suffix) {
  Result<Rows> r = c.Query(fmt::format(
      "SELECT {} FROM rewind_checkpoints WHERE RIGHT(target_table, {}) = {}", kCheckpointColumns,
      suffix.size(), c.Quote(suffix)));
  if (!r.ok()) return r.status();
  std::vector<Checkpoint> out;
  for (const auto& row : r->rows) out.push_back(FromRow(row));
  return out;
}

Result<std::vector<Checkpoint>> ForLiveTable(Connection& c, const std::string& live_table) {
  Result<Rows> r = c.Query(fmt::format("SELECT {} FROM rewind_checkpoints WHERE live_table = {} AND target_table "
                                       "<> live_table ORDER BY target_table",
                                       kCheckpointColumns, c.Quote(live_table)));
  if (!r.ok()) return r.status();
  std::vector<Checkpoint> out;
  for (const auto& row : r->rows) out.push_back(FromRow(row));
  return out;
}

// The columns of StatusRows' query, named for messages.
static constexpr const char* kColumns[] = {
    "projector",      "target_table",  "live_table",    "status",      "last_event_id",
    "behind",         "failures",      "run_id",        "last run at", "seconds",
    "events/s",       "late_events",   "gaps_given_up", "gaps",        "source",
    "events_applied", "rewind_version", "reconciled_events", "missed_events", "follow_source",
    "edited_events"};
// One row of StatusRows' query, read; an error names the first column whose text is not what
// its type says.
static Result<StatusRow> StatusRowOf(const std::vector<std::optional<std::string>>& row) {
  std::string bad;  // the first column whose text is not what its type says
  auto text = [&](size_t i) { return row[i].value_or(""); };
  auto id = [&](size_t i) -> std::optional<EventId> {
    if (!row[i]) return std::nullopt;
    std::optional<EventId> v = ParseEventId(*row[i]);
    if (!v && bad.empty()) bad = std::string(kColumns[i]) + " = " + *row[i];
    return v;
  };
  auto count = [&](size_t i) -> uint64_t {
    uint64_t v = 0;
    const std::string s = text(i);
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if ((ec != std::errc() || end != s.data() + s.size()) && bad.empty())
      bad = std::string(kColumns[i]) + " = " + s;
    return v;
  };
  auto real = [&](size_t i) -> std::optional<double> {
    if (!row[i]) return std::nullopt;
    double v = 0;
    const std::string& s = *row[i];
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if ((ec != std::errc() || end != s.data() + s.size()) && bad.empty())
      bad = std::string(kColumns[i]) + " = " + s;
    return v;
  };
  StatusRow checkpoint{.projector = text(0),
                       .table = text(1),
                       .live_table = text(2),
                       .status = text(3),
                       .checkpoint = id(4),
                       .behind = id(5),
                       .failures = count(6),
                       .run_id = text(7),
                       .last_run_at = row[8],
                       .seconds = real(9),
                       .events_per_second = real(10),
                       .late_events = count(11),
                       .gaps_given_up = count(12),
                       .gaps_watched = count(13),
                       .reconciled_events = count(17),
                       .missed_events = count(18),
                       .follow_source = text(19),
                       .edited_events = count(20),
                       .source = text(14),
                       .events_applied = count(15),
                       .rewind_version = row[16]};
  if (!bad.empty()) {
    return Status::Internal(
        fmt::format("{} holds a value status cannot read: {}", kCheckpointTable, bad));
  }
  return checkpoint;
}

Result<std::vector<StatusRow>> StatusRows(Connection& c, EventId head, int layout) {
  const std::string head_text = head == kBeforeFirstId ? "NULL" : IdText(head);
  // Layouts before 5 have no rewind_version column: read as NULL (status changes nothing).
  Result<Rows> r = c.Query(fmt::format(
      "SELECT k.projector, k.target_table, k.live_table, k.status, "
      "IF(k.last_event_id < -9223372036854775808, NULL, k.last_event_id), "
      "GREATEST(0, {head} - k.last_event_id), "
      "(SELECT COUNT(*) FROM rewind_failures f WHERE f.run_id = k.run_id AND f.stage IN "
      "('decoder', "
      "k.projector)), k.run_id, "
      "COALESCE(k.finished_at, k.updated_at), ROUND(k.seconds, 2), ROUND(k.events_per_second), "
      "k.late_events, k.gaps_given_up, IF(k.gaps = '', 0, 1 + LENGTH(k.gaps) - "
      "LENGTH(REPLACE(k.gaps, ',', ''))), k.source, k.events_applied, {version}, {reconciled}, {follow} "
      "FROM rewind_checkpoints k ORDER BY k.projector, k.target_table",
      fmt::arg("head", head_text),
      fmt::arg("version", layout >= 5 ? "NULLIF(k.rewind_version, '')" : "NULL"),
      fmt::arg("reconciled", layout >= 8 ? "k.reconciled_events, k.missed_events" : "0, 0"),
      fmt::arg("follow", layout >= 11 ? "k.follow_source, k.edited_events" : "'', 0")));
  if (!r.ok()) return r.status();
  std::vector<StatusRow> out;
  out.reserve(r->rows.size());
  for (const auto& row : r->rows) {
    Result<StatusRow> checkpoint = StatusRowOf(row);
    if (!checkpoint.ok()) return checkpoint.status();
    out.push_back(std::move(*checkpoint));
  }
  return out;
}

}  // namespace checkpoint_store
}  // namespace rw
