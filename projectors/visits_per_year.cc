// Read model `visits_per_year`: Visits per year (keyed by January 1st).
#include "projectors/counters.h"

namespace rw {
namespace {
struct Bucket {
  int64_t operator()(const CivilTime& t) const { return FirstOfYear(t.days); }
};
}  // namespace

std::unique_ptr<Projector> MakeVisitsPerYear() {
  return std::make_unique<TimeBucketCounter<Bucket>>("visits_per_year", "date", BucketType::kDate);
}

}  // namespace rw
