// The application's own read-model tables (issue 38): a declared read model whose table the
// application made (its key, types, defaults, collation, indexes and comments) is rebuilt in
// that shape and swapped in with SHOW CREATE TABLE unchanged, so the application's own
// queries and upserts go on working; a table the rows do not fit is refused before any work
// with a column-by-column account, and replaced only when --reshape says so, the
// application's table kept aside. The events are an evtstore-like table (its Knex migration's
// columns) with holes and two streams sharing a type name; every row is checked against a
// GROUP BY of the server over the event table.
#include <gtest/gtest.h>

#include <fmt/core.h>

#include <fstream>
#include <random>
#include <regex>

#include "rewind_process.h"
#include "subprocess.h"
#include "test_db.h"

namespace rw {
namespace {

using namespace rw::testing;

// The table's SHOW CREATE TABLE, its name and AUTO_INCREMENT counter left out.
std::string ShapeOf(Connection& c, const std::string& table) {
  auto r = c.Query("SHOW CREATE TABLE " + QuoteIdentifier(table));
  EXPECT_TRUE(r.ok()) << table << ": " << r.status().message();
  if (!r.ok() || r->rows.empty()) return {};
  const std::string text = r->rows[0][1].value_or("");
  return std::regex_replace(text.substr(text.find('(')), std::regex(" AUTO_INCREMENT=[0-9]+"), "");
}

// An evtstore-shaped event table: positions with holes (one in four burned), two streams
// that share the type name "closed", amounts with cents, aggregate ids in two spellings of
// one case-blind key ("Acc-3" and "acc-3") for some accounts.
ConnectionOptions EvtstoreEvents(const std::string& database) {
  ConnectionOptions o = FreshDatabase(database);
  auto c = Connect(o);
  EXPECT_TRUE(c->Execute(R"sql(
    CREATE TABLE events (
      position BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
      stream VARCHAR(255) NOT NULL, aggregate_id VARCHAR(255) NOT NULL, version INT NOT NULL,
      timestamp DATETIME NOT NULL, event TEXT NOT NULL,
      KEY (stream, aggregate_id, version)
    ) DEFAULT CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci)sql").ok());
  std::mt19937 rng(3801);
  std::string sql;
  uint64_t position = 0;
  for (int n = 0; n < 4000; ++n) {
    position += std::uniform_int_distribution<int>(0, 3)(rng) == 0 ? 2 : 1;
    const int account = std::uniform_int_distribution<int>(0, 60)(rng);
    const std::string stream = n % 9 == 0 ? "customers" : "accounts";
    const char* types[] = {"opened", "deposited", "deposited", "withdrawn", "closed"};
    const std::string type = types[std::uniform_int_distribution<int>(0, 4)(rng)];
    const std::string id = fmt::format("{}-{}", account % 10 == 3 && n % 2 ? "Acc" : "acc", account);
    const int cents = std::uniform_int_distribution<int>(1, 99999)(rng);
    sql += fmt::format("{}({}, {}, {}, {}, '2025-05-01 10:00:00', {})", sql.empty() ? "" : ", ", position,
                       c->Quote(stream), c->Quote(id), n,
                       c->Quote(fmt::format(R"({{"type":"{}","amount":{}.{:02d}}})", type, cents / 100, cents % 100)));
    if (n % 500 == 499) {
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
  { column = "balance",     op = "sum",      path = "amount", type = "decimal(12,2)", on = ["deposited"] },
  { column = "balance",     op = "subtract", path = "amount", type = "decimal(12,2)", on = ["withdrawn"] },
  { column = "deposits",    op = "count",    on = ["deposited"] },
  { column = "last_amount", op = "last",     path = "amount", type = "decimal(12,2)" },
]
)toml";

std::vector<std::string> Replay(const std::string& models) {
  return {"replay", "--all", "--models", models, "--events-table", "events", "--id-column", "position",
          "--type-path", "type", "--payload-column", "event", "--time-column", "timestamp", "--quiet"};
}

std::string ModelsFile(const std::string& name) {
  const std::string path = ::testing::TempDir() + "/" + name + ".toml";
  std::ofstream(path) << kBalances;
  return path;
}

// The balances the events give, by the server: per account (case-blind, as the application's
// table keys it), the sum and the number of deposits of the stream "accounts".
const char* kReference = R"sql(
  SELECT LOWER(aggregate_id),
         SUM(IF(JSON_VALUE(event, '$.type') = 'deposited', 1, -1) * CAST(JSON_VALUE(event, '$.amount') AS DECIMAL(12,2))),
         SUM(JSON_VALUE(event, '$.type') = 'deposited')
  FROM events WHERE BINARY stream = 'accounts' AND JSON_VALUE(event, '$.type') IN ('deposited', 'withdrawn')
  GROUP BY LOWER(aggregate_id))sql";

// The amount of each account's event of the highest position, for the accounts spelled one way
// (where two spellings are one row, which of them wrote last is the upserts' order).
const char* kLastReference = R"sql(
  SELECT e.aggregate_id, CAST(JSON_VALUE(e.event, '$.amount') AS DECIMAL(14,2)) FROM events e
  JOIN (SELECT MAX(position) AS p FROM events WHERE BINARY stream = 'accounts' AND
        JSON_VALUE(event, '$.type') IN ('deposited', 'withdrawn') GROUP BY aggregate_id
        HAVING COUNT(DISTINCT BINARY aggregate_id) = 1) m ON e.position = m.p)sql";

TEST(ApplicationTables, TheApplicationsTableKeepsItsShapeAndItsOwnWritesGoOn) {
  ConnectionOptions o = EvtstoreEvents("rewind_test_app_shape");
  auto c = Connect(o);
  ASSERT_TRUE(c->Execute(R"sql(
    CREATE TABLE account_balances (
      account_id VARCHAR(64) NOT NULL COMMENT 'the aggregate',
      balance DECIMAL(14,2) NOT NULL DEFAULT 0.00,
      deposits INT UNSIGNED NOT NULL DEFAULT 0,
      last_amount DECIMAL(14,2) NULL,
      note VARCHAR(40) NOT NULL DEFAULT 'n/a',
      updated_at DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
      PRIMARY KEY (account_id),
      KEY by_balance (balance)
    ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_general_ci COMMENT='the application''s balances')sql").ok());
  ASSERT_TRUE(c->Execute("INSERT INTO account_balances (account_id, balance) VALUES ('stale', 99)").ok());
  const std::string before = ShapeOf(*c, "account_balances");
  const std::string models = ModelsFile("rewind_app_shape");

  std::vector<std::string> dry = Replay(models);
  dry.push_back("--dry-run");
  Outcome d = RunRewind(dry, Env(o));
  EXPECT_EQ(d.code, 0) << d.out << d.err;
  EXPECT_NE(d.out.find("then replaces account_balances with a copy of its shape"), std::string::npos) << d.out;
  EXPECT_NE(d.out.find("note"), std::string::npos) << d.out;  // the account names the columns it leaves
  EXPECT_NE(d.out.find("a real run could start"), std::string::npos) << d.out;

  for (int run = 0; run < 2; ++run) {  // and again: still the application's shape
    Outcome r = RunRewind(Replay(models), Env(o));
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_NE(r.err.find("account_balances is the application's table"), std::string::npos) << r.err;
    EXPECT_EQ(ShapeOf(*c, "account_balances"), before) << "run " << run;
    EXPECT_EQ(SortedRows(*c, "SELECT LOWER(account_id), balance, deposits FROM account_balances"),
              SortedRows(*c, kReference));
    EXPECT_EQ(SortedRows(*c, fmt::format("SELECT b.account_id, b.last_amount FROM account_balances b JOIN ({}) r "
                                         "ON BINARY r.aggregate_id = BINARY b.account_id", kLastReference)),
              SortedRows(*c, kLastReference));
    EXPECT_GE(Count(*c, "SELECT COUNT(*) FROM account_balances"), 50);
    EXPECT_EQ(Count(*c, "SELECT COUNT(*) FROM account_balances WHERE account_id = 'stale' OR note <> 'n/a'"), 0);
    EXPECT_EQ(Count(*c, "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND "
                        "TABLE_NAME LIKE 'account\\_balances\\_\\_%'"),
              0);
  }
  // The application's own statements: its upsert on its key, a lookup by the primary key.
  ASSERT_TRUE(c->Execute("INSERT INTO account_balances (account_id, balance, deposits) VALUES ('acc-1', 10, 1) "
                         "ON DUPLICATE KEY UPDATE balance = balance + VALUES(balance), deposits = deposits + 1").ok());
  ASSERT_TRUE(c->Execute("INSERT INTO account_balances (account_id) VALUES ('acc-new')").ok());
  auto plan = c->Query("EXPLAIN SELECT balance FROM account_balances WHERE account_id = 'acc-1'");
  ASSERT_TRUE(plan.ok());
  bool by_primary = false;
  for (size_t i = 0; i < plan->columns.size(); ++i) by_primary |= plan->columns[i] == "key" && plan->rows[0][i] == "PRIMARY";
  EXPECT_TRUE(by_primary);
}

TEST(ApplicationTables, ATableTheRowsDoNotFitIsRefusedColumnByColumnAndReshapedOnlyWhenAsked) {
  ConnectionOptions o = EvtstoreEvents("rewind_test_app_misfit");
  auto c = Connect(o);
  ASSERT_TRUE(c->Execute(R"sql(
    CREATE TABLE account_balances (
      id INT NOT NULL AUTO_INCREMENT PRIMARY KEY,
      account_id VARCHAR(64) NOT NULL,
      balance INT NOT NULL,
      owner VARCHAR(40) NOT NULL,
      last_amount DATE NULL
    ) DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci)sql").ok());
  ASSERT_TRUE(c->Execute("INSERT INTO account_balances (account_id, balance, owner) VALUES ('acc-1', 5, 'ann'), "
                         "('acc-2', 7, 'bob')").ok());
  const std::string before = ShapeOf(*c, "account_balances");
  const std::string models = ModelsFile("rewind_app_misfit");

  Outcome r = RunRewind(Replay(models), Env(o));
  EXPECT_NE(r.code, 0);
  for (const char* says : {"do not fit the application's table account_balances", "Nothing was done",
                           "the column owner (varchar(40) NOT NULL, no default) is not written",
                           "key (account_id) is not a unique key of the table (its unique keys: PRIMARY (id))",
                           "the column balance: int(11) cannot hold the read model's decimal(12,2) values",
                           "the column last_amount: date cannot hold", "the column deposits is not in the table",
                           "--reshape"}) {
    EXPECT_NE(r.err.find(says), std::string::npos) << says << "\n" << r.err;
  }
  EXPECT_EQ(ShapeOf(*c, "account_balances"), before);
  EXPECT_EQ(SortedRows(*c, "SELECT account_id, balance, owner FROM account_balances"),
            (std::vector<std::string>{"acc-1|5|ann", "acc-2|7|bob"}));
  EXPECT_EQ(Count(*c, "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND "
                      "TABLE_NAME LIKE 'account\\_balances\\_\\_%'"),
            0);

  std::vector<std::string> dry = Replay(models);
  dry.push_back("--dry-run");
  Outcome d = RunRewind(dry, Env(o));
  EXPECT_NE(d.code, 0);
  EXPECT_NE(d.out.find("refused: the rows do not fit the application's table account_balances"), std::string::npos)
      << d.out;
  EXPECT_NE(d.out.find("NOT NULL without a default"), std::string::npos) << d.out;
  EXPECT_NE(d.out.find("a real run could NOT start"), std::string::npos) << d.out;

  std::vector<std::string> reshape = Replay(models);
  reshape.push_back("--reshape");
  Outcome s = RunRewind(reshape, Env(o));
  ASSERT_EQ(s.code, 0) << s.err;
  EXPECT_NE(ShapeOf(*c, "account_balances"), before);
  EXPECT_EQ(ShapeOf(*c, "account_balances__rewind_kept"), before);
  EXPECT_EQ(Count(*c, "SELECT COUNT(*) FROM account_balances__rewind_kept"), 2);
  // rewind's shape keys text byte for byte: two spellings are two rows.
  EXPECT_EQ(SortedRows(*c, "SELECT LOWER(account_id), SUM(balance), SUM(deposits) FROM account_balances GROUP BY 1"),
            SortedRows(*c, kReference));
  // Now rewind's table: rebuilt in its shape without --reshape, the kept table left alone.
  Outcome again = RunRewind(Replay(models), Env(o));
  ASSERT_EQ(again.code, 0) << again.err;
  EXPECT_EQ(again.err.find("the application's table"), std::string::npos) << again.err;
  EXPECT_EQ(Count(*c, "SELECT COUNT(*) FROM account_balances__rewind_kept"), 2);
  EXPECT_EQ(SortedRows(*c, "SELECT LOWER(account_id), SUM(balance), SUM(deposits) FROM account_balances GROUP BY 1"),
            SortedRows(*c, kReference));
}

// The application's own projector, as an event-sourcing library runs one: the events after
// its bookmark in position order, each applied to its table by an upsert on its key, the
// bookmark moved in the same transaction. At most `limit` events (-1: all).
void RunApplicationProjector(Connection& c, int limit = -1) {
  for (int done = 0; limit < 0 || done < limit; ++done) {
    ASSERT_TRUE(c.Execute("START TRANSACTION").ok());
    auto next = c.Query(
        "SELECT e.position, e.aggregate_id, BINARY e.stream = 'accounts', JSON_VALUE(e.event, '$.type'), "
        "JSON_VALUE(e.event, '$.amount') FROM events e JOIN bookmarks b ON b.bookmark = 'balances' "
        "WHERE e.position > b.position ORDER BY e.position LIMIT 1 FOR UPDATE");
    ASSERT_TRUE(next.ok()) << next.status().message();
    if (next->rows.empty()) {
      ASSERT_TRUE(c.Execute("COMMIT").ok());
      return;
    }
    const auto& e = next->rows[0];
    const std::string type = e[3].value_or("");
    if (e[2] == "1" && (type == "deposited" || type == "withdrawn")) {
      const std::string amount = (type == "withdrawn" ? "-" : "") + e[4].value_or("0");
      ASSERT_TRUE(c.Execute(fmt::format(
          "INSERT INTO account_balances (account_id, balance, deposits, last_amount) VALUES ({0}, {1}, {2}, {3}) "
          "ON DUPLICATE KEY UPDATE balance = balance + VALUES(balance), deposits = deposits + VALUES(deposits), "
          "last_amount = VALUES(last_amount)",
          c.Quote(*e[1]), amount, type == "deposited" ? 1 : 0, e[4].value_or("0"))).ok());
    }
    ASSERT_TRUE(c.Execute(fmt::format("UPDATE bookmarks SET position = {} WHERE bookmark = 'balances'", *e[0])).ok());
    ASSERT_TRUE(c.Execute("COMMIT").ok());
  }
}

void CreateApplicationTables(Connection& c) {
  ASSERT_TRUE(c.Execute(R"sql(
    CREATE TABLE account_balances (
      account_id VARCHAR(64) NOT NULL, balance DECIMAL(14,2) NOT NULL DEFAULT 0.00,
      deposits INT UNSIGNED NOT NULL DEFAULT 0, last_amount DECIMAL(14,2) NULL, PRIMARY KEY (account_id)
    ) DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_general_ci)sql").ok());
  ASSERT_TRUE(c.Execute("CREATE TABLE bookmarks (bookmark VARCHAR(255) NOT NULL PRIMARY KEY, "
                        "position BIGINT UNSIGNED NOT NULL)").ok());
  ASSERT_TRUE(c.Execute("INSERT INTO bookmarks VALUES ('balances', 0)").ok());
}

std::string HandOverModels(const std::string& name) {
  const std::string path = ::testing::TempDir() + "/" + name + ".toml";
  std::ofstream(path) << kBalances << "hand_over = \"UPDATE bookmarks SET position = ? WHERE bookmark = 'balances'\"\n";
  return path;
}

// Appends `n` events after the last one, as the application goes on writing.
void Append(Connection& c, int n) {
  for (int i = 0; i < n; ++i) {
    ASSERT_TRUE(c.Execute(fmt::format(
        "INSERT INTO events (stream, aggregate_id, version, timestamp, event) VALUES ('accounts', 'acc-{}', {}, "
        "'2025-06-01 10:00:00', '{{\"type\":\"{}\",\"amount\":{}.25}}')",
        i % 7, 10000 + i, i % 3 ? "deposited" : "withdrawn", i)).ok());
  }
}

TEST(ApplicationTables, ThePositionIsHandedBackAndTheApplicationsProjectorGoesOnExactly) {
  ConnectionOptions o = EvtstoreEvents("rewind_test_app_hand_over");
  auto c = Connect(o);
  CreateApplicationTables(*c);
  RunApplicationProjector(*c, 1500);  // part way, then paused for the rebuild
  const std::string models = HandOverModels("rewind_app_hand_over");

  std::vector<std::string> dry = Replay(models);
  dry.push_back("--dry-run");
  Outcome d = RunRewind(dry, Env(o));
  EXPECT_EQ(d.code, 0) << d.out << d.err;
  EXPECT_NE(d.out.find("hand-over: at the swap, account_balances runs UPDATE bookmarks SET position = ?"),
            std::string::npos) << d.out;

  Outcome r = RunRewind(Replay(models), Env(o));
  ASSERT_EQ(r.code, 0) << r.err;
  const int64_t head = Count(*c, "SELECT MAX(position) FROM events");
  EXPECT_NE(r.err.find(fmt::format("account_balances handed back at event {}", head)), std::string::npos) << r.err;
  EXPECT_EQ(Count(*c, "SELECT position FROM bookmarks WHERE bookmark = 'balances'"), head);
  EXPECT_EQ(SortedRows(*c, "SELECT LOWER(account_id), balance, deposits FROM account_balances"),
            SortedRows(*c, kReference));
  // The application appends on; its projector continues from the position handed back.
  Append(*c, 300);
  RunApplicationProjector(*c);
  EXPECT_EQ(Count(*c, "SELECT position FROM bookmarks WHERE bookmark = 'balances'"),
            Count(*c, "SELECT MAX(position) FROM events"));
  EXPECT_EQ(SortedRows(*c, "SELECT LOWER(account_id), balance, deposits FROM account_balances"),
            SortedRows(*c, kReference));
}

TEST(ApplicationTables, AHandOverIsRefusedWhileTheApplicationsProjectorWritesAndWithFollow) {
  ConnectionOptions o = EvtstoreEvents("rewind_test_app_hand_over_busy");
  auto c = Connect(o);
  CreateApplicationTables(*c);
  RunApplicationProjector(*c, 100);
  const std::string models = HandOverModels("rewind_app_hand_over_busy");
  // The application's projector was not paused: it writes while rewind rebuilds.
  const std::string pause = PauseFile("hand_over_busy");
  std::vector<std::string> env = Env(o);
  env.push_back("REWIND_FAULT=before-catch-up@" + pause);
  Subprocess running(Rewind(Replay(models)), env);
  ASSERT_TRUE(running.WaitFor("fault point", 60)) << running.err();
  RunApplicationProjector(*c, 50);
  const std::vector<std::string> written = SortedRows(*c, "SELECT * FROM account_balances");
  Release(pause);
  EXPECT_NE(running.Wait(), 0);
  EXPECT_NE(running.err().find("the live table account_balances changed during the rebuild"), std::string::npos)
      << running.err();
  EXPECT_EQ(Count(*c, "SELECT position FROM bookmarks WHERE bookmark = 'balances'"),
            Count(*c, "SELECT MAX(position) FROM (SELECT position FROM events ORDER BY position LIMIT 150) f"));
  EXPECT_EQ(SortedRows(*c, "SELECT * FROM account_balances"), written);
  // With --follow rewind would go on applying what the application's projector applies.
  std::vector<std::string> follow = Replay(models);
  follow.push_back("--follow");
  Outcome f = RunRewind(follow, Env(o));
  EXPECT_NE(f.code, 0);
  EXPECT_NE(f.err.find("run without --follow"), std::string::npos) << f.err;
  // A statement the server cannot prepare is refused before any work.
  const std::string bad = ::testing::TempDir() + "/rewind_app_hand_over_bad.toml";
  std::ofstream(bad) << kBalances << "hand_over = \"UPDATE no_such_bookmarks SET position = ?\"\n";
  Outcome b = RunRewind(Replay(bad), Env(o));
  EXPECT_NE(b.code, 0);
  EXPECT_NE(b.err.find("does not prepare on the server"), std::string::npos) << b.err;
  EXPECT_NE(b.err.find("no_such_bookmarks"), std::string::npos) << b.err;
  EXPECT_EQ(SortedRows(*c, "SELECT * FROM account_balances"), written);
}

// The application's values: a status from two event types (constants, the later event wins),
// and a field's texts mapped to the ones the application stores.
TEST(ApplicationTables, AColumnTakesTheLastOfSeveralEventTypesAndAMapOfAFieldsTexts) {
  ConnectionOptions o = EvtstoreEvents("rewind_test_app_values");
  auto c = Connect(o);
  const std::string models = ::testing::TempDir() + "/rewind_app_values.toml";
  std::ofstream(models) << R"toml(
[[read_model]]
name   = "account_status"
events = ["opened", "closed", "deposited", "withdrawn"]
where  = { stream = "accounts" }
key    = [ { column = "account_id", field = "aggregate_id" } ]
values = [
  { column = "status",    op = "last", value = "open",   on = ["opened"] },
  { column = "status",    op = "last", value = "closed", on = ["closed"] },
  { column = "first_move", op = "first", path = "type", map = { deposited = "in", withdrawn = "out" }, on = ["deposited", "withdrawn"] },
]
)toml";
  Outcome r = RunRewind(Replay(models), Env(o));
  ASSERT_EQ(r.code, 0) << r.err;
  // By the server: per account (byte for byte), the status of its opened or closed event of
  // the highest position, and the mapped type of its first move.
  const std::string extreme = R"sql(
    (SELECT e.aggregate_id AS a, {0} AS v FROM events e JOIN
      (SELECT BINARY aggregate_id AS a, {1}(position) AS p FROM events WHERE BINARY stream = 'accounts' AND
       JSON_VALUE(event, '$.type') IN ({2}) GROUP BY 1) m ON m.p = e.position))sql";
  const std::string status = fmt::format(fmt::runtime(extreme), "IF(JSON_VALUE(e.event, '$.type') = 'opened', 'open', 'closed')", "MAX",
                                         "'opened', 'closed'");
  const std::string move = fmt::format(fmt::runtime(extreme), "IF(JSON_VALUE(e.event, '$.type') = 'deposited', 'in', 'out')", "MIN",
                                       "'deposited', 'withdrawn'");
  EXPECT_EQ(SortedRows(*c, "SELECT account_id, COALESCE(status, '-'), COALESCE(first_move, '-') FROM account_status"),
            SortedRows(*c, fmt::format("SELECT k.a, COALESCE(s.v, '-'), COALESCE(m.v, '-') FROM (SELECT DISTINCT BINARY "
                                       "aggregate_id AS a FROM events WHERE BINARY stream = 'accounts') k LEFT JOIN {} s "
                                       "ON BINARY s.a = k.a LEFT JOIN {} m ON BINARY m.a = k.a",
                                       status, move)));
  EXPECT_GE(Count(*c, "SELECT COUNT(*) FROM account_status WHERE status = 'closed'"), 10);
  EXPECT_GE(Count(*c, "SELECT COUNT(*) FROM account_status WHERE first_move = 'out'"), 5);
}

// A column of the application's table NOT NULL with a default, which only some events write:
// a row whose events of a flush do not write it takes the table's default when new (as the
// application's own insert does) and keeps its value when not, in the first flush (a bulk
// load) as in later ones (upserts, one flush every 500 events here).
TEST(ApplicationTables, AColumnOnlySomeEventsWriteKeepsTheTablesDefaultAndItsValue) {
  ConnectionOptions o = EvtstoreEvents("rewind_test_app_defaults");
  auto c = Connect(o);
  ASSERT_TRUE(c->Execute(R"sql(
    CREATE TABLE account_states (
      account_id VARCHAR(64) NOT NULL PRIMARY KEY,
      balance DECIMAL(14,2) NOT NULL DEFAULT 0.00,
      status VARCHAR(16) NOT NULL DEFAULT 'none'
    ) DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_general_ci)sql").ok());
  // Accounts that only take deposits, at the end of the table (after a hole).
  for (int n = 0; n < 6; ++n) {
    ASSERT_TRUE(c->Execute(fmt::format("INSERT INTO events (position, stream, aggregate_id, version, timestamp, event) "
                                       "SELECT MAX(position) + 3, 'accounts', 'quiet-{}', 0, '2025-05-02 10:00:00', "
                                       "'{{\"type\":\"deposited\",\"amount\":{}.25}}' FROM events", n % 3, n + 1))
                    .ok());
  }
  const std::string models = ::testing::TempDir() + "/rewind_app_defaults.toml";
  std::ofstream(models) << R"toml(
[[read_model]]
name   = "account_states"
events = ["deposited", "withdrawn", "closed"]
where  = { stream = "accounts" }
key    = [ { column = "account_id", field = "aggregate_id" } ]
values = [
  { column = "balance", op = "sum",      path = "amount", type = "decimal(12,2)", on = ["deposited"] },
  { column = "balance", op = "subtract", path = "amount", type = "decimal(12,2)", on = ["withdrawn"] },
  { column = "status",  op = "last",     value = "closed", on = ["closed"] },
]
)toml";
  for (const char* every : {"2000000", "500"}) {
    std::vector<std::string> args = Replay(models);
    args.insert(args.end(), {"--flush-every", every});
    Outcome r = RunRewind(args, Env(o));
    ASSERT_EQ(r.code, 0) << "--flush-every " << every << ": " << r.err;
    EXPECT_EQ(SortedRows(*c, "SELECT LOWER(account_id), balance, status FROM account_states"),
              SortedRows(*c, R"sql(
      SELECT LOWER(aggregate_id),
             CAST(SUM(CASE JSON_VALUE(event, '$.type') WHEN 'deposited' THEN 1 WHEN 'withdrawn' THEN -1 ELSE 0 END *
                      CAST(JSON_VALUE(event, '$.amount') AS DECIMAL(12,2))) AS DECIMAL(14,2)),
             IF(SUM(JSON_VALUE(event, '$.type') = 'closed') > 0, 'closed', 'none')
      FROM events WHERE BINARY stream = 'accounts' AND JSON_VALUE(event, '$.type') IN ('deposited', 'withdrawn', 'closed')
      GROUP BY LOWER(aggregate_id))sql"))
        << "--flush-every " << every;
    EXPECT_EQ(Count(*c, "SELECT COUNT(*) FROM account_states WHERE status = 'none'"), 3);
  }
}

// Issue 38, part 2: a table rewind makes takes the declared types, a PRIMARY KEY on the key
// columns (no hash), the database's collation (case-blind here: "Acc-3" and "acc-3" are one
// row, as the application's own writes would make them); a value longer than its column is
// the event's failure, recorded and not stored cut.
TEST(ApplicationTables, ANewTableTakesTheDeclaredTypesAPrimaryKeyAndTheDatabasesCollation) {
  ConnectionOptions o = EvtstoreEvents("rewind_test_app_types");
  auto c = Connect(o);
  ASSERT_TRUE(c->Execute("ALTER DATABASE rewind_test_app_types CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci").ok());
  ASSERT_TRUE(c->Execute("INSERT INTO events (stream, aggregate_id, version, timestamp, event) VALUES "
                         "('accounts', REPEAT('x', 70), 0, '2025-05-03 10:00:00', '{\"type\":\"deposited\",\"amount\":1}')")
                  .ok());
  const std::string models = ::testing::TempDir() + "/rewind_app_types.toml";
  std::ofstream(models) << R"toml(
[[read_model]]
name   = "typed_balances"
events = ["deposited", "withdrawn"]
where  = { stream = "accounts" }
key    = [ { column = "account_id", field = "aggregate_id", type = "varchar(64)" } ]
values = [
  { column = "balance",   op = "sum",      path = "amount", type = "decimal(12,2)", on = ["deposited"] },
  { column = "balance",   op = "subtract", path = "amount", type = "decimal(12,2)", on = ["withdrawn"] },
  { column = "moves",     op = "count",    type = "int unsigned" },
  { column = "last_move", op = "last",     path = "type", type = "varchar(16)" },
]
)toml";
  std::vector<std::string> dry = Replay(models);
  dry.push_back("--dry-run");
  Outcome d = RunRewind(dry, Env(o));
  EXPECT_EQ(d.code, 0) << d.err;
  for (const char* line : {"then creates typed_balances (new", "account_id               VARCHAR(64) NOT NULL",
                           "moves                    INT UNSIGNED NOT NULL", "key (account_id): its PRIMARY KEY"}) {
    EXPECT_NE(d.out.find(line), std::string::npos) << line << "\n" << d.out;
  }
  for (int run = 0; run < 2; ++run) {  // made, then rebuilt as rewind's own
    Outcome r = RunRewind(Replay(models), Env(o));
    ASSERT_EQ(r.code, 3) << r.err;  // done, with an event it could not apply
    const std::string shape = ShapeOf(*c, "typed_balances");
    EXPECT_NE(shape.find("`account_id` varchar(64) NOT NULL"), std::string::npos) << shape;
    EXPECT_NE(shape.find("`moves` int(10) unsigned NOT NULL"), std::string::npos) << shape;
    EXPECT_NE(shape.find("`last_move` varchar(16) DEFAULT NULL"), std::string::npos) << shape;
    EXPECT_NE(shape.find("PRIMARY KEY (`account_id`)"), std::string::npos) << shape;
    EXPECT_EQ(shape.find("_hash"), std::string::npos) << shape;
    EXPECT_EQ(Count(*c, "SELECT COUNT(*) FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND "
                        "TABLE_NAME = 'typed_balances' AND COLLATION_NAME = 'utf8mb4_general_ci'"),
              2);
    EXPECT_EQ(SortedRows(*c, "SELECT LOWER(account_id), balance, moves FROM typed_balances"),
              SortedRows(*c, R"sql(
      SELECT LOWER(aggregate_id),
             SUM(IF(JSON_VALUE(event, '$.type') = 'deposited', 1, -1) * CAST(JSON_VALUE(event, '$.amount') AS DECIMAL(12,2))),
             COUNT(*)
      FROM events WHERE BINARY stream = 'accounts' AND JSON_VALUE(event, '$.type') IN ('deposited', 'withdrawn')
        AND CHAR_LENGTH(aggregate_id) <= 64
      GROUP BY LOWER(aggregate_id))sql"));
    EXPECT_EQ(Count(*c, "SELECT COUNT(*) FROM rewind_failures WHERE stage = 'typed_balances' AND "
                        "reason LIKE '%is 70 characters, longer than varchar(64)%'"),
              run + 1);
    auto plan = c->Query("EXPLAIN SELECT balance FROM typed_balances WHERE account_id = 'acc-1'");
    ASSERT_TRUE(plan.ok());
    bool by_primary = false;
    for (size_t i = 0; i < plan->columns.size(); ++i) by_primary |= plan->columns[i] == "key" && plan->rows[0][i] == "PRIMARY";
    EXPECT_TRUE(by_primary);
  }
}

}  // namespace
}  // namespace rw
