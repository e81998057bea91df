// A hostile world (issue 8): a malicious server, careless configuration, an application
// that keeps writing (and commits out of id order) while rewind rebuilds, odd event tables
// and odd events. Each test runs against the real MariaDB and, where it matters, the real
// binary; every read model is checked against an independent computation.
#include <fmt/core.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <thread>
#include <utility>
#include <vector>

#include "pipeline/replay/replay.h"
#include "tests/framework_tables.h"
#include "tests/fake_server.h"
#include "tests/rewind_process.h"
#include "tests/test_db.h"

namespace rw {
namespace {

using namespace rw::testing;
namespace fs = std::filesystem;

// A PageVisited payload (the blog's fields); `url` and `at` are put in as given.
std::string Payload(const std::string& url, const std::string& at, const std::string& ip = "10.0.0.1") {
  return fmt::format(R"({{"uuid":"u","url":"{}","visitedAt":"{}","ip":"{}","userAgent":"ua","raw":"r","uri":"{}"}})",
                     url, at, ip, url);
}

constexpr const char* kClass = "App\\Analytics\\PageVisited";

Status Insert(Connection& c, const std::string& cls, const std::string& payload,
              const std::string& table = "stored_events") {
  return c.Execute(fmt::format("INSERT INTO {} (uuid, eventClass, payload, createdAt) VALUES "
                               "('u', {}, {}, NOW())",
                               table, c.Quote(cls), c.Quote(payload)));
}

// ---------------------------------------------------------------- security

TEST(HostileServer, ALocalInfileRequestGetsNoFile) {
  const std::string secret = ::testing::TempDir() + "/rewind_secret.txt";
  std::ofstream(secret) << "TOP-SECRET-CONTENT\n";
  FakeInfileServer server(secret);
  ConnectionOptions o;
  o.host = "127.0.0.1";
  o.port = server.port();
  o.user = "x";
  o.password = "y";
  o.database = "d";
  // The first statement is rewind's own, at connect (the session's time zone): the server
  // answers it with its request, which is refused, and the connection with it.
  auto c = Connection::Open(o);
  EXPECT_FALSE(c.ok());
  if (!c.ok()) {
    EXPECT_NE(c.status().message().find("refused"), std::string::npos) << c.status().message();
  }
  EXPECT_EQ(server.requests_sent(), 1);
  // Even `rewind status`, which loads nothing, is asked: it sends nothing either.
  Outcome status = RunRewind({"status", "--host", "127.0.0.1", "--port", std::to_string(server.port()),
                              "--user", "x", "--password=y", "--database", "d"},
                             {"REWIND_CONFIG=/dev/null"});
  EXPECT_NE(status.code, 0);
  EXPECT_GE(server.requests_sent(), 2) << status.err;
  EXPECT_EQ(server.received_after_request().find("TOP-SECRET"), std::string::npos);
  EXPECT_EQ(server.received_after_request(), "");
  std::remove(secret.c_str());
}

TEST(Security, APasswordGivenAsAFlagIsScrubbedFromTheProcessArguments) {
  ConnectionOptions o = Store("rewind_test_argv", 2000);
  const std::string file = PauseFile("argv");
  ConnectionOptions no_password = o;
  no_password.password.clear();
  std::vector<std::string> env = Env(no_password);
  env.push_back("REWIND_FAULT=before-catch-up@" + file);
  Subprocess run(Rewind({"replay", "--all", "--quiet", "--password=" + o.password}), env);
  ASSERT_TRUE(run.WaitFor("fault point", 60)) << run.err();
  std::ifstream in(fmt::format("/proc/{}/cmdline", run.pid()), std::ios::binary);
  std::string cmdline((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  for (char& ch : cmdline) ch = ch == '\0' ? ' ' : ch;
  EXPECT_EQ(cmdline.find("--password=" + o.password + " "), std::string::npos) << cmdline;
  EXPECT_NE(cmdline.find("--password=" + std::string(o.password.size(), 'x')), std::string::npos) << cmdline;
  Release(file);
  EXPECT_EQ(run.Wait(), 0) << run.err();
}

TEST(Security, StatusWorksForAReadOnlyUserAndCreatesNothing) {
  ConnectionOptions o = Store("rewind_test_readonly", 1000);
  auto c = Connect(o);
  const std::vector<std::string> ro = Env(UserWith(*c, o, "rewind_ro", "SELECT"));
  // Before any rebuild: status says so, and creates no table.
  Outcome fresh = RunRewind({"status"}, ro);
  EXPECT_EQ(fresh.code, 0) << fresh.err;
  EXPECT_EQ(Count(*c, "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = "
                      "'rewind_test_readonly' AND TABLE_NAME LIKE 'rewind%'"), 0);
  // A replay needs CREATE: it says so and changes nothing.
  Outcome denied = RunRewind({"replay", "visits_per_day", "--quiet"}, ro);
  EXPECT_EQ(denied.code, 1) << denied.err;
  EXPECT_NE(denied.err.find("denied"), std::string::npos) << denied.err;
  // After a rebuild by the owner, the read-only user reads the status.
  EXPECT_EQ(RunRewind({"replay", "--all", "--quiet"}, Env(o)).code, 0);
  Outcome after = RunRewind({"status", "--json"}, ro);
  EXPECT_EQ(after.code, 0) << after.err;
  ASSERT_TRUE(c->Execute("DROP USER 'rewind_ro'@'localhost'").ok());
}

// The grants docs/operations.md lists are enough: replay (cut-over included) and verify run with
// exactly those.
TEST(Security, TheDocumentedGrantsAreEnough) {
  ConnectionOptions o = Store("rewind_test_grants", 2000);
  auto c = Connect(o);
  const ConnectionOptions least =
      UserWith(*c, o, "rewind_min", "SELECT, INSERT, UPDATE, DELETE, CREATE, DROP, ALTER, LOCK TABLES");
  Outcome replay = RunRewind({"replay", "--all", "--quiet"}, Env(least));
  EXPECT_EQ(replay.code, 0) << replay.err;
  ASSERT_TRUE(c->Execute("REVOKE LOCK TABLES ON rewind_test_grants.* FROM 'rewind_min'@'localhost'").ok());
  Outcome verify = RunRewind({"verify", "--quiet"}, Env(least));
  EXPECT_EQ(verify.code, 0) << verify.err;
  Outcome no_lock = RunRewind({"replay", "visits_per_day", "--quiet"}, Env(least));
  EXPECT_EQ(no_lock.code, 1) << no_lock.err;
  EXPECT_NE(no_lock.err.find("LOCK TABLES grant"), std::string::npos) << no_lock.err;
  ASSERT_TRUE(c->Execute("DROP USER 'rewind_min'@'localhost'").ok());
}

TEST(Security, AnUnwritableStatsFileIsRefusedBeforeAnyWork) {
  ConnectionOptions o = Store("rewind_test_stats_path", 500);
  Outcome out = RunRewind({"replay", "--all", "--quiet", "--stats-json", "/nonexistent-dir/stats.json"}, Env(o));
  EXPECT_EQ(out.code, 2) << out.err;
  EXPECT_NE(out.err.find("cannot write --stats-json"), std::string::npos) << out.err;
  auto c = Connect(o);
  EXPECT_EQ(Count(*c, "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() "
                      "AND TABLE_NAME LIKE 'visits%'"), 0);
}

// ---------------------------------------------------------------- nothing lost

// The application appends while the rebuild runs, and one of its transactions is still
// open (holding a lower id than events already read) when the cut-over comes: the swapped
// tables hold every event, the late one included, once.
TEST(NothingLost, EventsAppendedDuringAReplayAndALateCommitReachTheSwappedTables) {
  ConnectionOptions o = Store("rewind_test_appended", 20'000);
  auto c = Connect(o);
  const std::string file = PauseFile("appended");
  std::vector<std::string> env = Env(o);
  env.push_back("REWIND_FAULT=before-catch-up@" + file);
  Subprocess run(Rewind({"replay", "--all", "--progress", "plain", "--cutover-timeout", "120"}), env);
  ASSERT_TRUE(run.WaitFor("fault point before-catch-up reached", 120)) << run.err();
  // The rebuild has read up to its head; the application appends 3,000 events...
  GeneratorOptions g;
  g.first_index = 20'000;
  g.events = 3'000;
  g.bad_every = 500;
  ASSERT_TRUE(LoadEvents(*c, "stored_events", g, AccessLog()).ok());
  // ...one transaction takes an id and stays open while a later event commits.
  auto app = Connect(o);
  ASSERT_TRUE(app->Execute("START TRANSACTION").ok());
  ASSERT_TRUE(Insert(*app, kClass, Payload("/late-commit", "2023-03-04T05:06:07+00:00")).ok());
  ASSERT_TRUE(Insert(*c, kClass, Payload("/after-the-late-one", "2023-03-04T05:07:07+00:00")).ok());
  Release(file);
  // The cut-over cannot hold writers off while that transaction is open: it says so, waits.
  ASSERT_TRUE(run.WaitFor("kept the lock waiting", 120)) << run.err();
  ASSERT_TRUE(app->Execute("COMMIT").ok());
  EXPECT_EQ(run.Wait(), 3) << run.err();  // 3: the appended bad payloads were recorded
  EXPECT_NE(run.err().find("cut-over: "), std::string::npos);
  ExpectEveryReadModelMatchesTheEvents(*c);
  EXPECT_EQ(Count(*c, "SELECT `count` FROM visits_per_post_per_day WHERE uri = '/late-commit'"), 1);
  EXPECT_EQ(Count(*c, "SELECT SUM(`count`) FROM visits_per_day"), Count(*c, "SELECT COUNT(*) FROM ref_visits"));
}

// Application servers whose clocks disagree (issue 37). On ids with holes, one
// transaction takes an id and stays open (well inside --settle); 30 events commit above it
// written by `above_clock`, then the head by `head_clock` (SQL expressions for createdAt).
// The cut-over must wait for that transaction and apply its event: whether the server shows
// its open transactions (`with_process`, the proof) or not (the fallback rule), no one clock
// may make the hole look final.
void ExpectALateCommitUnderSkewedClocks(const std::string& name, const std::string& above_clock,
                                        const std::string& head_clock, bool with_process) {
  ConnectionOptions o = Store(name, 20'000, 0, ProductionIdShapes()[1]);
  auto c = Connect(o);
  auto insert = [](Connection& conn, const std::string& url, const std::string& clock) {
    return conn.Execute(fmt::format("INSERT INTO stored_events (uuid, eventClass, payload, createdAt) VALUES "
                                    "('u', {}, {}, {})",
                                    conn.Quote(kClass), conn.Quote(Payload(url, "2031-05-06T07:08:09+00:00")), clock));
  };
  auto app = Connect(o);
  ASSERT_TRUE(app->Execute("START TRANSACTION").ok());
  ASSERT_TRUE(insert(*app, "/late-commit", "UTC_TIMESTAMP()").ok());
  for (int i = 0; i < 30; ++i) ASSERT_TRUE(insert(*c, "/above", above_clock).ok());
  ASSERT_TRUE(insert(*c, "/head", head_clock).ok());
  ConnectionOptions run_as = o;
  if (!with_process) {
    run_as = UserWith(*c, o, "rw_np_" + name.substr(name.size() - 8),
                      "SELECT, INSERT, UPDATE, DELETE, CREATE, DROP, ALTER, LOCK TABLES");
  }
  const std::string out_file = ::testing::TempDir() + "/rewind_skew_" + name;
  Subprocess run(Rewind({"replay", "visits_per_day", "--progress", "plain", "--cutover-timeout", "120"}),
                 Env(run_as), out_file);
  ASSERT_TRUE(run.WaitFor("kept the lock waiting", 120)) << run.err();
  ASSERT_TRUE(app->Execute("COMMIT").ok());
  EXPECT_EQ(run.Wait(), 0) << run.err();
  std::ifstream in(out_file);
  const std::string out((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(out.find(with_process ? "finality: missing ids proven final by the server"
                                  : "finality: missing ids judged final by the event table's times"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find(" 1 late commit(s)"), std::string::npos) << out;
  // The independent count: the server's, of every committed visit on that day.
  EXPECT_EQ(Count(*c, "SELECT `count` FROM visits_per_day WHERE `date` = '2031-05-06'"),
            Count(*c, "SELECT COUNT(*) FROM stored_events WHERE BINARY eventClass = BINARY 'App\\\\Analytics\\\\PageVisited' "
                      "AND JSON_VALUE(payload, '$.visitedAt') LIKE '2031-05-06%'"));
  EXPECT_EQ(Count(*c, "SELECT `count` FROM visits_per_day WHERE `date` = '2031-05-06'"), 32);
}

TEST(NothingLost, ALateCommitIsKeptWhenOneServersClockRunsAhead) {
  ExpectALateCommitUnderSkewedClocks("rewind_test_skew_ahead", "UTC_TIMESTAMP()",
                                     "UTC_TIMESTAMP() + INTERVAL 90 SECOND", true);
}

TEST(NothingLost, ALateCommitIsKeptWhenTheWritersAboveItRunSlow) {
  ExpectALateCommitUnderSkewedClocks("rewind_test_skew_slow", "UTC_TIMESTAMP() - INTERVAL 120 SECOND",
                                     "UTC_TIMESTAMP()", true);
}

TEST(NothingLost, WithoutProcessALateCommitIsKeptWhenOneServersClockRunsAhead) {
  ExpectALateCommitUnderSkewedClocks("rewind_test_skew_ahead_np", "UTC_TIMESTAMP()",
                                     "UTC_TIMESTAMP() + INTERVAL 90 SECOND", false);
}

TEST(NothingLost, WithoutProcessALateCommitIsKeptWhenTheWritersAboveItRunSlow) {
  ExpectALateCommitUnderSkewedClocks("rewind_test_skew_slow_np", "UTC_TIMESTAMP() - INTERVAL 120 SECOND",
                                     "UTC_TIMESTAMP()", false);
}

// (Follow with a late commit: tests/id_shape_test.cc, IdShapes.FollowAppliesALateCommitOnce, on
// dense ids and the shapes of production tables.)

// A gap that never fills is given up after the settle window, counted, and no longer read.
TEST(NothingLost, AGapThatNeverFillsIsGivenUpAndCounted) {
  ConnectionOptions o = Store("rewind_test_given_up", 1'000);
  auto c = Connect(o);
  ReplayOptions ro;
  ro.connection = o;
  ro.projectors = {"visits_per_day"};
  ro.settle_seconds = 0.2;
  Follower follower(ro);
  ASSERT_TRUE(follower.following());
  auto app = Connect(o);
  ASSERT_TRUE(app->Execute("START TRANSACTION").ok());
  ASSERT_TRUE(Insert(*app, kClass, Payload("/rolled-back", "2024-05-06T07:08:09+00:00")).ok());
  ASSERT_TRUE(Insert(*c, kClass, Payload("/kept", "2024-05-06T07:08:10+00:00")).ok());
  EXPECT_TRUE(WaitUntil(*c, "SELECT gaps_given_up FROM rewind_checkpoints WHERE projector = 'visits_per_day'", 1));
  ASSERT_TRUE(app->Execute("ROLLBACK").ok());
  const ReplaySummary& sum = follower.Stop();
  ASSERT_TRUE(sum.status.ok()) << sum.status.message();
  EXPECT_EQ(sum.gaps_given_up, 1u);
  EXPECT_EQ(Count(*c, "SELECT SUM(`count`) FROM visits_per_day"),
            Count(*c, "SELECT COUNT(*) FROM stored_events WHERE BINARY eventClass = BINARY 'App\\\\Analytics\\\\PageVisited'"));
}

// A long transaction on a live table keeps the swap waiting: rewind retries with short
// waits (the application's reads of that table never wait long), gives up cleanly after
// --cutover-timeout (exit 6, live tables untouched), and --resume finishes the job.
TEST(NothingLost, ACutOverThatCannotGetItsLocksGivesUpCleanly) {
  ConnectionOptions o = Store("rewind_test_cutover", 3'000);
  auto c = Connect(o);
  EXPECT_EQ(RunRewind({"replay", "visits_per_day", "--quiet"}, Env(o)).code, 0);
  const int64_t live_total = Count(*c, "SELECT SUM(`count`) FROM visits_per_day");
  ASSERT_TRUE(Insert(*c, kClass, Payload("/new", "2024-01-01T00:00:00Z")).ok());
  auto holder = Connect(o);
  ASSERT_TRUE(holder->Execute("START TRANSACTION").ok());
  ASSERT_TRUE(holder->Query("SELECT COUNT(*) FROM visits_per_day").ok());  // holds its metadata lock
  // The bound on the application's wait comes from the cut-over's own: each of its lock
  // waits gives up after lock_wait_timeout = 1 s (stages/db/table_admin.h), and it lets go
  // between tries. A read of the live table that arrives while the swap's RENAME waits
  // queues behind it (a waiting exclusive metadata lock goes first), so it waits at most
  // that one wait. The bound allows that second and three more for a loaded machine (the
  // server's threads or this process scheduled late). The cut-over is given 8 s, twice the
  // bound: one whose wait was not bounded per try (it waited out its whole deadline) would
  // keep such a read about 8 s.
  constexpr double kPerWaitSeconds = 1;
  constexpr double kBoundSeconds = kPerWaitSeconds + 3;
  Subprocess run(Rewind({"replay", "visits_per_day", "--quiet", "--cutover-timeout", "8"}), Env(o));
  // Meanwhile the application keeps reading the live table, each read sent once the server
  // shows the RENAME waiting for its lock: every read timed here queues behind the cut-over.
  auto reader = Connect(o);
  auto observer = Connect(o);
  const std::string rename_waits = fmt::format(
      "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE DB = {} AND STATE = 'Waiting for "
      "table metadata lock' AND INFO LIKE '%RENAME TABLE%'", observer->Quote(o.database));
  double slowest = 0;
  int reads_behind_the_cutover = 0;
  while (!run.WaitFor("gave up", 0.01)) {
    if (Count(*observer, rename_waits) == 0) continue;
    ++reads_behind_the_cutover;
    const auto t0 = std::chrono::steady_clock::now();
    ASSERT_TRUE(reader->Query("SELECT SUM(`count`) FROM visits_per_day").ok());
    slowest = std::max(slowest, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  EXPECT_EQ(run.Wait(), 6) << run.err();
  EXPECT_NE(run.err().find("the live tables are untouched"), std::string::npos) << run.err();
  EXPECT_NE(run.err().find("rewind replay --resume"), std::string::npos) << run.err();
  EXPECT_GT(reads_behind_the_cutover, 0) << "no read met the cut-over waiting: nothing was measured";
  EXPECT_LT(slowest, kBoundSeconds);
  ASSERT_TRUE(holder->Execute("COMMIT").ok());
  EXPECT_EQ(Count(*c, "SELECT SUM(`count`) FROM visits_per_day"), live_total);
  Outcome resumed = RunRewind({"replay", "--resume", "visits_per_day", "--quiet"}, Env(o));
  EXPECT_EQ(resumed.code, 0) << resumed.err;
  EXPECT_EQ(Count(*c, "SELECT SUM(`count`) FROM visits_per_day"), live_total + 1);
}

// ---------------------------------------------------------------- odd events and tables

TEST(OddInput, AFailureReasonCutInACharacterNeverBlocksARebuild) {
  ConnectionOptions o = Store("rewind_test_utf8_reason", 500);
  auto c = Connect(o);
  std::string at = "2024-01-01T00:00:0";  // unparseable; the excerpt is cut at 80 bytes
  for (int i = 0; i < 40; ++i) at += "\xC3\xA9";  // é é é ...
  ASSERT_TRUE(Insert(*c, kClass, Payload("/x", at)).ok());
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"replay", "--all", "--quiet"}, {"replay", "visits_per_day", "--quiet"}}) {
    Outcome out = RunRewind(args, Env(o));
    EXPECT_EQ(out.code, 3) << out.err;
  }
  EXPECT_EQ(Count(*c, "SELECT COUNT(*) FROM rewind_failures WHERE reason LIKE 'unparseable visitedAt%'"), 2);
  EXPECT_EQ(Count(*c, "SELECT COUNT(*) FROM rewind_failures WHERE excerpt LIKE '{\"uuid\"%'"), 2);
}

TEST(OddInput, TheIdColumnIsCheckedBeforeAnyWork) {
  ConnectionOptions o = FreshDatabase("rewind_test_id_column");
  auto c = Connect(o);
  struct Case {
    const char* ddl;
    const char* says;
  };
  const Case cases[] = {
      {"id BIGINT NOT NULL, KEY (id)", "is not unique"},
      {"id DOUBLE NOT NULL PRIMARY KEY", "not an integer"},
      {"id VARCHAR(20) NOT NULL PRIMARY KEY", "not an integer"},
      {"id BIGINT NULL, UNIQUE KEY (id)", "allows NULL"},
      {"id BIGINT NOT NULL, k INT NOT NULL, UNIQUE KEY (id, k)", "is not unique"},
  };
  for (const Case& k : cases) {
    ASSERT_TRUE(c->Execute("DROP TABLE IF EXISTS stored_events").ok());
    ASSERT_TRUE(c->Execute(fmt::format("CREATE TABLE stored_events ({}, uuid CHAR(36), eventClass "
                                       "VARCHAR(255), payload TEXT, createdAt DATETIME)",
                                       k.ddl)).ok());
    Outcome out = RunRewind({"replay", "--all", "--quiet"}, Env(o));
    EXPECT_EQ(out.code, 1) << k.ddl;
    EXPECT_NE(out.err.find(k.says), std::string::npos) << k.ddl << ": " << out.err;
  }
}

// Negative ids, and unsigned ids above 2^63: every event is read, none twice.
TEST(OddInput, EveryIdOfSignedAndUnsignedBigintIsRead) {
  ConnectionOptions o = FreshDatabase("rewind_test_id_range");
  auto c = Connect(o);
  for (const char* type : {"BIGINT", "BIGINT UNSIGNED"}) {
    SCOPED_TRACE(type);
    ASSERT_TRUE(c->Execute("DROP TABLE IF EXISTS stored_events").ok());
    ASSERT_TRUE(c->Execute(fmt::format("CREATE TABLE stored_events (id {} NOT NULL PRIMARY KEY, uuid "
                                       "CHAR(36), eventClass VARCHAR(255), payload TEXT, createdAt "
                                       "DATETIME)", type)).ok());
    const bool is_unsigned = std::string(type).find("UNSIGNED") != std::string::npos;
    const std::vector<std::string> ids =
        is_unsigned ? std::vector<std::string>{"0", "1", "9223372036854775807", "9223372036854775808",
                                               "18446744073709551614", "18446744073709551615"}
                    : std::vector<std::string>{"-9223372036854775808", "-5", "0", "7", "9223372036854775807"};
    for (size_t i = 0; i < ids.size(); ++i) {
      ASSERT_TRUE(c->Execute(fmt::format("INSERT INTO stored_events VALUES ({}, 'u', {}, {}, NOW())", ids[i],
                                         c->Quote(kClass),
                                         c->Quote(Payload("/p" + std::to_string(i), "2024-02-0" +
                                                          std::to_string(i + 1) + "T00:00:00Z")))).ok());
    }
    Outcome out = RunRewind({"replay", "--all", "--quiet", "--batch-size", "2"}, Env(o));
    EXPECT_EQ(out.code, 0) << out.err;
    EXPECT_EQ(Count(*c, "SELECT SUM(`count`) FROM visits_per_day"), static_cast<int64_t>(ids.size()));
    EXPECT_EQ(Count(*c, "SELECT COUNT(*) FROM visits_per_day"), static_cast<int64_t>(ids.size()));
  }
}

// Ids dense, then far apart, then dense again, read on one connection and on two (pages as
// id ranges whose span follows the density): every event is read once, whatever the span
// guessed (a range far denser than guessed is cut at the batch), and events of another
// class in the dense runs count toward the pages but not the read models.
TEST(OddInput, IdsFromDenseToSparseToDenseAreReadOnceOnOneConnectionOrTwo) {
  ConnectionOptions o = FreshDatabase("rewind_test_id_density");
  auto c = Connect(o);
  ASSERT_TRUE(c->Execute("CREATE TABLE stored_events (id BIGINT NOT NULL PRIMARY KEY, uuid CHAR(36), "
                         "eventClass VARCHAR(255), payload TEXT, createdAt DATETIME)").ok());
  std::vector<int64_t> ids;
  for (int64_t i = 1; i <= 300; ++i) ids.push_back(i);
  for (int64_t id : {1'000LL, 5'000LL, 100'000LL, 1'000'000'000LL}) ids.push_back(id);
  for (int64_t i = 1; i <= 400; ++i) ids.push_back(1'000'000'000LL + i);
  for (int64_t i = 0; i < 50; ++i) ids.push_back(1'000'000'000'000LL + i * 7);
  for (int64_t i = 1; i <= 200; ++i) ids.push_back(2'000'000'000'000LL + i);
  std::string values;
  for (size_t i = 0; i < ids.size(); ++i) {
    const bool other = ids[i] % 10 == 3;  // another class, in the dense runs
    values += fmt::format("{}({}, 'u', {}, {}, NOW())", values.empty() ? "" : ", ", ids[i],
                          c->Quote(other ? "App\\Other" : kClass),
                          c->Quote(Payload("/p", fmt::format("2024-03-{:02}T00:00:00Z", 1 + ids[i] % 28))));
  }
  ASSERT_TRUE(c->Execute("INSERT INTO stored_events VALUES " + values).ok());
  CreateReferenceView(*c);
  const int64_t wanted = Count(*c, "SELECT COUNT(*) FROM stored_events WHERE eventClass <> 'App\\\\Other'");
  ASSERT_GT(wanted, 800);  // 954 events, a tenth of another class
  for (const char* connections : {"1", "2", "3"}) {
    SCOPED_TRACE(connections);
    Outcome out = RunRewind({"replay", "visits_per_day", "--quiet", "--batch-size", "25", "--read-connections",
                             connections}, Env(o));
    ASSERT_EQ(out.code, 0) << out.err;
    EXPECT_EQ(Count(*c, "SELECT SUM(`count`) FROM visits_per_day"), wanted);
    EXPECT_EQ(CompareWithReference(*c, "visits_per_day", ReferenceQueries().at("visits_per_day")), "");
  }
}

// A server with the default net_buffer_length writes a result in 16 KB pieces. rewind pads
// each page query that may bring 256 events or more with a comment so that the server reads
// it into a buffer of --result-buffer bytes (128 KB by default) and writes that page's rows
// through it; smaller pages (a trickle in follow mode) are sent as they are. The padded
// query always fits the server's max_allowed_packet, however small, and the read models
// are the same.
TEST(HostileServer, PageQueriesArePaddedToTheResultBufferWithinMaxAllowedPacket) {
  ConnectionOptions o = Store("rewind_test_result_buffer", 2'000);
  auto c = Connect(o);
  GlobalsRestored restored(*c, {"net_buffer_length", "max_allowed_packet", "general_log", "log_output"});
  ASSERT_TRUE(c->Execute("SET GLOBAL net_buffer_length = 16384").ok());
  ASSERT_TRUE(c->Execute("SET GLOBAL log_output = 'TABLE'").ok());
  CreateReferenceView(*c);
  // The page queries rewind sent: keyset and range pages end with `ORDER BY id LIMIT n`.
  const std::string page_queries =
      "FROM mysql.general_log WHERE command_type = 'Query' AND argument LIKE 'SELECT `id`, CASE%' "
      "AND argument LIKE '%FROM `stored_events`%LIMIT%'";
  struct Case {
    int64_t max_allowed_packet;
    const char* batch_size;
    int64_t shortest_at_least;  // every page query is at least this long
    int64_t longest_at_most;
  };
  for (const Case& k : {Case{67108864, "500", 131072, 131072}, Case{65536, "500", 32768, 32768},
                        Case{16384, "500", 0, 4096}, Case{67108864, "100", 0, 4096}}) {
    SCOPED_TRACE(fmt::format("max_allowed_packet {}, batch size {}", k.max_allowed_packet, k.batch_size));
    ASSERT_TRUE(c->Execute(fmt::format("SET GLOBAL max_allowed_packet = {}", k.max_allowed_packet)).ok());
    ASSERT_TRUE(c->Execute("SET GLOBAL general_log = 0").ok());
    ASSERT_TRUE(c->Execute("TRUNCATE mysql.general_log").ok());
    ASSERT_TRUE(c->Execute("SET GLOBAL general_log = 1").ok());
    Outcome out = RunRewind({"replay", "visits_per_day", "--quiet", "--batch-size", k.batch_size}, Env(o));
    ASSERT_TRUE(c->Execute("SET GLOBAL general_log = 0").ok());
    ASSERT_EQ(out.code, 0) << out.err;
    EXPECT_EQ(CompareWithReference(*c, "visits_per_day", ReferenceQueries().at("visits_per_day")), "");
    EXPECT_GE(Count(*c, "SELECT COUNT(*) " + page_queries), 4);  // 2,000 events, 500 or 100 a page
    EXPECT_GE(Count(*c, "SELECT MIN(LENGTH(argument)) " + page_queries), k.shortest_at_least);
    EXPECT_LE(Count(*c, "SELECT MAX(LENGTH(argument)) " + page_queries), k.longest_at_most);
  }
}

TEST(OddInput, TheEventClassIsComparedByteForByte) {
  ConnectionOptions o = Store("rewind_test_class_bytes", 1'000);
  auto c = Connect(o);
  ASSERT_TRUE(c->Execute("ALTER TABLE stored_events MODIFY eventClass VARCHAR(255) COLLATE utf8mb4_general_ci").ok());
  for (const char* cls : {"app\\analytics\\pagevisited", "App\\Analytics\\PageVisited ",
                          "App\\Analytics\\PágeVisited"}) {
    ASSERT_TRUE(Insert(*c, cls, Payload("/look-alike", "2024-01-01T00:00:00Z")).ok());
  }
  EXPECT_EQ(RunRewind({"replay", "--all", "--quiet"}, Env(o)).code, 0);
  EXPECT_EQ(Count(*c, "SELECT COUNT(*) FROM visits_per_post_per_day WHERE uri = '/look-alike'"), 0);
  ExpectEveryReadModelMatchesTheEvents(*c);
}

// The class filter runs in the server, cheaply but exactly, whatever the type column's
// character set: look-alikes (another case, a trailing space, an accent) are other
// classes, for one class and for several (the declared read models' CASE).
TEST(OddInput, EveryClassIsMatchedExactlyWhateverTheColumnsCharacterSet) {
  const std::string models = ::testing::TempDir() + "/rewind_class_models.toml";
  std::ofstream(models) << R"([[read_model]]
name   = "pings"
events = ['App\Ping', 'App\Pong']
key    = [{ column = "kind", path = "kind" }]
values = [{ column = "n", op = "count" }]
)";
  for (const char* column : {"VARCHAR(255) COLLATE utf8mb4_general_ci",
                             "VARCHAR(255) CHARACTER SET utf8mb3 COLLATE utf8mb3_general_ci",
                             "VARCHAR(255) CHARACTER SET latin1", "VARBINARY(255)"}) {
    SCOPED_TRACE(column);
    ConnectionOptions o = Store("rewind_test_class_charsets", 300);
    auto c = Connect(o);
    ASSERT_TRUE(c->Execute(fmt::format("ALTER TABLE stored_events MODIFY eventClass {} NOT NULL", column)).ok());
    for (const char* cls : {"app\\analytics\\pagevisited", "App\\Analytics\\PageVisited ",
                            "App\\Analytics\\PágeVisited", "APP\\ANALYTICS\\PAGEVISITED"}) {
      ASSERT_TRUE(Insert(*c, cls, Payload("/look-alike", "2024-01-01T00:00:00Z")).ok());
    }
    for (const char* cls : {"App\\Ping", "App\\Pong", "App\\Pong", "app\\ping", "App\\Ping ", "App\\Póng"}) {
      ASSERT_TRUE(Insert(*c, cls, R"({"kind":"k"})").ok());
    }
    Outcome one = RunRewind({"replay", "--all", "--quiet"}, Env(o));
    EXPECT_EQ(one.code, 0) << one.err;
    EXPECT_EQ(Count(*c, "SELECT COUNT(*) FROM visits_per_post_per_day WHERE uri = '/look-alike'"), 0);
    ExpectEveryReadModelMatchesTheEvents(*c);
    Outcome several = RunRewind({"replay", "--all", "--quiet", "--models", models}, Env(o));
    EXPECT_EQ(several.code, 0) << several.err;
    EXPECT_EQ(Count(*c, "SELECT COUNT(*) FROM visits_per_post_per_day WHERE uri = '/look-alike'"), 0);
    ExpectEveryReadModelMatchesTheEvents(*c);
    EXPECT_EQ(Count(*c, "SELECT SUM(n) FROM pings"), 3);  // one Ping, two Pongs
  }
  std::remove(models.c_str());
}

TEST(OddInput, UrlsOfAnyLengthAreStoredWholeOrRecordedNeverCut) {
  ConnectionOptions o = Store("rewind_test_long_urls", 200);
  auto c = Connect(o);
  ASSERT_TRUE(c->Execute("ALTER TABLE stored_events MODIFY payload LONGTEXT").ok());
  const std::string base = "/" + std::string(70'000, 'a');
  ASSERT_TRUE(Insert(*c, kClass, Payload(base + "-one", "2024-01-01T00:00:00Z")).ok());
  ASSERT_TRUE(Insert(*c, kClass, Payload(base + "-two", "2024-01-01T00:00:00Z")).ok());
  ASSERT_TRUE(Insert(*c, kClass, Payload(base + "-two", "2024-01-01T00:00:00Z")).ok());
  ASSERT_TRUE(Insert(*c, kClass, Payload("/" + std::string(1 << 20, 'b'), "2024-01-01T00:00:00Z")).ok());
  for (int round = 0; round < 2; ++round) {  // the bulk load, then the upsert path
    Outcome out = round == 0 ? RunRewind({"replay", "visits_per_post_per_day", "--quiet"}, Env(o))
                             : RunRewind({"replay", "visits_per_post_per_day", "--quiet", "--flush-every", "1", "--batch-size", "1"}, Env(o));
    EXPECT_EQ(out.code, 3) << out.err;  // the 1 MiB + 2 bytes URL is a failure
    EXPECT_EQ(Count(*c, "SELECT COUNT(*) FROM visits_per_post_per_day WHERE LENGTH(uri) > 65535"), 2);
    EXPECT_EQ(Count(*c, "SELECT `count` FROM visits_per_post_per_day WHERE uri = CONCAT('/', REPEAT('a', 70000), '-two')"), 2);
  }
  EXPECT_EQ(Count(*c, "SELECT COUNT(*) FROM rewind_failures WHERE reason LIKE '%more than the 1048576%'"), 2);
}

TEST(OddInput, DatesOutsideTheSupportedRangeAreFailures) {
  ConnectionOptions o = Store("rewind_test_year_zero", 200);
  auto c = Connect(o);
  ASSERT_TRUE(Insert(*c, kClass, Payload("/year-zero", "0000-01-03T00:00:00Z")).ok());
  ASSERT_TRUE(Insert(*c, kClass, Payload("/year-one", "0001-01-01T00:00:00Z")).ok());
  Outcome out = RunRewind({"replay", "--all", "--quiet", "--flush-every", "1", "--batch-size", "50"}, Env(o));
  EXPECT_EQ(out.code, 3) << out.err;
  EXPECT_EQ(Count(*c, "SELECT COUNT(*) FROM rewind_failures WHERE reason LIKE '%0000-01-03%'"), 1);
  EXPECT_EQ(Count(*c, "SELECT `count` FROM visits_per_post_per_week WHERE uri = '/year-one' AND `date` = '0001-01-01'"), 1);
}

// ---------------------------------------------------------------- runs that own things

TEST(Ownership, AResumeRefusesABuildOfAnotherSourceOrSet) {
  ConnectionOptions o = Store("rewind_test_resume_source", 3'000);
  {
    std::vector<std::string> env = Env(o);
    env.push_back("REWIND_FAULT=before-swap");
    Subprocess run(Rewind({"replay", "--all", "--quiet"}), env);
    ASSERT_TRUE(run.WaitFor("fault point", 120)) << run.err();
    run.Signal(SIGKILL);
    run.Wait();
  }
  Outcome other_class = RunRewind({"replay", "--resume", "--all", "--quiet", "--event-class", "Other"}, Env(o));
  EXPECT_EQ(other_class.code, 1);
  EXPECT_NE(other_class.err.find("read another event source"), std::string::npos) << other_class.err;
  Outcome other_set = RunRewind({"replay", "--resume", "visits_per_day", "--quiet"}, Env(o));
  EXPECT_EQ(other_set.code, 1);
  EXPECT_NE(other_set.err.find("another set of read models"), std::string::npos) << other_set.err;
  Outcome same = RunRewind({"replay", "--resume", "--all", "--quiet"}, Env(o));
  EXPECT_EQ(same.code, 0) << same.err;
  auto c = Connect(o);
  ExpectEveryReadModelMatchesTheEvents(*c);
}

TEST(Ownership, TwoVerifiesNeverTouchEachOthersScratchTables) {
  ConnectionOptions o = Store("rewind_test_two_verifies", 3'000);
  auto c = Connect(o);
  EXPECT_EQ(RunRewind({"replay", "--all", "--quiet"}, Env(o)).code, 0);
  const std::string scratch = "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = "
                              "DATABASE() AND TABLE_NAME LIKE '%\\_\\_rewind\\_verify'";
  {
    std::vector<std::string> env = Env(o);
    env.push_back("REWIND_FAULT=after-build");
    Subprocess first(Rewind({"verify", "--quiet"}), env);
    ASSERT_TRUE(first.WaitFor("fault point", 120)) << first.err();
    const int64_t tables = Count(*c, scratch);
    EXPECT_EQ(tables, static_cast<int64_t>(AllProjectors().size()));
    Outcome second = RunRewind({"verify", "visits_per_day", "--quiet"}, Env(o));
    EXPECT_EQ(second.code, 1);
    EXPECT_NE(second.err.find("already verifying"), std::string::npos) << second.err;
    EXPECT_EQ(Count(*c, scratch), tables);  // the refused one dropped nothing
    first.Signal(SIGKILL);  // killed: its scratch tables stay behind...
    first.Wait();
  }
  EXPECT_EQ(Count(*c, scratch), static_cast<int64_t>(AllProjectors().size()));
  // ...until the next verify, which cleans them (and their checkpoint rows) up.
  Outcome next = RunRewind({"verify", "visits_per_day", "--quiet"}, Env(o));
  EXPECT_EQ(next.code, 0) << next.err;
  EXPECT_EQ(Count(*c, scratch), 0);
  EXPECT_EQ(Count(*c, "SELECT COUNT(*) FROM rewind_checkpoints WHERE target_table LIKE '%verify'"), 0);
}

TEST(Ownership, DatabasesWithALongCommonPrefixDoNotShareLocks) {
  const std::string prefix(58, 'p');
  ConnectionOptions a = Store(prefix + "_one", 500), b = Store(prefix + "_two", 500);
  const std::string file = PauseFile("long_names");
  std::vector<std::string> env = Env(a);
  env.push_back("REWIND_FAULT=before-catch-up@" + file);
  Subprocess first(Rewind({"replay", "--all", "--quiet"}), env);
  ASSERT_TRUE(first.WaitFor("fault point", 60)) << first.err();
  Outcome second = RunRewind({"replay", "--all", "--quiet"}, Env(b));
  EXPECT_EQ(second.code, 0) << second.err;
  Release(file);
  EXPECT_EQ(first.Wait(), 0) << first.err();
  auto c = Connect(ServerOptions());
  ASSERT_TRUE(c->Execute("DROP DATABASE " + QuoteIdentifier(a.database)).ok());
  ASSERT_TRUE(c->Execute("DROP DATABASE " + QuoteIdentifier(b.database)).ok());
}

// A database rebuilt by an older rewind: its bookkeeping tables are migrated forward.
TEST(Ownership, BookkeepingTablesOfTheOldLayoutAreMigrated) {
  ConnectionOptions o = Store("rewind_test_schema_v1", 1'000);
  auto c = Connect(o);
  ASSERT_TRUE(c->Execute(
      "CREATE TABLE rewind_checkpoints (projector VARCHAR(64) NOT NULL PRIMARY KEY, live_table "
      "VARCHAR(64) NOT NULL, building_table VARCHAR(64) NULL, status VARCHAR(16) NOT NULL, run_id "
      "VARCHAR(64) NOT NULL, last_event_id BIGINT NOT NULL DEFAULT 0, head_event_id BIGINT NOT NULL "
      "DEFAULT 0, events_applied BIGINT UNSIGNED NOT NULL DEFAULT 0, rows_written BIGINT UNSIGNED NOT "
      "NULL DEFAULT 0, started_at DATETIME(6) NULL, updated_at DATETIME(6) NULL, finished_at "
      "DATETIME(6) NULL, seconds DOUBLE NULL, events_per_second DOUBLE NULL) ENGINE=InnoDB DEFAULT "
      "CHARSET=utf8mb4").ok());
  ASSERT_TRUE(c->Execute(
      "CREATE TABLE rewind_failures (id BIGINT AUTO_INCREMENT PRIMARY KEY, run_id VARCHAR(64) NOT "
      "NULL, event_id BIGINT NOT NULL, stage VARCHAR(64) NOT NULL, reason TEXT NOT NULL, recorded_at "
      "DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6), KEY (run_id), KEY (event_id)) ENGINE=InnoDB "
      "DEFAULT CHARSET=utf8mb4").ok());
  ASSERT_TRUE(c->Execute("INSERT INTO rewind_checkpoints (projector, live_table, status, run_id, last_event_id) "
                         "VALUES ('visits_per_month', 'visits_per_month', 'live', 'old-run', 1000), "
                         "('visits_per_year@verify', 'visits_per_year', 'building', 'old-verify', 5)").ok());
  ASSERT_TRUE(c->Execute("UPDATE rewind_checkpoints SET building_table = 'visits_per_year__rewind_verify' "
                         "WHERE run_id = 'old-verify'").ok());
  ASSERT_TRUE(c->Execute("INSERT INTO rewind_failures (run_id, event_id, stage, reason) VALUES ('old-run', 7, 'decoder', 'x')").ok());
  Outcome out = RunRewind({"replay", "visits_per_day", "--quiet"}, Env(o));
  EXPECT_EQ(out.code, 0) << out.err;
  EXPECT_EQ(Count(*c, "SELECT version FROM rewind_schema"), kSchemaVersion);
  EXPECT_EQ(Count(*c, "SELECT last_event_id FROM rewind_checkpoints WHERE projector = 'visits_per_month' "
                      "AND target_table = 'visits_per_month'"), 1000);
  EXPECT_EQ(Count(*c, "SELECT COUNT(*) FROM rewind_checkpoints WHERE projector = 'visits_per_year' AND "
                      "target_table = 'visits_per_year__rewind_verify'"), 1);
  EXPECT_EQ(Count(*c, "SELECT COUNT(*) FROM rewind_checkpoints WHERE projector = 'visits_per_day' AND "
                      "target_table = 'visits_per_day' AND status = 'live'"), 1);
  EXPECT_EQ(Count(*c, "SELECT COUNT(*) FROM rewind_failures WHERE run_id = 'old-run'"), 1);
  // A second rewind finds the work done.
  EXPECT_EQ(RunRewind({"status"}, Env(o)).code, 0);
  EXPECT_EQ(RunRewind({"replay", "visits_per_day", "--quiet"}, Env(o)).code, 0);
}

// ---------------------------------------------------------------- only what rewind made (#23)

// The tables of the database with their row counts, as one string: what a refused run
// must leave exactly as it was.
std::string Tables(Connection& c) {
  std::string out;
  auto names = c.Query("SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() "
                       "ORDER BY TABLE_NAME");
  EXPECT_TRUE(names.ok());
  for (const auto& r : names->rows) {
    out += fmt::format("{}={} ", *r[0], Count(c, "SELECT COUNT(*) FROM " + QuoteIdentifier(*r[0])));
  }
  return out;
}

// The hostile tester's first case: --into with a suffix that makes the target the event
// table itself. Refused before any work, naming the table; the events are all there.
TEST(Ownership, IntoNeverReplacesTheEventTable) {
  ConnectionOptions o = Store("rewind_test_into_events", 2'000);
  auto c = Connect(o);
  ASSERT_TRUE(c->Execute("RENAME TABLE stored_events TO visits_per_day_src").ok());
  const std::string before = Tables(*c);
  Outcome run = RunRewind({"replay", "visits_per_day", "--events-table", "visits_per_day_src", "--into", "_src",
                           "--quiet"}, Env(o));
  EXPECT_NE(run.code, 0);
  EXPECT_NE(run.err.find("visits_per_day_src"), std::string::npos) << run.err;
  EXPECT_NE(run.err.find("event table"), std::string::npos) << run.err;
  EXPECT_EQ(run.err.find("has no column"), std::string::npos) << run.err;  // refused before any work
  EXPECT_EQ(Count(*c, "SELECT COUNT(*) FROM visits_per_day_src"), 2'000);
  EXPECT_EQ(Tables(*c), before);
}

// A declared read model named `rewind` built --into _checkpoints would be rewind's own
// bookkeeping table: refused, the bookkeeping untouched.
TEST(Ownership, IntoNeverReplacesRewindsBookkeeping) {
  ConnectionOptions o = Store("rewind_test_into_bookkeeping", 2'000);
  auto c = Connect(o);
  ASSERT_EQ(RunRewind({"replay", "visits_per_day", "--quiet"}, Env(o)).code, 0);
  const std::string file = ::testing::TempDir() + "/model-named-rewind.toml";
  std::ofstream(file) << R"toml(
[[read_model]]
name   = "rewind"
events = ['App\Analytics\PageVisited']
key    = [{ column = "date", path = "visitedAt", bucket = "day" }]
values = [{ column = "count", op = "count" }]
)toml";
  const std::string rows = "SELECT GROUP_CONCAT(projector, target_table, status, last_event_id ORDER BY projector) "
                           "FROM rewind_checkpoints";
  const std::string checkpoints = *c->QueryValue(rows).value();
  const std::string before = Tables(*c);
  Outcome run = RunRewind({"replay", "rewind", "--models", file, "--into", "_checkpoints", "--quiet"}, Env(o));
  EXPECT_NE(run.code, 0);
  EXPECT_NE(run.err.find("rewind_checkpoints"), std::string::npos) << run.err;
  EXPECT_EQ(*c->QueryValue(rows).value(), checkpoints);
  EXPECT_EQ(Tables(*c), before);
  // The dry run says the same, as a refusal.
  Outcome dry = RunRewind({"replay", "rewind", "--models", file, "--into", "_checkpoints", "--dry-run"}, Env(o));
  EXPECT_EQ(dry.code, 1) << dry.out;
  EXPECT_NE(dry.out.find("rewind_checkpoints"), std::string::npos) << dry.out;
}

// A build table whose name the server cannot hold (a long declared name and a long --into
// suffix): refused before any work by the run, and by the dry run with the same reason.
TEST(Ownership, ABuildTableNameLongerThanTheServerAllowsIsRefusedByTheDryRunToo) {
  ConnectionOptions o = Store("rewind_test_long_name", 500);
  auto c = Connect(o);
  const std::string file = ::testing::TempDir() + "/long_name.toml";
  const std::string name(40, 'v');
  std::ofstream(file) << fmt::format(R"toml(
[[read_model]]
name   = "{}"
events = ['App\Analytics\PageVisited']
key    = [{{ column = "date", path = "visitedAt", bucket = "day" }}]
values = [{{ column = "count", op = "count" }}]
)toml", name);
  const std::string suffix = "_" + std::string(30, 's');
  const std::string before = Tables(*c);
  Outcome run = RunRewind({"replay", name, "--models", file, "--into", suffix, "--quiet"}, Env(o));
  EXPECT_EQ(run.code, 1) << run.err;
  EXPECT_NE(run.err.find("longer than 64 characters"), std::string::npos) << run.err;
  EXPECT_EQ(Tables(*c), before);
  Outcome dry = RunRewind({"replay", name, "--models", file, "--into", suffix, "--dry-run"}, Env(o));
  EXPECT_EQ(dry.code, 1) << dry.out;
  EXPECT_NE(dry.out.find("longer than 64 characters"), std::string::npos) << dry.out;
  EXPECT_EQ(Tables(*c), before);
}

// A user's own table where --into would build: refused, by a run and by a dry run; the
// user's rows survive. Once the user drops it, the build goes ahead, and a second build
// into the same suffix replaces what the first one made.
TEST(Ownership, IntoNeverReplacesAUsersTable) {
  ConnectionOptions o = Store("rewind_test_into_user", 2'000);
  auto c = Connect(o);
  ASSERT_TRUE(c->Execute("CREATE TABLE visits_per_day_backup (id INT PRIMARY KEY)").ok());
  ASSERT_TRUE(c->Execute("INSERT INTO visits_per_day_backup VALUES (1), (2), (3)").ok());
  const std::string before = Tables(*c);
  Outcome run = RunRewind({"replay", "visits_per_day", "--into", "_backup", "--quiet"}, Env(o));
  EXPECT_EQ(run.code, 1);
  EXPECT_NE(run.err.find("visits_per_day_backup"), std::string::npos) << run.err;
  EXPECT_NE(run.err.find("it did not create that table"), std::string::npos) << run.err;
  EXPECT_EQ(Tables(*c), before);
  Outcome dry = RunRewind({"replay", "visits_per_day", "--into", "_backup", "--dry-run"}, Env(o));
  EXPECT_EQ(dry.code, 1) << dry.out;
  EXPECT_EQ(dry.out.find("replaces a leftover"), std::string::npos) << dry.out;
  EXPECT_NE(dry.out.find("visits_per_day_backup"), std::string::npos) << dry.out;
  Outcome json = RunRewind({"replay", "visits_per_day", "--into", "_backup", "--dry-run", "--json"}, Env(o));
  EXPECT_EQ(json.code, 1) << json.out;
  EXPECT_EQ(Count(*c, "SELECT COUNT(*) FROM visits_per_day_backup"), 3);
  ASSERT_TRUE(c->Execute("DROP TABLE visits_per_day_backup").ok());
  EXPECT_EQ(RunRewind({"replay", "visits_per_day", "--into", "_backup", "--quiet"}, Env(o)).code, 0);
  Outcome again = RunRewind({"replay", "visits_per_day", "--into", "_backup", "--dry-run"}, Env(o));
  EXPECT_EQ(again.code, 0) << again.out;
  EXPECT_NE(again.out.find("replaces a leftover"), std::string::npos) << again.out;
  EXPECT_EQ(RunRewind({"replay", "visits_per_day", "--into", "_backup", "--quiet"}, Env(o)).code, 0);
  CreateReferenceView(*c);
  EXPECT_EQ(CompareWithReference(*c, "visits_per_day_backup", "SELECT DATE(t), '', COUNT(*) FROM ref_visits GROUP BY 1"),
            "");
}

// rewind-gen (installed beside rewind) writes sample events only into an event table it made
// itself, as its bookkeeping records: pointed at an application's `stored_events` (spatie's
// name, rewind-gen's default) it neither drops it (its default without --append) nor appends
// sample events to it, and a read model rewind built is no event table of its own either.
// Its own table it replaces and appends to as before.
TEST(Ownership, RewindGenNeverDropsOrFillsATableItDidNotCreate) {
  const auto gen = [](const ConnectionOptions& o, std::vector<std::string> args) {
    args.insert(args.begin(), REWIND_GEN_BINARY);
    const std::string out = ::testing::TempDir() + "/rewind_gen_stdout";
    Subprocess p(args, Env(o), out);
    const int code = p.Wait();
    return Outcome{code, p.err(), ReadFile(out)};
  };
  ConnectionOptions app = FreshDatabase("rewind_test_gen_app");
  auto c = Connect(app);
  ASSERT_TRUE(c);
  ASSERT_TRUE(c->Execute(kLaravelStoredEventsDdl).ok());
  ASSERT_TRUE(c->Execute("INSERT INTO stored_events (event_class, event_properties, meta_data, created_at) "
                         "VALUES ('App\\\\Events\\\\MoneyAdded', '{\"amount\": 10}', '{}', NOW()), "
                         "('App\\\\Events\\\\MoneyAdded', '{\"amount\": 5}', '{}', NOW())")
                  .ok());
  const std::string before = Tables(*c);
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"--events", "100"}, std::vector<std::string>{"--events", "100", "--append"}}) {
    Outcome run = gen(app, args);
    EXPECT_EQ(run.code, 1) << run.err;
    EXPECT_NE(run.err.find("rewind-gen did not create it"), std::string::npos) << run.err;
    EXPECT_NE(run.err.find("neither drops it nor appends to it"), std::string::npos) << run.err;
    EXPECT_EQ(Tables(*c), before);
  }
  EXPECT_EQ(Count(*c, "SELECT COUNT(*) FROM stored_events WHERE event_class LIKE '%MoneyAdded'"), 2);
  // Its own table: made, replaced, appended to.
  ConnectionOptions own = FreshDatabase("rewind_test_gen_own");
  auto d = Connect(own);
  ASSERT_TRUE(d);
  ASSERT_EQ(gen(own, {"--events", "300"}).code, 0);
  EXPECT_EQ(Count(*d, "SELECT COUNT(*) FROM stored_events"), 300);
  ASSERT_EQ(gen(own, {"--events", "200"}).code, 0);
  EXPECT_EQ(Count(*d, "SELECT COUNT(*) FROM stored_events"), 200);
  ASSERT_EQ(gen(own, {"--events", "50", "--append"}).code, 0);
  EXPECT_EQ(Count(*d, "SELECT COUNT(*) FROM stored_events"), 250);
  // A read model rewind built there is rewind's, but not sample events.
  ASSERT_EQ(RunRewind({"replay", "visits_per_day", "--quiet"}, Env(own)).code, 0);
  const int64_t days = Count(*d, "SELECT COUNT(*) FROM visits_per_day");
  ASSERT_GT(days, 0);
  Outcome into_model = gen(own, {"--events", "10", "--events-table", "visits_per_day"});
  EXPECT_EQ(into_model.code, 1) << into_model.err;
  EXPECT_EQ(Count(*d, "SELECT COUNT(*) FROM visits_per_day"), days);
}

// A user's tables that merely end like rewind's own: a replay refuses them (the shadow, and
// the old copy the swap drops), verify refuses its scratch name; each survives with its rows.
TEST(Ownership, AUsersTableWithARewindSuffixIsNeverDropped) {
  ConnectionOptions o = Store("rewind_test_user_suffix", 2'000);
  auto c = Connect(o);
  ASSERT_EQ(RunRewind({"replay", "visits_per_day", "--quiet"}, Env(o)).code, 0);
  const std::string live = *c->QueryValue("SELECT GROUP_CONCAT(`date`, `count`) FROM visits_per_day").value();
  for (const std::string name : {"visits_per_day__rewind_new", "visits_per_day__rewind_old"}) {
    ASSERT_TRUE(c->Execute(fmt::format("CREATE TABLE {} (id INT PRIMARY KEY)", name)).ok());
    ASSERT_TRUE(c->Execute(fmt::format("INSERT INTO {} VALUES (7)", name)).ok());
    const std::string before = Tables(*c);
    Outcome run = RunRewind({"replay", "visits_per_day", "--quiet"}, Env(o));
    EXPECT_EQ(run.code, 1) << name;
    EXPECT_NE(run.err.find(name), std::string::npos) << run.err;
    EXPECT_NE(run.err.find("it did not create that table"), std::string::npos) << run.err;
    EXPECT_EQ(Tables(*c), before) << name;
    Outcome dry = RunRewind({"replay", "visits_per_day", "--dry-run"}, Env(o));
    EXPECT_EQ(dry.code, 1) << dry.out;
    EXPECT_NE(dry.out.find(name), std::string::npos) << dry.out;
    ASSERT_TRUE(c->Execute("DROP TABLE " + name).ok());
  }
  ASSERT_TRUE(c->Execute("CREATE TABLE visits_per_day__rewind_verify (id INT PRIMARY KEY)").ok());
  ASSERT_TRUE(c->Execute("INSERT INTO visits_per_day__rewind_verify VALUES (7)").ok());
  Outcome verify = RunRewind({"verify", "visits_per_day", "--quiet"}, Env(o));
  EXPECT_EQ(verify.code, 1) << verify.out;
  EXPECT_NE(verify.err.find("visits_per_day__rewind_verify"), std::string::npos) << verify.err;
  EXPECT_EQ(Count(*c, "SELECT COUNT(*) FROM visits_per_day__rewind_verify"), 1);
  EXPECT_EQ(*c->QueryValue("SELECT GROUP_CONCAT(`date`, `count`) FROM visits_per_day").value(), live);
}

// A shadow table an older rewind left behind, with its checkpoint row but no record of
// ownership (the bookkeeping before layout 3): recognised by that row, and replaced.
TEST(Ownership, AShadowTableOfAnOlderRewindIsRecognisedByItsCheckpointRow) {
  ConnectionOptions o = Store("rewind_test_old_shadow", 2'000);
  auto c = Connect(o);
  {
    std::vector<std::string> env = Env(o);
    env.push_back("REWIND_FAULT=before-catch-up");
    Subprocess killed(Rewind({"replay", "visits_per_day", "--quiet"}), env);
    ASSERT_TRUE(killed.WaitFor("fault point", 60)) << killed.err();
    killed.Signal(SIGKILL);
    killed.Wait();
  }
  // As an older rewind left it: no ownership records, layout 2.
  ASSERT_TRUE(c->Execute("DROP TABLE rewind_tables").ok());
  ASSERT_TRUE(c->Execute("UPDATE rewind_schema SET version = 2").ok());
  Outcome resumed = RunRewind({"replay", "--resume", "visits_per_day", "--quiet"}, Env(o));
  EXPECT_EQ(resumed.code, 0) << resumed.err;
  EXPECT_EQ(Count(*c, "SELECT version FROM rewind_schema"), kSchemaVersion);
  CreateReferenceView(*c);
  EXPECT_EQ(CompareWithReference(*c, "visits_per_day", "SELECT DATE(t), '', COUNT(*) FROM ref_visits GROUP BY 1"), "");
}

// `status` on a database without the event table: a clear message, and under --json a
// JSON document with the error (#23, part 9).
TEST(OddInput, StatusWithoutAnEventTableSaysSo) {
  ConnectionOptions o = FreshDatabase("rewind_test_status_no_events");
  Outcome text = RunRewind({"status"}, Env(o));
  EXPECT_EQ(text.code, 1);
  EXPECT_NE(text.err.find("stored_events"), std::string::npos) << text.err;
  EXPECT_EQ(text.err.find("doesn't exist"), std::string::npos) << text.err;  // not the server's raw error
  EXPECT_EQ(text.err.find("SELECT"), std::string::npos) << text.err;
  Outcome json = RunRewind({"status", "--json"}, Env(o));
  EXPECT_EQ(json.code, 1);
  const auto j = nlohmann::json::parse(json.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << json.out;
  ASSERT_TRUE(j.contains("error")) << json.out;
  EXPECT_NE(j["error"].get<std::string>().find("stored_events"), std::string::npos) << json.out;
}

// A swap killed between its RENAME and the drop of the old live table leaves
// `<table>__rewind_old`, recorded as rewind's: the next replay drops it and swaps.
TEST(Ownership, TheOldCopyAKilledSwapLeftIsDroppedByTheNextSwap) {
  ConnectionOptions o = Store("rewind_test_swap_leftover", 2'000);
  auto c = Connect(o);
  ASSERT_EQ(RunRewind({"replay", "visits_per_day", "--quiet"}, Env(o)).code, 0);
  {
    std::vector<std::string> env = Env(o);
    env.push_back("REWIND_FAULT=after-rename");
    Subprocess killed(Rewind({"replay", "visits_per_day", "--quiet"}), env);
    ASSERT_TRUE(killed.WaitFor("fault point", 60)) << killed.err();
    killed.Signal(SIGKILL);
    killed.Wait();
  }
  const std::string old = "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND "
                          "TABLE_NAME = 'visits_per_day__rewind_old'";
  ASSERT_EQ(Count(*c, old), 1);
  Outcome next = RunRewind({"replay", "visits_per_day", "--quiet"}, Env(o));
  EXPECT_EQ(next.code, 0) << next.err;
  EXPECT_EQ(Count(*c, old), 0);
  CreateReferenceView(*c);
  EXPECT_EQ(CompareWithReference(*c, "visits_per_day", "SELECT DATE(t), '', COUNT(*) FROM ref_visits GROUP BY 1"), "");
}

// An --into build killed half-way is continued by --resume (its table is rewind's, by its
// record) and equals the reference.
TEST(Ownership, AnIntoBuildKilledHalfWayIsResumed) {
  ConnectionOptions o = Store("rewind_test_into_resume", 6'000);
  auto c = Connect(o);
  {
    std::vector<std::string> env = Env(o);
    env.push_back("REWIND_FAULT=mid-flush:3");  // two flushes committed, the third open
    Subprocess killed(Rewind({"replay", "visits_per_day", "--quiet", "--into", "_half", "--batch-size", "1000",
                              "--flush-every", "1000"}),
                      env);
    ASSERT_TRUE(killed.WaitFor("fault point", 60)) << killed.err();
    killed.Signal(SIGKILL);
    killed.Wait();
  }
  ASSERT_GT(Count(*c, "SELECT GREATEST(0, COALESCE(MAX(last_event_id), 0)) FROM rewind_checkpoints WHERE "
                      "target_table = 'visits_per_day_half'"), 0);
  Outcome resumed = RunRewind({"replay", "visits_per_day", "--resume", "--into", "_half"}, Env(o));
  EXPECT_EQ(resumed.code, 0) << resumed.err;
  EXPECT_NE(resumed.err.find("resumes after event"), std::string::npos) << resumed.err;
  CreateReferenceView(*c);
  EXPECT_EQ(CompareWithReference(*c, "visits_per_day_half", "SELECT DATE(t), '', COUNT(*) FROM ref_visits GROUP BY 1"),
            "");
}

// The blog's own live table has no uri_hash column: verify compares the read model's own
// columns and shows keys a person can read.
TEST(Ownership, VerifyComparesTheBlogsOriginalTableLayout) {
  ConnectionOptions o = Store("rewind_test_verify_layout", 2'000);
  auto c = Connect(o);
  EXPECT_EQ(RunRewind({"replay", "visits_per_post_per_day", "--quiet"}, Env(o)).code, 0);
  ASSERT_TRUE(c->Execute("CREATE TABLE blog_layout (uri TEXT NOT NULL, `date` DATE NOT NULL, `count` "
                         "BIGINT UNSIGNED NOT NULL) AS SELECT uri, `date`, `count` FROM visits_per_post_per_day").ok());
  ASSERT_TRUE(c->Execute("UPDATE blog_layout SET `count` = `count` + 1 ORDER BY `date`, uri LIMIT 1").ok());
  ASSERT_TRUE(c->Execute("DROP TABLE visits_per_post_per_day").ok());
  ASSERT_TRUE(c->Execute("RENAME TABLE blog_layout TO visits_per_post_per_day").ok());
  Outcome out = RunRewind({"verify", "visits_per_post_per_day", "--quiet"}, Env(o));
  EXPECT_EQ(out.code, 4) << out.err;
}

}  // namespace
}  // namespace rw
