// A real client (issue 38, part 7): an application written with the published library
// evtstore 12.0.1 and its Knex provider on MariaDB (tests/client/app.js, installed by
// scripts/setup from the npm registry), its event table and bookmarks made by the library's
// migrate(), its read-model table by its own migration, filled by the library's own handler.
// rewind rebuilds that table with config/examples/evtstore.toml, in the table's own shape,
// while the application appends, hands the position back at the swap, and the library's
// handler goes on from there: the table then equals the library's own rebuild and a GROUP BY
// of the server over the events, and no event was applied twice or skipped.
#include <gtest/gtest.h>

#include <fmt/core.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <regex>
#include <sstream>

#include "rewind_process.h"
#include "subprocess.h"
#include "test_db.h"

namespace rw {
namespace {

using namespace rw::testing;

std::vector<std::string> App(std::vector<std::string> args) { return Client("app.js", std::move(args)); }

// Runs the application's command to its end; its stdout (one JSON line) or the test fails.
std::string RunApp(const ConnectionOptions& o, const std::vector<std::string>& args) {
  const std::string out_file = ::testing::TempDir() + "/rewind_app_out_" + std::to_string(getpid());
  Subprocess p(App(args), ClientEnv(o), out_file);
  const int code = p.Wait();
  std::ifstream in(out_file);
  std::string out((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(code, 0) << args[0] << ": " << p.err() << out;
  return out;
}

// The balances the events give, by the server: per account of the stream "accounts", its
// deposits less its withdrawals, and "closed" once it has a closed event.
const char* kReference = R"sql(
  SELECT aggregate_id,
         CAST(COALESCE(SUM(CASE JSON_VALUE(event, '$.type') WHEN 'deposited' THEN 1 WHEN 'withdrawn' THEN -1 END *
                           CAST(JSON_VALUE(event, '$.amount') AS DECIMAL(14,2))), 0) AS DECIMAL(14,2)),
         IF(SUM(JSON_VALUE(event, '$.type') = 'closed') > 0, 'closed', 'open')
  FROM events WHERE stream = 'accounts' GROUP BY aggregate_id)sql";

std::string ShapeOf(Connection& c, const std::string& table) {
  auto r = c.Query("SHOW CREATE TABLE " + QuoteIdentifier(table));
  EXPECT_TRUE(r.ok()) << r.status().message();
  return r.ok() && !r->rows.empty() ? r->rows[0][1].value_or("") : "";
}

std::vector<std::string> ExampleCommand() {
  return {"replay", "--all", "--models", std::string(REWIND_SOURCE_DIR) + "/config/examples/evtstore.toml",
          "--events-table", "events", "--id-column", "position", "--type-path", "type", "--payload-column",
          "event", "--time-column", "timestamp", "--quiet"};
}

TEST(Evtstore, RewindRebuildsTheApplicationsTableAndHandsItBackToTheLibrarysHandler) {
  ASSERT_TRUE(std::filesystem::exists(kClient + "/node_modules/evtstore/package.json"))
      << "the test client is not installed: run scripts/setup (npm ci in tests/client)";
  ConnectionOptions o = FreshDatabase("rewind_test_evtstore");
  auto c = Connect(o);
  RunApp(o, {"migrate"});
  RunApp(o, {"append", "3000", "4", "38"});  // four writers: version conflicts, ids with holes
  RunApp(o, {"project"});                    // the library's handler, to the end
  const std::vector<std::string> library = SortedRows(*c, "SELECT account_id, balance, status FROM account_balances");
  ASSERT_EQ(library, SortedRows(*c, kReference));
  ASSERT_GE(library.size(), 40u);
  EXPECT_GT(Count(*c, "SELECT MAX(position) - COUNT(*) FROM events"), 0);  // holes
  EXPECT_GT(Count(*c, "SELECT COUNT(*) FROM events WHERE stream = 'customers' AND event LIKE '%closed%'"), 0);
  const std::string shape = ShapeOf(*c, "account_balances");

  // rewind, paused before its catch-up while the application appends (its handler paused).
  const std::string pause = PauseFile("evtstore");
  std::vector<std::string> env = Env(o);
  env.push_back("REWIND_FAULT=before-catch-up@" + pause);
  Subprocess rewind(Rewind(ExampleCommand()), env);
  ASSERT_TRUE(rewind.WaitFor("fault point", 120)) << rewind.err();
  RunApp(o, {"append", "500", "4", "39"});
  const int64_t appended_before_swap = Count(*c, "SELECT MAX(position) FROM events");
  // More appends go on through the cut-over.
  const std::string out_file = ::testing::TempDir() + "/rewind_app_append_" + std::to_string(getpid());
  Subprocess appending(App({"append", "3000", "2", "40"}), ClientEnv(o), out_file);
  ASSERT_TRUE(WaitUntil(*c, fmt::format("SELECT MAX(position) > {} FROM events", appended_before_swap), 1, 120));
  Release(pause);
  ASSERT_EQ(rewind.Wait(), 0) << rewind.err();
  ASSERT_EQ(appending.Wait(), 0) << appending.err();
  std::smatch m;
  const std::string err = rewind.err();
  ASSERT_TRUE(std::regex_search(err, m, std::regex("account_balances handed back at event ([0-9]+)"))) << err;
  const int64_t handed = std::stoll(m[1]);
  EXPECT_GE(handed, appended_before_swap);  // what was appended during the rebuild is in it
  EXPECT_EQ(ShapeOf(*c, "account_balances"), shape);
  // The library's handler continues from its bookmark through every later append.
  RunApp(o, {"project"});
  EXPECT_EQ(Count(*c, "SELECT position FROM bookmarks WHERE bookmark = 'account-balances'"),
            Count(*c, "SELECT MAX(position) FROM events WHERE stream = 'accounts'"));
  const std::vector<std::string> continued = SortedRows(*c, "SELECT account_id, balance, status FROM account_balances");
  EXPECT_EQ(continued, SortedRows(*c, kReference));
  // And the library's own rebuild from the first event gives the same rows.
  RunApp(o, {"rebuild"});
  EXPECT_EQ(SortedRows(*c, "SELECT account_id, balance, status FROM account_balances"), continued);
  EXPECT_EQ(ShapeOf(*c, "account_balances"), shape);
}

}  // namespace
}  // namespace rw
