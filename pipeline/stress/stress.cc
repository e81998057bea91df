#include "pipeline/stress/stress.h"

#include <fmt/core.h>
#include <strings.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <latch>
#include <map>
#include <mutex>
#include <random>
#include <thread>

#include "config/models.h"
#include "base/fault.h"
#include "pipeline/engine/compare.h"
#include "pipeline/replay/replay.h"
#include "pipeline/stress/event_store.h"
#include "pipeline/stress/order.h"
#include "pipeline/stress/report.h"
#include "projectors/declared.h"
#include "stages/control/sleep.h"
#include "stages/db/row_writer.h"
#include "stages/db/table_admin.h"
#include "stages/db/table_schema.h"
#include "stages/flow/reader.h"

namespace rw {
namespace {

using Clock = std::chrono::steady_clock;

double Ms(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration<double, std::milli>(to - from).count();
}

// The nearest-rank percentile of `v` (0 when empty).
double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t rank = static_cast<size_t>(std::ceil(p / 100.0 * static_cast<double>(v.size())));
  rank = std::clamp<size_t>(rank, 1, v.size());
  return v[rank - 1];
}

// The OrderSummary read model, declared: rewind's pipeline rebuilds it in question 3.
constexpr const char* kOrderSummaryToml = R"toml(
[[read_model]]
name   = "order_summary"
events = ['OrderCreated', 'ItemAdded', 'DiscountApplied', 'OrderConfirmed']
key    = [{ column = "order_id", field = "stream" }]
values = [
  { column = "status",         op = "last",  path = "status", on = ['OrderCreated', 'OrderConfirmed'] },
  { column = "items",          op = "count", on = ['ItemAdded'] },
  { column = "total",          op = "sum",   path = "lineTotal", type = "decimal(18,2)", on = ['ItemAdded'] },
  { column = "discount_total", op = "sum",   path = "amount", type = "decimal(18,2)", on = ['DiscountApplied'] },
  { column = "confirmed_at",   op = "first", path = "at", type = "datetime", on = ['OrderConfirmed'] },
]
)toml";

// Stress's own bookkeeping: every table it created in its database, recorded before it is
// created. It drops only those; any other table there makes it refuse the database.
constexpr const char* kOwnTables = "rewind_stress_tables";
constexpr int64_t kEventsPerStream = 100;  // question 3, as published
// With --events-table: the copy of the first events of the user's table, in stress's database.
constexpr const char* kYourSample = "your_events_sample";
constexpr const char* kYourPart = "your_events_sample_quarter";  // its first quarter
// With --events-table: the question of the results rows that measure the user's table.
constexpr const char* kYourQuestion = "your_table";
// Above this many rows (information_schema's estimate) the user's table is not COUNT(*)ed:
// the estimate stands (a full count of a large table is a long scan).
constexpr double kExactCountUpTo = 2'000'000;

// A number a query returned (0 when NULL).
double NumberOf(const std::optional<std::string>& v) { return v ? std::stod(*v) : 0.0; }

// `text` as a TOML basic string.
std::string TomlString(std::string_view text) {
  std::string out = "\"";
  for (unsigned char ch : text) {
    if (ch == '\\' || ch == '"') {
      out += '\\';
      out += static_cast<char>(ch);
    } else if (ch < 0x20 || ch == 0x7f) {
      out += fmt::format("\\u{:04X}", ch);
    } else {
      out += static_cast<char>(ch);
    }
  }
  return out + "\"";
}

class Stress {
 public:
  Stress(const StressOptions& o, const std::atomic<bool>& stop)
      : o_(o), stop_(stop), quick_(o.quick) {
    conn_ = o.connection;
    conn_.database = o.database;
  }

  int Run(std::FILE* out) {
    if (!o_.own_table && std::find(o_.only.begin(), o_.only.end(), 0) != o_.only.end()) {
      fmt::print(stderr,
                 "rewind stress: --only table measures your event table: give it with "
                 "--events-table (and its database with --database)\n");
      return exit_code::kUsage;
    }
    if (o_.own_table) {  // refused before anything is created
      if (o_.connection.database.empty()) {
        fmt::print(stderr,
                   "rewind stress: --events-table '{}' names your event table: give the database "
                   "it is in with --database (stress only reads it)\n",
                   o_.events.table);
        return exit_code::kUsage;
      }
      if (strcasecmp(o_.connection.database.c_str(), o_.database.c_str()) == 0) {
        fmt::print(stderr,
                   "rewind stress: --database '{}' is also the stress database "
                   "(--stress-database): stress creates and drops tables in its own database and "
                   "only reads yours; give another --stress-database\n",
                   o_.connection.database);
        return exit_code::kUsage;
      }
      if (Status s = CheckYours(); !s.ok()) {
        fmt::print(stderr, "rewind stress: {}\n", s.message());
        return exit_code::kError;
      }
    }
    Status s = Prepare();
    if (!s.ok()) {
      fmt::print(stderr, "rewind stress: {}\n", s.message());
      return exit_code::kError;
    }
    FaultPoint("stress-prepared");
    const auto wants = [&](int q) {
      return o_.only.empty() || std::find(o_.only.begin(), o_.only.end(), q) != o_.only.end();
    };
    s = CommitLatency("");  // first: it decides every write figure
    if (s.ok() && wants(1)) s = Question1();
    if (s.ok() && wants(2)) s = Question2();
    if (s.ok() && wants(3)) s = Question3();
    if (s.ok() && wants(4)) s = Question4();
    if (s.ok() && o_.own_table) s = YourTable();             // whatever --only says
    if (s.ok() && !stop_.load()) s = CommitLatency("_end");  // again: did the disk change?
    if (s.ok() && stop_.load()) s = Status::Error(Status::Code::kCancelled, "stopped");
    const bool reported = WriteReport(out, s);
    if (!o_.keep) Clean();
    if (!s.ok()) {
      fmt::print(stderr, "rewind stress: {}\n", s.message());
      return exit_code::kError;
    }
    if (!reported || !consistent_) return exit_code::kError;
    return exit_code::kOk;
  }

 private:
  void Progress(const std::string& what) { fmt::print(stderr, "rewind stress: {}\n", what); }

  void Add(const std::string& q, const std::string& c, const std::string& m, double v,
           const std::string& unit) {
    results_.Add(q, c, m, v, unit);
  }
  std::optional<double> Get(const std::string& q, const std::string& c,
                            const std::string& m) const {
    return results_.Get(q, c, m);
  }

  std::string ServerSettings() {
    Result<Rows> r = c_->Query(
        "SELECT @@version, @@innodb_buffer_pool_size, @@innodb_flush_log_at_trx_commit, "
        "@@sync_binlog, @@log_bin, "
        "@@max_connections, @@innodb_log_file_size");
    if (!r.ok() || r->rows.empty()) return "(not readable)";
    const auto& v = r->rows[0];
    auto s = [](const std::optional<std::string>& x) { return x.value_or("NULL"); };
    return fmt::format(
        "MariaDB {}, innodb_buffer_pool_size {} MiB, innodb_flush_log_at_trx_commit {}, "
        "sync_binlog {}, "
        "log_bin {}, max_connections {}, innodb_log_file_size {} MiB",
        s(v[0]), v[1] ? std::stoll(*v[1]) >> 20 : 0, s(v[2]), s(v[3]), s(v[4]), s(v[5]),
        v[6] ? std::stoll(*v[6]) >> 20 : 0);
  }

  bool WriteReport(std::FILE* out, const Status& status) {
    StressContext ctx;
    ctx.quick = quick_;
    ctx.repeat = o_.repeat;
    ctx.budget_ms = o_.budget_ms;
    ctx.server_settings = ServerSettings();
    ctx.durability = durability_;
    ctx.crossover_note = crossover_note_;
    ctx.problems = problems_;
    ctx.consistent = consistent_;
    ctx.your = your_;
    return WriteStressReport(o_.out, results_, ctx, status, out);
  }

  // Its own database: created when missing; refused when it holds a table that stress did
  // not record creating (its bookkeeping table alone makes no other table its own).
  Status Prepare() {
    ConnectionOptions server = conn_;
    server.database.clear();
    Result<std::unique_ptr<Connection>> admin = Connection::Open(server);
    if (!admin.ok()) return admin.status();
    admin_ = std::move(*admin);
    Result<std::optional<std::string>> exists = admin_->QueryValue(
        fmt::format("SELECT COUNT(*) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = {}",
                    admin_->Quote(conn_.database)));
    if (!exists.ok()) return exists.status();
    if (*exists && **exists != "0") {
      Result<std::vector<std::string>> strangers = TablesNotOwn();
      if (!strangers.ok()) return strangers.status();
      if (!strangers->empty()) {
        std::string names;
        for (const std::string& t : *strangers) {
          if (names.size() < 200) names += (names.empty() ? "" : ", ") + t;
        }
        return Status::InvalidInput(
            fmt::format("database '{}' holds tables that rewind stress did not create ({}); it "
                        "touches nothing there: "
                        "choose another with --stress-database",
                        conn_.database, names));
      }
    } else {
      if (Status s = admin_->Execute("CREATE DATABASE " + QuoteIdentifier(conn_.database));
          !s.ok()) {
        return s.With(
            "creating the stress database (needs the CREATE grant; or give --stress-database)");
      }
      created_ = true;
    }
    Result<std::unique_ptr<Connection>> c = Connection::Open(conn_);
    if (!c.ok()) return c.status();
    c_ = std::move(*c);
    if (Status s = c_->Execute(
            fmt::format("CREATE TABLE IF NOT EXISTS {} (table_name VARCHAR(64) NOT NULL PRIMARY "
                        "KEY, created_at DATETIME NOT NULL DEFAULT NOW()) ENGINE=InnoDB "
                        "DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin",
                        QuoteIdentifier(kOwnTables)));
        !s.ok()) {
      return s;
    }
    if (Status s = DropOwnTables(); !s.ok()) return s;  // what a run with --keep left
    store_ = std::make_unique<EventStore>(*c_, EventStoreTables{});
    Progress(fmt::format("working in database {}{} ({})", conn_.database,
                         created_ ? " (created)" : "", quick_ ? "--quick" : "full run"));
    return CreateStore(*store_);
  }

  // The tables of the database that stress did not record creating (all of them when it
  // never worked there).
  Result<std::vector<std::string>> TablesNotOwn() {
    const std::string db = admin_->Quote(conn_.database);
    Result<bool> booked = table_admin::Exists(*admin_, kOwnTables, conn_.database);
    if (!booked.ok()) return booked.status();
    const bool has_record = *booked;
    Result<Rows> tables = admin_->Query(fmt::format(
        "SELECT TABLE_NAME FROM information_schema.TABLES t WHERE TABLE_SCHEMA = {0} AND "
        "TABLE_NAME <> {1}{2} "
        "ORDER BY TABLE_NAME",
        db, admin_->Quote(kOwnTables),
        has_record
            ? fmt::format(
                  " AND NOT EXISTS (SELECT 1 FROM {}.{} o WHERE BINARY o.table_name = BINARY "
                  "t.TABLE_NAME)",
                  QuoteIdentifier(conn_.database), QuoteIdentifier(kOwnTables))
            : std::string()));
    if (!tables.ok()) return tables.status();
    std::vector<std::string> out;
    for (const auto& r : tables->rows) out.push_back(r[0].value_or(""));
    return out;
  }

  // Records `table` as stress's own, before it is created.
  Status Own(const std::string& table) {
    return c_->Execute(fmt::format("INSERT IGNORE INTO {} (table_name) VALUES ({})",
                                   QuoteIdentifier(kOwnTables), c_->Quote(table)));
  }

  // An event store's two tables, recorded, then created.
  Status CreateStore(EventStore& es) {
    if (Status s = Own(es.tables().events); !s.ok()) return s;
    if (Status s = Own(es.tables().snapshots); !s.ok()) return s;
    return es.Create();
  }

