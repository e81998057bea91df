// Read model `visits_per_month`: Visits per month (keyed by its first day).
#include "projectors/counters.h"

namespace rw {
namespace {
struct Bucket {
  int64_t operator()(const CivilTime& t) const { return FirstOfMonth(t.days); }
};
}  // namespace

std::unique_ptr<Projector> MakeVisitsPerMonth() {
  return std::make_unique<TimeBucketCounter<Bucket>>("visits_per_month", "date", BucketType::kDate);
}

}  // namespace rw
