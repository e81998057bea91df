#include "pipeline/engine/summary.h"

#include <fmt/core.h>

#include <nlohmann/json.hpp>

#include "base/aligned_table.h"
#include "config/options.h"
#include "pipeline/version.h"
#include "stages/db/checkpoint_store.h"
#include "stages/db/table_admin.h"
#include "stages/control/progress.h"

namespace rw {

int ReplaySummary::ExitCode() const {
  if (cutover_gave_up) return exit_code::kCutoverGaveUp;
  if (over_budget) return exit_code::kOverBudget;
  if (empty_build) return exit_code::kEmptyBuild;
  if (!status.ok()) return exit_code::kError;
  // Within a failure budget the failures were expected: done (they are still recorded).
  return failures > 0 && !within_budget ? exit_code::kFailedEvents : exit_code::kOk;
}

// What became of the read models, as the summary's line begins.
std::string ReplaySummary::Outcome() const {
  if (continued.size() == projectors.size() && !projectors.empty() && status.ok()) {
    return "continued on their live tables (a follower started again):";
  }
  if (swapped) return "rebuilt and swapped in";
  if (!built_into.empty() && status.ok()) {
    return fmt::format("built beside the live tables (<table>{}, never swapped in):", built_into);
  }
  if (built_only && segment && status.ok()) {
    return fmt::format("built segment {} beside the live tables (<table>{}, for one later replay --resume to merge "
                       "the segments and swap in):", SegmentText(*segment), SegmentSuffix(*segment));
  }
  if (built_only && status.ok()) {
    return fmt::format("built beside the live tables (<table>{}, for one later replay --resume of them all to swap in):",
                       table_admin::kShadowSuffix);
  }
  return "NOT swapped in:";
}

std::string ReplaySummary::Following() const {
  std::string out;
  if (rebuild_before_following) {
    const auto [rebuilt, rebuild_s] = RebuildShare();
    out += fmt::format("followed after the {}: {} new event(s) in {:.2f} s\n", swapped ? "swap" : "catch-up",
                       WithThousands(events_read - rebuilt), seconds - rebuild_s);
  }
  if (!follow_source.empty()) {
    out += fmt::format("follow source: {} ({})\n", follow_source == "binlog" ? "the server's binlog" : "polling",
                       follow_source_why);
  }
  if (edited_events > 0) {
    out += fmt::format("edited: {} row(s) of the event table updated or deleted while following: rebuild the read "
                       "models that read them\n",
                       WithThousands(edited_events));
  }
  return out;
}

std::string ReplaySummary::Text() const {
  using A = AlignedTable::Align;
  AlignedTable table({{"read model", A::kLeft}, {"events", A::kRight}, {"rows written", A::kRight},
                      {"flushes", A::kRight}, {"apply s", A::kRight}, {"write s", A::kRight},
                      {"", A::kLeft}});
  for (const ProjectorSummary& p : projectors) {
    table.Row({p.name, WithThousands(p.events_applied), WithThousands(p.rows_written),
               std::to_string(p.flushes), fmt::format("{:.2f}", p.apply_seconds),
               fmt::format("{:.2f}", p.flush_seconds),
               p.resumed_after != kBeforeFirstId ? fmt::format(" (resumed after id {})", IdShown(id_form, p.resumed_after))
                                                 : std::string()});
  }
  std::string out = table.Text();
  // Following, the rate is the rebuild's, and the following has a line of its own.
  const auto [rebuilt, rebuild_s] = RebuildShare();
  const double rate = rebuild_s > 0 ? static_cast<double>(rebuilt) / rebuild_s : 0;
  out += fmt::format(
      "{} {} read model(s) from {} events in {:.2f} s ({} events/s); {} skipped (other "
      "event types), {} failed{}\n",
      Outcome(),
      continued.size() < projectors.size() ? projectors.size() - continued.size() : projectors.size(),
      WithThousands(rebuilt), rebuild_s, WithThousands(static_cast<uint64_t>(rate)),
      WithThousands(skipped), WithThousands(failures),
      failures ? fmt::format(" (see: SELECT * FROM {} WHERE run_id = '{}')", kFailureTable, run_id)
               : std::string());
  if (!continued.empty() && continued.size() < projectors.size()) {
    std::string names;
    for (const std::string& n : continued) names += (names.empty() ? "" : ", ") + n;
    out += fmt::format("continued on their live tables (a follower started again): {} read model(s), {}\n",
                       continued.size(), names);
  }
  if (memory_budget > 0) {
    out += fmt::format("memory: the read models' state peaked at {} of a {} budget (--memory){}\n",
                       ShowSize(memory_peak), ShowSize(memory_budget),
                       memory_flushes > 0 ? fmt::format("; {} flush(es) to stay within it", WithThousands(memory_flushes))
                                          : std::string());
    // What no flush gives back (an order-dependent read model's memory of earlier events:
    // sessions_per_day's last visit per visitor; the blog's URL counters' URLs).
    for (const ProjectorSummary& p : projectors) {
      if (p.peak_kept_bytes >= (size_t{1} << 20)) {
        out += fmt::format("memory: {} keeps {} across flushes, which no flush gives back\n", p.name,
                           ShowSize(p.peak_kept_bytes));
      }
    }
  }
  out += Following();
  if (finality == "server") {
    out += "finality: missing ids proven final by the server's open transactions\n";
  } else if (finality == "fallback") {
    out += "finality: missing ids judged final by the event table's times and ids (the server does not show "
           "its open transactions: grant PROCESS, or it is a Galera node or a replica)\n";
  } else if (finality == "id-times") {
    out += "finality: missing ids judged final by the times the ids carry (the clients make them: a hole is "
           "watched until the head is --settle seconds past it)\n";
  }
  if (swapped) {
    out += fmt::format(
        "cut-over: {} event(s) appended during the rebuild applied before the swap, {} late "
        "commit(s); inserts into the event table held for {:.3f} s ({} attempt(s), {} watched "
        "hole(s) read again under the lock)\n",
        WithThousands(catch_up_events), late_events, writers_held_seconds, cutover_attempts,
        WithThousands(holes_read_under_lock));
  }
  if (reconciled_events > 0) {
    out += fmt::format("reconciliation: {} event(s) found in holes judged final ({:.3f} s reading them)\n",
                       WithThousands(reconciled_events), reconcile_seconds);
    for (const ProjectorSummary& p : projectors) {
      if (p.missed_events > 0) {
        out += fmt::format("  {} missed {} of them (it applies events in id order): it needs a rebuild\n", p.name,
                           WithThousands(p.missed_events));
      }
    }
  }
  return out;
}

std::string ReplaySummary::Json() const {
  auto id = [&](EventId v) -> nlohmann::json {
    if (v == kBeforeFirstId) return nullptr;
    if (!id_form.integer()) return IdShown(id_form, v);  // a ULID or a UUID, as the table writes it
    if (v >= INT64_MIN && v <= INT64_MAX) return static_cast<int64_t>(v);
    return static_cast<uint64_t>(v);
  };
  const Rebuild rebuild = RebuildShare();  // --follow: the rebuild apart from the following
  nlohmann::json j = {
      {"run_id", run_id},
      {"rewind_version", BuildVersion()},
      {"ok", status.ok()},
      {"swapped", swapped},
      {"continued", continued},
      {"interrupted", interrupted},
      {"cutover_gave_up", cutover_gave_up},
      {"over_budget", over_budget},
      {"exit_code", ExitCode()},
      {"error", status.message()},
      {"head_id", id(head_id)},
      {"events_read", events_read},
      {"skipped", skipped},
      {"failures", failures},
      {"late_events", late_events},
      {"gaps_given_up", gaps_given_up},
      {"holes_watched_peak", holes_watched_peak},
      {"reconciled_events", reconciled_events},
      {"reconcile_seconds", reconcile_seconds},
      {"finality", finality},
      {"follow_source", follow_source},
      {"follow_source_why", follow_source_why},
      {"edited_events", edited_events},
      {"holes_read_under_lock", holes_read_under_lock},
      {"catch_up_events", catch_up_events},
      {"writers_held_seconds", writers_held_seconds},
      {"cutover_attempts", cutover_attempts},
      {"replica_lag_seconds",
       replica_lag_seconds ? nlohmann::json(*replica_lag_seconds) : nlohmann::json()},
      {"seconds", seconds},
      {"rebuild_events", rebuild.events},
      {"rebuild_seconds", rebuild.seconds},
      {"followed_events", events_read - rebuild.events},
      {"followed_seconds", seconds - rebuild.seconds},
      {"events_per_second", seconds > 0 ? static_cast<double>(events_read) / seconds : 0.0},
      {"peak_batches_in_flight", peak_in_flight},
      {"memory_budget_bytes", memory_budget},
      {"memory_peak_bytes", memory_peak},
      {"memory_flushes", memory_flushes},
  };
  nlohmann::json list = nlohmann::json::array();
  for (const ProjectorSummary& p : projectors) {
    list.push_back({{"name", p.name},
                    {"table", p.table},
                    {"resumed_after", id(p.resumed_after)},
                    {"events_applied", p.events_applied},
                    {"rows_written", p.rows_written},
                    {"flushes", p.flushes},
                    {"budget_flushes", p.budget_flushes},
                    {"peak_state_bytes", p.peak_state_bytes},
                    {"peak_kept_bytes", p.peak_kept_bytes},
                    {"retries", p.retries},
                    {"late_applied", p.late_applied},
                    {"reconciled_applied", p.reconciled_applied},
                    {"missed_events", p.missed_events},
                    {"failed_events", p.failed_events},
                    {"apply_seconds", p.apply_seconds},
                    {"flush_seconds", p.flush_seconds}});
  }
  j["projectors"] = list;
  // Invalid UTF-8 (from a server message) is replaced, never a thrown exception.
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

}  // namespace rw
