#include "pipeline/replay.h"

#include <fmt/core.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <thread>

#include "pipeline/graph.h"
#include "stages/decoder.h"
#include "stages/fault.h"
#include "stages/failure_recorder.h"
#include "stages/progress.h"
#include "stages/projector_runner.h"
#include "stages/reader.h"

namespace rw {
namespace {

std::string NewRunId() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y%m%dT%H%M%SZ", &tm);
  return fmt::format("{}-{}", buf, getpid());
}

Result<bool> TableExists(Connection& c, const std::string& table) {
  Result<std::optional<std::string>> v = c.QueryValue(fmt::format(
      "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND "
      "TABLE_NAME = {}",
      c.Quote(table)));
  if (!v.ok()) return v.status();
  return *v && **v != "0";
}

// The server-wide name of the lock on one read model (at most 64 characters).
std::string LockName(const std::string& prefix, Connection& c, const std::string& table) {
  return fmt::format("{}:{}.{}", prefix, c.options().database, table).substr(0, 64);
}

std::string CreateTableSql(const TableSpec& spec, const std::string& name) {
  std::string sql = fmt::format("CREATE TABLE {} (", QuoteIdentifier(name));
  for (const Column& col : spec.columns) {
    sql += fmt::format("{} {}, ", QuoteIdentifier(col.name), col.sql_type);
  }
  sql += spec.key_definition + ") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin";
  return sql;
}

// Takes the named lock on each read model's table on `c`; they are held until `c` closes.
Status LockReadModels(Connection& c, const std::vector<std::string>& tables,
                      const std::string& prefix) {
  for (const std::string& table : tables) {
    const std::string name = LockName(prefix, c, table);
    Result<std::optional<std::string>> got =
        c.QueryValue(fmt::format("SELECT GET_LOCK({}, 0)", c.Quote(name)));
    if (!got.ok()) return got.status();
    if (!*got || **got != "1") {
      Result<std::optional<std::string>> holder =
          c.QueryValue(fmt::format("SELECT IS_USED_LOCK({})", c.Quote(name)));
      return Status::Error(
          Status::Code::kBusy,
          fmt::format("another rewind (connection {}) is already rebuilding {}; wait for it "
                      "to finish or stop it",
                      holder.ok() && *holder ? **holder : std::string("?"), table));
    }
  }
  return Status::Ok();
}

struct Prepared {
  int64_t resume_after = 0;
  bool created = false;  // the shadow table was just created, empty
};

// Creates (or, resuming, finds) the shadow table and the checkpoint row of a projector.
Result<Prepared> PrepareProjector(Connection& c, const Projector& p, const std::string& key,
                                  const std::string& shadow, bool resume, const std::string& run_id,
                                  int64_t head_id, std::string* resumed_run_id, std::FILE* log) {
  const std::string name = c.Quote(key);
  if (resume) {
    Result<Rows> cp = c.Query(fmt::format(
        "SELECT last_event_id, run_id FROM {} WHERE projector = {} AND status = 'building' "
        "AND building_table = {}",
        kCheckpointTable, name, c.Quote(shadow)));
    if (!cp.ok()) return cp.status();
    Result<bool> exists = TableExists(c, shadow);
    if (!exists.ok()) return exists.status();
    if (!cp->rows.empty() && *exists) {
      const int64_t after = std::stoll(cp->rows[0][0].value_or("0"));
      if (!p.order_dependent()) {
        *resumed_run_id = cp->rows[0][1].value_or(run_id);
        if (Status s = c.Execute(fmt::format("UPDATE {} SET head_event_id = {}, updated_at = "
                                             "NOW(6) WHERE projector = {}",
                                             kCheckpointTable, head_id, name));
            !s.ok())
          return s;
        fmt::print(log, "rewind: {} resumes after event {}\n", p.name(), after);
        return Prepared{after, false};
      }
      // Its per-visitor state lives only in memory, so a partial table cannot be
      // continued exactly: rebuild this one read model from the first event.
      fmt::print(log, "rewind: {} is order-dependent and restarts from the first event\n",
                 p.name());
    } else {
      fmt::print(log, "rewind: {} has no interrupted rebuild to resume; starting it afresh\n",
                 p.name());
    }
  }
  if (Status s = c.Execute("DROP TABLE IF EXISTS " + QuoteIdentifier(shadow)); !s.ok()) return s;
  if (Status s = c.Execute(CreateTableSql(p.table(), shadow)); !s.ok()) return s;
  if (Status s = c.Execute(fmt::format(
          "REPLACE INTO {} (projector, live_table, building_table, status, run_id, "
          "last_event_id, head_event_id, events_applied, rows_written, started_at, updated_at) "
          "VALUES ({}, {}, {}, 'building', {}, 0, {}, 0, 0, NOW(6), NOW(6))",
          kCheckpointTable, name, c.Quote(p.table().name), c.Quote(shadow), c.Quote(run_id),
          head_id));
      !s.ok())
    return s;
  return Prepared{0, true};
}

// Swaps every shadow table (`live` + `suffix`) in with one atomic RENAME TABLE.
Status SwapIn(Connection& c, const std::vector<std::string>& live_tables,
              const std::string& suffix) {
  std::vector<std::string> renames, olds;
  for (const std::string& live : live_tables) {
    const std::string old = live + "__rewind_old";
    Result<bool> exists = TableExists(c, live);
    if (!exists.ok()) return exists.status();
    if (Status s = c.Execute("DROP TABLE IF EXISTS " + QuoteIdentifier(old)); !s.ok()) return s;
    if (*exists) {
      renames.push_back(fmt::format("{} TO {}", QuoteIdentifier(live), QuoteIdentifier(old)));
      olds.push_back(old);
    }
    renames.push_back(
        fmt::format("{} TO {}", QuoteIdentifier(live + suffix), QuoteIdentifier(live)));
  }
  std::string sql = "RENAME TABLE ";
  for (size_t i = 0; i < renames.size(); ++i) sql += (i ? ", " : "") + renames[i];
  if (Status s = c.Execute(sql); !s.ok()) return s.With("swapping the rebuilt tables in");
  for (const std::string& old : olds) {
    if (Status s = c.Execute("DROP TABLE IF EXISTS " + QuoteIdentifier(old)); !s.ok()) return s;
  }
  return Status::Ok();
}

}  // namespace

