// The end of a build (replay_build.h), what the finishers (finishers.h) call on it: the
// checks before a swap, the swap itself, the checkpoints' last status, the scratch tables'
// drop, and the admin connection made whole again after a server restart.
#include "pipeline/replay/replay_build.h"

#include <fmt/core.h>

#include "stages/db/retry.h"
#include "stages/db/table_admin.h"
#include "stages/flow/page_query.h"

namespace rw {
namespace {

// The admin connection idles while the graph runs; if the server restarted meanwhile,
// reconnect and take the locks again before touching any table.
Status EnsureAdmin(Connection& c, const std::vector<std::string>& tables,
                   const std::string& lock_prefix) {
  Status alive = c.Execute("DO 1");
  if (alive.ok()) return Status::Ok();
  if (alive.code() != Status::Code::kConnection) return alive;
  if (Status s = RetryOnConnectionLoss(c, [&] { return c.Execute("DO 1"); }); !s.ok()) return s;
  return table_admin::Lock(c, tables, lock_prefix).With("taking the locks again after a reconnect");
}

}  // namespace

Status Build::CheckBudget() {
  if (!o_.max_failures && !o_.max_failures_percent) return Status::Ok();
  std::string over;
  for (size_t i = 0; i < runners_.size(); ++i) {
    if (continues(i)) continue;  // live already, nothing swapped: its failures are counted (status)
    const RunnerStats& st = runners_[i]->stats();
    const uint64_t failed = prior_failed_[i] + st.failed_events;
    const uint64_t given = prior_applied_[i] + st.events_applied + failed;
    const bool too_many = o_.max_failures ? failed > *o_.max_failures
                                          : static_cast<double>(failed) * 100 >
                                                *o_.max_failures_percent * static_cast<double>(given);
    if (too_many) {
      over += fmt::format("{}{} failed {} of {} events", over.empty() ? "" : "; ", names_[i], failed, given);
    }
  }
  sum_.within_budget = over.empty();
  if (over.empty()) return Status::Ok();
  sum_.over_budget = true;
  return Status::InvalidInput(fmt::format(
      "over the failure budget ({}): {}; nothing was swapped in, the shadow tables are kept for "
      "inspection and --resume",
      o_.max_failures ? fmt::format("--max-failures {}", *o_.max_failures)
                      : fmt::format("--max-failures {}%", *o_.max_failures_percent),
      over));
}

// A read model that received no event over the whole build (its resumed part included)
// would swap an empty table over a live one with rows: a class or an event table that
// matches nothing. Nothing is swapped then (the swap is one RENAME for all), unless
// --allow-empty.
Status Build::CheckNotEmpty() {
  if (o_.allow_empty) return Status::Ok();
  std::string empty;
  for (size_t i = 0; i < runners_.size(); ++i) {
    const RunnerStats& st = runners_[i]->stats();
    if (continues(i)) continue;  // it is the live table: nothing replaces it
    if (prior_applied_[i] + st.events_applied + prior_failed_[i] + st.failed_events > 0) continue;
    Result<bool> exists = table_admin::Exists(*admin_, live_tables_[i]);
    if (!exists.ok()) return exists.status();
    if (!*exists) continue;
    Result<std::optional<std::string>> any =
        admin_->QueryValue(fmt::format("SELECT 1 FROM {} LIMIT 1", QuoteIdentifier(live_tables_[i])));
    if (!any.ok()) return any.status();
    if (*any) empty += fmt::format("{}{}", empty.empty() ? "" : ", ", names_[i]);
  }
  if (empty.empty()) return Status::Ok();
  sum_.empty_build = true;
  std::string classes;
  for (const std::string& c : read_plan_.scope.classes) classes += (classes.empty() ? "'" : ", '") + c + "'";
  if (classes.empty()) classes = "'" + o_.events.page_visited_class + "'";
  return Status::InvalidInput(fmt::format(
      "{} received no event from {} ({} events read; of the class {}), but the live table has rows: "
      "nothing was swapped in, the shadow tables are kept; check --events-table and --event-class "
      "(`rewind replay --dry-run` names the classes the table holds), or pass --allow-empty to swap "
      "the empty build in",
      empty, o_.events.table, WithThousands(sum_.events_read), classes));
}

Status Build::CheckNothingMissed() {
  std::string missed;
  for (size_t i = 0; i < runners_.size(); ++i) {
    if (continues(i)) continue;  // live already, nothing swapped: its misses are counted (status)
    const uint64_t n = prior_missed_[i] + runners_[i]->stats().missed_events;
    if (n > 0) missed += fmt::format("{}{} missed {}", missed.empty() ? "" : "; ", names_[i], n);
  }
  if (missed.empty()) return Status::Ok();
  return Status::InvalidInput(fmt::format(
      "events committed late could not be placed exactly ({}): a first or last value below values already written "
      "into the application's table, which keeps no event id, or an event below where an order-dependent read model "
      "had applied. Their counts and sums are in, the rest would be wrong: nothing was swapped in. Rebuild again from "
      "the start (without --resume): the late commits are in the table now; a smaller --flush-every, or an "
      "application that keeps transactions short, makes it rarer",
      missed));
}

Status Build::CheckNothingBelow() {
  if (o_.events.id_form.integer() || sum_.head_id == kBeforeFirstId) return Status::Ok();
  for (const ProjectorSummary& p : sum_.projectors) {
    if (p.resumed_after != kBeforeFirstId) return Status::Ok();
  }
  // Under the hold the table ends at the head: the whole table is counted, which the server
  // does on its smallest index (half the time of the id range on the clustered index, 1M ULIDs).
  Result<std::optional<std::string>> all =
      admin_->QueryValue("SELECT COUNT(*) FROM " + QuoteIdentifier(o_.events.table));
  if (!all.ok()) return all.status().With("counting the events up to the head under the cut-over's hold");
  const std::optional<uint64_t> n = *all ? std::optional<uint64_t>(std::stoull(**all)) : std::nullopt;
  if (!n || *n <= sum_.events_read) return Status::Ok();
  return Status::InvalidInput(fmt::format(
      "{} event(s) of {} up to {} were not read: inserted below ids already read, further below than --settle ({} s) "
      "(a client whose clock runs behind, or a transaction open longer); nothing was swapped in. Rebuild with a "
      "--settle longer than your clocks' largest difference plus your longest transaction",
      *n - sum_.events_read, o_.events.table, IdShown(o_.events.id_form, sum_.head_id), o_.settle_seconds));
}

Status Build::StoppedBeforeSwap() {
  if (!stop_.load()) return Status::Ok();
  sum_.interrupted = true;
  return Status::Error(Status::Code::kCancelled, "stopped before the swap");
}

Status Build::EnsureAdmin() { return rw::EnsureAdmin(*admin_, lock_tables_, plan_.lock_prefix); }

Status Build::SwapIn() {
  std::vector<table_admin::Swapped> tables;
  for (size_t i = 0; i < live_tables_.size(); ++i) {
    if (continues(i)) continue;  // written in place
    const live_shape::Kind kind = shapes_[i].kind;
    tables.push_back({live_tables_[i], kind != live_shape::Kind::kApplications, kind == live_shape::Kind::kReshaped});
  }
  return table_admin::SwapIn(*admin_, tables, plan_.table_suffix);
}

void Build::BecomeLive(CheckpointStatus status) {
  const double elapsed = seconds();
  const double rate = elapsed > 0 ? static_cast<double>(sum_.events_read) / elapsed : 0;
  for (size_t i = 0; i < runners_.size(); ++i) {
    if (continues(i)) {  // its checkpoint is the live table's already
      (void)checkpoint_store::SetStatus(*admin_, names_[i], live_tables_[i], status, 0);
      continue;
    }
    (void)checkpoint_store::BecomeLive(*admin_, names_[i], runners_[i]->target_table(),
                                       live_tables_[i], status, elapsed, rate, 0);
    runners_[i]->Retarget(live_tables_[i]);
    sum_.projectors[i].table = live_tables_[i];
  }
}

void Build::SetStatus(CheckpointStatus status, uint64_t gaps_given_up) {
  for (size_t i = 0; i < runners_.size(); ++i) {
    (void)checkpoint_store::SetStatus(*admin_, names_[i], runners_[i]->target_table(), status,
                                      gaps_given_up);
  }
}

void Build::SetFollowSource(const std::string& source) {
  for (size_t i = 0; i < runners_.size(); ++i) {
    (void)checkpoint_store::SetFollowSource(*admin_, names_[i], runners_[i]->target_table(), source);
  }
}

void Build::AddEdited(uint64_t edited) {
  for (size_t i = 0; i < runners_.size(); ++i) {
    (void)checkpoint_store::AddEdited(*admin_, names_[i], runners_[i]->target_table(), edited);
  }
}

void Build::DropScratch() {
  if (!locked_) return;
  Connection& c = *admin_;
  if (!rw::EnsureAdmin(c, lock_tables_, plan_.lock_prefix).ok()) return;
  for (size_t i = 0; i < live_tables_.size(); ++i) {
    const std::string target = live_tables_[i] + plan_.table_suffix;
    if (!table_admin::DropOwned(c, target).ok()) continue;
    (void)checkpoint_store::Delete(c, names_[i], target);
  }
}

}  // namespace rw
