// The frameworks' own event tables: spatie/laravel-event-sourcing's `stored_events`, Axon's
// `domain_event_entry` and EventSauce's MySQL message table, each created with the shape its
// published migration or entity gives it, filled with realistic events (ids with holes, as
// sequences, Galera steps and deletions leave them), rebuilt by the real rewind binary with
// the flags and the declarations of config/examples/<framework>.toml (the flags read from
// the file's own comment, so that what it tells a user is what is tested), and every read
// model row checked against a GROUP BY over the event table computed by the server's own
// JSON functions (never by rewind).
#include <gtest/gtest.h>

#include <fmt/core.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <fstream>
#include <random>
#include <sstream>

#include "framework_tables.h"
#include "stages/flow/page_query.h"
#include "rewind_process.h"
#include "subprocess.h"
#include "test_db.h"

namespace rw {
namespace {

using namespace rw::testing;

std::string Example(const std::string& name) { return std::string(REWIND_SOURCE_DIR) + "/config/examples/" + name; }

// The `rewind replay ...` command in an example's top comment, as argv (without "rewind"),
// the models file made absolute.
std::vector<std::string> CommandOf(const std::string& file) {
  std::ifstream in(file);
  EXPECT_TRUE(in) << file;
  std::string line, command;
  bool in_command = false;
  while (std::getline(in, line)) {
    if (line.rfind("#", 0) != 0) break;
    std::string text = line.substr(1);
    if (!in_command && text.find("rewind replay") == std::string::npos) continue;
    in_command = true;
    const bool more = !text.empty() && text.back() == '\\';
    if (more) text.pop_back();
    command += " " + text;
    if (!more) break;
  }
  std::vector<std::string> args;
  std::istringstream words(command);
  for (std::string w; words >> w;) {
    if (w.size() > 5 && w.substr(w.size() - 5) == ".toml") w = std::string(REWIND_SOURCE_DIR) + "/" + w;
    args.push_back(w);
  }
  EXPECT_GE(args.size(), 3u) << "no 'rewind replay' command in the comment of " << file;
  if (!args.empty() && args[0] == "rewind") args.erase(args.begin());
  return args;
}

// The example's command rebuilt its read models alone: none of the blog's compiled ones
// was made in the framework's database.
void ExpectNoCompiledTables(Connection& c) {
  EXPECT_EQ(Count(c, "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND "
                     "(TABLE_NAME LIKE 'visits\\_%' OR TABLE_NAME LIKE 'sessions\\_per\\_%')"),
            0);
}

// The read model's rows equal the reference's, and there are some.
void ExpectSameRows(Connection& c, const std::string& model, const std::string& reference, size_t at_least) {
  const std::vector<std::string> want = SortedRows(c, reference);
  EXPECT_GE(want.size(), at_least) << reference;
  EXPECT_EQ(SortedRows(c, model), want) << model;
}

std::string Money(int64_t cents) { return fmt::format("{}.{:02d}", cents / 100, cents % 100); }

std::string Uuid(std::mt19937& rng) {
  std::uniform_int_distribution<uint32_t> d;
  return fmt::format("{:08x}-{:04x}-4{:03x}-a{:03x}-{:08x}{:04x}", d(rng), d(rng) & 0xffff, d(rng) & 0xfff,
                     d(rng) & 0xfff, d(rng), d(rng) & 0xffff);
}

// Rows inserted in multi-row statements of at most 200.
void InsertRows(Connection& c, const std::string& head, const std::vector<std::string>& rows) {
  for (size_t at = 0; at < rows.size(); at += 200) {
    std::string sql = head;
    for (size_t i = at; i < std::min(rows.size(), at + 200); ++i) sql += (i > at ? ", " : " ") + rows[i];
    ASSERT_TRUE(c.Execute(sql).ok()) << sql.substr(0, 300);
  }
}

// The server's global time zone set for the life of this object, then put back.
class GlobalTimeZone {
 public:
  GlobalTimeZone(const ConnectionOptions& o, const std::string& zone) : c_(Connect(o)) {
    auto was = c_->QueryValue("SELECT @@GLOBAL.time_zone");
    EXPECT_TRUE(was.ok() && *was);
    was_ = was.ok() && *was ? **was : "SYSTEM";
    EXPECT_TRUE(c_->Execute("SET GLOBAL time_zone = " + c_->Quote(zone)).ok());
  }
  ~GlobalTimeZone() { EXPECT_TRUE(c_->Execute("SET GLOBAL time_zone = " + c_->Quote(was_)).ok()); }