  // `table` recorded as stress's own, dropped if there, and created by `create_sql`.
  Status Recreate(const std::string& table, const std::string& create_sql) {
    if (Status s = Own(table); !s.ok()) return s;
    if (Status s = c_->Execute("DROP TABLE IF EXISTS " + QuoteIdentifier(table)); !s.ok()) return s;
    return c_->Execute(create_sql);
  }

  // Drops the tables stress recorded creating, and forgets them.
  Status DropOwnTables() {
    const std::string own_table =
        QuoteIdentifier(conn_.database) + "." + QuoteIdentifier(kOwnTables);
    Result<Rows> own = admin_->Query("SELECT table_name FROM " + own_table);
    if (!own.ok()) return own.status();
    for (const auto& r : own->rows) {
      const std::string table = r[0].value_or("");
      if (Status s =
              admin_->Execute(fmt::format("DROP TABLE IF EXISTS {}.{}",
                                          QuoteIdentifier(conn_.database), QuoteIdentifier(table)));
          !s.ok()) {
        return s;
      }
      if (Status s = admin_->Execute(
              fmt::format("DELETE FROM {} WHERE table_name = {}", own_table, admin_->Quote(table)));
          !s.ok()) {
        return s;
      }
    }
    return Status::Ok();
  }

  // The end of a run without --keep: its tables go, then its bookkeeping; the database too
  // when stress created it and nothing else is in it now.
  void Clean() {
    if (!DropOwnTables().ok()) return;
    Result<std::vector<std::string>> others = TablesNotOwn();
    if (!others.ok()) return;
    (void)admin_->Execute(fmt::format("DROP TABLE IF EXISTS {}.{}", QuoteIdentifier(conn_.database),
                                      QuoteIdentifier(kOwnTables)));
    if (created_ && others->empty())
      (void)admin_->Execute("DROP DATABASE " + QuoteIdentifier(conn_.database));
  }

  // Bulk-loads streams of generated Order events into `table`: (name, length, confirm at).
  Status LoadStreams(const std::string& table,
                     const std::vector<std::tuple<std::string, int64_t, int64_t>>& streams) {
    TsvBuilder tsv;
    auto flush = [&]() -> Status {
      if (tsv.rows() == 0) return Status::Ok();
      return c_->LoadData(LoadDataInto(table, "stream, version, type, payload"), tsv.Take());
    };
    for (const auto& [stream, length, confirm_at] : streams) {
      for (int64_t v = 1; v <= length; ++v) {
        const order::Event e = order::Generate(stream, v, confirm_at);
        tsv.Text(stream);
        tsv.Int(v);
        tsv.Text(order::TypeName(e.kind));
        tsv.Text(order::Payload(stream, e));
        tsv.EndRow();
      }
      if (tsv.bytes() > (8u << 20)) {
        if (Status s = flush(); !s.ok()) return s;
        tsv = TsvBuilder();
      }
    }
    return flush();
  }

  // The state a generated stream folds to after `n` events (computed, not loaded).
  static order::State Expected(const std::string& stream, int64_t n, int64_t confirm_at) {
    order::State s;
    for (int64_t v = 1; v <= n; ++v) order::Fold(s, order::Generate(stream, v, confirm_at));
    return s;
  }

