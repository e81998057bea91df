// Migration day, on the real server and the real binary: kill -9 at several points and
// resume, SIGINT, a server restart in the middle of a replay, follow, verify, status.
// Every outcome is compared with an uninterrupted run.
#include <fmt/core.h>
#include <gtest/gtest.h>

#include <csignal>
#include <cstdlib>
#include <fstream>
#include <thread>

#include "pipeline/replay/replay.h"
#include "pipeline/version.h"
#include "tests/rewind_process.h"
#include "tests/test_db.h"

namespace rw {
namespace {

using namespace rw::testing;

constexpr uint64_t kEvents = 500'000;
const std::vector<std::string> kTables = AllTables();


class MigrationTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    options_ = ServerOptions();
    options_.database = "rewind_test_migration";
    auto c = Connect(ServerOptions());
    ASSERT_TRUE(c);
    ASSERT_TRUE(c->Execute("CREATE DATABASE IF NOT EXISTS rewind_test_migration").ok());
    c = Connect(options_);
    ASSERT_TRUE(c);
    // The generator is deterministic: reuse the events when an earlier test loaded them.
    if (Count(*c, "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() "
                  "AND TABLE_NAME = 'stored_events'") == 0 ||
        Count(*c, "SELECT COUNT(*) FROM stored_events") != static_cast<int64_t>(kEvents)) {
      ASSERT_TRUE(c->Execute("DROP TABLE IF EXISTS stored_events").ok());
      GeneratorOptions g;
      g.events = kEvents;
      g.bad_every = 5000;
      ASSERT_TRUE(LoadEvents(*c, "stored_events", g, AccessLog()).ok());
    }
    // The uninterrupted run every interrupted one must equal.
    Subprocess run(Rewind({"replay", "--all", "--quiet"}), Env(options_));
    ASSERT_EQ(run.Wait(), 3) << run.err();  // 3: swapped in, with the bad payloads recorded
    for (const std::string& t : kTables) {
      ASSERT_TRUE(c->Execute(fmt::format("DROP TABLE IF EXISTS expected_{0}", t)).ok());
      ASSERT_TRUE(c->Execute(fmt::format("CREATE TABLE expected_{0} AS SELECT * FROM {0}", t)).ok());
    }
  }

  // A table's fingerprint (FingerprintQuery, as verify uses it): EXCEPT on 400k-row
  // tables takes seconds; this, milliseconds.
  static std::string Fingerprint(Connection& c, const std::string& name, const std::string& table) {
    std::string out = "?";
    for (const ProjectorInfo& info : AllProjectors()) {
      if (info.name != name) continue;
      auto r = c.Query(FingerprintQuery(info.make()->table(), table));
      EXPECT_TRUE(r.ok()) << r.status().message();
      if (!r.ok()) return out;
      out.clear();
      for (const auto& v : r->rows[0]) out += v.value_or("NULL") + " ";
    }
    return out;
  }

  // "" when every read model equals the uninterrupted run.
  static std::string DiffFromExpected() {
    auto c = Connect(options_);
    std::string out;
    for (const std::string& t : kTables) {
      const std::string now = Fingerprint(*c, t, t), want = Fingerprint(*c, t, std::string("expected_") + t);
      if (now != want) out += fmt::format("{}: {}vs expected {}; ", t, now, want);
    }
    return out;
  }

  static ConnectionOptions options_;
};
ConnectionOptions MigrationTest::options_;

