// Pipeline behaviour on the real server: order is kept under parallel decoding, memory
// stays bounded by batches in flight when a projector is slow, a failing projector stops
// the run cleanly, and a flush that meets a lock wait timeout is retried and commits once.
#include <fmt/core.h>
#include <gtest/gtest.h>
#include <simdjson.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <set>
#include <stdexcept>
#include <thread>

#include "pipeline/replay/replay.h"
#include "projectors/page_visit.h"
#include "stages/flow/batch.h"
#include "stages/flow/decoder.h"
#include "stages/flow/projector_runner.h"
#include "tests/test_db.h"

namespace rw {
namespace {

using namespace rw::testing;

// A projector for tests: counts per day like visits_per_day, records the ids it sees,
// and can hold its first batch (until a condition the test waits for) or throw at a given
// event id.
class ProbeProjector final : public Projector {
 public:
  struct Behaviour {
    std::function<void()> before_first_batch;
    int64_t throw_at_id = -1;
  };
  ProbeProjector(std::string name, std::vector<int64_t>* seen, Behaviour b)
      : table_{std::move(name), {{"date", ColumnType::kDate}, {"count", ColumnType::kInt64, Merge::kAdd}}},
        seen_(seen),
        behaviour_(b) {}
  std::string_view name() const override { return table_.name; }
  const TableSpec& table() const override { return table_; }
  // Every field, so that the events it accepts are exactly the reference's valid ones.
  void Bind(EventCatalog& catalog) override {
    page_.Bind(catalog, kFieldVisitedAt | kFieldUrl | kFieldIp | kFieldUserAgent);
  }
  bool reads_class(uint16_t c) const override { return page_.reads_class(c); }
  bool Usable(const EventRecord& e) const override { return page_.Usable(e); }
  Folded Apply(const EventRecords& records, std::vector<EventFailure>& /*failures*/) override {
    if (behaviour_.before_first_batch && !held_) {
      held_ = true;
      behaviour_.before_first_batch();
    }
    Folded folded;
    for (const EventRecord& e : records.events) {
      if (!page_.reads_class(e.event_class)) continue;
      ++folded.events;
      if (!page_.Usable(e)) {
        ++folded.unusable;
        continue;
      }
      if (e.id == behaviour_.throw_at_id) throw std::runtime_error("probe refuses this event");
      if (seen_) seen_->push_back(e.id);
      ++counts_[records.value(e, page_.at()).time.days];
    }
    return folded;
  }
  size_t pending_rows() const override { return counts_.size(); }
  size_t state_bytes() const override { return counts_.size() * 48; }
  void Flush(RowSink& sink) override {
    for (const auto& [day, n] : counts_) {
      sink.Date(day);
      sink.Int(n);
      sink.EndRow();
    }
    counts_.clear();
  }

 private:
  const TableSpec table_;
  std::vector<int64_t>* seen_;
  const Behaviour behaviour_;
  bool held_ = false;
  PageFields page_;
  std::map<int32_t, int64_t> counts_;
};

class PipelineTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    GeneratorOptions g;
    g.events = 40'000;
    g.bad_every = 997;
    options_ = LoadFixture("rewind_test_pipeline", g);
  }
  static ReplayOptions Options() {
    ReplayOptions o;
    o.connection = options_;
    o.progress = ProgressMode::kQuiet;
    return o;
  }
  static ConnectionOptions options_;
};
ConnectionOptions PipelineTest::options_;

TEST_F(PipelineTest, OrderIsKeptUnderParallelDecoding) {
  ReplayOptions o = Options();
  o.batch_size = 97;  // ~400 small batches: the parallel decoder finishes them out of order
  o.max_in_flight = 16;
  std::vector<int64_t> seen;
  std::vector<std::unique_ptr<Projector>> ps;
  ps.push_back(std::make_unique<ProbeProjector>("probe_order", &seen, ProbeProjector::Behaviour{}));
  ps.push_back(MakeProjector("sessions_per_day"));  // sessions_per_day: order-dependent
  std::atomic<bool> stop{false};
  ReplaySummary sum = Replay(SpecOf(o, RunSpec::Selection::kNone), std::move(ps), stop);
  ASSERT_TRUE(sum.status.ok()) << sum.status.message();

  auto c = Connect(options_);
  ASSERT_TRUE(c);
  std::vector<int64_t> expected;
  ASSERT_TRUE(c->Stream("SELECT id FROM ref_visits WHERE url_ok AND ip_ok AND ua_ok ORDER BY id",
                        [&](char** v, unsigned long*) {
                 expected.push_back(std::stoll(v[0]));
               }).ok());
  ASSERT_EQ(seen.size(), expected.size());
  for (size_t i = 0; i < seen.size(); ++i) ASSERT_EQ(seen[i], expected[i]) << "at " << i;  // in id order
  EXPECT_EQ(TableAsMap(*c, "sessions_per_day"), ReferenceSessions(*c));
}

