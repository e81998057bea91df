// Declared read models against a real MariaDB: the shop's declarations checked against a
// reference computed here from the generator's facts (never from rewind), the blog's seven
// counters declared in config/blog.toml against their compiled twins, verify, status and
// resume with a changed declaration.
#include <gtest/gtest.h>

#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <fstream>
#include <map>

#include "pipeline/replay/verify.h"
#include "rewind_process.h"
#include "scripts/generate/event_generator.h"
#include "sample/shop_events.h"
#include "subprocess.h"
#include "test_db.h"

namespace rw {
namespace {

using namespace rw::testing;

const std::string kShopModels = std::string(REWIND_SOURCE_DIR) + "/config/shop.toml";
const std::string kBlogModels = std::string(REWIND_SOURCE_DIR) + "/config/blog.toml";
constexpr int kOrders = 3000;

std::string Cents(int64_t c) { return fmt::format("{}{}.{:02d}", c < 0 ? "-" : "", std::abs(c) / 100, std::abs(c) % 100); }

// The Monday of a 'YYYY-MM-DD ...' day, with the standard library's calendar.
std::string MondayOf(const std::string& when) {
  using namespace std::chrono;
  const year_month_day ymd{year{std::stoi(when.substr(0, 4))}, month{static_cast<unsigned>(std::stoi(when.substr(5, 2)))},
                           day{static_cast<unsigned>(std::stoi(when.substr(8, 2)))}};
  const sys_days d{ymd};
  const sys_days monday = d - (weekday{d} - std::chrono::Monday);
  const year_month_day m{monday};
  return fmt::format("{:04d}-{:02d}-{:02d}", static_cast<int>(m.year()), static_cast<unsigned>(m.month()),
                     static_cast<unsigned>(m.day()));
}

class DeclaredTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    options_ = FreshDatabase("rewind_test_declared");
    auto c = Connect(options_);
    ASSERT_TRUE(c);
    ASSERT_TRUE(c->Execute(EventTableDdl("stored_events")).ok());
    events_ = shop::Events(kOrders);
    ASSERT_TRUE(InsertShopEvents(*c, "stored_events", events_).ok());
    // One event that is not JSON: every model reading its class counts it as failed.
    ASSERT_TRUE(c->Execute("INSERT INTO stored_events (uuid, eventClass, payload, createdAt) VALUES "
                           "(UUID(), 'App\\\\Shop\\\\ItemAdded', '<html>', '2024-01-01 00:00:00')").ok());
  }
  static ConnectionOptions options_;
  static std::vector<shop::Event> events_;
};
ConnectionOptions DeclaredTest::options_;
std::vector<shop::Event> DeclaredTest::events_;

