// The progress line: percent of the id range, counts, the slowest read model, the phase.
#include "stages/control/progress.h"

#include <gtest/gtest.h>

namespace rw {
namespace {

TEST(Progress, LineReportsPercentEventsAndTheSlowestReadModel) {
  Progress p(ProgressMode::kQuiet, 1000, 3000, {"visits_per_day", "sessions_per_day"});
  p.Done(500, 1500);
  p.Position(0, 2000);
  p.Position(1, 1500);
  const std::string line = p.Line(/*bar=*/true);
  EXPECT_NE(line.find(" 25.0%"), std::string::npos) << line;
  EXPECT_NE(line.find("500 events"), std::string::npos) << line;
  EXPECT_NE(line.find("slowest: sessions_per_day at id 1,500"), std::string::npos) << line;
  EXPECT_NE(line.find("[######.................."), std::string::npos) << line;
  EXPECT_EQ(p.events_done(), 500u);
}

TEST(Progress, ShowsThePhaseOnceReadingIsOver) {
  Progress p(ProgressMode::kQuiet, 0, 100, {"visits_per_day"});
  p.Done(100, 100);
  p.SetPhase("all events read; writing the read models");
  const std::string line = p.Line(false);
  EXPECT_NE(line.find("100.0%"), std::string::npos) << line;
  EXPECT_NE(line.find("writing the read models"), std::string::npos) << line;
  EXPECT_EQ(line.find("slowest"), std::string::npos) << line;
}

TEST(Progress, ThousandsSeparators) {
  EXPECT_EQ(WithThousands(0), "0");
  EXPECT_EQ(WithThousands(999), "999");
  EXPECT_EQ(WithThousands(1000), "1,000");
  EXPECT_EQ(WithThousands(11000000), "11,000,000");
}

}  // namespace
}  // namespace rw
