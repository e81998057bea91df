// The declared counters' fast path (projectors/declared.h, CountsOnFastPath) against the
// server's own GROUP BY, on events of odd shapes: times missing, null, numbers or no time at
// all, texts of every JSON type, a date alone, offsets and fractions, events far out of time
// order, and buckets that cross a year (an ISO week from December into January). Declarations
// that do not fit the fast path are checked the same way, on the general path. Every expected
// row and failure is computed by the server from the event table, never taken from rewind.
#include <fmt/core.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <string>
#include <vector>

#include "config/models.h"
#include "rewind_process.h"
#include "subprocess.h"
#include "test_db.h"

namespace rw {
namespace {

using namespace rw::testing;

constexpr const char* kHit = "App\\Site\\Hit";
constexpr const char* kOther = "App\\Site\\Other";

// The first seven fit the fast path; the last two do not (a text with an hour, and a count
// `on` one of two classes, whose other class makes rows of 0).
constexpr const char* kModels = R"toml(
[[read_model]]
name   = "hits_per_minute"
events = ['App\Site\Hit']
key    = [{ column = "time", path = "at", bucket = "minute" }]
values = [{ column = "hits", op = "count" }]

[[read_model]]
name   = "hits_per_week"
events = ['App\Site\Hit']
key    = [{ column = "week", path = "at", bucket = "week" }]
values = [{ column = "hits", op = "count" }]

[[read_model]]
name   = "hits_per_year"
events = ['App\Site\Hit', 'App\Site\Other']
key    = [{ column = "year", path = "at", bucket = "year" }]
values = [{ column = "hits", op = "count" }]

[[read_model]]
name   = "hits_per_page"
events = ['App\Site\Hit']
key    = [{ column = "page", path = "page" }]
values = [{ column = "hits", op = "count" }]

[[read_model]]
name   = "hits_per_page_per_week"
events = ['App\Site\Hit']
key    = [
  { column = "page", path = "page", strict = true },
  { column = "week", path = "at", bucket = "week" },
]
values = [{ column = "hits", op = "count" }]

[[read_model]]
name   = "hits_per_month_per_page"
events = ['App\Site\Hit']
key    = [
  { column = "month", path = "at", bucket = "month" },
  { column = "page",  path = "page" },
]
values = [{ column = "hits", op = "count" }]

[[read_model]]
name   = "hits_per_n"
events = ['App\Site\Hit']
key    = [{ column = "n", path = "n", type = "bigint" }]
values = [{ column = "hits", op = "count" }]

[[read_model]]
name   = "hits_per_page_per_hour"
events = ['App\Site\Hit']
key    = [
  { column = "page", path = "page", strict = true },
  { column = "hour", path = "at", bucket = "hour" },
]
values = [{ column = "hits", op = "count" }]

[[read_model]]
name   = "hits_of_one_class"
events = ['App\Site\Hit', 'App\Site\Other']
key    = [{ column = "day", path = "at", bucket = "day" }]
values = [{ column = "hits", op = "count", on = ['App\Site\Hit'] }]
)toml";

const char* const kFast[] = {"hits_per_minute", "hits_per_week",          "hits_per_year",
                             "hits_per_page",   "hits_per_page_per_week", "hits_per_month_per_page",
                             "hits_per_n"};
const char* const kGeneral[] = {"hits_per_page_per_hour", "hits_of_one_class"};

std::string ModelsFile() {
  const std::string file = ::testing::TempDir() + "/hits-models.toml";
  std::ofstream(file) << kModels;
  return file;
}

// Events in no time order: instants around two new years (2020/21, 2024/25: the ISO week of
// Monday 2024-12-30 ends in 2025) and a far one, written with and without offsets and
// fractions; and among them every odd shape of `at`, `page` and `n`.
std::vector<std::pair<std::string, std::string>> HitEvents(size_t n) {
  std::vector<std::pair<std::string, std::string>> out;
  const char* const odd_at[] = {R"("at":null)",
                                R"("at":20241231)",
                                R"("at":"not a time")",
                                R"("at":"2024-13-01T00:00:00")",
                                R"("at":"2024-12-31")",
                                R"("at":{"t":"2024-12-31T10:00:00"})",
                                ""};
  const char* const odd_page[] = {R"("page":null)",
                                  R"("page":17)",
                                  R"("page":true)",
                                  R"("page":["/a"])",
                                  R"("page":"\/caf\u00e9")",
                                  R"("page":"")",
                                  ""};
  const char* const odd_n[] = {R"("n":"12")", R"("n":-3)",  R"("n":"x")",
                               R"("n":null)", R"("n":1.5)", ""};
  const char* const suffix[] = {"", "Z", "+02:00", ".250", "-05:30"};
  uint64_t x = 42;
  auto next = [&x](uint64_t m) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    return (x >> 33) % m;
  };
  for (size_t i = 0; i < n; ++i) {
    const bool other = next(6) == 0;
    const uint64_t pick = next(10);
    // Seconds from 2020-12-30 00:00 or 2024-12-27 00:00 (up to 10 days), or one far instant;
    // some of the other class's in days of their own (2010), to which hits add nothing.
    const int64_t base = other && pick < 5 ? 1262304000
                         : pick < 4        ? 1609286400
                         : pick < 9        ? 1735257600
                                           : 929448000;
    const int64_t t = base + static_cast<int64_t>(next(10 * 86400));
    const int64_t days = t / 86400, sod = t % 86400;
    // Days to a civil date (Howard Hinnant's algorithm), written out for the payload.
    const int64_t z = days + 719468, era = z / 146097, doe = z - era * 146097;
    const int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365,
                  doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    const int64_t mp = (5 * doy + 2) / 153, d = doy - (153 * mp + 2) / 5 + 1,
                  m = mp < 10 ? mp + 3 : mp - 9;
    const int64_t y = yoe + era * 400 + (m <= 2);
    std::string at =
        fmt::format(R"("at":"{:04d}-{:02d}-{:02d}T{:02d}:{:02d}:{:02d}{}")", y, m, d, sod / 3600,
                    sod / 60 % 60, sod % 60, suffix[next(std::size(suffix))]);
    if (next(12) == 0) at = odd_at[next(std::size(odd_at))];
    std::string page = fmt::format(R"("page":"/p{}")", next(7));
    if (next(10) == 0) page = odd_page[next(std::size(odd_page))];
    std::string num = fmt::format(R"("n":{})", next(5));
    if (next(8) == 0) num = odd_n[next(std::size(odd_n))];
    std::string payload = "{";
    for (const std::string* f : {&at, &page, &num}) {
      if (f->empty()) continue;
      if (payload.size() > 1) payload += ",";
      payload += *f;
    }
    payload += "}";
    out.push_back({other ? kOther : kHit, payload});
  }
  out.push_back({kHit, "[1,2]"});  // not an object: undecoded, failed by every model of its class
  return out;
}