Result<TableDiff> CompareTables(Connection& c, const TableSpec& spec, const std::string& live,
                                const std::string& rebuilt) {
  TableDiff d;
  d.table = live;
  std::string keys, group_keys;
  for (size_t i = 0; i + 1 < spec.columns.size(); ++i) {
    const std::string col = QuoteIdentifier(spec.columns[i].name);
    keys += (i ? ", " : "") + col;
    // GROUP BY compares long text by its first max_sort_length bytes only: a hash of
    // the whole value keeps two long URLs with a common prefix apart.
    if (spec.columns[i].sql_type.find("TEXT") != std::string::npos) {
      group_keys += (i ? ", " : "") + fmt::format("SHA2({}, 256), {}", col, col);
    } else {
      group_keys += (i ? ", " : "") + col;
    }
  }
  const std::string cnt = QuoteIdentifier(spec.columns.back().name);
  Result<bool> live_exists = TableExists(c, live);
  if (!live_exists.ok()) return live_exists.status();
  auto totals = [&](const std::string& table, uint64_t& rows, int64_t& total) -> Status {
    Result<Rows> r = c.Query(fmt::format("SELECT COUNT(*), COALESCE(SUM({}), 0) FROM {}", cnt,
                                         QuoteIdentifier(table)));
    if (!r.ok()) return r.status();
    rows = std::stoull(*r->rows[0][0]);
    total = std::stoll(*r->rows[0][1]);
    return Status::Ok();
  };
  if (Status s = totals(rebuilt, d.rebuilt_rows, d.rebuilt_total); !s.ok()) return s;
  if (!*live_exists) {
    d.only_rebuilt = d.rebuilt_rows;
    d.examples.push_back(fmt::format("the live table {} does not exist", live));
    return d;
  }
  if (Status s = totals(live, d.live_rows, d.live_total); !s.ok()) return s;
  // Fast path: equal fingerprints mean equal tables.
  Result<Rows> fl = c.Query(FingerprintQuery(spec, live));
  Result<Rows> fr = c.Query(FingerprintQuery(spec, rebuilt));
  if (!fl.ok()) return fl.status();
  if (!fr.ok()) return fr.status();
  if (fl->rows == fr->rows) return d;
  // One pass over both tables: group the union by key, keep the keys that differ.
  const std::string differing = fmt::format(
      "SELECT {keys}, SUM(IF(side = 0, {cnt}, 0)) AS live_count, SUM(IF(side = 1, {cnt}, 0)) AS "
      "new_count, SUM(side = 0) AS in_live, SUM(side = 1) AS in_new FROM (SELECT {keys}, {cnt}, 0 "
      "AS side FROM {live} UNION ALL SELECT {keys}, {cnt}, 1 FROM {new}) u GROUP BY {group} "
      "HAVING in_live = 0 OR in_new = 0 OR live_count <> new_count",
      fmt::arg("keys", keys), fmt::arg("group", group_keys), fmt::arg("cnt", cnt), fmt::arg("live", QuoteIdentifier(live)),
      fmt::arg("new", QuoteIdentifier(rebuilt)));
  Result<Rows> counts = c.Query(
      "SELECT COALESCE(SUM(in_new = 0), 0), COALESCE(SUM(in_live = 0), 0), "
      "COALESCE(SUM(in_live > 0 AND in_new > 0), 0) FROM (" + differing + ") d");
  if (!counts.ok()) return counts.status();
  d.only_live = std::stoull(*counts->rows[0][0]);
  d.only_rebuilt = std::stoull(*counts->rows[0][1]);
  d.count_differs = std::stoull(*counts->rows[0][2]);
  if (!d.identical()) {
    Result<Rows> ex = c.Query(differing + " LIMIT 5");
    if (!ex.ok()) return ex.status();
    const size_t nkeys = spec.columns.size() - 1;
    for (const auto& row : ex->rows) {
      std::string key;
      for (size_t i = 0; i < nkeys; ++i) {
        std::string v = row[i].value_or("NULL");
        if (v.size() > 60) v = v.substr(0, 60) + "...";
        key += (i ? ", " : "") + v;
      }
      const bool in_live = *row[nkeys + 2] != "0", in_new = *row[nkeys + 3] != "0";
      d.examples.push_back(fmt::format("({}): live {}, rebuilt {}", key,
                                       in_live ? *row[nkeys] : std::string("missing"),
                                       in_new ? *row[nkeys + 1] : std::string("missing")));
    }
  }
  return d;
}

