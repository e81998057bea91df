// Batch: a contiguous range of events, the unit that flows through the pipeline.
//
// The reader fills the raw part (ids and payload bytes); the decoder fills the decoded
// part (records, failures); from then on the batch is immutable and shared as
// std::shared_ptr<const Batch> by every projector. The batch owns every byte its
// EventRecords' values point into, so a record is valid exactly as long as its batch.
//
// Thread safety: filled by one thread at a time (reader, then one decoder task); after
// that only `consumers_left` changes, atomically.
#pragma once

#include <atomic>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "projectors/event_record.h"
#include "base/failure.h"
#include "base/text_table.h"
#include "base/gaps.h"

namespace rw {

// Keeps the buffers of finished batches for the next ones: the payloads, and the decoded
// records and their values. A fresh 11 MB buffer costs a page fault per 4 KB the first time
// it is written; recycled, it costs none (perf/README.md: visits_per_day on 2M events,
// 27-29k page faults before, 15.6k after).
// Thread-safe: batches end on any thread.
class BufferPool {
 public:
  // An empty string, with the capacity of a recycled buffer when there is one.
  std::string Take() { return TakeFrom(free_); }
  std::vector<EventRecord> TakeRecords() { return TakeFrom(free_records_); }
  std::vector<FieldValue> TakeValues() { return TakeFrom(free_values_); }
  void Give(std::string s) { GiveTo(free_, std::move(s)); }
  void GiveRecords(std::vector<EventRecord> v) { GiveTo(free_records_, std::move(v)); }
  void GiveValues(std::vector<FieldValue> v) { GiveTo(free_values_, std::move(v)); }
  // Reading is done for now: the buffers kept and those still in flight are freed (the
  // final flushes reuse the memory), until the next Take().
  void Drain() {
    std::vector<std::string> dropped;
    std::vector<std::vector<EventRecord>> dropped_records;
    std::vector<std::vector<FieldValue>> dropped_values;
    std::lock_guard<std::mutex> lock(mu_);
    keep_ = false;
    dropped.swap(free_);
    dropped_records.swap(free_records_);
    dropped_values.swap(free_values_);
  }

 private:
  template <typename T>
  T TakeFrom(std::vector<T>& free) {
    std::lock_guard<std::mutex> lock(mu_);
    keep_ = true;
    if (free.empty()) return {};
    T s = std::move(free.back());
    free.pop_back();
    return s;
  }
  template <typename T>
  void GiveTo(std::vector<T>& free, T s) {
    s.clear();
    if (s.capacity() == 0) return;
    std::lock_guard<std::mutex> lock(mu_);
    if (keep_ && free.size() < kMaxKept) free.push_back(std::move(s));
  }
  // More than the batches alive at once (max_in_flight + read connections, 4 by default): a bound, not a target.
  static constexpr size_t kMaxKept = 16;
  std::mutex mu_;
  bool keep_ = true;
  std::vector<std::string> free_;
  std::vector<std::vector<EventRecord>> free_records_;
  std::vector<std::vector<FieldValue>> free_values_;
};

struct RawEvent {
  EventId id;
  uint32_t offset;  // into Batch::payloads
  uint32_t length;
  uint16_t event_class = 0;  // index into the run's EventCatalog classes
  uint32_t columns = 0;      // its event-table columns: raw_columns[columns, columns + n)
};

// An event-table column read beside the payload (a declared `field`): bytes in payloads.
struct RawColumn {
  uint32_t offset;
  uint32_t length;
  bool null;
};

struct Batch {
  Batch() { live_batches().fetch_add(1, std::memory_order_relaxed); }
  ~Batch() {
    if (pool) {
      pool->Give(std::move(payloads));
      pool->GiveRecords(std::move(records));
      pool->GiveValues(std::move(values));
    }
    live_batches().fetch_sub(1, std::memory_order_relaxed);
  }
  Batch(const Batch&) = delete;
  Batch& operator=(const Batch&) = delete;
  // Batches alive in this process: what bounds memory, observable by tests.
  static std::atomic<int64_t>& live_batches() {
    static std::atomic<int64_t> n{0};
    return n;
  }

  uint64_t sequence = 0;   // dense 0,1,2,... in read order (what the sequencer orders by)
  EventId after_id = 0;    // the batch covers ids in (after_id, last_id]
  EventId last_id = 0;
  // Ids in (after_id, last_id] that were missing when read: they may still commit.
  std::vector<IdRange> gaps;
  // A late batch carries no range: its events were found in earlier gaps (each consumer
  // applies those still open for it), and `settled` lists the gap ranges that are closed
  // now (found, made final by the cut-over's lock, or given up).
  bool late = false;
  // A late batch of a reconciliation (stages/flow/reader.h): its events were found in
  // holes judged final. A consumer applies those it judged final (at or below where it
  // applied, not open for it) if it takes events out of order, and otherwise counts them
  // as missed (its read model needs a rebuild). `settled` lists their ids.
  bool reconciled = false;
  std::vector<IdRange> settled;
  uint64_t rows_read = 0;  // every event in the range, skipped ones included
  uint64_t skipped = 0;    // events of types no selected projector handles

  // Raw payloads, back to back, followed by simdjson's padding.
  std::string payloads;
  std::shared_ptr<BufferPool> pool;  // where `payloads` goes back to when the batch ends
  std::vector<RawEvent> raw;
  std::vector<RawColumn> raw_columns;

  // Decoded.
  std::vector<Failure> failures;
  // Events of the classes the read models read, with the fields they read.
  std::vector<EventRecord> records;
  std::vector<FieldValue> values;
  size_t width = 0;  // values per record
  StringArena strings;

  // Projectors that still have to finish this batch; the last one releases its token.
  mutable std::atomic<int> consumers_left{0};
};

using BatchPtr = std::shared_ptr<const Batch>;

}  // namespace rw
