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
#include <concepts>
#include <cstdint>
#include <type_traits>
#include <utility>
#include <vector>

namespace rw {

// A signed number as an unsigned one in the same order (the sign bit flipped), and back:
// keys that sort as numbers whatever their sign (days before 1970 are negative).
template <std::signed_integral T>
constexpr std::make_unsigned_t<T> ToOrdered(T v) {
  using U = std::make_unsigned_t<T>;
  return static_cast<U>(v) ^ (U{1} << (8 * sizeof(T) - 1));
}
template <std::signed_integral T>
constexpr T FromOrdered(std::make_unsigned_t<T> u) {
  return static_cast<T>(u ^ (std::make_unsigned_t<T>{1} << (8 * sizeof(T) - 1)));
}

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
  // The bytes it holds (its slots).
  size_t bytes() const { return slots_.capacity() * sizeof(Slot); }
  bool empty() const { return size_ == 0; }

  struct Entry {
    uint64_t key;
    V value;
  };
  // Every (key, value), sorted by key, moved out in the map's own array (no copy); the map
  // is left empty.
  std::vector<Entry> TakeSorted() {
    std::vector<Entry> out;
    out.swap(slots_);
    size_t n = 0;
    for (size_t i = 0; i < out.size(); ++i) {
      if (out[i].key != kEmpty) out[n++] = out[i];
    }
    out.resize(n);
    if (n < kRadixFrom) {
      std::sort(out.begin(), out.end(), [](const Entry& a, const Entry& b) { return a.key < b.key; });
    } else {
      RadixSort(out);
    }
    if (has_empty_key_) out.push_back({kEmpty, empty_key_value_});  // the largest key
    Clear();
    return out;
  }

  // Forgets every key, keeping the memory for the next use.
  void Reset() {
    for (Slot& s : slots_) s.key = kEmpty;
    size_ = 0;
    has_empty_key_ = false;
  }

  // Forgets every key and gives the memory back.
  void Clear() {
    std::vector<Slot>().swap(slots_);
    size_ = 0;
    has_empty_key_ = false;
  }

 private:
  static constexpr uint64_t kEmpty = ~uint64_t{0};
  using Slot = Entry;

  // Large maps are sorted by an LSD radix sort on 11-bit digits: a digit all keys share
  // (the high bits of times, of days) costs one counting pass and no move. It needs a
  // second array while it runs.
  static constexpr size_t kRadixFrom = 1 << 16;
  static void RadixSort(std::vector<Entry>& a) {
    constexpr int kBits = 11, kDigits = (64 + kBits - 1) / kBits;
    constexpr size_t kBuckets = size_t{1} << kBits;
    std::vector<size_t> counts(kDigits * kBuckets, 0);
    for (const Entry& e : a) {
      for (int d = 0; d < kDigits; ++d) ++counts[d * kBuckets + ((e.key >> (d * kBits)) & (kBuckets - 1))];
    }
    std::vector<Entry> moved;
    for (int d = 0; d < kDigits; ++d) {
      size_t* c = &counts[d * kBuckets];
      if (*std::max_element(c, c + kBuckets) == a.size()) continue;  // every key has this digit
      size_t at = 0;
      for (size_t b = 0; b < kBuckets; ++b) at += std::exchange(c[b], at);  // starts
      if (moved.empty()) moved.resize(a.size());
      for (const Entry& e : a) moved[c[(e.key >> (d * kBits)) & (kBuckets - 1)]++] = e;
      a.swap(moved);
    }
  }

  // Fibonacci hashing: the product's top bits index the table, so keys that differ only
  // in their high bits (a day packed above a text id) or are multiples of 60 still spread.
  size_t Slot0(uint64_t key) const { return static_cast<size_t>((key * 0x9E3779B97F4A7C15ull) >> shift_); }

  void Grow() {
    std::vector<Slot> old;
    old.swap(slots_);
    slots_.assign(old.empty() ? 16 : old.size() * 2, Slot{kEmpty, V{}});
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