TEST_F(PipelineTest, MemoryStaysBoundedWithASlowProjector) {
  ReplayOptions o = Options();
  o.batch_size = 500;
  o.max_in_flight = 4;
  o.read_connections = 2;
  std::atomic<bool> stop{false}, done{false};
  int64_t peak_live = 0;
  const int64_t before = Batch::live_batches().load();
  // The slow projector holds its first batch until max_in_flight + 1 batches are alive:
  // the reader has gone on while it holds it, and since at most read_connections - 1 of
  // them are read ahead outside the graph's places (stages/flow/reader.h), at least
  // max_in_flight places are taken: the assertions below hold by construction, not by
  // timing, and a reader that ignored the bound would run on meanwhile. It gives up after
  // a minute (the test fails).
  const int64_t hold_until = static_cast<int64_t>(o.max_in_flight) + 1;
  bool hold_timed_out = false;
  const auto hold = [&] {
    const auto limit = std::chrono::steady_clock::now() + std::chrono::minutes(1);
    while (Batch::live_batches().load() - before < hold_until) {
      if (std::chrono::steady_clock::now() > limit) {
        hold_timed_out = true;
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));  // a poll's pace, not a deadline
    }
  };
  std::vector<std::unique_ptr<Projector>> ps;
  ps.push_back(std::make_unique<ProbeProjector>("probe_slow", nullptr, ProbeProjector::Behaviour{hold}));
  ps.push_back(MakeProjector("visits_per_day"));  // a fast one beside it
  std::thread watcher([&] {
    while (!done.load()) {
      peak_live = std::max(peak_live, Batch::live_batches().load() - before);
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
  });
  ReplaySummary sum = Replay(SpecOf(o, RunSpec::Selection::kNone), std::move(ps), stop);
  done = true;
  watcher.join();
  ASSERT_TRUE(sum.status.ok()) << sum.status.message();
  ASSERT_FALSE(hold_timed_out) << "the reader never had " << hold_until << " batches alive";
  EXPECT_EQ(sum.events_read, 40'000u);
  // 80 batches went through; at most max_in_flight + 1 were alive at once in the pipeline
  // (read and not yet freed, the one being read included), and one more page is read on
  // the second connection meanwhile.
  EXPECT_LE(sum.peak_in_flight, 5);
  EXPECT_GE(sum.peak_in_flight, 2);  // the slow projector really did hold batches back
  EXPECT_LE(peak_live, 6);
  EXPECT_EQ(Batch::live_batches().load(), before);  // and every batch was freed
}

TEST_F(PipelineTest, AFlushThatWaitsForALockIsRetriedAndCommitsOnce) {
  auto c = Connect(options_);
  ASSERT_TRUE(c);
  ASSERT_TRUE(c->Execute("DROP TABLE IF EXISTS lock_probe").ok());
  ASSERT_TRUE(c->Execute("CREATE TABLE lock_probe (`date` DATE NOT NULL PRIMARY KEY, "
                         "`count` BIGINT NOT NULL)").ok());
  ASSERT_TRUE(checkpoint_store::Ensure(*c).ok());
  Checkpoint cp;
  cp.projector = cp.target_table = cp.live_table = "lock_probe";
  cp.status = CheckpointStatus::kBuilding;
  cp.run_id = "lock-probe";
  ASSERT_TRUE(checkpoint_store::Start(*c, cp).ok());

  Result<std::unique_ptr<Connection>> rc = Connection::Open(options_);
  ASSERT_TRUE(rc.ok()) << rc.status().message();
  ASSERT_TRUE((*rc)->Execute("SET SESSION innodb_lock_wait_timeout = 1").ok());  // fail fast
  const unsigned long flusher = (*rc)->thread_id();
  RunnerOptions ro;
  ro.target_table = "lock_probe";
  auto probe = std::make_unique<ProbeProjector>("lock_probe", nullptr, ProbeProjector::Behaviour{});
  EventCatalog catalog;
  probe->Bind(catalog);
  auto runner = ProjectorRunner::Make(std::move(probe), std::move(*rc), ro);
  ASSERT_TRUE(runner.ok()) << runner.status().message();
  Batch batch;
  batch.last_id = 3;
  for (int64_t id = 1; id <= 3; ++id) {  // on two days
    const std::string payload = fmt::format(
        R"({{"url":"/","visitedAt":"2022-01-0{}T00:00:00Z","ip":"1","userAgent":"u"}})", 1 + id % 2);
    batch.raw.push_back(RawEvent{id, static_cast<uint32_t>(batch.payloads.size()),
                                 static_cast<uint32_t>(payload.size())});
    batch.payloads += payload;
  }
  batch.payloads.append(simdjson::SIMDJSON_PADDING, '\0');
  Decoder(catalog).Decode(batch);
  ASSERT_TRUE(batch.failures.empty()) << batch.failures[0].reason;
  ASSERT_TRUE((*runner)->Consume(batch).ok());

  // Another session holds the checkpoint row, as a long transaction would: the flush's
  // rows go in, its checkpoint update times out after 1 s, the transaction is rolled back
  // and retried after a backoff. The holder lets the row go once the server shows the
  // flush waiting for it in a second transaction (a new trx_id in LOCK WAIT): the first
  // attempt timed out and was retried, whatever the machine's speed. It lets go at once if
  // the flush returns first (a flush that does not retry), and after two minutes at most.
  auto holder = Connect(options_);
  ASSERT_TRUE(holder);
  ASSERT_TRUE(holder->Execute("START TRANSACTION").ok());
  ASSERT_TRUE(holder->Query("SELECT * FROM rewind_checkpoints WHERE projector = 'lock_probe' FOR UPDATE").ok());
  auto observer = Connect(options_);
  ASSERT_TRUE(observer);
  std::atomic<bool> flushed{false};
  std::set<std::string> waiting_attempts;  // the flush's transactions seen waiting for the row
  std::thread release([&] {
    const auto limit = std::chrono::steady_clock::now() + std::chrono::minutes(2);
    while (!flushed.load() && waiting_attempts.size() < 2 &&
           std::chrono::steady_clock::now() < limit) {
      Result<Rows> trx = observer->Query(fmt::format(
          "SELECT trx_id FROM information_schema.INNODB_TRX WHERE trx_mysql_thread_id = {} "
          "AND trx_state = 'LOCK WAIT'", flusher));
      if (trx.ok()) {
        for (const auto& row : trx->rows) waiting_attempts.insert(row[0].value_or(""));
      }
      // A poll's pace, not a deadline: the server refreshes INNODB_TRX only when it has not
      // been read for 0.1 s, so a faster poll would keep reading the same old picture.
      std::this_thread::sleep_for(std::chrono::milliseconds(150));
    }
    (void)holder->Execute("COMMIT");
  });
  const Status s = (*runner)->Flush();
  flushed = true;
  release.join();
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_GE((*runner)->stats().retries, 1u);
  // Committed exactly once: the timed-out attempts left nothing behind.
  EXPECT_EQ(Count(*c, "SELECT COUNT(*) FROM lock_probe"), 2);
  EXPECT_EQ(Count(*c, "SELECT SUM(`count`) FROM lock_probe"), 3);
  EXPECT_EQ(Count(*c, "SELECT last_event_id FROM rewind_checkpoints WHERE projector = 'lock_probe'"), 3);
  EXPECT_EQ(Count(*c, "SELECT events_applied FROM rewind_checkpoints WHERE projector = 'lock_probe'"), 3);
  ASSERT_TRUE(c->Execute("DROP TABLE lock_probe").ok());
  ASSERT_TRUE(checkpoint_store::Delete(*c, "lock_probe", "lock_probe").ok());
}

TEST_F(PipelineTest, AFailingProjectorStopsTheRunCleanly) {
  auto c = Connect(options_);
  ASSERT_TRUE(c);
  {  // A complete live visits_per_day to protect.
    ReplayOptions o = Options();
    o.projectors = {"visits_per_day"};
    std::atomic<bool> stop{false};
    ASSERT_TRUE(ReplaySelected(o, stop).status.ok());
  }
  const int64_t live_total = Count(*c, "SELECT SUM(`count`) FROM visits_per_day");
  const int64_t bad_id = Count(*c, "SELECT id FROM ref_visits ORDER BY id LIMIT 1 OFFSET 20000");

  ReplayOptions o = Options();
  o.batch_size = 1000;
  std::vector<std::unique_ptr<Projector>> ps;
  ps.push_back(MakeProjector("visits_per_day"));  // visits_per_day
  ps.push_back(std::make_unique<ProbeProjector>("probe_fail", nullptr, ProbeProjector::Behaviour{{}, bad_id}));
  std::atomic<bool> stop{false};
  ReplaySummary sum = Replay(SpecOf(o, RunSpec::Selection::kNone), std::move(ps), stop);
  ASSERT_FALSE(sum.status.ok());
  EXPECT_FALSE(sum.swapped);
  const std::string& m = sum.status.message();
  EXPECT_NE(m.find("probe_fail threw"), std::string::npos) << m;
  EXPECT_NE(m.find("probe refuses this event"), std::string::npos) << m;
  // The message names the batch holding the event.
  const size_t range = m.find("events after id ");
  ASSERT_NE(range, std::string::npos) << m;
  const int64_t after = std::stoll(m.substr(range + 16));
  const int64_t to = std::stoll(m.substr(m.find("up to ", range) + 6));
  EXPECT_LT(after, bad_id);
  EXPECT_GE(to, bad_id);
  // The live table is as it was; the half-built shadow stays marked as building.
  EXPECT_EQ(Count(*c, "SELECT SUM(`count`) FROM visits_per_day"), live_total);
  EXPECT_EQ(Count(*c, "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() "
                      "AND TABLE_NAME = 'probe_fail'"), 0);
  EXPECT_EQ(Count(*c, "SELECT COUNT(*) FROM rewind_checkpoints WHERE projector = 'visits_per_day' "
                      "AND status = 'building'"), 1);
  EXPECT_EQ(Batch::live_batches().load(), 0);
}

}  // namespace
}  // namespace rw
