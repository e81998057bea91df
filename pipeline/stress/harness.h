// The harness every question of `rewind stress` runs in: its own scratch database (created
// when missing, refused when it holds a table stress did not create, its tables dropped at
// the end unless --keep), the ownership of every table it creates (recorded before the table
// is), the measurement store (results.csv's rows) with the median and spread of repeated
// runs, the facts the report states besides them (problems found, durability, ...), and the
// progress messages on stderr. What the questions share besides: the clock and percentiles,
// generated Order streams loaded into a table, and rewind's pipeline run on tables stress owns.
//
// Thread safety: a Harness is used by the thread that runs the questions; writers on threads
// of their own open connections of their own (connection()) and only read stop().
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "config/options.h"
#include "pipeline/replay/replay.h"
#include "pipeline/stress/event_store.h"
#include "pipeline/stress/report.h"
#include "stages/db/connection.h"

namespace rw {

using Clock = std::chrono::steady_clock;

// Milliseconds from `from` to `to`.
double Ms(Clock::time_point from, Clock::time_point to);
// The nearest-rank percentile of `v` (0 when empty).
double Percentile(std::vector<double> v, double p);
// The median of `v` (0 when empty).
double Median(std::vector<double> v);

// Generated Order streams: (name, length, the version confirmed at; 0: never).
using OrderStreams = std::vector<std::tuple<std::string, int64_t, int64_t>>;

class Harness {
 public:
  Harness(const StressOptions& options, const std::atomic<bool>& stop);
  ~Harness();

  const StressOptions& options() const { return o_; }
  bool quick() const { return o_.quick; }
  int repeat() const { return o_.repeat; }
  const std::atomic<bool>& stop() const { return stop_; }
  bool stopped() const { return stop_.load(); }
  // Stress's database on the user's server, for connections of the questions' own.
  const ConnectionOptions& connection() const { return conn_; }
  // The connection to stress's database and its event store (es_events, es_snapshots), once
  // Prepare() succeeded.
  Connection& db() { return *c_; }
  EventStore& store() { return *store_; }

  // Its own database: created when missing; refused when it holds a table that stress did
  // not record creating (its bookkeeping table alone makes no other table its own). Drops
  // what a run with --keep left, and creates the event store.
  Status Prepare();
  // The end of a run without --keep: its tables go, then its bookkeeping; the database too
  // when stress created it and nothing else is in it now.
  void Clean();

  // Records `table` as stress's own, before it is created.
  Status Own(const std::string& table);
  // An event store's two tables, recorded, then created.
  Status CreateStore(EventStore& es);
  // `table` recorded as stress's own, dropped if there, and created by `create_sql`.
  Status Recreate(const std::string& table, const std::string& create_sql);
  // What the pipeline may create for the read model whose live table is `live`, recorded as
  // stress's own: its bookkeeping, the live table, the shadow table and the old copy the
  // swap leaves.
  Status OwnBuildTables(const std::string& live);

  // Bulk-loads generated Order streams into `table`.
  Status LoadStreams(const std::string& table, const OrderStreams& streams);
  // rewind's pipeline alone (its tables already recorded as stress's own): it uses
  // connections of its own, never db(), so it may run on another thread.
  Status RunPipeline(const RunSpec& po, std::vector<std::unique_ptr<Projector>> projectors);

  // A progress message on stderr.
  void Progress(const std::string& what) const;
  // A measurement, and one looked up.
  void Add(const std::string& q, const std::string& c, const std::string& m, double v,
           const std::string& unit);
  std::optional<double> Get(const std::string& q, const std::string& c, const std::string& m) const;
  const StressResults& results() const { return results_; }
  // The median, min and max of one point's runs, as results rows `metric`, `metric_min`
  // and `metric_max`, and each run's own as `metric_run1`, `metric_run2`, ...
  void AddSpread(const std::string& q, const std::string& c, const std::string& metric,
                 std::vector<double> runs, const std::string& unit);
  // A failed check, in words: the run is no longer consistent.
  void Problem(std::string what);

  // What the report says besides the measurements (the questions fill their parts).
  StressContext& context() { return ctx_; }
  // Writes the report (see report.h); false when its files could not be written.
  bool WriteReport(std::FILE* out, const Status& status);

 private:
  // The tables of the database that stress did not record creating (all of them when it
  // never worked there).
  Result<std::vector<std::string>> TablesNotOwn();
  // Drops the tables stress recorded creating, and forgets them.
  Status DropOwnTables();
  // The server's version and the settings that decide the figures, in words.
  std::string ServerSettings();

  const StressOptions& o_;
  const std::atomic<bool>& stop_;
  ConnectionOptions conn_;
  std::unique_ptr<Connection> admin_, c_;
  std::unique_ptr<EventStore> store_;
  bool created_ = false;
  StressResults results_;
  StressContext ctx_;
};

}  // namespace rw
