// Event tables whose ids have holes, as production tables do (issue 22): a Galera node's
// step of 2, rolled-back inserts and deleted ranges. Each test runs against the real
// MariaDB on every shape of ProductionIdShapes() (and dense ids), checks the read models
// against the server's own computation, and checks the rules for when a hole is final
// (stages/flow/reader.h, "Gaps"): proven by the server's open transactions (nothing is left
// for the cut-over's lock), or, without the PROCESS grant, by the fallback rule (only the
// holes it says are watched and read again under the cut-over's lock).
#include <fmt/core.h>
#include <gtest/gtest.h>

#include <csignal>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "pipeline/replay/replay.h"
#include "tests/rewind_process.h"
#include "tests/test_db.h"

namespace rw {
namespace {

using namespace rw::testing;

constexpr const char* kClass = "App\\Analytics\\PageVisited";

std::string Payload(const std::string& url, const std::string& at) {
  return fmt::format(R"({{"uuid":"u","url":"{}","visitedAt":"{}","ip":"10.0.0.9","userAgent":"ua","raw":"r","uri":"{}"}})",
                     url, at, url);
}

// An application connection that inserts with the table's step (a Galera node's
// auto_increment_increment), as the events already there were.
std::unique_ptr<Connection> Application(const ConnectionOptions& o, const IdShape& shape) {
  auto app = Connect(o);
  if (app && shape.step > 1) {
    EXPECT_TRUE(app->Execute(fmt::format("SET SESSION auto_increment_increment = {}", shape.step)).ok());
  }
  return app;
}

// `clock`: the application server's clock, as SQL (one whose clock runs ahead, or slow).
Status Insert(Connection& c, const std::string& url, const std::string& at = "2024-05-06T07:08:09+00:00",
              const std::string& clock = "NOW()") {
  return c.Execute(fmt::format("INSERT INTO stored_events (uuid, eventClass, payload, createdAt) VALUES "
                               "('u', {}, {}, {})",
                               c.Quote(kClass), c.Quote(Payload(url, at)), clock));
}

// Two application servers whose clocks disagree with the server's, one 120 s slow and one
// 90 s ahead, each commit `n` events (above whatever hole an open transaction holds).
bool SkewedWritersCommitAbove(const ConnectionOptions& o, const IdShape& shape, int n) {
  auto ahead = Application(o, shape), slow = Application(o, shape);
  for (int i = 0; i < n; ++i) {
    if (!Insert(*slow, "/slow-clock", "2024-05-06T10:01:00+00:00", "UTC_TIMESTAMP() - INTERVAL 120 SECOND").ok() ||
        !Insert(*ahead, "/fast-clock", "2024-05-06T10:02:00+00:00", "UTC_TIMESTAMP() + INTERVAL 90 SECOND").ok()) {
      return false;
    }
  }
  return true;
}

// `rewind replay --all`, in this process, on `o` with `tweak` applied to the options.
ReplaySummary ReplayAll(const ConnectionOptions& o, const std::function<void(ReplayOptions&)>& tweak = {}) {
  ReplayOptions ro;
  ro.connection = o;
  ro.all = true;
  ro.progress = ProgressMode::kQuiet;
  if (tweak) tweak(ro);
  const std::atomic<bool> stop{false};
  return ReplaySelected(ro, stop);
}

std::vector<IdShape> EveryShape() {
  std::vector<IdShape> shapes = {IdShape{}};
  for (const IdShape& s : ProductionIdShapes()) shapes.push_back(s);
  return shapes;
}

}  // namespace
}  // namespace rw

namespace rw::testing {
void PrintTo(const IdShape& shape, std::ostream* os) { *os << shape.name; }
}  // namespace rw::testing

