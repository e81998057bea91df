#include "stages/flow/memory_budget.h"

#include <fmt/core.h>

#include <algorithm>

namespace rw {

std::string ShowSize(uint64_t bytes) {
  static constexpr const char* kUnits[] = {"KiB", "MiB", "GiB", "TiB"};
  if (bytes < 1024) return fmt::format("{} bytes", bytes);
  double v = static_cast<double>(bytes) / 1024;
  size_t u = 0;
  while (v >= 1024 && u + 1 < std::size(kUnits)) {
    v /= 1024;
    ++u;
  }
  return v == static_cast<double>(static_cast<uint64_t>(v)) ? fmt::format("{} {}", static_cast<uint64_t>(v), kUnits[u])
                                                            : fmt::format("{:.1f} {}", v, kUnits[u]);
}

MemoryBudget::MemoryBudget(size_t budget_bytes, size_t runners)
    : budget_(budget_bytes),
      runners_(runners),
      flushable_(new std::atomic<size_t>[runners]),
      total_of_(new std::atomic<size_t>[runners]) {
  for (size_t i = 0; i < runners; ++i) {
    flushable_[i].store(0, std::memory_order_relaxed);
    total_of_[i].store(0, std::memory_order_relaxed);
  }
}

bool MemoryBudget::Report(size_t i, size_t flushable, size_t kept, size_t growth, bool decide) {
  if (i >= runners_) return false;
  const size_t mine = flushable + kept;
  flushable_[i].store(flushable, std::memory_order_relaxed);
  const size_t before = total_of_[i].exchange(mine, std::memory_order_relaxed);
  const size_t total = total_.fetch_add(mine - before, std::memory_order_relaxed) + (mine - before);
  size_t peak = peak_.load(std::memory_order_relaxed);
  while (total > peak && !peak_.compare_exchange_weak(peak, total, std::memory_order_relaxed)) {
  }
  // Room for twice the last growth, and at least a quarter of the budget: a batch's keys
  // can come as the slots of a table of them double.
  if (!decide || total + std::max(2 * growth, budget_ / 4) <= budget_ || flushable == 0) return false;
  size_t largest = 0;
  for (size_t j = 0; j < runners_; ++j) largest = std::max(largest, flushable_[j].load(std::memory_order_relaxed));
  if (flushable * 2 < largest) return false;
  flushes_.fetch_add(1, std::memory_order_relaxed);
  return true;
}

}  // namespace rw