std::string FingerprintQuery(const TableSpec& spec, const std::string& table) {
  std::string cols;
  for (const Column& col : spec.columns) cols += (cols.empty() ? "" : ", ") + QuoteIdentifier(col.name);
  return fmt::format(
      "SELECT COUNT(*), SUM({1}), SUM(CRC32(CONCAT_WS(0x1f, {0}))), "
      "SUM(CAST(CONV(LEFT(MD5(CONCAT_WS(0x1f, {0})), 15), 16, 10) AS UNSIGNED)) FROM {2}",
      cols, QuoteIdentifier(spec.columns.back().name), QuoteIdentifier(table));
}

Status EnsureBookkeepingTables(Connection& c) {
  if (Status s = c.Execute(fmt::format(
          "CREATE TABLE IF NOT EXISTS {} ("
          "projector VARCHAR(64) NOT NULL PRIMARY KEY, "
          "live_table VARCHAR(64) NOT NULL, "
          "building_table VARCHAR(64) NULL, "
          "status VARCHAR(16) NOT NULL, "
          "run_id VARCHAR(64) NOT NULL, "
          "last_event_id BIGINT NOT NULL DEFAULT 0, "
          "head_event_id BIGINT NOT NULL DEFAULT 0, "
          "events_applied BIGINT UNSIGNED NOT NULL DEFAULT 0, "
          "rows_written BIGINT UNSIGNED NOT NULL DEFAULT 0, "
          "started_at DATETIME(6) NULL, updated_at DATETIME(6) NULL, "
          "finished_at DATETIME(6) NULL, seconds DOUBLE NULL, events_per_second DOUBLE NULL"
          ") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4",
          kCheckpointTable));
      !s.ok())
    return s;
  return c.Execute(fmt::format(
      "CREATE TABLE IF NOT EXISTS {} ("
      "id BIGINT AUTO_INCREMENT PRIMARY KEY, run_id VARCHAR(64) NOT NULL, "
      "event_id BIGINT NOT NULL, stage VARCHAR(64) NOT NULL, reason TEXT NOT NULL, "
      "recorded_at DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6), "
      "KEY (run_id), KEY (event_id)) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4",
      kFailureTable));
}

