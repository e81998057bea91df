// The replay graph, the projector runners and the gap handling, run without a server: an
// in-memory event source (memory_source.h) with holes in its ids, late commits, a final
// check and a reconciliation, against the same events read densely in one pass.
#include <fmt/core.h>
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "pipeline/engine/graph.h"
#include "pipeline/engine/read_models.h"
#include "stages/flow/projector_runner.h"
#include "tests/memory_source.h"
#include "tests/text_sink.h"

namespace rw {
namespace {

using testing::MemorySource;

// Event `id`: a page visit by one of five visitors, two minutes apart, over two days.
std::string Visit(EventId id) {
  const int n = static_cast<int>(id);
  return fmt::format(R"({{"url":"/p/{}","visitedAt":"2024-01-{:02d}T{:02d}:{:02d}:00Z","ip":"10.0.0.{}","userAgent":"ua"}})",
                     n % 7, 19 + n / 30, (n / 30) * 3 % 24, (n * 2) % 60, n % 5);
}

// Two read models, one of them order-dependent (sessions), each in an in-memory runner
// (ProjectorRunner::InMemory: it folds batches and writes nothing), fed by the graph.
class Replay {
 public:
  Replay() {
    std::vector<std::unique_ptr<Projector>> projectors;
    for (const ProjectorInfo& info : AllProjectors()) {
      if (info.name == "visits_per_day" || info.name == "sessions_per_day") projectors.push_back(info.make());
    }
    plan_ = PlanReads(EventTableOptions{}, projectors);
    decoder_ = std::make_unique<Decoder>(plan_.catalog);
    for (auto& p : projectors) {
      names_.emplace_back(p->name());
      ProjectorRunner* runner = runners_.emplace_back(ProjectorRunner::InMemory(std::move(p))).get();
      branches_.push_back(Branch{names_.back(), [runner, this](const Batch& b) {
                                   events_ += runner == runners_.front().get() ? b.rows_read : 0;
                                   Result<bool> folded = runner->Fold(b);
                                   return folded.ok() ? Status::Ok() : folded.status();
                                 }});
    }
  }

  // One pass of the graph over what the source has queued, as Build::QuietPass runs it.
  Status Pass(EventSource& source) {
    Progress quiet(ProgressMode::kQuiet, 0, 0, names_);
    const std::atomic<bool> run_to_end{false};
    return RunGraph(source, *decoder_, branches_, quiet, GraphOptions{.max_in_flight = 2}, run_to_end).status;
  }
  // Reads on as Build::ReadOn does: the head extended, the proof, the check, a pass.
  Status ReadOn(EventSource& source, std::optional<GapCheck> check) {
    Result<Head> head = source.ReadHead();
    if (!head.ok()) return head.status();
    source.ExtendHead(*head);
    if (Status s = source.ProveByOpenTransactions(); !s.ok()) return s;
    if (check) source.QueueGapCheck(*check);
    return Pass(source);
  }

  // What each read model would write now.
  std::vector<std::vector<std::string>> Rows() {
    std::vector<std::vector<std::string>> out;
    for (auto& r : runners_) {
      testing::TextSink sink;
      r->FlushInto(sink);
      out.push_back(sink.rows);
    }
    return out;
  }
  ProjectorRunner& runner(size_t i) { return *runners_[i]; }
  uint64_t events() const { return events_; }