TEST_F(MigrationTest, KillNineAnywhereThenResumeGivesTheSameReadModels) {
  struct Scenario {
    const char* name;
    const char* fault;  // where the process stops dead before the SIGKILL ("" = on a timer)
    bool expect_resume_point;
  };
  const Scenario scenarios[] = {
      {"early", "REWIND_FAULT=read-batch:5", false},  // before any flush
      {"mid-flush", "REWIND_FAULT=mid-flush:12", true},  // 12th flush: others committed, this one open
      {"before-swap", "REWIND_FAULT=before-swap", true},
  };
  for (const Scenario& s : scenarios) {
    SCOPED_TRACE(s.name);
    std::vector<std::string> env = Env(options_);
    if (*s.fault) env.push_back(s.fault);
    {
      Subprocess run(Rewind({"replay", "--all", "--progress", "plain", "--flush-every", "60000"}), env);
      ASSERT_TRUE(run.started());
      ASSERT_TRUE(run.WaitFor("fault point", 120)) << run.err();
      run.Signal(SIGKILL);
      EXPECT_EQ(run.Wait(), 128 + SIGKILL);
    }
    // The live tables never saw the killed run.
    EXPECT_EQ(DiffFromExpected(), "");
    Subprocess resume(Rewind({"replay", "--resume", "--all", "--quiet"}), Env(options_));
    EXPECT_EQ(resume.Wait(), 3) << resume.err();
    if (s.expect_resume_point) {
      EXPECT_NE(resume.err().find("visits_per_day resumes after event"), std::string::npos) << resume.err();
      // Order-dependent state lives in memory only: sessions restart, and say so.
      EXPECT_NE(resume.err().find("sessions_per_day is order-dependent and restarts"), std::string::npos);
    }
    EXPECT_EQ(DiffFromExpected(), "");
  }
  // The failures of a resumed run are recorded once each.
  auto c = Connect(options_);
  EXPECT_EQ(Count(*c, "SELECT COUNT(*) FROM rewind_failures WHERE run_id = (SELECT run_id FROM "
                      "rewind_checkpoints WHERE projector = 'visits_per_day')"),
            static_cast<int64_t>(kEvents / 5000));
}

TEST_F(MigrationTest, SigintAndSigtermCommitWhatIsInFlightAndTellHowToResume) {
  // The signal arrives while a flush is open (rewind paused there): it finishes the
  // batches in flight, commits, and stops.
  const std::string pause = PauseFile("sigint");
  std::vector<std::string> env = Env(options_);
  env.push_back("REWIND_FAULT=mid-flush:3@" + pause);
  Subprocess run(Rewind({"replay", "--all", "--progress", "plain", "--flush-every", "50000"}), env);
  ASSERT_TRUE(run.WaitFor("fault point", 120)) << run.err();
  run.Signal(SIGINT);
  Release(pause);
  EXPECT_EQ(run.Wait(), 130) << run.err();
  // The printed command works as printed: it names the database the run used.
  EXPECT_NE(run.err().find("continue with: rewind replay --resume --database " + options_.database +
                           " --all"), std::string::npos) << run.err();
  auto c = Connect(options_);
  // It committed what it had applied: the checkpoints moved, the shadow tables hold it.
  EXPECT_GT(Count(*c, "SELECT MIN(last_event_id) FROM rewind_checkpoints WHERE status = 'building'"), 0);
  EXPECT_EQ(DiffFromExpected(), "");  // live tables untouched
  Subprocess resume(Rewind({"replay", "--resume", "--all", "--quiet"}), Env(options_));
  EXPECT_EQ(resume.Wait(), 3) << resume.err();
  EXPECT_EQ(DiffFromExpected(), "");

  // SIGTERM (a Makefile's timeout, systemd, kill): the same clean stop, exit 143.
  const std::string pause_term = PauseFile("sigterm");
  env = Env(options_);
  env.push_back("REWIND_FAULT=read-batch:4@" + pause_term);
  Subprocess term(Rewind({"replay", "visits_per_day", "visits_per_minute", "--progress", "plain",
                          "--flush-every", "50000"}),
                  env);
  ASSERT_TRUE(term.WaitFor("fault point", 120)) << term.err();
  term.Signal(SIGTERM);
  Release(pause_term);
  EXPECT_EQ(term.Wait(), 143) << term.err();
  EXPECT_NE(term.err().find("rewind replay --resume --database " + options_.database +
                            " visits_per_day visits_per_minute"), std::string::npos)
      << term.err();
  Subprocess again(Rewind({"replay", "--resume", "visits_per_day", "visits_per_minute", "--quiet"}),
                   Env(options_));
  EXPECT_EQ(again.Wait(), 3) << again.err();
  EXPECT_NE(again.err().find("visits_per_minute resumes after event"), std::string::npos) << again.err();
  EXPECT_EQ(DiffFromExpected(), "");
}

