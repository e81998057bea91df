#include "stages/db/checkpoint_store.h"

#include <fmt/core.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <utility>

#include "stages/db/table_admin.h"

namespace rw {
namespace {

const char* const kCheckpointsDdl =
    "CREATE TABLE IF NOT EXISTS rewind_checkpoints ("
    "projector VARCHAR(64) NOT NULL, "
    "target_table VARCHAR(64) NOT NULL, "
    "live_table VARCHAR(64) NOT NULL, "
    "status VARCHAR(16) NOT NULL, "
    "run_id VARCHAR(64) NOT NULL, "
    "source VARCHAR(64) NOT NULL DEFAULT '', "
    "rewind_version VARCHAR(64) NOT NULL DEFAULT '', "
    "last_event_id DECIMAL(21,0) NOT NULL, "
    "gaps MEDIUMTEXT NOT NULL DEFAULT '', "
    "head_event_id DECIMAL(21,0) NOT NULL, "
    "events_applied BIGINT UNSIGNED NOT NULL DEFAULT 0, "
    "rows_written BIGINT UNSIGNED NOT NULL DEFAULT 0, "
    "late_events BIGINT UNSIGNED NOT NULL DEFAULT 0, "
    "failed_events BIGINT UNSIGNED NOT NULL DEFAULT 0, "
    "gaps_given_up BIGINT UNSIGNED NOT NULL DEFAULT 0, "
    "reconciled_events BIGINT UNSIGNED NOT NULL DEFAULT 0, "
    "missed_events BIGINT UNSIGNED NOT NULL DEFAULT 0, "
    "started_at DATETIME(6) NULL, updated_at DATETIME(6) NULL, "
    "finished_at DATETIME(6) NULL, seconds DOUBLE NULL, events_per_second DOUBLE NULL, "
    "PRIMARY KEY (projector, target_table)"
    ") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin";

const char* const kFailuresDdl =
    "CREATE TABLE IF NOT EXISTS rewind_failures ("
    "id BIGINT AUTO_INCREMENT PRIMARY KEY, run_id VARCHAR(64) NOT NULL, "
    "event_id DECIMAL(21,0) NOT NULL, stage VARCHAR(64) NOT NULL, reason TEXT NOT NULL, "
    "excerpt VARBINARY(255) NULL, "
    "recorded_at DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6), "
    "KEY (run_id), KEY (event_id)) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4";

const char* const kIngestDdl =
    "CREATE TABLE IF NOT EXISTS rewind_ingest_positions ("
    "source VARCHAR(512) NOT NULL PRIMARY KEY, "
    "device BIGINT UNSIGNED NOT NULL, inode BIGINT UNSIGNED NOT NULL, "
    "byte_offset BIGINT UNSIGNED NOT NULL, first_line_hash CHAR(64) NOT NULL, "
    "throttle MEDIUMTEXT NOT NULL, lines_read BIGINT UNSIGNED NOT NULL DEFAULT 0, "
    "events_stored BIGINT UNSIGNED NOT NULL DEFAULT 0, updated_at DATETIME(6) NOT NULL"
    ") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin";

const char* const kIngestFilesDdl =
    "CREATE TABLE IF NOT EXISTS rewind_ingest_files ("
    "id BIGINT UNSIGNED AUTO_INCREMENT PRIMARY KEY, first_line_hash CHAR(64) NOT NULL, "
    "head_bytes INT UNSIGNED NOT NULL DEFAULT 0, head_hash CHAR(64) NOT NULL DEFAULT '', "
    "byte_offset BIGINT UNSIGNED NOT NULL, lines_read BIGINT UNSIGNED NOT NULL DEFAULT 0, "
    "events_stored BIGINT UNSIGNED NOT NULL DEFAULT 0, throttle MEDIUMTEXT NOT NULL, "
    "source VARCHAR(512) NOT NULL, device BIGINT UNSIGNED NOT NULL, "
    "inode BIGINT UNSIGNED NOT NULL, created_at DATETIME(6) NOT NULL, "
    "updated_at DATETIME(6) NOT NULL, KEY (first_line_hash)"
    ") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin";

// Layout 7: each saved position of a file with a first line becomes a known file (its head
// not known: the server cannot read the file). NOT EXISTS: a migration that stopped half-way
// and runs again adds none twice.
const char* const kSeedIngestFiles =
    "INSERT INTO rewind_ingest_files (first_line_hash, head_bytes, head_hash, byte_offset, "
    "lines_read, events_stored, throttle, source, device, inode, created_at, updated_at) "
    "SELECT p.first_line_hash, 0, '', p.byte_offset, p.lines_read, p.events_stored, p.throttle, "
    "p.source, p.device, p.inode, NOW(6), NOW(6) FROM rewind_ingest_positions p WHERE "
    "p.byte_offset > 0 AND p.first_line_hash <> '' AND NOT EXISTS (SELECT 1 FROM "
    "rewind_ingest_files f WHERE f.first_line_hash = p.first_line_hash AND f.source = p.source)";

const char* const kOwnedDdl =
    "CREATE TABLE IF NOT EXISTS rewind_tables ("
    "table_name VARCHAR(64) NOT NULL PRIMARY KEY, live_table VARCHAR(64) NOT NULL, "
    "kind VARCHAR(16) NOT NULL, created_at DATETIME(6) NOT NULL"
    ") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin";

const char* const kRunsDdl =
    "CREATE TABLE IF NOT EXISTS rewind_runs ("
    "id BIGINT UNSIGNED AUTO_INCREMENT PRIMARY KEY, run_id VARCHAR(64) NOT NULL, "
    "command VARCHAR(32) NOT NULL, host VARCHAR(255) NOT NULL, pid BIGINT UNSIGNED NOT NULL, "
    "db_user VARCHAR(128) NOT NULL, lock_connection BIGINT UNSIGNED NOT NULL, "
    "connections TEXT NOT NULL, server_started_at DATETIME(6) NOT NULL, "
    "started_at DATETIME(6) NOT NULL, beat_at DATETIME(6) NOT NULL, "
    "beats BIGINT UNSIGNED NOT NULL DEFAULT 0, KEY (lock_connection)"
    ") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin";

const char* const kReplicaMarkersDdl =
    "CREATE TABLE IF NOT EXISTS rewind_replica_markers ("
    "token VARCHAR(64) NOT NULL PRIMARY KEY, run_id VARCHAR(64) NOT NULL, "
    "written_at DATETIME(6) NOT NULL"
    ") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin";

// When the server started, by its clock (to within a second): connection ids are numbered
// afresh by each lifetime of the server, so an id means something only with it.
const char* const kServerStarted =
    "(NOW(6) - INTERVAL (SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS WHERE "
    "VARIABLE_NAME = 'UPTIME') SECOND)";
// A row of this lifetime of the server (the uptime is whole seconds: a margin of two).
const char* const kThisLifetime = "ABS(TIMESTAMPDIFF(SECOND, server_started_at, {})) <= 2";

// The build targets older rewinds' checkpoint rows name, that exist: the tables an older
// rewind made and kept no other record of (layouts 1 and 2). `{}` is the target column.
const char* const kOlderBuildTargets =
    "FROM rewind_checkpoints k JOIN information_schema.TABLES t ON t.TABLE_SCHEMA = DATABASE() "
    "AND BINARY t.TABLE_NAME = BINARY k.{0} WHERE k.{0} IS NOT NULL AND k.{0} <> k.live_table";

// Version 1 (rewind before the schema table): checkpoints keyed by projector alone, with a
// building_table column and BIGINT ids; failures with BIGINT event ids and no excerpt.
const char* const kMigrateFrom1[] = {
    "ALTER TABLE rewind_checkpoints ADD COLUMN target_table VARCHAR(64) NOT NULL DEFAULT '' "
    "AFTER projector",
    "UPDATE rewind_checkpoints SET target_table = IF(status = 'building' AND building_table IS "
    "NOT NULL, building_table, live_table)",
    "ALTER TABLE rewind_checkpoints DROP PRIMARY KEY, ADD PRIMARY KEY (projector, target_table), "
    "DROP COLUMN building_table, "
    "ADD COLUMN source VARCHAR(64) NOT NULL DEFAULT '' AFTER run_id, "
    "MODIFY last_event_id DECIMAL(21,0) NOT NULL, "
    "ADD COLUMN gaps MEDIUMTEXT NOT NULL DEFAULT '' AFTER last_event_id, "
    "MODIFY head_event_id DECIMAL(21,0) NOT NULL, "
    "ADD COLUMN late_events BIGINT UNSIGNED NOT NULL DEFAULT 0 AFTER rows_written, "
    "ADD COLUMN failed_events BIGINT UNSIGNED NOT NULL DEFAULT 0 AFTER late_events, "
    "ADD COLUMN gaps_given_up BIGINT UNSIGNED NOT NULL DEFAULT 0 AFTER failed_events, "
    "CONVERT TO CHARACTER SET utf8mb4 COLLATE utf8mb4_bin",
    // Verify rows were keyed "name@verify"; the key now has the table.
    "UPDATE rewind_checkpoints SET projector = SUBSTRING_INDEX(projector, '@', 1)",
    "ALTER TABLE rewind_failures MODIFY event_id DECIMAL(21,0) NOT NULL, "
    "ADD COLUMN excerpt VARBINARY(255) NULL AFTER reason",
};

// Layout 5: the version of rewind that started each checkpoint's build ('' before it).
// IF NOT EXISTS: a layout created afresh already has it (kCheckpointsDdl).
const char* const kAddRewindVersion =
    "ALTER TABLE rewind_checkpoints ADD COLUMN IF NOT EXISTS rewind_version VARCHAR(64) NOT NULL "
    "DEFAULT '' AFTER source";

// Layout 8: what a follow's reconciliation found (IF NOT EXISTS: a fresh layout has them).
const char* const kAddReconciliation =
    "ALTER TABLE rewind_checkpoints "
    "ADD COLUMN IF NOT EXISTS reconciled_events BIGINT UNSIGNED NOT NULL DEFAULT 0 AFTER gaps_given_up, "
    "ADD COLUMN IF NOT EXISTS missed_events BIGINT UNSIGNED NOT NULL DEFAULT 0 AFTER reconciled_events";

std::string Hex(std::string_view bytes) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out = "X'";
  for (unsigned char b : bytes) {
    out += kHex[b >> 4];
    out += kHex[b & 15];
  }
  return out + "'";
}

EventId IdOr(const std::optional<std::string>& v, EventId fallback) {
  if (!v) return fallback;
  return ParseEventId(*v).value_or(fallback);
}

Checkpoint FromRow(const std::vector<std::optional<std::string>>& r) {
  Checkpoint cp;
  cp.projector = r[0].value_or("");
  cp.target_table = r[1].value_or("");
  cp.live_table = r[2].value_or("");
  cp.status = ParseCheckpointStatus(r[3].value_or(""));
  cp.run_id = r[4].value_or("");
  cp.source = r[5].value_or("");
  cp.last_event_id = IdOr(r[6], kBeforeFirstId);
  cp.gaps = GapSet::Parse(r[7].value_or("")).value_or(GapSet());
  cp.head_event_id = IdOr(r[8], kBeforeFirstId);
  cp.events_applied = r[9] ? std::stoull(*r[9]) : 0;
  cp.failed_events = r[10] ? std::stoull(*r[10]) : 0;
  return cp;
}

const char* const kCheckpointColumns =
    "projector, target_table, live_table, status, run_id, source, last_event_id, gaps, "
    "head_event_id, events_applied, failed_events";

}  // namespace

