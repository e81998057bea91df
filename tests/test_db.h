// Helpers for tests that run against the private MariaDB started by scripts/test
// (REWIND_SOCKET / REWIND_HOST, REWIND_USER, REWIND_PASSWORD in the environment).
#pragma once

#include <fmt/core.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <thread>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "config/options.h"
#include "pipeline/replay/replay.h"
#include "projectors/projector.h"
#include "scripts/generate/event_generator.h"
#include "stages/db/connection.h"

namespace rw::testing {

inline ConnectionOptions ServerOptions() {
  auto cl = ParseCommandLine({"replay", "--config", "/dev/null"}, SystemEnvironment());
  EXPECT_TRUE(cl.ok());
  ConnectionOptions o = cl->options.connection;
  if (o.socket.empty() && o.host.empty()) {
    ADD_FAILURE() << "no test server: run the tests through scripts/test, which starts the "
                     "private MariaDB and exports REWIND_SOCKET";
  }
  return o;
}

// A compiled read model, looked up by name (tests never depend on the registry's order).
inline std::unique_ptr<Projector> MakeProjector(const std::string& name) {
  for (const ProjectorInfo& info : AllProjectors()) {
    if (info.name == name) return info.make();
  }
  ADD_FAILURE() << "no read model named " << name;
  return nullptr;
}

// Every compiled read model's live table, from the registry.
inline std::vector<std::string> AllTables() {
  std::vector<std::string> out;
  for (const ProjectorInfo& info : AllProjectors()) out.push_back(info.make()->table().name);
  return out;
}

inline std::unique_ptr<Connection> Connect(const ConnectionOptions& o) {
  auto c = Connection::Open(o);
  if (!c.ok()) {
    ADD_FAILURE() << c.status().message();
    return nullptr;
  }
  return std::move(*c);
}

// Drops and creates database `name`; returns options pointing at it.
inline ConnectionOptions FreshDatabase(const std::string& name) {
  ConnectionOptions o = ServerOptions();
  auto c = Connect(o);
  if (c) {
    EXPECT_TRUE(c->Execute("DROP DATABASE IF EXISTS " + QuoteIdentifier(name)).ok());
    EXPECT_TRUE(c->Execute("CREATE DATABASE " + QuoteIdentifier(name)).ok());
  }
  o.database = name;
  return o;
}

inline std::vector<AccessLogLine> AccessLog() {
  auto log = ReadAccessLog(FindAccessLog());
  EXPECT_TRUE(log.ok()) << log.status().message();
  return log.ok() ? *log : std::vector<AccessLogLine>{};
}

inline int64_t Count(Connection& c, const std::string& sql) {
  auto v = c.QueryValue(sql);
  EXPECT_TRUE(v.ok()) << v.status().message() << "\n" << sql;
  return v.ok() && *v ? std::stoll(**v) : -1;
}

// The independent computation: the PageVisited events with a usable visitedAt, decoded
// by the server's own JSON functions, with visitedAt's wall-clock time (offset ignored)
// and whether each other field is a string. A read model counts exactly the events that
// have the fields it needs. Materialised once, as the table ref_visits.
inline void CreateReferenceView(Connection& c) {
  ASSERT_TRUE(c.Execute("DROP TABLE IF EXISTS ref_visits").ok());
  // CAST of an impossible date is NULL plus a warning, which strict mode would make an
  // error inside CREATE ... SELECT: the reference filters those rows out instead.
  ASSERT_TRUE(c.Execute("SET SESSION sql_mode = ''").ok());
  Status created = c.Execute(R"sql(
    CREATE TABLE ref_visits (PRIMARY KEY (id)) AS
    SELECT id, url, ip, ua, t, url_ok, ip_ok, ua_ok FROM (
      SELECT id,
        JSON_VALUE(payload, '$.url') AS url,
        JSON_VALUE(payload, '$.ip') AS ip,
        JSON_VALUE(payload, '$.userAgent') AS ua,
        JSON_TYPE(JSON_EXTRACT(payload, '$.url')) <=> 'STRING' AS url_ok,
        JSON_TYPE(JSON_EXTRACT(payload, '$.ip')) <=> 'STRING' AS ip_ok,
        JSON_TYPE(JSON_EXTRACT(payload, '$.userAgent')) <=> 'STRING' AS ua_ok,
        CAST(REPLACE(LEFT(JSON_VALUE(payload, '$.visitedAt'), 19), 'T', ' ') AS DATETIME) AS t,
        payload
      FROM stored_events
      WHERE BINARY eventClass = BINARY 'App\\Analytics\\PageVisited' AND JSON_VALID(payload)
        AND JSON_TYPE(payload) = 'OBJECT'
        AND JSON_TYPE(JSON_EXTRACT(payload, '$.visitedAt')) = 'STRING') v
    WHERE t IS NOT NULL AND JSON_VALUE(payload, '$.visitedAt') REGEXP
      '^[0-9]{4}-[0-9]{2}-[0-9]{2}[T ][0-9]{2}:[0-9]{2}:[0-9]{2}(\\.[0-9]+)?(Z|[+-][0-9]{2}(:?[0-9]{2})?)?$'
  )sql");
  ASSERT_TRUE(created.ok()) << created.message();
  ASSERT_TRUE(c.Execute("SET SESSION sql_mode = DEFAULT").ok());
}

// A fresh database `name` holding the generated events `g` and the reference table.
inline ConnectionOptions LoadFixture(const std::string& name, const GeneratorOptions& g) {
  ConnectionOptions o = FreshDatabase(name);
  auto c = Connect(o);
  if (!c) return o;
  EXPECT_TRUE(LoadEvents(*c, "stored_events", g, AccessLog()).ok());
  CreateReferenceView(*c);
  return o;
}

// The ids of a generated table, as production tables have them.
struct IdShape {
  const char* name = "dense";
  uint64_t step = 0;       // GeneratorOptions::id_step
  double holes = 0;        // GeneratorOptions::holes
  std::string deleted;     // id ranges deleted afterwards, "lo:hi,..."
};
// Dense; a Galera node's step of 2; and 1 id in 50 burned with two ranges deleted.
inline std::vector<IdShape> ProductionIdShapes() {
  return {IdShape{"step2", 2, 0, ""}, IdShape{"holey", 0, 0.02, "1000:1999,5000:5100"}};
}

// A fresh database `name` with `events` generated events (odd URLs every 37th).
inline ConnectionOptions Store(const std::string& name, uint64_t events, uint64_t bad_every = 0,
                               const IdShape& shape = {}) {
  ConnectionOptions o = FreshDatabase(name);
  auto c = Connect(o);
  if (!c) return o;  // Connect() failed the test, saying why
  GeneratorOptions g;
  g.events = events;
  g.odd_url_every = 37;
  g.bad_every = bad_every;
  g.id_step = shape.step;
  g.holes = shape.holes;
  EXPECT_TRUE(LoadEvents(*c, "stored_events", g, AccessLog()).ok());
  EXPECT_TRUE(DeleteIdRanges(*c, "stored_events", shape.deleted).ok());
  return o;
}

// A fresh server user `name` with `grants` on o's database (e.g. "SELECT, INSERT"); returns
// the options that connect as that user. `admin` must hold the GRANT OPTION.
// Server-wide settings a test changes, put back however it ends (the suite runs one test at
// a time, so no other test sees them).
class GlobalsRestored {
 public:
  GlobalsRestored(Connection& c, std::vector<std::string> names) : c_(c) {
    for (const std::string& n : names) {
      auto v = c_.QueryValue("SELECT @@GLOBAL." + n);
      if (v.ok() && *v) saved_.emplace_back(n, **v);
    }
  }
  ~GlobalsRestored() {
    for (const auto& [name, value] : saved_) {
      const bool number = !value.empty() && value.find_first_not_of("0123456789") == std::string::npos;
      EXPECT_TRUE(c_.Execute(fmt::format("SET GLOBAL {} = {}", name, number ? value : c_.Quote(value))).ok())
          << name << " = " << value;
    }
  }

