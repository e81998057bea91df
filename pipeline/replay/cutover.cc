#include "pipeline/replay/finishers.h"

#include <fmt/core.h>

#include <chrono>
#include <limits>
#include <memory>

#include "base/fault.h"
#include "stages/control/sleep.h"
#include "stages/db/retry.h"
#include "stages/db/table_admin.h"
#include "stages/control/console.h"

namespace rw {

namespace {

double Since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

// The application kept appending while the rebuild ran: read what it appended, and the
// ids that committed late, until one pass finds less than a batch (what is left then is
// applied under the cut-over's lock, so the lock is held briefly).
Status CatchUp(Build& b) {
  FaultPoint("before-catch-up");
  ReplaySummary& sum = b.summary();
  EventSource& source = b.source();
  for (int round = 0; round < 20 && !b.stopping(); ++round) {
    if (Status s = b.EnsureAdmin(); !s.ok()) return s;
    Result<Head> head = source.ReadHead();
    if (!head.ok()) return head.status();
    // The first round re-reads the holes still watched (late commits found before the
    // lock, not under it); later rounds only what the new head proves final.
    const GapCounts gaps = source.gap_counts();
    if (head->id <= source.head() && (round > 0 || gaps.watched == 0) && !gaps.due) return Status::Ok();
    const uint64_t before = sum.events_read;
    const std::optional<GapCheck> recheck =
        round == 0 ? std::optional<GapCheck>(GapCheck::kRecheck) : std::nullopt;
    if (Status s = b.ReadOn(*head, Proof::kOpenTransactions, recheck); !s.ok()) return s;
    sum.catch_up_events += sum.events_read - before;
    sum.head_id = source.head();
    if (sum.events_read - before < b.options().batch_size) return Status::Ok();
  }
  return Status::Ok();
}

// One try of the cut-over: hold writers off, apply the last events, swap, release.
// kRetryable when a lock wait timed out (nothing swapped; try again).
Status CutOverOnce(Build& b, Connection& lock) {
  if (Status s = b.StoppedBeforeSwap(); !s.ok()) return s;
  const std::string& events_table = b.options().events.table;
  ReplaySummary& sum = b.summary();
  ++sum.cutover_attempts;
  // A lock connection lost in an earlier attempt (killed under the hold) is opened again.
  if (!lock.Execute("DO 0").ok()) {
    if (Status s = lock.Reconnect(); !s.ok()) return s.With("opening the cut-over's lock connection again");
  }
  // The application's own tables (and those handed back to its projector): nothing may have
  // written them during the rebuild (hand_over.h); checked before the hold, not under it.
  if (Status s = hand_over::CheckUntouched(b.admin(), b.watched_tables()); !s.ok()) return s;
  Status held = table_admin::HoldWriters(lock, events_table);
  if (held.code() == Status::Code::kRetryable) {
    return Status::Error(
        Status::Code::kRetryable,
        fmt::format("open transactions on the event table {} kept the lock waiting", events_table));
  }
  if (!held.ok()) {
    return held.With(
        fmt::format("holding inserts into {} off for the cut-over (needs the LOCK "
                    "TABLES grant)",
                    events_table));
  }
  const auto held_since = std::chrono::steady_clock::now();
  const unsigned long holder = lock.thread_id();
  FaultPoint("writers-held");
  // No insert is open now: read to the final head, and settle every gap (only the holes
  // still watched are read again: those near the head).
  Result<Head> head = b.source().ReadHead();
  Status s = head.ok() ? Status::Ok() : head.status();
  if (s.ok()) {
    const uint64_t before = sum.events_read;
    uint64_t watched = 0;
    s = b.ReadOn(*head, Proof::kNone, GapCheck::kFinal, &watched);
    sum.holes_read_under_lock += watched;
    sum.catch_up_events += sum.events_read - before;
    sum.head_id = b.source().head();
  }
  if (s.ok()) s = b.CheckBudget();
  if (s.ok()) s = b.CheckNothingMissed();
  if (s.ok()) s = b.CheckNothingBelow();
  if (s.ok()) {
    FaultPoint("before-swap");
    s = b.EnsureAdmin();
  }
  // The position goes back in a transaction committed once the swap is done.
  std::unique_ptr<Connection> handing;
  std::vector<uint64_t> changed;
  if (s.ok() && !b.hand_overs().empty()) {
    Result<std::unique_ptr<Connection>> h = hand_over::Begin(b.options().connection, b.hand_overs(),
                                                                IdSql(b.options().events.id_form, sum.head_id), &changed);
    if (h.ok()) handing = std::move(*h);
    else s = h.status();
  }
  // The swap only while the hold still holds: a hold lost since it was taken (its connection
  // killed) let inserts commit below the head. The hand-over's transaction rolls back with it.
  bool lost_hold = false;
  if (s.ok()) {
    s = table_admin::CheckHold(lock, holder, events_table);
    lost_hold = !s.ok();
  }
  if (s.ok()) s = b.SwapIn();
  if (handing) {
    s = hand_over::Finish(*handing, b.hand_overs(), IdSql(b.options().events.id_form, sum.head_id), s);
    for (size_t i = 0; s.ok() && i < changed.size(); ++i) {
      const hand_over::Step& step = b.hand_overs()[i];
      fmt::print(stderr, "rewind: {} handed back at event {}: {} ({} row(s) changed{})\n", step.read_model,
                 IdShown(b.options().events.id_form, sum.head_id), step.sql, changed[i],
                 changed[i] == 0 ? ": none; is the application's bookmark row there, or was it at this id already?" : "");
    }
  }
  (void)table_admin::ReleaseWriters(lock);
  sum.writers_held_seconds += Since(held_since);
  if (s.code() == Status::Code::kRetryable && !lost_hold) {
    return Status::Error(Status::Code::kRetryable,
                         "open transactions on the live tables kept the swap waiting");
  }
  return s;
}

// Cuts over, retrying a lock wait that timed out until --cutover-timeout; then the build's
// checkpoints become the live tables'.
Status CutOver(Build& b) {
  const RunSpec& o = b.options();
  ReplaySummary& sum = b.summary();
  Result<std::unique_ptr<Connection>> lock = Connection::Open(o.connection);
  if (!lock.ok()) return lock.status();
  // Every wait for a lock is bounded (about a second); a wait that timed out is retried
  // with backoff until the cut-over's own deadline.
  RetryPolicy policy;
  policy.max_retries = std::numeric_limits<int>::max();
  policy.deadline = std::chrono::steady_clock::now() +
                    std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                        std::chrono::duration<double>(o.cutover_timeout_seconds));
  policy.max_delay = std::chrono::milliseconds(2000);
  RetryHooks hooks;
  hooks.before_retry = [](const Status& why, int retry) {
    PrintLine(fmt::format("cut-over: {}; trying again (attempt {})", why.message(), retry + 1));
  };
  Status s = Retry(
      policy, nullptr, [&] { return CutOverOnce(b, **lock); }, hooks);
  if (s.code() == Status::Code::kRetryable) {
    sum.cutover_gave_up = true;
    return Status::Error(Status::Code::kBusy, fmt::format("the cut-over gave up after {:.0f} s: {}",
                                                          o.cutover_timeout_seconds, s.message()));
  }
  if (!s.ok()) return s;
  sum.swapped = true;
  b.BecomeLive(o.follow ? CheckpointStatus::kFollowing : CheckpointStatus::kLive);
  return Status::Ok();
}

}  // namespace

Status FinishSwap(Build& b) {
  // What was appended since the head, and the final read: from the primary.
  Status s = b.ReadFromPrimary();
  if (s.ok()) s = CatchUp(b);
  if (s.ok()) s = b.CheckNotEmpty();
  if (s.ok()) s = b.CheckBudget();
  if (s.ok()) s = b.CheckNothingMissed();
  if (s.ok()) s = b.StoppedBeforeSwap();
  // A follower started again whose read models all continue their live tables swaps nothing:
  // it follows on (nothing is held; the watched holes are settled as following settles them).
  if (s.ok() && b.all_continue()) {
    b.BecomeLive(CheckpointStatus::kFollowing);
  } else if (s.ok()) {
    s = CutOver(b);
  }
  if (s.ok() && b.options().follow) s = Follow(b);
  return s;
}

}  // namespace rw
