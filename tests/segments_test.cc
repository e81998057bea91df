// One declared read model built by N builders, one segment of its keys each (issue 39 item
// 3): `rewind replay NAME --build-only --segment I/N` run as separate processes of the
// real binary, one killed (-9) mid-build and taken over with --resume, then one
// `rewind replay NAME --resume` merging the segments and swapping; the live table checked
// against the server's own GROUP BY over the event table (never against rewind). And the
// refusals: a compiled read model, a swap missing a segment, a second builder of a
// segment, segments of another count, --segment without --build-only or out of range.
#include <fmt/core.h>
#include <gtest/gtest.h>

#include <csignal>
#include <fstream>

#include "scripts/generate/event_generator.h"
#include "tests/rewind_process.h"
#include "tests/test_db.h"

namespace rw {
namespace {

using namespace rw::testing;

constexpr const char* kModel = "revenue_per_customer";

// The declaration: every op that folds per key, over one event class.
std::string ModelsFile() {
  const std::string path = ::testing::TempDir() + "/rewind_segments.toml";
  std::ofstream(path) << R"([[read_model]]
name   = "revenue_per_customer"
events = ['Shop\OrderPlaced']
key    = [{ column = "customer", path = "customer" }]
values = [
  { column = "orders",      op = "count" },
  { column = "revenue",     op = "sum",  path = "amount", type = "bigint" },
  { column = "smallest",    op = "min",  path = "amount", type = "bigint" },
  { column = "largest",     op = "max",  path = "amount", type = "bigint" },
  { column = "last_amount", op = "last", path = "amount", type = "bigint" },
]

[[read_model]]
name   = "orders_per_amount"
events = ['Shop\OrderPlaced']
key    = [{ column = "amount", path = "amount", type = "bigint" }]
values = [{ column = "orders", op = "count" }]
)";
  return path;
}

// Appends `n` events: orders of 300 customers with amounts from a fixed LCG (`seed`), a
// few events of another class, then deletes some ids (holes).
void Append(Connection& c, uint64_t n, uint64_t seed) {
  uint64_t x = seed;
  const auto next = [&] { return (x = x * 6364136223846793005ull + 1442695040888963407ull) >> 33; };
  std::string sql;
  for (uint64_t i = 0; i < n; ++i) {
    const bool other = next() % 20 == 0;
    sql += fmt::format("{}(UUID(), '{}', '{{\"customer\":\"c{}\",\"amount\":{}}}', '2024-01-01 00:00:00')",
                       sql.empty() ? "INSERT INTO stored_events (uuid, eventClass, payload, createdAt) VALUES " : ", ",
                       other ? "Shop\\\\Other" : "Shop\\\\OrderPlaced", next() % 300,
                       static_cast<int64_t>(next() % 100'000) - 20'000);
    if ((i + 1) % 1000 == 0 || i + 1 == n) {
      ASSERT_TRUE(c.Execute(sql).ok());
      sql.clear();
    }
  }
  ASSERT_TRUE(c.Execute("DELETE FROM stored_events WHERE id % 11 = 4 AND id > (SELECT MAX(id) FROM "
                        "(SELECT id FROM stored_events) m) - " + std::to_string(n)).ok());
}

ConnectionOptions Events(const std::string& db, uint64_t n) {
  ConnectionOptions o = FreshDatabase(db);
  auto c = Connect(o);
  EXPECT_TRUE(c && c->Execute(EventTableDdl("stored_events")).ok());
  if (c) Append(*c, n, 17);
  return o;
}

// The live table's rows, and the server's computation of them from the event table.
std::vector<std::string> Live(Connection& c) {
  return SortedRows(c, "SELECT customer, orders, revenue, smallest, largest, last_amount FROM revenue_per_customer");
}
std::vector<std::string> Reference(Connection& c) {
  return SortedRows(
      c, "SELECT g.customer, g.n, g.s, g.mn, g.mx, CAST(JSON_VALUE(l.payload, '$.amount') AS SIGNED) FROM "
         "(SELECT JSON_VALUE(payload, '$.customer') AS customer, COUNT(*) AS n, "
         "SUM(CAST(JSON_VALUE(payload, '$.amount') AS SIGNED)) AS s, "
         "MIN(CAST(JSON_VALUE(payload, '$.amount') AS SIGNED)) AS mn, "
         "MAX(CAST(JSON_VALUE(payload, '$.amount') AS SIGNED)) AS mx, MAX(id) AS last_id "
         "FROM stored_events WHERE eventClass = 'Shop\\\\OrderPlaced' AND JSON_VALUE(payload, '$.customer') IS NOT "
         "NULL AND JSON_VALUE(payload, '$.amount') REGEXP '^-?[0-9]+$' GROUP BY 1) g "
         "JOIN stored_events l ON l.id = g.last_id");
}

std::vector<std::string> Segment(const std::string& models, const std::string& segment,
                                 std::vector<std::string> more = {}) {
  std::vector<std::string> args{"replay", kModel, "--models", models, "--build-only", "--segment", segment};
  args.insert(args.end(), more.begin(), more.end());
  return args;
}
std::vector<std::string> Swap(const std::string& models) {
  return {"replay", kModel, "--models", models, "--resume", "--quiet"};
}

int64_t Tables(Connection& c, const std::string& like) {
  return Count(c, "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME "
                  "LIKE '" + like + "'");
}

TEST(Segments, ThreeBuildersTwoAtOnceThenOneSwapMergesThemExactly) {
  const std::string models = ModelsFile();
  ConnectionOptions o = Events("rewind_test_segments", 30'000);
  auto c = Connect(o);
  ASSERT_TRUE(c);
  // Events that fail: 5 without a key (segment 0 counts them), 2 that are no JSON (the
  // decoder's: segment 0 counts them), 1 whose key is known and amount is not a number (its
  // key's segment counts it). Each once over the segments: 8.
  ASSERT_TRUE(c->Execute("INSERT INTO stored_events (uuid, eventClass, payload, createdAt) SELECT UUID(), "
                         "'Shop\\\\OrderPlaced', p, '2024-01-01 00:00:00' FROM (SELECT '{\"amount\":5}' AS p UNION ALL "
                         "SELECT '{\"amount\":6}' UNION ALL SELECT '{\"amount\":7}' UNION ALL SELECT '{\"amount\":8}' "
                         "UNION ALL SELECT '{\"amount\":9}' UNION ALL SELECT '<html>' UNION ALL SELECT 'cut' UNION ALL "
                         "SELECT '{\"customer\":\"c1\",\"amount\":\"lots\"}') bad").ok());
  Append(*c, 1'000, 19);
  {
    Subprocess a(Rewind(Segment(models, "0/3", {"--quiet", "--flush-every", "3000"})), Env(o));
    Subprocess b(Rewind(Segment(models, "1/3", {"--quiet", "--flush-every", "3000"})), Env(o));
    EXPECT_EQ(a.Wait(), 3) << a.err();  // built, with failures recorded
    EXPECT_EQ(b.Wait(), 3) << b.err();
  }
  Append(*c, 2'000, 23);  // the application writes between the builders
  Outcome third = RunRewind(Segment(models, "2/3", {"--quiet"}), Env(o));
  ASSERT_EQ(third.code, 3) << third.err;
  EXPECT_EQ(Tables(*c, "revenue\\_per\\_customer\\_\\_rewind\\_seg_of3"), 3);
  // Each segment holds only its keys: together every customer once.
  EXPECT_EQ(Count(*c, "SELECT (SELECT COUNT(*) FROM revenue_per_customer__rewind_seg0of3) + (SELECT COUNT(*) FROM "
                      "revenue_per_customer__rewind_seg1of3) + (SELECT COUNT(*) FROM "
                      "revenue_per_customer__rewind_seg2of3)"),
            static_cast<int64_t>(Reference(*c).size()));
  EXPECT_GT(Count(*c, "SELECT COUNT(*) FROM revenue_per_customer__rewind_seg0of3"), 0);
  Append(*c, 1'500, 29);  // and between the last builder and the swap: the catch-up takes them

  Outcome swap = RunRewind(Swap(models), Env(o));
  ASSERT_EQ(swap.code, 3) << swap.err;  // swapped in, with the failures recorded
  EXPECT_NE(swap.err.find("merged its 3 segments into revenue_per_customer__rewind_new"), std::string::npos)
      << swap.err;
  EXPECT_EQ(Live(*c), Reference(*c));
  EXPECT_EQ(Tables(*c, "%\\_\\_rewind\\_%"), 0);
  // Every event of the class counted once (the checkpoint's events_applied counts the events
  // a read model applied, its failed ones apart in failed_events, as a whole build's does;
  // each segment was given only its own keys' events); failed: the 8, once; their failure
  // records: one per event, in the live run's.
  EXPECT_EQ(Count(*c, "SELECT events_applied FROM rewind_checkpoints WHERE target_table = 'revenue_per_customer'"),
            Count(*c, "SELECT COUNT(*) FROM stored_events WHERE eventClass = 'Shop\\\\OrderPlaced'") - 8);
  EXPECT_EQ(Count(*c, "SELECT failed_events FROM rewind_checkpoints WHERE target_table = 'revenue_per_customer'"), 8);
  EXPECT_EQ(Count(*c, "SELECT COUNT(DISTINCT event_id) FROM rewind_failures f JOIN rewind_checkpoints k ON f.run_id = "
                      "k.run_id WHERE k.target_table = 'revenue_per_customer'"),
            8);
  EXPECT_EQ(Count(*c, "SELECT COUNT(*) FROM rewind_failures f JOIN rewind_checkpoints k ON f.run_id = k.run_id "
                      "WHERE k.target_table = 'revenue_per_customer'"),
            8);
  EXPECT_EQ(Count(*c, "SELECT COUNT(*) FROM rewind_checkpoints WHERE target_table LIKE '%rewind\\_seg%'"), 0);
}

TEST(Segments, AKilledSegmentBuilderIsTakenOverThenTheSwapIsExact) {
  const std::string models = ModelsFile();
  ConnectionOptions o = Events("rewind_test_segments_kill", 30'000);
  auto c = Connect(o);
  ASSERT_TRUE(c);
  ASSERT_EQ(RunRewind(Segment(models, "0/3", {"--quiet"}), Env(o)).code, 0);
  ASSERT_EQ(RunRewind(Segment(models, "2/3", {"--quiet"}), Env(o)).code, 0);
  {
    std::vector<std::string> env = Env(o);
    env.push_back("REWIND_FAULT=mid-flush:2");
    Subprocess one(Rewind(Segment(models, "1/3", {"--quiet", "--flush-every", "2000", "--batch-size", "1000"})),
                   env);
    ASSERT_TRUE(one.WaitFor("fault point mid-flush reached", 120)) << one.err();
    // A segment held by a live builder is refused to a second one.
    Outcome second = RunRewind(Segment(models, "1/3", {"--quiet"}), Env(o));
    EXPECT_EQ(second.code, 1) << second.err;
    EXPECT_NE(second.err.find("is already rebuilding revenue_per_customer__rewind_seg1of3"), std::string::npos)
        << second.err;
    // And a swap refuses to merge while it is being built.
    Outcome early = RunRewind(Swap(models), Env(o));
    EXPECT_EQ(early.code, 1) << early.err;
    EXPECT_NE(early.err.find("segment(s) 1/3 not complete"), std::string::npos) << early.err;
    one.Signal(SIGKILL);
    EXPECT_EQ(one.Wait(), 128 + SIGKILL);
  }
  Append(*c, 1'000, 31);
  Outcome taken = RunRewind(Segment(models, "1/3", {"--resume", "--quiet"}), Env(o));
  ASSERT_EQ(taken.code, 0) << taken.err;
  EXPECT_NE(taken.err.find("revenue_per_customer resumes after event"), std::string::npos) << taken.err;
  Outcome swap = RunRewind(Swap(models), Env(o));
  ASSERT_EQ(swap.code, 0) << swap.err;
  EXPECT_EQ(Live(*c), Reference(*c));
  EXPECT_EQ(Tables(*c, "%\\_\\_rewind\\_%"), 0);
}

TEST(Segments, Refusals) {
  const std::string models = ModelsFile();
  ConnectionOptions o = Events("rewind_test_segments_refused", 5'000);
  auto c = Connect(o);
  ASSERT_TRUE(c);
  // A live table the application reads: a whole rebuild's, then more events.
  ASSERT_EQ(RunRewind({"replay", kModel, "--models", models, "--quiet"}, Env(o)).code, 0);
  Append(*c, 500, 37);
  const std::vector<std::string> live = Live(*c);
  ASSERT_NE(live, Reference(*c));

  // A compiled read model is not split, also beside a declared one: nothing is made.
  Outcome compiled = RunRewind({"replay", kModel, "visits_per_day", "--models", models, "--build-only",
                                "--segment", "0/2", "--quiet"},
                               Env(o));
  EXPECT_EQ(compiled.code, 1) << compiled.err;
  EXPECT_NE(compiled.err.find("visits_per_day is a compiled read model"), std::string::npos) << compiled.err;
  EXPECT_NE(compiled.err.find("cannot be split by key"), std::string::npos) << compiled.err;
  EXPECT_EQ(Tables(*c, "%\\_\\_rewind\\_%"), 0);

  // The option's own checks.
  for (const auto& [args, why] : std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{"replay", kModel, "--models", models, "--segment", "0/3"}, "it needs --build-only"},
           {Segment(models, "3/3"), "I must be below N"},
           {Segment(models, "0/0"), "N must be between 1 and 64"},
           {Segment(models, "0/65"), "N must be between 1 and 64"},
           {Segment(models, "1"), "--segment expects I/N"}}) {
    Outcome bad = RunRewind(args, Env(o));
    EXPECT_EQ(bad.code, 2) << bad.err;
    EXPECT_NE(bad.err.find(why), std::string::npos) << bad.err;
  }

  // A swap with a segment missing names it and what to run, and changes nothing.
  ASSERT_EQ(RunRewind(Segment(models, "0/3", {"--quiet"}), Env(o)).code, 0);
  ASSERT_EQ(RunRewind(Segment(models, "2/3", {"--quiet"}), Env(o)).code, 0);
  const int64_t checkpoints = Count(*c, "SELECT COUNT(*) FROM rewind_checkpoints");
  Outcome missing = RunRewind(Swap(models), Env(o));
  EXPECT_EQ(missing.code, 1) << missing.err;
  EXPECT_NE(missing.err.find("segment(s) 1/3 missing"), std::string::npos) << missing.err;
  EXPECT_NE(missing.err.find("rewind replay revenue_per_customer --build-only --segment 1/3"), std::string::npos)
      << missing.err;
  EXPECT_EQ(Live(*c), live);
  EXPECT_EQ(Tables(*c, "revenue\\_per\\_customer\\_\\_rewind\\_seg_of3"), 2);
  EXPECT_EQ(Tables(*c, "revenue\\_per\\_customer\\_\\_rewind\\_new"), 0);
  EXPECT_EQ(Count(*c, "SELECT COUNT(*) FROM rewind_checkpoints"), checkpoints);

  // Segments of another count do not mix with them.
  Outcome other = RunRewind(Segment(models, "1/2", {"--quiet"}), Env(o));
  EXPECT_EQ(other.code, 1) << other.err;
  EXPECT_NE(other.err.find("is being built in 3 segments"), std::string::npos) << other.err;
  EXPECT_EQ(Tables(*c, "revenue\\_per\\_customer\\_\\_rewind\\_seg_of2"), 0);
  EXPECT_EQ(Live(*c), live);

  // The missing one built, the swap merges and is exact.
  ASSERT_EQ(RunRewind(Segment(models, "1/3", {"--quiet"}), Env(o)).code, 0);
  Outcome swap = RunRewind(Swap(models), Env(o));
  ASSERT_EQ(swap.code, 0) << swap.err;
  EXPECT_EQ(Live(*c), Reference(*c));
}

// --segment splits every declared read model the run names; one swap merges each and swaps
// them in one cut-over.
TEST(Segments, EveryReadModelOfARunIsSplitAndOneSwapMergesEach) {
  const std::string models = ModelsFile();
  ConnectionOptions o = Events("rewind_test_segments_two", 6'000);
  auto c = Connect(o);
  ASSERT_TRUE(c);
  for (const char* segment : {"0/2", "1/2"}) {
    Outcome built = RunRewind({"replay", kModel, "orders_per_amount", "--models", models, "--build-only", "--segment",
                               segment, "--quiet"},
                              Env(o));
    ASSERT_EQ(built.code, 0) << built.err;
  }
  EXPECT_EQ(Tables(*c, "%\\_\\_rewind\\_seg_of2"), 4);
  Append(*c, 300, 41);
  Outcome swap = RunRewind({"replay", kModel, "orders_per_amount", "--models", models, "--resume", "--quiet"}, Env(o));
  ASSERT_EQ(swap.code, 0) << swap.err;
  EXPECT_NE(swap.err.find("revenue_per_customer: merged its 2 segments"), std::string::npos) << swap.err;
  EXPECT_NE(swap.err.find("orders_per_amount: merged its 2 segments"), std::string::npos) << swap.err;
  EXPECT_EQ(Live(*c), Reference(*c));
  EXPECT_EQ(SortedRows(*c, "SELECT amount, orders FROM orders_per_amount"),
            SortedRows(*c, "SELECT CAST(JSON_VALUE(payload, '$.amount') AS SIGNED), COUNT(*) FROM stored_events WHERE "
                           "eventClass = 'Shop\\\\OrderPlaced' GROUP BY 1"));
  EXPECT_EQ(Tables(*c, "%\\_\\_rewind\\_%"), 0);
}

// A rebuild without --resume starts afresh: it drops the segment builds (here of another
// count, abandoned), after which any count may be begun again.
TEST(Segments, ARebuildWithoutResumeDropsTheSegmentBuilds) {
  const std::string models = ModelsFile();
  ConnectionOptions o = Events("rewind_test_segments_dropped", 3'000);
  auto c = Connect(o);
  ASSERT_TRUE(c);
  ASSERT_EQ(RunRewind(Segment(models, "0/2", {"--quiet"}), Env(o)).code, 0);
  ASSERT_EQ(RunRewind(Segment(models, "1/3", {"--quiet"}), Env(o)).code, 1);  // another count
  Outcome whole = RunRewind({"replay", kModel, "--models", models, "--quiet"}, Env(o));
  ASSERT_EQ(whole.code, 0) << whole.err;
  EXPECT_NE(whole.err.find("its segment builds (0/2) are dropped"), std::string::npos) << whole.err;
  EXPECT_EQ(Tables(*c, "%\\_\\_rewind\\_%"), 0);
  EXPECT_EQ(Count(*c, "SELECT COUNT(*) FROM rewind_checkpoints WHERE target_table LIKE '%rewind\\_seg%'"), 0);
  EXPECT_EQ(Live(*c), Reference(*c));
  EXPECT_EQ(RunRewind(Segment(models, "1/3", {"--quiet"}), Env(o)).code, 0);
}

}  // namespace
}  // namespace rw
