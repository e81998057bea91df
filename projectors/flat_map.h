// FlatMap: a hash map from 64-bit keys to small values, open addressing with linear
// probing in one array (no node per key, no pointer chasing). The counting read models
// keep their per-key state in it: keys are time buckets, or a time bucket and a dense
// text id packed together (PageVisit::url_id).
//
// Any uint64 key is allowed: one value of the key space marks empty slots, and the key
// equal to it is kept aside. Thread safety: none.
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>
#include <utility>
#include <vector>

namespace rw {

template <typename V>
class FlatMap {
 public:
  // The value of `key`, value-initialised when new.
  V& operator[](uint64_t key) {
    if (key == kEmpty) {
      if (!has_empty_key_) {
        has_empty_key_ = true;
        ++size_;
        empty_key_value_ = V{};
      }
      return empty_key_value_;
    }
    if ((size_ + 1) * 4 > slots_.size() * 3) Grow();  // load factor at most 3/4
    const size_t mask = slots_.size() - 1;
    for (size_t i = Slot0(key);; i = (i + 1) & mask) {
      Slot& s = slots_[i];
      if (s.key == key) return s.value;
      if (s.key == kEmpty) {
        s.key = key;
        s.value = V{};
        ++size_;
        return s.value;
      }
    }
  }

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

  // Every (key, value), sorted by key.
  std::vector<std::pair<uint64_t, V>> Sorted() const {
    std::vector<std::pair<uint64_t, V>> out;
    out.reserve(size_);
    for (const Slot& s : slots_) {
      if (s.key != kEmpty) out.emplace_back(s.key, s.value);
    }
    if (has_empty_key_) out.emplace_back(kEmpty, empty_key_value_);
    std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    return out;
  }

  // Forgets every key and gives the memory back.
  void Clear() {
    std::vector<Slot>().swap(slots_);
    size_ = 0;
    has_empty_key_ = false;
  }

 private:
  static constexpr uint64_t kEmpty = ~uint64_t{0};
  struct Slot {
    uint64_t key = kEmpty;
    V value{};
  };

  // Fibonacci hashing: the product's top bits index the table, so keys that differ only
  // in their high bits (a day packed above a text id) or are multiples of 60 still spread.
  size_t Slot0(uint64_t key) const { return static_cast<size_t>((key * 0x9E3779B97F4A7C15ull) >> shift_); }

  void Grow() {
    std::vector<Slot> old;
    old.swap(slots_);
    slots_.assign(old.empty() ? 16 : old.size() * 2, Slot{});
    shift_ = 64 - std::countr_zero(slots_.size());
    const size_t mask = slots_.size() - 1;
    for (const Slot& s : old) {
      if (s.key == kEmpty) continue;
      size_t i = Slot0(s.key);
      while (slots_[i].key != kEmpty) i = (i + 1) & mask;
      slots_[i] = s;
    }
  }

  std::vector<Slot> slots_;
  int shift_ = 64;
  size_t size_ = 0;
  bool has_empty_key_ = false;
  V empty_key_value_{};
};

}  // namespace rw
