// Exact on the application's tables (issue 51): the defects a second real client and hostile
// use found, one test per shape, each against the server's own computation (GROUP BY over the
// event table), never against rewind. The events are an evtstore-like table (its Knex
// migration's columns) with holes; the application's read-model table, its bookmark and its
// projector are the application's, not rewind's.
#include <gtest/gtest.h>

#include <fmt/core.h>

#include <filesystem>
#include <fstream>
#include <random>

#include "pipeline/replay/hand_over.h"
#include "rewind_process.h"
#include "subprocess.h"
#include "test_db.h"

namespace rw {
namespace {

using namespace rw::testing;

// An evtstore-shaped event table: positions with holes (one in four burned), accounts in two
// streams, amounts with cents.
ConnectionOptions Events(const std::string& database, int n_events = 3000) {
  ConnectionOptions o = FreshDatabase(database);
  auto c = Connect(o);
  EXPECT_TRUE(c->Execute(R"sql(
    CREATE TABLE events (
      position BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
      stream VARCHAR(255) NOT NULL, aggregate_id VARCHAR(255) NOT NULL, version INT NOT NULL,
      timestamp DATETIME(6) NOT NULL, event TEXT NOT NULL,
      KEY (stream, aggregate_id, version)
    ) DEFAULT CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci)sql").ok());
  std::mt19937 rng(5101);
  std::string sql;
  uint64_t position = 0;
  for (int n = 0; n < n_events; ++n) {
    position += std::uniform_int_distribution<int>(0, 3)(rng) == 0 ? 2 : 1;
    const int account = std::uniform_int_distribution<int>(0, 40)(rng);
    const char* types[] = {"opened", "deposited", "deposited", "withdrawn"};
    const std::string type = types[std::uniform_int_distribution<int>(0, 3)(rng)];
    const int cents = std::uniform_int_distribution<int>(1, 99999)(rng);
    // Times with microseconds (the time column is datetime(6), and the payload's "at" an
    // ISO-8601 time with a fraction of its own).
    const std::string at = fmt::format("2025-05-{:02d} 10:{:02d}:{:02d}.{:06d}", 1 + n % 28, n % 60, (n / 60) % 60,
                                       (n * 7919) % 1000000);
    const std::string iso = fmt::format("2025-04-{:02d}T08:00:{:02d}.{:06d}Z", 1 + n % 28, n % 60, (n * 104729) % 1000000);
    sql += fmt::format("{}({}, 'accounts', 'acc-{}', {}, '{}', {})", sql.empty() ? "" : ", ", position, account, n, at,
                       c->Quote(fmt::format(R"({{"type":"{}","amount":{}.{:02d},"at":"{}"}})", type, cents / 100,
                                            cents % 100, iso)));
    if (n % 500 == 499 || n + 1 == n_events) {
      EXPECT_TRUE(c->Execute("INSERT INTO events (position, stream, aggregate_id, version, timestamp, event) VALUES " +
                             sql).ok());
      sql.clear();
    }
  }
  return o;
}

const char* kBalances = R"toml(
[[read_model]]
name   = "account_balances"
events = ["deposited", "withdrawn"]
where  = { stream = "accounts" }
key    = [ { column = "account_id", field = "aggregate_id" } ]
values = [
  { column = "balance",  op = "sum",      path = "amount", type = "decimal(12,2)", on = ["deposited"] },
  { column = "balance",  op = "subtract", path = "amount", type = "decimal(12,2)", on = ["withdrawn"] },
  { column = "deposits", op = "count",    on = ["deposited"] },
]
)toml";

// The balances the events give, by the server.
const char* kReference = R"sql(
  SELECT aggregate_id,
         SUM(IF(JSON_VALUE(event, '$.type') = 'deposited', 1, -1) * CAST(JSON_VALUE(event, '$.amount') AS DECIMAL(12,2))),
         SUM(JSON_VALUE(event, '$.type') = 'deposited')
  FROM events WHERE stream = 'accounts' AND JSON_VALUE(event, '$.type') IN ('deposited', 'withdrawn')
  GROUP BY aggregate_id)sql";

std::vector<std::string> Replay(const std::string& models) {
  return {"replay", "--all", "--models", models, "--events-table", "events", "--id-column", "position",
          "--type-path", "type", "--payload-column", "event", "--time-column", "timestamp", "--quiet"};
}

std::string ModelsFile(const std::string& name, const std::string& text) {
  const std::string path = ::testing::TempDir() + "/" + name + ".toml";
  std::ofstream(path) << text;
  return path;
}

void CreateApplicationTables(Connection& c, const std::string& bookmark_engine = "InnoDB") {
  ASSERT_TRUE(c.Execute(R"sql(
    CREATE TABLE account_balances (
      account_id VARCHAR(64) NOT NULL, balance DECIMAL(14,2) NOT NULL DEFAULT 0.00,
      deposits INT UNSIGNED NOT NULL DEFAULT 0, PRIMARY KEY (account_id)
    ) DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_general_ci)sql").ok());
  ASSERT_TRUE(c.Execute("CREATE TABLE bookmarks (bookmark VARCHAR(64) NOT NULL PRIMARY KEY, "
                        "position BIGINT UNSIGNED NOT NULL) ENGINE=" + bookmark_engine).ok());
  ASSERT_TRUE(c.Execute("INSERT INTO bookmarks VALUES ('balances', 0)").ok());
  ASSERT_TRUE(c.Execute("INSERT INTO account_balances VALUES ('app-row', 1.00, 1)").ok());
}

std::string Deposit(int account, int cents) {
  return fmt::format(
      "INSERT INTO events (stream, aggregate_id, version, timestamp, event) VALUES ('accounts', 'acc-{}', 1, "
      "'2025-06-01 10:00:00', '{{\"type\":\"deposited\",\"amount\":{}.{:02d}}}')",
      account, cents / 100, cents % 100);
}

// Item 1: a late commit (a writer's transaction open while rewind reads past its id) lands
// below what a read model with a `last` column already wrote into the application's table,
// which keeps no event ids. Its sums and counts are placed exactly; its last value cannot be,
// so the build is not swapped in (no exit 0 on a result known to be wrong); a rebuild from
// the start is exact.
TEST(Exact, ALateCommitIsNeverDroppedWholeNorSwappedInWrong) {
  ConnectionOptions o = Events("rewind_test_exact_late_last", 2000);
  auto c = Connect(o);
  ASSERT_TRUE(c->Execute(R"sql(
    CREATE TABLE account_balances (
      account_id VARCHAR(64) NOT NULL PRIMARY KEY, balance DECIMAL(14,2) NOT NULL DEFAULT 0.00,
      deposits INT UNSIGNED NOT NULL DEFAULT 0, last_amount DECIMAL(14,2) NULL
    ) DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_general_ci)sql").ok());
  const std::string with_last = ModelsFile("exact_late_last_full", R"toml(
[[read_model]]
name   = "account_balances"
events = ["deposited", "withdrawn"]
where  = { stream = "accounts" }
key    = [ { column = "account_id", field = "aggregate_id" } ]
values = [
  { column = "balance",     op = "sum",      path = "amount", type = "decimal(12,2)", on = ["deposited"] },
  { column = "balance",     op = "subtract", path = "amount", type = "decimal(12,2)", on = ["withdrawn"] },
  { column = "deposits",    op = "count",    on = ["deposited"] },
  { column = "last_amount", op = "last",     path = "amount", type = "decimal(12,2)" },
]
)toml");
  // Writers: one transaction takes its ids and stays open, later inserts commit.
  auto open = Connect(o);
  ASSERT_TRUE(open->Execute("START TRANSACTION").ok());
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(open->Execute(Deposit(5, 9900 + i)).ok());
  for (int i = 0; i < 40; ++i) ASSERT_TRUE(c->Execute(Deposit(i % 9, 100 + i)).ok());
  const std::string pause = PauseFile("exact_late_last");
  std::vector<std::string> env = Env(o);
  env.push_back("REWIND_FAULT=before-catch-up@" + pause);
  std::vector<std::string> args = Replay(with_last);
  for (const char* a : {"--flush-every", "300"}) args.push_back(a);
  Subprocess run(Rewind(args), env);
  ASSERT_TRUE(run.WaitFor("fault point", 120)) << run.err();
  ASSERT_TRUE(open->Execute("COMMIT").ok());  // late: below what was flushed
  Release(pause);
  EXPECT_EQ(run.Wait(), 1) << run.err();
  EXPECT_NE(run.err().find("could not be placed exactly (account_balances missed 3)"), std::string::npos) << run.err();
  EXPECT_NE(run.err().find("nothing was swapped in"), std::string::npos) << run.err();
  // The application's table is untouched; the build holds every sum, the late ones too.
  EXPECT_EQ(Count(*c, "SELECT COUNT(*) FROM account_balances"), 0);
  auto shadow = c->QueryValue("SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() "
                              "AND TABLE_NAME LIKE 'account\\_balances\\_\\_rewind%'");
  ASSERT_TRUE(shadow.ok() && *shadow);
  EXPECT_EQ(SortedRows(*c, "SELECT account_id, balance, deposits FROM " + QuoteIdentifier(**shadow)),
            SortedRows(*c, kReference));
  // Rebuilt from the start, now that the late commits are in: exact, last values too.
  Outcome again = RunRewind(Replay(with_last), Env(o));
  EXPECT_EQ(again.code, 0) << again.err;
  EXPECT_EQ(SortedRows(*c, "SELECT account_id, balance, deposits FROM account_balances"), SortedRows(*c, kReference));
  EXPECT_EQ(SortedRows(*c, "SELECT account_id, last_amount FROM account_balances"),
            SortedRows(*c, "SELECT e.aggregate_id, CAST(JSON_VALUE(e.event, '$.amount') AS DECIMAL(14,2)) FROM events e "
                           "JOIN (SELECT MAX(position) AS p FROM events WHERE JSON_VALUE(event, '$.type') IN "
                           "('deposited', 'withdrawn') GROUP BY aggregate_id) m ON e.position = m.p"));
}

// Item 3: the connection that holds the event table's inserts off is killed during the
// hold (a DBA's KILL, a proxy's idle timeout). An insert that took its id after the kill and
// commits after a later one would sit below the head: the swap must not go on as if held.
TEST(Exact, AHoldLostBeforeTheSwapIsTakenAgainAndNoEventIsMissed) {
  ConnectionOptions o = Events("rewind_test_exact_hold_lost");
  auto c = Connect(o);
  CreateApplicationTables(*c);
  ASSERT_TRUE(c->Execute("DELETE FROM account_balances").ok());
  const std::string models = ModelsFile("exact_hold_lost", std::string(kBalances) +
      "hand_over = \"UPDATE bookmarks SET position = ? WHERE bookmark = 'balances'\"\n");
  // A DBA's way to find who holds a table lock.
  (void)c->Execute("INSTALL SONAME 'metadata_lock_info'");
  const std::string pause = PauseFile("exact_hold_lost");
  std::vector<std::string> env = Env(o);
  env.push_back("REWIND_FAULT=writers-held@" + pause);
  Subprocess run(Rewind(Replay(models)), env);
  ASSERT_TRUE(run.WaitFor("fault point", 120)) << run.err();
  Result<std::optional<std::string>> holder = c->QueryValue(
      "SELECT THREAD_ID FROM information_schema.METADATA_LOCK_INFO WHERE TABLE_SCHEMA = DATABASE() AND "
      "TABLE_NAME = 'events' AND THREAD_ID <> CONNECTION_ID() LIMIT 1");
  ASSERT_TRUE(holder.ok() && *holder) << (holder.ok() ? "no holder" : holder.status().message());
  ASSERT_TRUE(c->Execute("KILL CONNECTION " + **holder).ok());
  // The application writes at once: one insert takes its id and stays open, a later one commits.
  auto open = Connect(o);
  ASSERT_TRUE(open->Execute("START TRANSACTION").ok());
  ASSERT_TRUE(open->Execute(Deposit(7, 123456)).ok());
  ASSERT_TRUE(c->Execute(Deposit(8, 777)).ok());
  Release(pause);
  ASSERT_TRUE(run.WaitFor("was lost before the swap", 120)) << run.err();
  ASSERT_TRUE(open->Execute("COMMIT").ok());
  EXPECT_EQ(run.Wait(), 0) << run.err();
  EXPECT_NE(run.err().find(fmt::format("connection {}", **holder)), std::string::npos) << run.err();
  EXPECT_EQ(SortedRows(*c, "SELECT account_id, balance, deposits FROM account_balances"), SortedRows(*c, kReference));
  EXPECT_EQ(Count(*c, "SELECT position FROM bookmarks WHERE bookmark = 'balances'"),
            Count(*c, "SELECT MAX(position) FROM events"));
}

// Item 8: the application's own projector (an inline projector, a worker not paused) writes its
// table while rewind rebuilds it, without any hand_over: its writes would be lost at the
// RENAME. The swap is refused, the table left as the application wrote it; the dry run says
// that the projector must be paused and what the check costs.
TEST(Exact, TheApplicationsWritesDuringARebuildAreNeverLostAtTheSwap) {
  ConnectionOptions o = Events("rewind_test_exact_app_writes", 1500);
  auto c = Connect(o);
  CreateApplicationTables(*c);
  const std::string models = ModelsFile("exact_app_writes", kBalances);
  Outcome dry = RunRewind([&] { auto a = Replay(models); a.push_back("--dry-run"); return a; }(), Env(o));
  EXPECT_EQ(dry.code, 0) << dry.err;
  EXPECT_NE(dry.out.find("the application's table account_balances: nothing may write it until the swap (pause "
                         "the application's projector)"),
            std::string::npos)
      << dry.out;
  EXPECT_NE(dry.out.find("a scan of about"), std::string::npos) << dry.out;
  const std::string pause = PauseFile("exact_app_writes");
  std::vector<std::string> env = Env(o);
  env.push_back("REWIND_FAULT=before-catch-up@" + pause);
  Subprocess run(Rewind(Replay(models)), env);
  ASSERT_TRUE(run.WaitFor("fault point", 120)) << run.err();
  // The application's projector applies an event meanwhile.
  ASSERT_TRUE(c->Execute(Deposit(3, 250)).ok());
  ASSERT_TRUE(c->Execute("INSERT INTO account_balances VALUES ('acc-3', 2.50, 1) "
                         "ON DUPLICATE KEY UPDATE balance = balance + 2.50, deposits = deposits + 1").ok());
  const std::vector<std::string> written = SortedRows(*c, "SELECT * FROM account_balances");
  Release(pause);
  EXPECT_EQ(run.Wait(), 1) << run.err();
  EXPECT_NE(run.err().find("the live table account_balances changed during the rebuild"), std::string::npos)
      << run.err();
  EXPECT_NE(run.err().find("Nothing was swapped in"), std::string::npos) << run.err();
  EXPECT_EQ(SortedRows(*c, "SELECT * FROM account_balances"), written);
  // Paused, the same rebuild resumes and swaps, exact against the server's GROUP BY.
  std::vector<std::string> resume = Replay(models);
  resume.push_back("--resume");
  Outcome r = RunRewind(resume, Env(o));
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(SortedRows(*c, "SELECT account_id, balance, deposits FROM account_balances"), SortedRows(*c, kReference));
}

// Item 2: datetime(6) and timestamp(6) keep their microseconds, from the time column into the
// application's datetime(6) column, and from the payload into a new table declared
// datetime(6); the dry run's "fits" is true, and a column that would cut them does not fit.
TEST(Exact, FractionalSecondsAreKeptFromTheTimeColumnAndThePayload) {
  ConnectionOptions o = Events("rewind_test_exact_micros", 3000);
  auto c = Connect(o);
  ASSERT_TRUE(c->Execute(R"sql(
    CREATE TABLE account_times (
      account_id VARCHAR(64) NOT NULL PRIMARY KEY, last_at DATETIME(6) NULL,
      touched TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6) ON UPDATE CURRENT_TIMESTAMP(6)
    ))sql").ok());
  const std::string models = ModelsFile("exact_micros", R"toml(
[[read_model]]
name   = "account_times"
events = ["deposited", "withdrawn", "opened"]
key    = [ { column = "account_id", field = "aggregate_id" } ]
values = [ { column = "last_at", op = "max", field = "timestamp", type = "datetime" } ]

[[read_model]]
name   = "account_firsts"
events = ["deposited", "withdrawn", "opened"]
key    = [ { column = "account_id", field = "aggregate_id", type = "varchar(64)" } ]
values = [ { column = "first_at", op = "min", path = "at", type = "datetime(6)" },
           { column = "first_ts", op = "min", path = "at", type = "timestamp(3)" } ]
)toml");
  Outcome dry = RunRewind([&] { auto a = Replay(models); a.push_back("--dry-run"); return a; }(), Env(o));
  EXPECT_EQ(dry.code, 0) << dry.err;
  EXPECT_EQ(dry.out.find("would be cut"), std::string::npos) << dry.out;
  EXPECT_NE(dry.out.find("a real run could start"), std::string::npos) << dry.out;
  Outcome r = RunRewind(Replay(models), Env(o));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(SortedRows(*c, "SELECT account_id, last_at FROM account_times"),
            SortedRows(*c, "SELECT aggregate_id, MAX(timestamp) FROM events GROUP BY aggregate_id"));
  const char* first = "CAST(REPLACE(REPLACE(JSON_VALUE(event, '$.at'), 'T', ' '), 'Z', '') AS DATETIME(6))";
  EXPECT_EQ(SortedRows(*c, "SELECT account_id, first_at, first_ts FROM account_firsts"),
            SortedRows(*c, fmt::format("SELECT aggregate_id, MIN({0}), CAST(MIN({0}) AS DATETIME(3)) FROM events "
                                       "GROUP BY aggregate_id", first)));
  EXPECT_GT(Count(*c, "SELECT COUNT(*) FROM account_firsts WHERE MICROSECOND(first_at) <> 0"), 0);
  EXPECT_EQ(SortedRows(*c, "SELECT COLUMN_NAME, COLUMN_TYPE FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = "
                           "DATABASE() AND TABLE_NAME = 'account_firsts' AND COLUMN_NAME LIKE 'first%'"),
            (std::vector<std::string>{"first_at|datetime(6)", "first_ts|timestamp(3)"}));
  // An application's column that keeps fewer digits than the declaration does not fit.
  ASSERT_TRUE(c->Execute("CREATE TABLE account_cut (account_id VARCHAR(64) NOT NULL PRIMARY KEY, "
                         "first_at DATETIME(2) NULL)").ok());
  const std::string cut_models = ModelsFile("exact_micros_cut", R"toml(
[[read_model]]
name   = "account_cut"
events = ["deposited"]
key    = [ { column = "account_id", field = "aggregate_id" } ]
values = [ { column = "first_at", op = "min", path = "at", type = "datetime(6)" } ]
)toml");
  Outcome cut = RunRewind([&] { auto a = Replay(cut_models); a.push_back("--dry-run"); return a; }(), Env(o));
  EXPECT_NE(cut.out.find("datetime(2) keeps 2 fractional digits of a second, the read model's values 6: they would "
                         "be cut"),
            std::string::npos) << cut.out;
}

// Item 4: after --reshape, the user restores the application's table (DROP the reshaped one,
// RENAME the kept one back). The name is rewind's in the bookkeeping, but the table is not
// the one rewind swapped in (its server id differs): a plain rebuild takes it as the
// application's (here: it does not fit, so it is refused) and never drops it.
TEST(Exact, ARestoredApplicationsTableIsNotRewindsWhateverItsName) {
  ConnectionOptions o = Events("rewind_test_exact_restored", 800);
  auto c = Connect(o);
  ASSERT_TRUE(c->Execute("CREATE TABLE account_balances (account_id VARCHAR(64) NOT NULL PRIMARY KEY, "
                         "balance DECIMAL(14,2) NOT NULL DEFAULT 0, note VARCHAR(20) NOT NULL DEFAULT 'app', "
                         "KEY by_note (note)) COMMENT 'the application''s balances'").ok());
  ASSERT_TRUE(c->Execute("INSERT INTO account_balances VALUES ('acc-1', 5.00, 'kept')").ok());
  const std::string models = ModelsFile("exact_restored", kBalances);
  std::vector<std::string> reshape = Replay(models);
  reshape.push_back("--reshape");
  Outcome r = RunRewind(reshape, Env(o));
  ASSERT_EQ(r.code, 0) << r.err;
  // The user's restore.
  ASSERT_TRUE(c->Execute("DROP TABLE account_balances").ok());
  ASSERT_TRUE(c->Execute("RENAME TABLE account_balances__rewind_kept TO account_balances").ok());
  auto shape = [&] {
    auto row = c->Query("SHOW CREATE TABLE account_balances");
    return row.ok() && !row->rows.empty() ? row->rows[0][1].value_or("") : std::string();
  };
  const std::string restored = shape();
  ASSERT_NE(restored.find("by_note"), std::string::npos) << restored;
  Outcome plain = RunRewind(Replay(models), Env(o));
  EXPECT_EQ(plain.code, 1) << plain.err;
  EXPECT_NE(plain.err.find("the column deposits is not in the table"), std::string::npos) << plain.err;
  EXPECT_EQ(shape(), restored);
  EXPECT_EQ(SortedRows(*c, "SELECT * FROM account_balances"), std::vector<std::string>{"acc-1|5.00|kept"});
}

// Items 5 and 9: a hand_over that cannot roll back with a swap that did not happen (its table
// is Aria or MyISAM), or that names the event table (it would wait on the cut-over's own hold),
// is refused before any work; nothing is touched.
TEST(Exact, AHandOverThatCannotRollBackOrWritesTheEventTableIsRefusedBeforeAnyWork) {
  for (const std::string engine : {"Aria", "MyISAM"}) {
    SCOPED_TRACE(engine);
    ConnectionOptions o = Events("rewind_test_exact_hand_over_" + engine, 600);
    auto c = Connect(o);
    CreateApplicationTables(*c, engine);
    const std::vector<std::string> before = SortedRows(*c, "SELECT * FROM account_balances");
    const std::string models = ModelsFile("exact_hand_over_" + engine, std::string(kBalances) +
        "hand_over = \"UPDATE `bookmarks` SET position = ? WHERE bookmark = 'balances'\"\n");
    Outcome r = RunRewind(Replay(models), Env(o));
    EXPECT_EQ(r.code, 1) << r.err;
    EXPECT_NE(r.err.find("names bookmarks, whose engine cannot roll back"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("ENGINE=InnoDB"), std::string::npos) << r.err;
    EXPECT_EQ(Count(*c, "SELECT position FROM bookmarks"), 0);
    EXPECT_EQ(SortedRows(*c, "SELECT * FROM account_balances"), before);
    EXPECT_EQ(Count(*c, "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND "
                        "TABLE_NAME LIKE '%\\_\\_rewind%'"),
              0);
    Outcome dry = RunRewind([&] { auto a = Replay(models); a.push_back("--dry-run"); return a; }(), Env(o));
    EXPECT_NE(dry.out.find("cannot roll back"), std::string::npos) << dry.out << dry.err;
  }
  ConnectionOptions o = Events("rewind_test_exact_hand_over_events", 600);
  auto c = Connect(o);
  CreateApplicationTables(*c);
  const std::vector<std::string> before = SortedRows(*c, "SELECT * FROM account_balances");
  const std::string models = ModelsFile("exact_hand_over_events", std::string(kBalances) +
      "hand_over = \"INSERT INTO events (stream, aggregate_id, version, timestamp, event) "
      "SELECT 'bookmarks', 'balances', ?, NOW(), '{}'\"\n");
  Outcome r = RunRewind(Replay(models), Env(o));
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_NE(r.err.find("names the event table events"), std::string::npos) << r.err;
  EXPECT_EQ(SortedRows(*c, "SELECT * FROM account_balances"), before);
  EXPECT_EQ(Count(*c, "SELECT COUNT(*) FROM events WHERE stream = 'bookmarks'"), 0);
}

// Item 6: the application's table keys the read model's key column by a prefix
// (UNIQUE KEY (account_id(3))): acc-1, acc-10 and acc-11 would fold into one row. A prefix
// key is not the declared key: refused with the account, nothing touched.
TEST(Exact, AUniqueKeyOnAPrefixIsNotTheReadModelsKey) {
  ConnectionOptions o = Events("rewind_test_exact_prefix_key", 600);
  auto c = Connect(o);
  ASSERT_TRUE(c->Execute(R"sql(
    CREATE TABLE account_balances (
      account_id VARCHAR(64) NOT NULL, balance DECIMAL(14,2) NOT NULL DEFAULT 0.00,
      deposits INT UNSIGNED NOT NULL DEFAULT 0, UNIQUE KEY by_account (account_id(5))
    ) DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_general_ci)sql").ok());
  ASSERT_TRUE(c->Execute("INSERT INTO account_balances VALUES ('app-row', 1.00, 1)").ok());
  const std::string models = ModelsFile("exact_prefix_key", kBalances);
  Outcome r = RunRewind(Replay(models), Env(o));
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_NE(r.err.find("not a unique key of the table (its unique keys: by_account (account_id(5)))"),
            std::string::npos) << r.err;
  EXPECT_NE(r.err.find("compares only its first N characters"), std::string::npos) << r.err;
  EXPECT_EQ(SortedRows(*c, "SELECT * FROM account_balances"), std::vector<std::string>{"app-row|1.00|1"});
  EXPECT_EQ(Count(*c, "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND "
                      "TABLE_NAME LIKE '%\\_\\_rewind%'"),
            0);
}

// Item 10: a server whose max_allowed_packet is 1 MiB (some hosted servers). Every statement
// is sized to it: the upserts of 12,000 keys and the failure records of 4,000 bad events each
// take several statements, and the run is exact. A value no statement under the packet can
// carry (a 400 KB note) is its event's failure, named, in the read model that stores it.
TEST(Exact, ASmallMaxAllowedPacketSizesEveryStatement) {
  ConnectionOptions o = FreshDatabase("rewind_test_exact_small_packet");
  auto c = Connect(o);
  ASSERT_TRUE(c->Execute("CREATE TABLE events (position BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY, "
                         "stream VARCHAR(255) NOT NULL, aggregate_id VARCHAR(255) NOT NULL, version INT NOT NULL, "
                         "timestamp DATETIME(6) NOT NULL, event LONGTEXT NOT NULL)").ok());
  std::string sql;
  for (int n = 0; n < 16000; ++n) {
    const bool bad = n % 4 == 3;
    sql += fmt::format("{}('accounts', 'customer-with-a-rather-long-identifier-{:08d}', 1, '2025-05-01 10:00:00', "
                       "'{{\"type\":\"deposited\",\"amount\":{}}}')",
                       sql.empty() ? "" : ",", n, bad ? "\"" + std::string(120, 'x') + "\"" : fmt::format("{}.25", n));
    if (n % 1000 == 999) {
      ASSERT_TRUE(c->Execute("INSERT INTO events (stream, aggregate_id, version, timestamp, event) VALUES " + sql).ok());
      sql.clear();
    }
  }
  ASSERT_TRUE(c->Execute(R"sql(
    CREATE TABLE account_balances (
      account_id VARCHAR(64) NOT NULL PRIMARY KEY, balance DECIMAL(14,2) NOT NULL DEFAULT 0.00,
      deposits INT UNSIGNED NOT NULL DEFAULT 0
    ) DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_general_ci)sql").ok());
  auto was = c->QueryValue("SELECT @@GLOBAL.max_allowed_packet");
  ASSERT_TRUE(was.ok() && *was);
  ASSERT_TRUE(c->Execute("SET GLOBAL max_allowed_packet = 1048576").ok());
  struct Restore {
    Connection& c;
    std::string value;
    ~Restore() { (void)c.Execute("SET GLOBAL max_allowed_packet = " + value); }
  } restore{*c, **was};
  ASSERT_TRUE(c->Execute(fmt::format(
      "INSERT INTO events (stream, aggregate_id, version, timestamp, event) VALUES ('accounts', 'noted', 1, "
      "'2025-05-01 10:00:00', CONCAT('{{\"type\":\"deposited\",\"amount\":1.00,\"note\":\"', REPEAT('n', {}), "
      "'\"}}'))",
      400000)).ok());
  const std::string models = ModelsFile("exact_small_packet", std::string(kBalances) + R"toml(
[[read_model]]
name   = "account_notes"
events = ["deposited"]
key    = [ { column = "account_id", field = "aggregate_id" } ]
values = [ { column = "note", op = "last", path = "note" }, { column = "n", op = "count" } ]
)toml");
  std::vector<std::string> args = Replay(models);
  for (const char* a : {"--flush-every", "100000"}) args.push_back(a);
  Outcome r = RunRewind(args, Env(o));
  EXPECT_EQ(r.code, 3) << r.err;  // rebuilt and swapped in, some events failed
  EXPECT_EQ(r.err.find("gone away"), std::string::npos) << r.err;
  EXPECT_EQ(Count(*c, "SELECT COUNT(*) FROM rewind_failures WHERE stage = 'account_notes' AND reason LIKE "
                      "'%max_allowed_packet%' AND event_id = (SELECT MAX(position) FROM events)"),
            1);
  EXPECT_EQ(Count(*c, "SELECT COUNT(*) FROM account_notes"), 16000);
  EXPECT_EQ(SortedRows(*c, "SELECT account_id, balance, deposits FROM account_balances"),
            SortedRows(*c, "SELECT aggregate_id, SUM(CAST(JSON_VALUE(event, '$.amount') AS DECIMAL(12,2))), COUNT(*) "
                           "FROM events WHERE JSON_VALUE(event, '$.amount') NOT LIKE 'x%' GROUP BY aggregate_id"));
  EXPECT_EQ(Count(*c, "SELECT COUNT(DISTINCT event_id) FROM rewind_failures"), 4001);
}

// Item 11: the application's table has a stored generated column that rounds the balance: the
// server notes 1265 on it for every row, as for the application's own writes. That note is not
// a value rewind wrote: the rebuild swaps in, exact; a declaration that names the generated
// column is refused (the server computes it).
TEST(Exact, GeneratedColumnsAreNeverWrittenAndTheirNotesAreTheServers) {
  ConnectionOptions o = Events("rewind_test_exact_generated", 1500);
  auto c = Connect(o);
  ASSERT_TRUE(c->Execute(R"sql(
    CREATE TABLE account_balances (
      account_id VARCHAR(64) NOT NULL PRIMARY KEY, balance DECIMAL(14,2) NOT NULL DEFAULT 0.00,
      deposits INT UNSIGNED NOT NULL DEFAULT 0, rounded DECIMAL(12,0) AS (balance) STORED,
      label VARCHAR(80) AS (CONCAT(account_id, ':', deposits)) VIRTUAL
    ) DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_general_ci)sql").ok());
  const std::string models = ModelsFile("exact_generated", kBalances);
  Outcome r = RunRewind(Replay(models), Env(o));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(SortedRows(*c, "SELECT account_id, balance, deposits FROM account_balances"), SortedRows(*c, kReference));
  EXPECT_EQ(Count(*c, "SELECT COUNT(*) FROM account_balances WHERE rounded <> ROUND(balance) AND "
                      "rounded <> TRUNCATE(balance, 0)"),
            0);
  EXPECT_EQ(Count(*c, "SELECT COUNT(*) FROM account_balances WHERE label <> CONCAT(account_id, ':', deposits)"), 0);
  const std::string writes_it = ModelsFile("exact_generated_written", std::string(kBalances).replace(
      std::string(kBalances).find("{ column = \"deposits\""), 0,
      "{ column = \"rounded\", op = \"sum\", path = \"amount\", type = \"decimal(12,2)\" },\n  "));
  Outcome w = RunRewind(Replay(writes_it), Env(o));
  EXPECT_EQ(w.code, 1) << w.err;
  EXPECT_NE(w.err.find("the column rounded is generated by the table"), std::string::npos) << w.err;
}

// Item 12: keys the table's collation holds equal. Under utf8mb4_bin (PAD SPACE) 'c-1' and
// 'c-1 ' are one key: the whole build merges them as the application's own upserts would;
// under a _ci key, --segment (which splits keys by their bytes) is refused before any work.
TEST(Exact, KeysTheCollationFoldsAreOneRowAndNeverSplitIntoSegments) {
  ConnectionOptions o = FreshDatabase("rewind_test_exact_collations");
  auto c = Connect(o);
  ASSERT_TRUE(c->Execute("CREATE TABLE events (position BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY, "
                         "stream VARCHAR(255) NOT NULL, aggregate_id VARCHAR(255) NOT NULL, version INT NOT NULL, "
                         "timestamp DATETIME NOT NULL, event TEXT NOT NULL) COLLATE utf8mb4_bin").ok());
  std::string sql;
  for (int n = 0; n < 600; ++n) {
    const std::string id = fmt::format("c-{}{}", n % 50, n % 3 == 0 ? " " : "");  // some with a trailing space
    sql += fmt::format("{}('accounts', '{}', 1, '2025-05-01 10:00:00', '{{\"type\":\"deposited\",\"amount\":{}.50}}')",
                       sql.empty() ? "" : ",", id, n);
  }
  ASSERT_TRUE(c->Execute("INSERT INTO events (stream, aggregate_id, version, timestamp, event) VALUES " + sql).ok());
  ASSERT_TRUE(c->Execute("CREATE TABLE account_balances (account_id VARCHAR(64) COLLATE utf8mb4_bin NOT NULL PRIMARY "
                         "KEY, balance DECIMAL(14,2) NOT NULL DEFAULT 0, deposits INT UNSIGNED NOT NULL DEFAULT 0)").ok());
  const std::string models = ModelsFile("exact_collations", kBalances);
  Outcome r = RunRewind(Replay(models), Env(o));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(Count(*c, "SELECT COUNT(*) FROM account_balances"), 50);
  EXPECT_EQ(SortedRows(*c, "SELECT RTRIM(account_id), balance, deposits FROM account_balances"),
            SortedRows(*c, "SELECT RTRIM(aggregate_id), SUM(CAST(JSON_VALUE(event, '$.amount') AS DECIMAL(12,2))), "
                           "COUNT(*) FROM events GROUP BY RTRIM(aggregate_id)"));
  ASSERT_TRUE(c->Execute("ALTER TABLE account_balances MODIFY account_id VARCHAR(64) COLLATE utf8mb4_general_ci "
                         "NOT NULL").ok());
  const std::vector<std::string> before = SortedRows(*c, "SELECT * FROM account_balances");
  std::vector<std::string> seg = Replay(models);
  for (const char* a : {"--build-only", "--segment", "0/2"}) seg.push_back(a);
  Outcome s = RunRewind(seg, Env(o));
  EXPECT_EQ(s.code, 1) << s.err;
  EXPECT_NE(s.err.find("build it whole (without --segment)"), std::string::npos) << s.err;
  EXPECT_EQ(SortedRows(*c, "SELECT * FROM account_balances"), before);
}

// Item 14: a segment builder beside a whole builder of the same read model is refused, naming
// the first claim (before, it was accepted and the swap then refused both until a rebuild).
TEST(Exact, ASegmentBesideAWholeBuildIsRefusedNamingIt) {
  ConnectionOptions o = Events("rewind_test_exact_segment_whole", 1200);
  auto c = Connect(o);
  const std::string models = ModelsFile("exact_segment_whole", kBalances);
  std::vector<std::string> whole = Replay(models);
  whole.push_back("--build-only");
  Outcome w = RunRewind(whole, Env(o));
  ASSERT_EQ(w.code, 0) << w.err;
  std::vector<std::string> seg = Replay(models);
  for (const char* a : {"--build-only", "--segment", "1/2"}) seg.push_back(a);
  Outcome s = RunRewind(seg, Env(o));
  EXPECT_EQ(s.code, 1) << s.err;
  EXPECT_NE(s.err.find("account_balances is already being built whole in account_balances__rewind_new (built"),
            std::string::npos) << s.err;
  EXPECT_EQ(Count(*c, "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND "
                      "TABLE_NAME LIKE '%\\_\\_rewind\\_seg%'"),
            0);
  std::vector<std::string> swap = Replay(models);
  swap.push_back("--resume");
  Outcome r = RunRewind(swap, Env(o));
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(SortedRows(*c, "SELECT account_id, balance, deposits FROM account_balances"), SortedRows(*c, kReference));
}

// Item 13: one value too large for its column (a 17 MiB text into rewind's MEDIUMTEXT) is that
// event's failure, recorded and named; the run and its other read model go on, exact.
TEST(Exact, OneValueTooLargeIsThatEventsFailure) {
  ConnectionOptions o = Events("rewind_test_exact_too_large", 800);
  auto admin = Connect(o);
  auto was = admin->QueryValue("SELECT @@GLOBAL.max_allowed_packet");
  ASSERT_TRUE(was.ok() && *was);
  ASSERT_TRUE(admin->Execute("SET GLOBAL max_allowed_packet = 67108864").ok());
  struct Restore {
    Connection& c;
    std::string value;
    ~Restore() { (void)c.Execute("SET GLOBAL max_allowed_packet = " + value); }
  } restore{*admin, **was};
  auto c = Connect(o);  // with the larger packet
  ASSERT_TRUE(c->Execute("ALTER TABLE events MODIFY event LONGTEXT NOT NULL").ok());
  ASSERT_TRUE(c->Execute(fmt::format(
      "INSERT INTO events (stream, aggregate_id, version, timestamp, event) VALUES ('accounts', 'acc-3', 1, "
      "'2025-06-01 10:00:00', CONCAT('{{\"type\":\"deposited\",\"amount\":1.00,\"note\":\"', REPEAT('n', {}), "
      "'\"}}'))",
      17 << 20)).ok());
  const std::string models = ModelsFile("exact_too_large", std::string(kBalances) + R"toml(
[[read_model]]
name   = "account_notes"
events = ["deposited"]
key    = [ { column = "account_id", field = "aggregate_id" } ]
values = [ { column = "note", op = "last", path = "note" }, { column = "n", op = "count" } ]
)toml");
  Outcome r = RunRewind(Replay(models), Env(o));
  EXPECT_EQ(r.code, 3) << r.err;  // swapped in, an event failed
  EXPECT_EQ(SortedRows(*c, "SELECT account_id, balance, deposits FROM account_balances"), SortedRows(*c, kReference));
  EXPECT_EQ(Count(*c, "SELECT COUNT(*) FROM rewind_failures WHERE stage = 'account_notes' AND reason LIKE "
                      "'%longer than a text value holds%' AND event_id = (SELECT MAX(position) FROM events)"),
            1);
  EXPECT_EQ(Count(*c, "SELECT SUM(n) FROM account_notes"),
            Count(*c, "SELECT COUNT(*) FROM events WHERE JSON_VALUE(event, '$.type') = 'deposited'") - 1);
}

// The event table restored from another backup: the same ids, other payloads.
void RestoreAnotherBackup(Connection& c) {
  ASSERT_TRUE(c.Execute("CREATE TABLE events_other LIKE events").ok());
  ASSERT_TRUE(c.Execute("INSERT INTO events_other SELECT position, stream, aggregate_id, version, timestamp, "
                        "JSON_SET(event, '$.amount', CAST(JSON_VALUE(event, '$.amount') AS DECIMAL(12,2)) + 1) "
                        "FROM events").ok());
  ASSERT_TRUE(c.Execute("DROP TABLE events").ok());
  ASSERT_TRUE(c.Execute("RENAME TABLE events_other TO events").ok());
}

// Item 7: segments built on different event tables (one segment, then the table restored from
// another backup, then the other) are not merged, and a complete build is not resumed across
// such a restore: each checkpoint records the hash of the event it stands on.
TEST(Exact, BuildsOfAnotherEventTableAreNeverMergedNorResumed) {
  ConnectionOptions o = Events("rewind_test_exact_other_backup", 1500);
  auto c = Connect(o);
  const std::string models = ModelsFile("exact_other_backup", kBalances);
  auto segment = [&](const char* which) {
    std::vector<std::string> a = Replay(models);
    for (const char* s : {"--build-only", "--segment", which}) a.push_back(s);
    return RunRewind(a, Env(o));
  };
  Outcome s0 = segment("0/2");
  ASSERT_EQ(s0.code, 0) << s0.err;
  RestoreAnotherBackup(*c);
  Outcome s1 = segment("1/2");
  ASSERT_EQ(s1.code, 0) << s1.err;
  std::vector<std::string> swap = Replay(models);
  swap.push_back("--resume");
  Outcome merged = RunRewind(swap, Env(o));
  EXPECT_EQ(merged.code, 1) << merged.err;
  EXPECT_NE(merged.err.find("segment 0/2 of account_balances was built on other events"), std::string::npos)
      << merged.err;
  EXPECT_EQ(Count(*c, "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND "
                      "TABLE_NAME = 'account_balances'"),
            0);
  // A whole build, complete, then the table restored: its --resume swap is refused.
  std::vector<std::string> whole = Replay(models);
  whole.push_back("--build-only");
  Outcome w = RunRewind(whole, Env(o));  // starts afresh: the segments go
  ASSERT_EQ(w.code, 0) << w.err;
  RestoreAnotherBackup(*c);
  Outcome resumed = RunRewind(swap, Env(o));
  EXPECT_EQ(resumed.code, 1) << resumed.err;
  EXPECT_NE(resumed.err.find("is not the one it read"), std::string::npos) << resumed.err;
  // Rebuilt from the start: exact against the table as it is now.
  Outcome fresh = RunRewind(Replay(models), Env(o));
  EXPECT_EQ(fresh.code, 0) << fresh.err;
  EXPECT_EQ(SortedRows(*c, "SELECT account_id, balance, deposits FROM account_balances"), SortedRows(*c, kReference));
}

// Item 18: another application's event table. `rewind list` lists what --all rebuilds there
// (not the blog's compiled read models, which it names apart); verify compares keys under the
// table's collation: one key spelled two ways (acc-1, ACC-1) in a case-blind table is one key.
TEST(Exact, ListAndVerifySpeakOfTheApplicationsTablesAsTheyAre) {
  ConnectionOptions o = Events("rewind_test_exact_list_verify", 900);
  auto c = Connect(o);
  CreateApplicationTables(*c);
  ASSERT_TRUE(c->Execute("DELETE FROM account_balances").ok());
  const std::string models = ModelsFile("exact_list_verify", kBalances);
  std::vector<std::string> list = {"list", "--models", models, "--events-table", "events", "--id-column", "position",
                                   "--type-path", "type", "--payload-column", "event"};
  Outcome l = RunRewind(list, Env(o));
  EXPECT_EQ(l.code, 0) << l.err;
  EXPECT_NE(l.out.find("account_balances"), std::string::npos) << l.out;
  EXPECT_EQ(l.out.find("visits_per_day "), std::string::npos) << l.out;
  EXPECT_NE(l.out.find("Not listed: the blog's compiled read models ("), std::string::npos) << l.out;
  EXPECT_NE(l.out.find("sessions_per_day)"), std::string::npos) << l.out;
  Outcome r = RunRewind(Replay(models), Env(o));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("rows written"), std::string::npos) << r.out;
  // The application spells its keys its own way; the table's collation holds them equal.
  ASSERT_TRUE(c->Execute("UPDATE account_balances SET account_id = UPPER(account_id)").ok());
  std::vector<std::string> verify = Replay(models);
  verify[0] = "verify";
  Outcome v = RunRewind(verify, Env(o));
  EXPECT_EQ(v.code, 0) << v.err << v.out;
  EXPECT_NE(v.out.find("identical"), std::string::npos) << v.out;
  EXPECT_EQ(v.out.find("DIFFERS"), std::string::npos) << v.out;
  // A real difference is still one.
  ASSERT_TRUE(c->Execute("UPDATE account_balances SET balance = balance + 1 WHERE account_id = 'ACC-1'").ok());
  Outcome d = RunRewind(verify, Env(o));
  EXPECT_EQ(d.code, 4) << d.err << d.out;
}

// Item 15: --stats-json writes a fresh file and renames it over the name, as --textfile does:
// a link planted at the name is replaced, never followed; a directory every user may write
// (no sticky bit) is refused before any work.
TEST(Exact, StatsJsonNeverWritesThroughALinkPlantedAtItsName) {
  ConnectionOptions o = Events("rewind_test_exact_stats_link", 300);
  auto c = Connect(o);
  const std::string models = ModelsFile("exact_stats_link", kBalances);
  const std::string dir = ::testing::TempDir() + "/rewind_exact_stats";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string victim = dir + "/victim", stats = dir + "/stats.json";
  std::ofstream(victim) << "precious\n";
  std::filesystem::create_symlink(victim, stats);
  for (const std::string command : {"replay", "ingest"}) {
    SCOPED_TRACE(command);
    Outcome r = command == "replay" ? RunRewind([&] { auto a = Replay(models); a.push_back("--stats-json");
                                                     a.push_back(stats); return a; }(), Env(o))
                                    : RunRewind({"ingest", "--quiet", "--dry-run", "--stats-json", stats,
                                                 std::string(REWIND_SOURCE_DIR) + "/tests/data/apache-combined/access.log"}, Env(o));
    EXPECT_EQ(r.code, 0) << r.err;
    EXPECT_EQ(ReadFile(victim), "precious\n");
    EXPECT_FALSE(std::filesystem::is_symlink(stats));
    EXPECT_NE(ReadFile(stats).find(command == "replay" ? "\"events_read\"" : "\"lines_read\""), std::string::npos)
        << ReadFile(stats);
    std::filesystem::remove(stats);
    std::filesystem::create_symlink(victim, stats);
  }
  std::filesystem::permissions(dir, std::filesystem::perms::all);  // 0777, no sticky bit
  ASSERT_TRUE(c->Execute("DROP TABLE account_balances").ok());
  Outcome open = RunRewind([&] { auto a = Replay(models); a.push_back("--stats-json"); a.push_back(stats);
                                 return a; }(), Env(o));
  EXPECT_EQ(open.code, 2) << open.err;
  EXPECT_NE(open.err.find("every user may write the directory"), std::string::npos) << open.err;
  EXPECT_EQ(Count(*c, "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND "
                      "TABLE_NAME = 'account_balances'"),
            0);
  EXPECT_EQ(ReadFile(victim), "precious\n");
  std::filesystem::remove_all(dir);
}

// Item 17: an event table whose ids the clients make (tests/client/ids.js: @schemeless/event-
// store's TypeORM shape, ids from the published `ulid` and `uuid` packages).
void RunIds(const ConnectionOptions& o, const std::vector<std::string>& args) {
  Subprocess p(Client("ids.js", args), ClientEnv(o));
  ASSERT_EQ(p.Wait(), 0) << p.err();
}

const char* kIdsModels = R"toml(
[[read_model]]
name   = "account_balances"
events = ["deposited", "withdrawn", "renamed"]
key    = [ { column = "account_id", field = "identifier" } ]
values = [
  { column = "balance",  op = "sum",      path = "amount", type = "decimal(12,2)", on = ["deposited"] },
  { column = "balance",  op = "subtract", path = "amount", type = "decimal(12,2)", on = ["withdrawn"] },
  { column = "deposits", op = "count",    on = ["deposited"] },
  { column = "holder",   op = "last",     path = "name",   type = "varchar(64)",   on = ["renamed"] },
]
hand_over = "UPDATE bookmarks SET position = ? WHERE bookmark = 'balances'"
)toml";

std::vector<std::string> IdsReplay(const std::string& models) {
  return {"replay", "--all", "--models", models, "--events-table", "event_store_entity", "--id-column", "id",
          "--type-column", "type", "--payload-column", "payload", "--time-column", "created", "--quiet"};
}

// What the events give, by the server: balances and deposits per account, and each account's
// holder from its renamed event with the highest id (ids in the server's own order).
const char* kIdsReference = R"sql(
  SELECT identifier, SUM(CASE type WHEN 'deposited' THEN 1 WHEN 'withdrawn' THEN -1 ELSE 0 END *
                         CAST(JSON_VALUE(payload, '$.amount') AS DECIMAL(12,2))),
         SUM(type = 'deposited'),
         (SELECT JSON_VALUE(r.payload, '$.name') FROM event_store_entity r WHERE r.identifier = e.identifier
          AND r.type = 'renamed' ORDER BY r.id DESC LIMIT 1)
  FROM event_store_entity e GROUP BY identifier)sql";

// ULIDs from three writers whose clocks are 1.5 s apart, and an importer whose transaction
// made its ULIDs first and commits while rewind reads: read by keyset in the ids' order, the
// late commit found in its hole before the swap, every value exact (last values by ULID
// order), and the position handed back as the ULID itself.
TEST(Exact, UlidIdsAreReadInTheirOrderLateCommitsAndSkewedClocksIncluded) {
  ConnectionOptions o = FreshDatabase("rewind_test_exact_ulid");
  auto c = Connect(o);
  RunIds(o, {"create", "ulid"});
  ASSERT_TRUE(c->Execute("CREATE TABLE bookmarks (bookmark VARCHAR(64) NOT NULL PRIMARY KEY, "
                         "position VARCHAR(26) NOT NULL)").ok());
  ASSERT_TRUE(c->Execute("INSERT INTO bookmarks VALUES ('balances', '')").ok());
  ASSERT_TRUE(c->Execute(R"sql(
    CREATE TABLE account_balances (
      account_id VARCHAR(255) NOT NULL PRIMARY KEY, balance DECIMAL(14,2) NOT NULL DEFAULT 0.00,
      deposits INT UNSIGNED NOT NULL DEFAULT 0, holder VARCHAR(64) NULL
    ) DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_general_ci)sql").ok());
  const std::string commit = ::testing::TempDir() + "/rewind_ids_commit";
  std::remove(commit.c_str());
  Subprocess importer(Client("ids.js", {"hold", "ulid", "5", commit}), ClientEnv(o));
  ASSERT_TRUE(importer.WaitFor("open", 60)) << importer.err();
  RunIds(o, {"append", "ulid", "3000", "3", "17", "1500"});
  const std::string pause = PauseFile("exact_ulid");
  std::vector<std::string> env = Env(o);
  env.push_back("REWIND_FAULT=before-catch-up@" + pause);
  Subprocess run(Rewind(IdsReplay(ModelsFile("exact_ulid", kIdsModels))), env);
  ASSERT_TRUE(run.WaitFor("fault point", 120)) << run.err();
  Release(commit);  // the importer's five events commit now, below ids already read
  ASSERT_EQ(importer.Wait(), 0) << importer.err();
  Release(pause);
  EXPECT_EQ(run.Wait(), 0) << run.err();
  EXPECT_EQ(Count(*c, "SELECT COUNT(*) FROM event_store_entity"), 3005);
  EXPECT_EQ(SortedRows(*c, "SELECT account_id, balance, deposits, holder FROM account_balances"),
            SortedRows(*c, kIdsReference));
  EXPECT_EQ(SortedRows(*c, "SELECT position FROM bookmarks"), SortedRows(*c, "SELECT MAX(id) FROM event_store_entity"));
  // A resume of a build stopped half-way continues after the ULID it stopped at.
  RunIds(o, {"append", "ulid", "600", "2", "18", "0"});
  std::vector<std::string> env_kill = Env(o);
  env_kill.push_back("REWIND_FAULT=mid-flush:2");
  std::vector<std::string> small = IdsReplay(ModelsFile("exact_ulid", kIdsModels));
  for (const char* a : {"--batch-size", "500", "--flush-every", "500"}) small.push_back(a);
  {
    Subprocess killed(Rewind(small), env_kill);
    ASSERT_TRUE(killed.WaitFor("fault point", 120)) << killed.err();
    killed.Signal(SIGKILL);
    EXPECT_EQ(killed.Wait(), 128 + SIGKILL);
  }
  small.push_back("--resume");
  Outcome resumed = RunRewind(small, Env(o));
  EXPECT_EQ(resumed.code, 0) << resumed.err;
  EXPECT_EQ(SortedRows(*c, "SELECT account_id, balance, deposits, holder FROM account_balances"),
            SortedRows(*c, kIdsReference));
  // An event whose payload is no JSON fails, and is recorded under the ULID it has.
  ASSERT_TRUE(c->Execute("INSERT INTO event_store_entity (id, domain, type, payload, identifier, created) VALUES "
                         "('7FFFFFFFFFFFFFFFFFFFFFFFFF', 'bank', 'deposited', '{\"amount\": oops', 'acc-bad', NOW(6))")
                  .ok());
  Outcome failed = RunRewind(IdsReplay(ModelsFile("exact_ulid", kIdsModels)), Env(o));
  EXPECT_EQ(failed.code, 1) << failed.err;  // beyond what a ULID holds (its highest bit): named, not read
  EXPECT_NE(failed.err.find("the id '7FFFFFFFFFFFFFFFFFFFFFFFFF' of 'event_store_entity' is a ULID of a time after "
                            "the year 6400"), std::string::npos) << failed.err;
  ASSERT_TRUE(c->Execute("UPDATE event_store_entity SET id = '3ZZZZZZZZZZZZZZZZZZZZZZZZZ' WHERE identifier = 'acc-bad'")
                  .ok());
  failed = RunRewind(IdsReplay(ModelsFile("exact_ulid", kIdsModels)), Env(o));
  EXPECT_EQ(failed.code, 3) << failed.err;
  EXPECT_EQ(SortedRows(*c, "SELECT event_key FROM rewind_failures"), std::vector<std::string>{"3ZZZZZZZZZZZZZZZZZZZZZZZZZ"});
}

// Item 17, clocks that disagree by minutes: while rewind rebuilds, a second application
// server whose clock runs ten minutes behind writes ULIDs far below the ids already read.
// Further below than --settle, no watch can find them: the count under the cut-over's hold
// does, and nothing is swapped in; with a --settle that covers the clocks, they are read
// again under the lock and the result is exact.
TEST(Exact, ULIDsFromAClockMinutesBehindAreFoundOrTheSwapRefused) {
  ConnectionOptions o = FreshDatabase("rewind_test_exact_ulid_skew");
  auto c = Connect(o);
  RunIds(o, {"create", "ulid"});
  ASSERT_TRUE(c->Execute("CREATE TABLE bookmarks (bookmark VARCHAR(64) NOT NULL PRIMARY KEY, "
                         "position VARCHAR(26) NOT NULL)").ok());
  ASSERT_TRUE(c->Execute("INSERT INTO bookmarks VALUES ('balances', '')").ok());
  RunIds(o, {"append", "ulid", "2000", "2", "23", "0"});
  const std::string models = ModelsFile("exact_ulid_skew", kIdsModels);
  for (const std::string settle : {"60", "900"}) {
    SCOPED_TRACE("--settle " + settle);
    const std::string pause = PauseFile("exact_ulid_skew");
    std::vector<std::string> env = Env(o);
    env.push_back("REWIND_FAULT=before-catch-up@" + pause);
    std::vector<std::string> args = IdsReplay(models);
    for (const std::string& a : {std::string("--settle"), settle}) args.push_back(a);
    Subprocess run(Rewind(args), env);
    ASSERT_TRUE(run.WaitFor("fault point", 120)) << run.err();
    // Two application servers write: one on time, one ten minutes behind.
    RunIds(o, {"append", "ulid", "40", "2", settle == "60" ? "24" : "25", "600000"});
    Release(pause);
    if (settle == "60") {
      EXPECT_EQ(run.Wait(), 1) << run.err();
      EXPECT_NE(run.err().find("20 event(s) of event_store_entity up to"), std::string::npos) << run.err();
      EXPECT_NE(run.err().find("nothing was swapped in"), std::string::npos) << run.err();
      EXPECT_EQ(Count(*c, "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND "
                          "TABLE_NAME = 'account_balances'"), 0);  // nothing swapped in
    } else {
      EXPECT_EQ(run.Wait(), 0) << run.err();
      EXPECT_EQ(SortedRows(*c, "SELECT account_id, balance, deposits, holder FROM account_balances"),
                SortedRows(*c, kIdsReference));
    }
  }
}

// An empty table is judged by its id column's declared length, in characters whatever the
// character set: a latin1 CHAR(26) is a ULID column as a utf8mb4 one is.
TEST(Exact, AnEmptyUlidTableIsKnownByItsLengthInAnyCharacterSet) {
  ConnectionOptions o = FreshDatabase("rewind_test_exact_ulid_empty");
  auto c = Connect(o);
  ASSERT_TRUE(c->Execute("CREATE TABLE event_store_entity (id CHAR(26) CHARACTER SET latin1 NOT NULL PRIMARY KEY, "
                         "type VARCHAR(255) NOT NULL, payload TEXT NOT NULL, identifier VARCHAR(255) NOT NULL, "
                         "created TIMESTAMP(6) NOT NULL)").ok());
  ASSERT_TRUE(c->Execute("CREATE TABLE bookmarks (bookmark VARCHAR(64) NOT NULL PRIMARY KEY, "
                         "position VARCHAR(26) NOT NULL)").ok());
  std::vector<std::string> args = IdsReplay(ModelsFile("exact_ulid_empty", kIdsModels));
  args.push_back("--allow-empty");
  Outcome r = RunRewind(args, Env(o));
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(Count(*c, "SELECT COUNT(*) FROM account_balances"), 0);
}

// UUIDv7 as text (CHAR(36)) and as 16 bytes (BINARY(16)): read in the server's order, exact;
// the version-1 UUIDs MariaDB's UUID() makes are refused (their text does not sort by time),
// naming the way out.
TEST(Exact, UuidV7IdsAsTextOrBytesAreReadAndOtherUuidsRefused) {
  for (const std::string form : {"uuid", "uuidbin"}) {
    SCOPED_TRACE(form);
    ConnectionOptions o = FreshDatabase("rewind_test_exact_" + form);
    auto c = Connect(o);
    RunIds(o, {"create", form});
    ASSERT_TRUE(c->Execute("CREATE TABLE bookmarks (bookmark VARCHAR(64) NOT NULL PRIMARY KEY, "
                           "position VARBINARY(36) NOT NULL)").ok());
    ASSERT_TRUE(c->Execute("INSERT INTO bookmarks VALUES ('balances', '')").ok());
    RunIds(o, {"append", form, "2500", "3", "19", "800"});
    Outcome r = RunRewind(IdsReplay(ModelsFile("exact_" + form, kIdsModels)), Env(o));
    EXPECT_EQ(r.code, 0) << r.err;
    EXPECT_EQ(SortedRows(*c, "SELECT account_id, balance, deposits, holder FROM account_balances"),
              SortedRows(*c, kIdsReference));
    EXPECT_EQ(SortedRows(*c, "SELECT position FROM bookmarks"),
              SortedRows(*c, "SELECT MAX(id) FROM event_store_entity"));
    // One event with a version-1 UUID among them: refused before any work.
    ASSERT_TRUE(c->Execute(fmt::format("INSERT INTO event_store_entity (id, domain, type, payload, identifier, created) "
                                       "VALUES ({}, 'bank', 'deposited', '{{\"amount\":1}}', 'acc-1', NOW(6))",
                                       form == "uuid" ? "'ffffffff-0000-11ef-8000-000000000000'"
                                                      : "UNHEX('7fffffff000011ef8000000000000000')")).ok());
    Outcome refused = RunRewind(IdsReplay(ModelsFile("exact_" + form, kIdsModels)), Env(o));
    EXPECT_EQ(refused.code, 1) << refused.err;
    EXPECT_NE(refused.err.find("UUIDs of version 1"), std::string::npos) << refused.err;
    EXPECT_NE(refused.err.find("AUTO_INCREMENT column of its own"), std::string::npos) << refused.err;
  }
}

TEST(ExactUnit, TheTablesAHandOverNamesSkipStringsAndComments) {
  EXPECT_EQ(hand_over::NamedIdentifiers("UPDATE `app`.`book``marks` SET p = ? WHERE b = 'events' -- events\n"
                                        "AND c = \"x\\\"events\" /* events */ # events"),
            (std::vector<std::string>{"UPDATE", "app", "book`marks", "SET", "p", "WHERE", "b", "AND", "c"}));
}

}  // namespace
}  // namespace rw