 private:
  Connection& c_;
  std::vector<std::pair<std::string, std::string>> saved_;
};

inline ConnectionOptions UserWith(Connection& admin, const ConnectionOptions& o, const std::string& name,
                                  const std::string& grants) {
  const std::string user = "'" + name + "'@'localhost'";
  EXPECT_TRUE(admin.Execute("DROP USER IF EXISTS " + user).ok());
  EXPECT_TRUE(admin.Execute("CREATE USER " + user + " IDENTIFIED BY '" + name + "-pw'").ok());
  EXPECT_TRUE(admin.Execute("GRANT " + grants + " ON " + QuoteIdentifier(o.database) + ".* TO " + user).ok());
  ConnectionOptions as = o;
  as.user = name;
  as.password = name + "-pw";
  return as;
}

// Polls `sql` until it returns `want`: the condition a test waits for, never a fixed time.
// A poll of information_schema.INNODB_TRX is paced at 150 ms: the server refreshes that
// table only once nobody has read it for 0.1 s, so a faster poll keeps reading the picture
// of its first read (a transaction begun after it is never seen: CI, stop 62).
inline bool WaitUntil(Connection& c, const std::string& sql, int64_t want, double seconds = 120) {
  const bool cached = sql.find("INNODB_TRX") != std::string::npos;
  const auto pace = std::chrono::milliseconds(cached ? 150 : 20);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < deadline) {
    auto v = c.QueryValue(sql);
    if (v.ok() && *v && **v == std::to_string(want)) return true;
    std::this_thread::sleep_for(pace);
  }
  return false;
}