Result<std::vector<std::unique_ptr<Projector>>> SelectProjectors(const ReplayOptions& o) {
  std::vector<std::unique_ptr<Projector>> out;
  if (o.all && !o.projectors.empty()) {
    return Status::InvalidInput("give either --all or read model names, not both");
  }
  if (!o.all && o.projectors.empty()) {
    return Status::InvalidInput("which read models? give --all or names (see `rewind list`)");
  }
  for (const ProjectorInfo& info : AllProjectors()) {
    if (o.all || std::find(o.projectors.begin(), o.projectors.end(), info.name) !=
                     o.projectors.end()) {
      out.push_back(info.make());
    }
  }
  for (const std::string& name : o.projectors) {
    const auto& all = AllProjectors();
    if (std::none_of(all.begin(), all.end(), [&](const auto& i) { return i.name == name; })) {
      std::string known;
      for (const auto& i : all) known += (known.empty() ? "" : ", ") + i.name;
      return Status::NotFound(fmt::format("unknown read model '{}'; known: {}", name, known));
    }
  }
  return out;
}

namespace {

// What distinguishes a rebuild from a verify run: where it writes, which checkpoint rows
// and locks it uses, and whether it swaps.
struct RunPlan {
  std::string table_suffix;       // "__rewind_new" (rebuild) or "__rewind_verify"
  std::string checkpoint_suffix;  // "" or "@verify"
  std::string lock_prefix;        // "rewind" or "rewind-verify"
  bool swap = true;
};

double Since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

// Flushes every runner in parallel (each on its own connection); the first error.
Status FlushAll(std::vector<std::unique_ptr<ProjectorRunner>>& runners) {
  std::vector<Status> results(runners.size());
  std::vector<std::thread> threads;
  for (size_t i = 0; i < runners.size(); ++i) {
    threads.emplace_back([&, i] { results[i] = runners[i]->Flush(); });
  }
  for (auto& t : threads) t.join();
  for (const Status& s : results) {
    if (!s.ok()) return s;
  }
  return Status::Ok();
}

// The admin connection idles while the graph runs; if the server restarted meanwhile,
// reconnect and take the locks again before touching any table.
Status EnsureAdmin(Connection& c, const std::vector<std::string>& tables,
                   const std::string& lock_prefix) {
  if (c.Execute("DO 1").ok()) return Status::Ok();
  Status s;
  for (int attempt = 0; attempt < 8; ++attempt) {
    s = c.ReconnectAfterBackoff(attempt);
    if (s.ok()) break;
  }
  if (!s.ok()) return s;
  return LockReadModels(c, tables, lock_prefix).With("taking the locks again after a reconnect");
}

ReplaySummary Run(const ReplayOptions& o, std::vector<std::unique_ptr<Projector>> projectors,
                  const std::atomic<bool>& stop, const RunPlan& plan) {
  const auto started = std::chrono::steady_clock::now();
  std::FILE* log = stderr;
  const bool quiet = o.progress == ProgressMode::kQuiet;
  ReplaySummary sum;
  sum.run_id = NewRunId();
  auto fail = [&](Status s) {
    sum.status = std::move(s);
    sum.seconds = Since(started);
    return sum;
  };
  if (o.connection.database.empty()) {
    return fail(Status::InvalidInput("no database given: pass --database NAME or set REWIND_DATABASE"));
  }
  if (projectors.empty()) return fail(Status::InvalidInput("no read model selected"));

  Result<std::unique_ptr<Connection>> admin = Connection::Open(o.connection);
  if (!admin.ok()) return fail(admin.status());
  Connection& c = **admin;
  if (Status s = CheckEventTable(c, o.events); !s.ok()) return fail(s);
  if (Status s = EnsureBookkeepingTables(c); !s.ok()) return fail(s);
  std::vector<std::string> live_tables;
  for (const auto& p : projectors) live_tables.push_back(p->table().name);
  if (Status s = LockReadModels(c, live_tables, plan.lock_prefix); !s.ok()) return fail(s);

  Result<int64_t> head = ReadHeadId(c, o.events);
  if (!head.ok()) return fail(head.status());
  sum.head_id = *head;

  // Prepare every projector, then give it its own connection.
  std::vector<std::unique_ptr<ProjectorRunner>> runners;
  int64_t start_after = sum.head_id;
  std::string resumed_run_id;
  for (auto& p : projectors) {
    const std::string key = std::string(p->name()) + plan.checkpoint_suffix;
    const std::string target = p->table().name + plan.table_suffix;
    Result<Prepared> prep = PrepareProjector(c, *p, key, target, o.resume, sum.run_id, sum.head_id,
                                             &resumed_run_id, log);
    if (!prep.ok()) return fail(prep.status().With(fmt::format("preparing {}", p->name())));
    start_after = std::min(start_after, prep->resume_after);
    Result<std::unique_ptr<Connection>> conn = Connection::Open(o.connection);
    if (!conn.ok()) return fail(conn.status());
    RunnerOptions ro;
    ro.target_table = target;
    ro.checkpoint_table = kCheckpointTable;
    ro.checkpoint_key = key;
    ro.resume_after_id = prep->resume_after;
    ro.target_starts_empty = prep->created;
    ro.flush_every_events = o.flush_every_events;
    ro.flush_max_rows = o.flush_max_rows;
    sum.projectors.push_back(ProjectorSummary{std::string(p->name()), target, prep->resume_after});
    Result<std::unique_ptr<ProjectorRunner>> r =
        ProjectorRunner::Make(std::move(p), std::move(*conn), ro);
    if (!r.ok()) return fail(r.status());
    runners.push_back(std::move(*r));
  }
  uint64_t prior_failures = 0;  // recorded by the interrupted part of a resumed run
  if (!resumed_run_id.empty()) {
    sum.run_id = resumed_run_id;  // one run, continued: its failures stay together
    (void)c.Execute(fmt::format("DELETE FROM {} WHERE run_id = {} AND event_id > {}",
                                kFailureTable, c.Quote(sum.run_id), start_after));
    Result<std::optional<std::string>> n = c.QueryValue(fmt::format(
        "SELECT COUNT(*) FROM {} WHERE run_id = {}", kFailureTable, c.Quote(sum.run_id)));
    if (n.ok() && *n) prior_failures = std::stoull(**n);
  }

  Result<std::unique_ptr<Connection>> reader_conn = Connection::Open(o.connection);
  if (!reader_conn.ok()) return fail(reader_conn.status());
  Result<std::unique_ptr<Reader>> reader = Reader::Make(
      std::move(*reader_conn), ReaderOptions{o.events, o.batch_size, start_after, sum.head_id});
  if (!reader.ok()) return fail(reader.status());
  Result<std::unique_ptr<Connection>> recorder_conn = Connection::Open(o.connection);
  if (!recorder_conn.ok()) return fail(recorder_conn.status());
  FailureRecorder recorder(std::move(*recorder_conn), kFailureTable, sum.run_id,
                           o.stop_on_failure);

  uint32_t fields = 0;
  std::vector<std::string> names;
  for (const auto& r : runners) {
    fields |= r->projector().fields();
    names.emplace_back(r->projector().name());
  }
  const Decoder decoder(fields);
  std::vector<Branch> branches;
  for (auto& r : runners) {
    ProjectorRunner* runner = r.get();
    branches.push_back(Branch{names[branches.size()],
                              [runner](const Batch& b) { return runner->Consume(b); }, true});
  }
  branches.push_back(Branch{"failure recorder",
                            [&](const Batch& b) {
                              sum.events_read += b.rows_read;
                              sum.skipped += b.skipped;
                              return recorder.Consume(b);
                            },
                            false});
  auto collect = [&] {
    sum.failures = prior_failures + recorder.failures();
    for (size_t i = 0; i < runners.size(); ++i) {
      const RunnerStats& st = runners[i]->stats();
      ProjectorSummary& ps = sum.projectors[i];
      ps.events_applied = st.events_applied;
      ps.rows_written = st.rows_written;
      ps.flushes = st.flushes;
      ps.retries = st.retries;
      ps.apply_seconds = st.apply_seconds;
      ps.flush_seconds = st.flush_seconds;
    }
  };

  // The rebuild: one pass from the lowest checkpoint to the head.
  Status status;
  {
    Progress progress(o.progress, start_after, sum.head_id, names);
    progress.Start();
    GraphResult graph =
        RunGraph(**reader, decoder, branches, progress, GraphOptions{o.max_in_flight}, stop);
    sum.peak_in_flight = graph.peak_in_flight;
    status = graph.status;
    // Commit what was applied: at the end, and also when stopped by a signal, so that a
    // resume continues from here.
    if (status.ok()) {
      progress.SetPhase(stop.load() ? "stopping: committing what was applied"
                                    : "all events read; writing the read models");
      status = FlushAll(runners);
      if (status.ok()) progress.SetPhase(stop.load() ? "committed" : "read models written");
    }
    progress.Stop();
  }
  collect();
  if (!status.ok()) return fail(status);
  if (stop.load()) {
    sum.interrupted = true;
    return fail(Status::Error(Status::Code::kCancelled, "stopped before the swap"));
  }
  if (!plan.swap) {
    sum.seconds = Since(started);
    return sum;
  }

  FaultPoint("before-swap");
  if (Status s = EnsureAdmin(c, live_tables, plan.lock_prefix); !s.ok()) return fail(s);
  if (Status s = SwapIn(c, live_tables, plan.table_suffix); !s.ok()) return fail(s);
  sum.swapped = true;
  sum.seconds = Since(started);
  const double rate = sum.seconds > 0 ? static_cast<double>(sum.events_read) / sum.seconds : 0;
  for (const ProjectorSummary& ps : sum.projectors) {
    (void)c.Execute(fmt::format(
        "UPDATE {} SET status = '{}', building_table = NULL, finished_at = NOW(6), "
        "seconds = {}, events_per_second = {} WHERE projector = {}",
        kCheckpointTable, o.follow ? "following" : "live", sum.seconds, rate, c.Quote(ps.name)));
  }
  if (!o.follow) return sum;

  // Follow: keep applying new events to the live tables, same checkpoint discipline,
  // same in-memory state (sessions continue exactly), until stopped.
  for (size_t i = 0; i < runners.size(); ++i) {
    runners[i]->Retarget(live_tables[i]);
    sum.projectors[i].table = live_tables[i];
  }
  if (!quiet) fmt::print(log, "rewind: following new events after id {} (Ctrl-C to stop)\n", sum.head_id);
  const auto poll = std::chrono::milliseconds(static_cast<int64_t>(o.poll_seconds * 1000));
  while (!stop.load()) {
    for (auto waited = std::chrono::milliseconds(0); waited < poll && !stop.load();
         waited += std::chrono::milliseconds(20)) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    if (stop.load()) break;
    if (Status s = EnsureAdmin(c, live_tables, plan.lock_prefix); !s.ok()) return fail(s);
    Result<int64_t> now = ReadHeadId(c, o.events);
    if (!now.ok()) return fail(now.status());
    if (*now <= sum.head_id) continue;
    const uint64_t before = sum.events_read;
    (*reader)->ExtendHead(*now);
    Progress quiet_progress(ProgressMode::kQuiet, sum.head_id, *now, names);
    // Each poll's range runs to its end (it is small); the signal is checked between polls.
    const std::atomic<bool> run_to_end{false};
    GraphResult graph = RunGraph(**reader, decoder, branches, quiet_progress,
                                 GraphOptions{o.max_in_flight}, run_to_end);
    Status s = graph.status.ok() ? FlushAll(runners) : graph.status;
    collect();
    if (!s.ok()) return fail(s);
    if (!quiet) {
      fmt::print(log, "rewind: followed events {}..{} ({} new)\n", sum.head_id + 1, *now,
                 sum.events_read - before);
    }
    sum.head_id = *now;
  }
  for (const ProjectorSummary& ps : sum.projectors) {
    (void)c.Execute(fmt::format("UPDATE {} SET status = 'live' WHERE projector = {}",
                                kCheckpointTable, c.Quote(ps.name)));
  }
  sum.seconds = Since(started);
  return sum;  // a stopped follow is a clean end, not an interruption
}

}  // namespace

