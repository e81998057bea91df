// A follower started again continues (issue 54, item 4): `replay --resume --follow` after a
// follower was killed (kill -9) or stopped takes each read model's live table on from its
// checkpoint instead of rebuilding every read model from the first event; it rebuilds only a
// read model whose declaration changed, or one that keeps part of its state in memory, and
// says which and why. On spatie/laravel-event-sourcing's bank example (tests/bank_events.h):
// the application's `accounts` table (deletes, accounts created again) and a count per account
// in a table rewind makes. Every row is checked against the application's projector replayed
// here event by event, or against SQL's GROUP BY, never against rewind.
#include <gtest/gtest.h>

#include <fmt/core.h>

#include <csignal>

#include "bank_events.h"
#include "framework_tables.h"
#include "rewind_process.h"
#include "subprocess.h"
#include "test_db.h"

namespace rw {
namespace {

using namespace rw::testing;

constexpr const char* kAccountsModel = R"toml(
[[read_model]]
name   = "accounts"
events = ['App\Events\AccountCreated', 'App\Events\MoneyAdded', 'App\Events\MoneySubtracted',
          'App\Events\AccountDeleted']
key    = [{ column = "uuid", path = "accountUuid", type = "varchar(255)" }]
values = [
  { column = "name",    op = "last",     path = "name",   type = "varchar(255)", on = ['App\Events\AccountCreated'] },
  { column = "user_id", op = "last",     path = "userId", type = "int unsigned", on = ['App\Events\AccountCreated'] },
  { column = "balance", op = "sum",      path = "amount", type = "int", on = ['App\Events\MoneyAdded'] },
  { column = "balance", op = "subtract", path = "amount", type = "int", on = ['App\Events\MoneySubtracted'] },
  { op = "delete", on = ['App\Events\AccountDeleted'] },
]

[[read_model]]
name   = "account_deposits"
events = ['App\Events\MoneyAdded']
key    = [{ column = "uuid", path = "accountUuid" }]
values = [{ column = "deposits", op = "count" }]
)toml";

// account_deposits by SQL, from the events.
constexpr const char* kDepositsBySql =
    "SELECT JSON_VALUE(event_properties, '$.accountUuid'), COUNT(*) FROM stored_events "
    "WHERE event_class = 'App\\\\Events\\\\MoneyAdded' GROUP BY 1";

std::vector<std::string> FollowArgs(const std::string& models) {
  std::vector<std::string> args = Replay(models, "accounts");
  args.insert(args.end(), {"account_deposits", "--follow", "--poll", "0.05", "--flush-every", "200"});
  return args;
}

// Until every checkpoint of the two read models stands at the table's last id.
bool CaughtUp(Connection& c) {
  return WaitUntil(c, "SELECT COUNT(*) FROM rewind_checkpoints WHERE status = 'following' AND last_event_id = "
                      "(SELECT MAX(id) FROM stored_events)", 2);
}

std::string RunIds(Connection& c) {
  const std::vector<std::string> rows =
      SortedRows(c, "SELECT projector, run_id FROM rewind_checkpoints WHERE target_table = live_table");
  std::string out;
  for (const std::string& r : rows) out += r + "\n";
  return out;
}

TEST(Continue, AFollowerKilledThenStartedAgainContinuesFromItsCheckpointsAndRebuildsOnlyWhatChanged) {
  ConnectionOptions o = FreshDatabase("rewind_test_continue");
  auto c = Connect(o);
  ASSERT_TRUE(c->Execute(kLaravelStoredEventsDdl).ok());
  ASSERT_TRUE(c->Execute(kAccountsDdl).ok());
  const Bank bank = MakeBank(*c, 50, 3000, 57);
  const size_t third = bank.rows.size() / 3;
  const std::vector<std::string> first(bank.rows.begin(), bank.rows.begin() + third);
  const std::vector<std::string> second(bank.rows.begin() + third, bank.rows.begin() + 2 * third);
  const std::vector<std::string> last(bank.rows.begin() + 2 * third, bank.rows.end());
  ASSERT_TRUE(c->Execute("SET SESSION auto_increment_increment = 3").ok());  // ids with holes
  Insert(*c, first);
  const std::string models = File("rewind_continue.toml", kAccountsModel);

  // The follower rebuilds, swaps, follows what comes; then it is killed mid-follow.
  {
    Subprocess follower(Rewind(FollowArgs(models)), Env(o));
    ASSERT_TRUE(CaughtUp(*c)) << follower.err();
    Insert(*c, second);
    ASSERT_TRUE(CaughtUp(*c)) << follower.err();
    follower.Signal(SIGKILL);
    EXPECT_EQ(follower.Wait(), 128 + SIGKILL);
  }
  const std::string built = RunIds(*c);
  ASSERT_EQ(std::count(built.begin(), built.end(), '\n'), 2) << built;
  // While it was down the application went on.
  Insert(*c, last);
  // The table itself, not a copy swapped in: InnoDB's id of it (a RENAME keeps it, a copy has its own).
  const std::string table_id = "SELECT TABLE_ID FROM information_schema.INNODB_SYS_TABLES WHERE NAME = '" +
                               o.database + "/accounts'";
  const std::vector<std::string> accounts_table = SortedRows(*c, table_id);
  ASSERT_EQ(accounts_table.size(), 1u);

  // Started again as the service starts it: each read model continues its live table.
  {
    std::vector<std::string> args = FollowArgs(models);
    args.push_back("--resume");
    Subprocess follower(Rewind(args), Env(o));
    ASSERT_TRUE(CaughtUp(*c)) << follower.err();
    follower.Signal(SIGTERM);
    EXPECT_EQ(follower.Wait(), 128 + SIGTERM) << follower.err();
    EXPECT_NE(follower.err().find("2 read model(s) continue their live tables from their checkpoints: accounts "
                                  "(after event "),
              std::string::npos)
        << follower.err();
    EXPECT_EQ(follower.err().find("from the first event"), std::string::npos) << follower.err();
  }
  EXPECT_EQ(RunIds(*c), built);  // the same builds, continued: nothing rebuilt
  EXPECT_EQ(SortedRows(*c, table_id), accounts_table);  // written in place
  EXPECT_EQ(SortedRows(*c, "SELECT uuid, name, balance, user_id FROM accounts"), Expected(bank));
  EXPECT_EQ(SortedRows(*c, "SELECT uuid, deposits FROM account_deposits"), SortedRows(*c, kDepositsBySql));
  EXPECT_EQ(Count(*c, "SELECT COUNT(*) FROM rewind_checkpoints WHERE status <> 'live'"), 0);

  // account_deposits' declaration changes: that read model alone is rebuilt, said so; the
  // application's table continues.
  std::string changed = kAccountsModel;
  const std::string counted = R"(values = [{ column = "deposits", op = "count" }])";
  changed.replace(changed.find(counted), counted.size(),
                  R"(values = [{ column = "deposits", op = "count" }, { column = "largest", op = "max", path = "amount" }])");
  const std::string models2 = File("rewind_continue_changed.toml", changed);
  Bank more = MakeBank(*c, 5, 200, 58);
  Insert(*c, more.rows);
  {  // the dry run says so first
    std::vector<std::string> args = FollowArgs(models2);
    args.insert(args.end(), {"--resume", "--dry-run"});
    const Outcome dry = RunRewind(args, Env(o));
    EXPECT_EQ(dry.code, 0) << dry.err << dry.out;
    EXPECT_NE(dry.out.find("continues its live table accounts from its checkpoint, after event"), std::string::npos)
        << dry.out;
    EXPECT_NE(dry.out.find("rebuilt from the first event: it was built by another version of the read model"),
              std::string::npos)
        << dry.out;
    args.push_back("--json");
    const Outcome json = RunRewind(args, Env(o));
    EXPECT_NE(json.out.find(R"("continues_after": )" + std::to_string(Count(*c, "SELECT last_event_id FROM "
                                                                          "rewind_checkpoints WHERE projector = 'accounts'"))),
              std::string::npos)
        << json.out;
  }
  {
    std::vector<std::string> args = FollowArgs(models2);
    args.push_back("--resume");
    Subprocess follower(Rewind(args), Env(o));
    ASSERT_TRUE(CaughtUp(*c)) << follower.err();
    follower.Signal(SIGTERM);
    EXPECT_EQ(follower.Wait(), 128 + SIGTERM) << follower.err();
    EXPECT_NE(follower.err().find("1 read model(s) continue their live tables from their checkpoints: accounts"),
              std::string::npos)
        << follower.err();
    EXPECT_NE(follower.err().find("account_deposits is rebuilt from the first event: it was built by another version of the read model"),
              std::string::npos)
        << follower.err();
  }
  const std::vector<std::string> now = SortedRows(*c, "SELECT projector, run_id FROM rewind_checkpoints");
  ASSERT_EQ(now.size(), 2u);
  EXPECT_NE(built.find(now[1]), std::string::npos) << built << now[1];  // accounts: the same build
  EXPECT_EQ(built.find(now[0]), std::string::npos) << built << now[0];  // account_deposits: a new one
  EXPECT_EQ(SortedRows(*c, table_id), accounts_table);
  Bank all = bank;
  for (const auto& [uuid, row] : more.accounts) all.accounts[uuid] = row;
  EXPECT_EQ(SortedRows(*c, "SELECT uuid, name, balance, user_id FROM accounts"), Expected(all));
  EXPECT_EQ(SortedRows(*c, "SELECT uuid, deposits FROM account_deposits"), SortedRows(*c, kDepositsBySql));
  EXPECT_EQ(SortedRows(*c, "SELECT uuid, CAST(largest AS SIGNED) FROM account_deposits"),
            SortedRows(*c, "SELECT JSON_VALUE(event_properties, '$.accountUuid'), "
                           "MAX(CAST(JSON_VALUE(event_properties, '$.amount') AS SIGNED)) FROM stored_events "
                           "WHERE event_class = 'App\\\\Events\\\\MoneyAdded' GROUP BY 1"));
}

// Following, an application's transaction holds a deposit (the lower id) while another
// deposit commits above it; the follower is killed (kill -9) with the hole watched, and
// started again while the transaction is still open: the restart continues with the hole it
// was watching (from the checkpoint), and the deposit, committed then, is applied exactly once.
TEST(Continue, ACommitPendingAcrossAKillNineIsAppliedOnceByTheFollowerStartedAgain) {
  ConnectionOptions o = FreshDatabase("rewind_test_continue_pending");
  auto c = Connect(o);
  ASSERT_TRUE(c->Execute(kLaravelStoredEventsDdl).ok());
  ASSERT_TRUE(c->Execute(kAccountsDdl).ok());
  Bank bank = MakeBank(*c, 20, 600, 59);
  Insert(*c, bank.rows);
  const std::string models = File("rewind_continue_pending.toml", kAccountsModel);
  auto deposit = [&](const std::string& uuid, int amount) {
    return fmt::format("INSERT INTO stored_events (aggregate_uuid, aggregate_version, event_class, event_properties, "
                       "meta_data, created_at) VALUES ({}, 1, {}, {}, '{{}}', '2024-05-02 10:00:00')",
                       c->Quote(uuid), c->Quote(kNs + "MoneyAdded"),
                       c->Quote(fmt::format(R"({{"accountUuid": "{}", "amount": {}}})", uuid, amount)));
  };

  const std::string held = bank.accounts.begin()->first, other = bank.accounts.rbegin()->first;
  auto app = Connect(o);
  {
    Subprocess follower(Rewind(FollowArgs(models)), Env(o));
    ASSERT_TRUE(CaughtUp(*c)) << follower.err();
    ASSERT_TRUE(app->Execute("START TRANSACTION").ok());
    ASSERT_TRUE(app->Execute(deposit(held, 70)).ok());  // its id taken, not committed
    ASSERT_TRUE(c->Execute(deposit(other, 30)).ok());
    // account_deposits applied the deposit above the hole and watches the hole; accounts
    // (in id order) holds it.
    ASSERT_TRUE(WaitUntil(*c, "SELECT COUNT(*) FROM rewind_checkpoints WHERE projector = 'account_deposits' AND "
                              "last_event_id = (SELECT MAX(id) FROM stored_events) AND gaps <> ''", 1))
        << follower.err();
    follower.Signal(SIGKILL);
    EXPECT_EQ(follower.Wait(), 128 + SIGKILL);
  }
  std::vector<std::string> args = FollowArgs(models);
  args.push_back("--resume");
  Subprocess follower(Rewind(args), Env(o));
  ASSERT_TRUE(follower.WaitFor("2 read model(s) continue their live tables", 120)) << follower.err();
  // The restart's own checkpoint of the hole: the hole still watched by account_deposits.
  EXPECT_EQ(Count(*c, "SELECT COUNT(*) FROM rewind_checkpoints WHERE projector = 'account_deposits' AND gaps <> ''"), 1);
  ASSERT_TRUE(app->Execute("COMMIT").ok());
  EXPECT_TRUE(WaitUntil(*c, "SELECT COUNT(*) FROM rewind_checkpoints WHERE gaps = '' AND last_event_id = "
                            "(SELECT MAX(id) FROM stored_events)", 2))
      << follower.err();
  follower.Signal(SIGTERM);
  EXPECT_EQ(follower.Wait(), 128 + SIGTERM) << follower.err();
  // The application's projector, replayed: each deposit once.
  for (const auto& [uuid, amount] : std::vector<std::pair<std::string, int>>{{held, 70}, {other, 30}}) {
    std::string& row = bank.accounts[uuid];  // name|balance|user
    const size_t a = row.find('|'), b = row.find('|', a + 1);
    row = row.substr(0, a + 1) + std::to_string(std::stoll(row.substr(a + 1, b - a - 1)) + amount) + row.substr(b);
  }
  EXPECT_EQ(SortedRows(*c, "SELECT uuid, name, balance, user_id FROM accounts"), Expected(bank));
  EXPECT_EQ(SortedRows(*c, "SELECT uuid, deposits FROM account_deposits"), SortedRows(*c, kDepositsBySql));
}

}  // namespace
}  // namespace rw
