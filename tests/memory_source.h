// MemorySource: an event source held in memory (stages/flow/event_source.h), the second
// implementer beside the Reader, so that the graph, the runners and the gap handling run
// without a server.
//
// The test plays the application: Append() commits an event at once; Reserve() takes an
// id in a transaction still open (invisible, and the hole it leaves cannot be proven
// final); Commit() and Rollback() end that transaction. Batches are pages of at most
// batch_size committed events in (position, head], with the ids missing between them as
// the batch's gaps (the ids below the first event are none: reading starts at the first
// id, wherever it is); every hole is watched. The rules of the Reader, simplified:
//  - ProveByOpenTransactions() makes due every watched hole that holds no reserved id
//    (the server's open transactions, here known exactly); a due hole is read once more
//    by the next Next() and settled.
//  - A gap check reads every watched hole again: found ids are late events; kFinal
//    settles every hole; kFollow gives up every hole still watched (a settle window of
//    zero).
//  - Holes settled as final (due, or given up) are remembered; QueueReconcile() reads
//    them again and hands on what was found in a reconciled batch.
//
// Thread safety: one thread at a time, as every EventSource.
#pragma once

#include <simdjson.h>

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "base/gaps.h"
#include "stages/flow/event_source.h"

namespace rw::testing {

class MemorySource final : public EventSource {
 public:
  // Reads ids in (start_after, head], batch_size committed events per batch.
  explicit MemorySource(size_t batch_size, EventId start_after = kBeforeFirstId)
      : batch_size_(batch_size), position_(start_after) {}

  void Append(EventId id, std::string payload) { committed_[id] = std::move(payload); }
  void Reserve(EventId id) { open_.insert(id); }
  void Commit(EventId id, std::string payload) {
    open_.erase(id);
    Append(id, std::move(payload));
  }
  void Rollback(EventId id) { open_.erase(id); }

  Result<std::unique_ptr<Batch>> Next() override {
    if (reconcile_queued_) {
      reconcile_queued_ = false;
      if (!final_.empty()) return Reconciled();
    }
    if (check_ || !due_.empty()) {
      const std::optional<GapCheck> kind = check_;
      check_.reset();
      if (!watched_.empty() || !due_.empty()) return ReadGaps(kind);
    }
    if (position_ < head_) return Page();
    return std::unique_ptr<Batch>();
  }
  uint64_t next_sequence() const override { return sequence_; }
  EventId position() const override { return position_; }
  EventId head() const override { return head_; }
  Result<Head> ReadHead() override {
    ++heads_read_;
    return Head{committed_.empty() ? kBeforeFirstId : committed_.rbegin()->first, {}, {}, {}};
  }
  void ExtendHead(const Head& head) override { head_ = std::max(head_, head.id); }
  Status ProveByOpenTransactions() override {
    for (const IdRange& hole : watched_.ranges()) {
      auto open = open_.lower_bound(hole.lo);
      if (open != open_.end() && *open <= hole.hi) continue;
      watched_.Subtract(hole);
      due_.Add(hole);
    }
    return Status::Ok();
  }
  void QueueGapCheck(GapCheck kind) override { check_ = kind; }
  void QueueReconcile() override { reconcile_queued_ = true; }
  GapCounts gap_counts() const override {
    return GapCounts{.watched = watched_.size() + due_.size(),
                     .due = !due_.empty(),
                     .late_events = late_events_,
                     .given_up = given_up_,
                     .peak_watched = peak_watched_,
                     .reconciled_events = reconciled_events_,
                     .reconciled_holes = final_.size(),
                     .reconcile_seconds = 0,
                     .proves_with_server = true};
  }
  Status MoveTo(std::unique_ptr<Connection> /*connection*/) override { return Status::Ok(); }

  int heads_read() const { return heads_read_; }

 private:
  std::unique_ptr<Batch> NewBatch() {
    auto batch = std::make_unique<Batch>();
    batch->sequence = sequence_++;
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
    return found;
  }

  Result<std::unique_ptr<Batch>> Page() {
    std::unique_ptr<Batch> batch = NewBatch();
    batch->after_id = position_;
    EventId last = position_;
    for (auto it = committed_.upper_bound(position_);
         it != committed_.end() && it->first <= head_ && batch->raw.size() < batch_size_; ++it) {
      if (last != kBeforeFirstId && it->first > last + 1) batch->gaps.push_back({last + 1, it->first - 1});
      Add(*batch, it->first, it->second);
      last = it->first;
    }
    if (batch->raw.size() < batch_size_) {  // the page covers its whole range
      if (last != kBeforeFirstId && last < head_) batch->gaps.push_back({last + 1, head_});
      last = head_;
    }
    for (const IdRange& hole : batch->gaps) watched_.Add(hole);
    peak_watched_ = std::max<uint64_t>(peak_watched_, watched_.size() + due_.size());
    batch->last_id = position_ = last;
    Pad(*batch);
    return batch;
  }

  Result<std::unique_ptr<Batch>> ReadGaps(std::optional<GapCheck> kind) {
    std::unique_ptr<Batch> batch = NewBatch();
    batch->late = true;
    batch->after_id = batch->last_id = kBeforeFirstId;
    std::vector<IdRange> ranges = due_.ranges();
    if (kind) {
      for (const IdRange& r : watched_.ranges()) ranges.push_back(r);
    }
    const std::vector<EventId> found = ReadIds(ranges, *batch);
    late_events_ += found.size();
    std::vector<IdRange>& settled = batch->settled;
    for (EventId id : found) {
      settled.push_back({id, id});
      watched_.Subtract({id, id});
      due_.Subtract({id, id});
    }
    for (const IdRange& r : due_.ranges()) {
      settled.push_back(r);
      final_.Add(r);
    }
    due_ = GapSet();
    if (kind == GapCheck::kFinal || kind == GapCheck::kFollow) {
      for (const IdRange& r : watched_.ranges()) {
        settled.push_back(r);
        if (kind == GapCheck::kFollow) {
          ++given_up_;
          final_.Add(r);
        }
      }
      watched_ = GapSet();
    }
    if (kind == GapCheck::kFinal) final_ = GapSet();  // no insert is open: final for good
    Pad(*batch);
    return batch;
  }

  Result<std::unique_ptr<Batch>> Reconciled() {
    std::unique_ptr<Batch> batch = NewBatch();
    batch->late = batch->reconciled = true;
    batch->after_id = batch->last_id = kBeforeFirstId;
    for (EventId id : ReadIds(final_.ranges(), *batch)) {
      final_.Subtract({id, id});
      batch->settled.push_back({id, id});
      ++reconciled_events_;
    }
    Pad(*batch);
    return batch;
  }

  const size_t batch_size_;
  std::map<EventId, std::string> committed_;  // id -> payload
  std::set<EventId> open_;                    // ids taken by transactions still open
  EventId position_;
  EventId head_ = kBeforeFirstId;
  uint64_t sequence_ = 0;
  GapSet watched_, due_, final_;
  std::optional<GapCheck> check_;
  bool reconcile_queued_ = false;
  uint64_t late_events_ = 0, given_up_ = 0, peak_watched_ = 0, reconciled_events_ = 0;
  int heads_read_ = 0;
};

}  // namespace rw::testing