std::string ValidUtf8(std::string_view s, size_t max_bytes) {
  std::string out;
  out.reserve(std::min(s.size(), max_bytes) + 4);
  size_t i = 0;
  while (i < s.size()) {
    const auto b = static_cast<unsigned char>(s[i]);
    size_t len = b < 0x80 ? 1 : (b >> 5) == 6 ? 2 : (b >> 4) == 14 ? 3 : (b >> 3) == 30 ? 4 : 0;
    bool ok = len > 0 && i + len <= s.size();
    for (size_t k = 1; ok && k < len; ++k) ok = (static_cast<unsigned char>(s[i + k]) >> 6) == 2;
    if (ok && len == 2) ok = b >= 0xC2;
    if (ok && len == 3) {
      const auto b1 = static_cast<unsigned char>(s[i + 1]);
      ok = !(b == 0xE0 && b1 < 0xA0) && !(b == 0xED && b1 >= 0xA0);  // overlong, surrogates
    }
    if (ok && len == 4) {
      const auto b1 = static_cast<unsigned char>(s[i + 1]);
      ok = b <= 0xF4 && !(b == 0xF0 && b1 < 0x90) && !(b == 0xF4 && b1 >= 0x90);
    }
    const std::string_view piece = ok ? s.substr(i, len) : std::string_view("\xEF\xBF\xBD");
    if (out.size() + piece.size() > max_bytes) {
      out += "...";
      return out;
    }
    out += piece;
    i += ok ? len : 1;
  }
  return out;
}