ReplaySummary Replay(const ReplayOptions& o, std::vector<std::unique_ptr<Projector>> projectors,
                     const std::atomic<bool>& stop) {
  return Run(o, std::move(projectors), stop, RunPlan{kShadowSuffix, "", "rewind", true});
}

VerifySummary Verify(const ReplayOptions& options,
                     std::vector<std::unique_ptr<Projector>> projectors,
                     const std::atomic<bool>& stop) {
  VerifySummary v;
  std::vector<TableSpec> specs;
  for (const auto& p : projectors) specs.push_back(p->table());
  ReplayOptions o = options;
  o.resume = false;
  o.follow = false;
  v.replay = Run(o, std::move(projectors), stop,
                 RunPlan{kVerifySuffix, "@verify", "rewind-verify", false});
  Result<std::unique_ptr<Connection>> conn = Connection::Open(o.connection);
  if (!conn.ok()) {
    if (v.replay.status.ok()) v.replay.status = conn.status();
    return v;
  }
  Connection& c = **conn;
  auto cleanup = [&] {
    for (const TableSpec& spec : specs) {
      (void)c.Execute("DROP TABLE IF EXISTS " + QuoteIdentifier(spec.name + kVerifySuffix));
      (void)c.Execute(fmt::format("DELETE FROM {} WHERE projector = {}", kCheckpointTable,
                                  c.Quote(spec.name + "@verify")));
    }
  };
  if (!v.replay.status.ok()) {
    cleanup();
    return v;
  }
  for (const TableSpec& spec : specs) {
    Result<TableDiff> d = CompareTables(c, spec, spec.name, spec.name + kVerifySuffix);
    if (!d.ok()) {
      v.replay.status = d.status();
      break;
    }
    v.tables.push_back(std::move(*d));
  }
  cleanup();
  return v;
}

