// Declared read models whose numbers must not depend on how the work was cut: a sum that
// leaves its type fails the same event whatever the flushes, a resume or --follow (#23
// part 5), and first/last follow id order whatever the commit order (#23 part 6). Every
// expectation is computed by the server from the event table (a recursive CTE walking each
// account's events in id order), never taken from rewind.
#include <gtest/gtest.h>

#include <fmt/core.h>

#include <csignal>
#include <fstream>
#include <string>
#include <vector>

#include "rewind_process.h"
#include "scripts/generate/event_generator.h"
#include "subprocess.h"
#include "test_db.h"

namespace rw {
namespace {

using namespace rw::testing;

constexpr const char* kDeposited = "App\\Bank\\Deposited";

// Two read models on one class: `balances` has a sum that can leave decimal(5,2); `totals`
// cannot overflow and must go on whatever happens to the other.
constexpr const char* kBankModels = R"toml(
[[read_model]]
name   = "balances"
events = ['App\Bank\Deposited']
key    = [{ column = "account", path = "account" }]
values = [
  { column = "balance",  op = "sum", path = "amount", type = "decimal(5,2)" },
  { column = "deposits", op = "count" },
]

[[read_model]]
name   = "totals"
events = ['App\Bank\Deposited']
key    = [{ column = "account", path = "account" }]
values = [{ column = "total", op = "sum", path = "amount", type = "decimal(18,2)" }]

[[read_model]]
name   = "account_ends"
events = ['App\Bank\Deposited']
key    = [{ column = "account", path = "account" }]
values = [
  { column = "first_amount", op = "first", path = "amount", type = "decimal(10,2)" },
  { column = "last_amount",  op = "last",  path = "amount", type = "decimal(10,2)" },
  { column = "last_note",    op = "last",  path = "note" },
]
)toml";

std::string ModelsFile() {
  const std::string file = ::testing::TempDir() + "/bank-models.toml";
  std::ofstream(file) << kBankModels;
  return file;
}

std::string Deposit(const std::string& account, int64_t cents) {
  return fmt::format(R"({{"account":"{}","amount":"{}{}.{:02d}","note":"n{}"}})", account, cents < 0 ? "-" : "",
                     std::abs(cents) / 100, std::abs(cents) % 100, cents);
}

void Insert(Connection& c, const std::string& payload) {
  std::string sql = "INSERT INTO stored_events (uuid, eventClass, payload, createdAt) VALUES (UUID(), ";
  c.AppendQuoted(sql, kDeposited);
  sql += ", ";
  c.AppendQuoted(sql, payload);
  sql += ", '2024-05-01 10:00:00')";
  ASSERT_TRUE(c.Execute(sql).ok()) << sql;
}

// The issue's three events first (600.00 + 399.99 + 5.00: the third leaves decimal(5,2)),
// then deposits and withdrawals on four accounts that drift upwards, so that sums leave
// the type again and again, all along the ids.
std::vector<std::string> BankEvents(size_t n) {
  std::vector<std::string> out = {Deposit("a", 60000), Deposit("a", 39999), Deposit("a", 500)};
  uint64_t x = 12345;
  while (out.size() < n) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    const int64_t cents = static_cast<int64_t>((x >> 33) % 50000) - 15000;  // -150.00 .. 349.99
    out.push_back(Deposit(std::string(1, static_cast<char>('a' + (x >> 20) % 4)), cents));
  }
  return out;
}

ConnectionOptions BankStore(const std::string& name, const std::vector<std::string>& events) {
  ConnectionOptions o = FreshDatabase(name);
  auto c = Connect(o);
  EXPECT_TRUE(c->Execute(EventTableDdl("stored_events")).ok());
  for (const std::string& e : events) Insert(*c, e);
  return o;
}

// Each account's events in id order, walked by the server: an event whose sum would leave
// decimal(5,2) (|sum| >= 1000) is skipped and listed as failed.
const char* const kWalk = R"sql(
  WITH RECURSIVE e AS (
    SELECT id, account, amount, ROW_NUMBER() OVER (PARTITION BY account ORDER BY id) AS n FROM (
      SELECT id, JSON_VALUE(payload, '$.account') AS account,
             CAST(JSON_VALUE(payload, '$.amount') AS DECIMAL(10,2)) AS amount
      FROM stored_events WHERE eventClass = 'App\\Bank\\Deposited') x),
  w AS (
    SELECT account, n, id, CAST(IF(ABS(amount) < 1000, amount, 0) AS DECIMAL(10,2)) AS bal,
           CAST(IF(ABS(amount) < 1000, 1, 0) AS SIGNED) AS cnt, ABS(amount) >= 1000 AS failed
    FROM e WHERE n = 1
    UNION ALL
    SELECT e.account, e.n, e.id, IF(ABS(w.bal + e.amount) < 1000, w.bal + e.amount, w.bal),
           w.cnt + IF(ABS(w.bal + e.amount) < 1000, 1, 0), ABS(w.bal + e.amount) >= 1000
    FROM w JOIN e ON e.account = w.account AND e.n = w.n + 1)
)sql";

