#include "stages/flow/gap_watch.h"

#include <fmt/core.h>

#include <algorithm>
#include <iterator>

#include "stages/control/console.h"

namespace rw {

GapWatch::GapWatch(const GapWatchOptions& options, bool proves)
    : options_(options), settle_ids_(static_cast<EventId>(options.settle_ids)), proves_(proves) {
  if (!options_.by_time && settle_ids_ == 0) {
    settle_ids_ = options_.ids_per_second > 0
                      ? static_cast<EventId>(options_.settle_seconds * 1000) * (options_.ids_per_second / 1000)
                      : static_cast<EventId>(kDefaultSettleIds);
  }
}

bool GapWatch::FinalAgainst(const IdRange& hole, const std::optional<int64_t>& time, const Head& known,
                            EventId final_below) const {
  if (proves_) {
    if (final_below != kBeforeFirstId && hole.hi <= final_below) return true;
    return proof_stalled_ && FallbackFinal(hole, time, known);
  }
  return FallbackFinal(hole, time, known);
}

bool GapWatch::FallbackFinal(const IdRange& hole, const std::optional<int64_t>& time, const Head& known) const {
  if (commit_log_) return false;
  if (!options_.by_time) return FarBelow(hole, known, settle_ids_);
  return AgedBy(time, known) && FarBelow(hole, known, kDefaultSettleIds);
}

bool GapWatch::AgedBy(const std::optional<int64_t>& time, const Head& known) const {
  if (!time || !known.time) return false;
  // The head's time, never later than the server's clock when it was read: a writer whose
  // clock runs ahead cannot age the holes below it.
  const int64_t head_time = known.server_time ? std::min(*known.time, *known.server_time) : *known.time;
  return static_cast<double>(head_time - *time) >= options_.settle_seconds;
}

bool GapWatch::FarBelow(const IdRange& hole, const Head& known, EventId ids) {
  return known.id != kBeforeFirstId && known.id >= ids && hole.hi <= known.id - ids;
}

void GapWatch::Watch(IdRange range, std::optional<int64_t> time,
                     std::optional<std::chrono::steady_clock::time_point> since) {
  watched_.emplace(range.lo, Hole{range.hi, time, since.value_or(options_.now())});
  if (time) by_time_.emplace(*time, range.lo);
  peak_watched_ = std::max<uint64_t>(peak_watched_, watched_.size() + due_.size());
  if (watched_.size() <= kMaxWatched) return;
  // Too many open at once: the lowest is given up (counted), so memory and the checkpoint
  // stay bounded.
  if (!warned_cap_) {
    PrintLine(fmt::format("more than {} holes in the ids are open at once; giving up the lowest ones",
                          kMaxWatched));
    warned_cap_ = true;
  }
  GiveUp(watched_.begin(), settled_);
}

void GapWatch::Unwatch(std::map<EventId, Hole>::iterator it) {
  if (it->second.time) by_time_.erase({*it->second.time, it->first});
  watched_.erase(it);
}

void GapWatch::GiveUp(std::map<EventId, Hole>::iterator it, std::vector<IdRange>& settled) {
  const IdRange hole{it->first, it->second.hi};
  settled.push_back(hole);
  RememberFinal(hole);
  // Between ids the clients make (ULIDs, UUIDs) a space is no missing id: watched to its end,
  // nothing was given up.
  if (options_.ids_per_second == 0) ++gaps_given_up_;
  Unwatch(it);
}

void GapWatch::MarkDue() {
  // Proven: every watched hole up to final_below_ (holes do not overlap: his rise with los).
  while (proves_ && !watched_.empty() && watched_.begin()->second.hi <= final_below_) {
    due_.Add({watched_.begin()->first, watched_.begin()->second.hi});
    Unwatch(watched_.begin());
  }
  if (proves_ && !proof_stalled_) return;
  if (options_.by_time) {
    const auto now = options_.now();
    const auto window = std::chrono::duration<double>(options_.settle_seconds);
    // Oldest by time first; the walk stops at the first hole too recent by time (the rest
    // are newer), and passes over one the ids' part of the rule still holds back.
    for (auto t = by_time_.begin(); t != by_time_.end();) {
      const auto [time, lo] = *t++;
      auto it = watched_.find(lo);
      const IdRange hole{lo, it->second.hi};
      if (!AgedBy(time, known_)) break;
      // Far enough below the head, or watched the settle window by this process's own clock.
      if (FarBelow(hole, known_, kDefaultSettleIds) || now - it->second.since >= window) {
        due_.Add(hole);
        Unwatch(it);  // erases (time, lo), behind t
      }
    }
    return;
  }
  while (!watched_.empty() && FallbackFinal({watched_.begin()->first, watched_.begin()->second.hi}, {}, known_)) {
    due_.Add({watched_.begin()->first, watched_.begin()->second.hi});
    Unwatch(watched_.begin());
  }
}

bool GapWatch::Watching(EventId id) const {
  if (due_.Contains(id)) return true;
  auto it = watched_.upper_bound(id);
  return it != watched_.begin() && std::prev(it)->second.hi >= id;
}

void GapWatch::ExtendHead(const Head& head) {
  if (head.id > known_.id) known_ = head;
  Sample(head);
  MarkDue();
}

void GapWatch::Sample(const Head& head) {
  if (!proves_ || !head.server_us || head.id == kBeforeFirstId || head.id <= final_below_) return;
  if (!samples_.empty() && head.id <= samples_.back().second) return;  // the older sample proves sooner
  if (samples_.size() >= kMaxSamples) {
    samples_.back() = {*head.server_us, head.id};  // still true: that id was visible by then
  } else {
    samples_.emplace_back(*head.server_us, head.id);
  }
}

void GapWatch::Proven(int64_t since, std::optional<int64_t> oldest_writer_us) {
  const int64_t oldest = oldest_writer_us.value_or(since);
  // A sample (t, H): every id <= H was taken before t, give or take the instant between a
  // statement's NOW() and its snapshot, by a transaction begun by then. The view was built
  // after `since` and lists every transaction open then; if every writer it lists began
  // after t, the one that took a hole's id below H has ended.
  const int64_t bound = std::min(since, oldest) - kProofMarginUs;
  while (!samples_.empty() && samples_.front().first < bound) {
    final_below_ = std::max(final_below_, samples_.front().second);
    samples_.pop_front();
  }
  // A transaction open longer than the settle window holds the proof back: judge by the
  // fallback rule meanwhile (said once), as the window promised; following a commit log, the
  // holes wait for it instead (FollowCommitLog).
  const bool stalled = !samples_.empty() && oldest_writer_us &&
                       static_cast<double>(since - oldest) >= options_.settle_seconds * 1e6;
  if (stalled && !warned_stall_) {
    PrintLine(fmt::format("a transaction open for {} s holds back the proof that holes are final; {}",
                          (since - oldest) / 1'000'000,
                          commit_log_ ? "its holes stay watched until it ends (the binlog will say if it commits)"
                                      : "judging them by the event table's times and ids meanwhile (see "
                                        "docs/replay.md, late commits)"));
    warned_stall_ = true;
  }
  proof_stalled_ = stalled;
  MarkDue();
}

void GapWatch::ResetProof(bool proves) {
  proves_ = proves;
  samples_.clear();
  final_below_ = kBeforeFirstId;
  proof_stalled_ = false;
}

void GapWatch::JudgePage(std::vector<IdRange>& gaps, const PageHoles& page, EventId hi, EventId last_id) {
  // Holes that trailed earlier pages: this page's first event is the one above them.
  if (page.any && !trailing_.empty()) {
    for (const auto& [hole, known] : trailing_) {
      auto it = watched_.find(hole.lo);
      if (it == watched_.end() || it->second.hi != hole.hi) continue;  // settled meanwhile
      if (!proves_ && FallbackFinal(hole, page.first_time, known)) {  // final when it was read
        settled_.push_back(hole);
        Unwatch(it);
      } else if (page.first_time) {
        it->second.time = page.first_time;
        by_time_.emplace(*page.first_time, hole.lo);
      }
    }
    trailing_.clear();
  }
  size_t kept = 0;
  for (size_t i = 0; i < gaps.size(); ++i) {
    const IdRange hole = gaps[i];
    std::optional<int64_t> time = page.gap_times[i];
    // Never earlier than the event below the hole: events from a slow clock above it
    // cannot age it.
    if (time && page.below_times[i]) time = std::max(*time, *page.below_times[i]);
    const bool trailing = i + 1 == gaps.size() && hole.hi == hi && last_id < hi;
    if (FinalAgainst(hole, time, page.known, page.final_below)) continue;  // final at once
    if (trailing && options_.by_time && !proves_) trailing_.push_back({hole, page.known});
    Watch(hole, time);
    gaps[kept++] = hole;
  }
  gaps.resize(kept);
}

std::vector<IdRange> GapWatch::ToRead(std::optional<GapCheck> kind) const {
  std::vector<IdRange> ranges = due_.ranges();
  if (kind) {
    for (const auto& [lo, hole] : watched_) ranges.push_back({lo, hole.hi});
  }
  return ranges;
}

void GapWatch::Found(EventId f) {
  auto it = watched_.upper_bound(f);
  if (it == watched_.begin() || std::prev(it)->second.hi < f) return;  // a due hole's
  it = std::prev(it);
  const Hole hole = it->second;
  const EventId lo = it->first;
  Unwatch(it);
  if (lo < f) Watch({lo, f - 1}, hole.time, hole.since);
  if (f < hole.hi) Watch({f + 1, hole.hi}, hole.time, hole.since);
}

std::vector<IdRange> GapWatch::Settle(std::optional<GapCheck> kind, const std::vector<EventId>& found) {
  late_events_ += found.size();
  // What is settled now: the ids found; the due holes (final: read once more after the
  // head proved them so); for a final check every hole; following, the holes watched the
  // settle window by the wall clock (given up).
  std::vector<IdRange> settled = TakeSettled();
  for (EventId f : found) {
    settled.push_back({f, f});
    Found(f);
  }
  for (const IdRange& r : due_.ranges()) {
    settled.push_back(r);  // found ids inside come twice: harmless
    if (kind != GapCheck::kFinal) RememberFinal(r);
  }
  due_ = GapSet();
  if (kind == GapCheck::kFinal) {
    // Under the cut-over's lock no insert is open: every hole below the head is final for
    // good, those judged before too. Reconciliation covers what is judged after it.
    final_holes_ = GapSet();
    final_order_.clear();
    for (const auto& [lo, hole] : watched_) settled.push_back({lo, hole.hi});
    watched_.clear();
    by_time_.clear();
    trailing_.clear();
  } else if (kind == GapCheck::kFollow && !commit_log_) {
    const auto now = options_.now();
    const auto window = std::chrono::duration<double>(options_.settle_seconds);
    for (auto it = watched_.begin(); it != watched_.end();) {
      auto next = std::next(it);
      if (now - it->second.since >= window) GiveUp(it, settled);
      it = next;
    }
  }
  for (EventId f : found) final_holes_.Subtract({f, f});  // in a due hole: not final
  return settled;
}

void GapWatch::RememberFinal(IdRange range) {
  if (!options_.reconcile) return;
  final_holes_.Add(range);
  final_order_.emplace_back(options_.now(), range);
  ForgetFinals(std::chrono::steady_clock::time_point::min());
}

void GapWatch::ForgetFinals(std::chrono::steady_clock::time_point older_than) {
  while (!final_order_.empty() && (final_order_.size() > kMaxReconciled || final_order_.front().first < older_than)) {
    final_holes_.Subtract(final_order_.front().second);
    final_order_.pop_front();
  }
}

std::vector<IdRange> GapWatch::ToReconcile() {
  ForgetFinals(options_.now() - std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                    std::chrono::duration<double>(kReconcileHorizonSeconds)));
  return final_holes_.ranges();
}

std::vector<IdRange> GapWatch::Reconciled(const std::vector<EventId>& found) {
  std::vector<IdRange> settled;
  for (EventId f : found) {
    final_holes_.Subtract({f, f});
    settled.push_back({f, f});
  }
  reconciled_events_ += found.size();
  return settled;
}

GapCounts GapWatch::counts() const {
  return GapCounts{.watched = watched_.size() + due_.size(),
                   .due = !due_.empty(),
                   .late_events = late_events_,
                   .given_up = gaps_given_up_,
                   .peak_watched = peak_watched_,
                   .reconciled_events = reconciled_events_,
                   .reconciled_holes = final_holes_.size(),
                   .reconcile_seconds = 0,
                   .proves_with_server = proves_};
}

}  // namespace rw
