// Gaps: ids missing below the head that may still appear.
//
// Ids are assigned at insert and become visible at commit, so a transaction that took a
// lower id can commit after a higher id was already read. rewind never treats a missing
// id as absent until it is settled: found later (a late event, applied once), made final
// by the cut-over's lock on the event table (no insert is open then), or given up after
// the settle window (counted). A GapSet holds such ids as disjoint closed ranges.
//
// Plain values; thread-compatible.
#pragma once

#include <algorithm>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "projectors/event_id.h"

namespace rw {

struct IdRange {
  EventId lo, hi;  // closed: lo <= id <= hi
  bool operator==(const IdRange&) const = default;
};

class GapSet {
 public:
  bool empty() const { return ranges_.empty(); }
  size_t size() const { return ranges_.size(); }
  const std::vector<IdRange>& ranges() const { return ranges_; }

  // Adds [lo, hi] (merging with neighbours).
  void Add(IdRange r) {
    if (r.lo > r.hi) return;
    auto it = std::lower_bound(ranges_.begin(), ranges_.end(), r,
                               [](const IdRange& a, const IdRange& b) { return a.hi + 1 < b.lo; });
    while (it != ranges_.end() && it->lo <= r.hi + 1) {
      r.lo = std::min(r.lo, it->lo);
      r.hi = std::max(r.hi, it->hi);
      it = ranges_.erase(it);
    }
    ranges_.insert(it, r);
  }
  // Removes [lo, hi] (splitting a range it falls inside).
  void Subtract(IdRange r) {
    std::vector<IdRange> out;
    out.reserve(ranges_.size() + 1);
    for (const IdRange& g : ranges_) {
      if (g.hi < r.lo || g.lo > r.hi) {
        out.push_back(g);
        continue;
      }
      if (g.lo < r.lo) out.push_back({g.lo, r.lo - 1});
      if (g.hi > r.hi) out.push_back({r.hi + 1, g.hi});
    }
    ranges_.swap(out);
  }
  bool Contains(EventId id) const {
    auto it = std::lower_bound(ranges_.begin(), ranges_.end(), id,
                               [](const IdRange& a, EventId v) { return a.hi < v; });
    return it != ranges_.end() && it->lo <= id;
  }
  // Drops every range (or part of one) above `id`.
  void TrimAbove(EventId id) { Subtract({id + 1, kMaxId}); }

  // "lo-hi,lo-hi" (a single id as "id"): the form stored in the checkpoint.
  std::string Text() const {
    std::string out;
    for (const IdRange& r : ranges_) {
      if (!out.empty()) out += ',';
      out += IdText(r.lo);
      if (r.hi != r.lo) out += ':' + IdText(r.hi);
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
  std::vector<IdRange> ranges_;
};

}  // namespace rw