bool IsBookkeepingTable(std::string_view table) {
  // Case-blind: a server with lower_case_table_names folds names.
  auto lower = [](char ch) { return static_cast<char>(std::tolower(static_cast<unsigned char>(ch))); };
  for (std::string_view own : kBookkeepingTables) {
    if (std::equal(table.begin(), table.end(), own.begin(), own.end(),
                   [&](char a, char b) { return lower(a) == lower(b); })) {
      return true;
    }
  }
  return false;
}

namespace {
// The one spelling of each status in the status column.
constexpr std::pair<CheckpointStatus, std::string_view> kStatusTexts[] = {
    {CheckpointStatus::kBuilding, "building"},
    {CheckpointStatus::kBuilt, "built"},
    {CheckpointStatus::kLive, "live"},
    {CheckpointStatus::kFollowing, "following"},
};
}  // namespace

std::string_view CheckpointStatusText(CheckpointStatus status) {
  for (const auto& [s, text] : kStatusTexts) {
    if (s == status) return text;
  }
  return "";
}

std::optional<CheckpointStatus> ParseCheckpointStatus(std::string_view text) {
  for (const auto& [s, t] : kStatusTexts) {
    if (t == text) return s;
  }
  return std::nullopt;
}

namespace checkpoint_store {

Result<int> Version(Connection& c) {
  Result<bool> schema = table_admin::Exists(c, kSchemaTable);
  if (!schema.ok()) return schema.status();
  if (*schema) {
    Result<std::optional<std::string>> v =
        c.QueryValue("SELECT version FROM rewind_schema WHERE id = 1");
    if (!v.ok()) return v.status();
    return *v ? std::stoi(**v) : 0;
  }
  // No schema table: layout 1 (it had a building_table column), or a creation that stopped
  // half-way (created again, the tables being IF NOT EXISTS).
  Result<std::optional<std::string>> old = c.QueryValue(
      "SELECT COUNT(*) FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND "
      "TABLE_NAME = 'rewind_checkpoints' AND COLUMN_NAME = 'building_table'");
  if (!old.ok()) return old.status();
  return *old && **old != "0" ? 1 : 0;
}

Status Ensure(Connection& c) {
  Result<int> version = Version(c);
  if (!version.ok()) return version.status();
  if (*version == kSchemaVersion) return Status::Ok();
  if (*version > kSchemaVersion) {
    return Status::InvalidInput(fmt::format(
        "rewind's bookkeeping tables in this database have layout version {}, made by a newer "
        "rewind; this one knows up to {}: use the newer rewind",
        *version, kSchemaVersion));
  }
  // One rewind migrates at a time: the others wait here, then find the work done.
  const std::string lock =
      c.Quote(fmt::format("rewind-schema:{}", c.options().database).substr(0, 64));
  Result<std::optional<std::string>> got = c.QueryValue(fmt::format("SELECT GET_LOCK({}, 60)", lock));
  if (!got.ok()) return got.status();
  if (!*got || **got != "1") {
    return Status::Error(Status::Code::kBusy, "another rewind is migrating the bookkeeping tables");
  }
  auto release = [&] { (void)c.Execute(fmt::format("DO RELEASE_LOCK({})", lock)); };
  Status s;
  version = Version(c);
  if (!version.ok()) {
    release();
    return version.status();
  }
  if (*version == 1) {
    for (const char* sql : kMigrateFrom1) {
      if (s = c.Execute(sql); !s.ok()) break;
    }
    if (!s.ok()) s = s.With("migrating rewind's bookkeeping tables from layout 1");
  }
  if (s.ok() && *version < kSchemaVersion) {
    for (const char* sql :
         {kCheckpointsDdl, kFailuresDdl, kIngestDdl, kOwnedDdl, kRunsDdl, kReplicaMarkersDdl,
          kIngestFilesDdl,
          "CREATE TABLE IF NOT EXISTS rewind_schema (id TINYINT NOT NULL PRIMARY KEY, "
          "version INT NOT NULL, migrated_at DATETIME(6) NOT NULL) ENGINE=InnoDB"}) {
      if (s = c.Execute(sql); !s.ok()) break;
    }
    if (s.ok() && *version < 3) {  // layouts 1 and 2 kept no record of the tables they made
      s = c.Execute(fmt::format("INSERT IGNORE INTO rewind_tables (table_name, live_table, kind, "
                                "created_at) SELECT k.target_table, k.live_table, 'older rewind', "
                                "NOW(6) {}",
                                fmt::format(fmt::runtime(kOlderBuildTargets), "target_table")));
      if (!s.ok()) s = s.With("recording the tables older rewinds built");
    }
    if (s.ok() && *version < 5) {  // layouts 1 to 4 did not record the rewind that built a row
      s = c.Execute(kAddRewindVersion);
      if (!s.ok()) s = s.With("adding the rewind version to the checkpoints");
    }
    if (s.ok() && *version < 7) {  // layouts 1 to 6 knew a file by its path only
      s = c.Execute(kSeedIngestFiles);
      if (!s.ok()) s = s.With("recording the ingested files of the saved positions");
    }
    if (s.ok() && *version < 8) {  // layouts 1 to 7 had no reconciliation
      s = c.Execute(kAddReconciliation);
      if (!s.ok()) s = s.With("adding the reconciliation's counts to the checkpoints");
    }
    if (s.ok()) {
      s = c.Execute(fmt::format("REPLACE INTO rewind_schema VALUES (1, {}, NOW(6))", kSchemaVersion));
    }
  }
  release();
  return s;
}

Result<std::optional<Checkpoint>> Load(Connection& c, const std::string& projector,
                                       const std::string& target) {
  Result<Rows> r = c.Query(fmt::format("SELECT {} FROM rewind_checkpoints WHERE projector = {} "
                                       "AND target_table = {}",
                                       kCheckpointColumns, c.Quote(projector), c.Quote(target)));
  if (!r.ok()) return r.status();
  if (r->rows.empty()) return std::optional<Checkpoint>();
  return std::optional<Checkpoint>(FromRow(r->rows[0]));
}

Status Start(Connection& c, const Checkpoint& cp) {
  return c.Execute(fmt::format(
      "REPLACE INTO rewind_checkpoints (projector, target_table, live_table, status, run_id, "
      "source, rewind_version, last_event_id, gaps, head_event_id, started_at, updated_at) "
      "VALUES ({}, {}, {}, {}, {}, {}, {}, {}, {}, {}, NOW(6), NOW(6))",
      c.Quote(cp.projector), c.Quote(cp.target_table), c.Quote(cp.live_table),
      c.Quote(CheckpointStatusText(cp.status.value())), c.Quote(cp.run_id), c.Quote(cp.source),
      c.Quote(ValidUtf8(cp.rewind_version, 64)), IdText(cp.last_event_id), c.Quote(cp.gaps.Text()),
      IdText(cp.head_event_id)));
}

Status SetHead(Connection& c, const std::string& projector, const std::string& target, EventId head) {
  return c.Execute(fmt::format("UPDATE rewind_checkpoints SET head_event_id = {}, updated_at = "
                               "NOW(6) WHERE projector = {} AND target_table = {}",
                               IdText(head), c.Quote(projector), c.Quote(target)));
}

std::string AdvanceSql(Connection& c, const std::string& projector, const std::string& target,
                       EventId last_id, const GapSet& gaps, uint64_t events, uint64_t rows,
                       uint64_t late, uint64_t failed, uint64_t reconciled, uint64_t missed) {
  return fmt::format(
      "UPDATE rewind_checkpoints SET last_event_id = {}, gaps = {}, events_applied = "
      "events_applied + {}, rows_written = rows_written + {}, late_events = late_events + {}, "
      "failed_events = failed_events + {}, reconciled_events = reconciled_events + {}, "
      "missed_events = missed_events + {}, updated_at = NOW(6) WHERE projector = {} AND "
      "target_table = {}",
      IdText(last_id), c.Quote(gaps.Text()), events, rows, late, failed, reconciled, missed,
      c.Quote(projector), c.Quote(target));
}

Status BecomeLive(Connection& c, const std::string& projector, const std::string& built,
                  const std::string& live, CheckpointStatus status, double seconds,
                  double rate, uint64_t given_up) {
  if (Status s = c.Execute(fmt::format(
          "DELETE FROM rewind_checkpoints WHERE projector = {} AND target_table = {}",
          c.Quote(projector), c.Quote(live)));
      !s.ok())
    return s;
  return c.Execute(fmt::format(
      "UPDATE rewind_checkpoints SET target_table = {}, status = {}, finished_at = NOW(6), "
      "seconds = {}, events_per_second = {}, gaps_given_up = gaps_given_up + {} WHERE "
      "projector = {} AND target_table = {}",
      c.Quote(live), c.Quote(CheckpointStatusText(status)), seconds, rate, given_up, c.Quote(projector), c.Quote(built)));
}

Status SetStatus(Connection& c, const std::string& projector, const std::string& target,
                 CheckpointStatus status, uint64_t given_up) {
  return c.Execute(fmt::format(
      "UPDATE rewind_checkpoints SET status = {}, gaps_given_up = gaps_given_up + {}, "
      "updated_at = NOW(6) WHERE projector = {} AND target_table = {}",
      c.Quote(CheckpointStatusText(status)), given_up, c.Quote(projector), c.Quote(target)));
}

Status Delete(Connection& c, const std::string& projector, const std::string& target) {
  return c.Execute(fmt::format(
      "DELETE FROM rewind_checkpoints WHERE projector = {} AND target_table = {}",
      c.Quote(projector), c.Quote(target)));
}

Result<std::vector<Checkpoint>> WithTargetSuffix(Connection& c, const std::string& suffix) {
  Result<Rows> r = c.Query(fmt::format(
      "SELECT {} FROM rewind_checkpoints WHERE RIGHT(target_table, {}) = {}", kCheckpointColumns,
      suffix.size(), c.Quote(suffix)));
  if (!r.ok()) return r.status();
  std::vector<Checkpoint> out;
  for (const auto& row : r->rows) out.push_back(FromRow(row));
  return out;
}

Status RecordTable(Connection& c, const std::string& table, const std::string& live_table,
                   const std::string& kind) {
  return c.Execute(fmt::format(
      "INSERT INTO rewind_tables (table_name, live_table, kind, created_at) VALUES ({}, {}, {}, "
      "NOW(6)) ON DUPLICATE KEY UPDATE live_table = VALUES(live_table), kind = VALUES(kind), "
      "created_at = VALUES(created_at)",
      c.Quote(table), c.Quote(live_table), c.Quote(kind)));
}

Status ForgetTable(Connection& c, const std::string& table) {
  return c.Execute(fmt::format("DELETE FROM rewind_tables WHERE table_name = {}", c.Quote(table)));
}

Result<bool> Recorded(Connection& c, const std::string& table) {
  Result<int> version = Version(c);
  if (!version.ok()) return version.status();
  std::string sql;
  if (*version >= 3) {
    sql = fmt::format("SELECT COUNT(*) FROM rewind_tables WHERE table_name = {}", c.Quote(table));
  } else if (*version >= 1) {  // what the migration will record
    const char* column = *version == 1 ? "building_table" : "target_table";
    sql = fmt::format("SELECT COUNT(*) {} AND k.{} = {}", fmt::format(fmt::runtime(kOlderBuildTargets), column),
                      column, c.Quote(table));
  } else {
    return false;  // no bookkeeping: rewind made nothing here
  }
  Result<std::optional<std::string>> n = c.QueryValue(sql);
  if (!n.ok()) return n.status();
  return *n && **n != "0";
}

Result<std::optional<std::string>> RecordedKind(Connection& c, const std::string& table) {
  Result<int> version = Version(c);
  if (!version.ok()) return version.status();
  if (*version < 3) return std::optional<std::string>();  // no records of kinds yet
  return c.QueryValue(
      fmt::format("SELECT kind FROM rewind_tables WHERE table_name = {}", c.Quote(table)));
}

Result<uint64_t> StartRun(Connection& c, const RunRecord& run) {
  const std::string this_lifetime = fmt::format(fmt::runtime(kThisLifetime), kServerStarted);
  // Rows whose connections are certainly gone: of an earlier lifetime of the server, or of
  // this user's runs (the process list shows them all) that stopped beating a minute ago.
  if (Status s = c.Execute(fmt::format("DELETE FROM rewind_runs WHERE NOT {}", this_lifetime)); !s.ok()) {
    return s;
  }
  if (Status s = c.Execute(
          "DELETE FROM rewind_runs WHERE db_user = SUBSTRING_INDEX(USER(), '@', 1) AND beat_at < "
          "NOW(6) - INTERVAL 60 SECOND AND lock_connection NOT IN (SELECT ID FROM "
          "information_schema.PROCESSLIST)");
      !s.ok()) {
    return s;
  }
  if (Status s = c.Execute(fmt::format(
          "INSERT INTO rewind_runs (run_id, command, host, pid, db_user, lock_connection, "
          "connections, server_started_at, started_at, beat_at, beats) VALUES ({}, {}, {}, {}, "
          "SUBSTRING_INDEX(USER(), '@', 1), {}, {}, {}, NOW(6), NOW(6), 0)",
          c.Quote(run.run_id), c.Quote(run.command), c.Quote(ValidUtf8(run.host, 255)), run.pid,
          run.lock_connection, c.Quote(run.connections), kServerStarted));
      !s.ok()) {
    return s;
  }
  Result<std::optional<std::string>> id = c.QueryValue("SELECT LAST_INSERT_ID()");
  if (!id.ok()) return id.status();
  return *id ? std::stoull(**id) : 0;
}

Status Beat(Connection& c, uint64_t id, unsigned long lock_connection, const std::string& connections) {
  return c.Execute(fmt::format(
      "UPDATE rewind_runs SET beat_at = NOW(6), beats = beats + 1, lock_connection = {}, "
      "connections = {}, server_started_at = {} WHERE id = {}",
      lock_connection, c.Quote(connections), kServerStarted, id));
}

Status EndRun(Connection& c, uint64_t id) {
  return c.Execute(fmt::format("DELETE FROM rewind_runs WHERE id = {}", id));
}

Result<std::optional<RunRecord>> RunHoldingLocks(Connection& c, unsigned long connection) {
  Result<Rows> r = c.Query(fmt::format(
      "SELECT id, run_id, command, host, pid, lock_connection, connections, beats, "
      "TIMESTAMPDIFF(MICROSECOND, beat_at, NOW(6)) FROM rewind_runs WHERE lock_connection = {} "
      "AND {} ORDER BY beat_at DESC LIMIT 1",
      connection, fmt::format(fmt::runtime(kThisLifetime), kServerStarted)));
  if (!r.ok()) return r.status();
  if (r->rows.empty()) return std::optional<RunRecord>();
  const auto& row = r->rows[0];
  auto number = [&](size_t i) { return std::stoull(row[i].value_or("0")); };
  RunRecord run;
  run.id = number(0);
  run.run_id = row[1].value_or("");
  run.command = row[2].value_or("");
  run.host = row[3].value_or("");
  run.pid = number(4);
  run.lock_connection = number(5);
  run.connections = row[6].value_or("");
  run.beats = number(7);
  run.beat_age_seconds = std::stod(row[8].value_or("0")) / 1e6;
  return std::optional<RunRecord>(run);
}

std::string InsertFailuresSql(Connection& c, const std::string& run_id,
                              const std::vector<Failure>& failures) {
  if (failures.empty()) return "";
  constexpr size_t kReasonBytes = 2000, kExcerptBytes = 255;
  std::string sql = "INSERT INTO rewind_failures (run_id, event_id, stage, reason, excerpt) VALUES ";
  for (size_t i = 0; i < failures.size(); ++i) {
    const Failure& f = failures[i];
    sql += i ? ",(" : "(";
    c.AppendQuoted(sql, run_id);
    sql += fmt::format(",{},", IdText(f.event_id));
    c.AppendQuoted(sql, ValidUtf8(f.stage, 64));
    sql += ',';
    c.AppendQuoted(sql, ValidUtf8(f.reason, kReasonBytes));
    sql += ',';
    sql += f.excerpt.empty() ? std::string("NULL")
                             : Hex(std::string_view(f.excerpt).substr(0, kExcerptBytes));
    sql += ')';
  }
  return sql;
}

Status WriteReplicaMarker(Connection& c, const std::string& token, const std::string& run_id) {
  if (Status s = c.Execute(
          "DELETE FROM rewind_replica_markers WHERE written_at < NOW(6) - INTERVAL 1 HOUR");
      !s.ok()) {
    return s;
  }
  return c.Execute(fmt::format(
      "INSERT INTO rewind_replica_markers (token, run_id, written_at) VALUES ({}, {}, NOW(6))",
      c.Quote(token), c.Quote(run_id)));
}

Result<bool> ReplicaMarkerSeen(Connection& c, const std::string& token) {
  Result<std::optional<std::string>> v = c.QueryValue(
      fmt::format("SELECT 1 FROM rewind_replica_markers WHERE token = {}", c.Quote(token)));
  if (!v.ok()) {
    if (v.status().code() == Status::Code::kNotFound)
      return false;  // the table has not arrived yet
    return v.status();
  }
  return v->has_value();
}

Status DeleteReplicaMarker(Connection& c, const std::string& token) {
  return c.Execute(
      fmt::format("DELETE FROM rewind_replica_markers WHERE token = {}", c.Quote(token)));
}

Result<uint64_t> CountFailures(Connection& c, const std::string& run_id) {
  Result<std::optional<std::string>> n = c.QueryValue(
      fmt::format("SELECT COUNT(*) FROM rewind_failures WHERE run_id = {}", c.Quote(run_id)));
  if (!n.ok()) return n.status();
  return *n ? std::stoull(**n) : 0;
}

Status DeleteFailuresAfter(Connection& c, const std::string& run_id, EventId after) {
  // Only the decoder's (written as batches arrive); a read model's own failures commit with
  // its checkpoint, so none lies beyond it.
  return c.Execute(fmt::format("DELETE FROM rewind_failures WHERE run_id = {} AND event_id > {} AND stage = 'decoder'",
                               c.Quote(run_id), IdText(after)));
}

Result<std::optional<IngestPosition>> LoadIngestPosition(Connection& c, const std::string& source,
                                                         bool for_update) {
  Result<Rows> r =
      c.Query(fmt::format("SELECT device, inode, byte_offset, first_line_hash, throttle, "
                          "lines_read, events_stored FROM "
                          "rewind_ingest_positions WHERE source = {}{}",
                          c.Quote(source), for_update ? " FOR UPDATE" : ""));
  if (!r.ok()) return r.status();
  if (r->rows.empty()) return std::optional<IngestPosition>();
  const auto& row = r->rows[0];
  IngestPosition p;
  p.source = source;
  p.device = std::stoull(row[0].value_or("0"));
  p.inode = std::stoull(row[1].value_or("0"));
  p.offset = std::stoull(row[2].value_or("0"));
  p.first_line_hash = row[3].value_or("");
  p.throttle = row[4].value_or("");
  p.lines_read = std::stoull(row[5].value_or("0"));
  p.events_stored = std::stoull(row[6].value_or("0"));
  return std::optional<IngestPosition>(p);
}

namespace {
// `verb` (REPLACE, INSERT IGNORE) of one position row.
std::string WriteIngestPositionSql(Connection& c, const char* verb, const IngestPosition& p) {
  return fmt::format(
      "{} INTO rewind_ingest_positions (source, device, inode, byte_offset, first_line_hash, "
      "throttle, lines_read, events_stored, updated_at) VALUES ({}, {}, {}, {}, {}, {}, {}, {}, "
      "NOW(6))",
      verb, c.Quote(p.source), p.device, p.inode, p.offset, c.Quote(p.first_line_hash),
      c.Quote(p.throttle), p.lines_read, p.events_stored);
}
}  // namespace

std::string SaveIngestPositionSql(Connection& c, const IngestPosition& p) {
  return WriteIngestPositionSql(c, "REPLACE", p);
}

Status CreateIngestPosition(Connection& c, const IngestPosition& p) {
  return c.Execute(WriteIngestPositionSql(c, "INSERT IGNORE", p));
}

bool SameIngestPosition(const IngestPosition& a, const IngestPosition& b) {
  return a.source == b.source && a.device == b.device && a.inode == b.inode &&
         a.offset == b.offset && a.first_line_hash == b.first_line_hash &&
         a.lines_read == b.lines_read && a.events_stored == b.events_stored;
}

namespace {
const char* const kIngestFileColumns =
    "id, first_line_hash, head_bytes, head_hash, byte_offset, lines_read, events_stored, "
    "throttle, source, device, inode";

IngestFile IngestFileFromRow(const std::vector<std::optional<std::string>>& row) {
  auto number = [&](size_t i) { return std::stoull(row[i].value_or("0")); };
  IngestFile f;
  f.id = number(0);
  f.first_line_hash = row[1].value_or("");
  f.head_bytes = number(2);
  f.head_hash = row[3].value_or("");
  f.offset = number(4);
  f.lines_read = number(5);
  f.events_stored = number(6);
  f.throttle = row[7].value_or("");
  f.source = row[8].value_or("");
  f.device = number(9);
  f.inode = number(10);
  return f;
}
}  // namespace

Result<std::vector<IngestFile>> FindIngestFiles(Connection& c, const std::string& first_line_hash) {
  Result<Rows> r = c.Query(
      fmt::format("SELECT {} FROM rewind_ingest_files WHERE first_line_hash = {} ORDER BY id",
                  kIngestFileColumns, c.Quote(first_line_hash)));
  if (!r.ok()) return r.status();
  std::vector<IngestFile> out;
  for (const auto& row : r->rows) out.push_back(IngestFileFromRow(row));
  return out;
}

Result<std::optional<IngestFile>> LoadIngestFile(Connection& c, uint64_t id, bool for_update) {
  Result<Rows> r = c.Query(fmt::format("SELECT {} FROM rewind_ingest_files WHERE id = {}{}",
                                       kIngestFileColumns, id, for_update ? " FOR UPDATE" : ""));
  if (!r.ok()) return r.status();
  if (r->rows.empty()) return std::optional<IngestFile>();
  return std::optional<IngestFile>(IngestFileFromRow(r->rows[0]));
}

Result<uint64_t> CreateIngestFile(Connection& c, const IngestFile& f) {
  if (Status s = c.Execute(fmt::format(
          "INSERT INTO rewind_ingest_files (first_line_hash, head_bytes, head_hash, byte_offset, "
          "lines_read, events_stored, throttle, source, device, inode, created_at, updated_at) "
          "VALUES ({}, {}, {}, {}, {}, {}, {}, {}, {}, {}, NOW(6), NOW(6))",
          c.Quote(f.first_line_hash), f.head_bytes, c.Quote(f.head_hash), f.offset, f.lines_read,
          f.events_stored, c.Quote(f.throttle), c.Quote(f.source), f.device, f.inode));
      !s.ok()) {
    return s;
  }
  Result<std::optional<std::string>> id = c.QueryValue("SELECT LAST_INSERT_ID()");
  if (!id.ok()) return id.status();
  return *id ? std::stoull(**id) : 0;
}

std::string SaveIngestFileSql(Connection& c, const IngestFile& f) {
  return fmt::format(
      "UPDATE rewind_ingest_files SET head_bytes = {}, head_hash = {}, byte_offset = {}, "
      "lines_read = {}, events_stored = {}, throttle = {}, source = {}, device = {}, inode = {}, "
      "updated_at = NOW(6) WHERE id = {}",
      f.head_bytes, c.Quote(f.head_hash), f.offset, f.lines_read, f.events_stored,
      c.Quote(f.throttle), c.Quote(f.source), f.device, f.inode, f.id);
}

bool SameIngestFile(const IngestFile& a, const IngestFile& b) {
  return a.id == b.id && a.offset == b.offset && a.lines_read == b.lines_read &&
         a.events_stored == b.events_stored;
}

Result<std::vector<StatusRow>> StatusRows(Connection& c, EventId head, int layout) {
  const std::string head_text = head == kBeforeFirstId ? "NULL" : IdText(head);
  // Layouts before 5 have no rewind_version column: read as NULL (status changes nothing).
  Result<Rows> r = c.Query(fmt::format(
      "SELECT k.projector, k.target_table, k.live_table, k.status, "
      "IF(k.last_event_id < -9223372036854775808, NULL, k.last_event_id), "
      "GREATEST(0, {head} - k.last_event_id), "
      "(SELECT COUNT(*) FROM rewind_failures f WHERE f.run_id = k.run_id AND f.stage IN "
      "('decoder', "
      "k.projector)), k.run_id, "
      "COALESCE(k.finished_at, k.updated_at), ROUND(k.seconds, 2), ROUND(k.events_per_second), "
      "k.late_events, k.gaps_given_up, IF(k.gaps = '', 0, 1 + LENGTH(k.gaps) - "
      "LENGTH(REPLACE(k.gaps, ',', ''))), k.source, k.events_applied, {version}, {reconciled} "
      "FROM rewind_checkpoints k ORDER BY k.projector, k.target_table",
      fmt::arg("head", head_text),
      fmt::arg("version", layout >= 5 ? "NULLIF(k.rewind_version, '')" : "NULL"),
      fmt::arg("reconciled", layout >= 8 ? "k.reconciled_events, k.missed_events" : "0, 0")));
  if (!r.ok()) return r.status();
  // The columns above, named for messages.
  static constexpr const char* kColumns[] = {
      "projector",      "target_table",  "live_table",    "status",      "last_event_id",
      "behind",         "failures",      "run_id",        "last run at", "seconds",
      "events/s",       "late_events",   "gaps_given_up", "gaps",        "source",
      "events_applied", "rewind_version", "reconciled_events", "missed_events"};
  std::vector<StatusRow> out;
  out.reserve(r->rows.size());
  for (const auto& row : r->rows) {
    std::string bad;  // the first column whose text is not what its type says
    auto text = [&](size_t i) { return row[i].value_or(""); };
    auto id = [&](size_t i) -> std::optional<EventId> {
      if (!row[i]) return std::nullopt;
      std::optional<EventId> v = ParseEventId(*row[i]);
      if (!v && bad.empty()) bad = std::string(kColumns[i]) + " = " + *row[i];
      return v;
    };
    auto count = [&](size_t i) -> uint64_t {
      uint64_t v = 0;
      const std::string s = text(i);
      const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
      if ((ec != std::errc() || end != s.data() + s.size()) && bad.empty())
        bad = std::string(kColumns[i]) + " = " + s;
      return v;
    };
    auto real = [&](size_t i) -> std::optional<double> {
      if (!row[i]) return std::nullopt;
      double v = 0;
      const std::string& s = *row[i];
      const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
      if ((ec != std::errc() || end != s.data() + s.size()) && bad.empty())
        bad = std::string(kColumns[i]) + " = " + s;
      return v;
    };
    StatusRow checkpoint{.projector = text(0),
                         .table = text(1),
                         .live_table = text(2),
                         .status = text(3),
                         .checkpoint = id(4),
                         .behind = id(5),
                         .failures = count(6),
                         .run_id = text(7),
                         .last_run_at = row[8],
                         .seconds = real(9),
                         .events_per_second = real(10),
                         .late_events = count(11),
                         .gaps_given_up = count(12),
                         .gaps_watched = count(13),
                         .reconciled_events = count(17),
                         .missed_events = count(18),
                         .source = text(14),
                         .events_applied = count(15),
                         .rewind_version = row[16]};
    if (!bad.empty()) {
      return Status::Internal(
          fmt::format("{} holds a value status cannot read: {}", kCheckpointTable, bad));
    }
    out.push_back(std::move(checkpoint));
  }
  return out;
}

}  // namespace checkpoint_store
}  // namespace rw