// The spec of a run of `o` as the command makes it (RunSpec::Make): the read models named in
// o.projectors or --all's selected (kNone: none, for a test that gives its own).
inline RunSpec SpecOf(const ReplayOptions& o, RunSpec::Selection selection = RunSpec::Selection::kRequired) {
  Result<RunSpec> spec = RunSpec::Make(PartsOf<RunSpec>(o), o.projectors, selection);
  EXPECT_TRUE(spec.ok()) << spec.status().message();
  return spec.ok() ? std::move(*spec) : RunSpec{};
}

// `rewind replay` of `o`'s selection, in this process.
inline ReplaySummary ReplaySelected(const ReplayOptions& o, const std::atomic<bool>& stop) {
  const RunSpec spec = SpecOf(o);
  return Replay(spec, spec.MakeSelected(), stop);
}

// `rewind replay --follow` run in-process on a thread of its own: started with `ro` (follow
// and quiet are set here), waited for until every read model follows; Stop() ends it.
class Follower {
 public:
  explicit Follower(ReplayOptions ro) {
    ro.follow = true;
    ro.progress = ProgressMode::kQuiet;
    if (ro.poll_seconds >= 1.0) ro.poll_seconds = 0.05;
    const RunSpec spec = SpecOf(ro);
    const int64_t models = static_cast<int64_t>(spec.selected.size());
    thread_ = std::thread([this, spec] { sum_ = Replay(spec, spec.MakeSelected(), stop_); });
    auto c = Connect(ro.connection);
    following_ = c && WaitUntil(*c, "SELECT COUNT(*) FROM rewind_checkpoints WHERE status = 'following'", models);
  }
  ~Follower() { Stop(); }
  bool following() const { return following_; }
  const ReplaySummary& Stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
    return sum_;
  }

 private:
  std::atomic<bool> stop_{false};
  ReplaySummary sum_;
  std::thread thread_;
  bool following_ = false;
};

// For each of the seven counting read models: the reference GROUP BY over ref_visits.
inline std::map<std::string, std::string> ReferenceQueries() {
  return {
      {"visits_per_minute", "SELECT DATE_FORMAT(t, '%Y-%m-%d %H:%i:00') AS k1, '' AS k2, COUNT(*) AS c FROM ref_visits GROUP BY 1"},
      {"visits_per_hour", "SELECT DATE_FORMAT(t, '%Y-%m-%d %H:00:00'), '', COUNT(*) FROM ref_visits GROUP BY 1"},
      {"visits_per_day", "SELECT DATE(t), '', COUNT(*) FROM ref_visits GROUP BY 1"},
      {"visits_per_month", "SELECT DATE_FORMAT(t, '%Y-%m-01'), '', COUNT(*) FROM ref_visits GROUP BY 1"},
      {"visits_per_year", "SELECT DATE_FORMAT(t, '%Y-01-01'), '', COUNT(*) FROM ref_visits GROUP BY 1"},
      {"visits_per_post_per_day", "SELECT DATE(t), CAST(url AS BINARY), COUNT(*) FROM ref_visits WHERE url_ok GROUP BY 1, 2"},
      {"visits_per_post_per_week", "SELECT DATE(t) - INTERVAL WEEKDAY(t) DAY, CAST(url AS BINARY), COUNT(*) FROM ref_visits WHERE url_ok GROUP BY 1, 2"},
  };
}

