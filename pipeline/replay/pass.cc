// The second phase of a build (replay_build.h): the passes of the graph over what the reader
// queued, every read model committing after each; reading on, reconciling, and the move of
// the reader to the primary before the cut-over.
#include "pipeline/replay/replay_build.h"

#include <fmt/core.h>

#include <algorithm>
#include <thread>

#include "base/fault.h"
#include "stages/control/console.h"

namespace rw {
namespace {

// Flushes every runner in parallel (each on its own connection); the first error.
Status FlushAll(std::vector<std::unique_ptr<ProjectorRunner>>& runners) {
  std::vector<Status> results(runners.size());
  std::vector<std::thread> threads;
  for (size_t i = 0; i < runners.size(); ++i) {
    threads.emplace_back([&, i] { results[i] = runners[i]->Flush(); });
  }
  for (auto& t : threads) t.join();
  for (const Status& s : results) {
    if (!s.ok()) return s;
  }
  return Status::Ok();
}

}  // namespace

Status Build::ReadFromPrimary() {
  if (!reads_replica_) return Status::Ok();
  if (Status s = source_->MoveToPrimary(); !s.ok()) {
    return s.With("moving the reader to the primary");
  }
  reads_replica_ = false;
  return Status::Ok();
}

// The one place the graph runs: over what the reader has queued (a gap check, then ids up
// to its head).
Status Build::RunTheGraph(Progress& progress, const std::atomic<bool>& stop) {
  GraphResult graph = RunGraph(*source_, *decoder_, branches_, progress,
                               GraphOptions{.max_in_flight = o_.max_in_flight}, stop);
  sum_.peak_in_flight = std::max(sum_.peak_in_flight, graph.peak_in_flight);
  return graph.status;
}

Status Build::Pass(Progress& progress, const std::atomic<bool>& stop) {
  Status s = RunTheGraph(progress, stop);
  if (s.ok()) s = FlushAll(runners_);
  Collect();
  return s;
}

Status Build::QuietPass() {
  Progress quiet(ProgressMode::kQuiet, 0, 0, names_);
  const std::atomic<bool> run_to_end{false};  // small ranges run to their end
  return Pass(quiet, run_to_end);
}

Status Build::ReadOn(const Head& head, Proof proof, std::optional<GapCheck> check,
                     uint64_t* rechecked) {
  if (head.id >= source_->head()) source_->ExtendHead(head);
  if (proof == Proof::kOpenTransactions) {
    if (Status s = source_->ProveByOpenTransactions(); !s.ok()) return s;
  }
  uint64_t queued = 0;
  const size_t watched = source_->gap_counts().watched;
  if (check && (*check == GapCheck::kFinal || watched > 0)) {
    source_->QueueGapCheck(*check);
    queued = watched;
  }
  if (rechecked != nullptr) *rechecked = queued;
  return QuietPass();
}

Status Build::Reconcile() {
  source_->QueueReconcile();
  return QuietPass();
}

void Build::Collect() {
  sum_.failures = prior_failures_ + recorder_->failures();
  for (const auto& r : runners_) sum_.failures += r->stats().failures_recorded;
  const GapCounts gaps = source_->gap_counts();
  sum_.late_events = gaps.late_events;
  sum_.gaps_given_up = gaps.given_up;
  sum_.reconciled_events = gaps.reconciled_events;
  sum_.reconcile_seconds = gaps.reconcile_seconds;
  sum_.holes_watched_peak = gaps.peak_watched;
  if (memory_) {
    sum_.memory_budget = memory_->budget();
    sum_.memory_peak = memory_->peak();
    sum_.memory_flushes = memory_->flushes();
  }
  sum_.finality = gaps.proves_with_server ? "server" : o_.events.id_form.integer() ? "fallback" : "id-times";
  for (size_t i = 0; i < runners_.size(); ++i) {
    const RunnerStats& st = runners_[i]->stats();
    ProjectorSummary& ps = sum_.projectors[i];
    ps.events_applied = st.events_applied;
    ps.rows_written = st.rows_written;
    ps.flushes = st.flushes;
    ps.budget_flushes = st.budget_flushes;
    ps.peak_state_bytes = st.peak_state_bytes;
    ps.peak_kept_bytes = st.peak_kept_bytes;
    ps.retries = st.retries;
    ps.late_applied = st.late_applied;
    ps.reconciled_applied = st.reconciled_applied;
    ps.missed_events = st.missed_events;
    ps.failed_events = prior_failed_[i] + st.failed_events;
    ps.apply_seconds = st.apply_seconds;
    ps.flush_seconds = st.flush_seconds;
  }
}

Status Build::Rebuild() {
  int64_t progress_start = ProgressPosition(start_after_);
  if (start_after_ == kBeforeFirstId) {
    Result<std::optional<EventId>> first = ReadFirstId(*admin_, o_.events);
    if (first.ok() && *first) progress_start = ProgressPosition(**first - 1);
  }
  Progress progress(o_.progress, progress_start, ProgressPosition(sum_.head_id), names_);
  progress_ = &progress;
  SetNote("");
  progress.Start();
  Status s = RunTheGraph(progress, stop_);
  // Commit what was applied: at the end, and also when stopped by a signal, so that a
  // resume continues from here.
  // A build that never cuts over (--into, verify's scratch build) has no final check to
  // settle the holes near the head: what order-dependent read models hold above them is
  // applied now, in id order, as the build stands.
  if (s.ok() && !plan_.swap()) {
    for (auto& r : runners_) r->ReleaseAllHeld();
  }
  if (s.ok()) {
    progress.SetPhase(stop_.load() ? "stopping: committing what was applied"
                                   : "all events read; writing the read models");
    s = FlushAll(runners_);
    if (s.ok()) progress.SetPhase(stop_.load() ? "committed" : "read models written");
  }
  progress.Stop();
  progress_ = nullptr;
  Collect();
  return s;
}

// The progress line's note: the rate cap, and whether reading is throttled.
void Build::SetNote(const std::string& throttled) {
  if (progress_ == nullptr) return;
  std::string note = throttled;
  if (o_.max_events_per_second > 0) {
    note = fmt::format("cap {} events/s{}{}", WithThousands(o_.max_events_per_second),
                       note.empty() ? "" : "; ", note);
  }
  progress_->SetNote(note);
}


}  // namespace rw
