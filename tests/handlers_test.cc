// The application's projector as SQL (issue 53, part 3): spatie/laravel-event-sourcing's
// bank example, its `AccountBalanceProjector` written as the statements it runs (an INSERT
// on AccountCreated, UPDATEs on MoneyAdded / MoneySubtracted, a DELETE on AccountDeleted),
// rebuilt into the application's own `accounts` table (auto-increment id, unique uuid) from
// spatie's `stored_events`. Every row is checked against the application's projector
// replayed event by event in the test (bank_events.h), never against rewind.
#include <gtest/gtest.h>

#include <fmt/core.h>

#include <csignal>
#include <fstream>
#include <iterator>

#include "bank_events.h"
#include "framework_tables.h"
#include "rewind_process.h"
#include "subprocess.h"
#include "test_db.h"

namespace rw {
namespace {

using namespace rw::testing;

constexpr const char* kHandlers = R"toml(
[[read_model]]
name = "accounts"
handlers = [
  { on = 'App\Events\AccountCreated',  sql = "INSERT INTO {table} (uuid, name, user_id, balance, created_at) VALUES (:accountUuid, :name, :userId, 0, :@created_at)" },
  { on = 'App\Events\MoneyAdded',      sql = "UPDATE {table} SET balance = balance + :amount WHERE uuid = :accountUuid" },
  { on = 'App\Events\MoneySubtracted', sql = "UPDATE {table} SET balance = balance - :amount WHERE uuid = :accountUuid" },
  { on = 'App\Events\AccountDeleted',  sql = "DELETE FROM {table} WHERE uuid = :accountUuid" },
]
)toml";

// A bank in a fresh database with the application's `accounts` table.
Bank FreshBank(const ConnectionOptions& o, int accounts, int moves, unsigned seed) {
  auto c = Connect(o);
  EXPECT_TRUE(c->Execute(kLaravelStoredEventsDdl).ok());
  EXPECT_TRUE(c->Execute(kAccountsDdl).ok());
  Bank bank = MakeBank(*c, accounts, moves, seed);
  EXPECT_TRUE(c->Execute("SET SESSION auto_increment_increment = 3").ok());  // event ids with holes
  Insert(*c, bank.rows);
  return bank;
}

std::string Event(Connection& c, const std::string& uuid, const std::string& cls, const std::string& properties) {
  return fmt::format("INSERT INTO stored_events (aggregate_uuid, aggregate_version, event_class, event_properties, "
                     "meta_data, created_at) VALUES ({}, 1, {}, {}, '{{}}', '2024-05-02 10:00:00')",
                     c.Quote(uuid), c.Quote(kNs + cls), c.Quote(properties));
}

TEST(Handlers, TheBankExamplesProjectorAsStatementsRebuildsTheApplicationsAccountsTable) {
  ConnectionOptions o = FreshDatabase("rewind_test_handlers_bank");
  const Bank bank = FreshBank(o, 60, 3000, 61);
  auto c = Connect(o);
  ASSERT_TRUE(c->Execute("INSERT INTO accounts (uuid, name, balance) VALUES ('stale', 'x', 1)").ok());
  const std::string before = ShapeOf(*c, "accounts");
  const std::string models = File("rewind_handlers_bank.toml", kHandlers);

  // The dry run shows each statement as the server prepared it.
  std::vector<std::string> dry = Replay(models, "accounts");
  dry.push_back("--dry-run");
  Outcome d = RunRewind(dry, Env(o));
  EXPECT_EQ(d.code, 0) << d.out << d.err;
  EXPECT_NE(d.out.find("prepared: UPDATE `accounts` SET balance = balance + ? WHERE uuid = ?"), std::string::npos)
      << d.out;
  EXPECT_NE(d.out.find("prepared: DELETE FROM `accounts` WHERE uuid = ?"), std::string::npos) << d.out;

  for (const char* every : {"2000000", "97"}) {
    SCOPED_TRACE(every);
    std::vector<std::string> args = Replay(models, "accounts");
    args.insert(args.end(), {"--flush-every", every, "--batch-size", "50"});
    Outcome r = RunRewind(args, Env(o));
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_EQ(ShapeOf(*c, "accounts"), before);
    EXPECT_EQ(SortedRows(*c, "SELECT uuid, name, balance, user_id FROM accounts"), Expected(bank));
    EXPECT_EQ(Count(*c, "SELECT failed_events FROM rewind_checkpoints WHERE projector = 'accounts'"), 0);
    // :@created_at: the event table's column, bound as the event's.
    EXPECT_EQ(Count(*c, "SELECT COUNT(*) FROM accounts WHERE created_at = '2024-05-01 10:00:00'"),
              static_cast<int64_t>(bank.accounts.size()));
  }
  // verify rebuilds it aside and compares it on the table's own columns (its unique uuid as
  // the key; the auto-increment id left out): identical; then a balance changed by hand.
  std::vector<std::string> verify = Replay(models, "accounts");
  verify[0] = "verify";
  Outcome same = RunRewind(verify, Env(o));
  EXPECT_EQ(same.code, 0) << same.out << same.err;
  const std::string some = bank.accounts.begin()->first;
  ASSERT_TRUE(c->Execute("UPDATE accounts SET balance = balance + 1 WHERE uuid = " + c->Quote(some)).ok());
  Outcome differs = RunRewind(verify, Env(o));
  EXPECT_EQ(differs.code, 4) << differs.out << differs.err;
  EXPECT_NE((differs.out + differs.err).find(some), std::string::npos) << differs.out << differs.err;
  ASSERT_TRUE(c->Execute("UPDATE accounts SET balance = balance - 1 WHERE uuid = " + c->Quote(some)).ok());
  // The rows took the table's auto-increment, as the application's inserts do; the
  // application goes on after the swap: its insert takes the next id, its update and its
  // delete find rows by uuid.
  EXPECT_EQ(Count(*c, "SELECT COUNT(DISTINCT id) FROM accounts"), static_cast<int64_t>(bank.accounts.size()));
  const int64_t top = Count(*c, "SELECT MAX(id) FROM accounts");
  ASSERT_TRUE(c->Execute("INSERT INTO accounts (uuid, name, balance, user_id) VALUES ('app-new', 'New', 0, 7)").ok());
  EXPECT_GT(Count(*c, "SELECT id FROM accounts WHERE uuid = 'app-new'"), top);
  ASSERT_TRUE(c->Execute("UPDATE accounts SET balance = balance + 5 WHERE uuid = 'app-new'").ok());
  EXPECT_EQ(Count(*c, "SELECT balance FROM accounts WHERE uuid = 'app-new'"), 5);
  ASSERT_TRUE(c->Execute("DELETE FROM accounts WHERE uuid = 'app-new'").ok());
}

// An event whose statement the server refuses (an account created twice: a duplicate uuid;
// a deposit the balance's INT cannot hold) is that event's failure, recorded once with the
// server's message; the other events of its batch and flush are applied.
TEST(Handlers, AnEventTheServerRefusesIsItsFailureAndTheRestOfItsFlushIsApplied) {
  ConnectionOptions o = FreshDatabase("rewind_test_handlers_refused");
  const Bank bank = FreshBank(o, 20, 600, 62);
  auto c = Connect(o);
  const std::string uuid = bank.accounts.begin()->first;
  ASSERT_TRUE(c->Execute(Event(*c, uuid, "AccountCreated",
                               fmt::format(R"({{"accountUuid": "{}", "name": "Twice", "userId": 1}})", uuid)))
                  .ok());
  ASSERT_TRUE(c->Execute(Event(*c, uuid, "MoneyAdded",
                               fmt::format(R"({{"accountUuid": "{}", "amount": 99999999999}})", uuid)))
                  .ok());
  const int64_t duplicate = Count(*c, "SELECT id FROM stored_events WHERE event_properties LIKE '%Twice%'");
  const int64_t too_much = Count(*c, "SELECT id FROM stored_events WHERE event_properties LIKE '%99999999999%'");
  // Events after them, in the same flush: applied.
  const std::string late = "ffffffff-0000-4000-a000-000000000001";
  ASSERT_TRUE(c->Execute(Event(*c, late, "AccountCreated",
                               fmt::format(R"({{"accountUuid": "{}", "name": "Late", "userId": 2}})", late)))
                  .ok());
  ASSERT_TRUE(c->Execute(Event(*c, late, "MoneyAdded", fmt::format(R"({{"accountUuid": "{}", "amount": 12}})", late)))
                  .ok());
  Bank want = bank;
  want.accounts[late] = "Late|12|2";
  const std::string models = File("rewind_handlers_refused.toml", kHandlers);
  Outcome r = RunRewind(Replay(models, "accounts"), Env(o));
  ASSERT_EQ(r.code, 3) << r.err;  // swapped in, some events failed
  EXPECT_EQ(SortedRows(*c, "SELECT uuid, name, balance, user_id FROM accounts"), Expected(want));
  EXPECT_EQ(Count(*c, "SELECT failed_events FROM rewind_checkpoints WHERE projector = 'accounts'"), 2);
  EXPECT_EQ(Count(*c, "SELECT events_applied FROM rewind_checkpoints WHERE projector = 'accounts'"),
            Count(*c, "SELECT COUNT(*) FROM stored_events") - 2);
  EXPECT_EQ(Count(*c, "SELECT COUNT(*) FROM rewind_failures WHERE stage = 'accounts'"), 2);
  auto reason = [&](int64_t id) {
    auto v = c->QueryValue(fmt::format("SELECT reason FROM rewind_failures WHERE stage = 'accounts' AND event_id = {}", id));
    return v.ok() && *v ? **v : std::string();
  };
  EXPECT_NE(reason(duplicate).find("Duplicate entry"), std::string::npos) << reason(duplicate);
  EXPECT_NE(reason(duplicate).find("rewind_handlers_refused.toml:5"), std::string::npos) << reason(duplicate);
  EXPECT_NE(reason(too_much).find("Out of range"), std::string::npos) << reason(too_much);
  EXPECT_NE(reason(too_much).find("rewind_handlers_refused.toml:6"), std::string::npos) << reason(too_much);
  EXPECT_NE(r.err.find("2 event(s) could not be applied"), std::string::npos) << r.err;
}

// Killed with SIGKILL inside its third flush (statements sent, transaction open), then
// resumed: its statements (which add to balances: not idempotent) ran exactly once.
TEST(Handlers, AKillNineMidFlushThenResumeRunsEveryStatementExactlyOnce) {
  ConnectionOptions o = FreshDatabase("rewind_test_handlers_resume");
  const Bank bank = FreshBank(o, 40, 4000, 63);
  auto c = Connect(o);
  const std::string models = File("rewind_handlers_resume.toml", kHandlers);
  std::vector<std::string> args = Replay(models, "accounts");
  args.insert(args.end(), {"--flush-every", "300", "--batch-size", "100"});
  std::vector<std::string> env = Env(o);
  env.push_back("REWIND_FAULT=mid-flush:3");
  Subprocess run(Rewind(args), env);
  ASSERT_TRUE(run.WaitFor("fault point", 120)) << run.err();
  run.Signal(SIGKILL);
  EXPECT_EQ(run.Wait(), 128 + SIGKILL);
  args.push_back("--resume");
  Outcome r = RunRewind(args, Env(o));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("accounts resumes after event"), std::string::npos) << r.err;
  EXPECT_EQ(SortedRows(*c, "SELECT uuid, name, balance, user_id FROM accounts"), Expected(bank));
}