TEST_F(DeclaredTest, TheShopsReadModelsEqualAReferenceComputedFromTheFacts) {
  Outcome run = RunRewind({"replay", "--all", "--models", kShopModels, "--quiet"}, Env(options_));
  ASSERT_EQ(run.code, 3) << run.err;  // swapped in, with the bad events recorded
  auto c = Connect(options_);

  // revenue_per_customer_per_month
  struct Revenue {
    int64_t orders = 0, revenue = 0, refunded = 0;
    std::string last_at, status = "NULL";
  };
  std::map<std::pair<std::string, std::string>, Revenue> revenue;
  int64_t revenue_failures = 0;
  for (const shop::Event& e : events_) {
    if (e.event_class != shop::kCreated && e.event_class != shop::kRefunded) continue;
    if (!e.has_customer || e.bad_amount) {
      ++revenue_failures;
      continue;
    }
    Revenue& r = revenue[{e.customer, e.when.substr(0, 7) + "-01"}];
    if (e.event_class == shop::kCreated) {
      ++r.orders;
      r.revenue += e.cents;
    } else {
      r.refunded += e.cents;
      r.status = "refunded";
    }
    r.last_at = std::max(r.last_at, e.when);
  }
  std::vector<std::string> want;
  for (const auto& [k, r] : revenue) {
    want.push_back(fmt::format("{}|{}|{}|{}|{}|{}|{}", k.first, k.second, r.orders, Cents(r.revenue),
                               Cents(r.refunded), r.last_at, r.status));
  }
  std::sort(want.begin(), want.end());
  EXPECT_EQ(SortedRows(*c, "SELECT customer, month, orders, revenue, refunded, last_order_at, status FROM "
                          "revenue_per_customer_per_month"),
            want);

  // order_summary
  struct Summary {
    std::string placed_at = "NULL";
    int64_t items = 0, quantity = 0, total = 0, discount = 0;
    std::optional<int64_t> cheapest;
    std::string first_sku = "NULL", last_sku = "NULL", status = "NULL", confirmed_at = "NULL";
  };
  std::map<int64_t, Summary> orders;
  for (const shop::Event& e : events_) {
    if (e.event_class == shop::kRefunded) continue;  // not among order_summary's events
    Summary& s = orders[e.order];
    if (e.event_class == shop::kCreated) {
      s.placed_at = e.when;
    } else if (e.event_class == shop::kItemAdded) {
      ++s.items;
      s.quantity += e.quantity;
      s.total += e.cents;
      s.cheapest = std::min(s.cheapest.value_or(e.cents), e.cents);
      if (s.first_sku == "NULL") s.first_sku = e.sku;
      s.last_sku = e.sku;
    } else if (e.event_class == shop::kDiscount) {
      s.discount += e.cents;
    } else if (e.event_class == shop::kConfirmed) {
      s.status = "confirmed";
      if (s.confirmed_at == "NULL") s.confirmed_at = e.when;
    }
  }
  want.clear();
  for (const auto& [id, s] : orders) {
    want.push_back(fmt::format("{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}", id, s.placed_at, s.items, s.quantity, Cents(s.total),
                               s.cheapest ? Cents(*s.cheapest) : "NULL", s.first_sku, s.last_sku, Cents(s.discount),
                               s.status, s.confirmed_at));
  }
  std::sort(want.begin(), want.end());
  EXPECT_EQ(SortedRows(*c, "SELECT order_id, placed_at, items, quantity, total, cheapest_line, first_sku, last_sku, "
                          "discount_total, status, confirmed_at FROM order_summary"),
            want);

  // items_per_sku_per_week (its week from the event table's createdAt column)
  std::map<std::pair<std::string, std::string>, std::pair<int64_t, int64_t>> items;
  for (const shop::Event& e : events_) {
    if (e.event_class != shop::kItemAdded) continue;
    auto& v = items[{e.sku, MondayOf(e.created_at)}];
    ++v.first;
    v.second += e.quantity;
  }
  want.clear();
  for (const auto& [k, v] : items) want.push_back(fmt::format("{}|{}|{}|{}", k.first, k.second, v.first, v.second));
  std::sort(want.begin(), want.end());
  EXPECT_EQ(SortedRows(*c, "SELECT sku, week, `lines`, quantity FROM items_per_sku_per_week"), want);

  // Each bad event is recorded once, for the read model it failed in; the payload that is
  // not JSON once, by the decoder.
  EXPECT_EQ(Count(*c, "SELECT COUNT(*) FROM rewind_failures WHERE stage = 'revenue_per_customer_per_month'"),
            revenue_failures);
  EXPECT_GT(revenue_failures, 0);
  EXPECT_EQ(Count(*c, "SELECT COUNT(*) FROM rewind_failures WHERE stage = 'decoder'"), 1);
  EXPECT_EQ(Count(*c, "SELECT COUNT(*) FROM rewind_failures WHERE stage NOT IN ('decoder', "
                      "'revenue_per_customer_per_month')"), 0);
  EXPECT_EQ(Count(*c, "SELECT COUNT(*) FROM rewind_failures WHERE stage = 'revenue_per_customer_per_month' AND "
                      "reason LIKE '%path ''amount''%twelve%'"),
            std::count_if(events_.begin(), events_.end(), [](const shop::Event& e) { return e.bad_amount && e.has_customer; }));

  // verify rebuilds beside them and finds them identical.
  Outcome verify = RunRewind({"verify", "--models", kShopModels, "revenue_per_customer_per_month", "order_summary",
                              "items_per_sku_per_week"}, Env(options_));
  EXPECT_EQ(verify.code, 0) << verify.err << verify.out;
  // list and status know them.
  Outcome list = RunRewind({"list", "--models", kShopModels}, Env(options_));
  EXPECT_NE(list.out.find("order_summary"), std::string::npos) << list.out;
  EXPECT_NE(list.out.find("declared"), std::string::npos);
  Outcome status = RunRewind({"status", "--models", kShopModels}, Env(options_));
  EXPECT_EQ(status.code, 0) << status.err;
  EXPECT_EQ(status.out.find("older declaration"), std::string::npos) << status.out;
}

