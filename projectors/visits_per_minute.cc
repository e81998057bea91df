// Read model `visits_per_minute`: Visits per minute of visitedAt (wall clock).
#include "projectors/counters.h"

namespace rw {
namespace {
struct Bucket {
  static constexpr int64_t kStride = 60;
  int64_t operator()(const CivilTime& t) const { return t.days * int64_t{86400} + t.second_of_day / 60 * 60; }
};
}  // namespace

std::unique_ptr<Projector> MakeVisitsPerMinute() {
  return std::make_unique<TimeBucketCounter<Bucket>>("visits_per_minute", "time", BucketType::kDateTime);
}

}  // namespace rw
