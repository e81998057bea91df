// The gap watch (stages/flow/gap_watch.h) without a server: holes judged final at once or
// watched, made due by a newer head or by the proof, settled by a re-read, given up by the
// wall clock (moved by the test), and remembered for reconciliation.
#include "stages/flow/gap_watch.h"

#include <gtest/gtest.h>

#include <chrono>
#include <vector>

namespace rw {
namespace {

using Clock = std::chrono::steady_clock;

// The holes of a page of (.., hi] that read up to hi (no hole trails it), each with the
// time of the event above it.
std::vector<IdRange> Judge(GapWatch& watch, std::vector<IdRange> gaps, std::vector<std::optional<int64_t>> times = {}) {
  PageHoles page = watch.StartPage();
  times.resize(gaps.size());
  page.gap_times = times;
  page.below_times.assign(gaps.size(), std::nullopt);
  page.any = true;
  const EventId hi = gaps.back().hi + 1;
  watch.JudgePage(gaps, page, hi, hi);
  return gaps;
}

Head At(EventId id, std::optional<int64_t> time = std::nullopt, std::optional<int64_t> server_us = std::nullopt) {
  return Head{id, time, time, server_us};
}

TEST(GapWatch, ByIdsAHoleIsFinalOnceFarEnoughBelowTheHead) {
  GapWatch watch(GapWatchOptions{.settle_ids = 100, .by_time = false}, /*proves=*/false);
  watch.ExtendHead(At(50));
  EXPECT_EQ(Judge(watch, {{10, 10}}), (std::vector<IdRange>{{10, 10}}));  // watched
  EXPECT_EQ(watch.counts().watched, 1u);
  EXPECT_FALSE(watch.has_due());
  watch.ExtendHead(At(200));  // 10 is now 190 ids below the head
  EXPECT_TRUE(watch.has_due());
  EXPECT_EQ(watch.ToRead(std::nullopt), (std::vector<IdRange>{{10, 10}}));
  EXPECT_EQ(watch.Settle(std::nullopt, {}), (std::vector<IdRange>{{10, 10}}));
  EXPECT_FALSE(watch.watching());
  // A hole already that far below the head is final at once: never watched.
  EXPECT_TRUE(Judge(watch, {{20, 21}}).empty());
  EXPECT_EQ(watch.counts().watched, 0u);
  EXPECT_EQ(watch.counts().peak_watched, 1u);
}

TEST(GapWatch, ByTimeTheHeadsTimeIsCappedByTheServersClock) {
  GapWatch watch(GapWatchOptions{.settle_seconds = 60}, false);
  watch.ExtendHead(At(20'000, 1000));
  // Written 100 s before the head and 20,000 ids below: final at once.
  EXPECT_TRUE(Judge(watch, {{5, 5}}, {900}).empty());
  // Written 40 s before it: watched.
  EXPECT_EQ(Judge(watch, {{7, 7}}, {960}).size(), 1u);
  // A writer whose clock runs ahead cannot age it: the head's time is taken no later than
  // the server's clock.
  watch.ExtendHead(Head{30'000, 5000, 1000, std::nullopt});
  EXPECT_FALSE(watch.has_due());
  watch.ExtendHead(At(40'000, 1100));
  EXPECT_TRUE(watch.has_due());
}

TEST(GapWatch, TheProofMakesFinalWhatWasTakenBeforeEveryOpenWriterBegan) {
  GapWatch watch(GapWatchOptions{}, /*proves=*/true);
  watch.ExtendHead(At(100, std::nullopt, 1'000'000));  // a sample: id 100 visible at 1 s
  EXPECT_TRUE(watch.awaits_proof());
  EXPECT_EQ(Judge(watch, {{40, 41}}).size(), 1u);  // not proven yet: watched
  // A writer open since 0.5 s may hold 40: nothing is proven.
  watch.Proven(2'000'000, 500'000);
  EXPECT_FALSE(watch.has_due());
  EXPECT_EQ(watch.final_below(), kBeforeFirstId);
  // Every writer began after the sample (or none is open): ids up to 100 are final.
  watch.Proven(2'000'000, 1'500'000);
  EXPECT_EQ(watch.final_below(), 100);
  EXPECT_TRUE(watch.has_due());
  EXPECT_FALSE(watch.awaits_proof());
  // A page started after the proof: its holes below 100 are final at once.
  EXPECT_TRUE(Judge(watch, {{90, 90}}).empty());
  EXPECT_EQ(Judge(watch, {{120, 120}}).size(), 1u);
}

TEST(GapWatch, ALateEventSplitsItsHole) {
  GapWatch watch(GapWatchOptions{.settle_ids = 1000, .by_time = false}, false);
  watch.ExtendHead(At(30));
  Judge(watch, {{10, 20}});
  EXPECT_EQ(watch.ToRead(GapCheck::kRecheck), (std::vector<IdRange>{{10, 20}}));
  EXPECT_TRUE(watch.ToRead(std::nullopt).empty());
  const std::vector<IdRange> settled = watch.Settle(GapCheck::kRecheck, {15});
  EXPECT_EQ(settled, (std::vector<IdRange>{{15, 15}}));
  EXPECT_EQ(watch.counts().late_events, 1u);
  EXPECT_EQ(watch.ToRead(GapCheck::kRecheck), (std::vector<IdRange>{{10, 14}, {16, 20}}));
}

// Following a commit log (the binlog): a hole watched far longer than the window, far below
// the head, is neither given up nor judged final by the fallback rule: it stays watched until
// a re-read finds its id (the binlog said it committed) or the server proves it final.
TEST(GapWatch, FollowingACommitLogNeverGivesUpAHoleByTime) {
  Clock::time_point now = Clock::now();
  GapWatch watch(GapWatchOptions{.settle_seconds = 60, .settle_ids = 1000, .by_time = false,
                                 .now = [&now] { return now; }},
                 false);
  watch.ExtendHead(At(30));
  Judge(watch, {{10, 10}, {20, 20}});
  watch.FollowCommitLog();
  now += std::chrono::hours(2);
  watch.ExtendHead(At(1'000'000));  // a million ids above: the fallback rule would settle both
  EXPECT_FALSE(watch.has_due());
  EXPECT_TRUE(watch.Settle(GapCheck::kFollow, {}).empty());
  EXPECT_EQ(watch.counts().given_up, 0u);
  EXPECT_TRUE(watch.Watching(10) && watch.Watching(20));
  EXPECT_FALSE(watch.Watching(15));
  EXPECT_EQ(watch.Settle(GapCheck::kRecheck, {10}), (std::vector<IdRange>{{10, 10}}));
  EXPECT_FALSE(watch.Watching(10));
  EXPECT_TRUE(watch.Watching(20));
}

TEST(GapWatch, FollowingGivesUpByTheWallClockAndReconciliationFindsWhatCameLate) {
  Clock::time_point now = Clock::now();
  GapWatch watch(GapWatchOptions{.settle_seconds = 60, .settle_ids = 1000, .by_time = false, .reconcile = true,
                                 .now = [&now] { return now; }},
                 false);
  watch.ExtendHead(At(30));
  Judge(watch, {{10, 10}, {20, 20}});
  EXPECT_TRUE(watch.Settle(GapCheck::kFollow, {}).empty());  // watched less than the window
  now += std::chrono::seconds(61);
  EXPECT_EQ(watch.Settle(GapCheck::kFollow, {20}), (std::vector<IdRange>{{20, 20}, {10, 10}}));
  EXPECT_EQ(watch.counts().given_up, 1u);
  EXPECT_EQ(watch.counts().reconciled_holes, 1u);
  EXPECT_EQ(watch.ToReconcile(), (std::vector<IdRange>{{10, 10}}));
  EXPECT_EQ(watch.Reconciled({10}), (std::vector<IdRange>{{10, 10}}));
  EXPECT_EQ(watch.counts().reconciled_events, 1u);
  EXPECT_EQ(watch.counts().reconciled_holes, 0u);
  // Remembered holes are forgotten after the horizon.
  Judge(watch, {{25, 25}});
  now += std::chrono::seconds(61);
  watch.Settle(GapCheck::kFollow, {});
  EXPECT_EQ(watch.counts().reconciled_holes, 1u);
  now += std::chrono::seconds(static_cast<int>(kReconcileHorizonSeconds) + 1);
  EXPECT_TRUE(watch.ToReconcile().empty());
}

TEST(GapWatch, TheFinalCheckSettlesEveryHoleForGood) {
  GapWatch watch(GapWatchOptions{.settle_ids = 1000, .by_time = false, .reconcile = true}, false);
  watch.ExtendHead(At(2000));
  Judge(watch, {{10, 10}});  // final at once: below the head by 1000 ids
  Judge(watch, {{1500, 1500}, {1600, 1601}});
  watch.ExtendHead(At(2550));  // 1500 becomes due
  EXPECT_TRUE(watch.has_due());
  const std::vector<IdRange> settled = watch.Settle(GapCheck::kFinal, {});
  EXPECT_EQ(settled, (std::vector<IdRange>{{1500, 1500}, {1600, 1601}}));
  EXPECT_FALSE(watch.watching());
  EXPECT_EQ(watch.counts().reconciled_holes, 0u);  // under the lock: final for good
}

TEST(GapWatch, BeyondTheCapTheLowestHolesAreGivenUp) {
  GapWatch watch(GapWatchOptions{.settle_ids = 1u << 30, .by_time = false}, false);
  watch.ExtendHead(At(10 * static_cast<EventId>(GapWatch::kMaxWatched)));
  std::vector<IdRange> gaps;
  for (EventId i = 0; i <= static_cast<EventId>(GapWatch::kMaxWatched); ++i) gaps.push_back({2 * i + 1, 2 * i + 1});
  Judge(watch, gaps);
  EXPECT_EQ(watch.counts().watched, GapWatch::kMaxWatched);
  EXPECT_EQ(watch.counts().given_up, 1u);
  EXPECT_EQ(watch.TakeSettled(), (std::vector<IdRange>{{1, 1}}));
}

}  // namespace
}  // namespace rw