// Following: a deposit held open in a transaction (the lower id) while the account's
// deletion commits: the read model holds the deletion above the hole, then runs both in id
// order, so the late deposit finds no row (as the application's projector would).
TEST(Handlers, FollowRunsALateCommitInIdOrder) {
  ConnectionOptions o = FreshDatabase("rewind_test_handlers_follow");
  const Bank bank = FreshBank(o, 20, 300, 64);
  auto c = Connect(o);
  // account_moves, a fold beside it, applies what the reader read at once: it tells when the
  // reader has passed the deletion.
  const std::string models = File("rewind_handlers_follow.toml", std::string(kHandlers) + R"toml(
[[read_model]]
name   = "account_moves"
events = ['App\Events\MoneyAdded', 'App\Events\AccountDeleted', 'App\Events\AccountCreated']
key    = [{ column = "uuid", path = "accountUuid" }]
values = [{ column = "moves", op = "count" }]
)toml");
  ReplayOptions ro;
  ro.connection = o;
  ro.models_file = models;
  ro.projectors = {"accounts", "account_moves"};
  ro.events.table = "stored_events";
  ro.events.id_column = "id";
  ro.events.type_column = "event_class";
  ro.events.payload_column = "event_properties";
  ro.events.time_column = "created_at";
  Follower follower(ro);
  ASSERT_TRUE(follower.following());
  const std::string uuid = bank.accounts.begin()->first;
  auto app = Connect(o);
  ASSERT_TRUE(app->Execute("START TRANSACTION").ok());
  ASSERT_TRUE(app->Execute(Event(*c, uuid, "MoneyAdded", fmt::format(R"({{"accountUuid": "{}", "amount": 70}})", uuid)))
                  .ok());
  ASSERT_TRUE(c->Execute(Event(*c, uuid, "AccountDeleted", fmt::format(R"({{"accountUuid": "{}"}})", uuid))).ok());
  // A new account after it, created and funded while the deposit is still open.
  const std::string fresh = "eeeeeeee-0000-4000-a000-000000000002";
  ASSERT_TRUE(c->Execute(Event(*c, fresh, "AccountCreated",
                               fmt::format(R"({{"accountUuid": "{}", "name": "Fresh", "userId": 3}})", fresh)))
                  .ok());
  const std::string head = std::to_string(Count(*c, "SELECT MAX(id) FROM stored_events"));
  EXPECT_TRUE(WaitUntil(*c, "SELECT last_event_id >= " + head + " FROM rewind_checkpoints WHERE projector = "
                            "'account_moves'", 1));
  EXPECT_EQ(Count(*c, "SELECT last_event_id < " + head + " FROM rewind_checkpoints WHERE projector = 'accounts'"), 1);
  EXPECT_EQ(Count(*c, "SELECT COUNT(*) FROM accounts WHERE uuid = " + c->Quote(uuid)), 1);  // the deletion is held
  ASSERT_TRUE(app->Execute("COMMIT").ok());
  EXPECT_TRUE(WaitUntil(*c, "SELECT MIN(late_events) FROM rewind_checkpoints", 1));
  EXPECT_TRUE(WaitUntil(*c, "SELECT MIN(last_event_id) >= " + head + " FROM rewind_checkpoints", 1));
  const ReplaySummary& sum = follower.Stop();
  ASSERT_TRUE(sum.status.ok()) << sum.status.message();
  Bank want = bank;
  want.accounts.erase(uuid);
  want.accounts[fresh] = "Fresh|0|3";
  EXPECT_EQ(SortedRows(*c, "SELECT uuid, name, balance, user_id FROM accounts"), Expected(want));
  EXPECT_EQ(Count(*c, "SELECT SUM(missed_events + failed_events) FROM rewind_checkpoints"), 0);
}

