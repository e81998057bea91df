// MemorySource: an event source held in memory (stages/flow/event_source.h), the second
// implementer beside the Reader, so that the graph, the runners and the gap handling run
// without a server. Its holes are judged by the Reader's own GapWatch
// (stages/flow/gap_watch.h), proven final the way the server proves them.
//
// The test plays the application and the server: Append() commits an event at once;
// Reserve() takes an id in a transaction still open (invisible until Commit(), gone with
// Rollback()). A clock of its own stands for the server's: it moves 100 ms with every
// head read, proof and reservation, and Elapse() moves it further. Batches are pages of at
// most batch_size committed events in (position, head], with the ids missing between them
// as the batch's gaps (the ids below the first event are none: reading starts at the first
// id, wherever it is). A proof makes final every id below a head read before the oldest
// open transaction began, as INNODB_TRX does for the Reader; a gap check reads the watched
// holes again; reconciliation reads again the holes judged final.
//
// Thread safety: one thread at a time, as every EventSource.
#pragma once

#include <simdjson.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "stages/flow/event_source.h"
#include "stages/flow/gap_watch.h"

namespace rw::testing {

class MemorySource final : public EventSource {
 public:
  // Reads ids in (start_after, head], batch_size committed events per batch; a hole watched
  // settle_seconds (by its clock) is given up when following.
  explicit MemorySource(size_t batch_size, double settle_seconds = 60)
      : batch_size_(batch_size),
        gaps_(GapWatchOptions{.settle_seconds = settle_seconds,
                              .settle_ids = uint64_t{1} << 62,  // the fallback rule never decides
                              .by_time = false,
                              .reconcile = true,
                              .now = [this] { return std::chrono::steady_clock::time_point(Now()); }},
              /*proves=*/true) {}

  void Append(EventId id, std::string payload) { committed_[id] = std::move(payload); }
  void Reserve(EventId id) { open_[id] = Tick(); }
  void Commit(EventId id, std::string payload) {
    open_.erase(id);
    Append(id, std::move(payload));
  }
  void Rollback(EventId id) { open_.erase(id); }
  void Elapse(double seconds) { clock_us_ += static_cast<int64_t>(seconds * 1e6); }

  Result<std::unique_ptr<Batch>> Next() override {
    if (reconcile_queued_) {
      reconcile_queued_ = false;
      if (gaps_.counts().reconciled_holes > 0) return Reconciled();
    }
    if (check_ || gaps_.has_due()) {
      const std::optional<GapCheck> kind = std::exchange(check_, std::nullopt);
      if (gaps_.watching()) return ReadGaps(kind);
    }
    if (position_ < head_) return Page();
    if (gaps_.has_settled()) return ReadGaps(std::nullopt);
    return std::unique_ptr<Batch>();
  }
  uint64_t next_sequence() const override { return sequence_; }
  EventId position() const override { return position_; }
  EventId head() const override { return head_; }
  Result<Head> ReadHead() override {
    return Head{committed_.empty() ? kBeforeFirstId : committed_.rbegin()->first, {}, {}, Tick()};
  }
  void ExtendHead(const Head& head) override {
    head_ = std::max(head_, head.id);
    gaps_.ExtendHead(head);
  }
  Status ProveByOpenTransactions() override {
    std::optional<int64_t> oldest;
    for (const auto& [id, began] : open_) oldest = std::min(oldest.value_or(began), began);
    gaps_.Proven(Tick(), oldest);
    return Status::Ok();
  }
  void QueueGapCheck(GapCheck kind) override { check_ = kind; }
  void QueueReconcile() override { reconcile_queued_ = true; }
  GapCounts gap_counts() const override { return gaps_.counts(); }
  bool Watching(EventId id) const override { return gaps_.Watching(id); }
  void FollowCommitLog() override { gaps_.FollowCommitLog(); }
  Status MoveToPrimary() override { return Status::Ok(); }

 private:
  std::chrono::microseconds Now() const { return std::chrono::microseconds(clock_us_); }
  int64_t Tick() { return clock_us_ += 100'000; }
  std::unique_ptr<Batch> NewBatch(bool late) {
    auto batch = std::make_unique<Batch>();
    batch->sequence = sequence_++;
    batch->late = late;
    if (late) batch->after_id = batch->last_id = kBeforeFirstId;
    return batch;
  }
  static void Add(Batch& batch, EventId id, const std::string& payload) {
    ++batch.rows_read;
    batch.raw.push_back(RawEvent{id, static_cast<uint32_t>(batch.payloads.size()),
                                 static_cast<uint32_t>(payload.size())});
    batch.payloads += payload;
  }
  static void Pad(Batch& batch) { batch.payloads.append(simdjson::SIMDJSON_PADDING, '\0'); }
  // The committed events in `ranges` into `batch`; their ids.
  std::vector<EventId> ReadIds(const std::vector<IdRange>& ranges, Batch& batch) const {
    std::vector<EventId> found;
    for (const IdRange& r : ranges) {
      for (auto it = committed_.lower_bound(r.lo); it != committed_.end() && it->first <= r.hi; ++it) {
        Add(batch, it->first, it->second);
        found.push_back(it->first);
      }
    }
    std::sort(found.begin(), found.end());
    return found;
  }

  Result<std::unique_ptr<Batch>> Page() {
    std::unique_ptr<Batch> batch = NewBatch(false);
    batch->after_id = position_;
    PageHoles holes = gaps_.StartPage();
    EventId last = position_;
    for (auto it = committed_.upper_bound(position_);
         it != committed_.end() && it->first <= head_ && batch->raw.size() < batch_size_; ++it) {
      if (last != kBeforeFirstId && it->first > last + 1) batch->gaps.push_back({last + 1, it->first - 1});
      Add(*batch, it->first, it->second);
      last = it->first;
      holes.any = true;
    }
    const EventId read_to = last;
    if (batch->raw.size() < batch_size_) {  // the page covers its whole range
      if (last != kBeforeFirstId && last < head_) batch->gaps.push_back({last + 1, head_});
      last = head_;
    }
    holes.gap_times.assign(batch->gaps.size(), std::nullopt);
    holes.below_times.assign(batch->gaps.size(), std::nullopt);
    gaps_.JudgePage(batch->gaps, holes, last, read_to);
    batch->settled = gaps_.TakeSettled();
    batch->last_id = position_ = last;
    Pad(*batch);
    return batch;
  }

  Result<std::unique_ptr<Batch>> ReadGaps(std::optional<GapCheck> kind) {
    std::unique_ptr<Batch> batch = NewBatch(true);
    batch->settled = gaps_.Settle(kind, ReadIds(gaps_.ToRead(kind), *batch));
    Pad(*batch);
    return batch;
  }

  Result<std::unique_ptr<Batch>> Reconciled() {
    std::unique_ptr<Batch> batch = NewBatch(true);
    batch->reconciled = true;
    batch->settled = gaps_.Reconciled(ReadIds(gaps_.ToReconcile(), *batch));
    Pad(*batch);
    return batch;
  }

  const size_t batch_size_;
  std::map<EventId, std::string> committed_;  // id -> payload
  std::map<EventId, int64_t> open_;           // ids taken by transactions still open -> when they began
  int64_t clock_us_ = 0;
  GapWatch gaps_;
  EventId position_ = kBeforeFirstId;
  EventId head_ = kBeforeFirstId;
  uint64_t sequence_ = 0;
  std::optional<GapCheck> check_;
  bool reconcile_queued_ = false;
};

}  // namespace rw::testing
