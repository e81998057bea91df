// Integration: `replay --all` on generated events (odd URLs, bad payloads, other event
// classes, both encodings) against the private MariaDB, every read model compared with
// an independent computation; plus the rebuild-beside-and-swap contract and the errors
// a user meets first.
#include <fmt/core.h>
#include <gtest/gtest.h>

#include "pipeline/replay/replay.h"
#include "tests/test_db.h"

namespace rw {
namespace {

using namespace rw::testing;

constexpr uint64_t kEvents = 120'000;

class ReplayTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    GeneratorOptions g;
    g.events = kEvents;
    g.bad_every = 1000;     // 120 bad payloads of nine kinds
    g.odd_url_every = 101;  // quotes, backslashes, emoji, accents, 2,000 bytes...
    options_ = LoadFixture("rewind_test_replay", g);
  }

  static ReplaySummary Run(ReplayOptions o, std::vector<std::unique_ptr<Projector>> projectors = {}) {
    o.connection = options_;
    o.progress = ProgressMode::kQuiet;
    const RunSpec spec = SpecOf(o, projectors.empty() ? RunSpec::Selection::kRequired : RunSpec::Selection::kNone);
    if (projectors.empty()) projectors = spec.MakeSelected();
    std::atomic<bool> stop{false};
    return Replay(spec, std::move(projectors), stop);
  }

  static ReplayOptions All() {
    ReplayOptions o;
    o.all = true;
    return o;
  }

  static ConnectionOptions options_;
};
ConnectionOptions ReplayTest::options_;

