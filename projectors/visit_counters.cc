// The blog's seven visit counters: one bucket each, from a visit's visitedAt (the wall clock
// it was written in), counted per bucket (TimeBucketCounter) or per url and bucket
// (UrlDayCounter, projectors/counters.h). The registry (registry.cc) names them.
#include "projectors/counters.h"

namespace rw {
namespace {

struct Minute {
  static constexpr int64_t kStride = 60;
  int64_t operator()(const CivilTime& t) const { return t.days * int64_t{86400} + t.second_of_day / 60 * 60; }
};
struct Hour {
  static constexpr int64_t kStride = 3600;
  int64_t operator()(const CivilTime& t) const { return t.days * int64_t{86400} + t.second_of_day / 3600 * 3600; }
};
struct Day {
  int64_t operator()(const CivilTime& t) const { return t.days; }
};
struct Month {
  int64_t operator()(const CivilTime& t) const { return FirstOfMonth(t.days); }
};
struct Year {
  int64_t operator()(const CivilTime& t) const { return FirstOfYear(t.days); }
};
struct PostDay {
  int32_t operator()(const CivilTime& t) const { return t.days; }
};
struct PostWeek {  // the ISO week, by its Monday
  int32_t operator()(const CivilTime& t) const { return IsoWeekMonday(t.days); }
};

}  // namespace

std::unique_ptr<Projector> MakeVisitsPerMinute() {
  return std::make_unique<TimeBucketCounter<Minute>>("visits_per_minute", "time", BucketType::kDateTime);
}
std::unique_ptr<Projector> MakeVisitsPerHour() {
  return std::make_unique<TimeBucketCounter<Hour>>("visits_per_hour", "hour", BucketType::kDateTime);
}
std::unique_ptr<Projector> MakeVisitsPerDay() {
  return std::make_unique<TimeBucketCounter<Day>>("visits_per_day", "date", BucketType::kDate);
}
std::unique_ptr<Projector> MakeVisitsPerMonth() {
  return std::make_unique<TimeBucketCounter<Month>>("visits_per_month", "date", BucketType::kDate);
}
std::unique_ptr<Projector> MakeVisitsPerYear() {
  return std::make_unique<TimeBucketCounter<Year>>("visits_per_year", "date", BucketType::kDate);
}
std::unique_ptr<Projector> MakeVisitsPerPostPerDay() {
  return std::make_unique<UrlDayCounter<PostDay>>("visits_per_post_per_day");
}
std::unique_ptr<Projector> MakeVisitsPerPostPerWeek() {
  return std::make_unique<UrlDayCounter<PostWeek>>("visits_per_post_per_week");
}

}  // namespace rw
