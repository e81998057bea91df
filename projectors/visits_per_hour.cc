// Read model `visits_per_hour`: Visits per hour of visitedAt (wall clock).
#include "projectors/counters.h"

namespace rw {
namespace {
struct Bucket {
  static constexpr int64_t kStride = 3600;
  int64_t operator()(const CivilTime& t) const { return t.days * int64_t{86400} + t.second_of_day / 3600 * 3600; }
};
}  // namespace

std::unique_ptr<Projector> MakeVisitsPerHour() {
  return std::make_unique<TimeBucketCounter<Bucket>>("visits_per_hour", "hour", BucketType::kDateTime);
}

}  // namespace rw
