// The list of projectors. Adding a read model: one file in projectors/, one line here.
#include "projectors/projector.h"

namespace rw {

std::unique_ptr<Projector> MakeVisitsPerMinute();
std::unique_ptr<Projector> MakeVisitsPerHour();
std::unique_ptr<Projector> MakeVisitsPerDay();
std::unique_ptr<Projector> MakeVisitsPerMonth();
std::unique_ptr<Projector> MakeVisitsPerYear();
std::unique_ptr<Projector> MakeVisitsPerPostPerDay();
std::unique_ptr<Projector> MakeVisitsPerPostPerWeek();
std::unique_ptr<Projector> MakeSessionsPerDay();

const std::vector<ProjectorInfo>& AllProjectors() {
  static const std::vector<ProjectorInfo> all = {
      {"visits_per_minute", "visits per minute of visitedAt", MakeVisitsPerMinute, ""},
      {"visits_per_hour", "visits per hour of visitedAt", MakeVisitsPerHour, ""},
      {"visits_per_day", "visits per day of visitedAt", MakeVisitsPerDay, ""},
      {"visits_per_month", "visits per month (first day of the month)", MakeVisitsPerMonth, ""},
      {"visits_per_year", "visits per year (January 1st)", MakeVisitsPerYear, ""},
      {"visits_per_post_per_day", "visits per url per day", MakeVisitsPerPostPerDay, ""},
      {"visits_per_post_per_week", "visits per url per ISO week (its Monday)",
       MakeVisitsPerPostPerWeek, ""},
      {"sessions_per_day", "sessions started per day (order-dependent)", MakeSessionsPerDay, ""},
  };
  return all;
}

}  // namespace rw