 private:
  std::unique_ptr<Connection> c_;
  std::string was_;
};

// A connection of the test's own whose times are UTC whatever rewind does.
std::unique_ptr<Connection> UtcConnection(const ConnectionOptions& o) {
  auto c = Connect(o);
  EXPECT_TRUE(c->Execute("SET time_zone = '+00:00'").ok());
  return c;
}

TEST(Frameworks, EveryConnectionOfRewindReadsTimesInUtcWhateverTheServersZone) {
  ConnectionOptions o = ServerOptions();
  GlobalTimeZone zone(o, "+05:00");
  auto c = Connect(o);
  ASSERT_TRUE(c);
  EXPECT_EQ(*c->QueryValue("SELECT @@SESSION.time_zone"), "+00:00");
  ASSERT_TRUE(c->Reconnect().ok());
  EXPECT_EQ(*c->QueryValue("SELECT @@SESSION.time_zone"), "+00:00");
}

// spatie/laravel-event-sourcing: the migration's table (Laravel's bigIncrements, uuid,
// string, json and timestamp columns on MariaDB), the bank-account tutorial's events, ids
// stepping by 2 (a Galera cluster's auto_increment_increment) and some deleted. Rebuilt
// while the server's zone is +05:00: TIMESTAMP created_at must be read in UTC.
TEST(Frameworks, LaravelEventSourcingsStoredEventsRebuildExactly) {
  ConnectionOptions o = FreshDatabase("rewind_test_fw_laravel");
  auto c = UtcConnection(o);
  ASSERT_TRUE(c->Execute(kLaravelStoredEventsDdl).ok());
  const std::string ns = "App\\Domain\\Account\\Events\\";
  std::mt19937 rng(22);
  struct Account {
    std::string uuid;
    int64_t version = 0, balance = 0;
  };
  std::vector<Account> accounts(40);
  std::vector<std::string> rows;
  int64_t minute = 0;
  auto add = [&](Account& a, const std::string& cls, const std::string& properties) {
    // Times over about two weeks in id order; those after 19:00 UTC are the next day at +05:00.
    minute += std::uniform_int_distribution<int>(1, 15)(rng);
    const std::string at = fmt::format("2024-03-{:02d} {:02d}:{:02d}:{:02d}", 1 + minute / 1440, minute / 60 % 24,
                                       minute % 60, minute % 59);
    const std::string meta = fmt::format(R"({{"aggregate-root-uuid": "{}", "aggregate-root-version": {}, "created-at": "{}"}})",
                                         a.uuid, a.version + 1, at);
    rows.push_back(fmt::format("({}, {}, {}, {}, {}, {})", c->Quote(a.uuid), ++a.version, c->Quote(ns + cls),
                               c->Quote(properties), c->Quote(meta), c->Quote(at)));
  };
  for (size_t i = 0; i < accounts.size(); ++i) {
    accounts[i].uuid = Uuid(rng);
    add(accounts[i], "AccountCreated", fmt::format(R"({{"name": "Account {} \"{}\"", "userId": {}}})", i,
                                                   i % 3 ? "savings" : "current", 100 + i));
  }
  for (int n = 0; n < 2500; ++n) {
    Account& a = accounts[std::uniform_int_distribution<size_t>(0, accounts.size() - 1)(rng)];
    const int64_t cents = std::uniform_int_distribution<int64_t>(1, 250000)(rng);
    if (n % 50 == 7) {
      add(a, "AccountLimitHit", "{}");  // a class no read model reads
    } else if (a.balance >= cents && n % 3 == 0) {
      a.balance -= cents;
      add(a, "MoneySubtracted", fmt::format(R"({{"amount": {}}})", Money(cents)));
    } else {
      a.balance += cents;
      add(a, "MoneyAdded", fmt::format(R"({{"amount": {}}})", Money(cents)));
    }
  }
  ASSERT_TRUE(c->Execute("SET SESSION auto_increment_increment = 2").ok());
  InsertRows(*c, "INSERT INTO stored_events (aggregate_uuid, aggregate_version, event_class, event_properties, "
                 "meta_data, created_at) VALUES", rows);
  ASSERT_TRUE(c->Execute("DELETE FROM stored_events WHERE id % 37 = 5").ok());
  ASSERT_EQ(Count(*c, "SELECT COUNT(*) FROM stored_events WHERE id % 2 = 0"), 0);

  {
    GlobalTimeZone zone(o, "+05:00");
    std::vector<std::string> args = CommandOf(Example("laravel.toml"));
    args.push_back("--quiet");
    Outcome run = RunRewind(args, Env(o));
    ASSERT_EQ(run.code, 0) << run.err;
    ExpectNoCompiledTables(*c);
  }
  const std::string created = c->Quote(ns + "AccountCreated"), added = c->Quote(ns + "MoneyAdded"),
                    subtracted = c->Quote(ns + "MoneySubtracted");
  const std::string amount = "CAST(JSON_VALUE(e.event_properties, '$.amount') AS DECIMAL(18,2))";
  ExpectSameRows(*c, "SELECT account_uuid, name, balance, deposits, withdrawals, last_activity_at FROM account_balances",
                 fmt::format("SELECT e.aggregate_uuid, (SELECT JSON_VALUE(f.event_properties, '$.name') FROM "
                             "stored_events f WHERE f.aggregate_uuid = e.aggregate_uuid AND f.event_class = {0} ORDER "
                             "BY f.id LIMIT 1), SUM(CASE e.event_class WHEN {1} THEN {3} WHEN {2} THEN -{3} ELSE 0 "
                             "END), SUM(e.event_class = {1}), SUM(e.event_class = {2}), MAX(e.created_at) FROM "
                             "stored_events e WHERE e.event_class IN ({0}, {1}, {2}) GROUP BY e.aggregate_uuid",
                             created, added, subtracted, amount),
                 accounts.size());
  // The example's declared types: the uuid a CHAR(36) PRIMARY KEY, looked up by its index (issue 38, part 2).
  auto shape = c->Query("SHOW CREATE TABLE account_balances");
  ASSERT_TRUE(shape.ok() && !shape->rows.empty());
  const std::string ddl = shape->rows[0][1].value_or("");
  EXPECT_NE(ddl.find("`account_uuid` char(36)"), std::string::npos) << ddl;
  EXPECT_NE(ddl.find("PRIMARY KEY (`account_uuid`)"), std::string::npos) << ddl;
  EXPECT_EQ(ddl.find("_hash"), std::string::npos) << ddl;
  ExpectSameRows(*c, "SELECT day, moves, added, subtracted, net FROM money_moved_per_day",
                 fmt::format("SELECT DATE(e.created_at), COUNT(*), SUM(IF(e.event_class = {0}, {2}, 0)), "
                             "SUM(IF(e.event_class = {1}, {2}, 0)), SUM(IF(e.event_class = {0}, {2}, -{2})) FROM "
                             "stored_events e WHERE e.event_class IN ({0}, {1}) GROUP BY 1",
                             added, subtracted, amount),
                 10);
}