  // The median, min and max of one point's runs, as results rows `metric`, `metric_min`
  // and `metric_max`.
  void AddSpread(const std::string& q, const std::string& c, const std::string& metric,
                 std::vector<double> runs, const std::string& unit) {
    if (runs.empty()) return;
    std::sort(runs.begin(), runs.end());
    const size_t n = runs.size();
    const double median = n % 2 ? runs[n / 2] : (runs[n / 2 - 1] + runs[n / 2]) / 2;
    Add(q, c, metric, median, unit);
    Add(q, c, metric + "_min", runs.front(), unit);
    Add(q, c, metric + "_max", runs.back(), unit);
  }
  static double Median(std::vector<double> v) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    const size_t n = v.size();
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
  }

  // Question 0, measured first because it decides every write figure: how long this
  // server takes to commit (flush) one small transaction, and one round trip without a write.
  Status CommitLatency(const std::string& when) {
    const std::string table = "es_commit_probe";
    if (Status s = Recreate(
            table,
            fmt::format("CREATE TABLE {} (id BIGINT AUTO_INCREMENT PRIMARY KEY, v INT NOT NULL) "
                        "ENGINE=InnoDB",
                        QuoteIdentifier(table)));
        !s.ok()) {
      return s;
    }
    const int n = quick_ ? 200 : 1000;
    std::vector<double> commit_p50, commit_p99, trip_p50;
    for (int r = 0; r < o_.repeat && !stop_.load(); ++r) {
      std::vector<double> commits, trips;
      for (int i = 0; i < n && !stop_.load(); ++i) {
        const auto t0 = Clock::now();
        if (Status s = c_->Execute(
                fmt::format("INSERT INTO {} (v) VALUES ({})", QuoteIdentifier(table), i));
            !s.ok()) {
          return s;
        }
        const auto t1 = Clock::now();
        if (Result<std::optional<std::string>> v = c_->QueryValue("SELECT 1"); !v.ok())
          return v.status();
        commits.push_back(Ms(t0, t1));
        trips.push_back(Ms(t1, Clock::now()));
      }
      commit_p50.push_back(Percentile(commits, 50));
      commit_p99.push_back(Percentile(commits, 99));
      trip_p50.push_back(Percentile(trips, 50));
    }
    AddSpread("commit", "autocommit_insert" + when, "p50", commit_p50, "ms");
    AddSpread("commit", "autocommit_insert" + when, "p99", commit_p99, "ms");
    AddSpread("commit", "round_trip" + when, "p50", trip_p50, "ms");
    Progress(fmt::format(
        "commit latency{}: one autocommitted insert {:.3f} ms at p50 (p99 {:.3f}); a round trip "
        "without a write {:.3f} ms",
        when.empty() ? "" : " at the end", Median(commit_p50), Median(commit_p99),
        Median(trip_p50)));
    return Status::Ok();
  }

  // Question 1: aggregate load time vs stream length. Each length loaded `loads` times in
  // each of --repeat rounds: a round's p50 gives the spread; p95/p99 pool every load.
  Status Question1() {
    const std::vector<int64_t> lengths = {10, 50, 100, 500, 1000, 5000, 10000};
    const int loads = quick_ ? 15 : 100;
    Progress(
        fmt::format("question 1: aggregate load time vs stream length ({} rounds of {} loads each)",
                    o_.repeat, loads));
    std::vector<std::tuple<std::string, int64_t, int64_t>> streams;
    for (int64_t n : lengths) streams.emplace_back(fmt::format("q1-{}", n), n, n / 2);
    if (Status s = LoadStreams(store_->tables().events, streams); !s.ok()) return s;
    for (int64_t n : lengths) {
      const std::string stream = fmt::format("q1-{}", n);
      std::vector<double> total, fetch, decode, fold, round_p50;
      for (int r = 0; r < o_.repeat && !stop_.load(); ++r) {
        std::vector<double> round;
        for (int i = 0; i <= loads && !stop_.load(); ++i) {
          LoadTimes t;
          Result<order::State> st = LoadOrder(*store_, stream, false, &t);
          if (!st.ok()) return st.status();
          if (i == 0) {  // a warm-up load, and a check of what it folds to
            if (!(*st == Expected(stream, n, n / 2))) {
              return Status::Internal(fmt::format("stream {} folded wrong", stream));
            }
            continue;
          }
          round.push_back(t.total);
          total.push_back(t.total);
          fetch.push_back(t.fetch);
          decode.push_back(t.decode);
          fold.push_back(t.fold);
        }
        round_p50.push_back(Percentile(round, 50));
      }
      const std::string c = std::to_string(n);
      AddSpread("aggregate_load", c, "p50", round_p50, "ms");
      Add("aggregate_load", c, "p95", Percentile(total, 95), "ms");
      Add("aggregate_load", c, "p99", Percentile(total, 99), "ms");
      Add("aggregate_load", c, "loads", static_cast<double>(total.size()), "count");
      Add("aggregate_load", c, "fetch_p50", Percentile(fetch, 50), "ms");
      Add("aggregate_load", c, "decode_p50", Percentile(decode, 50), "ms");
      Add("aggregate_load", c, "fold_p50", Percentile(fold, 50), "ms");
      Progress(fmt::format(
          "  {:>6} events: p50 {:.2f} ms (fetch {:.2f}, decode {:.2f}, fold {:.3f}), p99 {:.2f} ms",
          n, Median(round_p50), Percentile(fetch, 50), Percentile(decode, 50), Percentile(fold, 50),
          Percentile(total, 99)));
    }
    return Status::Ok();
  }

  // Question 2: snapshot vs full replay, the crossover, the snapshot write cost. The
  // snapshot sits 50 events before the end of every stream (4,950 of 5,000, as published),
  // so the snapshot side is one set-up at every length.
  Status Question2() {
    const std::vector<int64_t> lengths = {60, 80, 100, 150, 200, 300, 500, 1000, 2000, 5000};
    constexpr int64_t kTail = 50;
    const int loads = quick_ ? 15 : 100;
    Progress(
        fmt::format("question 2: snapshot + {} events vs full replay ({} rounds of {} loads each)",
                    kTail, o_.repeat, loads));
    std::vector<std::tuple<std::string, int64_t, int64_t>> streams;
    for (int64_t n : lengths) streams.emplace_back(fmt::format("q2-{}", n), n, n / 2);
    if (Status s = LoadStreams(store_->tables().events, streams); !s.ok()) return s;
    std::vector<double> full_p50, snap_p50;
    for (int64_t n : lengths) {
      if (Status s = SnapshotAgainstReplay(n, kTail, loads, full_p50, snap_p50); !s.ok()) return s;
    }
    Crossover(lengths, full_p50, snap_p50);
    return SnapshotWriteCost();
  }

  // Question 2 at one stream length `n`: a snapshot saved `tail` events before its end, then
  // `loads` loads (after a warm-up) by full replay and by snapshot + tail, checked equal, in
  // each of --repeat rounds. The median of the rounds' p50 of either goes onto `full_p50`
  // and `snap_p50`.
  Status SnapshotAgainstReplay(int64_t n, int64_t tail, int loads, std::vector<double>& full_p50,
                               std::vector<double>& snap_p50) {
    const std::string stream = fmt::format("q2-{}", n);
    const int64_t at = n - tail;
    if (Status s =
            store_->SaveSnapshot(stream, at, order::SnapshotJson(Expected(stream, at, n / 2)));
        !s.ok())
      return s;
    std::vector<double> full_runs, snap_runs, fetch_runs;
    for (int r = 0; r < o_.repeat && !stop_.load(); ++r) {
      std::vector<double> full, snap, snap_fetch;
      for (int i = 0; i <= loads && !stop_.load(); ++i) {
        LoadTimes a, b;
        Result<order::State> x = LoadOrder(*store_, stream, false, &a);
        if (!x.ok()) return x.status();
        Result<order::State> y = LoadOrder(*store_, stream, true, &b);
        if (!y.ok()) return y.status();
        if (!(*x == *y)) {
          return Status::Internal(
              fmt::format("stream {}: snapshot + tail differs from a full replay", stream));
        }
        if (i == 0) continue;
        full.push_back(a.total);
        snap.push_back(b.total);
        snap_fetch.push_back(b.snapshot_fetch);
      }
      full_runs.push_back(Percentile(full, 50));
      snap_runs.push_back(Percentile(snap, 50));
      fetch_runs.push_back(Percentile(snap_fetch, 50));
    }
    const std::string c = std::to_string(n);
    AddSpread("snapshot", c, "full_p50", full_runs, "ms");
    AddSpread("snapshot", c, "snapshot_p50", snap_runs, "ms");
    AddSpread("snapshot", c, "snapshot_fetch_p50", fetch_runs, "ms");
    full_p50.push_back(Median(full_runs));
    snap_p50.push_back(Median(snap_runs));
    Progress(
        fmt::format("  {:>5} events: full {:.2f} ms, snapshot at {} + {} events {:.2f} ms (the "
                    "snapshot's read "
                    "{:.3f} ms)",
                    n, full_p50.back(), at, tail, snap_p50.back(), Median(fetch_runs)));
    return Status::Ok();
  }

  // The crossover: where the full replay starts to cost more than snapshot + tail,
  // interpolated between the two measured lengths around the change (`full_p50` and
  // `snap_p50` at each of `lengths`).
  void Crossover(const std::vector<int64_t>& lengths, const std::vector<double>& full_p50,
                 const std::vector<double>& snap_p50) {
    double crossover = static_cast<double>(lengths.back());
    crossover_note_ = fmt::format("beyond {} events (the longest measured)", lengths.back());
    for (size_t i = 0; i < lengths.size(); ++i) {
      const double d = full_p50[i] - snap_p50[i];
      if (d <= 0) continue;
      if (i == 0) {
        crossover = static_cast<double>(lengths[0]);
        crossover_note_ = fmt::format("at or below {} events (the shortest measured)", lengths[0]);
      } else {
        const double d0 = full_p50[i - 1] - snap_p50[i - 1];
        crossover = static_cast<double>(lengths[i - 1]) +
                    static_cast<double>(lengths[i] - lengths[i - 1]) * (-d0) / (d - d0);
        crossover_note_ = fmt::format("between {} and {} events", lengths[i - 1], lengths[i]);
      }
      break;
    }
    Add("snapshot", "crossover", "events", std::round(crossover), "count");
    Progress(fmt::format("  crossover: {:.0f} events ({})", crossover, crossover_note_));
  }

  // Question 2's write cost: commands that load the order (snapshot + tail), append one
  // event, and save a snapshot every k events.
  Status SnapshotWriteCost() {
    const int commands = quick_ ? 300 : 2000;
    for (int every : {10, 100}) {
      std::vector<double> per_command, per_snapshot, command_ms;
      for (int r = 0; r < o_.repeat && !stop_.load(); ++r) {
        const std::string stream = fmt::format("q2-every-{}-r{}", every, r);
        double snapshot_ms = 0, total_ms = 0;
        int snapshots = 0;
        int64_t version = 0;
        for (int i = 1; i <= commands && !stop_.load(); ++i) {
          const auto t0 = Clock::now();
          LoadTimes t;
          Result<order::State> st = LoadOrder(*store_, stream, true, &t);
          if (!st.ok()) return st.status();
          const order::Event e = order::Generate(stream, version + 1, 0);
          Result<AppendOutcome> a = store_->Append(
              stream, version, {{order::TypeName(e.kind), order::Payload(stream, e)}});
          if (!a.ok()) return a.status();
          if (*a != AppendOutcome::kAppended)
            return Status::Internal("a lone writer met a conflict");
          ++version;
          order::Fold(*st, e);
          if (version % every == 0) {
            const auto s0 = Clock::now();
            if (Status s = store_->SaveSnapshot(stream, version, order::SnapshotJson(*st)); !s.ok())
              return s;
            snapshot_ms += Ms(s0, Clock::now());
            ++snapshots;
          }
          total_ms += Ms(t0, Clock::now());
        }
        per_command.push_back(snapshot_ms / commands);
        per_snapshot.push_back(snapshots ? snapshot_ms / snapshots : 0);
        command_ms.push_back(total_ms / commands);
      }
      const std::string c = fmt::format("every_{}", every);
      AddSpread("snapshot", c, "write_per_command", per_command, "ms");
      AddSpread("snapshot", c, "per_snapshot", per_snapshot, "ms");
      AddSpread("snapshot", c, "command", command_ms, "ms");
      Progress(
          fmt::format("  snapshot every {}: {:.3f} ms per command ({:.2f} ms per snapshot; a "
                      "command takes {:.2f} ms)",
                      every, Median(per_command), Median(per_snapshot), Median(command_ms)));
    }
    return Status::Ok();
  }

  // One page of a keyset read of `table`: (stream, type, payload, position).
  Status ReadPage(Connection& c, const std::string& table, int64_t after, const std::string& where,
                  size_t limit, std::vector<std::array<std::string, 4>>& rows, int64_t& last) {
    rows.clear();
    return c.Stream(fmt::format("SELECT position, stream, type, payload FROM {} WHERE position > "
                                "{}{} ORDER BY position LIMIT {}",
                                QuoteIdentifier(table), after, where, limit),
                    [&](char** v, unsigned long* len) {
                      last = std::strtoll(v[0], nullptr, 10);
                      rows.push_back({std::string(v[1], len[1]), std::string(v[2], len[2]),
                                      std::string(v[3], len[3]), std::string(v[0], len[0])});
                    });
  }

  // OrderSummary by hand, as an application without rewind would: one upsert per event,
  // autocommitted (batch 1), or batches of `batch` events each saved by one multi-row
  // upsert, autocommitted: one statement and one commit per batch.
  Status RebuildByHand(const std::string& events, const TableSpec& spec, const std::string& table,
                       int batch) {
    if (Status s = Recreate(table, table_schema::CreateTableSql(spec, table)); !s.ok()) return s;
    return SaveSummary(*c_, events, spec, table, batch);
  }

  // The loop of RebuildByHand on connection `c`, into the (empty) `table`.
  Status SaveSummary(Connection& c, const std::string& events, const TableSpec& spec,
                     const std::string& table, int batch) {
    const std::string prefix = fmt::format("INSERT INTO {} ({}) VALUES ", QuoteIdentifier(table),
                                           table_schema::StoredColumnList(spec));
    const std::string merge = table_schema::MergeClause(spec);
    std::vector<std::array<std::string, 4>> rows;
    int64_t after = 0, last = 0;
    std::string sql = prefix;
    int in_statement = 0;
    const auto save = [&]() -> Status {
      if (in_statement == 0) return Status::Ok();
      sql += merge;
      Status s = c.Execute(sql);
      sql = prefix;
      in_statement = 0;
      return s;
    };
    while (!stop_.load()) {
      if (Status s = ReadPage(c, events, after, "", 10000, rows, last); !s.ok()) return s;
      if (rows.empty()) break;
      after = last;
      for (const auto& [stream, type, payload, position] : rows) {
        if (order::KindOf(type) == order::Kind::kNoteAdded) continue;
        Result<order::Event> e = DecodeOrderEvent(type, payload);
        if (!e.ok()) return e.status();
        sql += in_statement ? ",(" : "(";
        c.AppendQuoted(sql, stream);
        sql += ", UNHEX(SHA2(";
        c.AppendQuoted(sql, stream);
        sql += ", 256)), ";
        const auto cents = [](int64_t c) { return fmt::format("{}.{:02d}", c / 100, c % 100); };
        // status (last) and confirmed_at (first) each with the event's position, which their
        // merge compares (stages/db/table_schema.h).
        switch (e->kind) {
          case order::Kind::kCreated:
            sql += fmt::format("'created', {}, 0, 0, 0, NULL, NULL)", position);
            break;
          case order::Kind::kItemAdded:
            sql += fmt::format("NULL, NULL, 1, {}, 0, NULL, NULL)", cents(e->cents));
            break;
          case order::Kind::kDiscountApplied:
            sql += fmt::format("NULL, NULL, 0, 0, {}, NULL, NULL)", cents(e->cents));
            break;
          case order::Kind::kConfirmed:
            sql += fmt::format("'confirmed', {}, 0, 0, 0, ", position);
            c.AppendQuoted(sql, e->at);
            sql += fmt::format(", {})", position);
            break;
          default:
            return Status::Internal(fmt::format("event type {} in OrderSummary", type));
        }
        if (++in_statement == batch) {
          if (Status s = save(); !s.ok()) return s;
        }
      }
    }
    return save();
  }

  // Discounts per order: a projection of one event type in five (DiscountApplied, 20 % of
  // the events, as published), filtered in the server (WHERE type = ...) or in the client
  // (every event read).
  Status DiscountsPerOrder(const std::string& events, const std::string& table, bool in_server) {
    std::map<std::string, std::pair<int64_t, int64_t>> per_order;  // (discounts, cents)
    std::vector<std::array<std::string, 4>> rows;
    int64_t after = 0, last = 0;
    const std::string where =
        in_server ? fmt::format(" AND type = '{}'", order::kDiscountApplied) : "";
    while (!stop_.load()) {
      if (Status s = ReadPage(*c_, events, after, where, 10000, rows, last); !s.ok()) return s;
      if (rows.empty()) break;
      after = last;
      for (const auto& [stream, type, payload, position] : rows) {
        if (order::KindOf(type) != order::Kind::kDiscountApplied) continue;
        Result<order::Event> e = DecodeOrderEvent(type, payload);
        if (!e.ok()) return e.status();
        auto& [n, cents] = per_order[stream];
        ++n;
        cents += e->cents;
      }
    }
    if (Status s = Recreate(
            table,
            fmt::format("CREATE TABLE {} (order_id VARCHAR(64) PRIMARY KEY, discounts BIGINT NOT "
                        "NULL, discount_cents BIGINT NOT NULL)",
                        QuoteIdentifier(table)));
        !s.ok()) {
      return s;
    }
    std::string sql;
    size_t n = 0;
    for (const auto& [stream, v] : per_order) {
      sql += sql.empty() ? fmt::format("INSERT INTO {} VALUES (", QuoteIdentifier(table)) : ",(";
      c_->AppendQuoted(sql, stream);
      sql += fmt::format(",{},{})", v.first, v.second);
      if (++n % 1000 == 0 || n == per_order.size()) {
        if (Status s = c_->Execute(sql); !s.ok()) return s;
        sql.clear();
      }
    }
    return Status::Ok();
  }

  // Question 3: projection rebuild across volumes, three ways, and server vs client filtering.
  // Every method runs --repeat times at each volume but one save per event (once; estimated
  // above 100,000 events) and, above 100,000 events, batches (once).
  Status Question3() {
    const std::vector<int64_t> volumes =
        quick_ ? std::vector<int64_t>{1000, 2000, 3000, 5000, 10000}
               : std::vector<int64_t>{10000, 30000, 100000, 300000, 1000000};
    Result<std::vector<ModelPlan>> plans =
        ParseModels(kOrderSummaryToml, "order_summary (built in)", "es_events");
    if (!plans.ok()) return plans.status();
    const TableSpec spec = MakeDeclaredProjector((*plans)[0])->table();
    Progress(
        "question 3: rebuilding OrderSummary (100 events per order) one save per event, in batches "
        "of 50, "
        "and with rewind's pipeline");
    for (int64_t volume : volumes) {
      const bool parallel = volume == (quick_ ? volumes.back() : 100000);
      if (Status s = RebuildVolume(volume, spec, (*plans)[0], parallel); !s.ok()) return s;
    }
    return Status::Ok();
  }

  // Question 3 at one volume: its events loaded into a table of their own, OrderSummary
  // rebuilt by each method (`plan` for rewind's pipeline, `spec` its table), the discounts
  // filtered in the server and in the client, the parallel projections when `parallel`,
  // and the checks that the tables agree. The event table is dropped after.
  Status RebuildVolume(int64_t volume, const TableSpec& spec, const ModelPlan& plan,
                       bool parallel) {
    const std::string table = fmt::format("es_rebuild_{}", volume);
    if (Status s = LoadRebuildEvents(table, volume); !s.ok()) return s;
    // One save per event is a commit per event: once per volume, and above 100,000 events
    // estimated from the 100,000-event run (minutes of commits otherwise).
    const std::optional<double> single_100k =
        Get("projection_rebuild", "100000/single", "seconds");
    const bool single_estimated = volume > 100000 && single_100k.has_value();
    if (single_estimated) {
      EstimateSingle(volume, *single_100k);
    } else if (Status s = TimeRebuild(
                   volume, "single", 1,
                   [&] { return RebuildByHand(table, spec, "summary_single", 1); });
               !s.ok()) {
      return s;
    }
    if (Status s = TimeRebuild(volume, "batched", volume > 100000 ? 1 : o_.repeat,
                               [&] { return RebuildByHand(table, spec, "summary_batched", 50); });
        !s.ok()) {
      return s;
    }
    if (Status s =
            TimeRebuild(volume, "pipeline", o_.repeat, [&] { return Pipeline(table, plan); });
        !s.ok())
      return s;
    if (Status s = TimeRebuild(volume, "filtered_server", o_.repeat,
                               [&] { return DiscountsPerOrder(table, "discounts_server", true); });
        !s.ok()) {
      return s;
    }
    if (Status s = TimeRebuild(volume, "filtered_client", o_.repeat,
                               [&] { return DiscountsPerOrder(table, "discounts_client", false); });
        !s.ok()) {
      return s;
    }
    const std::string vs = std::to_string(volume);
    Add("projection_rebuild", vs + "/filtered_server", "speedup_vs_client",
        Get("projection_rebuild", vs + "/filtered_client", "seconds").value_or(0) /
            std::max(1e-9,
                     Get("projection_rebuild", vs + "/filtered_server", "seconds").value_or(1)),
        "x");
    if (Status s = CheckSummaries(spec, volume, single_estimated); !s.ok()) return s;
    if (parallel) {
      if (Status s = ParallelProjections(table, spec, volume); !s.ok()) return s;
    }
    CheckFilteredProjections(table, volume);
    (void)c_->Execute("DROP TABLE IF EXISTS " + QuoteIdentifier(table));
    return Status::Ok();
  }

  // An event store whose events table is `table`, recorded and created, holding `volume`
  // generated events in orders of kEventsPerStream (three in four confirmed), analyzed.
  Status LoadRebuildEvents(const std::string& table, int64_t volume) {
    EventStore es(*c_, EventStoreTables{table, "es_snapshots"});
    if (Status s = CreateStore(es); !s.ok()) return s;
    std::vector<std::tuple<std::string, int64_t, int64_t>> streams;
    for (int64_t i = 0; i < volume / kEventsPerStream; ++i) {
      streams.emplace_back(fmt::format("order-{:07d}", i), kEventsPerStream, i % 4 == 3 ? 0 : 90);
    }
    if (Status s = LoadStreams(table, streams); !s.ok()) return s;
    (void)c_->Execute("ANALYZE TABLE " + QuoteIdentifier(table));
    return Status::Ok();
  }

  // One method of question 3 at `volume` events, run `runs` times: its seconds and events/s
  // (median, min, max) and its number of runs.
  Status TimeRebuild(int64_t volume, const std::string& method, int runs,
                     const std::function<Status()>& run) {
    std::vector<double> seconds, rates;
    for (int r = 0; r < runs && !stop_.load(); ++r) {
      const auto t0 = Clock::now();
      if (Status s = run(); !s.ok())
        return s.With(fmt::format("{} events, {}", volume, method));
      seconds.push_back(Ms(t0, Clock::now()) / 1000);
      rates.push_back(static_cast<double>(volume) / seconds.back());
    }
    const std::string c = fmt::format("{}/{}", volume, method);
    AddSpread("projection_rebuild", c, "seconds", seconds, "s");
    AddSpread("projection_rebuild", c, "events_per_s", rates, "events/s");
    Add("projection_rebuild", c, "runs", static_cast<double>(seconds.size()), "count");
    Progress(fmt::format("  {:>8} events, {:<16} {:8.2f} s {:>10.0f} events/s ({} run(s))",
                         volume, method, Median(seconds), Median(rates), seconds.size()));
    return Status::Ok();
  }

  // One save per event above 100,000 events: its time estimated from the 100,000-event
  // run's `single_100k` seconds, not measured.
  void EstimateSingle(int64_t volume, double single_100k) {
    const std::string c = fmt::format("{}/single", volume);
    Add("projection_rebuild", c, "seconds", single_100k * static_cast<double>(volume) / 100000,
        "s");
    Add("projection_rebuild", c, "events_per_s", 100000 / single_100k, "events/s");
    Add("projection_rebuild", c, "estimated", 1, "count");
    Progress(
        fmt::format("  {:>8} events, single           estimated from 100,000 events: {:.1f} s",
                    volume, single_100k * static_cast<double>(volume) / 100000));
  }

  // The three OrderSummary tables of question 3 at `volume` must be the same table (the
  // one-save-per-event one not when it was estimated): each difference is a problem.
  Status CheckSummaries(const TableSpec& spec, int64_t volume, bool single_estimated) {
    for (const char* other : {"summary_single", "summary_batched"}) {
      if (single_estimated && std::string(other) == "summary_single") continue;
      Result<TableDiff> d = CompareTables(*c_, spec, "order_summary", other);
      if (!d.ok()) return d.status();
      if (!d->identical() || d->live_rows != static_cast<uint64_t>(volume / kEventsPerStream)) {
        consistent_ = false;
        problems_.push_back(
            fmt::format("question 3, {} events: {} differs from the pipeline's order_summary",
                        volume, other));
      }
    }
    return Status::Ok();
  }

  // The two filtered projections of question 3 over `table` must be the same table, with a
  // row for every order that has a discount: otherwise a problem.
  void CheckFilteredProjections(const std::string& table, int64_t volume) {
    Result<std::optional<std::string>> same = c_->QueryValue(
        "SELECT COUNT(*) FROM discounts_server s JOIN discounts_client c USING (order_id) "
        "WHERE s.discounts = c.discounts AND s.discount_cents = c.discount_cents");
    Result<std::optional<std::string>> all =
        c_->QueryValue("SELECT COUNT(*) FROM discounts_client");
    Result<std::optional<std::string>> want =
        c_->QueryValue(fmt::format("SELECT COUNT(DISTINCT stream) FROM {} WHERE type = '{}'",
                                   QuoteIdentifier(table), order::kDiscountApplied));
    if (!same.ok() || !all.ok() || !want.ok() || **same != **all || **all != **want) {
      consistent_ = false;
      problems_.push_back(
          fmt::format("question 3, {} events: the filtered projections differ", volume));
    }
  }

  // Parallel projections: kParallel read models (OrderSummary by hand in batches of 50, each
  // its own table) rebuilt one after the other on one connection, then at once, each on its
  // own thread and connection (opened before the clock); each table checked against the
  // pipeline's.
  Status ParallelProjections(const std::string& events, const TableSpec& spec, int64_t volume) {
    constexpr int kParallel = 4;
    const auto tables = [&](const char* how) {
      std::vector<std::string> t;
      for (int i = 0; i < kParallel; ++i) t.push_back(fmt::format("summary_{}_{}", how, i));
      return t;
    };
    std::vector<double> one_by_one, at_once;
    for (int r = 0; r < o_.repeat && !stop_.load(); ++r) {
      for (const std::string& t : tables("seq")) {
        if (Status s = Recreate(t, table_schema::CreateTableSql(spec, t)); !s.ok()) return s;
      }
      auto t0 = Clock::now();
      for (const std::string& t : tables("seq")) {
        if (Status s = SaveSummary(*c_, events, spec, t, 50); !s.ok()) return s;
      }
      one_by_one.push_back(Ms(t0, Clock::now()) / 1000);
      std::vector<std::unique_ptr<Connection>> conns;
      for (const std::string& t : tables("par")) {
        if (Status s = Recreate(t, table_schema::CreateTableSql(spec, t)); !s.ok()) return s;
        Result<std::unique_ptr<Connection>> c = Connection::Open(conn_);
        if (!c.ok()) return c.status();
        conns.push_back(std::move(*c));
      }
      std::vector<Status> results(kParallel);
      std::vector<std::thread> threads;
      t0 = Clock::now();
      for (int i = 0; i < kParallel; ++i) {
        threads.emplace_back([&, i] {
          results[static_cast<size_t>(i)] =
              SaveSummary(*conns[static_cast<size_t>(i)], events, spec,
                          tables("par")[static_cast<size_t>(i)], 50);
        });
      }
      for (auto& t : threads) t.join();
      at_once.push_back(Ms(t0, Clock::now()) / 1000);
      for (const Status& s : results) {
        if (!s.ok()) return s;
      }
    }
    for (const std::string& t : tables("par")) {
      Result<TableDiff> d = CompareTables(*c_, spec, "order_summary", t);
      if (!d.ok()) return d.status();
      if (!d->identical()) {
        consistent_ = false;
        problems_.push_back(
            fmt::format("question 3, parallel projections: {} differs from order_summary", t));
      }
    }
    const std::string c = fmt::format("{}/{}_models", volume, kParallel);
    AddSpread("parallel_projections", c, "one_by_one_seconds", one_by_one, "s");
    AddSpread("parallel_projections", c, "at_once_seconds", at_once, "s");
    Progress(fmt::format(
        "  {} read models of {} events: one after the other {:.2f} s, at once on {} connections "
        "{:.2f} s",
        kParallel, volume, Median(one_by_one), kParallel, Median(at_once)));
    return Status::Ok();
  }

  // rewind's own pipeline over the stress event table, with the declared OrderSummary.
  Status Pipeline(const std::string& table, const ModelPlan& plan) {
    ReplayOptions po = PipelineOptions(table, plan);
    std::vector<std::unique_ptr<Projector>> projectors;
    projectors.push_back(MakeDeclaredProjector(plan));
    if (Status s = OwnBuildTables(projectors[0]->table().name); !s.ok()) return s;
    return RunPipeline(po, std::move(projectors));
  }

  // What the pipeline may create for the read model whose live table is `live`, recorded as
  // stress's own: its bookkeeping, the live table, the shadow table and the old copy the
  // swap leaves.
  Status OwnBuildTables(const std::string& live) {
    std::vector<std::string> made(std::begin(kBookkeepingTables), std::end(kBookkeepingTables));
    for (const std::string& t :
         {live, live + table_admin::kShadowSuffix, live + table_admin::kOldSuffix}) {
      made.push_back(t);
    }
    for (const std::string& t : made) {
      if (Status s = Own(t); !s.ok()) return s;
    }
    return Status::Ok();
  }

  ReplayOptions PipelineOptions(const std::string& table, const ModelPlan& plan) const {
    ReplayOptions po;
    po.connection = conn_;
    po.events.table = table;
    po.events.id_column = "position";
    po.events.type_column = "type";
    po.events.payload_column = "payload";
    po.events.time_column = "created_at";
    po.projectors = {plan.name};
    po.progress = ProgressMode::kQuiet;
    return po;
  }

  // The pipeline's run alone (its tables already recorded as stress's own): it uses
  // connections of its own, never c_, so it may run on another thread.
  Status RunPipeline(const ReplayOptions& po, std::vector<std::unique_ptr<Projector>> projectors) {
    ReplaySummary sum = RunRebuild(po, std::move(projectors), stop_, PlanFor(po));
    if (!sum.status.ok()) return sum.status;
    if (sum.failures != 0)
      return Status::Internal(fmt::format("the pipeline recorded {} failures", sum.failures));
    return Status::Ok();
  }

  // ---- With --events-table: the user's own event table ----------------------------------

  // The user's event table, checked before stress creates anything: it is read through a
  // connection of its own whose transactions are READ ONLY (the server refuses any write
  // there), by plain consistent SELECTs (no locking read, no DDL, nothing written there).
  Status CheckYours() {
    if (!o_.events.type_path.empty()) {
      return Status::InvalidInput(
          "--type-path: rewind stress measures tables whose event type is a column; give it "
          "with --type-column");
    }
    Result<std::unique_ptr<Connection>> c = Connection::Open(o_.connection);
    if (!c.ok())
      return c.status().With(
          fmt::format("your database '{}' (--database)", o_.connection.database));
    theirs_ = std::move(*c);
    if (Status s = theirs_->Execute("SET SESSION TRANSACTION READ ONLY"); !s.ok()) return s;
    if (Status s = CheckEventTable(*theirs_, o_.events, false); !s.ok())
      return s.With("--events-table");
    Result<Rows> cols = theirs_->Query(fmt::format(
        "SELECT COLUMN_NAME, COLUMN_TYPE FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = "
        "DATABASE() AND TABLE_NAME = {} ORDER BY ORDINAL_POSITION",
        theirs_->Quote(o_.events.table)));
    if (!cols.ok()) return cols.status();
    for (const auto& r : cols->rows) {
      their_columns_.emplace_back(r[0].value_or(""), r[1].value_or(""));
      if (their_columns_.back().first == o_.events.id_column) id_at_ = their_columns_.size() - 1;
      if (their_columns_.back().first == o_.events.payload_column)
        payload_at_ = their_columns_.size() - 1;
      if (their_columns_.back().first == o_.events.time_column) their_time_ = true;
    }
    if (!o_.your_models_file.empty()) {
      Result<std::vector<ModelPlan>> plans = LoadModels(o_.your_models_file, o_.events.table);
      if (!plans.ok()) return plans.status();
      std::vector<std::string> fields;
      for (const ModelPlan& p : *plans) {
        for (const KeyPlan& k : p.keys) {
          if (k.source.column) fields.push_back(k.source.name);
        }
        for (const ValuePlan& v : p.values) {
          if (v.source.column) fields.push_back(v.source.name);
        }
      }
      if (Status s = CheckReadColumns(*theirs_, o_.events, fields); !s.ok())
        return s.With("--models");
      your_models_ = std::move(*plans);
    }
    Result<Rows> tables = TheirTables();
    if (!tables.ok()) return tables.status();
    their_tables_ = std::move(tables->rows);
    return Status::Ok();
  }

  // The tables of the user's database (to show stress created none there).
  Result<Rows> TheirTables() {
    return theirs_->Query(
        "SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() ORDER "
        "BY TABLE_NAME");
  }

  // The columns of the user's table as a select list.
  std::string TheirColumnList() const {
    std::string list;
    for (const auto& [name, type] : their_columns_)
      list += (list.empty() ? "" : ", ") + QuoteIdentifier(name);
    return list;
  }

  // The rows of `table` (on `c`) with id <= `last`: their count and the sum of a 60-bit hash
  // of each row's columns, as one text. The user's table and its copy give the same.
  Result<std::string> Fingerprint(Connection& c, const std::string& table,
                                  const std::string& last) {
    std::string row = "CONCAT_WS(0x1f";
    for (const auto& [name, type] : their_columns_) {
      row += fmt::format(", IFNULL(CAST({} AS BINARY), 0x00)", QuoteIdentifier(name));
    }
    row += ")";
    Result<std::optional<std::string>> v = c.QueryValue(fmt::format(
        "SELECT CONCAT(COUNT(*), '/', IFNULL(SUM(CAST(CONV(SUBSTRING(MD5({}), 1, 15), 16, 10) AS "
        "UNSIGNED)), 0)) FROM {} WHERE {} <= {}",
        row, QuoteIdentifier(table), QuoteIdentifier(o_.events.id_column), last));
    if (!v.ok()) return v.status();
    return v->value_or("");
  }

  // Events per type (exact bytes) of `table` on `c` with id <= `last`, from SQL.
  Result<std::map<std::string, int64_t>> TypeCounts(Connection& c, const std::string& table,
                                                    const std::string& last) {
    Result<Rows> r = c.Query(fmt::format(
        "SELECT CAST({0} AS BINARY), COUNT(*) FROM {1} WHERE {2} <= {3} AND {0} IS NOT NULL "
        "GROUP BY 1",
        QuoteIdentifier(o_.events.type_column), QuoteIdentifier(table),
        QuoteIdentifier(o_.events.id_column), last));
    if (!r.ok()) return r.status();
    std::map<std::string, int64_t> out;
    for (const auto& row : r->rows) out[row[0].value_or("")] = std::stoll(row[1].value_or("0"));
    return out;
  }

  // Events per type as a read model holds them: its (event_type, events) rows summed by
  // exact bytes.
  Result<std::map<std::string, int64_t>> ModelTypeCounts(const std::string& table) {
    std::map<std::string, int64_t> out;
    Status s = c_->Stream(
        fmt::format("SELECT CAST(event_type AS BINARY), events FROM {}", QuoteIdentifier(table)),
        [&](char** v, unsigned long* len) {
          out[std::string(v[0] ? v[0] : "", v[0] ? len[0] : 0)] += std::strtoll(v[1], nullptr, 10);
        });
    if (!s.ok()) return s;
    return out;
  }

  // The user's table: its size, a sample of its first events copied into stress's database,
  // the rebuild measured on it (rewind's pipeline; by hand, one save per event and batches of
  // 50), the full table's time estimated, and the checks.
  Status YourTable() {
    const std::string table = o_.events.table;
    const std::string shown = o_.connection.database + "." + table;
    your_.table = shown;
    Progress(fmt::format("your table {}: read only", shown));
    double rows = 0;
    if (Status s = YourTableSize(table, shown, rows); !s.ok()) return s;
    uint64_t copied = 0;
    std::string last;
    if (Status s = YourSample(table, rows, copied, last); !s.ok()) return s;
    if (Status s = YourSampleTypes(shown, copied); !s.ok()) return s;
    Result<std::vector<ModelPlan>> builtin = YourBuiltinModel();
    if (!builtin.ok()) return builtin.status();
    // rewind's pipeline is timed on the first quarter of the sample as well as on all of it
    // (YourPipelineTimed).
    const uint64_t part = copied / 4;
    if (Status s = CreateYourPart(part); !s.ok()) return s;
    std::string single_last;
    if (Status s = YourRebuilds(*builtin, rows, copied, part, single_last); !s.ok()) return s;
    // The checks: each read model's events per type equal a GROUP BY over the user's table
    // restricted to the sampled ids; the copy equals those rows; the user's rows and
    // database are as they were.
    if (Status s = CheckYourTypeCounts(table, shown, last, single_last); !s.ok()) return s;
    if (Status s = CheckYourRowsAndTables(table, shown, last, copied); !s.ok()) return s;
    your_.checked = consistent_;
    return Status::Ok();
  }

  // The size of the user's `table` (`shown` as database.table): information_schema's
  // estimate, MIN/MAX of the id, and an exact count when the estimate is small enough for
  // COUNT(*) to be quick. `rows` gets the count, or the estimate.
  Status YourTableSize(const std::string& table, const std::string& shown, double& rows) {
    const std::string q = kYourQuestion;
    Result<Rows> info = theirs_->Query(fmt::format(
        "SELECT TABLE_ROWS, DATA_LENGTH, INDEX_LENGTH FROM information_schema.TABLES WHERE "
        "TABLE_SCHEMA = DATABASE() AND TABLE_NAME = {}",
        theirs_->Quote(table)));
    if (!info.ok()) return info.status();
    const double estimate = info->rows.empty() ? 0 : NumberOf(info->rows[0][0]);
    Add(q, "table", "rows_information_schema_estimate", estimate, "count");
    Add(q, "table", "data_bytes", info->rows.empty() ? 0 : NumberOf(info->rows[0][1]), "bytes");
    Add(q, "table", "index_bytes", info->rows.empty() ? 0 : NumberOf(info->rows[0][2]), "bytes");
    const std::string id = QuoteIdentifier(o_.events.id_column);
    Result<Rows> span = theirs_->Query(
        fmt::format("SELECT MIN({0}), MAX({0}) FROM {1}", id, QuoteIdentifier(table)));
    if (!span.ok()) return span.status();
    if (span->rows.empty() || !span->rows[0][0])
      return Status::InvalidInput(
          fmt::format("your event table {} is empty: nothing to measure", shown));
    your_.min_id = *span->rows[0][0];
    your_.max_id = span->rows[0][1].value_or("");
    rows = estimate;
    if (estimate <= kExactCountUpTo) {
      Result<std::optional<std::string>> n =
          theirs_->QueryValue(fmt::format("SELECT COUNT(*) FROM {}", QuoteIdentifier(table)));
      if (!n.ok()) return n.status();
      rows = NumberOf(*n);
      Add(q, "table", "rows_exact", rows, "count");
      your_.rows_how = "exact COUNT(*)";
    } else {
      your_.rows_how = fmt::format(
          "information_schema's estimate (InnoDB's sampled statistics: often 10-50 % off; not "
          "COUNT(*)ed above {} rows)",
          ReadableNumber(kExactCountUpTo));
    }
    return Status::Ok();
  }

  // The sample: the first N events of the user's `table` by id, copied into kYourSample, and
  // their figures. `copied` gets how many, `last` the last id copied; `rows` (the table's)
  // becomes at least `copied`.
  Status YourSample(const std::string& table, double& rows, uint64_t& copied, std::string& last) {
    const std::string q = kYourQuestion;
    const uint64_t want = o_.sample ? o_.sample : (quick_ ? 20000 : 200000);
    if (Status s = CreateYourSample(); !s.ok()) return s;
    const std::string list = TheirColumnList();
    std::vector<double> payload_bytes;
    const auto c0 = Clock::now();
    if (Status s = CopyYourSample(table, list, want, copied, last, payload_bytes); !s.ok())
      return s;
    if (stop_.load()) return Status::Error(Status::Code::kCancelled, "stopped");
    const double copy_s = Ms(c0, Clock::now()) / 1000;
    your_.last_id = last;
    Add(q, "sample", "events", static_cast<double>(copied), "count");
    Add(q, "sample", "copy_seconds", copy_s, "s");
    double sum = 0;
    for (double b : payload_bytes) sum += b;
    Add(q, "sample", "payload_avg_bytes", sum / static_cast<double>(copied), "bytes");
    Add(q, "sample", "payload_p95_bytes", Percentile(payload_bytes, 95), "bytes");
    Add(q, "sample", "payload_max_bytes", Percentile(payload_bytes, 100), "bytes");
    rows = std::max(rows, static_cast<double>(copied));
    Add(q, "table", "rows_used_for_estimates", rows, "count");
    Progress(fmt::format("  {} rows ({}); copied the first {} events (ids {} to {}) in {:.2f} s",
                         ReadableNumber(rows), your_.rows_how, copied, your_.min_id, last, copy_s));
    (void)c_->Execute("ANALYZE TABLE " + QuoteIdentifier(kYourSample));
    return Status::Ok();
  }

  // kYourSample, recorded as stress's own and created (again) with the columns of the user's
  // table, its id the primary key.
  Status CreateYourSample() {
    std::string create = "CREATE TABLE " + QuoteIdentifier(kYourSample) + " (";
    for (const auto& [name, type] : their_columns_) {
      create += fmt::format("{} {} {},", QuoteIdentifier(name), type,
                            name == o_.events.id_column ? "NOT NULL PRIMARY KEY" : "NULL");
    }
    create.back() = ')';
    create += " ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin";
    return Recreate(kYourSample, create);
  }

  // Copies up to `want` first events of the user's `table` (its columns `list`) into
  // kYourSample in keyset pages (ids may have holes and steps), each page one plain SELECT on
  // its own (no transaction held open on the user's table). `copied` and `last` get how many
  // and the last id; `payload_bytes` each payload's size.
  Status CopyYourSample(const std::string& table, const std::string& list, uint64_t want,
                        uint64_t& copied, std::string& last, std::vector<double>& payload_bytes) {
    const std::string id = QuoteIdentifier(o_.events.id_column);
    while (copied < want && !stop_.load()) {
      const uint64_t page = std::min<uint64_t>(10000, want - copied);
      TsvBuilder tsv;
      uint64_t got = 0;
      Status s = theirs_->Stream(
          fmt::format("SELECT {} FROM {}{} ORDER BY {} LIMIT {}", list, QuoteIdentifier(table),
                      last.empty() ? "" : fmt::format(" WHERE {} > {}", id, last), id, page),
          [&](char** v, unsigned long* len) {
            for (size_t i = 0; i < their_columns_.size(); ++i) {
              if (v[i] == nullptr) {
                tsv.Null();
              } else {
                tsv.Text(std::string_view(v[i], len[i]));
              }
            }
            tsv.EndRow();
            last.assign(v[id_at_], len[id_at_]);
            payload_bytes.push_back(v[payload_at_] ? static_cast<double>(len[payload_at_]) : 0);
            ++got;
          });
      if (!s.ok()) return s.With("reading your table");
      if (got == 0) break;
      if (Status s = c_->LoadData(LoadDataInto(kYourSample, list), tsv.Take()); !s.ok())
        return s.With("copying the sample");
      copied += got;
      if (got < page) break;
    }
    return Status::Ok();
  }

  // The sample's event types (from the copy, in stress's database), most first, of the
  // `copied` events; none is refused (`shown`: the user's table).
  Status YourSampleTypes(const std::string& shown, uint64_t copied) {
    const std::string q = kYourQuestion;
    Result<Rows> types = c_->Query(fmt::format(
        "SELECT CAST({0} AS BINARY), COUNT(*) FROM {1} WHERE {0} IS NOT NULL GROUP BY 1 ORDER "
        "BY 2 DESC, 1",
        QuoteIdentifier(o_.events.type_column), QuoteIdentifier(kYourSample)));
    if (!types.ok()) return types.status();
    for (const auto& r : types->rows) {
      your_.types.emplace_back(r[0].value_or(""), NumberOf(r[1]));
      std::string c = r[0].value_or("");
      std::replace(c.begin(), c.end(), ',', ';');
      if (your_.types.size() <= 10)
        Add(q, "type:" + c, "share", NumberOf(r[1]) / static_cast<double>(copied) * 100, "%");
    }
    if (your_.types.empty())
      return Status::InvalidInput(fmt::format(
          "the first events of {} have no type (column '{}' is NULL): nothing to rebuild", shown,
          o_.events.type_column));
    return Status::Ok();
  }

  // The built-in read model of the user's table: events per type (per day with a time
  // column), over the sample's types.
  Result<std::vector<ModelPlan>> YourBuiltinModel() {
    std::string toml = "[[read_model]]\nname = \"your_events_per_type\"\nevents = [";
    for (size_t i = 0; i < your_.types.size(); ++i)
      toml += (i ? ", " : "") + TomlString(your_.types[i].first);
    toml +=
        "]\nkey = [{ column = \"event_type\", field = " + TomlString(o_.events.type_column) + " }";
    if (their_time_) {
      toml += ", { column = \"day\", field = " + TomlString(o_.events.time_column) +
              ", bucket = \"day\" }";
    }
    toml += "]\nvalues = [{ column = \"events\", op = \"count\" }]\n";
    Result<std::vector<ModelPlan>> builtin =
        ParseModels(toml, "your_events_per_type (built in)", kYourSample);
    if (!builtin.ok()) return builtin.status();
    your_.model = their_time_ ? fmt::format("events per type per day (the day of `{}`)",
                                            o_.events.time_column)
                              : "events per type (no time column `" + o_.events.time_column + "`)";
    return builtin;
  }

  // kYourPart, recorded as stress's own and created (again) like kYourSample, holding its
  // first `part` events.
  Status CreateYourPart(uint64_t part) {
    const std::string id = QuoteIdentifier(o_.events.id_column);
    if (Status s =
            Recreate(kYourPart, fmt::format("CREATE TABLE {} LIKE {}", QuoteIdentifier(kYourPart),
                                            QuoteIdentifier(kYourSample)));
        !s.ok()) {
      return s;
    }
    return c_->Execute(fmt::format("INSERT INTO {} SELECT * FROM {} ORDER BY {} LIMIT {}",
                                   QuoteIdentifier(kYourPart), QuoteIdentifier(kYourSample), id,
                                   part));
  }

  // The methods on the user's sample (`copied` events; its first quarter `part`), timed;
  // each estimated for the whole table (`rows`) by its time per event: rewind's pipeline with
  // the built-in read model (`builtin`) and with the user's, by hand in batches of 50, and one
  // save per event on the first events only (`single_last` gets the last id it saved).
  Status YourRebuilds(const std::vector<ModelPlan>& builtin, double rows, uint64_t copied,
                      uint64_t part, std::string& single_last) {
    const std::string q = kYourQuestion;
    uint64_t failures = 0;
    if (Status s = YourPipelineTimed("rewind", builtin, rows, copied, part, failures); !s.ok())
      return s;
    if (failures) {
      consistent_ = false;
      problems_.push_back(
          fmt::format("your table: the built-in read model recorded {} failures", failures));
    }
    if (!your_models_.empty()) {
      uint64_t theirs_failed = 0;
      if (Status s = YourPipelineTimed("rewind_your_models", your_models_, rows, copied, part,
                                       theirs_failed);
          !s.ok())
        return s;
      Add(q, "rewind_your_models", "failures", static_cast<double>(theirs_failed), "count");
      for (const ModelPlan& p : your_models_) your_.your_models.push_back(p.name);
    }
    if (Status s = YourByHandTimed("batched_50", o_.repeat, copied, rows,
                                   [&] { return YourByHand("your_by_hand_batched", 50, copied); });
        !s.ok()) {
      return s;
    }
    // One save per event is a commit per event: on the first events only, once.
    const uint64_t single = std::min<uint64_t>(copied, quick_ ? 2000 : 10000);
    if (Status s = YourByHandTimed(
            "single", 1, single, rows,
            [&] { return YourByHand("your_by_hand_single", 1, single, &single_last); });
        !s.ok()) {
      return s;
    }
    if (auto sec = Get(q, "single", "seconds"))
      Add(q, "single", "estimated_sample_seconds",
          *sec / static_cast<double>(single) * static_cast<double>(copied), "s");
    return Status::Ok();
  }

  // A method by hand on the user's sample, `c`, run `runs` times over `events` events: its
  // seconds, and its time per event times the table's `rows` as the estimate.
  Status YourByHandTimed(const std::string& c, int runs, uint64_t events, double rows,
                         const std::function<Status()>& run) {
    const std::string q = kYourQuestion;
    std::vector<double> seconds;
    for (int r = 0; r < runs && !stop_.load(); ++r) {
      const auto t0 = Clock::now();
      if (Status s = run(); !s.ok()) return s.With("your table, " + c);
      seconds.push_back(Ms(t0, Clock::now()) / 1000);
    }
    if (seconds.empty()) return Status::Ok();
    AddSpread(q, c, "seconds", seconds, "s");
    Add(q, c, "events", static_cast<double>(events), "count");
    // Estimated for the whole table by its time per event.
    const double median = Median(seconds), n = static_cast<double>(events);
    Add(q, c, "seconds_per_event", median / n, "s");
    Add(q, c, "estimated_full_seconds", median / n * rows, "s");
    Progress(
        fmt::format("  {:<20} {:>9} events {:8.2f} s; your {} rows: about {:.1f} s (estimate)", c,
                    events, Median(seconds), ReadableNumber(rows),
                    Median(seconds) / static_cast<double>(events) * rows));
    return Status::Ok();
  }

  // rewind's pipeline on the user's sample, `c`, with `plans`: timed on the first quarter
  // (`part` events) as well as on all of it (`copied` events), in each of --repeat rounds;
  // `failed` gets the events the models could not apply on the whole. Its cost per run
  // whatever the events (connections, tables, the swap) makes its time fixed + per event x
  // events (from the fastest run of each: on a shared machine noise only adds), and the
  // estimate for the table fixed + per event x `rows`. When the two do not tell the cost per
  // event apart from the noise (a small sample), the whole sample's time per event times the
  // rows stands: an upper bound, as it carries the cost per run.
  Status YourPipelineTimed(const std::string& c, const std::vector<ModelPlan>& plans, double rows,
                           uint64_t copied, uint64_t part, uint64_t& failed) {
    const std::string q = kYourQuestion;
    std::vector<double> whole_s, part_s;
    for (int r = 0; r < o_.repeat && !stop_.load(); ++r) {
      for (bool whole : {false, true}) {  // the whole sample last: its tables stay
        uint64_t f = 0;
        const auto t0 = Clock::now();
        if (Status s = YourPipeline(whole ? kYourSample : kYourPart, plans, f); !s.ok())
          return s.With("your table, " + c);
        (whole ? whole_s : part_s).push_back(Ms(t0, Clock::now()) / 1000);
        if (whole) failed = f;
      }
    }
    if (whole_s.empty()) return Status::Ok();
    AddSpread(q, c, "seconds", whole_s, "s");
    Add(q, c, "events", static_cast<double>(copied), "count");
    AddSpread(q, c + "_quarter", "seconds", part_s, "s");
    Add(q, c + "_quarter", "events", static_cast<double>(part), "count");
    const double tw = *std::min_element(whole_s.begin(), whole_s.end()),
                 tp = *std::min_element(part_s.begin(), part_s.end());
    double per = (tw - tp) / static_cast<double>(copied - part),
           fixed = tw - per * static_cast<double>(copied);
    const bool fitted = per > 0;
    if (!fitted) {  // no growth told apart from the noise: the whole's time per event
      per = tw / static_cast<double>(copied), fixed = 0;
    } else if (fixed < 0) {  // faster than linear growth: the marginal cost alone
      fixed = 0;
    }
    Add(q, c, "fitted", fitted ? 1 : 0, "count");
    Add(q, c, "fixed_seconds", fixed, "s");
    Add(q, c, "seconds_per_event", per, "s");
    Add(q, c, "estimated_full_seconds", fixed + per * rows, "s");
    Progress(fmt::format(
        "  {:<20} {:>9} events {:8.2f} s (fastest; {} events {:.2f} s: {}); your {} rows: about "
        "{:.1f} s (estimate)",
        c, copied, tw, part, tp,
        fitted ? fmt::format("{:.2f} s per run + {:.2f} us per event", fixed, per * 1e6)
               : fmt::format("not told apart from the noise: {:.2f} us per event of the whole, "
                             "an upper bound",
                             per * 1e6),
        ReadableNumber(rows), fixed + per * rows));
    return Status::Ok();
  }

  // The check of each read model's events per type (the built-in one by rewind and by hand
  // in batches, up to id `last`; one save per event, up to `single_last`) against a GROUP
  // BY over the user's `table` (`shown`): each difference is a problem.
  Status CheckYourTypeCounts(const std::string& table, const std::string& shown,
                             const std::string& last, const std::string& single_last) {
    Result<std::map<std::string, int64_t>> want_types = TypeCounts(*theirs_, table, last);
    if (!want_types.ok()) return want_types.status();
    for (const char* t : {"your_events_per_type", "your_by_hand_batched"}) {
      Result<std::map<std::string, int64_t>> got = ModelTypeCounts(t);
      if (!got.ok()) return got.status();
      if (*got != *want_types) {
        consistent_ = false;
        problems_.push_back(fmt::format(
            "your table: {}'s events per type differ from a GROUP BY over {} (ids up to {})", t,
            shown, last));
      }
    }
    if (!single_last.empty()) {
      Result<std::map<std::string, int64_t>> want_single = TypeCounts(*theirs_, table, single_last);
      Result<std::map<std::string, int64_t>> got = ModelTypeCounts("your_by_hand_single");
      if (!want_single.ok()) return want_single.status();
      if (!got.ok()) return got.status();
      if (*got != *want_single) {
        consistent_ = false;
        problems_.push_back(
            fmt::format("your table: your_by_hand_single's events per type differ from a GROUP BY "
                        "over {} (ids up to {})",
                        shown, single_last));
      }
    }
    return Status::Ok();
  }

  // The check that the sample (`copied` rows up to id `last`) equals those rows of the user's
  // `table` (`shown`), and that the user's database holds the tables it held at the start:
  // each difference is a problem.
  Status CheckYourRowsAndTables(const std::string& table, const std::string& shown,
                                const std::string& last, uint64_t copied) {
    Result<std::string> theirs_after = Fingerprint(*theirs_, table, last);
    Result<std::string> copy = Fingerprint(*c_, kYourSample, last);
    if (!theirs_after.ok()) return theirs_after.status();
    if (!copy.ok()) return copy.status();
    if (*copy != *theirs_after ||
        *copy != fmt::format("{}/", copied) + copy->substr(copy->find('/') + 1)) {
      consistent_ = false;
      problems_.push_back(fmt::format(
          "your table: the sample differs from the first {} rows of {} (fingerprints {} and {})",
          copied, shown, *copy, *theirs_after));
    }
    Result<Rows> tables = TheirTables();
    if (!tables.ok()) return tables.status();
    if (tables->rows != their_tables_) {
      consistent_ = false;
      problems_.push_back(fmt::format(
          "your table: the tables of database {} changed during the run", o_.connection.database));
    }
    return Status::Ok();
  }

  // The built-in read model by hand, as an application without rewind would: keyset pages of
  // the sample's whole events (id, type, time and the payload, as a framework's replay loads
  // each event whole, though this model reads no payload field), one upsert per event
  // autocommitted (batch 1) or one multi-row upsert per `batch` events, over the first
  // `limit` events; `last` (optional) gets the last id saved.
  Status YourByHand(const std::string& table, int batch, uint64_t limit,
                    std::string* last_id = nullptr) {
    if (Status s =
            Recreate(table, fmt::format("CREATE TABLE {} (event_type VARBINARY(1024) NOT NULL, day "
                                        "CHAR(10) NOT NULL, events BIGINT NOT NULL, PRIMARY KEY "
                                        "(event_type, day)) ENGINE=InnoDB",
                                        QuoteIdentifier(table)));
        !s.ok()) {
      return s;
    }
    const std::string prefix =
        fmt::format("INSERT INTO {} (event_type, day, events) VALUES ", QuoteIdentifier(table));
    const std::string merge = " ON DUPLICATE KEY UPDATE events = events + VALUES(events)";
    const std::string id = QuoteIdentifier(o_.events.id_column);
    const std::string select =
        fmt::format("SELECT {}, {}, {}, {} FROM {}", id, QuoteIdentifier(o_.events.type_column),
                    their_time_ ? QuoteIdentifier(o_.events.time_column) : std::string("NULL"),
                    QuoteIdentifier(o_.events.payload_column), QuoteIdentifier(kYourSample));
    std::string sql = prefix, after;
    int in_statement = 0;
    uint64_t done = 0;
    const auto save = [&]() -> Status {
      if (in_statement == 0) return Status::Ok();
      sql += merge;
      Status s = c_->Execute(sql);
      sql = prefix;
      in_statement = 0;
      return s;
    };
    std::vector<std::pair<std::optional<std::string>, std::string>> rows;  // (type, day)
    while (done < limit && !stop_.load()) {
      rows.clear();
      const uint64_t page = std::min<uint64_t>(10000, limit - done);
      Status s = c_->Stream(
          fmt::format("{}{} ORDER BY {} LIMIT {}", select,
                      after.empty() ? "" : fmt::format(" WHERE {} > {}", id, after), id, page),
          [&](char** v, unsigned long* len) {
            after.assign(v[0], len[0]);
            rows.emplace_back(
                v[1] ? std::optional<std::string>(std::string(v[1], len[1])) : std::nullopt,
                v[2] ? std::string(v[2], std::min<unsigned long>(len[2], 10)) : "");
          });
      if (!s.ok()) return s;
      if (rows.empty()) break;
      done += rows.size();
      for (const auto& [type, day] : rows) {
        if (!type) continue;
        sql += in_statement ? ",(" : "(";
        c_->AppendQuoted(sql, *type);
        sql += ", ";
        c_->AppendQuoted(sql, day);
        sql += ", 1)";
        if (++in_statement == batch) {
          if (Status st = save(); !st.ok()) return st;
        }
      }
    }
    if (last_id) *last_id = after;
    return save();
  }

  // rewind's pipeline over `table` (the sample or its first quarter), with `plans` (the built-in
  // read model, or the user's
  // --models), into stress's database. An empty build is allowed (a model of the user's may
  // read no event of the sample); `failures` gets the events the models could not apply.
  Status YourPipeline(const std::string& table, const std::vector<ModelPlan>& plans,
                      uint64_t& failures) {
    ReplayOptions po;
    po.connection = conn_;
    po.events = o_.events;
    po.events.table = table;
    po.progress = ProgressMode::kQuiet;
    po.allow_empty = true;
    std::vector<std::unique_ptr<Projector>> projectors;
    for (const ModelPlan& plan : plans) {
      po.projectors.push_back(plan.name);
      projectors.push_back(MakeDeclaredProjector(plan));
      if (Status s = OwnBuildTables(projectors.back()->table().name); !s.ok()) return s;
    }
    ReplaySummary sum = RunRebuild(po, std::move(projectors), stop_, PlanFor(po));
    if (!sum.status.ok()) return sum.status;
    failures = sum.failures;
    return Status::Ok();
  }

  struct Acknowledged {
    std::string stream;
    int64_t version;
    std::string eid;
  };

  // What one run of appenders did. Every command ends as a success or a give-up; every
  // attempt as a success, a conflict or a deadlock; every conflict or deadlock is retried
  // unless it was the command's last attempt.
  struct AppendRun {
    double seconds = 0;
    std::vector<double> latencies;  // per command acknowledged, ms, retries included
    uint64_t commands = 0, successes = 0, give_ups = 0, attempts = 0, conflicts = 0, deadlocks = 0,
             retries = 0;
    uint64_t events = 0, lost = 0, duplicated = 0;
  };

  // A command's events, each payload marked with `eid`-N so the check can find it: placing
  // an order (created, nine lines, confirmed: 11 events on a new stream) or, on an order
  // loaded as `state`, adding a line (an item and a discount).
  static std::vector<NewEvent> CommandEvents(const std::string& stream, bool place,
                                             const order::State& state, const std::string& eid) {
    std::vector<NewEvent> out;
    const int64_t first = place ? 1 : state.version + 1, count = place ? 11 : 2;
    for (int64_t i = 0; i < count; ++i) {
      order::Event e;
      if (place) {
        e = order::Generate(stream, first + i, 11);
      } else if (i == 0) {
        e.kind = order::Kind::kItemAdded, e.sku = "SKU-0001", e.quantity = 1, e.cents = 999;
      } else {
        e.kind = order::Kind::kDiscountApplied, e.cents = 100;
      }
      std::string payload = order::Payload(stream, e);
      payload.insert(1, fmt::format("\"eid\":\"{}-{}\",", eid, i));
      out.push_back({order::TypeName(e.kind), std::move(payload)});
    }
    return out;
  }

  // Question 4: appends by concurrent writers, then a check of every acknowledged append.
  // Writer counts 1 to 100 on distinct streams (each command places a new order) and on
  // one stream (each command reloads the order and adds a line; a conflict is retried).
  Status Question4() {
    Result<std::optional<std::string>> flush =
        c_->QueryValue("SELECT @@innodb_flush_log_at_trx_commit");
    Result<std::optional<std::string>> binlog = c_->QueryValue("SELECT @@log_bin");
    durability_ =
        fmt::format("innodb_flush_log_at_trx_commit = {}, log_bin = {}",
                    flush.ok() && *flush ? **flush : "?", binlog.ok() && *binlog ? **binlog : "?");
    Progress("question 4: appends by concurrent writers (" + durability_ + ")");
    const std::vector<int> counts =
        quick_ ? std::vector<int>{1, 10, 100} : std::vector<int>{1, 2, 5, 10, 20, 50, 100};
    const int orders = quick_ ? 500 : 2000;  // distinct streams: commands of 11 events in a run
    const int hot_commands = quick_ ? 100 : 600;  // one stream: commands of 2 events in a run
    for (bool one_stream : {false, true}) {
      for (int writers : counts) {
        const std::string name =
            fmt::format("{}_{}", one_stream ? "one_stream" : "distinct", writers);
        const int per_writer = std::max(1, (one_stream ? hot_commands : orders) / writers);
        std::vector<double> rates, p50, p99;
        AppendRun sum;
        for (int r = 0; r < o_.repeat && !stop_.load(); ++r) {
          AppendRun run;
          if (Status s =
                  Appenders(fmt::format("{}-r{}", name, r), writers, one_stream, per_writer, run);
              !s.ok()) {
            return s.With(name);
          }
          rates.push_back(static_cast<double>(run.events) / run.seconds);
          p50.push_back(Percentile(run.latencies, 50));
          p99.push_back(Percentile(run.latencies, 99));
          for (auto [to, from] : std::initializer_list<std::pair<uint64_t*, uint64_t>>{
                   {&sum.commands, run.commands},
                   {&sum.successes, run.successes},
                   {&sum.give_ups, run.give_ups},
                   {&sum.attempts, run.attempts},
                   {&sum.conflicts, run.conflicts},
                   {&sum.deadlocks, run.deadlocks},
                   {&sum.retries, run.retries},
                   {&sum.events, run.events},
                   {&sum.lost, run.lost},
                   {&sum.duplicated, run.duplicated}}) {
            *to += from;
          }
        }
        if (sum.lost || sum.duplicated) consistent_ = false;
        const std::string q = "concurrent_append";
        Add(q, name, "writers", writers, "count");
        AddSpread(q, name, "events_per_s", rates, "events/s");
        AddSpread(q, name, "p50", p50, "ms");
        AddSpread(q, name, "p99", p99, "ms");
        for (auto [metric, v] : std::initializer_list<std::pair<const char*, uint64_t>>{
                 {"commands", sum.commands},
                 {"successes", sum.successes},
                 {"give_ups", sum.give_ups},
                 {"attempts", sum.attempts},
                 {"conflicts", sum.conflicts},
                 {"deadlocks", sum.deadlocks},
                 {"retries", sum.retries},
                 {"events", sum.events},
                 {"lost", sum.lost},
                 {"duplicated", sum.duplicated}}) {
          Add(q, name, metric, static_cast<double>(v), "count");
        }
        Progress(fmt::format(
            "  {:<14} {:>3} writers: {:>8.0f} events/s, command p50 {:.2f} ms, p99 {:.2f} ms; {} "
            "commands, {} conflicts, {} deadlocks, {} retries, {} given up; {} lost, {} duplicated",
            name, writers, Median(rates), Median(p50), Median(p99), sum.commands, sum.conflicts,
            sum.deadlocks, sum.retries, sum.give_ups, sum.lost, sum.duplicated));
      }
    }
    return AppendsDuringRebuild(orders);
  }

  // Appends while rewind rebuilds a read model: 10 writers on distinct streams without and
  // with the pipeline rebuilding OrderSummary over its own event table again and again for as
  // long as they write, the two interleaved in each of --repeat rounds.
  Status AppendsDuringRebuild(int orders) {
    constexpr int kWriters = 10;
    const int64_t volume = quick_ ? 10000 : 100000;
    const std::string table = "es_rebuild_alongside";
    if (Status s = LoadRebuildEvents(table, volume); !s.ok()) return s;
    Result<std::vector<ModelPlan>> plans =
        ParseModels(kOrderSummaryToml, "order_summary (built in)", "es_events");
    if (!plans.ok()) return plans.status();
    const ModelPlan& plan = (*plans)[0];
    if (Status s = Pipeline(table, plan); !s.ok()) return s;  // records its tables; warms up
    const ReplayOptions po = PipelineOptions(table, plan);
    int rebuilds = 0;
    const auto rebuild = [&](const std::atomic<bool>& done) -> Status {
      do {  // at least one rebuild, then more for as long as the writers write
        std::vector<std::unique_ptr<Projector>> projectors;
        projectors.push_back(MakeDeclaredProjector(plan));
        if (Status s = RunPipeline(po, std::move(projectors)); !s.ok()) return s;
        ++rebuilds;
      } while (!done.load() && !stop_.load());
      return Status::Ok();
    };
    std::map<bool, std::vector<double>> p50, p99, rates;
    uint64_t lost = 0, duplicated = 0;
    for (int r = 0; r < o_.repeat && !stop_.load(); ++r) {
      for (bool during : {false, true}) {
        AppendRun run;
        const std::string name = fmt::format("{}-r{}", during ? "during_rebuild" : "no_rebuild", r);
        Status s = during ? Appenders(name, kWriters, false, orders / kWriters, run, rebuild)
                          : Appenders(name, kWriters, false, orders / kWriters, run);
        if (!s.ok()) return s.With(name);
        p50[during].push_back(Percentile(run.latencies, 50));
        p99[during].push_back(Percentile(run.latencies, 99));
        rates[during].push_back(static_cast<double>(run.events) / run.seconds);
        lost += run.lost, duplicated += run.duplicated;
      }
    }
    if (lost || duplicated) consistent_ = false;
    for (bool during : {false, true}) {
      const std::string c =
          fmt::format("{}_{}", during ? "during_rebuild" : "no_rebuild", kWriters);
      AddSpread("append_during_rebuild", c, "p50", p50[during], "ms");
      AddSpread("append_during_rebuild", c, "p99", p99[during], "ms");
      AddSpread("append_during_rebuild", c, "events_per_s", rates[during], "events/s");
    }
    Add("append_during_rebuild", "during_rebuild_10", "rebuilds", rebuilds, "count");
    Add("append_during_rebuild", "during_rebuild_10", "rebuild_events", static_cast<double>(volume),
        "count");
    Add("append_during_rebuild", "all", "lost", static_cast<double>(lost), "count");
    Add("append_during_rebuild", "all", "duplicated", static_cast<double>(duplicated), "count");
    Progress(
        fmt::format("  {} writers, command p50 / p99: {:.2f} / {:.2f} ms alone, {:.2f} / {:.2f} ms "
                    "while rewind "
                    "rebuilt {} events {} times",
                    kWriters, Median(p50[false]), Median(p99[false]), Median(p50[true]),
                    Median(p99[true]), volume, rebuilds));
    return c_->Execute("DROP TABLE IF EXISTS " + QuoteIdentifier(table));
  }

  // The attempts of a command on one stream before it gives up (question 4).
  static constexpr int kMaxAttempts = 10;

  // `writers` threads, each on its own connection, opened before the clock starts: every
  // writer connects, then waits at a start barrier; the clock starts when all are there and
  // stops at the last writer's last acknowledgement (before any connection closes). Each
  // runs `per_writer` commands: on streams of its own, or on one shared stream (created
  // before the clock) with optimistic concurrency: a conflict or deadlock reloads the
  // aggregate and runs the command again after a jittered backoff (up to kMaxAttempts).
  // Then every acknowledged event is looked for.
  // `alongside` (optional) runs on a thread of its own from the clock's start, told when the
  // writers are done; the check waits for it.
  Status Appenders(const std::string& name, int writers, bool one_stream, int per_writer,
                   AppendRun& run,
                   const std::function<Status(const std::atomic<bool>&)>& alongside = {}) {
    std::mutex mu;
    std::vector<Acknowledged> acked;
    Status failed;
    std::atomic<bool> abandon{false};
    const std::string prefix = fmt::format("q4-{}-", name);
    const std::string hot = prefix + "hot";
    if (one_stream) {  // the order the writers add lines to, created before the clock
      const order::Event e = order::Generate(hot, 1, 0);
      Result<AppendOutcome> r =
          store_->Append(hot, 0, {{order::TypeName(e.kind), order::Payload(hot, e)}});
      if (!r.ok()) return r.status();
    }
    std::latch connected(writers), go(1);
    std::vector<Clock::time_point> finished(static_cast<size_t>(writers));
    std::vector<std::thread> threads;
    for (int w = 0; w < writers; ++w) {
      threads.emplace_back([&, w] {
        AppendRun mine;
        std::vector<Acknowledged> my_acks;
        Status s;
        Result<std::unique_ptr<Connection>> c = Connection::Open(conn_);
        connected.count_down();
        if (!c.ok()) {
          abandon = true;
          std::lock_guard<std::mutex> lock(mu);
          failed = c.status();
          return;
        }
        go.wait();
        if (abandon.load()) return;
        EventStore es(**c, EventStoreTables{});
        std::mt19937 rng(static_cast<uint32_t>(w) * 7919u + 17u);
        for (int i = 0; i < per_writer && s.ok() && !stop_.load(); ++i) {
          s = AppendCommand(es, one_stream ? hot : fmt::format("{}w{}-o{}", prefix, w, i),
                            one_stream, w, i, rng, mine, my_acks);
        }
        finished[static_cast<size_t>(w)] = Clock::now();
        std::lock_guard<std::mutex> lock(mu);
        if (!s.ok()) failed = s;
        run.latencies.insert(run.latencies.end(), mine.latencies.begin(), mine.latencies.end());
        acked.insert(acked.end(), my_acks.begin(), my_acks.end());
        run.commands += mine.commands, run.successes += mine.successes,
            run.give_ups += mine.give_ups;
        run.attempts += mine.attempts, run.conflicts += mine.conflicts,
            run.deadlocks += mine.deadlocks;
        run.retries += mine.retries, run.events += mine.events;
      });
    }
    connected.wait();  // every writer has its connection (or failed to open it)
    FaultPoint("stress-writers-ready");
    const auto start = Clock::now();
    go.count_down();
    std::atomic<bool> writers_done{false};
    Status side_status;
    std::thread side;
    if (alongside) side = std::thread([&] { side_status = alongside(writers_done); });
    for (auto& t : threads) t.join();
    writers_done = true;
    if (side.joinable()) side.join();
    if (!failed.ok()) return failed;
    if (!side_status.ok()) return side_status;
    run.seconds = Ms(start, *std::max_element(finished.begin(), finished.end())) / 1000;
    return CheckAppends(prefix, one_stream, acked, run);
  }

  // One command of writer `w` (its `seq`th) on `stream` through `es`, counted in `mine`, its
  // events added to `acks` once acknowledged. On one stream (`one_stream`) it reloads the
  // aggregate first; a conflict or deadlock runs it again after a jittered backoff drawn
  // from `rng`, up to kMaxAttempts, then gives up.
  Status AppendCommand(EventStore& es, const std::string& stream, bool one_stream, int w, int seq,
                       std::mt19937& rng, AppendRun& mine, std::vector<Acknowledged>& acks) {
    const auto t0 = Clock::now();
    ++mine.commands;
    const std::string eid = fmt::format("{}-{}", w, seq);
    for (int attempt = 1;; ++attempt) {
      order::State state;
      if (one_stream) {  // reload the aggregate, then decide
        Result<order::State> st = LoadOrder(es, stream, false);
        if (!st.ok()) return st.status();
        state = *st;
        if (state.status != "created")
          return Status::Internal(fmt::format("stream {} is not an open order", stream));
      }
      const std::vector<NewEvent> events = CommandEvents(stream, !one_stream, state, eid);
      ++mine.attempts;
      Result<AppendOutcome> r = es.Append(stream, state.version, events);
      if (!r.ok()) return r.status();
      if (*r == AppendOutcome::kAppended) {
        ++mine.successes;
        mine.events += events.size();
        mine.latencies.push_back(Ms(t0, Clock::now()));
        for (size_t i = 0; i < events.size(); ++i) {
          acks.push_back({stream, state.version + 1 + static_cast<int64_t>(i),
                          fmt::format("{}-{}", eid, i)});
        }
        return Status::Ok();
      }
      ++(*r == AppendOutcome::kConflict ? mine.conflicts : mine.deadlocks);
      if (attempt == kMaxAttempts) {
        ++mine.give_ups;
        return Status::Ok();
      }
      ++mine.retries;
      // Full jitter: a wait drawn from [0, min(20 ms, 0.5 ms x 2^attempt)).
      const double cap_ms = std::min(20.0, 0.5 * static_cast<double>(1 << attempt));
      const double wait_ms = std::uniform_real_distribution<double>(0, cap_ms)(rng);
      if (!SleepUnlessStopped(std::chrono::microseconds(static_cast<int64_t>(wait_ms * 1000)),
                              &stop_)) {
        return Status::Error(Status::Code::kCancelled, "stopped");
      }
    }
  }

  // The check of a run of appenders, on the streams whose names begin with `prefix`: every
  // stream's versions are exactly 1..n, a placed order has its 11 events (a command's events
  // all or none), every event `acked` is there with its own payload, and no payload is there
  // twice. What is not is counted in `run` (lost, duplicated).
  Status CheckAppends(const std::string& prefix, bool one_stream,
                      const std::vector<Acknowledged>& acked, AppendRun& run) {
    std::map<std::string, std::vector<int64_t>> versions;
    std::map<std::pair<std::string, int64_t>, std::string> stored;
    std::map<std::string, int> eids;
    Status read = c_->Stream(fmt::format("SELECT stream, version, JSON_VALUE(payload, '$.eid') "
                                         "FROM es_events WHERE stream LIKE {} ORDER BY "
                                         "stream, version",
                                         c_->Quote(prefix + "%")),
                             [&](char** v, unsigned long* len) {
                               const std::string stream(v[0], len[0]);
                               const int64_t version = std::strtoll(v[1], nullptr, 10);
                               versions[stream].push_back(version);
                               const std::string eid = v[2] ? std::string(v[2], len[2]) : "";
                               stored[{stream, version}] = eid;
                               if (!eid.empty()) ++eids[eid];
                             });
    if (!read.ok()) return read;
    for (const auto& [stream, vs] : versions) {
      for (size_t i = 0; i < vs.size(); ++i) {
        if (vs[i] != static_cast<int64_t>(i) + 1) ++run.lost;  // a gap or a repeat in 1..n
      }
      if (!one_stream && vs.size() != 11) ++run.lost;  // a command half there
    }
    for (const Acknowledged& a : acked) {
      auto it = stored.find({a.stream, a.version});
      if (it == stored.end() || it->second != a.eid) ++run.lost;
    }
    for (const auto& [eid, n] : eids) run.duplicated += n > 1 ? static_cast<uint64_t>(n - 1) : 0;
    return Status::Ok();
  }

  const StressOptions& o_;
  const std::atomic<bool>& stop_;
  const bool quick_;
  ConnectionOptions conn_;
  std::unique_ptr<Connection> admin_, c_;
  std::unique_ptr<EventStore> store_;
  bool created_ = false;
  bool consistent_ = true;
  std::vector<std::string> problems_;
  StressResults results_;
  std::string crossover_note_, durability_ = "?";
  // --events-table: the user's database (read only), its table's columns (name, type), where
  // the id and the payload are among them, whether it has the time column, the user's read
  // models (--models), the tables of that database at the start, and what the report says.
  std::unique_ptr<Connection> theirs_;
  std::vector<std::pair<std::string, std::string>> their_columns_;
  size_t id_at_ = 0, payload_at_ = 0;
  bool their_time_ = false;
  std::vector<ModelPlan> your_models_;
  std::vector<std::vector<std::optional<std::string>>> their_tables_;
  YourTableContext your_;
};

}  // namespace

int StressCommand(const StressOptions& options, const std::atomic<bool>& stop, std::FILE* out) {
  return Stress(options, stop).Run(out);
}

}  // namespace rw
