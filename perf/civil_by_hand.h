// The civil calendar rewind wrote by hand before issue 52 (item 6) moved base/civil_time.h
// onto C++20's <chrono>: kept only as the other side of perf/civil_bench's A/B pair.
#pragma once

#include <cstdint>

#include "base/civil_time.h"

namespace rw::by_hand {

// Howard Hinnant's days_from_civil / civil_from_days (public domain algorithms).
constexpr int32_t DaysFromCivil(int32_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  const int32_t era = (y >= 0 ? y : y - 399) / 400;
  const unsigned yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<int32_t>(doe) - 719468;
}

constexpr CivilDate CivilFromDays(int32_t z) {
  z += 719468;
  const int32_t era = (z >= 0 ? z : z - 146096) / 146097;
  const unsigned doe = static_cast<unsigned>(z - era * 146097);
  const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const int32_t y = static_cast<int32_t>(yoe) + era * 400;
  const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const unsigned mp = (5 * doy + 2) / 153;
  const unsigned d = doy - (153 * mp + 2) / 5 + 1;
  const unsigned m = mp < 10 ? mp + 3 : mp - 9;
  return CivilDate{y + (m <= 2), static_cast<uint8_t>(m), static_cast<uint8_t>(d)};
}

constexpr bool IsLeapYear(int32_t y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }

constexpr unsigned DaysInMonth(int32_t y, unsigned m) {
  constexpr uint8_t kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  return m == 2 && IsLeapYear(y) ? 29 : kDays[m - 1];
}

// Monday = 0 ... Sunday = 6. 1970-01-01 was a Thursday.
constexpr int WeekdayFromDays(int32_t days) {
  const int w = static_cast<int>((days + 3) % 7);
  return w < 0 ? w + 7 : w;
}

}  // namespace rw::by_hand
