// Gaps: ids missing below the head that may still appear.
//
// Ids are assigned at insert and become visible at commit, so a transaction that took a
// lower id can commit after a higher id was already read. rewind never treats a missing
// id as absent until it is settled: found later (a late event, applied once), made final
// by the cut-over's lock on the event table (no insert is open then), or given up after
// the settle window (counted). A GapSet holds such ids as disjoint closed ranges.
//
// Every operation is logarithmic in the number of ranges (plus what it merges or removes):
// a table whose ids step by 2 has a hole after every event.
//
// Plain values; thread-compatible.
#pragma once

#include <algorithm>
#include <iterator>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/event_id.h"

namespace rw {

struct IdRange {
  EventId lo, hi;  // closed: lo <= id <= hi
  bool operator==(const IdRange&) const = default;
};

class GapSet {
 public:
  bool empty() const { return ranges_.empty(); }
  size_t size() const { return ranges_.size(); }
  // The ranges in id order (a copy: for checkpoints and tests, not for hot paths).
  std::vector<IdRange> ranges() const {
    std::vector<IdRange> out;
    out.reserve(ranges_.size());
    for (const auto& [lo, hi] : ranges_) out.push_back({lo, hi});
    return out;
  }
  // The lowest id in the set. REQUIRES: !empty().
  EventId lowest() const { return ranges_.begin()->first; }

  // Adds [lo, hi] (merging with neighbours). O(log n) plus the ranges it absorbs.
  void Add(IdRange r) {
    if (r.lo > r.hi) return;
    auto it = ranges_.upper_bound(r.lo);  // the first range starting after r.lo
    if (it != ranges_.begin()) {
      auto before = std::prev(it);
      if (before->second + 1 >= r.lo) {  // overlaps or touches: extend that one
        r.lo = before->first;
        r.hi = std::max(r.hi, before->second);
        it = ranges_.erase(before);
      }
    }
    while (it != ranges_.end() && it->first <= r.hi + 1) {
      r.hi = std::max(r.hi, it->second);
      it = ranges_.erase(it);
    }
    ranges_.emplace_hint(it, r.lo, r.hi);
  }
  // Removes [lo, hi] (splitting a range it falls inside). O(log n) plus the ranges removed.
  void Subtract(IdRange r) {
    if (r.lo > r.hi) return;
    auto it = ranges_.upper_bound(r.lo);
    if (it != ranges_.begin() && std::prev(it)->second >= r.lo) --it;  // the range holding r.lo
    while (it != ranges_.end() && it->first <= r.hi) {
      const EventId lo = it->first, hi = it->second;
      it = ranges_.erase(it);
      if (lo < r.lo) ranges_.emplace_hint(it, lo, r.lo - 1);
      if (hi > r.hi) {
        ranges_.emplace_hint(it, r.hi + 1, hi);
        break;
      }
    }
  }
  bool Contains(EventId id) const {
    auto it = ranges_.upper_bound(id);
    return it != ranges_.begin() && std::prev(it)->second >= id;
  }
  // Drops every range (or part of one) above `id`.
  void TrimAbove(EventId id) { Subtract({id + 1, kMaxId}); }

  // "lo-hi,lo-hi" (a single id as "id"): the form stored in the checkpoint.
  std::string Text() const {
    std::string out;
    for (const auto& [lo, hi] : ranges_) {
      if (!out.empty()) out += ',';
      out += IdText(lo);
      if (hi != lo) out += ':' + IdText(hi);
    }
    return out;
  }
  static std::optional<GapSet> Parse(std::string_view text) {
    GapSet g;
    while (!text.empty()) {
      const size_t comma = text.find(',');
      std::string_view item = text.substr(0, comma);
      text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1);
      const size_t colon = item.find(':');
      auto lo = ParseEventId(item.substr(0, colon));
      auto hi = colon == std::string_view::npos ? lo : ParseEventId(item.substr(colon + 1));
      if (!lo || !hi || *lo > *hi) return std::nullopt;
      g.Add({*lo, *hi});
    }
    return g;
  }

  static constexpr EventId kMaxId = static_cast<EventId>(UINT64_MAX) + 1;

 private:
  std::map<EventId, EventId> ranges_;  // lo -> hi, disjoint and not touching
};

}  // namespace rw
