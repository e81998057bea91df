// BucketCounts: a count per time bucket, for the time counters (projectors/counters.h).
//
// The buckets of one data set mostly lie in one span of time (months or years of minutes),
// so they are counted in an array indexed by the bucket's place in that span: no hash, no
// probe, no sort at the flush, and 8 bytes per place instead of a map's 16 per slot at
// three quarters full. A bucket that would stretch the array past four times the buckets
// counted (and past kDenseFloor places), or that falls between the places (off the
// stride), is counted in a FlatMap instead, and moved into the array when the array grows
// over it. Memory so grows with distinct buckets, never with events or with the span. The
// array starts around the first bucket, and starts again around a far one while it holds
// fewer than kAnchoredFrom buckets and no more than the map (a first event years away from
// the rest).
//
// Thread safety: none.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "base/flat_map.h"

namespace rw {

class BucketCounts {
 public:
  // `stride`: the distance between neighbouring buckets (60 for minutes in epoch seconds).
  explicit BucketCounts(int64_t stride) : stride_(std::max<int64_t>(stride, 1)) {}

  // The count of `bucket`, for the caller to increase: a count left at 0 is no bucket.
  // The reference is valid until the next call with a bucket not counted yet.
  int64_t& operator[](int64_t bucket) {
    if (size_t at; Place(bucket, at)) {
      int64_t& c = dense_[at];
      if (c == 0) ++used_;
      return c;
    }
    return sparse_[ToOrdered(bucket)];
  }
  size_t size() const { return used_ + sparse_.size(); }
  size_t bytes() const { return dense_.capacity() * sizeof(int64_t) + sparse_.bytes(); }

  // Every (bucket, count) with a count, in bucket order; the counts are left empty and
  // their memory given back.
  std::vector<std::pair<int64_t, int64_t>> TakeSorted() {
    std::vector<std::pair<int64_t, int64_t>> out;
    out.reserve(size());
    const auto sparse = sparse_.TakeSorted();  // in ToOrdered order: bucket order
    auto s = sparse.begin();
    for (size_t i = 0; i < dense_.size(); ++i) {
      if (dense_[i] == 0) continue;
      const int64_t bucket = BucketAt(i);
      for (; s != sparse.end() && FromOrdered<int64_t>(s->key) < bucket; ++s) {
        out.emplace_back(FromOrdered<int64_t>(s->key), s->value);
      }
      out.emplace_back(bucket, dense_[i]);
    }
    for (; s != sparse.end(); ++s) out.emplace_back(FromOrdered<int64_t>(s->key), s->value);
    std::vector<int64_t>().swap(dense_);
    used_ = 0;
    return out;
  }

 private:
  static constexpr int64_t kDenseFloor = int64_t{1} << 16;  // places allowed whatever the density
  static constexpr int64_t kFirstPlaces = 1024;
  static constexpr size_t kAnchoredFrom = 256;  // buckets in the array that keep it where it is

  // The array's place for `bucket`, growing the array when that is allowed.
  bool Place(int64_t bucket, size_t& at) {
    if (dense_.empty() && !Anchor(bucket)) return false;
    const std::optional<__int128> index = IndexOf(bucket);
    if (index && Covers(*index)) {
      at = static_cast<size_t>(*index);
      return true;
    }
    // The span the array must cover, and the span it may: grown by half at least (a few
    // times in a run, each moving the map's buckets it covers), to double when allowed,
    // with the slack on the side it grew towards.
    const __int128 places_now = static_cast<__int128>(dense_.size());
    const __int128 first = index ? std::min<__int128>(0, *index) : 0;
    const __int128 end = index ? std::max<__int128>(places_now, *index + 1) : places_now;
    const __int128 allowed = std::max<__int128>(kDenseFloor, 4 * (__int128{static_cast<int64_t>(size())} + 1));
    if (!index || end - first > allowed || allowed < places_now + places_now / 2) {
      if (used_ >= kAnchoredFrom || sparse_.size() < used_) return false;
      // The array holds few buckets, no more than the map, and this one is far from them or
      // off their stride: a first event far from the rest must not pin the array. It starts
      // again here.
      for (size_t i = 0; i < dense_.size(); ++i) {
        if (dense_[i] != 0) sparse_[ToOrdered(BucketAt(i))] = dense_[i];
      }
      used_ = 0;
      if (!Anchor(bucket)) return false;
      at = kFirstPlaces / 2;  // where Anchor puts it
      return true;
    }
    const __int128 places = std::min(allowed, std::max({end - first, 2 * places_now}));
    const __int128 new_first = *index < 0 ? end - places : first;  // in today's indexes
    std::vector<int64_t> grown(static_cast<size_t>(places), 0);
    std::copy(dense_.begin(), dense_.end(), grown.begin() + static_cast<std::ptrdiff_t>(-new_first));
    dense_.swap(grown);
    lo_ = static_cast<int64_t>(lo_ + new_first * stride_);
    at = static_cast<size_t>(*index - new_first);
    TakeInFromTheMap();
    return true;
  }

  // A new array of kFirstPlaces around `bucket` (false, and none, for a bucket at the
  // edge of the int64 range: no time a bucket function gives).
  bool Anchor(int64_t bucket) {
    const __int128 lo = __int128{bucket} - __int128{stride_} * (kFirstPlaces / 2);
    const __int128 hi = __int128{bucket} + __int128{stride_} * (kFirstPlaces / 2);
    if (lo < INT64_MIN / 2 || hi > INT64_MAX / 2) {
      dense_.clear();
      return false;
    }
    lo_ = static_cast<int64_t>(lo);
    dense_.assign(kFirstPlaces, 0);
    TakeInFromTheMap();
    return true;
  }

  // The map's buckets that the array covers now move into it.
  void TakeInFromTheMap() {
    if (sparse_.empty()) return;
    for (const auto& e : sparse_.TakeSorted()) {
      if (const std::optional<__int128> i = IndexOf(FromOrdered<int64_t>(e.key)); i && Covers(*i)) {
        dense_[static_cast<size_t>(*i)] = e.value;
        ++used_;
      } else {
        sparse_[e.key] = e.value;
      }
    }
  }

  // `bucket`'s place counted from dense_[0] (negative before it), or none off the stride.
  std::optional<__int128> IndexOf(int64_t bucket) const {
    const __int128 offset = __int128{bucket} - lo_;
    if (offset % stride_ != 0) return std::nullopt;
    return offset / stride_;
  }
  bool Covers(__int128 index) const { return index >= 0 && index < static_cast<__int128>(dense_.size()); }
  int64_t BucketAt(size_t place) const { return lo_ + static_cast<int64_t>(place) * stride_; }

  const int64_t stride_;
  int64_t lo_ = 0;              // the bucket of dense_[0]
  std::vector<int64_t> dense_;  // counts by place; 0 is no bucket
  size_t used_ = 0;             // places of dense_ that are not 0
  FlatMap<int64_t> sparse_;     // ToOrdered(bucket) -> count: the buckets outside the array
};

}  // namespace rw