TEST_F(MigrationTest, SurvivesAServerRestartInTheMiddle) {
  // The server restarts while one read model's flush is open and the others keep working.
  const std::string pause = PauseFile("restart");
  std::vector<std::string> env = Env(options_);
  env.push_back("REWIND_FAULT=mid-flush:3@" + pause);
  Subprocess run(Rewind({"replay", "--all", "--progress", "plain", "--flush-every", "40000",
                         "--batch-size", "5000"}),
                 env);
  ASSERT_TRUE(run.WaitFor("fault point", 120)) << run.err();
  const std::string restart = std::string("REWIND_DB_DIR= ") + REWIND_SOURCE_DIR + "/scripts/db restart >/dev/null";
  ASSERT_EQ(std::system(restart.c_str()), 0);
  Release(pause);
  EXPECT_EQ(run.Wait(), 3) << run.err();
  // It noticed, and came back (the reader, a projector's flush, or both).
  EXPECT_NE(run.err().find("reconnecting"), std::string::npos) << run.err();
  EXPECT_EQ(DiffFromExpected(), "");
}

TEST_F(MigrationTest, VerifyFindsDifferencesAndLeavesTheLiveTablesAlone) {
  Subprocess same(Rewind({"verify", "--quiet"}), Env(options_));
  EXPECT_EQ(same.Wait(), 0) << same.err();
  auto c = Connect(options_);
  ASSERT_TRUE(c->Execute("UPDATE visits_per_day SET `count` = `count` + 1 ORDER BY `date` LIMIT 1").ok());
  ASSERT_TRUE(c->Execute("DELETE FROM visits_per_post_per_week ORDER BY `date` LIMIT 1").ok());
  std::atomic<bool> stop{false};
  ReplayOptions o;
  o.connection = options_;
  o.progress = ProgressMode::kQuiet;
  o.projectors = {"visits_per_day", "visits_per_post_per_week", "visits_per_hour"};
  const RunSpec spec = SpecOf(o);
  VerifySummary v = Verify(spec, spec.MakeSelected(), stop);
  ASSERT_TRUE(v.replay.status.ok()) << v.replay.status.message();
  ASSERT_EQ(v.tables.size(), 3u);
  EXPECT_FALSE(v.identical());
  std::map<std::string, TableDiff> by_name;
  for (const TableDiff& d : v.tables) by_name[d.table] = d;
  const TableDiff& day = by_name["visits_per_day"];
  EXPECT_EQ(day.count_differs, 1u);
  EXPECT_EQ(day.only_live + day.only_rebuilt, 0u);
  EXPECT_EQ(day.live_total, day.rebuilt_total + 1);
  ASSERT_EQ(day.examples.size(), 1u);
  EXPECT_NE(day.examples[0].find("live "), std::string::npos);
  const TableDiff& week = by_name["visits_per_post_per_week"];
  EXPECT_EQ(week.only_rebuilt, 1u);
  EXPECT_EQ(week.only_live, 0u);
  EXPECT_EQ(week.count_differs, 0u);
  EXPECT_TRUE(by_name["visits_per_hour"].identical());
  // The tampered live tables are as the user left them; the scratch tables are gone.
  EXPECT_NE(DiffFromExpected(), "");
  EXPECT_EQ(Count(*c, "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() "
                      "AND TABLE_NAME LIKE '%rewind\\_verify'"), 0);
  Subprocess differs(Rewind({"verify", "visits_per_day", "--quiet"}), Env(options_));
  EXPECT_EQ(differs.Wait(), 4);
  // A replay repairs them.
  Subprocess repair(Rewind({"replay", "visits_per_day", "visits_per_post_per_week", "--quiet"}), Env(options_));
  EXPECT_EQ(repair.Wait(), 3);
  EXPECT_EQ(DiffFromExpected(), "");
}