// The shop's declarations with one changed (another version of order_summary): its file.
std::string ChangedShopModels() {
  std::ifstream in(kShopModels);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string from = R"(column = "cheapest_line",  op = "min")", to = R"(column = "cheapest_line",  op = "max")";
  EXPECT_NE(text.find(from), std::string::npos);
  if (text.find(from) != std::string::npos) text.replace(text.find(from), from.size(), to);
  const std::string changed = ::testing::TempDir() + "/shop-changed.toml";
  std::ofstream(changed) << text;
  return changed;
}

// Issue 53 item 2: conditions on the payload. A `where` on a payload path (negated, a list)
// and values with an `if` of their own (a list, a negated number), against a reference
// computed from the facts.
TEST_F(DeclaredTest, ConditionsOnThePayloadChooseTheEventsAndEachValuesContributions) {
  const std::string models = ::testing::TempDir() + "/shop-conditions.toml";
  std::ofstream(models) << R"([[read_model]]
name   = "lines_but_books"
events = ['App\Shop\ItemAdded']
where  = { "$.sku" = { not = ["book", "poster"] } }
key    = [{ column = "sku", path = "sku" }]
values = [
  { column = "lines", op = "count" },
  { column = "mug_quantity", op = "sum", path = "quantity", type = "bigint", if = { "$.sku" = "mug" } },
  { column = "pens_not_one", op = "count", if = { "$.sku" = ["pen"], "$.quantity" = { not = 1 } } },
]
)";
  Outcome run = RunRewind({"replay", "lines_but_books", "--models", models, "--quiet"}, Env(options_));
  ASSERT_EQ(run.code, 3) << run.err;  // the one ItemAdded that is not JSON (SetUpTestSuite)
  EXPECT_NE(run.err.find("1 event(s) could not be applied"), std::string::npos) << run.err;
  struct Row {
    int64_t lines = 0, mug_quantity = 0, pens_not_one = 0;
  };
  std::map<std::string, Row> rows;
  for (const shop::Event& e : events_) {
    if (e.event_class != shop::kItemAdded || e.sku == "book" || e.sku == "poster") continue;
    Row& r = rows[e.sku];
    ++r.lines;
    if (e.sku == "mug") r.mug_quantity += e.quantity;
    if (e.sku == "pen" && e.quantity != 1) ++r.pens_not_one;
  }
  std::vector<std::string> want;
  for (const auto& [sku, r] : rows) want.push_back(fmt::format("{}|{}|{}|{}", sku, r.lines, r.mug_quantity, r.pens_not_one));
  std::sort(want.begin(), want.end());
  ASSERT_GE(want.size(), 2u);
  auto c = Connect(options_);
  EXPECT_EQ(SortedRows(*c, "SELECT sku, `lines`, mug_quantity, pens_not_one FROM lines_but_books"), want);
  // The conditions are part of the declaration: another value in a list is another version.
  std::ifstream in(models);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  text.replace(text.find(R"(["pen"])"), 7, R"(["pen", "mug"])");
  std::ofstream(models) << text;
  Outcome status = RunRewind({"status", "--models", models, "lines_but_books"}, Env(options_));
  EXPECT_NE(status.out.find("older declaration"), std::string::npos) << status.out << status.err;
}

