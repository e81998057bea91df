#include "pipeline/stress/rebuild.h"

#include <fmt/core.h>

#include <algorithm>
#include <array>
#include <functional>
#include <map>
#include <thread>

#include "pipeline/engine/compare.h"
#include "pipeline/stress/cases.h"
#include "pipeline/stress/questions.h"
#include "projectors/declared.h"
#include "stages/db/table_schema.h"

namespace rw {
namespace {

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

constexpr int64_t kEventsPerStream = 100;  // question 3, as published

class Rebuild : public Question {
 public:
  using Question::Question;

  // Question 3: projection rebuild across volumes, three ways, and server vs client filtering.
  // Every method runs --repeat times at each volume but one save per event (once; not
  // measured above SingleLargest()) and, above 100,000 events, batches (once).
  Status Run() override {
    const std::vector<int64_t> volumes =
        h_.quick() ? std::vector<int64_t>{1000, 2000, 3000, 5000, 10000}
                   : std::vector<int64_t>{10000, 30000, 100000, 300000, 1000000};
    Result<std::vector<ModelPlan>> plans = OrderSummaryModels();
    if (!plans.ok()) return plans.status();
    const TableSpec spec = MakeDeclaredProjector((*plans)[0])->table();
    h_.Progress(fmt::format(
        "question 3: rebuilding OrderSummary (100 events per order) one save per event (and the "
        "same statements committed once per page), in batches of 50 (and of 10, 100, 500 and "
        "1,000 at {} events), and with rewind's pipeline",
        BatchVolume()));
    for (int64_t volume : volumes) {
      const bool parallel = volume == (h_.quick() ? volumes.back() : 100000);
      if (Status s = RebuildVolume(volume, spec, (*plans)[0], parallel); !s.ok()) return s;
    }
    return Status::Ok();
  }

 private:
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

  // Where a by-hand rebuild's time went, in milliseconds, each part measured: reading the
  // pages, the client's work (decoding, writing the SQL) and the statements (each a round
  // trip, the server's parse and upsert, and its commit), of which `commit_ms` the COMMITs
  // of a rebuild that commits once per page.
  struct SaveParts {
    double read_ms = 0, client_ms = 0, statement_ms = 0, commit_ms = 0;
    uint64_t statements = 0;
  };

  // OrderSummary by hand, as an application without rewind would: one upsert per event,
  // autocommitted (batch 1), or batches of `batch` events each saved by one multi-row
  // upsert, autocommitted: one statement and one commit per batch. `per_page`: the same
  // statements in one transaction per page of 10,000 events (the control that leaves the
  // per-statement commit out).
  Status RebuildByHand(const std::string& events, const TableSpec& spec, const std::string& table,
                       int batch, SaveParts* parts, bool per_page = false) {
    if (Status s = h_.Recreate(table, table_schema::CreateTableSql(spec, table)); !s.ok()) return s;
    return SaveSummary(h_.db(), events, spec, table, batch, parts, per_page);
  }

  // One event of OrderSummary as a row of the upsert, appended to `sql`.
  static Status AppendSummaryRow(Connection& c, const std::string& stream,
                                 const std::string& position, const order::Event& e,
                                 std::string& sql) {
    c.AppendQuoted(sql, stream);
    sql += ", UNHEX(SHA2(";
    c.AppendQuoted(sql, stream);
    sql += ", 256)), ";
    // status (last) and confirmed_at (first) each with the event's position, which their
    // merge compares (stages/db/table_schema.h).
    switch (e.kind) {
      case order::Kind::kCreated:
        sql += fmt::format("'created', {}, 0, 0, 0, NULL, NULL)", position);
        return Status::Ok();
      case order::Kind::kItemAdded:
        sql += fmt::format("NULL, NULL, 1, {}, 0, NULL, NULL)", order::Money(e.cents));
        return Status::Ok();
      case order::Kind::kDiscountApplied:
        sql += fmt::format("NULL, NULL, 0, 0, {}, NULL, NULL)", order::Money(e.cents));
        return Status::Ok();
      case order::Kind::kConfirmed:
        sql += fmt::format("'confirmed', {}, 0, 0, 0, ", position);
        c.AppendQuoted(sql, e.at);
        sql += fmt::format(", {})", position);
        return Status::Ok();
      default:
        return Status::Internal(
            fmt::format("event type {} in OrderSummary", order::TypeName(e.kind)));
    }
  }

