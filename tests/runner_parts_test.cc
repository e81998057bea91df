// The runner's parts, each on its own (issue 52, item 4), against the private MariaDB: the
// writer (stages/flow/flush_writer.h) commits a flush's statements in one transaction, on
// the caller's thread or its own, rolls the whole flush back on a warning and redoes it once
// after a lost connection; the flush builder (stages/flow/flush_builder.h) loads the rows of
// keys a new table cannot hold yet and upserts the others. The fold is tested in memory
// (tests/memory_source_test.cc). Each table is checked against counts made here.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <fmt/core.h>
#include <simdjson.h>

#include "stages/db/checkpoint_store.h"
#include "stages/flow/decoder.h"
#include "stages/db/table_schema.h"
#include "stages/flow/flush_builder.h"
#include "stages/flow/flush_writer.h"
#include "test_db.h"

namespace rw::testing {
namespace {

class RunnerPartsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    options_ = FreshDatabase("rewind_test_runner_parts");
    conn_ = Connect(options_);
    ASSERT_TRUE(conn_);
    ASSERT_TRUE(checkpoint_store::Ensure(*conn_).ok());
    ASSERT_TRUE(conn_->Execute("CREATE TABLE t (k INT PRIMARY KEY, v TINYINT NOT NULL)").ok());
  }
  static FlushJob::Step Sql(const std::string& sql) { return FlushJob::Step{sql, {}, false}; }
  // Table t's rows, k -> v, read on a connection of their own.
  std::map<std::string, int64_t> Rows(const std::string&) {
    std::map<std::string, int64_t> out;
    for (const std::string& row : SortedRows(*Connect(options_), "SELECT k, v FROM t")) {
      out[row.substr(0, row.find('|'))] = std::stoll(row.substr(row.find('|') + 1));
    }
    return out;
  }
  std::map<std::string, int64_t> PerDay(const std::string& table) { return TableAsMap(*Connect(options_), table); }

  ConnectionOptions options_;
  std::unique_ptr<Connection> conn_;
};

// First in the file: the fault point reads REWIND_FAULT once per process (ctest runs each
// test in a process of its own).
TEST_F(RunnerPartsTest, AConnectionLostWithTheFlushHalfSentIsRolledBackAndRedoneOnce) {
  const std::filesystem::path go = std::filesystem::path(::testing::TempDir()) / "runner_parts_mid_flush";
  std::filesystem::remove(go);
  ASSERT_EQ(setenv("REWIND_FAULT", ("mid-flush@" + go.string()).c_str(), 1), 0);
  FlushWriter writer(*conn_, FlushWriterOptions{});
  const unsigned long thread = conn_->thread_id();
  auto job = std::make_unique<FlushJob>();
  job->name = job->target = "t";
  job->steps = {Sql("INSERT INTO t VALUES (1, 10)"), Sql("UPDATE t SET v = v + 5 WHERE k = 1")};
  auto killer = Connect(options_);
  ASSERT_TRUE(killer);
  const std::string open = fmt::format("SELECT COUNT(*) FROM information_schema.INNODB_TRX "
                                       "WHERE trx_mysql_thread_id = {} AND trx_rows_modified > 0", thread);
  // Read once before the flush starts, as a slow machine's first poll does (CI, stop 62): the
  // server's picture of INNODB_TRX then predates the transaction.
  ASSERT_TRUE(killer->QueryValue(open).ok());
  writer.Start(std::move(job));
  // The writer waits at the fault point with its statements sent, its transaction open.
  const bool seen = WaitUntil(*killer, open, 1);
  EXPECT_TRUE(seen);
  if (seen) EXPECT_TRUE(killer->Execute(fmt::format("KILL {}", thread)).ok());
  std::ofstream(go.string()).put('\n');  // never left waiting, whatever was seen
  if (!seen) return (void)writer.Wait();
  std::unique_ptr<FlushJob> back = writer.Wait();
  ASSERT_NE(back, nullptr);
  ASSERT_TRUE(back->status.ok()) << back->status.message();
  EXPECT_GE(back->retries, 1u);
  EXPECT_EQ(Rows("t"), (std::map<std::string, int64_t>{{"1", 15}}));  // rolled back, then once
}

TEST_F(RunnerPartsTest, TheWriterCommitsAFlushOnTheCallersThreadOrItsOwn) {
  FlushWriter writer(*conn_, FlushWriterOptions{});
  FlushJob first;
  first.name = first.target = "t";
  first.steps = {Sql("INSERT INTO t VALUES (1, 10), (2, 20)"), Sql("UPDATE t SET v = v + 1 WHERE k = 2")};
  writer.Run(first);
  ASSERT_TRUE(first.status.ok()) << first.status.message();
  EXPECT_EQ(Rows("t"), (std::map<std::string, int64_t>{{"1", 10}, {"2", 21}}));

  auto second = std::make_unique<FlushJob>();
  second->name = second->target = "t";
  second->steps = {Sql("INSERT INTO t VALUES (3, 30)")};
  EXPECT_FALSE(writer.in_flight());
  writer.Start(std::move(second));
  EXPECT_TRUE(writer.in_flight());
  std::unique_ptr<FlushJob> back = writer.Wait();
  ASSERT_NE(back, nullptr);
  EXPECT_TRUE(back->status.ok()) << back->status.message();
  EXPECT_FALSE(writer.in_flight());
  EXPECT_EQ(writer.Wait(), nullptr);  // nothing in flight
  EXPECT_EQ(Rows("t"), (std::map<std::string, int64_t>{{"1", 10}, {"2", 21}, {"3", 30}}));
}