TEST_F(DeclaredTest, AChangedDeclarationIsRefusedByResumeAndShownByStatus) {
  // 3: swapped in, with the event that is not JSON recorded.
  ASSERT_EQ(RunRewind({"replay", "order_summary", "--models", kShopModels, "--quiet"}, Env(options_)).code, 3);
  const std::string changed = ChangedShopModels();

  Outcome status = RunRewind({"status", "--models", changed}, Env(options_));
  EXPECT_EQ(status.code, 0) << status.err;
  EXPECT_NE(status.out.find("older declaration"), std::string::npos) << status.out;

  // An interrupted build with the first declaration...
  std::vector<std::string> env = Env(options_);
  env.push_back("REWIND_FAULT=before-swap");
  {
    Subprocess run(Rewind({"replay", "order_summary", "--models", kShopModels, "--progress", "plain"}), env);
    ASSERT_TRUE(run.started());
    ASSERT_TRUE(run.WaitFor("fault point", 120)) << run.err();
    run.Signal(SIGKILL);
    EXPECT_EQ(run.Wait(), 128 + SIGKILL);
  }
  // ...is not continued with another.
  Outcome resume = RunRewind({"replay", "order_summary", "--resume", "--models", changed, "--quiet"}, Env(options_));
  EXPECT_NE(resume.code, 0);
  EXPECT_NE(resume.err.find("another declaration"), std::string::npos) << resume.err;
  // With its own declaration it is.
  Outcome same = RunRewind({"replay", "order_summary", "--resume", "--models", kShopModels}, Env(options_));
  EXPECT_EQ(same.code, 3) << same.err;
  EXPECT_NE(same.err.find("order_summary resumes after event"), std::string::npos) << same.err;
}

// Builders on several hosts (--build-only): the one swap takes a complete build only of the
// same declaration.
TEST_F(DeclaredTest, ASwapRefusesACompleteBuildOfAnotherDeclaration) {
  ASSERT_EQ(RunRewind({"replay", "order_summary", "--models", kShopModels, "--build-only", "--quiet"}, Env(options_)).code, 3);
  Outcome other = RunRewind({"replay", "order_summary", "--resume", "--models", ChangedShopModels(), "--quiet"}, Env(options_));
  EXPECT_EQ(other.code, 1) << other.err;
  EXPECT_NE(other.err.find("refuses to continue the complete build (--build-only) of order_summary"), std::string::npos)
      << other.err;
  EXPECT_NE(other.err.find("another declaration"), std::string::npos) << other.err;
  Outcome same = RunRewind({"replay", "order_summary", "--resume", "--models", kShopModels}, Env(options_));
  EXPECT_EQ(same.code, 3) << same.err;
  EXPECT_NE(same.err.find("order_summary resumes after event"), std::string::npos) << same.err;
  EXPECT_NE(same.out.find("rebuilt and swapped in 1 read model(s)"), std::string::npos) << same.out;
}

// A declaration that reads an event-table column the table lacks (`tenantId`).
std::string ModelsReadingAMissingField() {
  const std::string file = ::testing::TempDir() + "/no-such-field.toml";
  std::ofstream(file) << R"toml(
[[read_model]]
name   = "lines_per_tenant"
events = ['App\Shop\ItemAdded']
key    = [{ column = "tenant", field = "tenantId" }]
values = [{ column = "lines", op = "count" }]
)toml";
  return file;
}

TEST_F(DeclaredTest, AFieldTheEventTableLacksIsRefusedBeforeAnyWork) {
  const std::string file = ModelsReadingAMissingField();
  Outcome run = RunRewind({"replay", "lines_per_tenant", "--models", file, "--quiet"}, Env(options_));
  EXPECT_EQ(run.code, 1);
  EXPECT_NE(run.err.find("reads the field 'tenantId', but the event table 'stored_events' has no such column"),
            std::string::npos)
      << run.err;
  auto c = Connect(options_);
  EXPECT_EQ(Count(*c, "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND "
                      "TABLE_NAME LIKE 'lines_per_tenant%'"),
            0);
}

// The dry run makes the real run's checks before work: the same refusal, in its own form.
TEST_F(DeclaredTest, ADryRunRefusesAFieldTheEventTableLacksAsTheRealRunDoes) {
  const std::string file = ModelsReadingAMissingField();
  Outcome dry =
      RunRewind({"replay", "lines_per_tenant", "--models", file, "--dry-run"}, Env(options_));
  EXPECT_EQ(dry.code, 1) << dry.err;
  EXPECT_NE(dry.out.find("could NOT start"), std::string::npos) << dry.out;
  EXPECT_NE(
      dry.out.find(
          "reads the field 'tenantId', but the event table 'stored_events' has no such column"),
      std::string::npos)
      << dry.out;
}