// The server's reading of the payloads: `at` as a wall-clock DATETIME when it is a string
// that starts with a valid date and time or is a date alone (the offset and fraction
// ignored), `page` as text (strings; numbers too unless strict), `n` as an integer.
constexpr const char* kFacts = R"sql(
  CREATE VIEW facts AS
  SELECT id, eventClass = 'App\\Site\\Hit' AS hit, at_type, page_type, n_type, page, n_text,
         CASE WHEN at_type = 'STRING' AND at_text REGEXP '^[0-9]{4}-[0-9]{2}-[0-9]{2}([T ][0-9]{2}:[0-9]{2}:[0-9]{2}.*)?$'
              THEN CAST(REPLACE(LEFT(at_text, 19), 'T', ' ') AS DATETIME) END AS t
  FROM (SELECT id, eventClass,
               JSON_TYPE(JSON_EXTRACT(payload, '$.at')) AS at_type, JSON_VALUE(payload, '$.at') AS at_text,
               JSON_TYPE(JSON_EXTRACT(payload, '$.page')) AS page_type, JSON_VALUE(payload, '$.page') AS page,
               JSON_TYPE(JSON_EXTRACT(payload, '$.n')) AS n_type, JSON_VALUE(payload, '$.n') AS n_text
        FROM stored_events WHERE JSON_VALID(payload) AND JSON_TYPE(payload) = 'OBJECT') x
)sql";

// Per read model: the rows (SELECT ... GROUP BY over `facts`), and the ids it must fail.
struct Reference {
  const char* model;
  const char* rows;      // the read model's columns, as SELECTed from it
  const char* expected;  // the same from facts
  const char* failed;    // the ids of its classes that it cannot apply
};

