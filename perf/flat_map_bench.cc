// The A/B pair of issue 52 (item 6): the counting read models' hash map, base/flat_map.h (one
// array, linear probing, a radix sort at the flush), against abseil's absl::flat_hash_map
// (Swiss tables) with a sort of its entries at the flush, on the work a counter does: one
// increment per event of a key packed as rewind packs it (an ordered day above a dense text
// id), then the flush, which takes every (key, count) in key order and empties the map. The
// keys per flush are those of the compiled and declared counters: 1,000 days (visits per day),
// 200,000 (day, URL) pairs, 2,000,000 entities. Rounds alternate A and B; the medians are
// printed in nanoseconds per event, the counting and the flush apart and together. Both sides must give the same rows.
//
//   build/perf/flat_map_bench [--rounds R] [--events N]
#include <absl/container/flat_hash_map.h>
#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <random>
#include <utility>
#include <vector>

#include "base/flat_map.h"

namespace {

using Rows = std::vector<std::pair<uint64_t, int64_t>>;

using Clock = std::chrono::steady_clock;
// Nanoseconds per event of the counting, then of the flush.
struct Phases {
  double count = 0, flush = 0;
};
double NanosPer(Clock::time_point from, Clock::time_point to, size_t n) {
  return std::chrono::duration<double, std::nano>(to - from).count() / static_cast<double>(n);
}

Rows ByFlatMap(const std::vector<uint64_t>& events, Phases* phases = nullptr) {
  const Clock::time_point t0 = Clock::now();
  rw::FlatMap<int64_t> map;
  for (uint64_t k : events) ++map[k];
  const Clock::time_point t1 = Clock::now();
  Rows rows;
  rows.reserve(map.size());
  for (const auto& e : map.TakeSorted()) rows.emplace_back(e.key, e.value);
  if (phases) *phases = {NanosPer(t0, t1, events.size()), NanosPer(t1, Clock::now(), events.size())};
  return rows;
}

Rows ByAbseil(const std::vector<uint64_t>& events, Phases* phases = nullptr) {
  const Clock::time_point t0 = Clock::now();
  absl::flat_hash_map<uint64_t, int64_t> map;
  for (uint64_t k : events) ++map[k];
  const Clock::time_point t1 = Clock::now();
  Rows rows(map.begin(), map.end());
  map.clear();
  std::sort(rows.begin(), rows.end());
  if (phases) *phases = {NanosPer(t0, t1, events.size()), NanosPer(t1, Clock::now(), events.size())};
  return rows;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  size_t rounds = 7, n = 4'000'000;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--rounds") == 0) rounds = std::strtoul(argv[i + 1], nullptr, 10);
    if (std::strcmp(argv[i], "--events") == 0) n = std::strtoul(argv[i + 1], nullptr, 10);
  }
  struct Shape {
    const char* what;
    uint32_t days, texts;  // keys = days * texts, drawn skewed towards the first texts
  };
  for (const Shape shape : {Shape{"1,000 days", 1000, 1}, Shape{"200,000 (day, URL)", 400, 500},
                            Shape{"2,000,000 entities", 1, 2'000'000}}) {
    std::mt19937_64 rng(42);
    std::vector<uint64_t> events(n);
    const uint32_t day0 = rw::ToOrdered<int32_t>(19'000);
    for (uint64_t& e : events) {
      const uint32_t day = static_cast<uint32_t>(rng() % shape.days);
      // A text's rank: square of a uniform draw, so that a few URLs take most visits.
      const double u = std::uniform_real_distribution<double>(0, 1)(rng);
      const uint32_t text = static_cast<uint32_t>(u * u * shape.texts);
      e = (uint64_t{day0 + day} << 32) | text;
    }
    if (ByFlatMap(events) != ByAbseil(events)) {
      fmt::print(stderr, "{}: the two maps give different rows\n", shape.what);
      return 1;
    }
    std::vector<double> a_count, a_flush, a, b_count, b_flush, b;
    size_t rows = 0;
    for (size_t r = 0; r < rounds; ++r) {
      Phases pa, pb;
      rows = ByFlatMap(events, &pa).size();
      ByAbseil(events, &pb);
      a_count.push_back(pa.count), a_flush.push_back(pa.flush), a.push_back(pa.count + pa.flush);
      b_count.push_back(pb.count), b_flush.push_back(pb.flush), b.push_back(pb.count + pb.flush);
    }
    fmt::print("{} ({} keys, {} events), ns per event, medians of {}:\n"
               "  FlatMap {:.1f} (counting {:.1f}, flush {:.1f}); absl::flat_hash_map {:.1f} (counting {:.1f}, "
               "flush {:.1f}): abseil / FlatMap = {:.2f}\n",
               shape.what, rows, n, rounds, Median(a), Median(a_count), Median(a_flush), Median(b),
               Median(b_count), Median(b_flush), Median(b) / Median(a));
  }
  return 0;
}