// Axon's JPA DomainEventEntry on MariaDB: global_index from a sequence that hands out blocks
// of 50 to each of two application nodes (ids far apart, blocks left part-used), the
// payload Jackson's JSON in a LONGBLOB, time_stamp ISO-8601 text.
TEST(Frameworks, AxonsDomainEventEntryRebuildsExactly) {
  ConnectionOptions o = FreshDatabase("rewind_test_fw_axon");
  auto c = UtcConnection(o);
  ASSERT_TRUE(c->Execute(R"sql(
    CREATE TABLE domain_event_entry (
      global_index BIGINT NOT NULL,
      event_identifier VARCHAR(255) NOT NULL,
      meta_data LONGBLOB,
      payload LONGBLOB NOT NULL,
      payload_revision VARCHAR(255),
      payload_type VARCHAR(255) NOT NULL,
      time_stamp VARCHAR(255) NOT NULL,
      aggregate_identifier VARCHAR(255) NOT NULL,
      sequence_number BIGINT NOT NULL,
      type VARCHAR(255),
      PRIMARY KEY (global_index),
      UNIQUE KEY UK_event_identifier (event_identifier),
      UNIQUE KEY UK_aggregate_sequence (aggregate_identifier, sequence_number)
    ) ENGINE=InnoDB)sql").ok());
  const std::string api = "io.axoniq.demo.giftcard.api.";
  std::mt19937 rng(23);
  struct Card {
    std::string id;
    int64_t sequence = -1, left = 0;
    bool canceled = false;
  };
  std::vector<Card> cards;
  cards.reserve(200);
  int64_t next[2] = {1, 51}, block_end[2] = {50, 100}, top = 100, second = 0;
  std::vector<std::string> rows;
  auto add = [&](Card& card, const std::string& cls, const std::string& payload) {
    const int node = std::uniform_int_distribution<int>(0, 1)(rng);
    if (next[node] > block_end[node] || std::uniform_int_distribution<int>(0, 40)(rng) == 0) {
      next[node] = top + 1;  // a new block; the rest of the old one is never used
      block_end[node] = top += 50;
    }
    second += std::uniform_int_distribution<int>(30, 12000)(rng);
    const int64_t day = second / 86400, in_day = second % 86400;
    const std::string at = fmt::format("2024-{:02d}-{:02d}T{:02d}:{:02d}:{:02d}.{:03d}Z", 1 + day / 28, 1 + day % 28,
                                       in_day / 3600, in_day / 60 % 60, in_day % 60, second % 1000);
    rows.push_back(fmt::format("({}, {}, {}, {}, NULL, {}, {}, {}, {}, 'GiftCard')", next[node]++, c->Quote(Uuid(rng)),
                               c->Quote(R"({"traceId":")" + Uuid(rng) + R"("})"), c->Quote(payload),
                               c->Quote(api + cls), c->Quote(at), c->Quote(card.id), ++card.sequence));
  };
  for (int n = 0; n < 2500; ++n) {
    if (cards.empty() || n % 25 == 0) {  // cards issued all along
      Card& card = cards.emplace_back();
      card.id = fmt::format("GC-{:04d}", 17 * cards.size() + 3);
      card.left = std::uniform_int_distribution<int64_t>(50, 500)(rng);
      add(card, "CardIssuedEvent", fmt::format(R"({{"id":"{}","amount":{}}})", card.id, card.left));
      continue;
    }
    Card& card = cards[std::uniform_int_distribution<size_t>(0, cards.size() - 1)(rng)];
    if (card.canceled) continue;
    if (n % 197 == 0) {
      card.canceled = true;
      add(card, "CardCanceledEvent", fmt::format(R"({{"id":"{}"}})", card.id));
    } else if (card.left > 0) {
      const int64_t amount = std::uniform_int_distribution<int64_t>(1, std::min<int64_t>(card.left, 25))(rng);
      card.left -= amount;
      add(card, "CardRedeemedEvent", fmt::format(R"({{"id":"{}","amount":{}}})", card.id, amount));
    }
  }
  InsertRows(*c, "INSERT INTO domain_event_entry (global_index, event_identifier, meta_data, payload, "
                 "payload_revision, payload_type, time_stamp, aggregate_identifier, sequence_number, type) VALUES",
             rows);
  ASSERT_GT(Count(*c, "SELECT MAX(global_index) - COUNT(*) FROM domain_event_entry"), 500);  // holes

  std::vector<std::string> args = CommandOf(Example("axon.toml"));
  args.push_back("--quiet");
  Outcome run = RunRewind(args, Env(o));
  ASSERT_EQ(run.code, 0) << run.err;
  ExpectNoCompiledTables(*c);
  const std::string issued = c->Quote(api + "CardIssuedEvent"), redeemed = c->Quote(api + "CardRedeemedEvent"),
                    canceled = c->Quote(api + "CardCanceledEvent");
  const std::string amount = "CAST(JSON_VALUE(e.payload, '$.amount') AS SIGNED)";
  const std::string at = "CAST(REPLACE(LEFT(e.time_stamp, 19), 'T', ' ') AS DATETIME)";
  ExpectSameRows(*c, "SELECT card_id, initial_value, remaining_value, redemptions, issued_at, status FROM gift_card_summary",
                 fmt::format("SELECT e.aggregate_identifier, SUM(IF(e.payload_type = {0}, {3}, 0)), "
                             "SUM(CASE e.payload_type WHEN {0} THEN {3} WHEN {1} THEN -{3} ELSE 0 END), "
                             "SUM(e.payload_type = {1}), MIN(IF(e.payload_type = {0}, {4}, NULL)), "
                             "MAX(IF(e.payload_type = {2}, 'canceled', NULL)) FROM domain_event_entry e WHERE "
                             "e.payload_type IN ({0}, {1}, {2}) GROUP BY e.aggregate_identifier",
                             issued, redeemed, canceled, amount, at),
                 cards.size());
  ExpectSameRows(*c, "SELECT month, cards, value FROM cards_issued_per_month",
                 fmt::format("SELECT DATE_FORMAT({1}, '%Y-%m-01'), COUNT(*), SUM({2}) FROM domain_event_entry e "
                             "WHERE e.payload_type = {0} GROUP BY 1",
                             issued, at, amount),
                 4);
}

// The classes the dry run names when no event matches (page_query's CommonClasses) on
// EventSauce's domain_messages: read from the type path (there is no type column), as SQL
// counts them.
void ExpectCommonClassesAsSql(rw::Connection& c) {
  rw::EventTableOptions e;
  e.table = "domain_messages";
  e.type_path = "headers.__event_type";
  rw::Result<rw::Rows> common = rw::CommonClasses(c, e, /*first=*/1000, /*top=*/10);
  ASSERT_TRUE(common.ok()) << common.status().message();
  std::vector<std::string> got;
  for (const auto& row : common->rows) got.push_back(row[0].value_or("NULL") + " " + row[1].value_or(""));
  std::vector<std::string> want;
  rw::Result<rw::Rows> sql = c.Query(
      "SELECT t, COUNT(*) FROM (SELECT JSON_VALUE(payload, '$.headers.__event_type') AS t FROM domain_messages "
      "ORDER BY id LIMIT 1000) x GROUP BY t");
  ASSERT_TRUE(sql.ok());
  for (const auto& row : sql->rows) want.push_back(row[0].value_or("NULL") + " " + row[1].value_or(""));
  std::sort(got.begin(), got.end());
  std::sort(want.begin(), want.end());
  EXPECT_EQ(got, want);
  EXPECT_GE(got.size(), 3u);
}

// EventSauce's MySQL table: no type column, the type a header in the JSON payload. Events
// whose type differs only in case (the table's collation is case-insensitive), a message
// without a type and another type are not the declared classes; some ids deleted.
TEST(Frameworks, EventSaucesMessageTableRebuildsExactlyWithTheTypeFromThePayload) {
  ConnectionOptions o = FreshDatabase("rewind_test_fw_eventsauce");
  auto c = UtcConnection(o);
  ASSERT_TRUE(c->Execute(R"sql(
    CREATE TABLE IF NOT EXISTS domain_messages (
      id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT,
      event_id BINARY(16) NOT NULL,
      aggregate_root_id BINARY(16) NOT NULL,
      version INT(20) UNSIGNED NULL,
      payload VARCHAR(16001) NOT NULL,
      PRIMARY KEY (id ASC),
      KEY reconstitution (aggregate_root_id, version ASC)
    ) DEFAULT CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci ENGINE = InnoDB)sql").ok());
  std::mt19937 rng(24);
  std::vector<std::string> rows;
  int64_t second = 0;
  struct Order {
    std::string id, customer;
    int64_t version = 0, cents = 0;
    bool refunded = false;
  };
  std::vector<Order> orders;
  auto add = [&](Order& order, const std::string& type, const std::string& body) {
    second += std::uniform_int_distribution<int>(60, 8000)(rng);
    const int64_t day = second / 86400, in_day = second % 86400;
    const std::string at = fmt::format("2024-{:02d}-{:02d} {:02d}:{:02d}:{:02d}.{:06d}+0000", 1 + day / 28, 1 + day % 28,
                                       in_day / 3600, in_day / 60 % 60, in_day % 60, second % 1000000);
    const std::string event_id = Uuid(rng);
    const std::string type_header = type.empty() ? "" : fmt::format(R"("__event_type":"{}",)", type);
    const std::string message = fmt::format(
        R"({{"headers":{{{}"__event_id":"{}","__aggregate_root_id":"{}","__aggregate_root_version":{},)"
        R"("__aggregate_root_type":"acme.ordering.order","__time_of_recording":"{}"}},"payload":{}}})",
        type_header, event_id, order.id, ++order.version, at, body);
    auto hex = [](std::string u) {
      u.erase(std::remove(u.begin(), u.end(), '-'), u.end());
      return "UNHEX('" + u + "')";
    };
    rows.push_back(fmt::format("({}, {}, {}, {})", hex(event_id), hex(order.id), order.version, c->Quote(message)));
  };
  std::vector<std::string> customers;
  for (int i = 0; i < 30; ++i) customers.push_back(fmt::format("customer-{:03d}", 7 * i));
  for (int n = 0; n < 2500; ++n) {
    if (orders.empty() || n % 3 != 2) {
      Order& order = orders.emplace_back();
      order.id = Uuid(rng);
      order.customer = customers[std::uniform_int_distribution<size_t>(0, customers.size() - 1)(rng)];
      order.cents = std::uniform_int_distribution<int64_t>(100, 99999)(rng);
      // Some orders of a type that differs from a declared class in case only.
      const std::string type = n % 41 == 0 ? "Acme.Ordering.Order_Placed" : "acme.ordering.order_placed";
      add(order, type, fmt::format(R"({{"order_id":"{}","customer_id":"{}","total":{}}})", order.id, order.customer,
                                   Money(order.cents)));
      continue;
    }
    Order& order = orders[std::uniform_int_distribution<size_t>(0, orders.size() - 1)(rng)];
    if (n % 5 == 0) {
      add(order, "acme.ordering.order_shipped", R"({"carrier":"dhl"})");
    } else if (n % 89 == 0) {
      add(order, "", R"({"note":"a message without a type"})");
    } else if (!order.refunded) {
      order.refunded = true;
      add(order, "acme.ordering.order_refunded",
          fmt::format(R"({{"order_id":"{}","customer_id":"{}","total":{}}})", order.id, order.customer,
                      Money(order.cents)));
    }
  }
  InsertRows(*c, "INSERT INTO domain_messages (event_id, aggregate_root_id, version, payload) VALUES", rows);
  ASSERT_TRUE(c->Execute("DELETE FROM domain_messages WHERE id % 23 = 0 OR id BETWEEN 1000 AND 1100").ok());

  std::vector<std::string> args = CommandOf(Example("eventsauce.toml"));
  args.push_back("--quiet");
  {  // Without --type-path, the missing type column's message says where the type may be.
    std::vector<std::string> without = args;
    auto path = std::find(without.begin(), without.end(), "--type-path");
    ASSERT_NE(path, without.end());
    without.erase(path, path + 2);
    Outcome refused = RunRewind(without, Env(o));
    EXPECT_NE(refused.code, 0);
    EXPECT_NE(refused.err.find("has no column 'eventClass'"), std::string::npos) << refused.err;
    EXPECT_NE(refused.err.find("--type-path"), std::string::npos) << refused.err;
    EXPECT_NE(refused.err.find("its columns: id, event_id, aggregate_root_id, version, payload"), std::string::npos)
        << refused.err;
  }
  Outcome run = RunRewind(args, Env(o));
  ASSERT_EQ(run.code, 0) << run.err;
  ExpectNoCompiledTables(*c);
  const std::string placed = "'acme.ordering.order_placed'", refunded = "'acme.ordering.order_refunded'";
  ExpectSameRows(
      *c, "SELECT customer, month, orders, refunds, net_revenue, last_order_at FROM orders_per_customer_per_month",
      fmt::format("SELECT customer, DATE_FORMAT(at, '%Y-%m-01'), SUM(t = {0}), SUM(t = {1}), "
                  "SUM(IF(t = {0}, total, -total)), MAX(IF(t = {0}, at, NULL)) FROM (SELECT "
                  "JSON_VALUE(payload, '$.headers.__event_type') COLLATE utf8mb4_bin AS t, "
                  "JSON_VALUE(payload, '$.payload.customer_id') AS customer, "
                  "CAST(JSON_VALUE(payload, '$.payload.total') AS DECIMAL(18,2)) AS total, "
                  "CAST(LEFT(JSON_VALUE(payload, '$.headers.__time_of_recording'), 19) AS DATETIME) AS at "
                  "FROM domain_messages) m WHERE t IN ({0}, {1}) GROUP BY 1, 2",
                  placed, refunded),
      60);
  ExpectCommonClassesAsSql(*c);
  // `--all` with the models file, on an event table that is not the blog's: the declared read
  // model alone (issue 38 part 6; the blog's eight were made, empty, beside it).
  auto name = std::find(args.begin(), args.end(), "orders_per_customer_per_month");
  ASSERT_NE(name, args.end());
  *name = "--all";
  Outcome all = RunRewind(args, Env(o));
  ASSERT_EQ(all.code, 0) << all.err;
  ExpectNoCompiledTables(*c);
  EXPECT_EQ(Count(*c, "SELECT COUNT(*) FROM rewind_checkpoints WHERE projector <> 'orders_per_customer_per_month'"), 0);
}

// Issue 38 part 3: one event type in two streams (evtstore's `events` table: the type inside
// the JSON `event`, a `stream` column), and read models that select their stream with
// `where`: each equals SQL's GROUP BY over its stream alone; the other stream's payloads stay
// in the server (counted as skipped), and a model of both streams, or without a `where`,
// still sees every event it reads.
TEST(Frameworks, AReadModelSelectsItsStreamWithWhere) {
  ConnectionOptions o = FreshDatabase("rewind_test_fw_where");
  auto c = UtcConnection(o);
  ASSERT_TRUE(c->Execute(R"sql(
    CREATE TABLE events (
      position BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
      stream VARCHAR(255) NOT NULL, aggregate_id VARCHAR(255) NOT NULL, version INT NOT NULL,
      timestamp DATETIME NOT NULL, event TEXT NOT NULL,
      KEY (stream, aggregate_id, version)
    ) DEFAULT CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci)sql").ok());
  std::mt19937 rng(38);
  std::vector<std::string> rows;
  for (int n = 0; n < 3000; ++n) {
    // Two streams, another that differs from one in case only, and one no model selects.
    const std::string stream = n % 7 == 0   ? "Accounts"
                               : n % 5 == 0 ? "payments"
                                            : (std::uniform_int_distribution<int>(0, 1)(rng) ? "accounts" : "customers");
    const std::string type = n % 3 == 0 ? "closed" : "opened";
    const std::string id = fmt::format("id-{}", std::uniform_int_distribution<int>(0, 40)(rng));
    rows.push_back(fmt::format("({}, {}, {}, '2024-03-01 10:00:00', {})", c->Quote(stream), c->Quote(id), n,
                               c->Quote(fmt::format(R"({{"type":"{}","amount":{}}})", type, n % 50))));
  }
  InsertRows(*c, "INSERT INTO events (stream, aggregate_id, version, timestamp, event) VALUES", rows);
  const std::string models = ::testing::TempDir() + "/rewind_where.toml";
  std::ofstream(models) << R"toml(
[[read_model]]
name   = "account_closures"
events = ["closed"]
where  = { stream = "accounts" }
key    = [ { column = "account_id", field = "aggregate_id" } ]
values = [ { column = "closures", op = "count" }, { column = "amount", op = "sum", path = "amount", type = "bigint" } ]

[[read_model]]
name   = "closures_of_both"
events = ["closed"]
where  = { stream = ["accounts", "customers"] }
key    = [ { column = "stream", field = "stream" } ]
values = [ { column = "closures", op = "count" } ]

[[read_model]]
name   = "openings"
events = ["opened"]
key    = [ { column = "stream", field = "stream" } ]
values = [ { column = "openings", op = "count" } ]
)toml";
  const std::string stats = ::testing::TempDir() + "/rewind_where.json";
  const std::vector<std::string> replay = {"replay", "--all", "--models", models, "--events-table", "events",
                                           "--id-column", "position", "--type-path", "type", "--payload-column",
                                           "event", "--quiet"};
  std::vector<std::string> with_stats = replay;
  with_stats.insert(with_stats.end(), {"--stats-json", stats});
  Outcome run = RunRewind(with_stats, Env(o));
  ASSERT_EQ(run.code, 0) << run.err;
  ExpectNoCompiledTables(*c);
  const std::string type = "JSON_VALUE(event, '$.type')";
  ExpectSameRows(*c, "SELECT account_id, closures, amount FROM account_closures",
                 fmt::format("SELECT aggregate_id, COUNT(*), SUM(CAST(JSON_VALUE(event, '$.amount') AS SIGNED)) FROM events WHERE {} = "
                             "'closed' AND BINARY stream = 'accounts' GROUP BY 1",
                             type),
                 30);
  ExpectSameRows(*c, "SELECT stream, closures FROM closures_of_both",
                 fmt::format("SELECT stream, COUNT(*) FROM events WHERE {} = 'closed' AND BINARY stream IN ('accounts', "
                             "'customers') GROUP BY BINARY stream",
                             type),
                 2);
  ExpectSameRows(*c, "SELECT stream, openings FROM openings",
                 fmt::format("SELECT stream, COUNT(*) FROM events WHERE {} = 'opened' GROUP BY BINARY stream", type), 4);
  // What the server kept back: the closures of no selected stream, payments (its equality is
  // its collation's: 'Accounts' comes, and rewind's own comparison, byte for byte, leaves it).
  std::ifstream in(stats);
  const nlohmann::json j = nlohmann::json::parse(in);
  const int64_t kept_back = Count(*c, fmt::format("SELECT COUNT(*) FROM events WHERE {} = 'closed' AND stream = 'payments'", type));
  EXPECT_GT(kept_back, 50);
  EXPECT_EQ(j["skipped"].get<int64_t>(), kept_back);
  // A value that is not a column of the event table is refused before any work.
  std::ofstream(models) << R"toml(
[[read_model]]
name   = "account_closures"
events = ["closed"]
where  = { no_such_column = "x" }
key    = [ { column = "account_id", field = "aggregate_id" } ]
values = [ { column = "closures", op = "count" } ]
)toml";
  Outcome bad = RunRewind(replay, Env(o));
  EXPECT_NE(bad.code, 0);
  EXPECT_NE(bad.err.find("no_such_column"), std::string::npos) << bad.err;
}

}  // namespace
}  // namespace rw
