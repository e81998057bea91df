// Civil (wall-clock) dates and times, and the parser for ISO-8601 timestamps.
//
// Read models bucket by the wall-clock time written in `visitedAt`, ignoring its UTC
// offset, as the original PHP projectors did. Everything here is pure and thread-safe.
// Day numbers count days since 1970-01-01 (negative before), so bucketing is integer
// arithmetic: no strftime, no mktime, no time zone database.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace rw {

struct CivilDate {
  int32_t year;
  uint8_t month;  // 1..12
  uint8_t day;    // 1..31
  friend bool operator==(const CivilDate&, const CivilDate&) = default;
};

// A point in wall-clock time: whole days since 1970-01-01, seconds into that day, and the
// microseconds of the fraction written (its first six digits; further ones are cut).
struct CivilTime {
  int32_t days;
  int32_t second_of_day;  // 0..86399 (a leap second 60 is folded into 59)
  int32_t micros = 0;     // 0..999999
  int64_t epoch_seconds() const { return int64_t{days} * 86400 + second_of_day; }
  int64_t epoch_micros() const { return epoch_seconds() * 1'000'000 + micros; }
};

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

// The Monday that starts the ISO week containing `days`.
constexpr int32_t IsoWeekMonday(int32_t days) { return days - WeekdayFromDays(days); }
constexpr int32_t FirstOfMonth(int32_t days) {
  const CivilDate d = CivilFromDays(days);
  return DaysFromCivil(d.year, d.month, 1);
}
constexpr int32_t FirstOfYear(int32_t days) { return DaysFromCivil(CivilFromDays(days).year, 1, 1); }

// Parses `YYYY-MM-DDTHH:MM:SS` (a space may replace the `T`), optional fraction, and an
// optional offset (`Z`, `+HH:MM`, `+HHMM`, `+HH`). The offset is validated and ignored.
// Returns nullopt for anything else, including impossible dates (2023-02-29) and times.
std::optional<CivilTime> ParseIsoTimestamp(std::string_view text);
// A timestamp as ParseIsoTimestamp reads it, or a date alone ('YYYY-MM-DD': its midnight).
std::optional<CivilTime> ParseDateOrTimestamp(std::string_view text);

// Writes "YYYY-MM-DD" (10 chars) / "YYYY-MM-DD HH:MM:SS" (19 chars) into `out`;
// returns the number of characters written. REQUIRES: year in 0..9999.
int FormatDate(int32_t days, char* out);
int FormatDateTime(int64_t epoch_seconds, char* out);
// "YYYY-MM-DD HH:MM:SS" and, when the microseconds are not zero, ".ffffff" (26 chars): the
// column's precision keeps what it keeps (the server cuts the rest, as for the application's
// own writes). Returns the number of characters written.
int FormatDateTimeMicros(int64_t epoch_micros, char* out);

}  // namespace rw
