// The A/B pair of issue 52 (item 6): base/civil_time.h's calendar by C++20's <chrono> against
// the hand-written one it replaced (perf/civil_by_hand.h), on the calendar work of a rebuild:
// a parsed timestamp's date to its day number (every event), and a day to the first of its
// month and to its ISO week's Monday (the monthly and weekly buckets). Both sides must agree
// on every day from 1600 to 2400 (checked first). Rounds alternate A and B; the medians are
// printed in nanoseconds per call.
//
//   build/perf/civil_bench [--rounds R] [--calls N]
#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "base/civil_time.h"
#include "perf/civil_by_hand.h"

namespace {

template <typename F>
double NanosPerCall(size_t calls, F&& f) {
  int64_t sink = 0;
  const auto t0 = std::chrono::steady_clock::now();
  for (size_t i = 0; i < calls; ++i) sink += f(i);
  const double ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count();
  if (sink == 42) std::puts("");  // keeps the work
  return ns / static_cast<double>(calls);
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  size_t rounds = 7, calls = 20'000'000;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--rounds") == 0) rounds = std::strtoul(argv[i + 1], nullptr, 10);
    if (std::strcmp(argv[i], "--calls") == 0) calls = std::strtoul(argv[i + 1], nullptr, 10);
  }
  for (int32_t z = rw::DaysFromCivil(1600, 1, 1); z <= rw::DaysFromCivil(2400, 12, 31); ++z) {
    const rw::CivilDate a = rw::CivilFromDays(z), b = rw::by_hand::CivilFromDays(z);
    if (!(a == b) || rw::DaysFromCivil(a.year, a.month, a.day) != rw::by_hand::DaysFromCivil(b.year, b.month, b.day) ||
        rw::WeekdayFromDays(z) != rw::by_hand::WeekdayFromDays(z) ||
        rw::DaysInMonth(a.year, a.month) != rw::by_hand::DaysInMonth(b.year, b.month)) {
      fmt::print(stderr, "the two calendars differ on day {}\n", z);
      return 1;
    }
  }
  // Dates of the blog's decade, in a random order (a page of events is not sorted by day).
  std::mt19937 rng(7);
  std::vector<rw::CivilDate> dates(1 << 16);
  std::vector<int32_t> days(1 << 16);
  for (size_t i = 0; i < dates.size(); ++i) {
    days[i] = rw::DaysFromCivil(2015, 1, 1) + static_cast<int32_t>(rng() % 3650);
    dates[i] = rw::CivilFromDays(days[i]);
  }
  const size_t mask = dates.size() - 1;
  auto compare = [&](const char* what, auto chrono, auto by_hand) {
    std::vector<double> a, b;
    for (size_t r = 0; r < rounds; ++r) {
      a.push_back(NanosPerCall(calls, [&](size_t i) { return chrono(dates[i & mask], days[i & mask]); }));
      b.push_back(NanosPerCall(calls, [&](size_t i) { return by_hand(dates[i & mask], days[i & mask]); }));
    }
    fmt::print("{}: <chrono> {:.2f} ns, by hand {:.2f} ns per call (medians of {}): by hand / <chrono> = {:.2f}\n",
               what, Median(a), Median(b), rounds, Median(b) / Median(a));
  };
  compare(
      "date -> day number (every event)",
      [](const rw::CivilDate& d, int32_t) -> int64_t { return rw::DaysFromCivil(d.year, d.month, d.day); },
      [](const rw::CivilDate& d, int32_t) -> int64_t { return rw::by_hand::DaysFromCivil(d.year, d.month, d.day); });
  compare(
      "day -> first of its month (monthly buckets)",
      [](const rw::CivilDate&, int32_t z) -> int64_t {
        const rw::CivilDate c = rw::CivilFromDays(z);
        return rw::DaysFromCivil(c.year, c.month, 1);
      },
      [](const rw::CivilDate&, int32_t z) -> int64_t {
        const rw::CivilDate c = rw::by_hand::CivilFromDays(z);
        return rw::by_hand::DaysFromCivil(c.year, c.month, 1);
      });
  compare(
      "day -> its ISO week's Monday (weekly buckets; base/civil_time.h keeps the hand-written one)",
      [](const rw::CivilDate&, int32_t z) -> int64_t {
        using namespace std::chrono;
        return z - (static_cast<int>(weekday{sys_days{std::chrono::days{z}}}.iso_encoding()) - 1);
      },
      [](const rw::CivilDate&, int32_t z) -> int64_t { return z - rw::by_hand::WeekdayFromDays(z); });
  return 0;
}