namespace rw {
namespace {

using namespace rw::testing;

class IdShapes : public ::testing::TestWithParam<IdShape> {
 protected:
  std::string Db(const std::string& what) const { return std::string("rewind_test_ids_") + what + "_" + GetParam().name; }
};

// History, where the server shows its open transactions: every read model exact, finality
// proven by the server before the first page (no writer is open), so no hole is watched
// and none is read again under the lock, whatever the number of holes.
TEST_P(IdShapes, RebuildingHistoryIsExactAndProvenByTheServer) {
  const IdShape& shape = GetParam();
  ConnectionOptions o = Store(Db("history"), 20'000, 500, shape);
  auto c = Connect(o);
  const int64_t holes = Count(*c, "SELECT COUNT(*) FROM (SELECT id, LAG(id) OVER (ORDER BY id) AS prev FROM "
                                  "stored_events) x WHERE id > prev + 1");
  if (shape.step > 1) {
    ASSERT_GT(holes, 5'000);
  } else if (shape.holes > 0) {
    ASSERT_GT(holes, 300);
  }
  const ReplaySummary sum = ReplayAll(o, [](ReplayOptions& ro) { ro.batch_size = 5'000; });
  ASSERT_TRUE(sum.swapped) << sum.status.message();
  EXPECT_EQ(sum.ExitCode(), 3);  // the bad payloads, recorded
  EXPECT_EQ(sum.finality, "server");
  EXPECT_EQ(sum.holes_watched_peak, 0u);
  EXPECT_EQ(sum.holes_read_under_lock, 0u);
  EXPECT_EQ(sum.gaps_given_up, 0u);
  // Nothing is left watched in the checkpoints once the cut-over made every hole final.
  EXPECT_EQ(Count(*c, "SELECT COUNT(*) FROM rewind_checkpoints WHERE gaps <> ''"), 0);
  ExpectEveryReadModelMatchesTheEvents(*c);
}

// The holes the fallback rule watches, computed by the server: ranges of missing ids whose
// upper neighbours' time (the earlier of the two, but never earlier than the event below)
// is less than `settle` seconds before the head's (taken no later than the server's clock),
// or that lie less than 10,000 ids below the head.
int64_t HolesTheFallbackWatches(Connection& c, int settle) {
  return Count(c, fmt::format(
                      "SELECT COUNT(*) FROM (SELECT id, LAG(id) OVER (ORDER BY id) AS prev, GREATEST(COALESCE("
                      "LAG(createdAt) OVER (ORDER BY id), createdAt), LEAST(createdAt, COALESCE(LEAD(createdAt) "
                      "OVER (ORDER BY id), createdAt))) AS t FROM stored_events) x, (SELECT id AS head_id, "
                      "LEAST(createdAt, UTC_TIMESTAMP()) AS head_t FROM stored_events ORDER BY id DESC LIMIT 1) h "
                      "WHERE prev IS NOT NULL AND id > prev + 1 AND (t > head_t - INTERVAL {} SECOND OR id - 1 > "
                      "head_id - 10000)",
                      settle));
}

// History where the server does not show its open transactions (no PROCESS): the holes
// watched are exactly those the fallback rule says (plus or minus one range a page boundary
// splits off per batch, whose lower neighbour is in the page before), and only they are
// read again under the lock.
TEST_P(IdShapes, WithoutProcessHistoryWatchesOnlyTheHolesTheFallbackRuleSays) {
  const IdShape& shape = GetParam();
  ConnectionOptions o = Store(Db("history_np"), 20'000, 500, shape);
  auto c = Connect(o);
  const int64_t watched = HolesTheFallbackWatches(*c, 60);
  const ConnectionOptions weak = UserWith(*c, o, std::string("rw_hnp_") + shape.name,
                                          "SELECT, INSERT, UPDATE, DELETE, CREATE, DROP, ALTER, LOCK TABLES");
  const ReplaySummary sum = ReplayAll(weak, [](ReplayOptions& ro) { ro.batch_size = 5'000; });
  ASSERT_TRUE(sum.swapped) << sum.status.message();
  EXPECT_EQ(sum.ExitCode(), 3);
  EXPECT_EQ(sum.finality, "fallback");
  const int64_t pages = 20'000 / 5'000 + 2;
  EXPECT_GE(static_cast<int64_t>(sum.holes_watched_peak), watched - pages);
  EXPECT_LE(static_cast<int64_t>(sum.holes_watched_peak), watched + pages);
  EXPECT_LE(sum.holes_read_under_lock, sum.holes_watched_peak);
  EXPECT_EQ(Count(*c, "SELECT COUNT(*) FROM rewind_checkpoints WHERE gaps <> ''"), 0);
  ExpectEveryReadModelMatchesTheEvents(*c);
}

// A table without the time column, where the server does not show its open transactions,
// is judged by ids: holes further than --settle-ids below the head are final at once, the
// rest watched.
TEST_P(IdShapes, ATableWithoutTheTimeColumnIsJudgedByIds) {
  const IdShape& shape = GetParam();
  ConnectionOptions o = Store(Db("no_time"), 8'000, 0, shape);
  auto c = Connect(o);
  ASSERT_TRUE(c->Execute("ALTER TABLE stored_events CHANGE createdAt written_at DATETIME NOT NULL").ok());
  const int64_t head = Count(*c, "SELECT MAX(id) FROM stored_events");
  const int64_t near_head = Count(*c, fmt::format("SELECT COUNT(*) FROM (SELECT id, LAG(id) OVER (ORDER BY id) "
                                                  "AS prev FROM stored_events) x WHERE id > prev + 1 AND "
                                                  "id - 1 > {} - 1000",
                                                  head));
  const ConnectionOptions weak = UserWith(*c, o, std::string("rw_nt_") + shape.name,
                                          "SELECT, INSERT, UPDATE, DELETE, CREATE, DROP, ALTER, LOCK TABLES");
  const ReplaySummary sum = ReplayAll(weak, [](ReplayOptions& ro) { ro.settle_ids = 1'000; });
  ASSERT_TRUE(sum.swapped) << sum.status.message();
  EXPECT_GE(static_cast<int64_t>(sum.holes_watched_peak), near_head);
  EXPECT_LE(static_cast<int64_t>(sum.holes_watched_peak), near_head + 2);
  ExpectEveryReadModelMatchesTheEvents(*c);
}

// Without the PROCESS grant rewind cannot see the open transactions: the holes near the
// head (and only they) are read again under the cut-over's lock, which makes them final.
TEST_P(IdShapes, WithoutProcessTheHolesNearTheHeadAreSettledUnderTheLock) {
  const IdShape& shape = GetParam();
  ConnectionOptions o = Store(Db("no_process"), 8'000, 0, shape);
  auto c = Connect(o);
  // The application's latest events, written now, with holes between them.
  for (int i = 0; i < 20; ++i) {
    ASSERT_TRUE(c->Execute(fmt::format("INSERT INTO stored_events (id, uuid, eventClass, payload, createdAt) SELECT "
                                       "MAX(id) + 3, 'u', {}, {}, NOW() FROM stored_events",
                                       c->Quote(kClass), c->Quote(Payload("/recent", "2024-05-06T07:08:09+00:00"))))
                    .ok());
  }
  const int64_t near_head = HolesTheFallbackWatches(*c, 60);
  ASSERT_GE(near_head, 19);
  const ConnectionOptions weak = UserWith(*c, o, std::string("rw_np_") + shape.name,
                                          "SELECT, INSERT, UPDATE, DELETE, CREATE, DROP, ALTER, LOCK TABLES");
  const ReplaySummary sum = ReplayAll(weak, [](ReplayOptions& ro) { ro.batch_size = 2'000; });
  ASSERT_TRUE(sum.swapped) << sum.status.message();
  EXPECT_GE(static_cast<int64_t>(sum.holes_read_under_lock), near_head - (8'000 / 2'000 + 2));
  EXPECT_LE(static_cast<int64_t>(sum.holes_read_under_lock), near_head + 8'000 / 2'000 + 2);
  ExpectEveryReadModelMatchesTheEvents(*c);
}

// The application appends while the rebuild runs, one of its transactions still open (a
// hole near the head) at the cut-over: the swapped tables hold every event once.
TEST_P(IdShapes, ALateCommitNearTheHeadReachesTheSwappedTablesOnce) {
  const IdShape& shape = GetParam();
  ConnectionOptions o = Store(Db("late"), 10'000, 0, shape);
  auto c = Connect(o);
  const std::string file = PauseFile(std::string("late_") + shape.name);
  std::vector<std::string> env = Env(o);
  env.push_back("REWIND_FAULT=before-catch-up@" + file);
  Subprocess run(Rewind({"replay", "--all", "--progress", "plain", "--cutover-timeout", "120"}), env);
  ASSERT_TRUE(run.WaitFor("fault point before-catch-up reached", 120)) << run.err();
  auto app = Application(o, shape), other = Application(o, shape);
  for (int i = 0; i < 50; ++i) ASSERT_TRUE(Insert(*other, "/appended").ok());
  ASSERT_TRUE(app->Execute("START TRANSACTION").ok());
  ASSERT_TRUE(Insert(*app, "/late-commit").ok());
  ASSERT_TRUE(Insert(*other, "/after-the-late-one").ok());
  Release(file);
  ASSERT_TRUE(run.WaitFor("kept the lock waiting", 120)) << run.err();
  ASSERT_TRUE(app->Execute("COMMIT").ok());
  EXPECT_EQ(run.Wait(), 0) << run.err();
  ExpectEveryReadModelMatchesTheEvents(*c);
  EXPECT_EQ(Count(*c, "SELECT `count` FROM visits_per_post_per_day WHERE uri = '/late-commit'"), 1);
  EXPECT_EQ(Count(*c, "SELECT SUM(`count`) FROM visits_per_post_per_day WHERE uri = '/appended'"), 50);
}

// Follow on ids with holes: a late commit near the head is applied once, and every read
// model equals the events; sessions_per_day too, although the late event changes how
// the later one counts (in id order: two sessions; out of order it would be one), because
// an order-dependent read model holds what is above an open hole until it settles.
TEST_P(IdShapes, FollowAppliesALateCommitOnce) {
  const IdShape& shape = GetParam();
  ConnectionOptions o = Store(Db("follow"), 5'000, 0, shape);
  auto c = Connect(o);
  ReplayOptions ro;
  ro.connection = o;
  ro.all = true;
  Follower follower(ro);
  ASSERT_TRUE(follower.following());
  auto app = Application(o, shape), other = Application(o, shape);
  ASSERT_TRUE(app->Execute("START TRANSACTION").ok());
  ASSERT_TRUE(Insert(*app, "/slow-transaction", "2024-05-06T10:00:00+00:00").ok());
  ASSERT_TRUE(Insert(*other, "/fast-one", "2024-05-06T10:45:00+00:00").ok());
  const int64_t head = Count(*c, "SELECT MAX(id) FROM stored_events");
  const std::string h = std::to_string(head);
  // The counters applied the later event; sessions_per_day holds it, its checkpoint below.
  EXPECT_TRUE(WaitUntil(*c, "SELECT MIN(last_event_id) >= " + h + " FROM rewind_checkpoints WHERE projector <> "
                            "'sessions_per_day'", 1));
  EXPECT_EQ(Count(*c, "SELECT last_event_id < " + h + " FROM rewind_checkpoints WHERE projector = 'sessions_per_day'"), 1);
  ASSERT_TRUE(app->Execute("COMMIT").ok());
  EXPECT_TRUE(WaitUntil(*c, "SELECT MIN(late_events) FROM rewind_checkpoints", 1));
  EXPECT_TRUE(WaitUntil(*c, "SELECT MIN(last_event_id) >= " + h + " FROM rewind_checkpoints", 1));
  const ReplaySummary& sum = follower.Stop();
  ASSERT_TRUE(sum.status.ok()) << sum.status.message();
  EXPECT_EQ(sum.late_events, 1u);
  ExpectEveryReadModelMatchesTheEvents(*c);
  EXPECT_EQ(Count(*c, "SELECT `count` FROM visits_per_post_per_day WHERE uri = '/slow-transaction'"), 1);
  EXPECT_EQ(RunRewind({"status", "--json"}, Env(o)).code, 0);
}

// Follow with application servers whose clocks disagree (issue 37): while one transaction
// holds an id open, writers 90 s ahead and 120 s slow commit above it. Its event is applied
// once, when it commits, and nothing is given up.
TEST_P(IdShapes, FollowAppliesALateCommitOnceWhateverTheWritersClocks) {
  const IdShape& shape = GetParam();
  ConnectionOptions o = Store(Db("follow_skew"), 5'000, 0, shape);
  auto c = Connect(o);
  ReplayOptions ro;
  ro.connection = o;
  ro.all = true;
  Follower follower(ro);
  ASSERT_TRUE(follower.following());
  auto app = Application(o, shape);
  ASSERT_TRUE(app->Execute("START TRANSACTION").ok());
  ASSERT_TRUE(Insert(*app, "/slow-transaction", "2024-05-06T10:00:00+00:00", "UTC_TIMESTAMP()").ok());
  ASSERT_TRUE(SkewedWritersCommitAbove(o, shape, 10));
  const std::string h = std::to_string(Count(*c, "SELECT MAX(id) FROM stored_events"));
  // The counters applied the events above the hole; sessions_per_day holds them (its
  // checkpoint stays below the hole until it settles).
  EXPECT_TRUE(WaitUntil(*c, "SELECT MIN(last_event_id) >= " + h + " FROM rewind_checkpoints WHERE projector <> "
                            "'sessions_per_day'", 1));
  ASSERT_TRUE(app->Execute("COMMIT").ok());
  EXPECT_TRUE(WaitUntil(*c, "SELECT MIN(late_events) FROM rewind_checkpoints", 1));
  EXPECT_TRUE(WaitUntil(*c, "SELECT MIN(last_event_id) >= " + h + " FROM rewind_checkpoints", 1));
  const ReplaySummary& sum = follower.Stop();
  ASSERT_TRUE(sum.status.ok()) << sum.status.message();
  EXPECT_EQ(sum.late_events, 1u);
  EXPECT_EQ(sum.gaps_given_up, 0u);
  ExpectEveryReadModelMatchesTheEvents(*c);
  EXPECT_EQ(Count(*c, "SELECT `count` FROM visits_per_post_per_day WHERE uri = '/slow-transaction'"), 1);
}

// Reconciliation (issue 37 part 2). Without PROCESS, following with --settle 1: a transaction
// stays open longer than that, so its hole is judged final (or given up) while writers 90 s
// ahead and 120 s slow commit above it; then it commits. The next reconciliation finds the
// event: the counters apply it once (each equals the events again), sessions_per_day, which
// applies in id order and is past it, counts it as missed, and status says it needs a
// rebuild (table, JSON, Prometheus) until it is rebuilt.
TEST_P(IdShapes, FollowReconcilesAnEventThatCommittedAfterItsHoleWasJudgedFinal) {
  const IdShape& shape = GetParam();
  ConnectionOptions o = Store(Db("reconcile"), 3'000, 0, shape);
  auto c = Connect(o);
  const ConnectionOptions weak = UserWith(*c, o, std::string("rw_rc_") + shape.name,
                                          "SELECT, INSERT, UPDATE, DELETE, CREATE, DROP, ALTER, LOCK TABLES");
  ReplayOptions ro;
  ro.connection = weak;
  ro.all = true;
  ro.settle_seconds = 1;
  ro.reconcile_seconds = 0.2;
  Follower follower(ro);
  ASSERT_TRUE(follower.following());
  auto app = Application(o, shape);
  ASSERT_TRUE(app->Execute("START TRANSACTION").ok());
  ASSERT_TRUE(Insert(*app, "/committed-after-final", "2030-01-01T10:00:00+00:00", "UTC_TIMESTAMP()").ok());
  ASSERT_TRUE(SkewedWritersCommitAbove(o, shape, 5));
  const std::string h = std::to_string(Count(*c, "SELECT MAX(id) FROM stored_events"));
  // Judged final after a second watched: every read model past it, sessions_per_day too.
  ASSERT_TRUE(WaitUntil(*c, "SELECT MIN(last_event_id) >= " + h + " AND MAX(gaps) = '' FROM rewind_checkpoints", 1));
  ASSERT_TRUE(app->Execute("COMMIT").ok());
  EXPECT_TRUE(WaitUntil(*c, "SELECT MIN(reconciled_events) FROM rewind_checkpoints WHERE projector <> 'sessions_per_day'", 1));
  EXPECT_TRUE(WaitUntil(*c, "SELECT missed_events FROM rewind_checkpoints WHERE projector = 'sessions_per_day'", 1));
  const ReplaySummary& sum = follower.Stop();
  ASSERT_TRUE(sum.status.ok()) << sum.status.message();
  EXPECT_EQ(sum.finality, "fallback");
  EXPECT_EQ(sum.reconciled_events, 1u);
  CreateReferenceView(*c);
  for (const auto& [table, sql] : ReferenceQueries()) EXPECT_EQ(CompareWithReference(*c, table, sql), "") << table;
  EXPECT_EQ(Count(*c, "SELECT `count` FROM visits_per_post_per_day WHERE uri = '/committed-after-final'"), 1);
  EXPECT_NE(TableAsMap(*c, "sessions_per_day"), ReferenceSessions(*c));  // missed, and said so:
  Outcome json = RunRewind({"status", "--json"}, Env(o));
  ASSERT_EQ(json.code, 0) << json.err;
  const nlohmann::json j = nlohmann::json::parse(json.out);
  for (const auto& m : j["read_models"]) {
    const bool sessions = m["projector"] == "sessions_per_day";
    EXPECT_EQ(m["needs_rebuild"], sessions) << m.dump();
    EXPECT_EQ(m["missed_events"], sessions ? 1 : 0) << m.dump();
    EXPECT_EQ(m["reconciled_events"], sessions ? 0 : 1) << m.dump();
  }
  Outcome table = RunRewind({"status"}, Env(o));
  EXPECT_NE(table.out.find("[needs rebuild: 1 missed]"), std::string::npos) << table.out;
  Outcome metrics = RunRewind({"status", "--format", "prometheus"}, Env(o));
  EXPECT_NE(metrics.out.find("rewind_needs_rebuild{read_model=\"sessions_per_day\",table=\"sessions_per_day\"} 1"),
            std::string::npos)
      << metrics.out;
  // Rebuilt, it equals the events and needs nothing.
  ASSERT_EQ(RunRewind({"replay", "sessions_per_day", "--quiet"}, Env(o)).code, 0);
  EXPECT_EQ(TableAsMap(*c, "sessions_per_day"), ReferenceSessions(*c));
  EXPECT_EQ(Count(*c, "SELECT missed_events FROM rewind_checkpoints WHERE projector = 'sessions_per_day'"), 0);
}

// kill -9 inside a flush, then --resume: the result equals the events, and verify agrees.
TEST_P(IdShapes, KillNineInAFlushThenResumeAndVerify) {
  const IdShape& shape = GetParam();
  ConnectionOptions o = Store(Db("kill"), 30'000, 1'000, shape);
  auto c = Connect(o);
  std::vector<std::string> env = Env(o);
  env.push_back("REWIND_FAULT=mid-flush:20");
  {
    Subprocess run(Rewind({"replay", "--all", "--progress", "plain", "--flush-every", "5000", "--batch-size", "2000"}), env);
    ASSERT_TRUE(run.WaitFor("fault point", 120)) << run.err();
    run.Signal(SIGKILL);
    EXPECT_EQ(run.Wait(), 128 + SIGKILL);
  }
  Outcome resumed = RunRewind({"replay", "--resume", "--all", "--quiet", "--batch-size", "2000"}, Env(o));
  EXPECT_EQ(resumed.code, 3) << resumed.err;
  EXPECT_NE(resumed.err.find("visits_per_day resumes after event"), std::string::npos) << resumed.err;
  ExpectEveryReadModelMatchesTheEvents(*c);
  Outcome verify = RunRewind({"verify", "--quiet"}, Env(o));
  EXPECT_EQ(verify.code, 0) << verify.err << verify.out;
}

INSTANTIATE_TEST_SUITE_P(Shapes, IdShapes, ::testing::ValuesIn(EveryShape()),
                         [](const ::testing::TestParamInfo<IdShape>& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace rw

