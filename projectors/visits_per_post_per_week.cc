// Read model `visits_per_post_per_week`: Visits per url per ISO week (keyed by its Monday).
#include "projectors/counters.h"

namespace rw {
namespace {
struct DayBucket {
  int32_t operator()(const CivilTime& t) const { return IsoWeekMonday(t.days); }
};
}  // namespace

std::unique_ptr<Projector> MakeVisitsPerPostPerWeek() {
  return std::make_unique<UrlDayCounter<DayBucket>>("visits_per_post_per_week");
}

}  // namespace rw