TEST_F(RunnerPartsTest, AValueTheServerCutRollsTheWholeFlushBack) {
  ASSERT_TRUE(conn_->Execute("SET SESSION sql_mode = ''").ok());  // the server warns and clamps
  FlushWriter writer(*conn_, FlushWriterOptions{});
  FlushJob job;
  job.name = job.target = "t";
  job.steps = {Sql("INSERT INTO t VALUES (1, 10)"), Sql("INSERT INTO t VALUES (2, 1000)")};
  writer.Run(job);
  ASSERT_FALSE(job.status.ok());
  EXPECT_NE(job.status.message().find("(rolled back)"), std::string::npos) << job.status.message();
  EXPECT_NE(job.status.message().find("INSERT INTO t VALUES (2, 1000)"), std::string::npos) << job.status.message();
  EXPECT_TRUE(Rows("t").empty());  // the first statement too
}

TEST_F(RunnerPartsTest, ALostConnectionIsReconnectedAndTheFlushRedoneOnce) {
  FlushWriter writer(*conn_, FlushWriterOptions{});
  auto killer = Connect(options_);
  ASSERT_TRUE(killer);
  ASSERT_TRUE(killer->Execute(fmt::format("KILL {}", conn_->thread_id())).ok());
  FlushJob job;
  job.name = job.target = "t";
  job.steps = {Sql("INSERT INTO t VALUES (1, 10)"), Sql("UPDATE t SET v = v + 5 WHERE k = 1")};
  writer.Run(job);
  ASSERT_TRUE(job.status.ok()) << job.status.message();
  EXPECT_GE(job.retries, 1u);
  EXPECT_EQ(Rows("t"), (std::map<std::string, int64_t>{{"1", 15}}));  // once, not twice
}

// visits_per_day's rows, by a fold of visits on the given days (day numbers).
void Fold(Projector& p, const std::vector<int32_t>& days, EventId& next_id) {
  EventCatalog catalog;
  p.Bind(catalog);
  Batch batch;
  for (int32_t d : days) {
    char date[16];
    date[FormatDate(d, date)] = '\0';
    const std::string payload = fmt::format(R"({{"visitedAt":"{}T01:00:00Z"}})", date);
    batch.raw.push_back(RawEvent{next_id++, static_cast<uint32_t>(batch.payloads.size()),
                                 static_cast<uint32_t>(payload.size())});
    batch.payloads += payload;
  }
  batch.payloads.append(simdjson::SIMDJSON_PADDING, '\0');
  Decoder(catalog).Decode(batch);
  ASSERT_TRUE(batch.failures.empty()) << batch.failures[0].reason;
  std::vector<EventFailure> failures;
  const Folded folded = p.Apply(EventRecords{batch.records, batch.values, batch.width}, failures);
  EXPECT_EQ(folded.events, days.size());
}

TEST_F(RunnerPartsTest, TheBuilderLoadsTheKeysANewTableCannotHoldAndUpsertsTheOthers) {
  std::unique_ptr<Projector> p = MakeProjector("visits_per_day");
  ASSERT_TRUE(p);
  const std::string table = "per_day";
  ASSERT_TRUE(conn_->Execute(table_schema::CreateTableSql(p->table(), table)).ok());
  FlushBuilder builder(*conn_, p->table(),
                       FlushBuilderOptions{table, 8 << 20, /*target_starts_empty=*/true, /*bulk_load=*/true,
                                           /*keep_keys=*/true, /*application_table=*/false});
  FlushWriter writer(*conn_, FlushWriterOptions{});
  std::map<std::string, int64_t> expected;  // date -> visits, counted here
  const int32_t day0 = DaysFromCivil(2024, 3, 1);
  auto count = [&](const std::vector<int32_t>& days) {
    for (int32_t d : days) {
      char text[16];
      text[FormatDate(d, text)] = '\0';
      ++expected[text];
    }
  };
  EventId id = 1;
  auto flush = [&](const std::vector<int32_t>& days, size_t loads, size_t upserts) {
    Fold(*p, days, id);
    count(days);
    FlushJob job;
    job.name = job.target = table;
    builder.AddRows(*p, job);
    size_t l = 0, u = 0;
    for (const FlushJob::Step& s : job.steps) (s.load ? l : u) += 1;
    EXPECT_EQ(l, loads) << "LOAD DATA steps";
    EXPECT_EQ(u, upserts) << "upserts";
    writer.Run(job);
    ASSERT_TRUE(job.status.ok()) << job.status.message();
    EXPECT_EQ(PerDay(table), expected);
  };
  flush({day0, day0, day0 + 1}, 1, 0);          // a new table: every row loaded
  flush({day0 + 1, day0 + 2, day0 + 2}, 1, 1);  // day0 + 1 was written: upserted; day0 + 2 loaded
  flush({day0}, 0, 1);                          // only keys it wrote
  builder.Retarget(table);                      // no longer all the run's: upserts alone
  flush({day0 + 5, day0}, 0, 1);
}

}  // namespace
}  // namespace rw::testing
