// MemoryBudget: the memory a run's read models may hold together in their state (--memory).
//
// Each read model's runner reports, after every batch it folds, the bytes its projector
// holds (Projector::state_bytes, what a flush gives back, and kept_bytes, what it keeps
// across flushes) and what it keeps itself. When the run's total passes the budget, the
// runners holding the most flush their rows as deltas (the table's upserts merge them with
// what it has) and so let them go; the others go on. The bound is the budget plus what is
// on its way: the reader's batches and each runner's flush in flight.
//
// Thread safety: Report() and the readers may be called from any thread (the runners fold
// on the graph's threads).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace rw {

// What a run may hold when the user says nothing: a small server's share (a 1 GiB machine
// keeps room for MariaDB and the application).
inline constexpr size_t kDefaultMemoryBudget = size_t{256} << 20;

// "256 MiB", "1.5 GiB", "512 KiB", "100 bytes".
std::string ShowSize(uint64_t bytes);

class MemoryBudget {
 public:
  MemoryBudget(size_t budget_bytes, size_t runners);

  size_t budget() const { return budget_; }
  // Runner `i` holds `flushable` bytes a flush gives back and `kept` bytes it keeps, and its
  // last batch added `growth`. With `decide`, returns whether it should flush now (counted):
  // the total would pass the budget with one more such batch (twice it, and at least a
  // quarter of the budget, to be safe: a batch's keys can come as the slots of a table of
  // them double), and it holds at least half of
  // what the largest holder may give back (so the largest go first, a few at a time).
  bool Report(size_t i, size_t flushable, size_t kept, size_t growth, bool decide);
  // The largest total reported at once, and how many flushes the budget asked for.
  size_t peak() const { return peak_.load(std::memory_order_relaxed); }
  // The total last reported.
  size_t total() const { return total_.load(std::memory_order_relaxed); }
  uint64_t flushes() const { return flushes_.load(std::memory_order_relaxed); }

 private:
  const size_t budget_;
  const size_t runners_;
  std::unique_ptr<std::atomic<size_t>[]> flushable_, total_of_;
  std::atomic<size_t> total_{0}, peak_{0};
  std::atomic<uint64_t> flushes_{0};
};

}  // namespace rw
