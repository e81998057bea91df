// Migration-day controls (issue 13), on the real server and the real binary: a dry run
// that touches nothing, the rate cap and the Threads_running throttle, the failure budget
// on both sides of its limit, and rebuilds up to a point beside the live tables.
#include <fmt/core.h>
#include <gtest/gtest.h>

#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <map>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "pipeline/replay/replay.h"
#include "tests/rewind_process.h"
#include "tests/test_db.h"

namespace rw {
namespace {

using namespace rw::testing;

// Everything a dry run could change, as one string: the tables (with their row counts) and
// every bookkeeping row.
std::string ServerState(Connection& c) {
  std::string state;
  auto rows = c.Query("SELECT TABLE_NAME, TABLE_ROWS, CREATE_TIME FROM information_schema.TABLES "
                      "WHERE TABLE_SCHEMA = DATABASE() ORDER BY TABLE_NAME");
  EXPECT_TRUE(rows.ok());
  for (const auto& r : rows->rows) state += r[0].value_or("") + " " + r[2].value_or("") + "\n";
  for (const char* sql : {"SELECT * FROM rewind_checkpoints ORDER BY projector, target_table",
                          "SELECT COUNT(*), MAX(id) FROM rewind_failures"}) {
    auto r = c.Query(sql);
    if (!r.ok()) continue;
    for (const auto& row : r->rows) {
      for (const auto& v : row) state += v.value_or("NULL") + "|";
      state += "\n";
    }
  }
  return state;
}

TEST(DryRun, TouchesNothingAndSaysWhatTheRunWouldDo) {
  ConnectionOptions o = Store("rewind_test_dry_run", 30'000, 1000);
  auto c = Connect(o);
  EXPECT_EQ(RunRewind({"replay", "visits_per_day", "--quiet"}, Env(o)).code, 3);  // some state to keep
  const std::string before = ServerState(*c);
  Outcome dry = RunRewind({"replay", "--all", "--dry-run", "--json"}, Env(o));
  ASSERT_EQ(dry.code, 0) << dry.err << dry.out;
  EXPECT_EQ(ServerState(*c), before);
  const auto j = nlohmann::json::parse(dry.out);
  EXPECT_TRUE(j["can_start"].get<bool>());
  EXPECT_EQ(j["finality"], "server") << j.dump();  // the test user has PROCESS
  EXPECT_EQ(j["events"]["count"].get<int64_t>(), Count(*c, "SELECT COUNT(*) FROM stored_events"));
  EXPECT_TRUE(j["events"]["exact"].get<bool>());
  ASSERT_EQ(j["read_models"].size(), AllProjectors().size());
  for (const auto& m : j["read_models"]) {
    EXPECT_GT(m["estimated_rows"].get<int64_t>(), 0) << m.dump();
    // A row's bytes, not the number of the buffer's pieces: at least a date and a count.
    EXPECT_GE(m["estimated_bytes"].get<int64_t>(), 12 * m["estimated_rows"].get<int64_t>()) << m.dump();
    EXPECT_EQ(m["table"].get<std::string>(), m["name"].get<std::string>() + "__rewind_new");
  }
  EXPECT_GT(j["estimated_seconds"].get<double>(), 0);
  // The text form labels its estimates.
  Outcome text = RunRewind({"replay", "--all", "--dry-run"}, Env(o));
  EXPECT_EQ(text.code, 0);
  EXPECT_NE(text.out.find("(estimate)"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("(exact)"), std::string::npos) << text.out;
  EXPECT_EQ(ServerState(*c), before);
}

// An event class that matches nothing (the config file's doubled backslashes, say) never
// swaps an empty read model over a full one: exit 7, the live table and the shadow table
// kept; the dry run says so and names the classes that are there; --allow-empty swaps.
TEST(EmptyBuild, AClassThatMatchesNothingNeverEmptiesALiveTable) {
  ConnectionOptions o = Store("rewind_test_empty_build", 2'000);
  auto c = Connect(o);
  ASSERT_EQ(RunRewind({"replay", "visits_per_day", "--quiet"}, Env(o)).code, 0);
  const int64_t live = Count(*c, "SELECT SUM(`count`) FROM visits_per_day");
  ASSERT_GT(live, 0);
  const std::string wrong = "App\\\\Analytics\\\\PageVisited";  // App\\Analytics\\PageVisited
  Outcome dry = RunRewind({"replay", "visits_per_day", "--dry-run", "--event-class", wrong}, Env(o));
  EXPECT_EQ(dry.code, 1) << dry.out;
  EXPECT_NE(dry.out.find("0 events match"), std::string::npos) << dry.out;
  EXPECT_NE(dry.out.find("'App\\Analytics\\PageVisited' ("), std::string::npos) << dry.out;
  Outcome run = RunRewind({"replay", "visits_per_day", "--quiet", "--event-class", wrong}, Env(o));
  EXPECT_EQ(run.code, 7) << run.err;
  EXPECT_NE(run.err.find("visits_per_day received no event"), std::string::npos) << run.err;
  EXPECT_NE(run.err.find("--allow-empty"), std::string::npos) << run.err;
  EXPECT_EQ(Count(*c, "SELECT SUM(`count`) FROM visits_per_day"), live);
  EXPECT_EQ(Count(*c, "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND "
                      "TABLE_NAME = 'visits_per_day__rewind_new'"),
            1);
  // A resumed build counts what it applied before: still nothing, still refused.
  Outcome resumed = RunRewind({"replay", "visits_per_day", "--quiet", "--resume", "--event-class", wrong}, Env(o));
  EXPECT_EQ(resumed.code, 7) << resumed.err;
  EXPECT_EQ(Count(*c, "SELECT SUM(`count`) FROM visits_per_day"), live);
  // Asked for, the empty build is swapped in.
  Outcome allowed = RunRewind({"replay", "visits_per_day", "--quiet", "--allow-empty", "--event-class", wrong}, Env(o));
  EXPECT_EQ(allowed.code, 0) << allowed.err;
  EXPECT_EQ(Count(*c, "SELECT COUNT(*) FROM visits_per_day"), 0);
}

TEST(DryRun, SaysWhyARealRunCouldNotStart) {
  ConnectionOptions o = Store("rewind_test_dry_run_no", 3'000);
  auto c = Connect(o);
  // A user without CREATE, ALTER and LOCK TABLES.
  const ConnectionOptions weak = UserWith(*c, o, "rewind_dry", "SELECT, INSERT, UPDATE, DELETE, DROP");
  Outcome denied = RunRewind({"replay", "--all", "--dry-run", "--json"}, Env(weak));
  EXPECT_EQ(denied.code, 1) << denied.err;
  const auto j = nlohmann::json::parse(denied.out);
  EXPECT_FALSE(j["can_start"].get<bool>());
  EXPECT_EQ(j["missing_grants"], nlohmann::json({"CREATE", "ALTER", "LOCK TABLES"})) << j.dump();
  // Without PROCESS the server cannot prove missing ids final: the dry run says which rule.
  EXPECT_EQ(j["finality"], "fallback") << j.dump();
  Outcome text = RunRewind({"replay", "--all", "--dry-run"}, Env(weak));
  EXPECT_NE(text.out.find("finality: missing ids would be judged final by the event table's times and ids"),
            std::string::npos)
      << text.out;
  EXPECT_EQ(j["fallback_rule"], "times and ids") << j.dump();
  // By ids alone (issue 38 part 6): with --settle-ids, or when the table has no time column.
  Outcome ids = RunRewind({"replay", "--all", "--dry-run", "--settle-ids", "500"}, Env(weak));
  EXPECT_NE(ids.out.find("judged final by ids alone: final 500 ids below the head (--settle-ids)"), std::string::npos)
      << ids.out;
  Outcome untimed = RunRewind({"replay", "--all", "--dry-run", "--time-column", "no_such"}, Env(weak));
  EXPECT_NE(untimed.out.find("by ids alone: final 10,000 ids below the head (the event table has no time column "
                             "'no_such')"),
            std::string::npos)
      << untimed.out;
  ASSERT_TRUE(c->Execute("DROP USER 'rewind_dry'@'localhost'").ok());
  // Another run holds a read model's lock.
  const std::string pause = PauseFile("dry_lock");
  std::vector<std::string> env = Env(o);
  env.push_back("REWIND_FAULT=before-catch-up@" + pause);
  Subprocess running(Rewind({"replay", "visits_per_day", "--quiet"}), env);
  ASSERT_TRUE(running.WaitFor("fault point", 60)) << running.err();
  Outcome locked = RunRewind({"replay", "--all", "--dry-run"}, Env(o));
  EXPECT_EQ(locked.code, 1);
  EXPECT_NE(locked.out.find("another rewind is rebuilding visits_per_day"), std::string::npos) << locked.out;
  Release(pause);
  EXPECT_EQ(running.Wait(), 0) << running.err();
  // A missing column.
  Outcome column = RunRewind({"replay", "--all", "--dry-run", "--payload-column", "body"}, Env(o));
  EXPECT_EQ(column.code, 1);
  EXPECT_NE(column.out.find("has no column 'body'"), std::string::npos) << column.out;
}

TEST(Throttle, TheRateCapHoldsOverTheRun) {
  ConnectionOptions o = Store("rewind_test_rate_cap", 30'000);
  const std::string stats = ::testing::TempDir() + "/rewind_rate_cap.json";
  Outcome run = RunRewind({"replay", "--all", "--quiet", "--max-events-per-second", "20000",
                           "--stats-json", stats}, Env(o));
  ASSERT_EQ(run.code, 0) << run.err;
  std::ifstream in(stats);
  const auto j = nlohmann::json::parse(in);
  EXPECT_EQ(j["events_read"].get<int64_t>(), 30'000);
  EXPECT_LE(j["events_per_second"].get<double>(), 20'000 * 1.02) << j.dump();
}

// Three sessions hold Threads_running up: reading pauses, says so, and resumes by itself
// once they end.
TEST(Throttle, ReadingPausesWhileTheServerIsBusy) {
  ConnectionOptions o = Store("rewind_test_threads_running", 20'000);
  std::vector<std::unique_ptr<Connection>> busy;
  std::vector<std::string> ids;
  std::vector<std::thread> sleepers;
  for (int i = 0; i < 3; ++i) {
    busy.push_back(Connect(o));
    ids.push_back(*busy.back()->QueryValue("SELECT CONNECTION_ID()").value());
  }
  for (int i = 0; i < 3; ++i) {
    sleepers.emplace_back([&, i] { (void)busy[i]->Query("SELECT SLEEP(600)"); });
  }
  auto c = Connect(o);
  EXPECT_TRUE(WaitUntil(*c, "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE INFO = 'SELECT SLEEP(600)'", 3));
  Subprocess run(Rewind({"replay", "--all", "--progress", "plain", "--throttle-threads-running", "2"}), Env(o));
  ASSERT_TRUE(run.WaitFor("throttled: threads_running 3 > 2; reading pauses", 60)) << run.err();
  // Paused: no read model has a committed checkpoint yet.
  EXPECT_EQ(Count(*c, "SELECT COUNT(*) FROM rewind_checkpoints WHERE status = 'live'"), 0);
  for (const std::string& id : ids) ASSERT_TRUE(c->Execute("KILL QUERY " + id).ok());
  for (auto& t : sleepers) t.join();
  ASSERT_TRUE(run.WaitFor("reading resumes", 60)) << run.err();
  EXPECT_EQ(run.Wait(), 0) << run.err();
  EXPECT_EQ(Count(*c, "SELECT SUM(`count`) FROM visits_per_day"),
            Count(*c, "SELECT COUNT(*) FROM stored_events WHERE BINARY eventClass = BINARY 'App\\\\Analytics\\\\PageVisited'"));
}

// visits_per_day fails exactly the page visits without a usable visitedAt: a budget of that
// many swaps in (exit 0), one less swaps nothing (exit 5) and keeps the shadow table.
TEST(FailureBudget, BothSidesOfTheLimit) {
  ConnectionOptions o = Store("rewind_test_budget", 20'000, 400);
  auto c = Connect(o);
  CreateReferenceView(*c);
  const int64_t given = Count(*c, "SELECT COUNT(*) FROM stored_events WHERE BINARY eventClass = "
                                  "BINARY 'App\\\\Analytics\\\\PageVisited'");
  const int64_t failed = given - Count(*c, "SELECT COUNT(*) FROM ref_visits");
  ASSERT_GT(failed, 10);
  Outcome within = RunRewind({"replay", "visits_per_day", "--quiet", "--max-failures", std::to_string(failed)}, Env(o));
  EXPECT_EQ(within.code, 0) << within.err;
  const int64_t live_total = Count(*c, "SELECT SUM(`count`) FROM visits_per_day");
  EXPECT_EQ(live_total, given - failed);
  ASSERT_TRUE(c->Execute("UPDATE visits_per_day SET `count` = `count` + 1000 ORDER BY `date` LIMIT 1").ok());
  Outcome over = RunRewind({"replay", "visits_per_day", "--quiet", "--max-failures", std::to_string(failed - 1)}, Env(o));
  EXPECT_EQ(over.code, 5) << over.err;
  EXPECT_NE(over.err.find(fmt::format("visits_per_day failed {} of {} events", failed, given)), std::string::npos) << over.err;
  EXPECT_EQ(Count(*c, "SELECT SUM(`count`) FROM visits_per_day"), live_total + 1000);  // untouched
  EXPECT_EQ(Count(*c, "SELECT SUM(`count`) FROM visits_per_day__rewind_new"), live_total);  // kept
  // In percent of the events the read model was given.
  const double pct = 100.0 * static_cast<double>(failed) / static_cast<double>(given);
  EXPECT_EQ(RunRewind({"replay", "visits_per_day", "--quiet", "--max-failures", fmt::format("{:.4f}%", pct * 1.01)}, Env(o)).code, 0);
  EXPECT_EQ(RunRewind({"replay", "visits_per_day", "--quiet", "--max-failures", fmt::format("{:.4f}%", pct * 0.99)}, Env(o)).code, 5);
  // Counted over the whole run: a resumed run keeps what the first part failed.
  {
    std::vector<std::string> env = Env(o);
    env.push_back("REWIND_FAULT=before-catch-up");
    Subprocess killed(Rewind({"replay", "visits_per_day", "--quiet", "--flush-every", "3000", "--batch-size", "1000"}), env);
    ASSERT_TRUE(killed.WaitFor("fault point", 60)) << killed.err();
    killed.Signal(SIGKILL);
    killed.Wait();
  }
  Outcome resumed = RunRewind({"replay", "--resume", "visits_per_day", "--quiet", "--max-failures", std::to_string(failed - 1)}, Env(o));
  EXPECT_EQ(resumed.code, 5) << resumed.err;
  // --stop-on-failure is a budget of 0 that stops at once: not both.
  EXPECT_EQ(RunRewind({"replay", "visits_per_day", "--stop-on-failure", "--max-failures", "3"}, Env(o)).code, 2);
}

// --until-id / --until-time build beside the live tables (--into), equal to an independent
// count of the events up to that point; the live tables and their checkpoints are untouched,
// and such a build runs beside a follow of the live tables.
TEST(Into, RebuildUpToAPointBesideTheLiveTables) {
  ConnectionOptions o = Store("rewind_test_into", 20'000);
  auto c = Connect(o);
  CreateReferenceView(*c);
  EXPECT_EQ(RunRewind({"replay", "--until-id", "5000"}, Env(o)).code, 2);  // needs --into

  ReplayOptions ro;
  ro.connection = o;
  ro.all = true;
  Follower follower(ro);
  ASSERT_TRUE(follower.following());
  const std::string live_rows = "SELECT GROUP_CONCAT(CONCAT(projector, target_table, status, last_event_id) "
                                "ORDER BY projector) FROM rewind_checkpoints WHERE target_table = live_table";
  const std::string live_before = *c->QueryValue(live_rows).value();
  const std::string day_before = *c->QueryValue("SELECT GROUP_CONCAT(`date`, `count`) FROM visits_per_day").value();

  Outcome by_id = RunRewind({"replay", "--all", "--quiet", "--into", "_upto", "--until-id", "5000"}, Env(o));
  EXPECT_EQ(by_id.code, 0) << by_id.err;
  EXPECT_EQ(CompareWithReference(*c, "visits_per_day_upto",
                                 "SELECT DATE(t), '', COUNT(*) FROM ref_visits WHERE id <= 5000 GROUP BY 1"), "");
  EXPECT_EQ(CompareWithReference(*c, "visits_per_post_per_day_upto",
                                 "SELECT DATE(t), CAST(url AS BINARY), COUNT(*) FROM ref_visits WHERE id <= 5000 AND url_ok GROUP BY 1, 2"), "");
  const std::string until = *c->QueryValue("SELECT createdAt FROM stored_events WHERE id = 12000").value();
  Outcome by_time = RunRewind({"replay", "visits_per_month", "--quiet", "--into", "_asof", "--until-time", until}, Env(o));
  EXPECT_EQ(by_time.code, 0) << by_time.err;
  EXPECT_EQ(CompareWithReference(*c, "visits_per_month_asof",
                                 "SELECT DATE_FORMAT(t, '%Y-%m-01'), '', COUNT(*) FROM ref_visits r JOIN stored_events e "
                                 "USING (id) WHERE e.createdAt <= '" + until + "' GROUP BY 1"), "");
  EXPECT_EQ(*c->QueryValue(live_rows).value(), live_before);
  EXPECT_EQ(*c->QueryValue("SELECT GROUP_CONCAT(`date`, `count`) FROM visits_per_day").value(), day_before);
  const ReplaySummary& sum = follower.Stop();
  ASSERT_TRUE(sum.status.ok()) << sum.status.message();

  // verify --against: the same report as verify, against the build.
  Outcome full = RunRewind({"replay", "--all", "--quiet", "--into", "_full"}, Env(o));
  EXPECT_EQ(full.code, 0) << full.err;
  EXPECT_EQ(RunRewind({"verify", "--against", "_full", "--quiet"}, Env(o)).code, 0);
  Outcome differs = RunRewind({"verify", "--against", "_upto", "visits_per_day", "--quiet"}, Env(o));
  EXPECT_EQ(differs.code, 4) << differs.err;
  EXPECT_NE(differs.out.find("DIFFERS"), std::string::npos) << differs.out;
  // A suffix that ends like rewind's own tables is refused.
  EXPECT_EQ(RunRewind({"replay", "--all", "--into", "x__rewind_new"}, Env(o)).code, 2);
}

// An --until-id below the first event is an empty build: refused unless --allow-empty says
// so (#23); nothing is created by the refused run.
TEST(Into, AnUntilIdBeforeTheFirstEventNeedsAllowEmpty) {
  ConnectionOptions o = Store("rewind_test_until_before", 2'000);
  auto c = Connect(o);
  const std::string first = *c->QueryValue("SELECT MIN(id) FROM stored_events").value();
  Outcome run = RunRewind({"replay", "visits_per_day", "--quiet", "--into", "_none", "--until-id", "-5"}, Env(o));
  EXPECT_EQ(run.code, 1) << run.err;
  EXPECT_NE(run.err.find("--until-id -5"), std::string::npos) << run.err;
  EXPECT_NE(run.err.find("first event"), std::string::npos) << run.err;
  EXPECT_NE(run.err.find(first), std::string::npos) << run.err;
  EXPECT_NE(run.err.find("--allow-empty"), std::string::npos) << run.err;
  EXPECT_EQ(Count(*c, "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND "
                      "TABLE_NAME = 'visits_per_day_none'"), 0);
  Outcome dry = RunRewind({"replay", "visits_per_day", "--dry-run", "--into", "_none", "--until-id", "-5"}, Env(o));
  EXPECT_EQ(dry.code, 1) << dry.out;
  EXPECT_NE(dry.out.find("--allow-empty"), std::string::npos) << dry.out;
  Outcome big = RunRewind({"replay", "visits_per_day", "--into", "_none", "--until-id", "99999999999999999999"}, Env(o));
  EXPECT_EQ(big.code, 2) << big.err;
  EXPECT_NE(big.err.find("99999999999999999999"), std::string::npos) << big.err;
  Outcome allowed = RunRewind({"replay", "visits_per_day", "--quiet", "--into", "_none", "--until-id", "-5",
                               "--allow-empty"}, Env(o));
  EXPECT_EQ(allowed.code, 0) << allowed.err;
  EXPECT_EQ(Count(*c, "SELECT COUNT(*) FROM visits_per_day_none"), 0);
}

// The nice value of each thread of a process, from /proc (field 19 of a task's stat).
std::map<pid_t, int> ThreadNiceValues(pid_t pid) {
  std::map<pid_t, int> out;
  for (const auto& task : std::filesystem::directory_iterator(fmt::format("/proc/{}/task", pid))) {
    std::ifstream in(task.path() / "stat");
    std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const size_t close = stat.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream fields(stat.substr(close + 2));  // from field 3, the state
    std::string field;
    for (int i = 3; i <= 19 && fields >> field; ++i) {
      if (i == 19) out[static_cast<pid_t>(std::stoi(task.path().filename().string()))] = std::stoi(field);
    }
  }
  return out;
}

// On a machine shared with the server, decoding and applying must not take a core from
// the server's thread that sends the events: the graph's threads run at a lower priority
// than the thread that reads (and later flushes and swaps), which keeps the caller's.
TEST(Politeness, DecodingRunsBelowThePriorityOfReading) {
  ConnectionOptions o = Store("rewind_test_priority", 12'000);
  const std::string pause = PauseFile("priority");
  std::vector<std::string> env = Env(o);
  env.push_back("REWIND_FAULT=read-batch:8@" + pause);  // the reading thread waits there
  Subprocess run(Rewind({"replay", "--all", "--quiet", "--batch-size", "1000"}), env);
  ASSERT_TRUE(run.WaitFor("fault point", 60)) << run.err();
  const std::map<pid_t, int> nice = ThreadNiceValues(run.pid());
  Release(pause);
  const int own = getpriority(PRIO_PROCESS, 0);  // rewind's main thread inherits it
  if (own >= 19) GTEST_SKIP() << "the tests run at the lowest priority: nothing can be lower";
  ASSERT_EQ(nice.count(run.pid()), 1u);
  EXPECT_EQ(nice.at(run.pid()), own);  // the main thread reads
  int lowered = 0;
  for (const auto& [tid, value] : nice) lowered += value == std::min(own + 10, 19) ? 1 : 0;
  EXPECT_GE(lowered, 1) << "no thread below the reading thread's priority";
  EXPECT_EQ(run.Wait(), 0) << run.err();
  auto c = Connect(o);
  CreateReferenceView(*c);
  for (const auto& [table, sql] : ReferenceQueries()) EXPECT_EQ(CompareWithReference(*c, table, sql), "");
}

}  // namespace
}  // namespace rw
