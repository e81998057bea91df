// Deletes in declared read models (issue 53, part 1), on the best-known example of the
// most-used PHP event-sourcing package: spatie/laravel-event-sourcing's bank example. Its
// `AccountBalanceProjector` creates an `accounts` row on AccountCreated, adds and subtracts
// on MoneyAdded / MoneySubtracted and deletes the row on AccountDeleted; its `accounts` table
// has an auto-increment `id`, and the projector finds a row by its `uuid`. The events are in
// spatie's own `stored_events` (its migration), ids with holes; accounts are deleted and
// created again under the same uuid. Every row is checked against a few lines of reference
// code here (the application's projector, replayed event by event), never against rewind.
#include <gtest/gtest.h>

#include <fmt/core.h>

#include <csignal>
#include <fstream>
#include <map>
#include <random>
#include <regex>

#include "bank_events.h"
#include "framework_tables.h"
#include "rewind_process.h"
#include "subprocess.h"
#include "test_db.h"

namespace rw {
namespace {

using namespace rw::testing;

// The projector as folds with a delete.
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
)toml";

TEST(Deletes, TheLaravelBankExampleRebuildsIntoItsAccountsTableWithDeletedAccountsGone) {
  ConnectionOptions o = FreshDatabase("rewind_test_deletes_bank");
  auto c = Connect(o);
  ASSERT_TRUE(c->Execute(kLaravelStoredEventsDdl).ok());
  ASSERT_TRUE(c->Execute(kAccountsDdl).ok());
  const Bank bank = MakeBank(*c, 60, 3000, 53);
  ASSERT_GT(bank.deleted, 50);
  ASSERT_GT(bank.recreated, 40);
  ASSERT_TRUE(c->Execute("SET SESSION auto_increment_increment = 3").ok());  // ids with holes
  Insert(*c, bank.rows);
  ASSERT_TRUE(c->Execute("SET SESSION auto_increment_increment = 1").ok());
  // The application's table as its projector left it: a stale row rewind must not keep.
  ASSERT_TRUE(c->Execute("INSERT INTO accounts (uuid, name, balance) VALUES ('stale', 'x', 1)").ok());
  const std::string before = ShapeOf(*c, "accounts");
  const std::string models = File("rewind_deletes_bank.toml", kAccountsModel);

  // One flush; a flush every 97 events (a delete of a row an earlier flush wrote, a key
  // deleted and created again within one flush and across two).
  for (const char* every : {"2000000", "97"}) {
    SCOPED_TRACE(every);
    std::vector<std::string> args = Replay(models, "accounts");
    args.insert(args.end(), {"--flush-every", every, "--batch-size", "50"});
    Outcome r = RunRewind(args, Env(o));
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_EQ(ShapeOf(*c, "accounts"), before);
    EXPECT_EQ(SortedRows(*c, "SELECT uuid, name, balance, user_id FROM accounts"), Expected(bank));
  }
  // A deleted account has no row; its events are all applied (none failed).
  EXPECT_EQ(Count(*c, "SELECT COUNT(*) FROM accounts"), static_cast<int64_t>(bank.accounts.size()));
  EXPECT_EQ(Count(*c, "SELECT failed_events FROM rewind_checkpoints WHERE projector = 'accounts'"), 0);

  // The application goes on after the swap: its own insert takes the next auto-increment
  // id, its update finds the row by uuid, its delete removes it.
  const int64_t top = Count(*c, "SELECT MAX(id) FROM accounts");
  ASSERT_TRUE(c->Execute("INSERT INTO accounts (uuid, name, balance, user_id) VALUES ('app-new', 'New', 0, 7)").ok());
  EXPECT_GT(Count(*c, "SELECT id FROM accounts WHERE uuid = 'app-new'"), top);
  const std::string some = bank.accounts.begin()->first;
  ASSERT_TRUE(c->Execute("UPDATE accounts SET balance = balance + 5 WHERE uuid = " + c->Quote(some)).ok());
  ASSERT_TRUE(c->Execute("DELETE FROM accounts WHERE uuid = 'app-new'").ok());
  EXPECT_EQ(Count(*c, "SELECT COUNT(*) FROM accounts"), static_cast<int64_t>(bank.accounts.size()));
}

// Killed with SIGKILL inside its third flush, then resumed: the resume continues from the
// checkpoint (deletes included, in the flush's transaction) and the rows are exact.
TEST(Deletes, AKillNineMidFlushThenResumeKeepsEveryDeleteExactlyOnce) {
  ConnectionOptions o = FreshDatabase("rewind_test_deletes_resume");
  auto c = Connect(o);
  ASSERT_TRUE(c->Execute(kLaravelStoredEventsDdl).ok());
  const Bank bank = MakeBank(*c, 40, 4000, 54);
  Insert(*c, bank.rows);
  const std::string models = File("rewind_deletes_resume.toml", kAccountsModel);
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

// Following, an application's transaction holds a deposit to an account (the lower id) while
// the account's deletion (a higher id) commits: by id order the row is gone. The delete is
// held above the open hole (the read model is order-dependent) until the deposit commits,
// then both apply in id order; a read model without deletes applies the deletion at once.
TEST(Deletes, FollowHoldsADeleteAboveAnOpenHoleSoALateDepositDoesNotBringTheRowBack) {
  ConnectionOptions o = FreshDatabase("rewind_test_deletes_follow");
  auto c = Connect(o);
  ASSERT_TRUE(c->Execute(kLaravelStoredEventsDdl).ok());
  const Bank bank = MakeBank(*c, 20, 300, 56);
  Insert(*c, bank.rows);
  const std::string models = File("rewind_deletes_follow.toml", std::string(kAccountsModel) + R"toml(
[[read_model]]
name   = "account_moves"
events = ['App\Events\MoneyAdded', 'App\Events\AccountDeleted']
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
  auto event = [&](const std::string& cls, const std::string& properties) {
    return fmt::format("INSERT INTO stored_events (aggregate_uuid, aggregate_version, event_class, event_properties, "
                       "meta_data, created_at) VALUES ({}, 1, {}, {}, '{{}}', '2024-05-02 10:00:00')",
                       c->Quote(uuid), c->Quote(kNs + cls), c->Quote(properties));
  };
  auto app = Connect(o);
  ASSERT_TRUE(app->Execute("START TRANSACTION").ok());
  ASSERT_TRUE(app->Execute(event("MoneyAdded", fmt::format(R"({{"accountUuid": "{}", "amount": 70}})", uuid))).ok());
  ASSERT_TRUE(c->Execute(event("AccountDeleted", fmt::format(R"({{"accountUuid": "{}"}})", uuid))).ok());
  const std::string head = std::to_string(Count(*c, "SELECT MAX(id) FROM stored_events"));
  // account_moves applied the deletion; accounts holds it, its checkpoint below the hole.
  EXPECT_TRUE(WaitUntil(*c, "SELECT last_event_id >= " + head + " FROM rewind_checkpoints WHERE projector = "
                            "'account_moves'", 1));
  EXPECT_EQ(Count(*c, "SELECT last_event_id < " + head + " FROM rewind_checkpoints WHERE projector = 'accounts'"), 1);
  EXPECT_EQ(Count(*c, "SELECT COUNT(*) FROM accounts WHERE uuid = " + c->Quote(uuid)), 1);
  ASSERT_TRUE(app->Execute("COMMIT").ok());
  EXPECT_TRUE(WaitUntil(*c, "SELECT MIN(late_events) FROM rewind_checkpoints", 1));
  EXPECT_TRUE(WaitUntil(*c, "SELECT MIN(last_event_id) >= " + head + " FROM rewind_checkpoints", 1));
  const ReplaySummary& sum = follower.Stop();
  ASSERT_TRUE(sum.status.ok()) << sum.status.message();
  Bank after = bank;
  after.accounts.erase(uuid);
  EXPECT_EQ(SortedRows(*c, "SELECT uuid, name, balance, user_id FROM accounts"), Expected(after));
  EXPECT_EQ(Count(*c, "SELECT COALESCE(SUM(missed_events), 0) FROM rewind_checkpoints"), 0);
}

// An order's items in a table rewind makes (a text key and an integer key: stored with the
// hash of the text): an item removed goes with its row, an item added again starts afresh,
// and an item's status moves only forward: `shipped` only from `paid` (a value's `if`). Built
// whole, then in two segments.
TEST(Deletes, OrderItemsGoWithTheirItemAndAStatusMovesOnlyWhereItsConditionHolds) {
  ConnectionOptions o = FreshDatabase("rewind_test_deletes_items");
  auto c = Connect(o);
  ASSERT_TRUE(c->Execute(kLaravelStoredEventsDdl).ok());
  std::mt19937 rng(55);
  std::vector<std::string> rows;
  struct Item {
    int64_t quantity = 0;
    std::string status;
    bool there = false;
  };
  std::map<std::pair<std::string, int>, Item> items;
  auto add = [&](const std::string& order, const std::string& cls, const std::string& properties) {
    rows.push_back(fmt::format("({}, 1, {}, {}, '{{}}', '2024-05-01 10:00:00')", c->Quote(order),
                               c->Quote(kNs + cls), c->Quote(properties)));
  };
  for (int n = 0; n < 2500; ++n) {
    const std::string order = fmt::format("Order-{}", rng() % 30);
    const int item = static_cast<int>(rng() % 6);
    Item& it = items[{order, item}];
    const int what = static_cast<int>(rng() % 10);
    if (!it.there || what < 3) {
      const int q = 1 + static_cast<int>(rng() % 4);
      if (!it.there) it = Item{0, "", true};
      it.quantity += q;
      add(order, "ItemAdded", fmt::format(R"({{"order": "{}", "item": {}, "quantity": {}}})", order, item, q));
    } else if (what < 5) {
      it.there = false;
      add(order, "ItemRemoved", fmt::format(R"({{"order": "{}", "item": {}}})", order, item));
    } else {
      // A status event: "paid" always sets it; "shipped" only where the item was paid
      // (the application's state machine), told by the event's "from".
      const bool paid = what < 7;
      const std::string from = it.status.empty() ? "none" : it.status;
      if (paid) it.status = "paid";
      else if (from == "paid") it.status = "shipped";
      add(order, "ItemStatus",
          fmt::format(R"({{"order": "{}", "item": {}, "status": "{}", "from": "{}"}})", order, item,
                      paid ? "paid" : "shipped", from));
    }
  }
  Insert(*c, rows);
  const std::string models = File("rewind_deletes_items.toml", R"toml(
[[read_model]]
name   = "order_items"
events = ['App\Events\ItemAdded', 'App\Events\ItemRemoved', 'App\Events\ItemStatus']
key    = [{ column = "order_id", path = "order" }, { column = "item", path = "item", type = "bigint" }]
values = [
  { column = "quantity", op = "sum",  path = "quantity", type = "bigint", on = ['App\Events\ItemAdded'] },
  { column = "status",   op = "last", value = "paid",    on = ['App\Events\ItemStatus'], if = { "$.status" = "paid" } },
  { column = "status",   op = "last", value = "shipped", on = ['App\Events\ItemStatus'], if = { "$.status" = "shipped", "$.from" = "paid" } },
  { op = "delete", on = ['App\Events\ItemRemoved'] },
]
)toml");
  std::vector<std::string> expected;
  for (const auto& [key, it] : items) {
    if (it.there) {
      expected.push_back(fmt::format("{}|{}|{}|{}", key.first, key.second, it.quantity,
                                     it.status.empty() ? "NULL" : it.status));
    }
  }
  std::sort(expected.begin(), expected.end());
  ASSERT_GT(expected.size(), 50u);
  for (const char* every : {"2000000", "211"}) {
    SCOPED_TRACE(every);
    std::vector<std::string> args = Replay(models, "order_items");
    args.insert(args.end(), {"--flush-every", every, "--batch-size", "64"});
    Outcome r = RunRewind(args, Env(o));
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_EQ(SortedRows(*c, "SELECT order_id, item, quantity, status FROM order_items"), expected);
  }
  // Built again in two segments by key (each key's events, deletes included, in one of
  // them, in id order), then merged and swapped by --resume.
  for (const char* segment : {"0/2", "1/2"}) {
    std::vector<std::string> build = Replay(models, "order_items");
    build.insert(build.end(), {"--build-only", "--segment", segment, "--flush-every", "250"});
    Outcome b = RunRewind(build, Env(o));
    ASSERT_EQ(b.code, 0) << segment << ": " << b.err;
  }
  std::vector<std::string> swap = Replay(models, "order_items");
  swap.push_back("--resume");
  Outcome s = RunRewind(swap, Env(o));
  ASSERT_EQ(s.code, 0) << s.err;
  EXPECT_EQ(SortedRows(*c, "SELECT order_id, item, quantity, status FROM order_items"), expected);
}

}  // namespace
}  // namespace rw