std::string ReferenceBalances() {
  return std::string(kWalk) +
         "SELECT w.account, w.bal, w.cnt FROM w JOIN (SELECT account, MAX(n) AS n FROM e GROUP BY account) last "
         "ON last.account = w.account AND last.n = w.n";
}

// The balances table, the failures recorded for it, and `totals`, each against the walk.
void ExpectBalancesMatchTheEvents(Connection& c) {
  const auto reference = SortedRows(c, ReferenceBalances());
  ASSERT_FALSE(reference.empty());
  EXPECT_EQ(SortedRows(c, "SELECT account, balance, deposits FROM balances"), reference);
  const auto failed = SortedRows(c, std::string(kWalk) + "SELECT id FROM w WHERE failed");
  ASSERT_GT(failed.size(), 3u);
  EXPECT_EQ(Count(c, std::string(kWalk) + "SELECT MIN(id) FROM w WHERE failed"),
            Count(c, "SELECT MIN(id) + 2 FROM stored_events"));  // the 5.00
  // Each exactly once, whatever was killed or resumed.
  EXPECT_EQ(SortedRows(c, "SELECT event_id FROM rewind_failures WHERE stage = 'balances'"), failed);
  EXPECT_EQ(SortedRows(c, "SELECT account, total FROM totals"),
            SortedRows(c, "SELECT JSON_VALUE(payload, '$.account'), SUM(CAST(JSON_VALUE(payload, '$.amount') AS "
                    "DECIMAL(18,2))) FROM stored_events GROUP BY 1"));
}

void Reset(Connection& c) {
  ASSERT_TRUE(c.Execute("DELETE FROM rewind_failures").ok());
}

TEST(Sums, ASumThatLeavesItsTypeFailsTheSameEventWhateverTheFlushes) {
  const ConnectionOptions o = BankStore("rewind_test_sums_flushes", BankEvents(240));
  auto c = Connect(o);
  const std::string models = ModelsFile();
  const std::vector<std::vector<std::string>> cuts = {{}, {"--batch-size", "1", "--flush-every", "1"},
                                                       {"--flush-every", "7"}};
  for (const auto& cut : cuts) {
    SCOPED_TRACE(::testing::PrintToString(cut));
    std::vector<std::string> args = {"replay", "balances", "totals", "--models", models, "--quiet"};
    args.insert(args.end(), cut.begin(), cut.end());
    const Outcome run = RunRewind(args, Env(o));
    EXPECT_EQ(run.code, 3) << run.err;
    EXPECT_NE(run.err.find("could not be applied"), std::string::npos) << run.err;
    ExpectBalancesMatchTheEvents(*c);
    Reset(*c);
  }
}

TEST(Sums, ASumThatLeavesItsTypeAfterAResumeIsCheckedAgainstTheCommittedRow) {
  const ConnectionOptions o = BankStore("rewind_test_sums_resume", BankEvents(240));
  auto c = Connect(o);
  const std::string models = ModelsFile();
  std::vector<std::string> env = Env(o);
  env.push_back("REWIND_FAULT=mid-flush:9");
  {
    Subprocess run(Rewind({"replay", "balances", "totals", "--models", models, "--progress", "plain",
                           "--batch-size", "10", "--flush-every", "10"}),
                   env);
    ASSERT_TRUE(run.started());
    ASSERT_TRUE(run.WaitFor("fault point", 120)) << run.err();
    run.Signal(SIGKILL);
    EXPECT_EQ(run.Wait(), 128 + SIGKILL);
  }
  // Some flushes committed; events that leave the type come after them, and their rows
  // are already in the table.
  const int64_t resumed_after =
      Count(*c, "SELECT last_event_id FROM rewind_checkpoints WHERE projector = 'balances'");
  ASSERT_GT(resumed_after, 0);
  ASSERT_GT(Count(*c, std::string(kWalk) + "SELECT COUNT(*) FROM w WHERE failed AND id > " +
                          std::to_string(resumed_after)),
            0);
  const Outcome resume = RunRewind({"replay", "balances", "totals", "--models", models, "--resume", "--quiet"}, Env(o));
  EXPECT_EQ(resume.code, 3) << resume.err;
  ExpectBalancesMatchTheEvents(*c);
}

TEST(Sums, UnderFollowASumThatLeavesItsTypeFailsThatEventAndTheFollowerGoesOn) {
  const std::vector<std::string> events = BankEvents(240);
  const ConnectionOptions o = BankStore("rewind_test_sums_follow", {events.begin(), events.begin() + 2});
  auto c = Connect(o);
  ReplayOptions ro;
  ro.connection = o;
  ro.models_file = ModelsFile();
  ro.projectors = {"balances", "totals"};
  Follower follower(ro);
  ASSERT_TRUE(follower.following());
  for (size_t i = 2; i < events.size(); ++i) Insert(*c, events[i]);
  const int64_t head = Count(*c, "SELECT MAX(id) FROM stored_events");
  EXPECT_TRUE(WaitUntil(*c, "SELECT MIN(last_event_id) >= " + std::to_string(head) + " FROM rewind_checkpoints", 1));
  const ReplaySummary& sum = follower.Stop();
  EXPECT_TRUE(sum.status.ok()) << sum.status.message();
  ExpectBalancesMatchTheEvents(*c);
}

