// Reading the events from a replica (--read-host/--read-port/--read-socket), against two real
// private servers started by `scripts/db pair start`: a primary with the binary log and a
// replica of it that replicates over TCP. The read models, checkpoints, locks and the
// cut-over stay on the primary; the tests check them there against SQL GROUP BY.
// Skipped, saying why, only when no MariaDB server can be started on this machine.
#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <fmt/core.h>

#include "tests/pair.h"
#include "tests/rewind_process.h"
#include "tests/test_db.h"

namespace rw::testing {
namespace {

class ReplicaTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { StartPair(pair_, skip_, failed_); }
  void SetUp() override {
    if (!skip_.empty()) GTEST_SKIP() << skip_;
    ASSERT_TRUE(failed_.empty()) << failed_;
    replica_ = Connect(pair_.replica);
    ASSERT_TRUE(replica_);
    // Every test starts with replication running (a test that stopped it restarts it).
    ASSERT_TRUE(replica_->Execute("START REPLICA").ok());
  }
  void TearDown() override {
    if (replica_) (void)replica_->Execute("START REPLICA");
  }

  // A fresh database `name` on the primary with `events` generated events (ids with the
  // generator's `id_step` and `holes`: dense by default).
  ConnectionOptions Primary(const std::string& name, uint64_t events, uint64_t id_step = 0,
                            double holes = 0) {
    ConnectionOptions o = pair_.primary;
    auto c = Connect(o);
    if (!c) return o;
    EXPECT_TRUE(c->Execute("DROP DATABASE IF EXISTS " + QuoteIdentifier(name)).ok());
    EXPECT_TRUE(c->Execute("CREATE DATABASE " + QuoteIdentifier(name)).ok());
    o.database = name;
    auto d = Connect(o);
    GeneratorOptions g;
    g.events = events;
    g.odd_url_every = 37;
    g.id_step = id_step;
    g.holes = holes;
    EXPECT_TRUE(LoadEvents(*d, "stored_events", g, AccessLog()).ok());
    // A test that reads from the replica starts from a replica that has the primary's events
    // (rewind refuses one that lacks the table, as it may just after CREATE TABLE).
    for (const ConnectionOptions& replica : {pair_.replica, pair_.replica2}) {
      auto r = Connect(replica);
      EXPECT_TRUE(r && WaitUntil(*r, "SELECT COUNT(*) FROM " + QuoteIdentifier(name) + ".stored_events",
                                 Count(*d, "SELECT COUNT(*) FROM stored_events")))
          << "the replica " << replica.Describe() << " did not apply " << name << "'s events";
    }
    return o;
  }
  // rewind's arguments that read from both replicas over TCP.
  static std::vector<std::string> FromBothReplicas(std::vector<std::string> args) {
    args.push_back("--read-host");
    args.push_back(fmt::format("127.0.0.1:{},127.0.0.1:{}", pair_.replica.port, pair_.replica2.port));
    return args;
  }
  // rewind's arguments that read from the replica over TCP.
  static std::vector<std::string> FromReplica(std::vector<std::string> args) {
    for (const std::string& a : {std::string("--read-host"), std::string("127.0.0.1"),
                                 std::string("--read-port"), std::to_string(pair_.replica.port)}) {
      args.push_back(a);
    }
    return args;
  }
  static uint64_t RowsSent(Connection& c) {
    return static_cast<uint64_t>(
        Count(c,
              "SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS WHERE "
              "VARIABLE_NAME = 'ROWS_SENT'"));
  }

