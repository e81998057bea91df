// Civil (wall-clock) dates and times, and the parser for ISO-8601 timestamps.
//
// Read models bucket by the wall-clock time written in `visitedAt`, ignoring its UTC
// offset, as the original PHP projectors did. Everything here is pure and thread-safe.
// Day numbers count days since 1970-01-01 (negative before), so bucketing is integer
// arithmetic on <chrono>'s calendar: no strftime, no mktime, no time zone database.
#pragma once

#include <chrono>
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

// The calendar is C++20's <chrono> (proleptic Gregorian, as MariaDB's DATE); the hand-written
// one it replaced is kept in perf/civil_by_hand.h, the other side of perf/civil_bench's pair.
// REQUIRES: 1 <= m <= 12 and a year std::chrono::year holds (-32767..32767); a day past the
// month's end counts on into the next month.
constexpr int32_t DaysFromCivil(int32_t y, unsigned m, unsigned d) {
  using namespace std::chrono;
  return (sys_days{year{y} / month{m} / 1} + days{d - 1}).time_since_epoch().count();
}

constexpr CivilDate CivilFromDays(int32_t z) {
  using namespace std::chrono;
  const year_month_day ymd{sys_days{days{z}}};
  return CivilDate{static_cast<int>(ymd.year()), static_cast<uint8_t>(static_cast<unsigned>(ymd.month())),
                   static_cast<uint8_t>(static_cast<unsigned>(ymd.day()))};
}

constexpr bool IsLeapYear(int32_t y) { return std::chrono::year{y}.is_leap(); }

constexpr unsigned DaysInMonth(int32_t y, unsigned m) {
  using namespace std::chrono;
  return static_cast<unsigned>((year{y} / month{m} / last).day());
}

// Monday = 0 ... Sunday = 6. 1970-01-01 was a Thursday. Kept by hand: 1.6x faster than
// std::chrono::weekday's iso_encoding() (perf/civil_bench: 1.43 against 2.27 ns a call).
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