const Reference kReferences[] = {
    {"hits_per_minute", "SELECT `time`, hits FROM hits_per_minute",
     "SELECT DATE_FORMAT(t, '%Y-%m-%d %H:%i:00'), COUNT(*) FROM facts WHERE hit AND t IS NOT NULL "
     "GROUP BY 1",
     "SELECT id FROM facts WHERE hit AND t IS NULL"},
    {"hits_per_week", "SELECT week, hits FROM hits_per_week",
     "SELECT DATE(t) - INTERVAL WEEKDAY(t) DAY, COUNT(*) FROM facts WHERE hit AND t IS NOT NULL "
     "GROUP BY 1",
     "SELECT id FROM facts WHERE hit AND t IS NULL"},
    {"hits_per_year", "SELECT `year`, hits FROM hits_per_year",
     "SELECT DATE_FORMAT(t, '%Y-01-01'), COUNT(*) FROM facts WHERE t IS NOT NULL GROUP BY 1",
     "SELECT id FROM facts WHERE t IS NULL"},
    {"hits_per_page", "SELECT page, hits FROM hits_per_page",
     "SELECT page, COUNT(*) FROM facts WHERE hit AND page_type IN ('STRING', 'INTEGER') GROUP BY 1",
     "SELECT id FROM facts WHERE hit AND NOT page_type <=> 'STRING' AND NOT page_type <=> "
     "'INTEGER'"},
    {"hits_per_page_per_week", "SELECT page, week, hits FROM hits_per_page_per_week",
     "SELECT page, DATE(t) - INTERVAL WEEKDAY(t) DAY, COUNT(*) FROM facts WHERE hit AND t IS NOT "
     "NULL AND "
     "page_type = 'STRING' GROUP BY 1, 2",
     "SELECT id FROM facts WHERE hit AND (t IS NULL OR NOT page_type <=> 'STRING')"},
    {"hits_per_month_per_page", "SELECT `month`, page, hits FROM hits_per_month_per_page",
     "SELECT DATE_FORMAT(t, '%Y-%m-01'), page, COUNT(*) FROM facts WHERE hit AND t IS NOT NULL AND "
     "page_type IN ('STRING', 'INTEGER') GROUP BY 1, 2",
     "SELECT id FROM facts WHERE hit AND (t IS NULL OR (NOT page_type <=> 'STRING' AND NOT "
     "page_type <=> 'INTEGER'))"},
    {"hits_per_n", "SELECT n, hits FROM hits_per_n",
     "SELECT CAST(n_text AS SIGNED), COUNT(*) FROM facts WHERE hit AND n_text REGEXP '^-?[0-9]+$' "
     "AND "
     "n_type IN ('STRING', 'INTEGER') GROUP BY 1",
     "SELECT id FROM facts WHERE hit AND NOT (n_text REGEXP '^-?[0-9]+$' AND n_type IN ('STRING', "
     "'INTEGER')) "
     "OR hit AND n_text IS NULL"},
    {"hits_per_page_per_hour", "SELECT page, `hour`, hits FROM hits_per_page_per_hour",
     "SELECT page, DATE_FORMAT(t, '%Y-%m-%d %H:00:00'), COUNT(*) FROM facts WHERE hit AND t IS NOT "
     "NULL AND "
     "page_type = 'STRING' GROUP BY 1, 2",
     "SELECT id FROM facts WHERE hit AND (t IS NULL OR NOT page_type <=> 'STRING')"},
    {"hits_of_one_class", "SELECT `day`, hits FROM hits_of_one_class",
     "SELECT DATE(t), SUM(hit) FROM facts WHERE t IS NOT NULL GROUP BY 1",
     "SELECT id FROM facts WHERE t IS NULL"},
};