int ReplaySummary::ExitCode() const {
  if (!status.ok()) return 1;
  return failures > 0 ? 3 : 0;
}

std::string ReplaySummary::Text() const {
  std::string out = fmt::format("{:<26} {:>12} {:>12} {:>8} {:>9} {:>9}\n", "read model",
                                "events", "rows", "flushes", "apply s", "write s");
  for (const ProjectorSummary& p : projectors) {
    out += fmt::format("{:<26} {:>12} {:>12} {:>8} {:>9.2f} {:>9.2f}{}\n", p.name,
                       WithThousands(p.events_applied), WithThousands(p.rows_written), p.flushes,
                       p.apply_seconds, p.flush_seconds,
                       p.resumed_after ? fmt::format("  (resumed after id {})", p.resumed_after)
                                       : std::string());
  }
  const double rate = seconds > 0 ? static_cast<double>(events_read) / seconds : 0;
  out += fmt::format(
      "{} {} read model(s) from {} events in {:.2f} s ({} events/s); {} skipped (other "
      "event types), {} failed{}\n",
      swapped ? "rebuilt and swapped in" : "NOT swapped in:", projectors.size(),
      WithThousands(events_read), seconds, WithThousands(static_cast<uint64_t>(rate)),
      WithThousands(skipped), WithThousands(failures),
      failures ? fmt::format(" (see: SELECT * FROM {} WHERE run_id = '{}')", kFailureTable, run_id)
               : std::string());
  return out;
}

