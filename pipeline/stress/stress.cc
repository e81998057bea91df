#include "pipeline/stress/stress.h"

#include "pipeline/stress/report.h"

#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <mutex>
#include <thread>

#include "config/models.h"
#include "pipeline/replay/replay.h"
#include "pipeline/engine/compare.h"
#include "projectors/declared.h"
#include "pipeline/stress/order.h"
#include "pipeline/stress/event_store.h"
#include "errors/fault.h"
#include "stages/db/row_writer.h"
#include "stages/db/table_admin.h"
#include "stages/db/table_schema.h"

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

class Stress {
 public:
  Stress(const StressOptions& o, const std::atomic<bool>& stop) : o_(o), stop_(stop), quick_(o.quick) {
    conn_ = o.connection;
    conn_.database = o.database;
  }

  int Run(std::FILE* out) {
    Status s = Prepare();
    if (!s.ok()) {
      fmt::print(stderr, "rewind stress: {}\n", s.message());
      return exit_code::kError;
    }
    FaultPoint("stress-prepared");
    const auto wants = [&](int q) {
      return o_.only.empty() || std::find(o_.only.begin(), o_.only.end(), q) != o_.only.end();
    };
    if (s.ok() && wants(1)) s = Question1();
    if (s.ok() && wants(2)) s = Question2();
    if (s.ok() && wants(3)) s = Question3();
    if (s.ok() && wants(4)) s = Question4();
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

  void Add(const std::string& q, const std::string& c, const std::string& m, double v, const std::string& unit) {
    results_.Add(q, c, m, v, unit);
  }
  std::optional<double> Get(const std::string& q, const std::string& c, const std::string& m) const {
    return results_.Get(q, c, m);
  }

  std::string ServerSettings() {
    Result<Rows> r = c_->Query(
        "SELECT @@version, @@innodb_buffer_pool_size, @@innodb_flush_log_at_trx_commit, @@sync_binlog, @@log_bin, "
        "@@max_connections, @@innodb_log_file_size");
    if (!r.ok() || r->rows.empty()) return "(not readable)";
    const auto& v = r->rows[0];
    auto s = [](const std::optional<std::string>& x) { return x.value_or("NULL"); };
    return fmt::format("MariaDB {}, innodb_buffer_pool_size {} MiB, innodb_flush_log_at_trx_commit {}, sync_binlog {}, "
                       "log_bin {}, max_connections {}, innodb_log_file_size {} MiB",
                       s(v[0]), v[1] ? std::stoll(*v[1]) >> 20 : 0, s(v[2]), s(v[3]), s(v[4]), s(v[5]),
                       v[6] ? std::stoll(*v[6]) >> 20 : 0);
  }

  bool WriteReport(std::FILE* out, const Status& status) {
    StressContext ctx;
    ctx.quick = quick_;
    ctx.server_settings = ServerSettings();
    ctx.durability = durability_;
    ctx.crossover_note = crossover_note_;
    ctx.problems = problems_;
    ctx.consistent = consistent_;
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
        fmt::format("SELECT COUNT(*) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = {}", admin_->Quote(conn_.database)));
    if (!exists.ok()) return exists.status();
    if (*exists && **exists != "0") {
      Result<std::vector<std::string>> strangers = TablesNotOwn();
      if (!strangers.ok()) return strangers.status();
      if (!strangers->empty()) {
        std::string names;
        for (const std::string& t : *strangers) {
          if (names.size() < 200) names += (names.empty() ? "" : ", ") + t;
        }
        return Status::InvalidInput(fmt::format(
            "database '{}' holds tables that rewind stress did not create ({}); it touches nothing there: "
            "choose another with --stress-database",
            conn_.database, names));
      }
    } else {
      if (Status s = admin_->Execute("CREATE DATABASE " + QuoteIdentifier(conn_.database)); !s.ok()) {
        return s.With("creating the stress database (needs the CREATE grant; or give --stress-database)");
      }
      created_ = true;
    }
    Result<std::unique_ptr<Connection>> c = Connection::Open(conn_);
    if (!c.ok()) return c.status();
    c_ = std::move(*c);
    if (Status s = c_->Execute(fmt::format("CREATE TABLE IF NOT EXISTS {} (table_name VARCHAR(64) NOT NULL PRIMARY "
                                           "KEY, created_at DATETIME NOT NULL DEFAULT NOW()) ENGINE=InnoDB "
                                           "DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin",
                                           QuoteIdentifier(kOwnTables)));
        !s.ok()) {
      return s;
    }
    if (Status s = DropOwnTables(); !s.ok()) return s;  // what a run with --keep left
    store_ = std::make_unique<EventStore>(*c_, EventStoreTables{});
    Progress(fmt::format("working in database {}{} ({})", conn_.database, created_ ? " (created)" : "",
                         quick_ ? "--quick" : "full run"));
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
        "SELECT TABLE_NAME FROM information_schema.TABLES t WHERE TABLE_SCHEMA = {0} AND TABLE_NAME <> {1}{2} "
        "ORDER BY TABLE_NAME",
        db, admin_->Quote(kOwnTables),
        has_record ? fmt::format(" AND NOT EXISTS (SELECT 1 FROM {}.{} o WHERE BINARY o.table_name = BINARY "
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
    return c_->Execute(fmt::format("INSERT IGNORE INTO {} (table_name) VALUES ({})", QuoteIdentifier(kOwnTables),
                                   c_->Quote(table)));
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
    const std::string own_table = QuoteIdentifier(conn_.database) + "." + QuoteIdentifier(kOwnTables);
    Result<Rows> own = admin_->Query("SELECT table_name FROM " + own_table);
    if (!own.ok()) return own.status();
    for (const auto& r : own->rows) {
      const std::string table = r[0].value_or("");
      if (Status s = admin_->Execute(fmt::format("DROP TABLE IF EXISTS {}.{}", QuoteIdentifier(conn_.database),
                                                 QuoteIdentifier(table)));
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
    (void)admin_->Execute(
        fmt::format("DROP TABLE IF EXISTS {}.{}", QuoteIdentifier(conn_.database), QuoteIdentifier(kOwnTables)));
    if (created_ && others->empty()) (void)admin_->Execute("DROP DATABASE " + QuoteIdentifier(conn_.database));
  }

  // Bulk-loads streams of generated Order events into `table`: (name, length, confirm at).
  Status LoadStreams(const std::string& table, const std::vector<std::tuple<std::string, int64_t, int64_t>>& streams) {
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

  // Question 1: aggregate load time vs stream length.
  Status Question1() {
    const std::vector<int64_t> lengths = {10, 50, 100, 500, 1000, 5000, 10000};
    const int loads = quick_ ? 15 : 100;
    Progress(fmt::format("question 1: aggregate load time vs stream length ({} loads each)", loads));
    std::vector<std::tuple<std::string, int64_t, int64_t>> streams;
    for (int64_t n : lengths) streams.emplace_back(fmt::format("q1-{}", n), n, n / 2);
    if (Status s = LoadStreams(store_->tables().events, streams); !s.ok()) return s;
    for (int64_t n : lengths) {
      const std::string stream = fmt::format("q1-{}", n);
      std::vector<double> total, fetch, decode, fold;
      for (int i = 0; i <= loads && !stop_.load(); ++i) {
        LoadTimes t;
        Result<order::State> st = LoadOrder(*store_, stream, false, &t);
        if (!st.ok()) return st.status();
        if (i == 0) {  // a warm-up load, and a check of what it folds to
          if (!(*st == Expected(stream, n, n / 2))) return Status::Internal(fmt::format("stream {} folded wrong", stream));
          continue;
        }
        total.push_back(t.total);
        fetch.push_back(t.fetch);
        decode.push_back(t.decode);
        fold.push_back(t.fold);
      }
      const std::string c = std::to_string(n);
      Add("aggregate_load", c, "p50", Percentile(total, 50), "ms");
      Add("aggregate_load", c, "p95", Percentile(total, 95), "ms");
      Add("aggregate_load", c, "p99", Percentile(total, 99), "ms");
      Add("aggregate_load", c, "fetch_p50", Percentile(fetch, 50), "ms");
      Add("aggregate_load", c, "decode_p50", Percentile(decode, 50), "ms");
      Add("aggregate_load", c, "fold_p50", Percentile(fold, 50), "ms");
      Progress(fmt::format("  {:>6} events: p50 {:.2f} ms (fetch {:.2f}, decode {:.2f}, fold {:.3f}), p99 {:.2f} ms", n,
                           Percentile(total, 50), Percentile(fetch, 50), Percentile(decode, 50), Percentile(fold, 50),
                           Percentile(total, 99)));
    }
    return Status::Ok();
  }

  // Question 2: snapshot vs full replay, the crossover, the snapshot write cost.
  Status Question2() {
    const std::vector<int64_t> lengths = {10, 50, 100, 200, 300, 500, 1000, 2000, 5000};
    const int loads = quick_ ? 15 : 100;
    Progress(fmt::format("question 2: snapshot + tail vs full replay ({} loads each)", loads));
    std::vector<std::tuple<std::string, int64_t, int64_t>> streams;
    for (int64_t n : lengths) streams.emplace_back(fmt::format("q2-{}", n), n, n / 2);
    if (Status s = LoadStreams(store_->tables().events, streams); !s.ok()) return s;
    std::vector<double> full_p50, snap_p50;
    for (int64_t n : lengths) {
      const std::string stream = fmt::format("q2-{}", n);
      // The snapshot 50 events before the end (4,950 of 5,000, as published); half-way on short streams.
      const int64_t at = n - std::min<int64_t>(50, n / 2);
      if (Status s = store_->SaveSnapshot(stream, at, order::SnapshotJson(Expected(stream, at, n / 2))); !s.ok()) return s;
      std::vector<double> full, snap, snap_fetch;
      for (int i = 0; i <= loads && !stop_.load(); ++i) {
        LoadTimes a, b;
        Result<order::State> x = LoadOrder(*store_, stream, false, &a);
        if (!x.ok()) return x.status();
        Result<order::State> y = LoadOrder(*store_, stream, true, &b);
        if (!y.ok()) return y.status();
        if (!(*x == *y)) return Status::Internal(fmt::format("stream {}: snapshot + tail differs from a full replay", stream));
        if (i == 0) continue;
        full.push_back(a.total);
        snap.push_back(b.total);
        snap_fetch.push_back(b.fetch);
      }
      const std::string c = std::to_string(n);
      Add("snapshot", c, "full_p50", Percentile(full, 50), "ms");
      Add("snapshot", c, "snapshot_p50", Percentile(snap, 50), "ms");
      Add("snapshot", c, "snapshot_fetch_p50", Percentile(snap_fetch, 50), "ms");
      full_p50.push_back(Percentile(full, 50));
      snap_p50.push_back(Percentile(snap, 50));
      Progress(fmt::format("  {:>5} events: full {:.2f} ms, snapshot at {} + {} events {:.2f} ms", n, full_p50.back(), at,
                           n - at, snap_p50.back()));
    }
    // The crossover: where the full replay starts to cost more than snapshot + tail,
    // interpolated between the two measured lengths around the change.
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
    // The write cost: commands that load the order (snapshot + tail), append one event,
    // and save a snapshot every k events.
    const int commands = quick_ ? 300 : 2000;
    for (int every : {10, 100}) {
      const std::string stream = fmt::format("q2-every-{}", every);
      double snapshot_ms = 0, total_ms = 0;
      int snapshots = 0;
      int64_t version = 0;
      for (int i = 1; i <= commands && !stop_.load(); ++i) {
        const auto t0 = Clock::now();
        LoadTimes t;
        Result<order::State> st = LoadOrder(*store_, stream, true, &t);
        if (!st.ok()) return st.status();
        const order::Event e = order::Generate(stream, version + 1, 0);
        Result<AppendOutcome> r = store_->Append(stream, version, {{order::TypeName(e.kind), order::Payload(stream, e)}});
        if (!r.ok()) return r.status();
        if (*r != AppendOutcome::kAppended) return Status::Internal("a lone writer met a conflict");
        ++version;
        order::Fold(*st, e);
        if (version % every == 0) {
          const auto s0 = Clock::now();
          if (Status s = store_->SaveSnapshot(stream, version, order::SnapshotJson(*st)); !s.ok()) return s;
          snapshot_ms += Ms(s0, Clock::now());
          ++snapshots;
        }
        total_ms += Ms(t0, Clock::now());
      }
      const std::string c = fmt::format("every_{}", every);
      Add("snapshot", c, "write_per_command", snapshot_ms / commands, "ms");
      Add("snapshot", c, "per_snapshot", snapshots ? snapshot_ms / snapshots : 0, "ms");
      Add("snapshot", c, "command", total_ms / commands, "ms");
      Progress(fmt::format("  snapshot every {}: {:.3f} ms per command ({:.2f} ms per snapshot; a command takes {:.2f} ms)",
                           every, snapshot_ms / commands, snapshots ? snapshot_ms / snapshots : 0, total_ms / commands));
    }
    return Status::Ok();
  }

  // One page of a keyset read of `table`: (stream, type, payload, position).
  Status ReadPage(Connection& c, const std::string& table, int64_t after, const std::string& where, size_t limit,
                  std::vector<std::array<std::string, 4>>& rows, int64_t& last) {
    rows.clear();
    return c.Stream(fmt::format("SELECT position, stream, type, payload FROM {} WHERE position > {}{} ORDER BY position LIMIT {}",
                                QuoteIdentifier(table), after, where, limit),
                    [&](char** v, unsigned long* len) {
                      last = std::strtoll(v[0], nullptr, 10);
                      rows.push_back({std::string(v[1], len[1]), std::string(v[2], len[2]), std::string(v[3], len[3]),
                                      std::string(v[0], len[0])});
                    });
  }

  // OrderSummary by hand, as an application without rewind would: one upsert per event,
  // autocommitted (batch 1) or in transactions of `batch` events.
  Status RebuildByHand(const std::string& events, const TableSpec& spec, const std::string& table, int batch) {
    if (Status s = c_->Execute("DROP TABLE IF EXISTS " + QuoteIdentifier(table)); !s.ok()) return s;
    if (Status s = c_->Execute(table_schema::CreateTableSql(spec, table)); !s.ok()) return s;
    const std::string prefix = fmt::format("INSERT INTO {} ({}) VALUES (", QuoteIdentifier(table),
                                           table_schema::StoredColumnList(spec));
    const std::string merge = table_schema::MergeClause(spec);
    std::vector<std::array<std::string, 4>> rows;
    int64_t after = 0, last = 0;
    int in_transaction = 0;
    while (!stop_.load()) {
      if (Status s = ReadPage(*c_, events, after, "", 10000, rows, last); !s.ok()) return s;
      if (rows.empty()) break;
      after = last;
      for (const auto& [stream, type, payload, position] : rows) {
        if (order::KindOf(type) == order::Kind::kNoteAdded) continue;
        Result<order::Event> e = DecodeOrderEvent(type, payload);
        if (!e.ok()) return e.status();
        std::string sql = prefix;
        c_->AppendQuoted(sql, stream);
        sql += ", UNHEX(SHA2(";
        c_->AppendQuoted(sql, stream);
        sql += ", 256)), ";
        const auto cents = [](int64_t c) { return fmt::format("{}.{:02d}", c / 100, c % 100); };
        // status (last) and confirmed_at (first) each with the event's position, which their
        // merge compares (stages/table_schema.h).
        switch (e->kind) {
          case order::Kind::kCreated: sql += fmt::format("'created', {}, 0, 0, 0, NULL, NULL)", position); break;
          case order::Kind::kItemAdded: sql += fmt::format("NULL, NULL, 1, {}, 0, NULL, NULL)", cents(e->cents)); break;
          case order::Kind::kDiscountApplied:
            sql += fmt::format("NULL, NULL, 0, 0, {}, NULL, NULL)", cents(e->cents));
            break;
          case order::Kind::kConfirmed:
            sql += fmt::format("'confirmed', {}, 0, 0, 0, ", position);
            c_->AppendQuoted(sql, e->at);
            sql += fmt::format(", {})", position);
            break;
          default: continue;
        }
        sql += merge;
        if (batch > 1 && in_transaction == 0) {
          if (Status s = c_->Execute("START TRANSACTION"); !s.ok()) return s;
        }
        if (Status s = c_->Execute(sql); !s.ok()) return s;
        if (batch > 1 && ++in_transaction == batch) {
          if (Status s = c_->Execute("COMMIT"); !s.ok()) return s;
          in_transaction = 0;
        }
      }
    }
    if (in_transaction > 0) return c_->Execute("COMMIT");
    return Status::Ok();
  }

  // Confirmed orders per day: a projection that needs one of the five event types, the
  // filter in the server (WHERE type = ...) or in the client (every event read).
  Status ConfirmedPerDay(const std::string& events, const std::string& table, bool in_server) {
    std::map<std::string, int64_t> per_day;
    std::vector<std::array<std::string, 4>> rows;
    int64_t after = 0, last = 0;
    const std::string where = in_server ? fmt::format(" AND type = '{}'", order::kConfirmed) : "";
    while (!stop_.load()) {
      if (Status s = ReadPage(*c_, events, after, where, 10000, rows, last); !s.ok()) return s;
      if (rows.empty()) break;
      after = last;
      for (const auto& [stream, type, payload, position] : rows) {
        if (order::KindOf(type) != order::Kind::kConfirmed) continue;
        Result<order::Event> e = DecodeOrderEvent(type, payload);
        if (!e.ok()) return e.status();
        ++per_day[e->at.substr(0, 10)];
      }
    }
    if (Status s = Recreate(table, fmt::format("CREATE TABLE {} (day DATE PRIMARY KEY, confirmed BIGINT NOT NULL)",
                                               QuoteIdentifier(table)));
        !s.ok()) {
      return s;
    }
    std::string sql = fmt::format("INSERT INTO {} VALUES ", QuoteIdentifier(table));
    for (const auto& [day, n] : per_day) sql += fmt::format("{}('{}', {})", sql.back() == ' ' ? "" : ",", day, n);
    return per_day.empty() ? Status::Ok() : c_->Execute(sql);
  }

  // Question 3: projection rebuild across volumes, three ways, and server vs client filtering.
  Status Question3() {
    const std::vector<int64_t> volumes = quick_ ? std::vector<int64_t>{10000, 100000}
                                                : std::vector<int64_t>{10000, 100000, 1000000};
    Result<std::vector<ModelPlan>> plans = ParseModels(kOrderSummaryToml, "order_summary (built in)", "es_events");
    if (!plans.ok()) return plans.status();
    const TableSpec spec = MakeDeclaredProjector((*plans)[0])->table();
    Progress("question 3: rebuilding OrderSummary (100 events per order) one save per event, in batches of 50, "
             "and with rewind's pipeline");
    for (int64_t volume : volumes) {
      const std::string table = fmt::format("es_rebuild_{}", volume);
      EventStore es(*c_, EventStoreTables{table, "es_snapshots"});
      if (Status s = CreateStore(es); !s.ok()) return s;
      std::vector<std::tuple<std::string, int64_t, int64_t>> streams;
      for (int64_t i = 0; i < volume / kEventsPerStream; ++i) {
        streams.emplace_back(fmt::format("order-{:07d}", i), kEventsPerStream, i % 4 == 3 ? 0 : 90);
      }
      if (Status s = LoadStreams(table, streams); !s.ok()) return s;
      (void)c_->Execute("ANALYZE TABLE " + QuoteIdentifier(table));
      auto timed = [&](const std::string& method, const std::function<Status()>& run) -> Status {
        const auto t0 = Clock::now();
        if (Status s = run(); !s.ok()) return s.With(fmt::format("{} events, {}", volume, method));
        const double seconds = Ms(t0, Clock::now()) / 1000;
        const std::string c = fmt::format("{}/{}", volume, method);
        Add("projection_rebuild", c, "seconds", seconds, "s");
        Add("projection_rebuild", c, "events_per_s", static_cast<double>(volume) / seconds, "events/s");
        Progress(fmt::format("  {:>8} events, {:<16} {:8.2f} s {:>10.0f} events/s", volume, method, seconds,
                             static_cast<double>(volume) / seconds));
        return Status::Ok();
      };
      if (Status s = timed("single", [&] { return RebuildByHand(table, spec, "summary_single", 1); }); !s.ok()) return s;
      if (Status s = timed("batched", [&] { return RebuildByHand(table, spec, "summary_batched", 50); }); !s.ok()) return s;
      if (Status s = timed("pipeline", [&] { return Pipeline(table, (*plans)[0]); }); !s.ok()) return s;
      if (Status s = timed("filtered_server", [&] { return ConfirmedPerDay(table, "confirmed_server", true); }); !s.ok()) return s;
      if (Status s = timed("filtered_client", [&] { return ConfirmedPerDay(table, "confirmed_client", false); }); !s.ok()) return s;
      const std::string vs = std::to_string(volume);
      Add("projection_rebuild", vs + "/filtered_server", "speedup_vs_client",
          Get("projection_rebuild", vs + "/filtered_client", "seconds").value_or(0) /
              std::max(1e-9, Get("projection_rebuild", vs + "/filtered_server", "seconds").value_or(1)),
          "x");
      // The three OrderSummary tables must be the same table.
      for (const char* other : {"summary_single", "summary_batched"}) {
        Result<TableDiff> d = CompareTables(*c_, spec, "order_summary", other);
        if (!d.ok()) return d.status();
        if (!d->identical() || d->live_rows != static_cast<uint64_t>(volume / kEventsPerStream)) {
          consistent_ = false;
          problems_.push_back(fmt::format("question 3, {} events: {} differs from the pipeline's order_summary", volume, other));
        }
      }
      Result<std::optional<std::string>> same = c_->QueryValue(
          "SELECT COUNT(*) FROM confirmed_server s JOIN confirmed_client c USING (day) WHERE s.confirmed = c.confirmed");
      Result<std::optional<std::string>> all = c_->QueryValue("SELECT COUNT(*) FROM confirmed_client");
      if (!same.ok() || !all.ok() || **same != **all) {
        consistent_ = false;
        problems_.push_back(fmt::format("question 3, {} events: the filtered projections differ", volume));
      }
      (void)c_->Execute("DROP TABLE IF EXISTS " + QuoteIdentifier(table));
    }
    return Status::Ok();
  }

  // rewind's own pipeline over the stress event table, with the declared OrderSummary.
  Status Pipeline(const std::string& table, const ModelPlan& plan) {
    ReplayOptions po;
    po.connection = conn_;
    po.events.table = table;
    po.events.id_column = "position";
    po.events.type_column = "type";
    po.events.payload_column = "payload";
    po.events.time_column = "created_at";
    po.projectors = {plan.name};
    po.progress = ProgressMode::kQuiet;
    std::vector<std::unique_ptr<Projector>> projectors;
    projectors.push_back(MakeDeclaredProjector(plan));
    // What the pipeline may create here: its bookkeeping, the live table, the shadow table
    // and the old copy the swap leaves.
    const std::string live = projectors[0]->table().name;
    std::vector<std::string> made(std::begin(kBookkeepingTables), std::end(kBookkeepingTables));
    for (const std::string& t : {live, live + table_admin::kShadowSuffix, live + table_admin::kOldSuffix}) {
      made.push_back(t);
    }
    for (const std::string& t : made) {
      if (Status s = Own(t); !s.ok()) return s;
    }
    ReplaySummary sum = RunRebuild(po, std::move(projectors), stop_, PlanFor(po));
    if (!sum.status.ok()) return sum.status;
    if (sum.failures != 0) return Status::Internal(fmt::format("the pipeline recorded {} failures", sum.failures));
    return Status::Ok();
  }

  struct Acknowledged {
    std::string stream;
    int64_t version;
    std::string eid;
  };

  // Question 4: appends by concurrent writers, then a check of every acknowledged append.
  Status Question4() {
    Result<std::optional<std::string>> flush = c_->QueryValue("SELECT @@innodb_flush_log_at_trx_commit");
    Result<std::optional<std::string>> binlog = c_->QueryValue("SELECT @@log_bin");
    durability_ = fmt::format("innodb_flush_log_at_trx_commit = {}, log_bin = {}",
                              flush.ok() && *flush ? **flush : "?", binlog.ok() && *binlog ? **binlog : "?");
    Progress("question 4: appends by concurrent writers (" + durability_ + ")");
    const int total = quick_ ? 2200 : 22000;
    for (int writers : {1, 10, 100}) {
      const int orders = std::max(1, total / (writers * 11));
      if (Status s = Appenders(fmt::format("distinct_{}", writers), writers, orders, 0); !s.ok()) return s;
    }
    return Appenders("same_stream_10", 10, 0, quick_ ? 40 : 200);
  }

  // `writers` threads, each on its own connection: `orders` orders of 11 events each on
  // streams of their own, or (orders == 0) `per_writer` appends to one shared stream with
  // the expected version, a conflict or deadlock retried after reading the stream's version.
  Status Appenders(const std::string& name, int writers, int orders, int per_writer) {
    std::mutex mu;
    std::vector<double> latencies;
    std::vector<Acknowledged> acked;
    std::atomic<uint64_t> attempts{0}, conflicts{0}, deadlocks{0}, retries{0}, events{0};
    Status failed;
    const std::string prefix = fmt::format("q4-{}-", name);
    const auto start = Clock::now();
    std::vector<std::thread> threads;
    for (int w = 0; w < writers; ++w) {
      threads.emplace_back([&, w] {
        Result<std::unique_ptr<Connection>> c = Connection::Open(conn_);
        if (!c.ok()) {
          std::lock_guard<std::mutex> lock(mu);
          failed = c.status();
          return;
        }
        EventStore es(**c, EventStoreTables{});
        std::vector<double> mine;
        std::vector<Acknowledged> my_acks;
        auto append = [&](const std::string& stream, int64_t& version, int64_t n, int seq) -> Status {
          const order::Event e = order::Generate(stream, n, 11);
          const std::string eid = fmt::format("{}-{}", w, seq);
          std::string payload = order::Payload(stream, e);
          payload.insert(1, fmt::format("\"eid\":\"{}\",", eid));
          const auto t0 = Clock::now();
          while (true) {
            ++attempts;
            Result<AppendOutcome> r = es.Append(stream, version, {{order::TypeName(e.kind), payload}});
            if (!r.ok()) return r.status();
            if (*r == AppendOutcome::kAppended) break;
            ++(*r == AppendOutcome::kConflict ? conflicts : deadlocks);
            ++retries;
            Result<int64_t> v = es.Version(stream);  // a fresh read of the stream
            if (!v.ok()) return v.status();
            version = *v;
          }
          mine.push_back(Ms(t0, Clock::now()));
          ++version;
          ++events;
          my_acks.push_back({stream, version, eid});
          return Status::Ok();
        };
        Status s;
        int seq = 0;
        if (orders > 0) {
          for (int o = 0; o < orders && s.ok() && !stop_.load(); ++o) {
            const std::string stream = fmt::format("{}w{}-o{}", prefix, w, o);
            int64_t version = 0;
            for (int64_t n = 1; n <= 11 && s.ok(); ++n) s = append(stream, version, n, seq++);
          }
        } else {
          const std::string stream = prefix + "hot";
          int64_t version = 0;
          for (int i = 0; i < per_writer && s.ok() && !stop_.load(); ++i) {
            s = append(stream, version, 2 + (seq % 9), seq);
            ++seq;
          }
        }
        std::lock_guard<std::mutex> lock(mu);
        if (!s.ok()) failed = s;
        latencies.insert(latencies.end(), mine.begin(), mine.end());
        acked.insert(acked.end(), my_acks.begin(), my_acks.end());
      });
    }
    for (auto& t : threads) t.join();
    const double seconds = Ms(start, Clock::now()) / 1000;
    if (!failed.ok()) return failed.With(name);
    // The check: every stream's versions are exactly 1..n, every acknowledged append is
    // there with its own payload, and no payload is there twice.
    std::map<std::string, std::vector<int64_t>> versions;
    std::map<std::pair<std::string, int64_t>, std::string> stored;
    std::map<std::string, int> eids;
    Status read = c_->Stream(
        fmt::format("SELECT stream, version, JSON_VALUE(payload, '$.eid') FROM es_events WHERE stream LIKE {} ORDER BY stream, version",
                    c_->Quote(prefix + "%")),
        [&](char** v, unsigned long* len) {
          const std::string stream(v[0], len[0]);
          const int64_t version = std::strtoll(v[1], nullptr, 10);
          versions[stream].push_back(version);
          const std::string eid = v[2] ? std::string(v[2], len[2]) : "";
          stored[{stream, version}] = eid;
          ++eids[eid];
        });
    if (!read.ok()) return read;
    uint64_t lost = 0, duplicated = 0;
    for (const auto& [stream, vs] : versions) {
      for (size_t i = 0; i < vs.size(); ++i) {
        if (vs[i] != static_cast<int64_t>(i) + 1) ++lost;  // a gap or a repeat in 1..n
      }
    }
    for (const Acknowledged& a : acked) {
      auto it = stored.find({a.stream, a.version});
      if (it == stored.end() || it->second != a.eid) ++lost;
    }
    for (const auto& [eid, n] : eids) duplicated += n > 1 ? static_cast<uint64_t>(n - 1) : 0;
    if (lost || duplicated) consistent_ = false;
    Add("concurrent_append", name, "events_per_s", static_cast<double>(events.load()) / seconds, "events/s");
    Add("concurrent_append", name, "p50", Percentile(latencies, 50), "ms");
    Add("concurrent_append", name, "p95", Percentile(latencies, 95), "ms");
    Add("concurrent_append", name, "p99", Percentile(latencies, 99), "ms");
    Add("concurrent_append", name, "attempts", static_cast<double>(attempts.load()), "count");
    Add("concurrent_append", name, "conflicts", static_cast<double>(conflicts.load()), "count");
    Add("concurrent_append", name, "retries", static_cast<double>(retries.load()), "count");
    Add("concurrent_append", name, "deadlocks", static_cast<double>(deadlocks.load()), "count");
    Add("concurrent_append", name, "lost", static_cast<double>(lost), "count");
    Add("concurrent_append", name, "duplicated", static_cast<double>(duplicated), "count");
    Progress(fmt::format("  {:<15} {:>3} writers: {:>8.0f} events/s, p50 {:.2f} ms, p99 {:.2f} ms, {} conflicts, {} "
                         "deadlocks, {} lost, {} duplicated",
                         name, writers, static_cast<double>(events.load()) / seconds, Percentile(latencies, 50),
                         Percentile(latencies, 99), conflicts.load(), deadlocks.load(), lost, duplicated));
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
};

}  // namespace

int StressCommand(const StressOptions& options, const std::atomic<bool>& stop, std::FILE* out) {
  return Stress(options, stop).Run(out);
}

}  // namespace rw