ConnectionOptions HitStore(const std::string& name) {
  ConnectionOptions o = FreshDatabase(name);
  auto c = Connect(o);
  EXPECT_TRUE(c->Execute(EventTableDdl("stored_events")).ok());
  const auto events = HitEvents(1500);
  for (size_t i = 0; i < events.size(); i += 250) {
    std::string sql = "INSERT INTO stored_events (uuid, eventClass, payload, createdAt) VALUES ";
    for (size_t j = i; j < std::min(events.size(), i + 250); ++j) {
      if (j > i) sql += ", ";
      sql += "(UUID(), ";
      c->AppendQuoted(sql, events[j].first);
      sql += ", ";
      c->AppendQuoted(sql, events[j].second);
      sql += ", '2024-05-01 10:00:00')";
    }
    EXPECT_TRUE(c->Execute(sql).ok());
  }
  EXPECT_TRUE(c->Execute(kFacts).ok());
  return o;
}

TEST(DeclaredCounts, TheFastPathTakesTheCountersAndOnlyThem) {
  auto plans = ParseModels(kModels, "hits.toml", "stored_events");
  ASSERT_TRUE(plans.ok()) << plans.status().message();
  for (const ModelPlan& p : *plans) {
    SCOPED_TRACE(p.name);
    const bool fast = std::find_if(std::begin(kFast), std::end(kFast),
                                   [&](const char* m) { return p.name == m; }) != std::end(kFast);
    EXPECT_EQ(CountsOnFastPath(p), fast);
  }
  // The blog's seven declared counters all run on it.
  auto blog = LoadModels(std::string(REWIND_SOURCE_DIR) + "/config/blog.toml", "stored_events");
  ASSERT_TRUE(blog.ok()) << blog.status().message();
  ASSERT_EQ(blog->size(), 7u);
  for (const ModelPlan& p : *blog) EXPECT_TRUE(CountsOnFastPath(p)) << p.name;
}

TEST(DeclaredCounts, CountersOnBothPathsEqualTheServersGroupByWhateverTheFlushes) {
  const ConnectionOptions o = HitStore("rewind_test_declared_counts");
  auto c = Connect(o);
  ASSERT_GT(Count(*c, "SELECT COUNT(*) FROM facts WHERE t IS NULL"), 10);
  ASSERT_GT(Count(*c, "SELECT COUNT(*) FROM facts WHERE page_type = 'INTEGER'"), 0);
  ASSERT_GT(
      Count(*c,
            "SELECT COUNT(*) FROM (SELECT DATE(t) FROM facts GROUP BY 1 HAVING SUM(hit) = 0) x"),
      0);
  ASSERT_GT(
      Count(*c,
            "SELECT COUNT(*) FROM facts WHERE t BETWEEN '2024-12-30' AND '2025-01-05 23:59:59' AND "
            "YEAR(t) = 2025"),
      0);
  std::vector<std::string> names(std::begin(kFast), std::end(kFast));
  names.insert(names.end(), std::begin(kGeneral), std::end(kGeneral));
  const std::vector<std::vector<std::string>> cuts = {{},
                                                      {"--batch-size", "7", "--flush-every", "30"}};
  for (const auto& cut : cuts) {
    SCOPED_TRACE(::testing::PrintToString(cut));
    std::vector<std::string> args = {"replay"};
    args.insert(args.end(), names.begin(), names.end());
    args.push_back("--models");
    args.push_back(ModelsFile());
    args.push_back("--quiet");
    args.insert(args.end(), cut.begin(), cut.end());
    const Outcome run = RunRewind(args, Env(o));
    ASSERT_EQ(run.code, 3) << run.err;  // some events could not be applied
    for (const Reference& r : kReferences) {
      SCOPED_TRACE(r.model);
      const auto expected = SortedRows(*c, r.expected);
      ASSERT_GT(expected.size(), 3u);
      EXPECT_EQ(SortedRows(*c, r.rows), expected);
      const auto failed = SortedRows(*c, r.failed);
      EXPECT_GT(failed.size(), 3u);
      EXPECT_EQ(
          SortedRows(
              *c, fmt::format("SELECT event_id FROM rewind_failures WHERE stage = '{}'", r.model)),
          failed);
    }
    // The payload that is no object: the decoder's failure, once.
    EXPECT_EQ(SortedRows(*c, "SELECT event_id FROM rewind_failures WHERE stage = 'decoder'"),
              SortedRows(*c, "SELECT id FROM stored_events WHERE payload = '[1,2]'"));
    ASSERT_TRUE(c->Execute("DELETE FROM rewind_failures").ok());
  }
}