TEST_F(MigrationTest, StatusShowsCheckpointsLagAndLastRun) {
  Subprocess status(Rewind({"status", "--json"}), Env(options_));
  EXPECT_EQ(status.Wait(), 0) << status.err();
  auto c = Connect(options_);
  // status reports through stdout; read the same facts it reads, and check a text run too.
  const int64_t head = Count(*c, "SELECT MAX(id) FROM stored_events");
  EXPECT_EQ(Count(*c, "SELECT COUNT(*) FROM rewind_checkpoints WHERE status = 'live' AND last_event_id = " +
                          std::to_string(head)), static_cast<int64_t>(AllProjectors().size()));
  const std::string out_path = ::testing::TempDir() + "/rewind_status.json";
  const std::string cmd = fmt::format("REWIND_CONFIG=/dev/null REWIND_DATABASE={} {} status --json > {}",
                                      options_.database, REWIND_BINARY, out_path);
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  std::ifstream in(out_path);
  const std::string json((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(json.find("\"head_event_id\": " + std::to_string(head)), std::string::npos) << json;
  EXPECT_NE(json.find("\"projector\": \"sessions_per_day\""), std::string::npos) << json;
  EXPECT_NE(json.find("\"behind\": 0"), std::string::npos) << json;
  EXPECT_NE(json.find("\"failures\": 100"), std::string::npos) << json;
}

// Follow: a small store of its own, events appended while rewind follows.
// SIGTERM (or Ctrl-C) ends a follow as it ends any run, with 128 + the signal, after
// committing what was applied to the live tables (a follow once exited 0 or 3).
TEST(FollowTest, ASignalEndsAFollowWithItsExitCode) {
  ConnectionOptions o = Store("rewind_test_follow_signal", 2'000);
  auto c = Connect(o);
  for (int sig : {SIGTERM, SIGINT}) {
    Subprocess run(Rewind({"replay", "visits_per_day", "--follow", "--poll", "0.05", "--progress", "plain"}), Env(o));
    ASSERT_TRUE(run.WaitFor("following new events", 120)) << run.err();
    run.Signal(sig);
    EXPECT_EQ(run.Wait(), 128 + sig) << run.err();
    EXPECT_NE(run.err().find("stopped by signal while following"), std::string::npos) << run.err();
    EXPECT_EQ(run.err().find("live tables are untouched"), std::string::npos) << run.err();
    EXPECT_EQ(Count(*c, "SELECT SUM(`count`) FROM visits_per_day"),
              Count(*c, "SELECT COUNT(*) FROM stored_events WHERE BINARY eventClass = BINARY 'App\\\\Analytics\\\\PageVisited'"));
  }
}

TEST(FollowTest, AppliesAppendedEventsExactly) {
  ConnectionOptions o = FreshDatabase("rewind_test_follow");
  auto c = Connect(o);
  ASSERT_TRUE(c);
  const auto log = AccessLog();
  GeneratorOptions g;
  g.events = 20'000;
  g.total_for_spread = 30'000;
  ASSERT_TRUE(LoadEvents(*c, "stored_events", g, log).ok());

  ReplayOptions ro;
  ro.connection = o;
  ro.all = true;
  Follower follower(ro);
  ASSERT_TRUE(follower.following());
  // Append in three bursts while it follows.
  // Append in three bursts while it follows, each followed before the next.
  for (int burst = 0; burst < 3; ++burst) {
    g.first_index = 20'000 + burst * 3'000;
    g.events = 3'000;
    g.bad_every = 997;
    ASSERT_TRUE(LoadEvents(*c, "stored_events", g, log).ok());
    const int64_t head = Count(*c, "SELECT MAX(id) FROM stored_events");
    EXPECT_TRUE(WaitUntil(*c, "SELECT MIN(last_event_id) FROM rewind_checkpoints", head));
  }
  const ReplaySummary& sum = follower.Stop();
  ASSERT_TRUE(sum.status.ok()) << sum.status.message();
  EXPECT_EQ(sum.events_read, 29'000u);
  CreateReferenceView(*c);
  for (const auto& [table, sql] : ReferenceQueries()) {
    EXPECT_EQ(CompareWithReference(*c, table, sql), "");
  }
  EXPECT_EQ(TableAsMap(*c, "sessions_per_day"), ReferenceSessions(*c));
  EXPECT_EQ(Count(*c, "SELECT COUNT(*) FROM rewind_checkpoints WHERE status = 'live'"), static_cast<int64_t>(AllProjectors().size()));
}

bool Has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// Layout 5 records the rewind that built each read model. Layout 4 (before it): status reads
// it, changing nothing (no version shown); the next replay migrates it and records this
// rewind's version, which --stats-json also gives.
TEST(LayoutTest, StatusReadsTheLayoutBeforeTheVersionColumnAndReplayMigratesIt) {
  ConnectionOptions o = Store("rewind_test_layout4", 2'000);
  auto c = Connect(o);
  ASSERT_TRUE(c);
  ASSERT_EQ(RunRewind({"replay", "visits_per_day", "--quiet"}, Env(o)).code, 0);
  EXPECT_EQ(Count(*c, "SELECT version FROM rewind_schema"), kSchemaVersion);
  const std::string column =
      "SELECT COUNT(*) FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND "
      "TABLE_NAME = 'rewind_checkpoints' AND COLUMN_NAME = 'rewind_version'";
  // As layout 4 left it.
  ASSERT_TRUE(c->Execute("ALTER TABLE rewind_checkpoints DROP COLUMN rewind_version").ok());
  ASSERT_TRUE(c->Execute("UPDATE rewind_schema SET version = 4").ok());
  for (const char* format : {"text", "json", "prometheus"}) {
    SCOPED_TRACE(format);
    Outcome status = RunRewind({"status", "--format", format}, Env(o));
    EXPECT_EQ(status.code, 0) << status.err;
    EXPECT_TRUE(Has(status.out, "visits_per_day")) << status.out;
    EXPECT_FALSE(Has(status.out, BuildVersion())) << status.out;
    if (std::string(format) == "json") {
      EXPECT_TRUE(Has(status.out, "\"rewind_version\": null")) << status.out;
    }
  }
  EXPECT_EQ(Count(*c, column), 0);
  EXPECT_EQ(Count(*c, "SELECT version FROM rewind_schema"), 4);
  const std::string stats = ::testing::TempDir() + "/rewind_layout4_stats.json";
  Outcome replay =
      RunRewind({"replay", "visits_per_day", "--quiet", "--stats-json", stats}, Env(o));
  ASSERT_EQ(replay.code, 0) << replay.err;
  EXPECT_EQ(Count(*c, column), 1);
  EXPECT_EQ(Count(*c, "SELECT version FROM rewind_schema"), kSchemaVersion);
  auto recorded = c->QueryValue(
      "SELECT rewind_version FROM rewind_checkpoints WHERE projector = 'visits_per_day'");
  ASSERT_TRUE(recorded.ok() && *recorded);
  EXPECT_EQ(**recorded, BuildVersion());
  std::ifstream in(stats);
  const std::string json((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_TRUE(Has(json, "\"rewind_version\": \"" + BuildVersion() + "\"")) << json;
  Outcome status = RunRewind({"status", "--json"}, Env(o));
  EXPECT_TRUE(Has(status.out, "\"rewind_version\": \"" + BuildVersion() + "\"")) << status.out;
}

}  // namespace
}  // namespace rw