TEST_F(ReplayTest, EveryReadModelEqualsAnIndependentComputation) {
  ReplayOptions o = All();
  o.batch_size = 3000;           // many batches: parallel decoding reorders them
  o.flush_every_events = 25000;  // several flushes: deltas must add up
  ReplaySummary sum = Run(o);
  ASSERT_TRUE(sum.status.ok()) << sum.status.message();
  EXPECT_TRUE(sum.swapped);
  auto c = Connect(options_);
  ASSERT_TRUE(c);

  const int64_t page_visits = Count(*c, "SELECT COUNT(*) FROM stored_events WHERE eventClass = 'App\\\\Analytics\\\\PageVisited'");
  const int64_t valid = Count(*c, "SELECT COUNT(*) FROM ref_visits WHERE url_ok AND ip_ok AND ua_ok");
  const std::map<std::string, int64_t> usable = {
      {"visits_per_post_per_day", Count(*c, "SELECT COUNT(*) FROM ref_visits WHERE url_ok")},
      {"visits_per_post_per_week", Count(*c, "SELECT COUNT(*) FROM ref_visits WHERE url_ok")},
      {"sessions_per_day", Count(*c, "SELECT COUNT(*) FROM ref_visits WHERE ip_ok AND ua_ok")}};
  const int64_t with_time = Count(*c, "SELECT COUNT(*) FROM ref_visits");
  EXPECT_EQ(sum.events_read, kEvents);
  EXPECT_EQ(static_cast<int64_t>(sum.skipped), static_cast<int64_t>(kEvents) - page_visits);
  EXPECT_GT(sum.skipped, 0u);
  EXPECT_EQ(static_cast<int64_t>(sum.failures), page_visits - valid);
  EXPECT_EQ(sum.failures, 120u);
  EXPECT_EQ(sum.ExitCode(), 3);  // rebuilt, but some events failed
  // Each read model applied exactly the events that have the fields it needs: an event
  // with a broken url still counts in visits_per_day.
  EXPECT_GT(with_time, valid);
  for (const ProjectorSummary& p : sum.projectors) {
    const int64_t want = usable.count(p.name) ? usable.at(p.name) : with_time;
    EXPECT_EQ(static_cast<int64_t>(p.events_applied), want) << p.name;
    EXPECT_GT(p.flushes, 1u) << p.name;
  }
  // rewind computes the URL tables' key hash itself; the server must agree on every URL
  // (quotes, backslashes, emoji, 2,000 bytes...), or the application's own writes, which
  // get the hash from the column's DEFAULT, would not find rewind's rows.
  for (const char* t : {"visits_per_post_per_day", "visits_per_post_per_week"}) {
    EXPECT_EQ(Count(*c, fmt::format("SELECT COUNT(*) FROM {} WHERE uri_hash <> UNHEX(SHA2(uri, 256))", t)), 0) << t;
    EXPECT_GT(Count(*c, fmt::format("SELECT COUNT(*) FROM {}", t)), 0) << t;
  }
  {  // The application's own projector, writing after the swap as it always did.
    ASSERT_TRUE(c->Execute("DROP TABLE IF EXISTS app_writes").ok());
    ASSERT_TRUE(c->Execute("CREATE TABLE app_writes LIKE visits_per_post_per_day").ok());
    ASSERT_TRUE(c->Execute("INSERT INTO app_writes SELECT * FROM visits_per_post_per_day").ok());
    Result<Rows> longest = c->Query(
        "SELECT uri, `date`, `count` FROM app_writes ORDER BY LENGTH(uri) DESC, uri LIMIT 1");
    ASSERT_TRUE(longest.ok() && longest->rows.size() == 1);
    const std::string uri = *longest->rows[0][0], date = *longest->rows[0][1];
    const int64_t before_rows = Count(*c, "SELECT COUNT(*) FROM app_writes");
    for (const std::string& d : {date, std::string("2031-01-01")}) {  // an existing key, a new one
      ASSERT_TRUE(c->Execute(fmt::format(
                       "INSERT INTO app_writes (uri, `date`, `count`) VALUES ({}, {}, 1) "
                       "ON DUPLICATE KEY UPDATE `count` = `count` + VALUES(`count`)",
                       c->Quote(uri), c->Quote(d))).ok());
    }
    EXPECT_EQ(Count(*c, "SELECT COUNT(*) FROM app_writes"), before_rows + 1);
    EXPECT_EQ(Count(*c, fmt::format("SELECT `count` FROM app_writes WHERE uri = {} AND `date` = {}",
                                    c->Quote(uri), c->Quote(date))),
              std::stoll(*longest->rows[0][2]) + 1);
    ASSERT_TRUE(c->Execute("DROP TABLE app_writes").ok());
  }

  for (const auto& [table, sql] : ReferenceQueries()) {
    EXPECT_EQ(CompareWithReference(*c, table, sql), "");
  }
  EXPECT_EQ(TableAsMap(*c, "sessions_per_day"), ReferenceSessions(*c));

  // Every failure is recorded with its event id and a reason.
  EXPECT_EQ(Count(*c, "SELECT COUNT(*) FROM rewind_failures WHERE run_id = '" + sum.run_id + "'"), 120);
  EXPECT_EQ(Count(*c, "SELECT COUNT(*) FROM rewind_failures f JOIN ref_visits v ON v.id = f.event_id "
                      "WHERE url_ok AND ip_ok AND ua_ok"), 0);
  EXPECT_EQ(Count(*c, "SELECT COUNT(*) FROM rewind_failures WHERE run_id = '" + sum.run_id +
                          "' AND reason LIKE 'unparseable visitedAt%'"), 2 * 120 / 9);
  // The odd URLs arrive byte for byte, in both encodings.
  EXPECT_GT(Count(*c, "SELECT COUNT(*) FROM visits_per_post_per_day WHERE uri = CONCAT('/emoji/', "
                      "UNHEX('F09F8E89'), '-party-', UNHEX('F09F918D'))"), 1);
  EXPECT_GT(Count(*c, "SELECT COUNT(*) FROM visits_per_post_per_day WHERE uri = '/blog/Café'"), 1);
  EXPECT_GT(Count(*c, "SELECT COUNT(*) FROM visits_per_post_per_day WHERE uri = '/blog/cafe'"), 1);
  EXPECT_GT(Count(*c, "SELECT COUNT(*) FROM visits_per_post_per_day WHERE uri = '/search?q=back\\\\slash\\\\\\\\double'"), 1);
  EXPECT_GT(Count(*c, "SELECT COUNT(*) FROM visits_per_post_per_day WHERE LENGTH(uri) = 2000"), 1);
  // Nothing is left behind but the read models and rewind's own tables.
  EXPECT_EQ(Count(*c, "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() "
                      "AND TABLE_NAME LIKE '%\\_\\_rewind\\_%'"), 0);
  // (Bulk inserts leave holes in the ids: the head is the highest id, not the count.)
  EXPECT_EQ(Count(*c, "SELECT COUNT(*) FROM rewind_checkpoints WHERE status = 'live' AND last_event_id = "
                      "(SELECT MAX(id) FROM stored_events)"), static_cast<int64_t>(AllProjectors().size()));
}

TEST_F(ReplayTest, LiveTablesAreUntouchedUntilTheSwap) {
  ASSERT_TRUE(Run(All()).status.ok());
  auto c = Connect(options_);
  ASSERT_TRUE(c);
  // Mark the live table: a later failed run must not change it; a later good run replaces it.
  ASSERT_TRUE(c->Execute("INSERT INTO visits_per_day VALUES ('1999-12-31', 42)").ok());
  ReplayOptions bad = All();
  bad.events.payload_column = "no_such_column";
  ReplaySummary failed = Run(bad);
  EXPECT_FALSE(failed.status.ok());
  EXPECT_FALSE(failed.swapped);
  EXPECT_EQ(Count(*c, "SELECT `count` FROM visits_per_day WHERE `date` = '1999-12-31'"), 42);

  ReplayOptions stop = All();
  stop.stop_on_failure = true;
  ReplaySummary stopped = Run(stop);
  ASSERT_FALSE(stopped.status.ok());
  const int64_t first_bad = Count(*c, "SELECT MIN(id) FROM stored_events WHERE eventClass = "
                                      "'App\\\\Analytics\\\\PageVisited' AND id NOT IN (SELECT id FROM ref_visits "
                                      "WHERE url_ok AND ip_ok AND ua_ok)");
  EXPECT_NE(stopped.status.message().find("event " + std::to_string(first_bad) + " failed in decoder"),
            std::string::npos)
      << stopped.status.message();
  EXPECT_EQ(Count(*c, "SELECT `count` FROM visits_per_day WHERE `date` = '1999-12-31'"), 42);

  ReplaySummary good = Run(All());
  ASSERT_TRUE(good.status.ok()) << good.status.message();
  EXPECT_EQ(Count(*c, "SELECT COUNT(*) FROM visits_per_day WHERE `date` = '1999-12-31'"), 0);
  EXPECT_EQ(CompareWithReference(*c, "visits_per_day", ReferenceQueries()["visits_per_day"]), "");
}

