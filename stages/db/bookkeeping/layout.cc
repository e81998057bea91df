// The bookkeeping tables' layout: their DDL, Version, Ensure and the migrations from older layouts.
#include "stages/db/checkpoint_store.h"

#include <fmt/core.h>

#include <algorithm>
#include <cctype>

#include "stages/db/bookkeeping/older_targets.h"
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
    "last_event_id DECIMAL(39,0) NOT NULL, "
    "gaps MEDIUMTEXT NOT NULL DEFAULT '', "
    "head_event_id DECIMAL(39,0) NOT NULL, "
    "events_applied BIGINT UNSIGNED NOT NULL DEFAULT 0, "
    "rows_written BIGINT UNSIGNED NOT NULL DEFAULT 0, "
    "late_events BIGINT UNSIGNED NOT NULL DEFAULT 0, "
    "failed_events BIGINT UNSIGNED NOT NULL DEFAULT 0, "
    "gaps_given_up BIGINT UNSIGNED NOT NULL DEFAULT 0, "
    "reconciled_events BIGINT UNSIGNED NOT NULL DEFAULT 0, "
    "missed_events BIGINT UNSIGNED NOT NULL DEFAULT 0, "
    "read_mark VARCHAR(64) NOT NULL DEFAULT '', "
    "follow_source VARCHAR(16) NOT NULL DEFAULT '', "
    "edited_events BIGINT UNSIGNED NOT NULL DEFAULT 0, "
    "started_at DATETIME(6) NULL, updated_at DATETIME(6) NULL, "
    "finished_at DATETIME(6) NULL, seconds DOUBLE NULL, events_per_second DOUBLE NULL, "
    "PRIMARY KEY (projector, target_table)"
    ") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin";

const char* const kFailuresDdl =
    "CREATE TABLE IF NOT EXISTS rewind_failures ("
    "id BIGINT AUTO_INCREMENT PRIMARY KEY, run_id VARCHAR(64) NOT NULL, "
    "event_id DECIMAL(39,0) NOT NULL, event_key VARCHAR(40) NULL, stage VARCHAR(64) NOT NULL, "
    "reason TEXT NOT NULL, "
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
    "kind VARCHAR(16) NOT NULL, created_at DATETIME(6) NOT NULL, table_id BIGINT UNSIGNED NULL"
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

// Layout 9: the server's id of each live table rewind swapped in (IF NOT EXISTS: a fresh
// layout has it).
const char* const kAddTableIdentity =
    "ALTER TABLE rewind_tables ADD COLUMN IF NOT EXISTS table_id BIGINT UNSIGNED NULL";
// Layout 9: the read mark of each checkpoint.
const char* const kAddReadMark =
    "ALTER TABLE rewind_checkpoints ADD COLUMN IF NOT EXISTS read_mark VARCHAR(64) NOT NULL DEFAULT '' "
    "AFTER missed_events";

// Layout 10: ids as wide as a ULID's or a UUID's number (base/id_form.h), not only BIGINT's;
// a failure's event also as the table writes its id (NULL for integers: event_id is it).
const char* const kWidenIds[] = {
    "ALTER TABLE rewind_checkpoints MODIFY last_event_id DECIMAL(39,0) NOT NULL, "
    "MODIFY head_event_id DECIMAL(39,0) NOT NULL",
    "ALTER TABLE rewind_failures MODIFY event_id DECIMAL(39,0) NOT NULL, "
    "ADD COLUMN IF NOT EXISTS event_key VARCHAR(40) NULL AFTER event_id",
};

// Layout 11: how a follower learns of new commits, and the event-table rows it saw edited
// (IF NOT EXISTS: a fresh layout has them).
const char* const kAddFollowSource =
    "ALTER TABLE rewind_checkpoints "
    "ADD COLUMN IF NOT EXISTS follow_source VARCHAR(16) NOT NULL DEFAULT '' AFTER read_mark, "
    "ADD COLUMN IF NOT EXISTS edited_events BIGINT UNSIGNED NOT NULL DEFAULT 0 AFTER follow_source";

}  // namespace

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
    if (s.ok() && *version < 9) {  // layouts 1 to 8 knew a table by its name only
      s = c.Execute(kAddTableIdentity);
      if (s.ok()) s = c.Execute(kAddReadMark);
      if (!s.ok()) s = s.With("adding the tables' identity and the read marks to the bookkeeping");
    }
    if (s.ok() && *version < 10) {  // layouts 1 to 9 held BIGINT ids alone
      for (const char* sql : kWidenIds) {
        if (s = c.Execute(sql); !s.ok()) break;
      }
      if (!s.ok()) s = s.With("widening the ids in the bookkeeping to ULIDs' and UUIDs'");
    }
    if (s.ok() && *version < 11) {  // layouts 1 to 10 followed by polling alone
      s = c.Execute(kAddFollowSource);
      if (!s.ok()) s = s.With("adding the follow source and the edited events to the checkpoints");
    }
    if (s.ok()) {
      s = c.Execute(fmt::format("REPLACE INTO rewind_schema VALUES (1, {}, NOW(6))", kSchemaVersion));
    }
  }
  release();
  return s;
}

}  // namespace checkpoint_store
}  // namespace rw