TEST(DeclaredFollow, FollowKeepsADeclaredReadModelExact) {
  ConnectionOptions o = FreshDatabase("rewind_test_declared_follow");
  auto c = Connect(o);
  ASSERT_TRUE(c);
  ASSERT_TRUE(c->Execute(EventTableDdl("stored_events")).ok());
  auto insert = [&](const std::string& cls, const std::string& payload) {
    std::string sql = "INSERT INTO stored_events (uuid, eventClass, payload, createdAt) VALUES (UUID(), ";
    c->AppendQuoted(sql, cls);
    sql += ", ";
    c->AppendQuoted(sql, payload);
    sql += ", '2024-05-01 10:00:00')";
    ASSERT_TRUE(c->Execute(sql).ok());
  };
  insert(shop::kCreated, R"({"orderId":1,"customer":{"id":"anna"},"placedAt":"2024-05-01T10:00:00Z","amount":10})");
  insert(shop::kItemAdded, R"({"orderId":1,"sku":"pen","quantity":2,"lineTotal":"3.50"})");
  ReplayOptions ro;
  ro.connection = o;
  ro.models_file = kShopModels;
  ro.projectors = {"order_summary"};
  Follower follower(ro);
  ASSERT_TRUE(follower.following());
  // Appended while it follows: another item and a confirmation of order 1, and a new order.
  insert(shop::kItemAdded, R"({"orderId":1,"sku":"mug","quantity":1,"lineTotal":0.25})");
  insert(shop::kConfirmed, R"({"orderId":1,"confirmedAt":"2024-05-02T09:00:00+02:00"})");
  insert(shop::kCreated, R"({"orderId":2,"customer":{"id":"zoë"},"placedAt":"2024-05-03T10:00:00Z","amount":"1.10"})");
  EXPECT_TRUE(WaitUntil(*c, "SELECT COUNT(*) FROM order_summary WHERE order_id = 2", 1));
  EXPECT_TRUE(WaitUntil(*c, "SELECT COUNT(*) FROM order_summary WHERE order_id = 1 AND status = 'confirmed'", 1));
  const ReplaySummary& sum = follower.Stop();
  EXPECT_TRUE(sum.status.ok()) << sum.status.message();
  EXPECT_EQ(SortedRows(*c, "SELECT order_id, placed_at, items, quantity, total, cheapest_line, first_sku, last_sku, "
                          "discount_total, status, confirmed_at FROM order_summary"),
            (std::vector<std::string>{
                "1|2024-05-01 10:00:00|2|3|3.75|0.25|pen|mug|0.00|confirmed|2024-05-02 09:00:00",
                "2|2024-05-03 10:00:00|0|0|0.00|NULL|NULL|NULL|0.00|NULL|NULL",
            }));
}

TEST(DeclaredBlog, TheBlogsDeclaredCountersEqualTheCompiledOnes) {
  // Generated blog events with odd URLs and bad payloads of every kind.
  const ConnectionOptions o = Store("rewind_test_declared_blog", 60000, 101);
  Outcome run = RunRewind({"replay", "--all", "--models", kBlogModels, "--quiet"}, Env(o));
  ASSERT_EQ(run.code, 3) << run.err;
  auto c = Connect(o);
  const char* const kTwins[] = {"visits_per_minute", "visits_per_hour", "visits_per_day", "visits_per_month",
                                "visits_per_year", "visits_per_post_per_day", "visits_per_post_per_week"};
  for (const char* name : kTwins) {
    SCOPED_TRACE(name);
    const TableSpec spec = MakeProjector(name)->table();
    auto diff = CompareTables(*c, spec, name, std::string("declared_") + name);
    ASSERT_TRUE(diff.ok()) << diff.status().message();
    EXPECT_TRUE(diff->identical()) << ::testing::PrintToString(diff->examples);
    EXPECT_GT(diff->live_rows, 0u);
    EXPECT_EQ(diff->live_rows, diff->rebuilt_rows);
    EXPECT_EQ(diff->live_total, diff->rebuilt_total);
  }
}

}  // namespace
}  // namespace rw