TEST_F(ReplayTest, RebuildsOnlyTheSelectedReadModels) {
  ASSERT_TRUE(Run(All()).status.ok());
  auto c = Connect(options_);
  ASSERT_TRUE(c);
  ASSERT_TRUE(c->Execute("INSERT INTO visits_per_year VALUES ('1999-01-01', 7)").ok());
  ReplayOptions o;
  o.projectors = {"visits_per_day"};
  ReplaySummary sum = Run(o);
  ASSERT_TRUE(sum.status.ok()) << sum.status.message();
  ASSERT_EQ(sum.projectors.size(), 1u);
  // visits_per_day alone reads only visitedAt: events with a bad url or ip still count.
  EXPECT_LT(sum.failures, 120u);
  EXPECT_EQ(Count(*c, "SELECT `count` FROM visits_per_year WHERE `date` = '1999-01-01'"), 7);
  // Rebuilt alone, visits_per_day is what it is when rebuilt with all the others.
  EXPECT_EQ(CompareWithReference(*c, "visits_per_day", ReferenceQueries()["visits_per_day"]), "");
  ASSERT_TRUE(c->Execute("DELETE FROM visits_per_year WHERE `date` = '1999-01-01'").ok());
}

TEST_F(ReplayTest, ClearErrorsForWhatUsersGetWrongFirst) {
  ReplayOptions o = All();
  o.events.table = "no_such_table";
  EXPECT_NE(Run(o).status.message().find("event table 'no_such_table' does not exist"), std::string::npos);

  o = All();
  o.events.type_column = "kind";
  EXPECT_NE(Run(o).status.message().find("has no column 'kind'"), std::string::npos);

  ConnectionOptions wrong = options_;
  wrong.password = "wrong password";
  ReplayOptions w = All();
  w.connection = wrong;
  w.progress = ProgressMode::kQuiet;
  std::atomic<bool> stop{false};
  ReplaySummary denied = ReplaySelected(w, stop);
  EXPECT_NE(denied.status.message().find("cannot connect to MariaDB"), std::string::npos);
  EXPECT_NE(denied.status.message().find("Access denied"), std::string::npos) << denied.status.message();

  ReplayOptions nowhere = All();
  nowhere.connection = options_;
  nowhere.connection.socket = "/nonexistent/mysqld.sock";
  nowhere.progress = ProgressMode::kQuiet;
  ReplaySummary unreachable = ReplaySelected(nowhere, stop);
  EXPECT_NE(unreachable.status.message().find("cannot connect to MariaDB"), std::string::npos);
  EXPECT_NE(unreachable.status.message().find("/nonexistent/mysqld.sock"), std::string::npos);

  ReplayOptions unknown;
  unknown.projectors = {"visits_per_fortnight"};
  Result<RunSpec> none = RunSpec::Make(PartsOf<RunSpec>(unknown), unknown.projectors, RunSpec::Selection::kRequired);
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("unknown read model 'visits_per_fortnight'; known: visits_per_minute"),
            std::string::npos);
}

TEST_F(ReplayTest, ASecondRunOnTheSameReadModelsRefuses) {
  auto holder = Connect(options_);
  ASSERT_TRUE(holder);
  // What a first rewind holds while it rebuilds visits_per_day.
  ASSERT_EQ(Count(*holder, "SELECT GET_LOCK('rewind:rewind_test_replay.visits_per_day', 0)"), 1);
  ReplayOptions o;
  o.projectors = {"visits_per_hour", "visits_per_day"};
  ReplaySummary sum = Run(o);
  ASSERT_FALSE(sum.status.ok());
  EXPECT_EQ(sum.status.code(), Status::Code::kBusy);
  EXPECT_NE(sum.status.message().find("another rewind"), std::string::npos) << sum.status.message();
  EXPECT_NE(sum.status.message().find("visits_per_day"), std::string::npos);
  ASSERT_EQ(Count(*holder, "SELECT RELEASE_LOCK('rewind:rewind_test_replay.visits_per_day')"), 1);
  o.projectors = {"visits_per_hour"};
  EXPECT_TRUE(Run(o).status.ok());
}

}  // namespace
}  // namespace rw
