#include "pipeline/stress/harness.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>

#include "stages/db/row_writer.h"
#include "stages/db/table_admin.h"

namespace rw {
namespace {

// Stress's own bookkeeping: every table it created in its database, recorded before it is
// created. It drops only those; any other table there makes it refuse the database.
constexpr const char* kOwnTables = "rewind_stress_tables";

}  // namespace

double Ms(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration<double, std::milli>(to - from).count();
}

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t rank = static_cast<size_t>(std::ceil(p / 100.0 * static_cast<double>(v.size())));
  rank = std::clamp<size_t>(rank, 1, v.size());
  return v[rank - 1];
}

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

Harness::Harness(const StressOptions& o, const std::atomic<bool>& stop) : o_(o), stop_(stop) {
  conn_ = o.connection;
  conn_.database = o.database;
  ctx_.durability = "?";
}

Harness::~Harness() = default;

Status Harness::Prepare() {
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
    if (Status s = admin_->Execute("CREATE DATABASE " + QuoteIdentifier(conn_.database)); !s.ok()) {
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
                       created_ ? " (created)" : "", o_.quick ? "--quick" : "full run"));
  return CreateStore(*store_);
}

Result<std::vector<std::string>> Harness::TablesNotOwn() {
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
          ? fmt::format(" AND NOT EXISTS (SELECT 1 FROM {}.{} o WHERE BINARY o.table_name = BINARY "
                        "t.TABLE_NAME)",
                        QuoteIdentifier(conn_.database), QuoteIdentifier(kOwnTables))
          : std::string()));
  if (!tables.ok()) return tables.status();
  std::vector<std::string> out;
  for (const auto& r : tables->rows) out.push_back(r[0].value_or(""));
  return out;
}

Status Harness::Own(const std::string& table) {
  return c_->Execute(fmt::format("INSERT IGNORE INTO {} (table_name) VALUES ({})",
                                 QuoteIdentifier(kOwnTables), c_->Quote(table)));
}

Status Harness::CreateStore(EventStore& es) {
  if (Status s = Own(es.tables().events); !s.ok()) return s;
  if (Status s = Own(es.tables().snapshots); !s.ok()) return s;
  return es.Create();
}

Status Harness::Recreate(const std::string& table, const std::string& create_sql) {
  if (Status s = Own(table); !s.ok()) return s;
  if (Status s = c_->Execute("DROP TABLE IF EXISTS " + QuoteIdentifier(table)); !s.ok()) return s;
  return c_->Execute(create_sql);
}

Status Harness::OwnBuildTables(const std::string& live) {
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

Status Harness::DropOwnTables() {
  const std::string own_table = QuoteIdentifier(conn_.database) + "." + QuoteIdentifier(kOwnTables);
  Result<Rows> own = admin_->Query("SELECT table_name FROM " + own_table);
  if (!own.ok()) return own.status();
  for (const auto& r : own->rows) {
    const std::string table = r[0].value_or("");
    if (Status s = admin_->Execute(fmt::format(
            "DROP TABLE IF EXISTS {}.{}", QuoteIdentifier(conn_.database), QuoteIdentifier(table)));
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

void Harness::Clean() {
  if (!DropOwnTables().ok()) return;
  Result<std::vector<std::string>> others = TablesNotOwn();
  if (!others.ok()) return;
  (void)admin_->Execute(fmt::format("DROP TABLE IF EXISTS {}.{}", QuoteIdentifier(conn_.database),
                                    QuoteIdentifier(kOwnTables)));
  if (created_ && others->empty())
    (void)admin_->Execute("DROP DATABASE " + QuoteIdentifier(conn_.database));
}

Status Harness::LoadStreams(const std::string& table, const OrderStreams& streams) {
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

Status Harness::RunPipeline(const RunSpec& po,
                            std::vector<std::unique_ptr<Projector>> projectors) {
  ReplaySummary sum = RunRebuild(po, std::move(projectors), stop_, PlanFor(po));
  if (!sum.status.ok()) return sum.status;
  if (sum.failures != 0)
    return Status::Internal(fmt::format("the pipeline recorded {} failures", sum.failures));
  return Status::Ok();
}

std::string Harness::ServerSettings() {
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

bool Harness::WriteReport(std::FILE* out, const Status& status) {
  StressContext ctx = ctx_;
  ctx.quick = o_.quick;
  ctx.repeat = o_.repeat;
  ctx.budget_ms = o_.budget_ms;
  ctx.server_settings = ServerSettings();
  return WriteStressReport(o_.out, results_, ctx, status, out);
}

void Harness::Progress(const std::string& what) const {
  fmt::print(stderr, "rewind stress: {}\n", what);
}

void Harness::Add(const std::string& q, const std::string& c, const std::string& m, double v,
                  const std::string& unit) {
  results_.Add(q, c, m, v, unit);
}

std::optional<double> Harness::Get(const std::string& q, const std::string& c,
                                   const std::string& m) const {
  return results_.Get(q, c, m);
}

void Harness::AddSpread(const std::string& q, const std::string& c, const std::string& metric,
                        std::vector<double> runs, const std::string& unit) {
  if (runs.empty()) return;
  for (size_t i = 0; i < runs.size(); ++i) {  // each repeat's own, in the order they ran
    Add(q, c, fmt::format("{}_run{}", metric, i + 1), runs[i], unit);
  }
  std::sort(runs.begin(), runs.end());
  Add(q, c, metric, Median(runs), unit);
  Add(q, c, metric + "_min", runs.front(), unit);
  Add(q, c, metric + "_max", runs.back(), unit);
}

void Harness::Problem(std::string what) {
  ctx_.consistent = false;
  ctx_.problems.push_back(std::move(what));
}

}  // namespace rw