  // The loop of RebuildByHand on connection `c`, into the (empty) `table`; its parts timed
  // into `parts` (optional).
  Status SaveSummary(Connection& c, const std::string& events, const TableSpec& spec,
                     const std::string& table, int batch, SaveParts* parts = nullptr,
                     bool per_page = false) {
    SaveParts mine;
    SaveParts& p = parts ? *parts : mine;
    const std::string prefix = fmt::format("INSERT INTO {} ({}) VALUES ", QuoteIdentifier(table),
                                           table_schema::StoredColumnList(spec));
    const std::string merge = table_schema::MergeClause(spec);
    std::vector<std::array<std::string, 4>> rows;
    int64_t after = 0, last = 0;
    std::string sql = prefix;
    int in_statement = 0;
    const auto timed = [&](const std::string& statement, double& into) {
      const auto t0 = Clock::now();
      Status s = c.Execute(statement);
      into += Ms(t0, Clock::now());
      return s;
    };
    const auto save = [&]() -> Status {
      if (in_statement == 0) return Status::Ok();
      sql += merge;
      ++p.statements;
      Status s = timed(sql, p.statement_ms);
      sql = prefix;
      in_statement = 0;
      return s;
    };
    while (!h_.stopped()) {
      auto t0 = Clock::now();
      if (Status s = ReadPage(c, events, after, "", 10000, rows, last); !s.ok()) return s;
      p.read_ms += Ms(t0, Clock::now());
      if (rows.empty()) break;
      after = last;
      if (per_page) {
        if (Status s = timed("START TRANSACTION", p.statement_ms); !s.ok()) return s;
      }
      t0 = Clock::now();
      const double statements_before = p.statement_ms;
      for (const auto& [stream, type, payload, position] : rows) {
        if (order::KindOf(type) == order::Kind::kNoteAdded) continue;
        Result<order::Event> e = DecodeOrderEvent(type, payload);
        if (!e.ok()) return e.status();
        sql += in_statement ? ",(" : "(";
        if (Status s = AppendSummaryRow(c, stream, position, *e, sql); !s.ok()) return s;
        if (++in_statement == batch) {
          if (Status s = save(); !s.ok()) return s;
        }
      }
      if (per_page) {
        if (Status s = save(); !s.ok()) return s;
      }
      p.client_ms += Ms(t0, Clock::now()) - (p.statement_ms - statements_before);
      if (per_page) {
        const double before = p.statement_ms;
        if (Status s = timed("COMMIT", p.statement_ms); !s.ok()) return s;
        p.commit_ms += p.statement_ms - before;
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
    while (!h_.stopped()) {
      if (Status s = ReadPage(h_.db(), events, after, where, 10000, rows, last); !s.ok()) return s;
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
    if (Status s = h_.Recreate(
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
      h_.db().AppendQuoted(sql, stream);
      sql += fmt::format(",{},{})", v.first, v.second);
      if (++n % 1000 == 0 || n == per_order.size()) {
        if (Status s = h_.db().Execute(sql); !s.ok()) return s;
        sql.clear();
      }
    }
    return Status::Ok();
  }

  // The largest volume one save per event is measured at (a commit per event: minutes per
  // 100,000 events on a disk that flushes each); above it, estimated when its cost per
  // event is flat across the measured volumes, otherwise said not measured.
  int64_t SingleLargest() const { return h_.quick() ? 10000 : 100000; }
  // The volume the batch sizes are compared at.
  int64_t BatchVolume() const { return h_.quick() ? 10000 : 100000; }

  // Question 3 at one volume: its events loaded into a table of their own, OrderSummary
  // rebuilt by each method (`plan` for rewind's pipeline, `spec` its table), the discounts
  // filtered in the server and in the client, the parallel projections when `parallel`,
  // and the checks that the tables agree. The event table is dropped after.
  Status RebuildVolume(int64_t volume, const TableSpec& spec, const ModelPlan& plan,
                       bool parallel) {
    const std::string table = fmt::format("es_rebuild_{}", volume);
    if (Status s = LoadRebuildEvents(h_, table, volume); !s.ok()) return s;
    const bool single_measured = volume <= SingleLargest();
    if (single_measured) {
      // One save per event, and its control: the same statements committed once per page.
      if (Status s = TimeByHand(volume, "single", 1, table, spec, 1); !s.ok()) return s;
      if (Status s = TimeByHand(volume, "single_in_txn", 1, table, spec, 1, true); !s.ok())
        return s;
    } else {
      EstimateSingle(volume);
    }
    if (Status s =
            TimeByHand(volume, "batched", volume > 100000 ? 1 : h_.repeat(), table, spec, 50);
        !s.ok()) {
      return s;
    }
    if (Status s = TimeRebuild(volume, "pipeline", h_.repeat(),
                               [&](SaveParts*) { return Pipeline(h_, table, plan); });
        !s.ok())
      return s;
    if (Status s = CheckSummary(spec, volume, "summary_batched"); !s.ok()) return s;
    if (single_measured) {
      for (const char* t : {"summary_single", "summary_single_in_txn"}) {
        if (Status s = CheckSummary(spec, volume, t); !s.ok()) return s;
      }
    }
    if (volume == BatchVolume()) {
      if (Status s = TimeByHand(volume, "batched_in_txn", 1, table, spec, 50, true); !s.ok())
        return s;
      if (Status s = CheckSummary(spec, volume, "summary_batched_in_txn"); !s.ok()) return s;
      if (Status s = BatchSizes(volume, table, spec); !s.ok()) return s;
    }
    if (Status s = Filtered(volume, table); !s.ok()) return s;
    if (parallel) {
      if (Status s = ParallelProjections(table, spec, volume); !s.ok()) return s;
    }
    (void)h_.db().Execute("DROP TABLE IF EXISTS " + QuoteIdentifier(table));
    return Status::Ok();
  }

  // The batch sizes 10, 50, 100, 500 and 1,000 at `volume`, interleaved: each of --repeat
  // rounds runs every size once, so the disk's changing flush latency falls on all alike.
  // Each its own table, checked against the pipeline's.
  Status BatchSizes(int64_t volume, const std::string& table, const TableSpec& spec) {
    const auto& sizes = stress_cases::kBatchSizes;
    std::map<int, std::vector<double>> seconds;
    for (int r = 0; r < h_.repeat() && !h_.stopped(); ++r) {
      for (int batch : sizes) {
        const std::string t = fmt::format("summary_batch_{}", batch);
        const auto t0 = Clock::now();
        if (Status s = RebuildByHand(table, spec, t, batch, nullptr); !s.ok())
          return s.With(fmt::format("{} events, batches of {}", volume, batch));
        seconds[batch].push_back(Ms(t0, Clock::now()) / 1000);
      }
    }
    for (int batch : sizes) {
      const std::string c = fmt::format("{}/batch_{}", volume, batch);
      h_.AddSpread("projection_rebuild", c, "seconds", seconds[batch], "s");
      h_.Add("projection_rebuild", c, "batch", batch, "count");
      h_.Progress(fmt::format("  {:>8} events, batches of {:<5} {:8.3f} s ({} run(s), interleaved)",
                              volume, batch, Median(seconds[batch]), seconds[batch].size()));
      if (Status s = CheckSummary(spec, volume, fmt::format("summary_batch_{}", batch)); !s.ok())
        return s;
    }
    return Status::Ok();
  }

  // The discounts filtered in the server and in the client, timed and checked.
  Status Filtered(int64_t volume, const std::string& table) {
    for (bool in_server : {true, false}) {
      if (Status s = TimeRebuild(
              volume, in_server ? "filtered_server" : "filtered_client", h_.repeat(),
              [&](SaveParts*) {
                return DiscountsPerOrder(table, in_server ? "discounts_server" : "discounts_client",
                                         in_server);
              });
          !s.ok()) {
        return s;
      }
    }
    const std::string vs = std::to_string(volume);
    h_.Add(
        "projection_rebuild", vs + "/filtered_server", "speedup_vs_client",
        h_.Get("projection_rebuild", vs + "/filtered_client", "seconds").value_or(0) /
            std::max(1e-9,
                     h_.Get("projection_rebuild", vs + "/filtered_server", "seconds").value_or(1)),
        "x");
    CheckFilteredProjections(table, volume);
    return Status::Ok();
  }

  // OrderSummary by hand at `volume` (`method`, into summary_<method>), `runs` times, its
  // parts measured (see SaveParts).
  Status TimeByHand(int64_t volume, const std::string& method, int runs, const std::string& table,
                    const TableSpec& spec, int batch, bool per_page = false) {
    return TimeRebuild(volume, method, runs, [&](SaveParts* parts) {
      return RebuildByHand(table, spec, "summary_" + method, batch, parts, per_page);
    });
  }

  // One method of question 3 at `volume` events, run `runs` times: its seconds and events/s
  // (median, min, max, each run's), its number of runs and, for a rebuild by hand, its parts.
  Status TimeRebuild(int64_t volume, const std::string& method, int runs,
                     const std::function<Status(SaveParts*)>& run) {
    std::vector<double> seconds, rates;
    std::vector<double> read, client, statement, commit, statements;
    for (int r = 0; r < runs && !h_.stopped(); ++r) {
      SaveParts parts;
      const auto t0 = Clock::now();
      if (Status s = run(&parts); !s.ok())
        return s.With(fmt::format("{} events, {}", volume, method));
      seconds.push_back(Ms(t0, Clock::now()) / 1000);
      rates.push_back(static_cast<double>(volume) / seconds.back());
      read.push_back(parts.read_ms / 1000), client.push_back(parts.client_ms / 1000);
      statement.push_back(parts.statement_ms / 1000), commit.push_back(parts.commit_ms / 1000);
      statements.push_back(static_cast<double>(parts.statements));
    }
    const std::string c = fmt::format("{}/{}", volume, method);
    h_.AddSpread("projection_rebuild", c, "seconds", seconds, "s");
    h_.AddSpread("projection_rebuild", c, "events_per_s", rates, "events/s");
    h_.Add("projection_rebuild", c, "runs", static_cast<double>(seconds.size()), "count");
    if (!statements.empty() && statements.front() > 0) {
      h_.AddSpread("projection_rebuild", c, "read_s", read, "s");
      h_.AddSpread("projection_rebuild", c, "client_s", client, "s");
      h_.AddSpread("projection_rebuild", c, "statement_s", statement, "s");
      if (commit.front() > 0) h_.AddSpread("projection_rebuild", c, "commit_s", commit, "s");
      h_.Add("projection_rebuild", c, "statements", statements.front(), "count");
    }
    h_.Progress(fmt::format("  {:>8} events, {:<16} {:8.2f} s {:>10.0f} events/s ({} run(s))",
                            volume, method, Median(seconds), Median(rates), seconds.size()));
    return Status::Ok();
  }

  // One save per event above SingleLargest(): not measured. Estimated, and labelled so, only
  // when its cost per event at the measured volumes is flat (the largest within 20 % of the
  // smallest): the median of those costs times `volume`.
  void EstimateSingle(int64_t volume) {
    const std::string c = fmt::format("{}/single", volume);
    std::vector<double> per_event;  // seconds per event at each measured volume
    for (const StressRow& r : h_.results().rows()) {
      if (r.question == "projection_rebuild" && r.metric == "seconds" && r.case_name.size() > 7 &&
          r.case_name.substr(r.case_name.size() - 7) == "/single" &&
          !h_.Get(r.question, r.case_name, "estimated")) {
        per_event.push_back(r.value / std::stod(r.case_name.substr(0, r.case_name.size() - 7)));
      }
    }
    if (per_event.empty()) return;
    const auto [lo, hi] = std::minmax_element(per_event.begin(), per_event.end());
    h_.Add("projection_rebuild", c, "not_measured", 1, "count");
    if (*hi > *lo * 1.2) {
      h_.Progress(fmt::format(
          "  {:>8} events, single           not measured, not estimated: its cost per event at the "
          "measured volumes is not flat ({:.3f} to {:.3f} ms)",
          volume, *lo * 1000, *hi * 1000));
      return;
    }
    const double estimate = Median(per_event) * static_cast<double>(volume);
    h_.Add("projection_rebuild", c, "seconds", estimate, "s");
    h_.Add("projection_rebuild", c, "events_per_s", static_cast<double>(volume) / estimate,
           "events/s");
    h_.Add("projection_rebuild", c, "estimated", 1, "count");
    h_.Progress(fmt::format(
        "  {:>8} events, single           not measured: estimated {:.1f} s from the measured "
        "volumes' median cost per event (flat within 20 %: {:.3f} to {:.3f} ms)",
        volume, estimate, *lo * 1000, *hi * 1000));
  }

  // OrderSummary by hand in `other` must be the pipeline's order_summary at `volume`: a
  // difference is a problem.
  Status CheckSummary(const TableSpec& spec, int64_t volume, const std::string& other) {
    Result<TableDiff> d = CompareTables(h_.db(), spec, "order_summary", other);
    if (!d.ok()) return d.status();
    if (!d->identical() || d->live_rows != static_cast<uint64_t>(volume / kEventsPerStream)) {
      h_.Problem(fmt::format("question 3, {} events: {} differs from the pipeline's order_summary",
                             volume, other));
    }
    return Status::Ok();
  }

  // The two filtered projections of question 3 over `table` must be the same table, with a
  // row for every order that has a discount: otherwise a problem.
  void CheckFilteredProjections(const std::string& table, int64_t volume) {
    Result<std::optional<std::string>> same = h_.db().QueryValue(
        "SELECT COUNT(*) FROM discounts_server s JOIN discounts_client c USING (order_id) "
        "WHERE s.discounts = c.discounts AND s.discount_cents = c.discount_cents");
    Result<std::optional<std::string>> all =
        h_.db().QueryValue("SELECT COUNT(*) FROM discounts_client");
    Result<std::optional<std::string>> want =
        h_.db().QueryValue(fmt::format("SELECT COUNT(DISTINCT stream) FROM {} WHERE type = '{}'",
                                       QuoteIdentifier(table), order::kDiscountApplied));
    if (!same.ok() || !all.ok() || !want.ok() || **same != **all || **all != **want) {
      h_.Problem(fmt::format("question 3, {} events: the filtered projections differ", volume));
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
    for (int r = 0; r < h_.repeat() && !h_.stopped(); ++r) {
      for (const std::string& t : tables("seq")) {
        if (Status s = h_.Recreate(t, table_schema::CreateTableSql(spec, t)); !s.ok()) return s;
      }
      auto t0 = Clock::now();
      for (const std::string& t : tables("seq")) {
        if (Status s = SaveSummary(h_.db(), events, spec, t, 50); !s.ok()) return s;
      }
      one_by_one.push_back(Ms(t0, Clock::now()) / 1000);
      std::vector<std::unique_ptr<Connection>> conns;
      for (const std::string& t : tables("par")) {
        if (Status s = h_.Recreate(t, table_schema::CreateTableSql(spec, t)); !s.ok()) return s;
        Result<std::unique_ptr<Connection>> c = Connection::Open(h_.connection());
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
      Result<TableDiff> d = CompareTables(h_.db(), spec, "order_summary", t);
      if (!d.ok()) return d.status();
      if (!d->identical()) {
        h_.Problem(
            fmt::format("question 3, parallel projections: {} differs from order_summary", t));
      }
    }
    const std::string c = fmt::format("{}/{}_models", volume, kParallel);
    h_.AddSpread("parallel_projections", c, "one_by_one_seconds", one_by_one, "s");
    h_.AddSpread("parallel_projections", c, "at_once_seconds", at_once, "s");
    h_.Progress(fmt::format(
        "  {} read models of {} events: one after the other {:.2f} s, at once on {} connections "
        "{:.2f} s",
        kParallel, volume, Median(one_by_one), kParallel, Median(at_once)));
    return Status::Ok();
  }
};

}  // namespace

std::unique_ptr<Question> MakeRebuild(Harness& h) { return std::make_unique<Rebuild>(h); }

Result<std::vector<ModelPlan>> OrderSummaryModels() {
  return ParseModels(kOrderSummaryToml, "order_summary (built in)", "es_events");
}

Status LoadRebuildEvents(Harness& h, const std::string& table, int64_t volume) {
  EventStore es(h.db(), EventStoreTables{table, "es_snapshots"});
  if (Status s = h.CreateStore(es); !s.ok()) return s;
  OrderStreams streams;
  for (int64_t i = 0; i < volume / kEventsPerStream; ++i) {
    streams.emplace_back(fmt::format("order-{:07d}", i), kEventsPerStream, i % 4 == 3 ? 0 : 90);
  }
  if (Status s = h.LoadStreams(table, streams); !s.ok()) return s;
  (void)h.db().Execute("ANALYZE TABLE " + QuoteIdentifier(table));
  return Status::Ok();
}

Status Pipeline(Harness& h, const std::string& table, const ModelPlan& plan) {
  RunSpec po = PipelineSpec(h, table);
  std::vector<std::unique_ptr<Projector>> projectors;
  projectors.push_back(MakeDeclaredProjector(plan));
  if (Status s = h.OwnBuildTables(projectors[0]->table().name); !s.ok()) return s;
  return h.RunPipeline(po, std::move(projectors));
}

RunSpec PipelineSpec(const Harness& h, const std::string& table) {
  RunSpec po;
  po.connection = h.connection();
  po.events.table = table;
  po.events.id_column = "position";
  po.events.type_column = "type";
  po.events.payload_column = "payload";
  po.events.time_column = "created_at";
  po.progress = ProgressMode::kQuiet;
  return po;
}

}  // namespace rw