// The same rows read from a rebuilt table, in the reference's shape.
inline std::string TableQuery(const std::string& table) {
  if (table == "visits_per_minute") return "SELECT CAST(`time` AS CHAR), '', `count` FROM " + table;
  if (table == "visits_per_hour") return "SELECT CAST(`hour` AS CHAR), '', `count` FROM " + table;
  if (table.rfind("visits_per_post", 0) == 0) return "SELECT `date`, CAST(`uri` AS BINARY), `count` FROM " + table;
  return "SELECT `date`, '', `count` FROM " + table;
}

// Rows in one side and not the other, both ways, plus the row counts; "" when equal.
inline std::string CompareWithReference(Connection& c, const std::string& table,
                                        const std::string& reference_sql) {
  const std::string mine = TableQuery(table);
  const int64_t missing = Count(c, "SELECT COUNT(*) FROM (" + reference_sql + " EXCEPT " + mine + ") x");
  const int64_t extra = Count(c, "SELECT COUNT(*) FROM (" + mine + " EXCEPT " + reference_sql + ") x");
  const int64_t rows = Count(c, "SELECT COUNT(*) FROM " + table);
  const int64_t ref_rows = Count(c, "SELECT COUNT(*) FROM (" + reference_sql + ") x");
  if (missing == 0 && extra == 0 && rows == ref_rows && rows > 0) return "";
  return table + ": " + std::to_string(missing) + " reference rows missing, " + std::to_string(extra) +
         " rows not in the reference, " + std::to_string(rows) + " rows vs " + std::to_string(ref_rows);
}

// A straightforward single-threaded sessions_per_day, from the reference view in id order.
inline std::map<std::string, int64_t> ReferenceSessions(Connection& c) {
  std::map<std::pair<std::string, std::string>, int64_t> last_seen;
  std::map<std::string, int64_t> per_day;
  Status s = c.Stream(
      "SELECT ip, ua, TO_SECONDS(t), DATE(t) "
      "FROM ref_visits WHERE ip_ok AND ua_ok ORDER BY id",
      [&](char** v, unsigned long* len) {
        std::pair<std::string, std::string> visitor{std::string(v[0], len[0]), std::string(v[1], len[1])};
        const int64_t t = std::stoll(v[2]);
        auto it = last_seen.find(visitor);
        if (it == last_seen.end()) {
          last_seen[visitor] = t;
          ++per_day[v[3]];
        } else {
          if (t - it->second > 30 * 60) ++per_day[v[3]];
          it->second = std::max(it->second, t);
        }
      });
  EXPECT_TRUE(s.ok()) << s.message();
  return per_day;
}

inline std::map<std::string, int64_t> TableAsMap(Connection& c, const std::string& table) {
  std::map<std::string, int64_t> out;
  auto rows = c.Query("SELECT `date`, `count` FROM " + QuoteIdentifier(table));
  EXPECT_TRUE(rows.ok()) << rows.status().message();
  if (rows.ok()) {
    for (auto& r : rows->rows) out[*r[0]] = std::stoll(*r[1]);
  }
  return out;
}

// A query's rows as sorted "a|b|c" strings (NULL as "NULL"): to compare a table with a
// reference computed by the server.
inline std::vector<std::string> SortedRows(Connection& c, const std::string& sql) {
  std::vector<std::string> out;
  auto r = c.Query(sql);
  EXPECT_TRUE(r.ok()) << r.status().message() << "\n" << sql;
  if (!r.ok()) return out;
  for (const auto& row : r->rows) {
    std::string line;
    for (size_t i = 0; i < row.size(); ++i) line += (i ? "|" : "") + row[i].value_or("NULL");
    out.push_back(line);
  }
  std::sort(out.begin(), out.end());
  return out;
}

// Every read model equals the reference computed by the server from the event table.
inline void ExpectEveryReadModelMatchesTheEvents(Connection& c) {
  CreateReferenceView(c);
  for (const auto& [table, sql] : ReferenceQueries()) {
    EXPECT_EQ(CompareWithReference(c, table, sql), "");
  }
  EXPECT_EQ(TableAsMap(c, "sessions_per_day"), ReferenceSessions(c));
}

}  // namespace rw::testing
