// Read model `visits_per_day`: Visits per day of visitedAt.
#include "projectors/counters.h"

namespace rw {
namespace {
struct Bucket {
  int64_t operator()(const CivilTime& t) const { return t.days; }
};
}  // namespace

std::unique_ptr<Projector> MakeVisitsPerDay() {
  return std::make_unique<TimeBucketCounter<Bucket>>("visits_per_day", "date", BucketType::kDate);
}

}  // namespace rw
