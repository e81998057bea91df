// Recovery that works the first time (#23 part 8), on the real server and the real binary:
// `--resume` right after `kill -9` is never refused for the killed run's lock, whatever the
// server has noticed yet. A holder of rewind's named lock is judged by its run's heartbeat
// (rewind_runs): silent for kStaleSeconds, it is dead and stopped; beating, it is refused.
// The "server has not noticed yet" case is made deterministic: a test connection holds the
// lock under rewind's exact name, inside a statement, with the heartbeat row a dead run
// would have left.
#include <fmt/core.h>
#include <gtest/gtest.h>

#include <csignal>
#include <nlohmann/json.hpp>
#include <thread>

#include "stages/db/checkpoint_store.h"
#include "stages/db/heartbeat.h"
#include "stages/db/table_admin.h"
#include "tests/ghost_holder.h"
#include "tests/rewind_process.h"
#include "tests/test_db.h"

namespace rw {
namespace {

using namespace rw::testing;

bool Has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// A build of visits_per_day and visits_per_minute killed with SIGKILL in its third flush;
// its pid.
pid_t KillABuild(const ConnectionOptions& o) {
  std::vector<std::string> env = Env(o);
  env.push_back("REWIND_FAULT=mid-flush:3");
  Subprocess run(Rewind({"replay", "visits_per_day", "visits_per_minute", "--quiet", "--batch-size",
                         "2000", "--flush-every", "2000"}),
                 env);
  EXPECT_TRUE(run.WaitFor("fault point", 120)) << run.err();
  run.Signal(SIGKILL);
  EXPECT_EQ(run.Wait(), 128 + SIGKILL);
  return run.pid();
}

void ExpectReadModelsMatchTheEvents(Connection& c, const std::vector<std::string>& tables = {
                                                       "visits_per_day", "visits_per_minute"}) {
  CreateReferenceView(c);
  const auto refs = ReferenceQueries();
  for (const std::string& table : tables) {
    ASSERT_TRUE(refs.count(table)) << table;
    EXPECT_EQ(CompareWithReference(c, table, refs.at(table)), "") << table;
  }
}

TEST(Recovery, KillNineAtEveryFaultPointThenResumeAtOnceIsNeverRefused) {
  ConnectionOptions o = Store("rewind_test_recovery_kill", 100'000);
  auto c = Connect(o);
  // Inside a flush (statements sent, transaction open), inside a LOAD DATA (part of the file
  // with the server), before the catch-up, during the cut-over (writers held, then just
  // before the swap): three runs each, the resume started the moment the kill is reaped.
  const std::vector<std::vector<std::string>> points = {
      {"mid-flush:2", "mid-flush:5", "mid-flush:9"},
      {"mid-load-data:1", "mid-load-data:4", "mid-load-data:8"},
      {"before-catch-up", "before-catch-up", "before-catch-up"},
      {"writers-held", "writers-held", "writers-held"},
      {"before-swap", "before-swap", "before-swap"},
  };
  int refusals = 0, resumes = 0;
  for (const auto& runs : points) {
    for (const std::string& point : runs) {
      SCOPED_TRACE(point);
      std::vector<std::string> env = Env(o);
      env.push_back("REWIND_FAULT=" + point);
      Subprocess run(
          Rewind({"replay", "--all", "--quiet", "--batch-size", "5000", "--flush-every", "10000"}),
          env);
      ASSERT_TRUE(run.WaitFor("fault point", 120)) << run.err();
      run.Signal(SIGKILL);
      ASSERT_EQ(run.Wait(), 128 + SIGKILL);
      Outcome resumed = RunRewind({"replay", "--resume", "--all", "--quiet"}, Env(o));
      ++resumes;
      if (Has(resumed.err, "already")) ++refusals;
      EXPECT_EQ(resumed.code, 0) << resumed.err;
      ExpectEveryReadModelMatchesTheEvents(*c);
    }
  }
  EXPECT_EQ(resumes, 15);
  EXPECT_EQ(refusals, 0);
}

// Writing while reading (--write-every): the writer thread commits rows + checkpoint in one
// transaction per flush, a runner's flushes in order, while reading goes on. Killed inside a
// LOAD DATA or a flush, the resume counts every event exactly once (against SQL GROUP BY).
TEST(Recovery, WritingWhileReadingKilledInAFlushResumesExactlyOnce) {
  ConnectionOptions o = Store("rewind_test_recovery_write_while_reading", 60'000);
  auto c = Connect(o);
  const std::vector<std::string> tables = {"visits_per_day", "visits_per_post_per_day"};
  for (const std::string point : {"mid-load-data:1", "mid-flush:5", "mid-flush:9"}) {
    SCOPED_TRACE(point);
    std::vector<std::string> env = Env(o);
    env.push_back("REWIND_FAULT=" + point);
    // A flush is due every 4,000 events (it waits for the one in flight), so flushes happen
    // all along the reading, each on the writer.
    Subprocess run(Rewind({"replay", tables[0], tables[1], "--quiet", "--batch-size", "2000", "--write-every",
                           "4000", "--flush-every", "4000"}),
                   env);
    ASSERT_TRUE(run.WaitFor("fault point", 120)) << run.err();
    run.Signal(SIGKILL);
    ASSERT_EQ(run.Wait(), 128 + SIGKILL);
    if (point != "mid-load-data:1") {
      // Five flushes or more reached among two read models: one of them had committed two
      // (a runner prepares its next flush only once the last one is back), long before the
      // last event was read.
      EXPECT_GT(Count(*c, "SELECT COUNT(*) FROM rewind_checkpoints WHERE last_event_id > 0 AND "
                          "last_event_id < (SELECT MAX(id) FROM stored_events)"),
                0);
    }
    Outcome resumed = RunRewind({"replay", "--resume", tables[0], tables[1], "--quiet", "--write-every", "4000"}, Env(o));
    EXPECT_EQ(resumed.code, 0) << resumed.err;
    ExpectReadModelsMatchTheEvents(*c, tables);
  }
}

// A flush that fails on the writer thread stops the run with its message, while reading:
// the error is taken back at the next batch or the next flush, and the reader stops.
TEST(Recovery, AFlushThatFailsOnTheWriterStopsTheRunWithItsMessage) {
  constexpr int64_t kEvents = 100'000;
  ConnectionOptions o = Store("rewind_test_recovery_writer_fails", kEvents);
  auto c = Connect(o);
  const std::string pause = PauseFile("writer_fails");
  const std::string stats = ::testing::TempDir() + "/rewind_writer_fails.json";
  std::vector<std::string> env = Env(o);
  env.push_back("REWIND_FAULT=read-batch:10@" + pause);  // the reader waits before its 10th batch
  Subprocess run(Rewind({"replay", "visits_per_day", "--quiet", "--batch-size", "2000", "--write-every", "4000",
                         "--flush-every", "100000000", "--stats-json", stats}),
                 env);
  ASSERT_TRUE(run.WaitFor("fault point", 120)) << run.err();
  // The build table goes: the writer's next flush cannot write into it.
  ASSERT_TRUE(c->Execute("DROP TABLE visits_per_day__rewind_new").ok());
  Release(pause);
  const int code = run.Wait();
  EXPECT_NE(code, 0) << run.err();
  EXPECT_NE(code, 128 + SIGKILL);
  EXPECT_TRUE(Has(run.err(), "projector visits_per_day: flush of events")) << run.err();
  EXPECT_TRUE(Has(run.err(), "visits_per_day__rewind_new")) << run.err();
  EXPECT_TRUE(Has(run.err(), "doesn't exist")) << run.err();
  // Stopped while reading: a few batches after the failed flush, far from the last event.
  const auto j = nlohmann::json::parse(ReadFile(stats));
  EXPECT_LT(j["events_read"].get<int64_t>(), kEvents / 2) << j.dump();
}

// The killed run's connection is still inside a statement, holding the lock, and its
// heartbeat stopped long ago: the resume stops that connection, takes the lock, resumes.
TEST(Recovery, ALockHeldByARunThatStoppedBeatingIsTakenOver) {
  ConnectionOptions o = Store("rewind_test_recovery_stale", 20'000);
  auto c = Connect(o);
  const pid_t killed = KillABuild(o);
  GhostHolder ghost(o, table_admin::LockName("rewind", o.database, "visits_per_minute"));
  ghost.WriteHeartbeat(/*age_seconds=*/3 * kStaleSeconds);
  ghost.EnterAStatement();
  Outcome resumed =
      RunRewind({"replay", "--resume", "visits_per_day", "visits_per_minute", "--quiet"}, Env(o));
  EXPECT_EQ(resumed.code, 0) << resumed.err;
  EXPECT_TRUE(
      Has(resumed.err,
          fmt::format("connection {} holds the lock on rebuilding visits_per_minute", ghost.id())))
      << resumed.err;
  EXPECT_TRUE(Has(resumed.err, "it is dead")) << resumed.err;
  EXPECT_TRUE(Has(resumed.err, fmt::format("KILL {}", ghost.id()))) << resumed.err;
  EXPECT_TRUE(Has(resumed.err, "visits_per_day resumes after event")) << resumed.err;
  EXPECT_TRUE(ghost.Join());  // its statement was ended by rewind's KILL
  ExpectReadModelsMatchTheEvents(*c);
  // The stopped holder's row went with it, the resumed run's at its end; the killed build's
  // stays (stale) until a run finds its connection gone for a minute.
  EXPECT_EQ(Count(*c, "SELECT COUNT(*) FROM rewind_runs WHERE run_id = 'ghost-run'"), 0);
  EXPECT_EQ(Count(*c, fmt::format("SELECT COUNT(*) FROM rewind_runs WHERE pid <> {}", killed)), 0);
}

// Right after kill -9 the dead run's heartbeat is still fresh: the resume waits for it to
// beat again, which a dead run never does, and takes it for dead after kStaleSeconds.
TEST(Recovery, AFreshHeartbeatThatNeverBeatsAgainIsADeadRunAfterTheThreshold) {
  ConnectionOptions o = Store("rewind_test_recovery_fresh_dead", 20'000);
  auto c = Connect(o);
  KillABuild(o);
  GhostHolder ghost(o, table_admin::LockName("rewind", o.database, "visits_per_day"));
  ghost.WriteHeartbeat(/*age_seconds=*/0);
  ghost.EnterAStatement();
  Outcome resumed =
      RunRewind({"replay", "--resume", "visits_per_day", "visits_per_minute", "--quiet"}, Env(o));
  EXPECT_EQ(resumed.code, 0) << resumed.err;
  EXPECT_TRUE(Has(resumed.err, "waiting for it to let go, to beat again")) << resumed.err;
  EXPECT_TRUE(Has(resumed.err, "it is dead")) << resumed.err;
  EXPECT_TRUE(ghost.Join());
  ExpectReadModelsMatchTheEvents(*c);
}

// A live rewind beats from its own thread whatever its main work is doing (inside a LOAD
// DATA, holding writers off in the cut-over): a second rewind is refused, naming it.
TEST(Recovery, ALiveRewindIsRefusedWhileItBeatsInsideALoadDataOrACutOver) {
  ConnectionOptions o = Store("rewind_test_recovery_live", 20'000);
  auto c = Connect(o);
  for (const char* point : {"mid-load-data:2", "writers-held"}) {
    SCOPED_TRACE(point);
    const std::string pause = PauseFile(std::string("recovery_live_") + point[0]);
    std::vector<std::string> env = Env(o);
    env.push_back(fmt::format("REWIND_FAULT={}@{}", point, pause));
    Subprocess first(Rewind({"replay", "visits_per_day", "--quiet"}), env);
    ASSERT_TRUE(first.WaitFor("fault point", 120)) << first.err();
    Outcome second = RunRewind({"replay", "--resume", "visits_per_day", "--quiet"}, Env(o));
    EXPECT_NE(second.code, 0);
    EXPECT_TRUE(Has(second.err, "another rewind (connection")) << second.err;
    EXPECT_TRUE(Has(second.err, "beating) is already rebuilding visits_per_day")) << second.err;
    EXPECT_TRUE(Has(second.err, fmt::format("pid {}", first.pid()))) << second.err;
    EXPECT_FALSE(Has(second.err, "it is dead")) << second.err;
    Release(pause);
    EXPECT_EQ(first.Wait(), 0) << first.err();
    ExpectReadModelsMatchTheEvents(*c, {"visits_per_day"});
  }
}

// A holder without a heartbeat (an older rewind, another program) cannot be judged: refused
// at once, as before, saying how to free the lock when no rewind runs.
TEST(Recovery, AHolderWithoutAHeartbeatIsRefusedWithTheKillToRun) {
  ConnectionOptions o = Store("rewind_test_recovery_no_beat", 2'000);
  ASSERT_EQ(RunRewind({"replay", "visits_per_day", "--quiet"}, Env(o)).code, 0);
  GhostHolder ghost(o, table_admin::LockName("rewind", o.database, "visits_per_day"));
  Outcome refused = RunRewind({"replay", "visits_per_day", "--quiet"}, Env(o));
  EXPECT_NE(refused.code, 0);
  EXPECT_TRUE(Has(refused.err, fmt::format("another rewind (connection {}) is already rebuilding "
                                           "visits_per_day; it keeps no heartbeat",
                                           ghost.id())))
      << refused.err;
  EXPECT_TRUE(Has(refused.err, fmt::format("KILL {} in the server frees the lock", ghost.id())))
      << refused.err;
}

// Layout 3 (before heartbeats): status reads it and creates nothing; the next replay
// migrates it to the current layout.
TEST(Recovery, StatusReadsTheLayoutBeforeHeartbeatsAndCreatesNothing) {
  ConnectionOptions o = Store("rewind_test_recovery_layout3", 2'000);
  auto c = Connect(o);
  ASSERT_EQ(RunRewind({"replay", "visits_per_day", "--quiet"}, Env(o)).code, 0);
  EXPECT_EQ(Count(*c, "SELECT version FROM rewind_schema"), kSchemaVersion);
  ASSERT_TRUE(c->Execute("DROP TABLE rewind_runs").ok());
  ASSERT_TRUE(c->Execute("ALTER TABLE rewind_checkpoints DROP COLUMN rewind_version").ok());
  ASSERT_TRUE(c->Execute("UPDATE rewind_schema SET version = 3").ok());
  const std::string runs_table =
      "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = "
      "DATABASE() AND TABLE_NAME = 'rewind_runs'";
  Outcome status = RunRewind({"status"}, Env(o));
  EXPECT_EQ(status.code, 0) << status.err;
  EXPECT_TRUE(Has(status.out, "visits_per_day")) << status.out;
  EXPECT_EQ(Count(*c, runs_table), 0);
  EXPECT_EQ(Count(*c, "SELECT version FROM rewind_schema"), 3);
  ASSERT_EQ(RunRewind({"replay", "visits_per_day", "--quiet"}, Env(o)).code, 0);
  EXPECT_EQ(Count(*c, runs_table), 1);
  EXPECT_EQ(Count(*c, "SELECT version FROM rewind_schema"), kSchemaVersion);
}

}  // namespace
}  // namespace rw