std::string ReplaySummary::Json() const {
  auto esc = [](const std::string& s) {
    std::string o;
    for (char ch : s) {
      if (ch == '"' || ch == '\\') o += '\\';
      if (static_cast<unsigned char>(ch) < 0x20) {
        o += fmt::format("\\u{:04x}", ch);
        continue;
      }
      o += ch;
    }
    return o;
  };
  std::string out = fmt::format(
      "{{\"run_id\": \"{}\", \"ok\": {}, \"swapped\": {}, \"interrupted\": {}, \"error\": \"{}\", "
      "\"head_id\": {}, \"events_read\": {}, \"skipped\": {}, \"failures\": {}, "
      "\"seconds\": {:.3f}, \"events_per_second\": {:.0f}, \"peak_batches_in_flight\": {}, "
      "\"projectors\": [",
      esc(run_id), status.ok(), swapped, interrupted, esc(status.message()), head_id, events_read,
      skipped, failures, seconds, seconds > 0 ? static_cast<double>(events_read) / seconds : 0,
      peak_in_flight);
  for (size_t i = 0; i < projectors.size(); ++i) {
    const ProjectorSummary& p = projectors[i];
    out += fmt::format(
        "{}{{\"name\": \"{}\", \"table\": \"{}\", \"resumed_after\": {}, \"events_applied\": {}, "
        "\"rows_written\": {}, \"flushes\": {}, \"retries\": {}, \"apply_seconds\": {:.3f}, "
        "\"flush_seconds\": {:.3f}}}",
        i ? ", " : "", esc(p.name), esc(p.table), p.resumed_after, p.events_applied,
        p.rows_written, p.flushes, p.retries, p.apply_seconds, p.flush_seconds);
  }
  return out + "]}\n";
}

}  // namespace rw