// A server that would clamp a value silently (sql_mode without strict mode, here on a
// table whose column another hand narrowed after the swap): the warning fails the flush,
// which rolls back, and the follow stops saying that the swap had happened.
TEST(Sums, AWarningOfRewindsOwnWriteFailsTheFlushAndAFollowSaysTheSwapHadHappened) {
  const ConnectionOptions o = BankStore("rewind_test_sums_warning", {Deposit("a", 100)});
  auto c = Connect(o);
  GlobalsRestored restored(*c, {"sql_mode"});
  ASSERT_TRUE(c->Execute("SET GLOBAL sql_mode = ''").ok());
  {
    Subprocess run(Rewind({"replay", "totals", "--models", ModelsFile(), "--follow", "--poll", "0.05",
                           "--progress", "plain"}),
                   Env(o));
    ASSERT_TRUE(run.started());
    EXPECT_TRUE(WaitUntil(*c, "SELECT COUNT(*) FROM rewind_checkpoints WHERE status = 'following'", 1));
    ASSERT_TRUE(c->Execute("ALTER TABLE totals MODIFY total DECIMAL(5,2) NOT NULL").ok());
    Insert(*c, Deposit("a", 999900));  // 10000.00: 999.99 and a warning in that column
    const bool stopped = run.WaitFor("rewind: error", 60);
    if (!stopped) run.Signal(SIGTERM);
    EXPECT_TRUE(stopped) << run.err();
    EXPECT_EQ(run.Wait(), 1) << run.err();
    EXPECT_NE(run.err().find("INSERT INTO `totals`"), std::string::npos) << run.err();
    EXPECT_NE(run.err().find("1264"), std::string::npos) << run.err();
    EXPECT_NE(run.err().find("swapped in before the error"), std::string::npos) << run.err();
    EXPECT_EQ(run.err().find("nothing was swapped in"), std::string::npos) << run.err();
  }
  EXPECT_EQ(SortedRows(*c, "SELECT account, total FROM totals"), std::vector<std::string>{"a|1.00"});  // rolled back
}

// A transaction holding the lower ids commits after rewind applied higher ones: `first`
// and `last` still follow id order (the late event wins only where its id is the extreme
// one), and verify finds the live table identical to a rebuild.
TEST(FirstLast, FollowWithALateCommitKeepsIdOrder) {
  const ConnectionOptions o = BankStore("rewind_test_first_last", {Deposit("a", 100), Deposit("a", 200)});
  auto c = Connect(o);
  const std::string models = ModelsFile();
  ReplayOptions ro;
  ro.connection = o;
  ro.models_file = models;
  ro.projectors = {"account_ends"};
  Follower follower(ro);
  ASSERT_TRUE(follower.following());
  auto app = Connect(o);
  ASSERT_TRUE(app->Execute("START TRANSACTION").ok());
  Insert(*app, Deposit("a", 300));  // neither first nor last of a: loses to both sides
  Insert(*app, Deposit("b", 700));  // the first of b, committed after b's second
  Insert(*c, Deposit("a", 400));
  Insert(*c, Deposit("b", 800));
  const int64_t head = Count(*c, "SELECT MAX(id) FROM stored_events");
  EXPECT_TRUE(WaitUntil(*c, "SELECT MIN(last_event_id) >= " + std::to_string(head) + " FROM rewind_checkpoints", 1));
  ASSERT_TRUE(app->Execute("COMMIT").ok());
  EXPECT_TRUE(WaitUntil(*c, "SELECT MIN(late_events) FROM rewind_checkpoints", 2));
  const ReplaySummary& sum = follower.Stop();
  ASSERT_TRUE(sum.status.ok()) << sum.status.message();
  EXPECT_EQ(sum.late_events, 2u);
  const char* const kEnds = R"sql(
    SELECT JSON_VALUE(f.payload, '$.account'), CAST(JSON_VALUE(f.payload, '$.amount') AS DECIMAL(10,2)),
           CAST(JSON_VALUE(l.payload, '$.amount') AS DECIMAL(10,2)), JSON_VALUE(l.payload, '$.note')
    FROM (SELECT JSON_VALUE(payload, '$.account') AS account, MIN(id) AS lo, MAX(id) AS hi
          FROM stored_events GROUP BY 1) x
    JOIN stored_events f ON f.id = x.lo JOIN stored_events l ON l.id = x.hi)sql";
  EXPECT_EQ(SortedRows(*c, "SELECT account, first_amount, last_amount, last_note FROM account_ends"), SortedRows(*c, kEnds));
  const Outcome verify = RunRewind({"verify", "account_ends", "--models", models}, Env(o));
  EXPECT_EQ(verify.code, 0) << verify.out << verify.err;
}

}  // namespace
}  // namespace rw
