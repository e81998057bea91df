// Bucketing arithmetic: parsing visitedAt, days <-> civil dates, ISO weeks, months, years.
#include "base/civil_time.h"

#include <gtest/gtest.h>

#include <ctime>

namespace rw {
namespace {

int32_t Days(int y, int m, int d) { return DaysFromCivil(y, m, d); }

std::string Date(int32_t days) {
  char buf[10];
  return std::string(buf, FormatDate(days, buf));
}

TEST(CivilTime, RoundTripsEveryDayAgainstTimegm) {
  // 1900..2100 against the C library's own conversion, one day at a time.
  for (int32_t z = Days(1900, 1, 1); z <= Days(2100, 12, 31); ++z) {
    const CivilDate c = CivilFromDays(z);
    ASSERT_EQ(DaysFromCivil(c.year, c.month, c.day), z);
    std::tm tm{};
    tm.tm_year = c.year - 1900;
    tm.tm_mon = c.month - 1;
    tm.tm_mday = c.day;
    ASSERT_EQ(timegm(&tm) / 86400, z) << Date(z);
    ASSERT_EQ(WeekdayFromDays(z), (tm.tm_wday + 6) % 7) << Date(z);
  }
}

TEST(CivilTime, ParsesTheStoredFormatAndIgnoresTheOffset) {
  auto t = ParseIsoTimestamp("2024-01-19T12:34:56+00:00");
  ASSERT_TRUE(t);
  EXPECT_EQ(t->days, Days(2024, 1, 19));
  EXPECT_EQ(t->second_of_day, 12 * 3600 + 34 * 60 + 56);
  // Wall clock as written: the offset does not move the time.
  for (const char* s : {"2024-01-19T12:34:56-05:00", "2024-01-19T12:34:56+0530", "2024-01-19T12:34:56Z",
                        "2024-01-19 12:34:56", "2024-01-19T12:34:56.123456+02:00", "2024-01-19T12:34:56+14"}) {
    auto u = ParseIsoTimestamp(s);
    ASSERT_TRUE(u) << s;
    EXPECT_EQ(u->epoch_seconds(), t->epoch_seconds()) << s;
  }
}

TEST(CivilTime, RejectsWhatIsNotATimestamp) {
  for (const char* s : {"", "yesterday", "2024-01-19", "2024-13-01T00:00:00+00:00",
                        "2023-02-29T10:00:00+00:00", "2024-04-31T00:00:00Z", "2024-01-19T24:00:00Z",
                        "2024-01-19T12:60:00Z", "2024-01-19T12:34:56+25:00", "2024-01-19T12:34:56 junk",
                        "2024-01-19T12:34:56.", "2024/01/19T12:34:56Z", "２０２４-01-19T12:34:56Z"}) {
    EXPECT_FALSE(ParseIsoTimestamp(s)) << s;
  }
}

TEST(CivilTime, LeapDays) {
  EXPECT_TRUE(ParseIsoTimestamp("2024-02-29T00:00:00Z"));
  EXPECT_TRUE(ParseIsoTimestamp("2000-02-29T00:00:00Z"));
  EXPECT_FALSE(ParseIsoTimestamp("1900-02-29T00:00:00Z"));
  EXPECT_FALSE(ParseIsoTimestamp("2100-02-29T00:00:00Z"));
  EXPECT_EQ(Days(2024, 3, 1) - Days(2024, 2, 28), 2);
}

TEST(CivilTime, IsoWeekMondayAcrossYearEnds) {
  // 2021-01-01 is a Friday: its ISO week (2020-W53) starts Monday 2020-12-28.
  EXPECT_EQ(Date(IsoWeekMonday(Days(2021, 1, 1))), "2020-12-28");
  EXPECT_EQ(Date(IsoWeekMonday(Days(2021, 1, 3))), "2020-12-28");  // Sunday
  EXPECT_EQ(Date(IsoWeekMonday(Days(2021, 1, 4))), "2021-01-04");  // Monday
  // 2024-12-31 (Tuesday) belongs to 2025-W01, which starts 2024-12-30.
  EXPECT_EQ(Date(IsoWeekMonday(Days(2024, 12, 31))), "2024-12-30");
  EXPECT_EQ(Date(IsoWeekMonday(Days(2025, 1, 5))), "2024-12-30");
  // A leap day in the middle of a week.
  EXPECT_EQ(Date(IsoWeekMonday(Days(2024, 2, 29))), "2024-02-26");
  // Before 1970 the modulo must not go negative.
  EXPECT_EQ(Date(IsoWeekMonday(Days(1969, 12, 31))), "1969-12-29");
}

TEST(CivilTime, MonthAndYearBuckets) {
  EXPECT_EQ(Date(FirstOfMonth(Days(2024, 2, 29))), "2024-02-01");
  EXPECT_EQ(Date(FirstOfMonth(Days(2023, 12, 31))), "2023-12-01");
  EXPECT_EQ(Date(FirstOfYear(Days(2023, 12, 31))), "2023-01-01");
  EXPECT_EQ(Date(FirstOfYear(Days(2024, 1, 1))), "2024-01-01");
}

TEST(CivilTime, Formats) {
  char buf[19];
  EXPECT_EQ(std::string(buf, FormatDateTime(int64_t{Days(2024, 1, 19)} * 86400 + 45296, buf)),
            "2024-01-19 12:34:56");
  EXPECT_EQ(std::string(buf, FormatDateTime(-1, buf)), "1969-12-31 23:59:59");
}

}  // namespace
}  // namespace rw
