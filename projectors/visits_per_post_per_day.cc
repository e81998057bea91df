// Read model `visits_per_post_per_day`: Visits per url per day of visitedAt.
#include "projectors/counters.h"

namespace rw {
namespace {
struct DayBucket {
  int32_t operator()(const CivilTime& t) const { return t.days; }
};
}  // namespace

std::unique_ptr<Projector> MakeVisitsPerPostPerDay() {
  return std::make_unique<UrlDayCounter<DayBucket>>("visits_per_post_per_day");
}

}  // namespace rw