// Issue 53, part 4: the blog's seven counters as the article's own statements
// (config/examples/blog-sql.toml, its tables from blog-sql.sql), rebuilt in one run beside
// the compiled read models, on a server whose max_allowed_packet is 1 MiB: each table equals
// its compiled twin row for row, and the compiled ones equal SQL GROUP BYs over the events.
TEST(Handlers, TheBlogsSevenCountersAsTheArticlesStatementsEqualTheCompiledOnes) {
  ConnectionOptions o = Store("rewind_test_handlers_blog", 20'000);
  auto c = Connect(o);
  std::ifstream ddl(std::string(REWIND_SOURCE_DIR) + "/config/examples/blog-sql.sql");
  std::string text((std::istreambuf_iterator<char>(ddl)), std::istreambuf_iterator<char>());
  for (size_t at = text.find("CREATE TABLE"); at != std::string::npos; at = text.find("CREATE TABLE", at + 1)) {
    ASSERT_TRUE(c->Execute(text.substr(at, text.find(';', at) - at)).ok());
  }
  // On a server whose max_allowed_packet is 1 MiB (some hosted servers): each bulk execution
  // stays within half of it (the 20,000 events of a flush are several).
  GlobalsRestored restored(*c, {"max_allowed_packet"});
  ASSERT_TRUE(c->Execute("SET GLOBAL max_allowed_packet = 1048576").ok());
  Outcome r = RunRewind({"replay", "--all", "--models", std::string(REWIND_SOURCE_DIR) + "/config/examples/blog-sql.toml",
                         "--quiet", "--flush-every", "20000"},
                        Env(o));
  ASSERT_EQ(r.code, 0) << r.err;
  ExpectEveryReadModelMatchesTheEvents(*c);
  const std::pair<const char*, const char*> twins[] = {
      {"visits_per_minute", "time, count"},         {"visits_per_hour", "hour, count"},
      {"visits_per_day", "date, count"},            {"visits_per_month", "date, count"},
      {"visits_per_year", "date, count"},           {"visits_per_post_per_day", "uri, date, count"},
      {"visits_per_post_per_week", "uri, date, count"},
  };
  for (const auto& [table, columns] : twins) {
    SCOPED_TRACE(table);
    const std::vector<std::string> compiled = SortedRows(*c, fmt::format("SELECT {} FROM {}", columns, table));
    EXPECT_GT(compiled.size(), 2u);
    EXPECT_EQ(SortedRows(*c, fmt::format("SELECT {} FROM sql_{}", columns, table)), compiled);
  }
}

// :@id binds the event's id and :@column a column of the event table: a log of deposits
// keyed by event id, checked against the event table by SQL.
TEST(Handlers, TheEventsIdAndColumnsBindAsTheEventTableHasThem) {
  ConnectionOptions o = FreshDatabase("rewind_test_handlers_columns");
  FreshBank(o, 10, 300, 66);
  auto c = Connect(o);
  ASSERT_TRUE(c->Execute("CREATE TABLE deposits (event_id BIGINT UNSIGNED NOT NULL PRIMARY KEY, account CHAR(36) NOT "
                         "NULL, amount DECIMAL(12,2) NOT NULL, at TIMESTAMP NULL)").ok());
  const std::string models = File("rewind_handlers_columns.toml", R"toml(
[[read_model]]
name = "deposits"
handlers = [{ on = 'App\Events\MoneyAdded', sql = "INSERT INTO {table} (event_id, account, amount, at) VALUES (:@id, :@aggregate_uuid, :amount, :@created_at)" }]
)toml");
  Outcome r = RunRewind(Replay(models, "deposits"), Env(o));
  ASSERT_EQ(r.code, 0) << r.err;
  const std::vector<std::string> want = SortedRows(
      *c, "SELECT id, aggregate_uuid, CAST(JSON_VALUE(event_properties, '$.amount') AS DECIMAL(12,2)), created_at FROM "
          "stored_events WHERE event_class = " + c->Quote(kNs + "MoneyAdded"));
  EXPECT_GT(want.size(), 100u);
  EXPECT_EQ(SortedRows(*c, "SELECT event_id, account, amount, at FROM deposits"), want);
}

// Hostile declarations: a handler that drops a table, runs two statements, names rewind's
// bookkeeping or the event table, has a syntax error, names an unknown column, or writes
// a `?`: each refused before any work, naming its file and line. A value that would inject
// SQL through a parameter is stored as the bytes it is.
TEST(Handlers, HostileHandlersAreRefusedBeforeAnyWorkAndABoundValueNeverInjects) {
  ConnectionOptions o = FreshDatabase("rewind_test_handlers_hostile");
  const Bank bank = FreshBank(o, 5, 20, 65);
  auto c = Connect(o);
  const std::string created = "App\\Events\\AccountCreated";
  auto model = [&](const std::string& sql) {
    return fmt::format("[[read_model]]\nname = \"accounts\"\nhandlers = [\n  {{ on = '{}', sql = \"{}\" }},\n]\n",
                       created, sql);
  };
  const std::pair<std::string, std::string> bad[] = {
      {model("DROP TABLE {table}"), ":4: handler on 'App\\Events\\AccountCreated': a handler runs one INSERT, UPDATE, "
                                    "DELETE or REPLACE"},
      {model("DELETE FROM {table}; DROP TABLE stored_events"), ":4: handler on 'App\\Events\\AccountCreated': a "
                                                                "handler runs one statement"},
      {model("INSERT INTO {table} (uuid, name) SELECT projector, :name FROM rewind_checkpoints"),
       "names the table 'rewind_checkpoints'"},
      {model("INSERT INTO {table} (uuid, name) SELECT aggregate_uuid, :name FROM stored_events"),
       "names the table 'stored_events'"},
      {model("INSERT INTO {table} (uuid, name) VALUE (:accountUuid, :name"), "the server refuses its statement"},
      {model("UPDATE {table} SET no_such_column = :name"), "Unknown column 'no_such_column'"},
      {model("UPDATE {table} SET name = :@no_such_column"), "parameter :@no_such_column names no column of the "
                                                            "event table stored_events"},
      {model("UPDATE {table} SET name = ? WHERE uuid = :accountUuid"), "not '?'"},
      {model("UPDATE accounts SET name = :name"), "names no {table}"},
  };
  for (const auto& [text, message] : bad) {
    SCOPED_TRACE(text);
    const std::string models = File("rewind_handlers_hostile.toml", text);
    Outcome r = RunRewind(Replay(models, "accounts"), Env(o));
    EXPECT_NE(r.code, 0) << r.err;
    EXPECT_NE(r.err.find(message), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("rewind_handlers_hostile.toml:4"), std::string::npos) << r.err;
    EXPECT_EQ(Count(*c, "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND "
                        "TABLE_NAME IN ('stored_events', 'accounts')"),
              2);
  }
  // Not split into segments: its statements depend on the order of events across keys.
  {
    std::vector<std::string> args = Replay(File("rewind_handlers_hostile.toml", kHandlers), "accounts");
    args.insert(args.end(), {"--build-only", "--segment", "0/2"});
    Outcome r = RunRewind(args, Env(o));
    EXPECT_EQ(r.code, 1) << r.err;
    EXPECT_NE(r.err.find("accounts is a read model of handlers"), std::string::npos) << r.err;
  }
  // A trigger on the application's table would be dropped with the old table at the swap:
  // refused before any work, as for any read model of the application's table.
  ASSERT_TRUE(c->Execute("CREATE TRIGGER accounts_seen AFTER INSERT ON accounts FOR EACH ROW SET @seen = 1").ok());
  {
    Outcome r = RunRewind(Replay(File("rewind_handlers_hostile.toml", kHandlers), "accounts"), Env(o));
    EXPECT_EQ(r.code, 1) << r.err;
    EXPECT_NE(r.err.find("1 trigger(s), which the swap would drop"), std::string::npos) << r.err;
    EXPECT_EQ(Count(*c, "SELECT COUNT(*) FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = DATABASE()"), 1);
  }
  ASSERT_TRUE(c->Execute("DROP TRIGGER accounts_seen").ok());
  // The value is bytes, never SQL.
  const std::string evil = "x'); DROP TABLE accounts; -- \\\" \\\\";
  const std::string uuid = "dddddddd-0000-4000-a000-000000000003";
  ASSERT_TRUE(c->Execute(Event(*c, uuid, "AccountCreated",
                               fmt::format(R"({{"accountUuid": "{}", "name": "{}", "userId": 4}})", uuid, evil)))
                  .ok());
  const std::string models = File("rewind_handlers_hostile.toml", kHandlers);
  Outcome r = RunRewind(Replay(models, "accounts"), Env(o));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(SortedRows(*c, "SELECT name FROM accounts WHERE uuid = " + c->Quote(uuid)),
            std::vector<std::string>{"x'); DROP TABLE accounts; -- \" \\"});
  Bank want = bank;
  want.accounts[uuid] = "x'); DROP TABLE accounts; -- \" \\|0|4";
  EXPECT_EQ(SortedRows(*c, "SELECT uuid, name, balance, user_id FROM accounts"), Expected(want));
}

}  // namespace
}  // namespace rw