  static inline Pair pair_;
  static inline std::string skip_, failed_;
  std::unique_ptr<Connection> replica_;
};

nlohmann::json Stats(const std::string& file) {
  std::ifstream in(file);
  return nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
}

// The bulk read goes to the replica (it sends the events, the primary does not), and the read
// models on the primary equal SQL GROUP BY over the primary's events.
TEST_F(ReplicaTest, ARebuildReadingFromTheReplicaEqualsGroupByOnThePrimary) {
  ConnectionOptions o = Primary("rewind_test_replica_read", 20'000);
  auto c = Connect(o);
  ASSERT_TRUE(c);
  auto primary_admin = Connect(pair_.primary);
  const uint64_t primary_before = RowsSent(*primary_admin), replica_before = RowsSent(*replica_);
  const std::string stats = ::testing::TempDir() + "/rewind_replica_read.json";
  Outcome run =
      RunRewind(FromReplica({"replay", "--all", "--quiet", "--stats-json", stats}), Env(o));
  ASSERT_EQ(run.code, 0) << run.err;
  const uint64_t primary_sent = RowsSent(*primary_admin) - primary_before;
  const uint64_t replica_sent = RowsSent(*replica_) - replica_before;
  EXPECT_GE(replica_sent, 20'000u);
  EXPECT_LT(primary_sent, 2'000u) << "the events were read from the primary";
  EXPECT_NE(run.err.find("from the replica"), std::string::npos) << run.err;
  const auto j = Stats(stats);
  EXPECT_EQ(j["events_read"], 20'000) << j.dump();
  EXPECT_EQ(j["catch_up_events"], 0) << j.dump();
  ExpectEveryReadModelMatchesTheEvents(*c);
  EXPECT_EQ(Count(*c, "SELECT COUNT(*) FROM rewind_checkpoints WHERE status = 'live'"),
            static_cast<int64_t>(AllProjectors().size()));
  EXPECT_EQ(Count(*c, "SELECT COUNT(*) FROM rewind_replica_markers"), 0);  // the marker is gone
}

// The replica stops applying (its SQL thread) in the middle of the rebuild while the
// application appends to the primary: the appended events come from the primary (catch-up,
// cut-over), each once, and the read models equal GROUP BY over the primary's events.
TEST_F(ReplicaTest, AReplicaThatLagsBehindAppendsDuringTheRebuildLosesNothing) {
  ConnectionOptions o = Primary("rewind_test_replica_lags", 20'000);
  auto c = Connect(o);
  ASSERT_TRUE(c);
  const std::string pause = PauseFile("replica_lags");
  const std::string stats = ::testing::TempDir() + "/rewind_replica_lags.json";
  std::vector<std::string> env = Env(o);
  env.push_back("REWIND_FAULT=read-batch:2@" + pause);  // the second batch read from the replica
  Subprocess run(Rewind(FromReplica({"replay", "--all", "--quiet", "--batch-size", "4000",
                                     "--stats-json", stats})),
                 env);
  ASSERT_TRUE(run.WaitFor("fault point read-batch reached", 120)) << run.err();
  ASSERT_TRUE(replica_->Execute("STOP REPLICA SQL_THREAD").ok());
  GeneratorOptions g;
  g.first_index = 20'000;
  g.events = 3'000;
  g.odd_url_every = 37;
  ASSERT_TRUE(LoadEvents(*c, "stored_events", g, AccessLog()).ok());
  Release(pause);
  ASSERT_EQ(run.Wait(), 0) << run.err();
  // The replica has not applied the appended events (its SQL thread is still stopped).
  ConnectionOptions on_replica = pair_.replica;
  on_replica.database = o.database;
  auto r = Connect(on_replica);
  ASSERT_TRUE(r);
  EXPECT_LT(Count(*r, "SELECT COUNT(*) FROM stored_events"), 23'000);
  const auto j = Stats(stats);
  EXPECT_EQ(j["events_read"], 23'000) << j.dump();  // each event once
  EXPECT_EQ(j["catch_up_events"], 3'000) << j.dump();
  ExpectEveryReadModelMatchesTheEvents(*c);
}

// A rebuild reading from the replica, killed (kill -9) after its first flushes, then resumed
// with --resume, still reading from the replica, on ids with a step and holes (a Galera
// node's ids, rolled-back inserts): events appended while it was down come through the
// replica, and events appended while the resumed run reads, with the replica's SQL thread
// stopped, come from the primary's catch-up. Each event counts once: the read models on the
// primary equal SQL GROUP BY over the primary's events.
TEST_F(ReplicaTest, AKilledRebuildResumedFromTheReplicaLosesNothingOnIdsWithHoles) {
  ConnectionOptions o = Primary("rewind_test_replica_resume", 20'000, /*id_step=*/3, /*holes=*/0.05);
  auto c = Connect(o);
  ASSERT_TRUE(c);
  const auto append = [&](uint64_t first, uint64_t n) {
    GeneratorOptions g;
    g.first_index = first;
    g.events = n;
    g.odd_url_every = 37;
    g.id_step = 3;
    g.holes = 0.05;
    ASSERT_TRUE(LoadEvents(*c, "stored_events", g, AccessLog()).ok());
  };
  const std::vector<std::string> args = {"replay", "--all", "--quiet", "--batch-size", "2000",
                                         "--flush-every", "4000"};
  {
    // Killed inside the ninth flush of the eight read models: one of them is in its second
    // flush at least, so its first is committed and the resume starts from a checkpoint.
    std::vector<std::string> env = Env(o);
    env.push_back("REWIND_FAULT=mid-flush:9");
    Subprocess run(Rewind(FromReplica(args)), env);
    ASSERT_TRUE(run.WaitFor("fault point mid-flush reached", 120)) << run.err();
    run.Signal(SIGKILL);
    ASSERT_EQ(run.Wait(), 128 + SIGKILL);
  }
  EXPECT_GT(Count(*c, "SELECT COUNT(*) FROM rewind_checkpoints WHERE last_event_id > 0"), 0)
      << "the killed run committed no flush: the resume would start from nothing";
  append(20'000, 2'000);  // while rewind is down; the replica applies them
  const std::string pause = PauseFile("replica_resumed");
  const std::string stats = ::testing::TempDir() + "/rewind_replica_resume.json";
  std::vector<std::string> env = Env(o);
  env.push_back("REWIND_FAULT=read-batch:2@" + pause);
  std::vector<std::string> resume = args;
  for (const char* a : {"--resume", "--stats-json"}) resume.push_back(a);
  resume.push_back(stats);
  Subprocess run(Rewind(FromReplica(resume)), env);
  ASSERT_TRUE(run.WaitFor("fault point read-batch reached", 120)) << run.err();
  ASSERT_TRUE(replica_->Execute("STOP REPLICA SQL_THREAD").ok());
  append(22'000, 1'500);  // while the resumed run reads; the replica does not apply them
  Release(pause);
  ASSERT_EQ(run.Wait(), 0) << run.err();
  EXPECT_NE(run.err().find("from the replica"), std::string::npos) << run.err();
  const auto j = Stats(stats);
  EXPECT_EQ(j["catch_up_events"], 1'500) << j.dump();
  ExpectEveryReadModelMatchesTheEvents(*c);
  EXPECT_EQ(Count(*c, "SELECT COUNT(*) FROM rewind_checkpoints WHERE status = 'live'"),
            static_cast<int64_t>(AllProjectors().size()));
}

// Two replicas at once: the pages are spread over both (each sends a share of the events,
// the primary almost none), and the read models on the primary equal SQL GROUP BY over the
// primary's events, on ids with a step and holes.
TEST_F(ReplicaTest, TwoReplicasShareThePagesAndTheReadModelsEqualGroupBy) {
  ConnectionOptions o = Primary("rewind_test_two_replicas", 40'000, /*id_step=*/3, /*holes=*/0.05);
  auto c = Connect(o);
  ASSERT_TRUE(c);
  auto primary_admin = Connect(pair_.primary);
  auto replica2 = Connect(pair_.replica2);
  ASSERT_TRUE(primary_admin && replica2);
  const uint64_t primary_before = RowsSent(*primary_admin), r1_before = RowsSent(*replica_),
                 r2_before = RowsSent(*replica2);
  const std::string stats = ::testing::TempDir() + "/rewind_two_replicas.json";
  Outcome run = RunRewind(
      FromBothReplicas({"replay", "--all", "--quiet", "--batch-size", "2000", "--stats-json", stats}), Env(o));
  ASSERT_EQ(run.code, 0) << run.err;
  const uint64_t events = static_cast<uint64_t>(Count(*c, "SELECT COUNT(*) FROM stored_events"));
  const uint64_t r1 = RowsSent(*replica_) - r1_before, r2 = RowsSent(*replica2) - r2_before;
  EXPECT_GE(r1 + r2, events);
  EXPECT_GE(r1, events / 5) << "the first replica sent few of the events";
  EXPECT_GE(r2, events / 5) << "the second replica sent few of the events";
  EXPECT_LT(RowsSent(*primary_admin) - primary_before, 2'000u) << "the events were read from the primary";
  EXPECT_NE(run.err.find("read from the replicas: "), std::string::npos) << run.err;
  const auto j = Stats(stats);
  EXPECT_EQ(j["events_read"], events) << j.dump();
  ExpectEveryReadModelMatchesTheEvents(*c);
}

// The second replica's server killed (kill -9) at the fourth batch of a rebuild reading
// `read_hosts`; the server is started again after (by GTID, it loses nothing of the
// primary's). The run's outcome, its stats in `stats`.
Outcome KillTheSecondReplicaMidRun(const ConnectionOptions& o, const std::string& read_hosts, const std::string& stats,
                                   const Pair& pair) {
  const std::string pause = PauseFile("replica_killed");
  std::vector<std::string> env = Env(o);
  env.push_back("REWIND_FAULT=read-batch:4@" + pause);
  Subprocess run(Rewind({"replay", "--all", "--quiet", "--batch-size", "2000", "--stats-json", stats, "--read-host",
                         read_hosts}),
                 env);
  Outcome out;
  if (!run.WaitFor("fault point read-batch reached", 120)) {
    out.code = -1;
    out.err = "no fault point: " + run.err();
    return out;
  }
  const pid_t server = static_cast<pid_t>(std::stol(ReadFile(pair.replica2_pid_file)));
  EXPECT_EQ(kill(server, SIGKILL), 0);
  for (int i = 0; i < 600 && kill(server, 0) == 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_NE(kill(server, 0), 0) << "the replica's server did not die";
  Release(pause);
  out.code = run.Wait();
  out.err = run.err();
  Subprocess start({std::string(REWIND_SOURCE_DIR) + "/scripts/db", "pair", "start"}, {});
  EXPECT_EQ(start.Wait(), 0) << start.err();
  return out;
}

// One of two replicas killed (kill -9 of its server) in the middle of the rebuild: it is
// dropped, the page it was sending and the ones after it are read from the other one, and
// each event counts once: the read models equal SQL GROUP BY.
TEST_F(ReplicaTest, AReplicaKilledMidRunIsDroppedAndItsPagesAreReadFromTheOther) {
  ConnectionOptions o = Primary("rewind_test_replica_killed", 40'000, /*id_step=*/3, /*holes=*/0.05);
  auto c = Connect(o);
  ASSERT_TRUE(c);
  const std::string stats = ::testing::TempDir() + "/rewind_replica_killed.json";
  Outcome run = KillTheSecondReplicaMidRun(
      o, fmt::format("127.0.0.1:{},127.0.0.1:{}", pair_.replica.port, pair_.replica2.port), stats, pair_);
  ASSERT_EQ(run.code, 0) << run.err;
  EXPECT_NE(run.err.find(fmt::format("dropped the replica rewind@127.0.0.1:{}", pair_.replica2.port)),
            std::string::npos)
      << run.err;
  EXPECT_NE(run.err.find("(dropped: "), std::string::npos) << run.err;
  EXPECT_EQ(run.err.find(", the primary"), std::string::npos) << run.err;  // the other replica read them
  const auto j = Stats(stats);
  EXPECT_EQ(j["events_read"], Count(*c, "SELECT COUNT(*) FROM stored_events")) << j.dump();  // each once
  ExpectEveryReadModelMatchesTheEvents(*c);
}

// The only replica killed mid-run: dropped too, and the primary, which holds every event,
// reads the rest; each event counts once.
TEST_F(ReplicaTest, TheOnlyReplicaKilledMidRunLeavesTheRestToThePrimary) {
  ConnectionOptions o = Primary("rewind_test_only_replica_killed", 30'000, /*id_step=*/2, /*holes=*/0.03);
  auto c = Connect(o);
  ASSERT_TRUE(c);
  const std::string stats = ::testing::TempDir() + "/rewind_only_replica_killed.json";
  Outcome run = KillTheSecondReplicaMidRun(o, fmt::format("127.0.0.1:{}", pair_.replica2.port), stats, pair_);
  ASSERT_EQ(run.code, 0) << run.err;
  EXPECT_NE(run.err.find(", the primary"), std::string::npos) << run.err;
  const auto j = Stats(stats);
  EXPECT_EQ(j["events_read"], Count(*c, "SELECT COUNT(*) FROM stored_events")) << j.dump();
  ExpectEveryReadModelMatchesTheEvents(*c);
}

// A replica that does not show the run's marker in time (its replication stopped) is left
// out at the start, saying so, and the other one is read; with none passing, the run is
// refused before any build table is made.
TEST_F(ReplicaTest, ALaggingReplicaIsLeftOutAndNoneLeftIsRefused) {
  ConnectionOptions o = Primary("rewind_test_replica_left_out", 5'000);
  auto c = Connect(o);
  ASSERT_TRUE(c);
  auto replica2 = Connect(pair_.replica2);
  ASSERT_TRUE(replica2);
  ASSERT_TRUE(replica2->Execute("STOP REPLICA").ok());
  Outcome run = RunRewind(FromBothReplicas({"replay", "--all", "--quiet", "--read-wait", "2"}), Env(o));
  EXPECT_TRUE(replica2->Execute("START REPLICA").ok());
  ASSERT_EQ(run.code, 0) << run.err;
  EXPECT_NE(run.err.find(fmt::format("127.0.0.1:{}/rewind_test_replica_left_out is left out", pair_.replica2.port)),
            std::string::npos)
      << run.err;
  ExpectEveryReadModelMatchesTheEvents(*c);
  // Both stopped: refused, nothing created.
  ASSERT_TRUE(replica_->Execute("STOP REPLICA").ok());
  ASSERT_TRUE(replica2->Execute("STOP REPLICA").ok());
  Outcome none = RunRewind(FromBothReplicas({"replay", "visits_per_day", "--quiet", "--read-wait", "1"}), Env(o));
  EXPECT_TRUE(replica_->Execute("START REPLICA").ok());
  EXPECT_TRUE(replica2->Execute("START REPLICA").ok());
  EXPECT_NE(none.code, 0);
  EXPECT_NE(none.err.find("none of the 2 read servers passed"), std::string::npos) << none.err;
  EXPECT_EQ(Count(*c, "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND "
                      "TABLE_NAME LIKE '%rewind_new'"),
            0);
}

// The lag is measured at the start: the marker rewind writes on the primary reaches the
// replica only once its SQL thread runs again, and the lag reported is at least as long as it
// was held back.
TEST_F(ReplicaTest, TheLagIsMeasuredAndReported) {
  ConnectionOptions o = Primary("rewind_test_replica_lag", 2'000);
  auto c = Connect(o);
  ASSERT_TRUE(c);
  // The replica holds the database (else rewind refuses it at once: no database there).
  ASSERT_TRUE(
      WaitUntil(*replica_, "SELECT COUNT(*) FROM rewind_test_replica_lag.stored_events", 2'000));
  ASSERT_TRUE(replica_->Execute("STOP REPLICA SQL_THREAD").ok());
  const std::string pause = PauseFile("replica_lag");
  const std::string stats = ::testing::TempDir() + "/rewind_replica_lag.json";
  std::vector<std::string> env = Env(o);
  env.push_back("REWIND_FAULT=replica-marker-written@" + pause);
  Subprocess run(
      Rewind(FromReplica({"replay", "visits_per_day", "--quiet", "--stats-json", stats})), env);
  ASSERT_TRUE(run.WaitFor("fault point replica-marker-written reached", 120)) << run.err();
  const auto held_from = std::chrono::steady_clock::now();
  Release(pause);
  ASSERT_TRUE(replica_->Execute("START REPLICA SQL_THREAD").ok());
  const double held =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - held_from).count();
  ASSERT_EQ(run.Wait(), 0) << run.err();
  EXPECT_NE(run.err().find("behind the primary"), std::string::npos) << run.err();
  const auto j = Stats(stats);
  ASSERT_TRUE(j["replica_lag_seconds"].is_number()) << j.dump();
  EXPECT_GE(j["replica_lag_seconds"].get<double>(), held) << j.dump();
  EXPECT_EQ(
      Count(*c, "SELECT SUM(`count`) FROM visits_per_day"),
      Count(*c,
            "SELECT COUNT(*) FROM stored_events WHERE JSON_VALID(payload) AND BINARY eventClass = "
            "BINARY 'App\\\\Analytics\\\\PageVisited' AND JSON_VALUE(payload, '$.visitedAt') IS "
            "NOT NULL"));
}

// A read server that is not replicating the event table is refused before any build table is
// made, with a message that says what to do: replication stopped; a replica without the event
// table (not replicated), or with another one; a server that is not a replica (with the
// primary's server_id, without the database, or with an event table of its own); the primary
// itself.
// A replica that diverged (rows deleted on it, outside replication) is checked, not
// trusted: refused before any work, naming the ids, the live table untouched; a changed
// payload, which the counts cannot see, is refused by --read-check full.
TEST_F(ReplicaTest, ADivergedReplicaIsRefusedBeforeAnyWork) {
  ConnectionOptions o = Primary("rewind_test_replica_diverged", 20'000, 0, 0.02);
  auto c = Connect(o);
  ASSERT_TRUE(c);
  ASSERT_EQ(RunRewind({"replay", "visits_per_day", "--quiet"}, Env(o)).code, 0);
  const int64_t events = Count(*c, "SELECT COUNT(*) FROM stored_events");
  const int64_t live = Count(*c, "SELECT SUM(`count`) FROM visits_per_day");
  ConnectionOptions on_replica = pair_.replica;
  on_replica.database = o.database;
  auto r = Connect(on_replica);
  ASSERT_TRUE(r);
  ASSERT_TRUE(WaitUntil(*r, "SELECT COUNT(*) FROM stored_events", events));
  // A clean replica passes the check (and says what it compared).
  Outcome clean = RunRewind(FromReplica({"replay", "visits_per_day", "--quiet"}), Env(o));
  ASSERT_EQ(clean.code, 0) << clean.err;
  EXPECT_NE(clean.err.find("matches it in"), std::string::npos) << clean.err;
  // 98 events deleted on the replica alone.
  ASSERT_TRUE(r->Execute("SET SESSION sql_log_bin = 0").ok());
  ASSERT_TRUE(r->Execute("DELETE FROM stored_events WHERE id > 7000 ORDER BY id LIMIT 98").ok());
  Outcome run = RunRewind(FromReplica({"replay", "visits_per_day", "--quiet"}), Env(o));
  EXPECT_EQ(run.code, 1) << run.err;
  EXPECT_NE(run.err.find("differs from the primary in"), std::string::npos) << run.err;
  EXPECT_NE(run.err.find("it has diverged"), std::string::npos) << run.err;
  EXPECT_EQ(Count(*c, "SELECT SUM(`count`) FROM visits_per_day"), live);
  EXPECT_EQ(Count(*c, "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND "
                      "TABLE_NAME LIKE '%rewind_new'"),
            0);
  // Same ids, another payload: the counts match; the full check sees it.
  ConnectionOptions o2 = Primary("rewind_test_replica_changed", 3'000);
  auto c2 = Connect(o2);
  ASSERT_TRUE(c2);
  on_replica.database = o2.database;
  auto r2 = Connect(on_replica);
  ASSERT_TRUE(r2);
  ASSERT_TRUE(WaitUntil(*r2, "SELECT COUNT(*) FROM stored_events", Count(*c2, "SELECT COUNT(*) FROM stored_events")));
  ASSERT_TRUE(r2->Execute("SET SESSION sql_log_bin = 0").ok());
  ASSERT_TRUE(r2->Execute("UPDATE stored_events SET payload = REPLACE(payload, '\"url\"', '\"url \"') WHERE id = "
                          "(SELECT id FROM (SELECT id FROM stored_events ORDER BY id LIMIT 1 OFFSET 1500) x)")
                  .ok());
  Outcome full = RunRewind(FromReplica({"replay", "visits_per_day", "--quiet", "--read-check", "full"}), Env(o2));
  EXPECT_EQ(full.code, 1) << full.err;
  EXPECT_NE(full.err.find("other ids or other contents"), std::string::npos) << full.err;
}

TEST_F(ReplicaTest, AServerNotReplicatingTheEventTableIsRefused) {
  ConnectionOptions o = Primary("rewind_test_replica_refused", 2'000);
  auto c = Connect(o);
  ASSERT_TRUE(c);
  // (--read-wait 1 where the marker can never come; elsewhere the default, as the replica may
  // still be applying what earlier tests wrote.)
  const std::vector<std::string> read_model = {"replay", "visits_per_day", "--quiet"};
  auto refused = [&](std::vector<std::string> args, const std::string& why) {
    Outcome run = RunRewind(args, Env(o));
    EXPECT_EQ(run.code, 1) << run.err;
    EXPECT_NE(run.err.find(why), std::string::npos) << "expected: " << why << "\n" << run.err;
    EXPECT_NE(run.err.find("--read-host/--read-port/--read-socket"), std::string::npos) << run.err;
  };
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = read_model;
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  };
  // Replication stopped.
  ASSERT_TRUE(replica_->Execute("STOP REPLICA").ok());
  refused(FromReplica(with({"--read-wait", "1"})), "did not show the marker");
  ASSERT_TRUE(replica_->Execute("START REPLICA").ok());
  ASSERT_TRUE(WaitUntil(*replica_, "SELECT COUNT(*) FROM rewind_test_replica_refused.stored_events",
                        2'000));
  // The event table differs on the replica (a column the primary's does not have).
  ConnectionOptions on_replica = pair_.replica;
  on_replica.database = o.database;
  auto r = Connect(on_replica);
  ASSERT_TRUE(r);
  ASSERT_TRUE(r->Execute("ALTER TABLE stored_events ADD COLUMN replica_only INT NULL").ok());
  refused(FromReplica(read_model), "differs on the read server");
  ASSERT_TRUE(r->Execute("ALTER TABLE stored_events DROP COLUMN replica_only").ok());
  // An event table the primary does not replicate (written outside its binary log).
  ASSERT_TRUE(c->Execute("SET SESSION sql_log_bin = 0").ok());
  ASSERT_TRUE(c->Execute("CREATE TABLE unlogged_events LIKE stored_events").ok());
  ASSERT_TRUE(c->Execute("INSERT INTO unlogged_events SELECT * FROM stored_events").ok());
  refused(FromReplica(with({"--events-table", "unlogged_events"})),
          "has no event table 'unlogged_events'");
  // The event table replicated, but a different event at the head (a filtered or diverged table).
  ASSERT_TRUE(
      c->Execute("INSERT INTO stored_events (uuid, eventClass, payload, createdAt) SELECT uuid, "
                 "eventClass, payload, createdAt FROM stored_events ORDER BY id LIMIT 1")
          .ok());
  refused(FromReplica(read_model), "does not replicate the event table");
  ASSERT_TRUE(c->Execute("DELETE FROM stored_events ORDER BY id DESC LIMIT 1").ok());
  ASSERT_TRUE(c->Execute("SET SESSION sql_log_bin = 1").ok());
  // Another server: the tests' own single server, with the same database and events, that
  // replicates nothing...
  ConnectionOptions other = ServerOptions();
  ASSERT_FALSE(other.socket.empty());
  auto other_admin = Connect(other);
  ASSERT_TRUE(other_admin);
  ASSERT_TRUE(other_admin->Execute("DROP DATABASE IF EXISTS rewind_test_replica_refused").ok());
  refused(with({"--read-socket", other.socket}), "has no database 'rewind_test_replica_refused'");
  ASSERT_TRUE(other_admin->Execute("CREATE DATABASE rewind_test_replica_refused").ok());
  other.database = "rewind_test_replica_refused";
  auto other_db = Connect(other);
  ASSERT_TRUE(other_db);
  GeneratorOptions g;
  g.events = 2'000;
  g.odd_url_every = 37;
  ASSERT_TRUE(LoadEvents(*other_db, "stored_events", g, AccessLog()).ok());
  refused(with({"--read-socket", other.socket, "--read-wait", "1"}),
          "is not replicating from the primary");
  // ...and with the primary's server_id.
  const std::string its_id = *other_admin->QueryValue("SELECT @@server_id").value();
  const std::string primary_id = *c->QueryValue("SELECT @@server_id").value();
  ASSERT_TRUE(other_admin->Execute("SET GLOBAL server_id = " + primary_id).ok());
  refused(with({"--read-socket", other.socket}), "has the primary's server_id");
  ASSERT_TRUE(other_admin->Execute("SET GLOBAL server_id = " + its_id).ok());
  ASSERT_TRUE(other_admin->Execute("DROP DATABASE rewind_test_replica_refused").ok());
  // The primary itself, named as the read server.
  refused(with({"--read-socket", pair_.primary.socket}), "it is the primary itself");
  EXPECT_EQ(
      Count(*c,
            "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND "
            "TABLE_NAME LIKE '%rewind_new'"),
      0);
  EXPECT_EQ(Count(*c, "SELECT COUNT(*) FROM rewind_replica_markers"), 0);
}

}  // namespace
}  // namespace rw::testing
