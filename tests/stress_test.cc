// The write side and `rewind stress`, against a real MariaDB: optimistic concurrency on one
// stream, snapshot + tail against a full replay, and the command end to end (its files,
// its own check, its three OrderSummary rebuilds against a fold computed here).
#include <gtest/gtest.h>

#include <fmt/core.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <thread>

#include "pipeline/stress/order.h"
#include "rewind_process.h"
#include "pipeline/stress/event_store.h"
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
      const int64_t chunk = std::min<int64_t>(length - version, 1 + static_cast<int64_t>(rng() % 40));
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
  Outcome run = RunRewind({"stress", "--quick", "--stress-database", "rewind_test_stress", "--out", out, "--keep"}, env);
  ASSERT_EQ(run.code, 0) << run.err << run.out;
  for (const char* f : {"report.md", "results.csv", "q1_aggregate_load.png", "q2_snapshot.png",
                        "q3_projection_rebuild.png", "q4_concurrent_append.png"}) {
    EXPECT_TRUE(std::filesystem::exists(std::filesystem::path(out) / f)) << f;
  }
  std::ifstream csv(std::filesystem::path(out) / "results.csv");
  std::string line;
  std::getline(csv, line);
  EXPECT_EQ(line, "question,case,metric,value,unit");
  std::map<std::string, double> values;
  std::set<std::string> questions;
  while (std::getline(csv, line)) {
    const size_t a = line.find(','), b = line.find(',', a + 1), d = line.find(',', b + 1), e = line.find(',', d + 1);
    questions.insert(line.substr(0, a));
    values[line.substr(0, d)] = std::stod(line.substr(d + 1, e - d - 1));
  }
  EXPECT_EQ(questions, (std::set<std::string>{"aggregate_load", "snapshot", "projection_rebuild", "concurrent_append"}));
  EXPECT_TRUE(values.count("aggregate_load,10000,p50"));  // --quick keeps the longest stream
  EXPECT_TRUE(values.count("snapshot,crossover,events"));
  for (const char* c : {"distinct_1", "distinct_10", "distinct_100", "same_stream_10"}) {
    EXPECT_EQ(values[fmt::format("concurrent_append,{},lost", c)], 0) << c;
    EXPECT_EQ(values[fmt::format("concurrent_append,{},duplicated", c)], 0) << c;
    EXPECT_GT(values[fmt::format("concurrent_append,{},events_per_s", c)], 0) << c;
  }
  for (const char* m : {"single", "batched", "pipeline", "filtered_server", "filtered_client"}) {
    EXPECT_TRUE(values.count(fmt::format("projection_rebuild,100000/{},seconds", m))) << m;
  }
  // The last volume's three OrderSummary tables are kept (--keep): each equals the fold of
  // the generated orders computed here.
  ConnectionOptions db = server;
  db.database = "rewind_test_stress";
  auto c = Connect(db);
  ASSERT_TRUE(c);
  std::vector<std::string> want;
  for (int i = 0; i < 1000; ++i) {
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
    want.push_back(fmt::format("{}|{}|{}|{}.{:02d}|{}.{:02d}|{}", stream, status, items, total / 100, total % 100,
                               discount / 100, discount % 100, confirmed));
  }
  for (const char* table : {"order_summary", "summary_single", "summary_batched"}) {
    auto rows = c->Query(fmt::format(
        "SELECT order_id, status, items, total, discount_total, confirmed_at FROM {} ORDER BY order_id", table));
    ASSERT_TRUE(rows.ok()) << rows.status().message();
    std::vector<std::string> got;
    for (const auto& r : rows->rows) {
      std::string s;
      for (size_t i = 0; i < r.size(); ++i) s += (i ? "|" : "") + r[i].value_or("NULL");
      got.push_back(s);
    }
    EXPECT_EQ(got, want) << table;
  }
  EXPECT_TRUE(c->Execute("DROP DATABASE rewind_test_stress").ok());
}

TEST(Stress, RefusesADatabaseItDidNotCreate) {
  const ConnectionOptions o = FreshDatabase("rewind_test_not_stress");
  auto c = Connect(o);
  ASSERT_TRUE(c);
  ASSERT_TRUE(c->Execute("CREATE TABLE precious (id INT PRIMARY KEY)").ok());
  ASSERT_TRUE(c->Execute("INSERT INTO precious VALUES (1)").ok());
  Outcome run = RunRewind({"stress", "--quick", "--only", "1", "--stress-database", "rewind_test_not_stress", "--out",
                           ::testing::TempDir() + "/stress-refused"},
                          Env(ServerOptions()));
  EXPECT_EQ(run.code, 1);
  EXPECT_NE(run.err.find("holds tables that rewind stress did not create (precious)"), std::string::npos) << run.err;
  EXPECT_EQ(Count(*c, "SELECT COUNT(*) FROM precious"), 1);
  EXPECT_EQ(Count(*c, "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'rewind_test_not_stress'"), 1);
}

// Once stress has worked in a database (its own bookkeeping is there), a table someone else
// puts there is still not its own: the next run refuses the database and drops nothing (#23).
TEST(Stress, RefusesADatabaseWithAUserTableEvenWhereItHasWorkedBefore) {
  const ConnectionOptions server = ServerOptions();
  auto admin = Connect(server);
  ASSERT_TRUE(admin);
  ASSERT_TRUE(admin->Execute("DROP DATABASE IF EXISTS rewind_test_stress_again").ok());
  const std::vector<std::string> args = {"stress", "--quick", "--only", "1", "--stress-database",
                                         "rewind_test_stress_again", "--out", ::testing::TempDir() + "/stress-again"};
  std::vector<std::string> keep = args;
  keep.push_back("--keep");
  Outcome first = RunRewind(keep, Env(server));
  ASSERT_EQ(first.code, 0) << first.err;
  ConnectionOptions db = server;
  db.database = "rewind_test_stress_again";
  auto c = Connect(db);
  ASSERT_TRUE(c);
  const std::string tables = "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'rewind_test_stress_again'";
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
  Subprocess run(Rewind({"stress", "--quick", "--only", "1", "--stress-database", "rewind_test_stress_own", "--out",
                         ::testing::TempDir() + "/stress-own"}),
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
  EXPECT_EQ(Count(*c, "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = "
                      "'rewind_test_stress_own' AND TABLE_NAME <> 'precious'"), 0)
      << c->QueryValue("SELECT GROUP_CONCAT(TABLE_NAME) FROM information_schema.TABLES WHERE TABLE_SCHEMA = "
                       "'rewind_test_stress_own'").value().value_or("");
  EXPECT_TRUE(admin->Execute("DROP DATABASE rewind_test_stress_own").ok());
}

}  // namespace
}  // namespace rw
