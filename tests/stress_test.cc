// The write side and `rewind stress`, against a real MariaDB: optimistic concurrency on one
// stream, snapshot + tail against a full replay, and the command end to end (its files,
// its own check, its three OrderSummary rebuilds against a fold computed here).
#include <fmt/core.h>
#include <gtest/gtest.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <thread>

#include "framework_tables.h"
#include "pipeline/stress/event_store.h"
#include "rewind_process.h"
#include "sample/order.h"
#include "test_db.h"

namespace rw {
namespace {

using namespace rw::testing;

TEST(EventStore, FiftyWritersOnOneStreamLoseNothingAndGetConflictsNotErrors) {
  const ConnectionOptions o = FreshDatabase("rewind_test_event_store");
  {
    auto c = Connect(o);
    ASSERT_TRUE(c);
    ASSERT_TRUE(EventStore(*c, EventStoreTables{}).Create().ok());
  }
  constexpr int kWriters = 50, kEach = 8;
  std::mutex mu;
  std::vector<std::pair<int64_t, std::string>> acknowledged;  // (version, payload)
  std::atomic<int> refused{0}, errors{0};
  std::vector<std::thread> threads;
  for (int w = 0; w < kWriters; ++w) {
    threads.emplace_back([&, w] {
      auto c = Connection::Open(o);
      if (!c.ok()) {
        ++errors;
        return;
      }
      EventStore es(**c, EventStoreTables{});
      int64_t version = 0;
      for (int i = 0; i < kEach; ++i) {
        const std::string payload = fmt::format(R"({{"writer":{},"seq":{}}})", w, i);
        while (true) {
          Result<AppendOutcome> r = es.Append("hot", version, {{"ItemAdded", payload}});
          if (!r.ok()) {
            ++errors;
            return;
          }
          if (*r == AppendOutcome::kAppended) {
            std::lock_guard<std::mutex> lock(mu);
            acknowledged.emplace_back(version + 1, payload);
            ++version;
            break;
          }
          ++refused;  // a conflict (or deadlock), told apart from an error
          Result<int64_t> v = es.Version("hot");
          if (!v.ok()) {
            ++errors;
            return;
          }
          version = *v;
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(errors.load(), 0);
  EXPECT_GT(refused.load(), 0);  // 50 writers on one stream do collide
  auto c = Connect(o);
  std::vector<StreamEvent> events;
  ASSERT_TRUE(EventStore(*c, EventStoreTables{}).ReadStream("hot", 1, events).ok());
  ASSERT_EQ(events.size(), static_cast<size_t>(kWriters * kEach));
  std::map<int64_t, std::string> stored;
  for (size_t i = 0; i < events.size(); ++i) {
    EXPECT_EQ(events[i].version, static_cast<int64_t>(i) + 1);  // 1..N, no gap, no repeat
    stored[events[i].version] = events[i].payload;
  }
  std::set<std::string> distinct;
  for (const auto& [version, payload] : acknowledged) {
    EXPECT_EQ(stored[version], payload) << "acknowledged version " << version;
    distinct.insert(payload);
  }
  EXPECT_EQ(distinct.size(), acknowledged.size());
  EXPECT_EQ(acknowledged.size(), events.size());
}

TEST(EventStore, SnapshotAndTailRehydrateToTheStateOfAFullReplay) {
  const ConnectionOptions o = FreshDatabase("rewind_test_snapshots");
  auto c = Connect(o);
  ASSERT_TRUE(c);
  EventStore es(*c, EventStoreTables{});
  ASSERT_TRUE(es.Create().ok());
  std::mt19937 rng(11);
  for (int s = 0; s < 12; ++s) {
    const std::string stream = fmt::format("order-{}", s);
    const int64_t length = 1 + static_cast<int64_t>(rng() % 400);
    const int64_t confirm_at = static_cast<int64_t>(rng() % (length + 1));
    // Appended in random chunks; the state folded here, by the test, at each snapshot point.
    order::State expected;
    int64_t version = 0;
    while (version < length) {
      const int64_t chunk =
          std::min<int64_t>(length - version, 1 + static_cast<int64_t>(rng() % 40));
      std::vector<NewEvent> batch;
      for (int64_t i = 1; i <= chunk; ++i) {
        const order::Event e = order::Generate(stream, version + i, confirm_at);
        batch.push_back({order::TypeName(e.kind), order::Payload(stream, e)});
        order::Fold(expected, e);
      }
      ASSERT_EQ(*es.Append(stream, version, batch), AppendOutcome::kAppended);
      version += chunk;
      if (rng() % 2 == 0 && version < length) {
        ASSERT_TRUE(es.SaveSnapshot(stream, version, order::SnapshotJson(expected)).ok());
      }
    }
    Result<order::State> full = LoadOrder(es, stream, false);
    Result<order::State> snap = LoadOrder(es, stream, true);
    ASSERT_TRUE(full.ok()) << full.status().message();
    ASSERT_TRUE(snap.ok()) << snap.status().message();
    EXPECT_TRUE(*full == expected) << stream;
    EXPECT_TRUE(*snap == expected) << stream;
    EXPECT_EQ(snap->version, length);
  }
}

// results.csv of a run in `out`: each row's value by "question,case,metric"; `questions`
// gets the questions it answered.
std::map<std::string, double> ReadResults(const std::string& out,
                                          std::set<std::string>& questions) {
  std::ifstream csv(std::filesystem::path(out) / "results.csv");
  std::string line;
  std::getline(csv, line);
  EXPECT_EQ(line, "question,case,metric,value,unit");
  std::map<std::string, double> values;
  while (std::getline(csv, line)) {
    const size_t a = line.find(','), b = line.find(',', a + 1), d = line.find(',', b + 1),
                 e = line.find(',', d + 1);
    questions.insert(line.substr(0, a));
    values[line.substr(0, d)] = std::stod(line.substr(d + 1, e - d - 1));
  }
  return values;
}

// Question 4's figures of a --quick run, in its three series (distinct streams, one stream
// as the article, one stream reloaded at every attempt): nothing lost or duplicated, the
// retry counters add up, and every command is 11 events.
void ExpectAppendsAddUp(std::map<std::string, double>& values) {
  for (const char* series : {"distinct", "one_stream", "one_stream_reload"}) {
    for (int writers : {1, 10, 100}) {
      const std::string c = fmt::format("{}_{}", series, writers);
      const auto v = [&](const char* m) {
        return values[fmt::format("concurrent_append,{},{}", c, m)];
      };
      EXPECT_EQ(v("writers"), writers) << c;
      EXPECT_EQ(v("lost"), 0) << c;
      EXPECT_EQ(v("duplicated"), 0) << c;
      EXPECT_GT(v("events_per_s"), 0) << c;
      EXPECT_GT(v("commands_per_s"), 0) << c;
      // The retry counters add up: each command succeeds or is given up; each attempt
      // succeeds, conflicts or deadlocks; each failed attempt but a command's last is retried.
      EXPECT_EQ(v("successes") + v("give_ups"), v("commands")) << c;
      EXPECT_EQ(v("successes") + v("conflicts") + v("deadlocks"), v("attempts")) << c;
      EXPECT_EQ(v("retries"), v("attempts") - v("commands")) << c;
      // Commands of one size in every series: an order placed whole, or 11 lines' events.
      EXPECT_EQ(v("events_per_command"), 11) << c;
      EXPECT_EQ(v("events"), 11 * v("successes")) << c;
      if (std::string(series) != "distinct") {  // a stated bound on the attempts
        EXPECT_EQ(v("max_attempts"), 10) << c;
        EXPECT_LE(v("attempts"), v("max_attempts") * v("commands")) << c;
      }
    }
  }
  EXPECT_EQ(values["concurrent_append,distinct_10,conflicts"], 0);
  EXPECT_GT(values["concurrent_append,one_stream_100,conflicts"],
            0);  // 100 writers on one stream collide
}

// report.md of a --quick run in `out` opens with the five-line summary, each line with the
// article's figure and a ratio, and gives the decisions.
void ExpectReportOfAQuickRun(const std::string& out) {
  std::ifstream md(std::filesystem::path(out) / "report.md");
  std::vector<std::string> report;
  for (std::string l; std::getline(md, l);) report.push_back(l);
  ASSERT_GT(report.size(), 8u);
  EXPECT_EQ(report[2], "## Summary");
  for (int i = 0; i < 5; ++i) {
    const std::string& l = report[4 + i];
    EXPECT_EQ(l.rfind(fmt::format("{}. ", i + 1), 0), 0u) << l;
    EXPECT_NE(l.find("the article: "), std::string::npos) << l;
    EXPECT_NE(l.find("ours / article = "), std::string::npos) << l;
  }
  EXPECT_EQ(report[9], "");
  const std::string all = [&] {
    std::string a;
    for (const std::string& l : report) a += l + "\n";
    return a;
  }();
  EXPECT_NE(all.find("How Fast Can You Replay 100,000 Events? I Measured It."), std::string::npos);
  EXPECT_NE(all.find("with a 50 ms budget** (--budget-ms, against the p50 load time): "),
            std::string::npos);
  // 45 loads per length: too few for a p99, so the advice says so and gives none.
  EXPECT_NE(all.find("--quick**: 45 loads per length, too few for a p95 or p99"),
            std::string::npos);
  EXPECT_NE(all.find("rebuilding 10,000 events: "), std::string::npos);
  // One stream per aggregate, decided from the one-stream curve.
  EXPECT_NE(all.find("- **One stream per aggregate**, with a 50 ms budget per command"),
            std::string::npos);
  // The batch sizes, measured, and one chosen in words.
  EXPECT_NE(all.find("**Choose batches of "), std::string::npos);
  // One save per event's gap to the article is explained by its measured parts.
  EXPECT_NE(all.find("so the durable commit of each statement costs"), std::string::npos);
}

// The OrderSummary rows of the 100 generated orders of question 3's volume of 10,000 events,
// folded here: "order_id|status|items|total|discount_total|confirmed_at".
std::vector<std::string> OrderSummariesFoldedHere() {
  std::vector<std::string> want;
  for (int i = 0; i < 100; ++i) {
    const std::string stream = fmt::format("order-{:07d}", i);
    std::string status = "NULL", confirmed = "NULL";
    int64_t items = 0, total = 0, discount = 0;
    for (int64_t v = 1; v <= 100; ++v) {
      const order::Event e = order::Generate(stream, v, i % 4 == 3 ? 0 : 90);
      if (e.kind == order::Kind::kCreated) status = "created";
      if (e.kind == order::Kind::kItemAdded) ++items, total += e.cents;
      if (e.kind == order::Kind::kDiscountApplied) discount += e.cents;
      if (e.kind == order::Kind::kConfirmed) {
        status = "confirmed";
        if (confirmed == "NULL") confirmed = e.at.substr(0, 10) + " " + e.at.substr(11);
      }
    }
    want.push_back(fmt::format("{}|{}|{}|{}.{:02d}|{}.{:02d}|{}", stream, status, items,
                               total / 100, total % 100, discount / 100, discount % 100,
                               confirmed));
  }
  return want;
}

// The tables of a --quick run kept in its database (`c`): the last volume's OrderSummary
// tables (the pipeline's last rebuilt the same 100 orders while appends ran) each equal the
// fold computed here, and every table it made is recorded as its own (the end of a run
// without --keep drops them).
void ExpectKeptTablesOfAQuickRun(Connection& c) {
  const std::vector<std::string> want = OrderSummariesFoldedHere();
  for (const char* table :
       {"order_summary", "summary_single", "summary_batched", "summary_par_3"}) {
    auto rows =
        c.Query(fmt::format("SELECT order_id, status, items, total, discount_total, confirmed_at "
                            "FROM {} ORDER BY order_id",
                            table));
    ASSERT_TRUE(rows.ok()) << rows.status().message();
    std::vector<std::string> got;
    for (const auto& r : rows->rows) {
      std::string s;
      for (size_t i = 0; i < r.size(); ++i) s += (i ? "|" : "") + r[i].value_or("NULL");
      got.push_back(s);
    }
    EXPECT_EQ(got, want) << table;
  }
  EXPECT_EQ(
      Count(c,
            "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = "
            "'rewind_test_stress' AND "
            "TABLE_NAME <> 'rewind_stress_tables' AND TABLE_NAME NOT IN (SELECT table_name FROM "
            "rewind_test_stress.rewind_stress_tables)"),
      0)
      << c.QueryValue(
              "SELECT GROUP_CONCAT(TABLE_NAME) FROM information_schema.TABLES WHERE TABLE_SCHEMA = "
              "'rewind_test_stress' AND TABLE_NAME NOT IN (SELECT table_name FROM "
              "rewind_test_stress.rewind_stress_tables)")
             .value()
             .value_or("");
}

TEST(Stress, QuickRunWritesItsReportAndItsRebuildsEqualAFold) {
  const std::string out = ::testing::TempDir() + "/stress-out";
  std::filesystem::remove_all(out);
  const ConnectionOptions server = ServerOptions();
  {
    auto c = Connect(server);
    ASSERT_TRUE(c);
    ASSERT_TRUE(c->Execute("DROP DATABASE IF EXISTS rewind_test_stress").ok());
  }
  std::vector<std::string> env = Env(server);
  env.push_back("REWIND_DATABASE=ignored_by_stress");  // stress works in its own database
  Outcome run = RunRewind(
      {"stress", "--quick", "--stress-database", "rewind_test_stress", "--out", out, "--keep"},
      env);
  // The summary is printed too.
  EXPECT_NE(run.out.find("\n1. Aggregate load: "), std::string::npos) << run.out;
  ASSERT_EQ(run.code, 0) << run.err << run.out;
  for (const char* f : {"report.md", "results.csv", "q1_aggregate_load.png", "q2_snapshot.png",
                        "q3_projection_rebuild.png", "q4_concurrent_append.png"}) {
    EXPECT_TRUE(std::filesystem::exists(std::filesystem::path(out) / f)) << f;
  }
  std::set<std::string> questions;
  std::map<std::string, double> values = ReadResults(out, questions);
  EXPECT_EQ(questions, (std::set<std::string>{"commit", "aggregate_load", "snapshot",
                                              "projection_rebuild", "parallel_projections",
                                              "concurrent_append", "append_during_rebuild"}));
  EXPECT_TRUE(values.count("parallel_projections,10000/4_models,at_once_seconds"));
  EXPECT_GT(values["append_during_rebuild,during_rebuild_10,rebuilds"],
            0);  // a rebuild ran alongside
  EXPECT_EQ(values["append_during_rebuild,all,lost"], 0);
  EXPECT_EQ(values["append_during_rebuild,all,duplicated"], 0);
  EXPECT_TRUE(values.count("commit,autocommit_insert,p50"));  // the flush latency, measured
  EXPECT_TRUE(values.count("aggregate_load,10000,p50"));      // --quick keeps the longest stream
  EXPECT_TRUE(values.count("aggregate_load,10000,p50_min"));  // a spread of the runs
  // The crossover: a measured length, or no measurable difference at any.
  EXPECT_TRUE(values.count("snapshot,crossover,events") ||
              values.count("snapshot,crossover,not_measurable"));
  EXPECT_FALSE(values.count("aggregate_load,10000,p99"));      // 45 loads: no p99
  EXPECT_TRUE(values.count("aggregate_load,10000,p50_run3"));  // each repeat's own
  for (const char* m : {"batch_10", "batch_50", "batch_100", "batch_500", "batch_1000"}) {
    EXPECT_TRUE(values.count(fmt::format("projection_rebuild,10000/{},seconds", m))) << m;
  }
  // One save per event's parts, and its control without the per-statement commit.
  for (const char* m : {"read_s", "client_s", "statement_s", "statements"}) {
    EXPECT_TRUE(values.count(fmt::format("projection_rebuild,10000/single,{}", m))) << m;
  }
  EXPECT_EQ(values["projection_rebuild,10000/single,statements"],
            values["projection_rebuild,10000/single_in_txn,statements"]);
  ExpectAppendsAddUp(values);
  for (const char* m : {"single", "batched", "pipeline", "filtered_server", "filtered_client"}) {
    for (const char* v : {"1000", "2000", "3000", "5000", "10000"}) {  // five volumes
      EXPECT_TRUE(values.count(fmt::format("projection_rebuild,{}/{},seconds", v, m)))
          << v << " " << m;
    }
  }
  ExpectReportOfAQuickRun(out);
  // The filtered projections read one type in five: DiscountApplied, about 20 % of the events.
  {
    int64_t discounts = 0, events = 0;
    for (int i = 0; i < 100; ++i) {
      const std::string stream = fmt::format("order-{:07d}", i);
      for (int64_t v = 1; v <= 100; ++v, ++events) {
        discounts += order::Generate(stream, v, 90).kind == order::Kind::kDiscountApplied;
      }
    }
    EXPECT_NEAR(static_cast<double>(discounts) / static_cast<double>(events), 0.2, 0.03);
  }
  ConnectionOptions db = server;
  db.database = "rewind_test_stress";
  auto c = Connect(db);
  ASSERT_TRUE(c);
  ExpectKeptTablesOfAQuickRun(*c);
  EXPECT_TRUE(c->Execute("DROP DATABASE rewind_test_stress").ok());
}

TEST(Stress, RefusesADatabaseItDidNotCreate) {
  const ConnectionOptions o = FreshDatabase("rewind_test_not_stress");
  auto c = Connect(o);
  ASSERT_TRUE(c);
  ASSERT_TRUE(c->Execute("CREATE TABLE precious (id INT PRIMARY KEY)").ok());
  ASSERT_TRUE(c->Execute("INSERT INTO precious VALUES (1)").ok());
  Outcome run =
      RunRewind({"stress", "--quick", "--only", "1", "--stress-database", "rewind_test_not_stress",
                 "--out", ::testing::TempDir() + "/stress-refused"},
                Env(ServerOptions()));
  EXPECT_EQ(run.code, 1);
  EXPECT_NE(run.err.find("holds tables that rewind stress did not create (precious)"),
            std::string::npos)
      << run.err;
  EXPECT_EQ(Count(*c, "SELECT COUNT(*) FROM precious"), 1);
  EXPECT_EQ(Count(*c,
                  "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = "
                  "'rewind_test_not_stress'"),
            1);
}

// Once stress has worked in a database (its own bookkeeping is there), a table someone else
// puts there is still not its own: the next run refuses the database and drops nothing (#23).
TEST(Stress, RefusesADatabaseWithAUserTableEvenWhereItHasWorkedBefore) {
  const ConnectionOptions server = ServerOptions();
  auto admin = Connect(server);
  ASSERT_TRUE(admin);
  ASSERT_TRUE(admin->Execute("DROP DATABASE IF EXISTS rewind_test_stress_again").ok());
  const std::vector<std::string> args = {"stress",
                                         "--quick",
                                         "--only",
                                         "1",
                                         "--stress-database",
                                         "rewind_test_stress_again",
                                         "--out",
                                         ::testing::TempDir() + "/stress-again"};
  std::vector<std::string> keep = args;
  keep.push_back("--keep");
  Outcome first = RunRewind(keep, Env(server));
  ASSERT_EQ(first.code, 0) << first.err;
  ConnectionOptions db = server;
  db.database = "rewind_test_stress_again";
  auto c = Connect(db);
  ASSERT_TRUE(c);
  const std::string tables =
      "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = "
      "'rewind_test_stress_again'";
  const int64_t own = Count(*c, tables);
  ASSERT_GT(own, 0);
  ASSERT_TRUE(c->Execute("CREATE TABLE precious (id INT PRIMARY KEY)").ok());
  ASSERT_TRUE(c->Execute("INSERT INTO precious VALUES (1)").ok());
  Outcome second = RunRewind(args, Env(server));
  EXPECT_EQ(second.code, 1);
  EXPECT_NE(second.err.find("did not create (precious)"), std::string::npos) << second.err;
  EXPECT_EQ(Count(*c, "SELECT COUNT(*) FROM precious"), 1);
  EXPECT_EQ(Count(*c, tables), own + 1);  // it dropped nothing, its own tables included
  EXPECT_TRUE(admin->Execute("DROP DATABASE rewind_test_stress_again").ok());
}

// A table that appears in stress's database while it runs is not its own: at the end it
// drops exactly the tables it created, and keeps the database that still holds another.
TEST(Stress, DropsOnlyTheTablesItCreated) {
  const ConnectionOptions server = ServerOptions();
  auto admin = Connect(server);
  ASSERT_TRUE(admin);
  ASSERT_TRUE(admin->Execute("DROP DATABASE IF EXISTS rewind_test_stress_own").ok());
  const std::string pause = PauseFile("stress_own");
  std::vector<std::string> env = Env(server);
  env.push_back("REWIND_FAULT=stress-prepared@" + pause);
  Subprocess run(Rewind({"stress", "--quick", "--only", "1", "--stress-database",
                         "rewind_test_stress_own", "--out", ::testing::TempDir() + "/stress-own"}),
                 env);
  ASSERT_TRUE(run.WaitFor("fault point", 60)) << run.err();
  ConnectionOptions db = server;
  db.database = "rewind_test_stress_own";
  auto c = Connect(db);
  ASSERT_TRUE(c);
  ASSERT_TRUE(c->Execute("CREATE TABLE precious (id INT PRIMARY KEY)").ok());
  ASSERT_TRUE(c->Execute("INSERT INTO precious VALUES (1)").ok());
  Release(pause);
  EXPECT_EQ(run.Wait(), 0) << run.err();
  EXPECT_EQ(Count(*c, "SELECT COUNT(*) FROM precious"), 1);
  EXPECT_EQ(Count(*c,
                  "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = "
                  "'rewind_test_stress_own' AND TABLE_NAME <> 'precious'"),
            0)
      << c->QueryValue(
              "SELECT GROUP_CONCAT(TABLE_NAME) FROM information_schema.TABLES WHERE TABLE_SCHEMA = "
              "'rewind_test_stress_own'")
             .value()
             .value_or("");
  EXPECT_TRUE(admin->Execute("DROP DATABASE rewind_test_stress_own").ok());
}

// A command's events are one transaction: stopped dead between writing an order's events
// and committing them, rewind leaves none of them (the server rolls back what was written).
TEST(Stress, ACommandStoppedBeforeItsCommitLeavesNoneOfItsEvents) {
  const ConnectionOptions server = ServerOptions();
  auto admin = Connect(server);
  ASSERT_TRUE(admin);
  ASSERT_TRUE(admin->Execute("DROP DATABASE IF EXISTS rewind_test_stress_atomic").ok());
  std::vector<std::string> env = Env(server);
  env.push_back(
      "REWIND_FAULT=stress-append-uncommitted");  // the first command's, then sleeps until killed
  Subprocess run(
      Rewind({"stress", "--quick", "--only", "4", "--repeat", "1", "--stress-database",
              "rewind_test_stress_atomic", "--out", ::testing::TempDir() + "/stress-atomic"}),
      env);
  ASSERT_TRUE(run.WaitFor("fault point", 60)) << run.err();
  ConnectionOptions db = server;
  db.database = "rewind_test_stress_atomic";
  auto c = Connect(db);
  ASSERT_TRUE(c);
  ASSERT_TRUE(c->Execute("SET SESSION TRANSACTION ISOLATION LEVEL READ UNCOMMITTED").ok());
  const std::string events = "SELECT COUNT(*) FROM es_events WHERE stream LIKE 'q4-%'";
  EXPECT_EQ(Count(*c, events), 11);  // the whole order written, not committed
  const std::string theirs =
      "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE DB = 'rewind_test_stress_atomic' "
      "AND ID <> "
      "CONNECTION_ID()";
  run.Signal(SIGKILL);
  run.Wait();
  // The server notices the dead client's connections and rolls their transaction back.
  for (int i = 0; i < 600 && Count(*c, theirs) > 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  ASSERT_EQ(Count(*c, theirs), 0);
  EXPECT_EQ(Count(*c, events), 0);
  EXPECT_TRUE(admin->Execute("DROP DATABASE rewind_test_stress_atomic").ok());
}

// The writers connect before the clock starts: where the clock is about to start (the fault
// point just before it), all ten writers of a case have their connections open, and not one
// event of the case is written yet.
TEST(Stress, WritersAreConnectedBeforeTheClockStarts) {
  const ConnectionOptions server = ServerOptions();
  auto admin = Connect(server);
  ASSERT_TRUE(admin);
  ASSERT_TRUE(admin->Execute("DROP DATABASE IF EXISTS rewind_test_stress_barrier").ok());
  const std::string pause = PauseFile("stress_barrier");
  std::vector<std::string> env = Env(server);
  env.push_back("REWIND_FAULT=stress-writers-ready:4@" + pause);  // the fourth case: 10 writers
  Subprocess run(
      Rewind({"stress", "--quick", "--only", "4", "--repeat", "1", "--stress-database",
              "rewind_test_stress_barrier", "--out", ::testing::TempDir() + "/stress-barrier"}),
      env);
  ASSERT_TRUE(run.WaitFor("fault point", 60)) << run.err();
  EXPECT_NE(run.err().find("distinct_1 "), std::string::npos)
      << run.err();  // the first cases are done (1, 2 and 5 writers)
  ConnectionOptions db = server;
  db.database = "rewind_test_stress_barrier";
  auto c = Connect(db);
  ASSERT_TRUE(c);
  // Ten writers and stress's own connection to its database, besides this one.
  EXPECT_GE(Count(*c,
                  "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE DB = "
                  "'rewind_test_stress_barrier' "
                  "AND ID <> CONNECTION_ID()"),
            11);
  EXPECT_EQ(Count(*c, "SELECT COUNT(*) FROM es_events WHERE stream LIKE 'q4-distinct\\_10-%'"), 0);
  Release(pause);
  EXPECT_EQ(run.Wait(), 0) << run.err();
  EXPECT_TRUE(admin->Execute("DROP DATABASE IF EXISTS rewind_test_stress_barrier").ok());
}

// --events-table: the user's own event table, here spatie/laravel-event-sourcing's
// `stored_events` as its migration makes it (tests/frameworks_test.cc), with ids stepping by 2
// (a Galera cluster's auto_increment_increment) and some deleted, and the bank-account
// tutorial's events.
ConnectionOptions YourStoredEvents(const std::string& database, int events) {
  const ConnectionOptions o = FreshDatabase(database);
  auto c = Connect(o);
  EXPECT_TRUE(c->Execute("SET time_zone = '+00:00'").ok());
  EXPECT_TRUE(c->Execute(kLaravelStoredEventsDdl).ok());
  EXPECT_TRUE(c->Execute("SET SESSION auto_increment_increment = 2").ok());
  const std::string ns = "App\\Domain\\Account\\Events\\";
  std::mt19937 rng(24);
  std::vector<int64_t> versions(60);
  std::string sql;
  for (int n = 0; n < events; ++n) {
    const size_t a = n < 60 ? static_cast<size_t>(n) : rng() % 60;
    const std::string cls = n < 60        ? "AccountCreated"
                            : n % 4 == 0  ? "MoneySubtracted"
                            : n % 41 == 1 ? "AccountLimitHit"
                                          : "MoneyAdded";
    const std::string props =
        cls == "AccountCreated"
            ? fmt::format(R"({{"name": "Account {}"}})", a)
            : fmt::format(R"({{"amount": {}.{:02d}}})", 1 + rng() % 900, rng() % 100);
    const int minute = n * 3;
    sql += fmt::format(
        "{}('00000000-0000-4000-a000-{:012d}', {}, {}, {}, '{{}}', '2024-03-{:02d} "
        "{:02d}:{:02d}:00')",
        sql.empty() ? "INSERT INTO stored_events (aggregate_uuid, aggregate_version, event_class, "
                      "event_properties, meta_data, created_at) VALUES "
                    : ", ",
        a, ++versions[a], c->Quote(ns + cls), c->Quote(props), 1 + minute / 1440 % 28,
        minute / 60 % 24, minute % 60);
    if (n % 500 == 499 || n == events - 1) {
      EXPECT_TRUE(c->Execute(sql).ok()) << sql.substr(0, 300);
      sql.clear();
    }
  }
  EXPECT_TRUE(c->Execute("DELETE FROM stored_events WHERE id % 37 = 5").ok());  // holes
  return o;
}

// The flags that name the user's table (spatie's columns), as `rewind replay` takes them.
std::vector<std::string> YourTableArgs(const std::string& database) {
  return {"--database",       database,        "--events-table",
          "stored_events",    "--id-column",   "id",
          "--type-column",    "event_class",   "--payload-column",
          "event_properties", "--time-column", "created_at"};
}

// What the user's table and database are, to show that a run changed neither: CHECKSUM
// TABLE, a fingerprint of every row, and the database's tables.
std::string YourTableState(Connection& c) {
  auto checksum = c.Query("CHECKSUM TABLE stored_events");
  EXPECT_TRUE(checksum.ok());
  return fmt::format(
      "{}|{}|{}", checksum.ok() ? checksum->rows[0][1].value_or("?") : "?",
      c.QueryValue("SELECT CONCAT(COUNT(*), '/', SUM(CRC32(CONCAT_WS('|', id, aggregate_uuid, "
                   "aggregate_version, event_class, event_properties, meta_data, created_at)))) "
                   "FROM stored_events")
          ->value_or("?"),
      c.QueryValue(
           "SELECT GROUP_CONCAT(TABLE_NAME ORDER BY TABLE_NAME) FROM information_schema.TABLES "
           "WHERE TABLE_SCHEMA = DATABASE()")
          ->value_or("?"));
}

std::string ReadAll(const std::string& file) {
  std::ifstream in(file);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// The user's table measured on a sample: the report's section with the sample and the labelled
// estimates, the first N ids exactly, the read models against a GROUP BY over the user's own
// table, and the user's table and database untouched (a second run without --keep leaves no
// stress database).
TEST(Stress, YourTableIsMeasuredOnASampleOfItsFirstEventsAndNeverTouched) {
  const std::string app = "rewind_test_stress_app", scratch = "rewind_test_stress_yours";
  const ConnectionOptions o = YourStoredEvents(app, 9000);
  auto c = Connect(o);
  ASSERT_TRUE(c);
  ASSERT_TRUE(c->Execute("SET time_zone = '+00:00'").ok());
  ASSERT_GT(Count(*c, "SELECT COUNT(*) FROM stored_events"), 5000);
  ASSERT_EQ(Count(*c, "SELECT COUNT(*) FROM stored_events WHERE id % 2 = 0"), 0);  // steps of 2
  const std::string before = YourTableState(*c);
  auto server = Connect(ServerOptions());
  ASSERT_TRUE(server->Execute("DROP DATABASE IF EXISTS " + scratch).ok());
  const std::string out = ::testing::TempDir() + "/stress-yours";
  std::filesystem::remove_all(out);
  std::vector<std::string> args = {
      "stress",   "--quick",  "--only",
      "table",    "--repeat", "1",
      "--sample", "5000",     "--stress-database",
      scratch,    "--out",    out,
      "--keep",   "--models", std::string(REWIND_SOURCE_DIR) + "/config/examples/laravel.toml"};
  for (const std::string& a : YourTableArgs(app)) args.push_back(a);
  Outcome run = RunRewind(args, Env(ServerOptions()));
  ASSERT_EQ(run.code, 0) << run.err << run.out;
  EXPECT_EQ(YourTableState(*c), before);
  // The report: the section, the sample, the labelled estimates; the line after the summary.
  const std::string md = ReadAll(out + "/report.md");
  EXPECT_NE(md.find("\n## Your table\n"), std::string::npos) << md;
  EXPECT_NE(md.find("the first 5,000 events by id"), std::string::npos) << md;
  const int64_t rows = Count(*c, "SELECT COUNT(*) FROM stored_events");
  EXPECT_NE(md.find(fmt::format("Rebuilding your {},{:03d} events: ", rows / 1000, rows % 1000)),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("with rewind (estimate from 5,000 events)"), std::string::npos) << md;
  EXPECT_NE(md.find("\nYour table `rewind_test_stress_app.stored_events` ("), std::string::npos)
      << md;
  EXPECT_NE(md.find("(estimates from the first 5,000 events"), std::string::npos) << md;
  EXPECT_NE(run.out.find("Your table `rewind_test_stress_app.stored_events`"), std::string::npos)
      << run.out;
  // It says what it checked, and no more: no appends were made.
  EXPECT_NE(run.out.find("\ncheck: the rebuilds agree; your table unchanged\n"), std::string::npos)
      << run.out;
  const std::string csv = ReadAll(out + "/results.csv");
  // --only table: the user's table and none of the four questions (nor their empty sections).
  EXPECT_EQ(md.find("## Decisions"), std::string::npos) << md;
  EXPECT_EQ(md.find("## Beside the article"), std::string::npos) << md;
  for (const char* question :
       {"\naggregate_load,", "\nsnapshot", "\nprojection_rebuild,", "\nconcurrent_append"}) {
    EXPECT_EQ(csv.find(question), std::string::npos) << question << "\n" << csv;
  }
  for (const char* row :
       {"\nyour_table,sample,events,5000,count\n", "\nyour_table,rewind,estimated_full_seconds,",
        "\nyour_table,batched_50,estimated_full_seconds,",
        "\nyour_table,single,estimated_full_seconds,",
        "\nyour_table,rewind_your_models,estimated_full_seconds,",
        "\nyour_table,rewind_your_models,failures,0,count\n"}) {
    EXPECT_NE(csv.find(row), std::string::npos) << row << "\n" << csv;
  }
  EXPECT_NE(csv.find(fmt::format("\nyour_table,table,rows_exact,{},count\n", rows)),
            std::string::npos)
      << csv;
  // Kept: the sample is exactly the first 5,000 ids of the user's table.
  EXPECT_EQ(
      SortedRows(*c, fmt::format("SELECT LPAD(id, 12, '0') FROM {}.your_events_sample", scratch)),
      SortedRows(*c, "SELECT LPAD(id, 12, '0') FROM stored_events ORDER BY id LIMIT 5000"));
  // The built-in read model (events per type per day) against the user's table restricted to
  // the sampled ids, computed here by the server.
  const int64_t last =
      Count(*c, "SELECT MAX(id) FROM (SELECT id FROM stored_events ORDER BY id LIMIT 5000) f");
  EXPECT_EQ(
      SortedRows(
          *c, fmt::format("SELECT event_type, day, events FROM {}.your_events_per_type", scratch)),
      SortedRows(
          *c, fmt::format(
                  "SELECT event_class, DATE(created_at), COUNT(*) FROM stored_events WHERE id <= "
                  "{} GROUP BY 1, 2",
                  last)));
  // Your read models (--models), rebuilt on the sample: the day totals of the sampled ids.
  EXPECT_EQ(
      SortedRows(*c, fmt::format("SELECT day, moves FROM {}.money_moved_per_day", scratch)),
      SortedRows(
          *c, fmt::format("SELECT DATE(created_at), COUNT(*) FROM stored_events WHERE id <= {} AND "
                          "event_class IN ('App\\\\Domain\\\\Account\\\\Events\\\\MoneyAdded', "
                          "'App\\\\Domain\\\\Account\\\\Events\\\\MoneySubtracted') GROUP BY 1",
                          last)));
  ASSERT_TRUE(server->Execute("DROP DATABASE " + scratch).ok());
  // Without --keep: the stress database is gone at the end; the user's table as it was.
  std::vector<std::string> again = args;
  again.erase(std::find(again.begin(), again.end(), "--keep"));
  again[std::find(again.begin(), again.end(), "--sample") - again.begin() + 1] = "1000";
  Outcome second = RunRewind(again, Env(ServerOptions()));
  ASSERT_EQ(second.code, 0) << second.err;
  EXPECT_EQ(
      Count(*server,
            fmt::format("SELECT COUNT(*) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = '{}'",
                        scratch)),
      0);
  EXPECT_EQ(YourTableState(*c), before);
  EXPECT_NE(ReadAll(out + "/report.md").find("the first 1,000 events by id"), std::string::npos);
}

// Refused before anything is created: the user's database as the stress database, a table
// that is not there, a table without the columns named, no database at all.
TEST(Stress, YourTableIsRefusedWhenItCannotBeReadSafely) {
  const std::string app = "rewind_test_stress_app2", scratch = "rewind_test_stress_refused";
  const ConnectionOptions o = YourStoredEvents(app, 100);
  auto c = Connect(o);
  ASSERT_TRUE(c);
  const std::string before = YourTableState(*c);
  auto server = Connect(ServerOptions());
  ASSERT_TRUE(server->Execute("DROP DATABASE IF EXISTS " + scratch).ok());
  const auto run = [&](std::vector<std::string> extra, const std::string& stress_db) {
    std::vector<std::string> args = {"stress",
                                     "--quick",
                                     "--only",
                                     "1",
                                     "--stress-database",
                                     stress_db,
                                     "--out",
                                     ::testing::TempDir() + "/stress-refused"};
    args.insert(args.end(), extra.begin(), extra.end());
    return RunRewind(args, Env(ServerOptions()));
  };
  std::vector<std::string> yours = YourTableArgs(app);
  Outcome same = run(yours, app);
  EXPECT_EQ(same.code, 2);
  EXPECT_NE(
      same.err.find(
          "--database 'rewind_test_stress_app2' is also the stress database (--stress-database)"),
      std::string::npos)
      << same.err;
  std::vector<std::string> missing = yours;
  missing[3] = "no_such_events";
  Outcome absent = run(missing, scratch);
  EXPECT_EQ(absent.code, 1);
  EXPECT_NE(
      absent.err.find(
          "event table 'no_such_events' does not exist in database 'rewind_test_stress_app2'"),
      std::string::npos)
      << absent.err;
  std::vector<std::string> wrong = yours;
  wrong[7] = "eventClass";  // --type-column: not a column of spatie's table
  Outcome columns = run(wrong, scratch);
  EXPECT_EQ(columns.code, 1);
  EXPECT_NE(columns.err.find("event table 'stored_events' has no column 'eventClass'"),
            std::string::npos)
      << columns.err;
  // --only table without a table of the user's to measure.
  Outcome nothing = RunRewind(
      {"stress", "--quick", "--only", "table", "--stress-database", scratch}, Env(ServerOptions()));
  EXPECT_EQ(nothing.code, 2);
  EXPECT_NE(nothing.err.find("--only table measures your event table: give it with --events-table"),
            std::string::npos)
      << nothing.err;
  Outcome nodb = run({"--events-table", "stored_events"}, scratch);
  EXPECT_EQ(nodb.code, 2);
  EXPECT_NE(nodb.err.find("give the database it is in with --database"), std::string::npos)
      << nodb.err;
  EXPECT_EQ(
      Count(*server,
            fmt::format("SELECT COUNT(*) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = '{}'",
                        scratch)),
      0);
  EXPECT_EQ(YourTableState(*c), before);
}

}  // namespace
}  // namespace rw