// A read model keyed on the event table's columns alone (the type, the day of createdAt)
// reads no payload: an event whose payload is no JSON object (a proxy's error page, a line
// cut short, an array) still happened, and it counts it, as SQL's GROUP BY over the table
// does. A read model of a payload path in the same run cannot apply those events: they are
// its failures (and the decoder's, once each), and its rows are SQL's over the readable ones.
TEST(DeclaredCounts, AReadModelOfColumnsAloneCountsEventsWhosePayloadIsNoJson) {
  const ConnectionOptions o = FreshDatabase("rewind_test_declared_columns_only");
  auto c = Connect(o);
  ASSERT_TRUE(c->Execute(EventTableDdl("stored_events")).ok());
  const char* const bad[] = {"<html>502 Bad Gateway</html>", R"({"page":"/cut)", "[1,2]", ""};
  std::string sql = "INSERT INTO stored_events (uuid, eventClass, payload, createdAt) VALUES ";
  for (int i = 0; i < 600; ++i) {
    const std::string cls = i % 3 == 0 ? kOther : kHit;
    const std::string payload = i % 37 == 5 ? bad[i % 4] : fmt::format(R"({{"page":"/p{}"}})", i % 7);
    sql += fmt::format("{}(UUID(), {}, {}, '2024-05-{:02d} 1{}:00:00')", i ? ", " : "", c->Quote(cls),
                       c->Quote(payload), 1 + i % 9, i % 10);
  }
  ASSERT_TRUE(c->Execute(sql).ok());
  ASSERT_GT(Count(*c, "SELECT COUNT(*) FROM stored_events WHERE NOT JSON_VALID(payload) OR payload = '[1,2]'"), 10);
  const std::string models = ::testing::TempDir() + "/columns_only.toml";
  std::ofstream(models) << R"toml(
[[read_model]]
name   = "events_per_type_per_day"
events = ['App\Site\Hit', 'App\Site\Other']
key    = [{ column = "event_type", field = "eventClass" }, { column = "day", field = "createdAt", bucket = "day" }]
values = [{ column = "events", op = "count" }]

[[read_model]]
name   = "hits_per_page"
events = ['App\Site\Hit']
key    = [{ column = "page", path = "page" }]
values = [{ column = "hits", op = "count" }]
)toml";
  const std::string per_type = "SELECT CAST(eventClass AS BINARY), DATE(createdAt), COUNT(*) FROM stored_events GROUP BY 1, 2";
  const std::string rows = "SELECT CAST(event_type AS BINARY), `day`, events FROM events_per_type_per_day";
  const std::string unreadable = "SELECT id FROM stored_events WHERE NOT JSON_VALID(payload) OR payload = '[1,2]'";
  {  // Alone: nothing reads a payload, nothing fails.
    const Outcome run = RunRewind({"replay", "events_per_type_per_day", "--models", models, "--quiet"}, Env(o));
    ASSERT_EQ(run.code, 0) << run.err;
    EXPECT_EQ(SortedRows(*c, rows), SortedRows(*c, per_type));
    EXPECT_EQ(Count(*c, "SELECT COUNT(*) FROM rewind_failures"), 0);
  }
  {  // Beside a read model of a payload path.
    const Outcome run = RunRewind({"replay", "events_per_type_per_day", "hits_per_page", "--models", models,
                                   "--quiet", "--batch-size", "50"}, Env(o));
    ASSERT_EQ(run.code, 3) << run.err;  // hits_per_page could not apply some events
    EXPECT_EQ(SortedRows(*c, rows), SortedRows(*c, per_type));
    EXPECT_EQ(SortedRows(*c, "SELECT page, hits FROM hits_per_page"),
              SortedRows(*c, fmt::format("SELECT JSON_VALUE(payload, '$.page'), COUNT(*) FROM stored_events WHERE "
                                         "eventClass = {} AND id NOT IN ({}) GROUP BY 1", c->Quote(kHit), unreadable)));
    EXPECT_EQ(SortedRows(*c, "SELECT event_id FROM rewind_failures WHERE stage = 'decoder'"),
              SortedRows(*c, unreadable));
    EXPECT_EQ(SortedRows(*c, "SELECT event_id FROM rewind_failures WHERE stage = 'events_per_type_per_day'"),
              std::vector<std::string>{});
  }
}

}  // namespace
}  // namespace rw