 private:
  ReadPlan plan_;
  std::unique_ptr<Decoder> decoder_;
  std::vector<std::string> names_;
  std::vector<std::unique_ptr<ProjectorRunner>> runners_;
  std::vector<Branch> branches_;
  uint64_t events_ = 0;
};

constexpr EventId kLast = 60;

// Every event 1..kLast but 13 (never committed), read in one pass and 13 settled by a
// final check.
std::vector<std::vector<std::string>> Dense() {
  MemorySource source(1000);
  for (EventId id = 1; id <= kLast; ++id) {
    if (id != 13) source.Append(id, Visit(id));
  }
  Replay replay;
  EXPECT_TRUE(replay.ReadOn(source, std::nullopt).ok());
  EXPECT_TRUE(replay.ReadOn(source, GapCheck::kFinal).ok());
  EXPECT_EQ(replay.events(), static_cast<uint64_t>(kLast - 1));
  EXPECT_EQ(source.gap_counts().watched, 0u);
  return replay.Rows();
}

TEST(MemorySource, LateCommitsEndAsIfReadInOrder) {
  MemorySource source(4);
  for (EventId id = 1; id <= kLast; ++id) {
    if (id == 7 || id == 30) {
      source.Reserve(id);  // open while the rebuild reads past it
    } else if (id != 13) {
      source.Append(id, Visit(id));
    }
  }
  Replay replay;
  ASSERT_TRUE(replay.ReadOn(source, std::nullopt).ok());
  EXPECT_EQ(source.position(), kLast);
  EXPECT_EQ(source.gap_counts().watched, 3u);  // 7, 13, 30
  EXPECT_EQ(source.next_sequence(), 15u);       // 57 events, 4 a batch

  // 7 commits; 30 is still open, and it began before every head was read, so the proof
  // can show nothing final: the check reads every hole again and finds 7 (a late event).
  source.Commit(7, Visit(7));
  ASSERT_TRUE(replay.ReadOn(source, GapCheck::kRecheck).ok());
  EXPECT_EQ(source.gap_counts().late_events, 1u);
  EXPECT_EQ(source.gap_counts().watched, 2u);  // 13 and 30
  EXPECT_EQ(replay.runner(0).stats().late_applied + replay.runner(1).stats().late_applied, 2u);

  // 30 commits, and the cut-over's final check runs (no insert is open under its lock):
  // 30 is found, 13 is final.
  source.Commit(30, Visit(30));
  ASSERT_TRUE(replay.ReadOn(source, GapCheck::kFinal).ok());
  EXPECT_EQ(source.gap_counts().late_events, 2u);
  EXPECT_EQ(source.gap_counts().watched, 0u);
  EXPECT_EQ(replay.events(), static_cast<uint64_t>(kLast - 1));
  // Sessions are not commutative: the order-dependent read model held the events above
  // the open holes and applied them in id order once the holes were found.
  EXPECT_EQ(replay.Rows(), Dense());
}

TEST(MemorySource, FollowingReadsAppendedEventsInLaterPasses) {
  MemorySource source(8);
  for (EventId id = 1; id <= 20; ++id) source.Append(id, Visit(id));
  Replay replay;
  ASSERT_TRUE(replay.ReadOn(source, std::nullopt).ok());
  EXPECT_EQ(source.head(), 20);
  for (EventId id = 21; id <= kLast; ++id) {
    source.Append(id, Visit(id));
    if (id % 10 == 0) {
      ASSERT_TRUE(replay.ReadOn(source, GapCheck::kFollow).ok());  // a poll
    }
  }
  EXPECT_EQ(source.head(), kLast);
  EXPECT_EQ(replay.events(), static_cast<uint64_t>(kLast));
  EXPECT_EQ(source.gap_counts().given_up, 0u);
}

TEST(MemorySource, ReconciliationFindsAnEventInAHoleGivenUp) {
  MemorySource source(4);
  for (EventId id = 1; id <= kLast; ++id) {
    if (id == 30) {
      source.Reserve(id);
    } else {
      source.Append(id, Visit(id));
    }
  }
  Replay replay;
  ASSERT_TRUE(replay.ReadOn(source, std::nullopt).ok());
  source.Elapse(61);
  ASSERT_TRUE(replay.ReadOn(source, GapCheck::kFollow).ok());  // watched too long: given up
  EXPECT_EQ(source.gap_counts().given_up, 1u);
  EXPECT_EQ(source.gap_counts().reconciled_holes, 1u);
  source.Commit(30, Visit(30));  // the judgement was wrong: it commits after all
  source.QueueReconcile();
  ASSERT_TRUE(replay.Pass(source).ok());
  EXPECT_EQ(source.gap_counts().reconciled_events, 1u);
  EXPECT_EQ(source.gap_counts().reconciled_holes, 0u);
  // Each read model applies it (it takes events out of order) or counts it as missed.
  for (size_t i = 0; i < 2; ++i) {
    const RunnerStats& st = replay.runner(i).stats();
    EXPECT_EQ(st.reconciled_applied + st.missed_events, 1u) << i;
  }
}

}  // namespace
}  // namespace rw
