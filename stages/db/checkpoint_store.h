// CheckpointStore: rewind's own bookkeeping tables, and every statement on them.
//
//   rewind_schema       one row: the layout version of the tables below
//   rewind_checkpoints  one row per (read model, target table): how far a build or a live
//                       table has applied the events (last id, the gaps still watched), its
//                       event source's fingerprint, its counters and timings
//   rewind_failures     one row per event that could not be applied, per run
//   rewind_ingest_positions  one row per path `rewind ingest` was given: where it stopped
//                       in the file under that path (device, inode, byte offset, a hash of its
//                       first line) and the throttle's per-IP state, written in each batch's
//                       transaction
//   rewind_ingest_files one row per log file ingested, whatever its name (layout 7): known
//                       by the SHA-256 of its first line (looked up) and of its first
//                       min(offset, 4 KiB) bytes (compared), with the furthest offset stored,
//                       lines read, events stored and the throttle's state, written in the
//                       same transaction as the position. What lets a file renamed by a
//                       rotation, gzipped or copied continue where its lines were stored.
//                       Migrating to layout 7, each saved position with a first line becomes
//                       one (its head unknown: matched by the first line alone until its next
//                       batch records it).
//   rewind_tables       one row per table rewind created and has not dropped yet (a shadow,
//                       a scratch, an --into target, the old copy a swap leaves): what rewind
//                       may replace or drop. A name's shape proves nothing; this record does.
//                       Migrating to layout 3, the build targets that older rewinds' checkpoint
//                       rows name (and that exist) are recorded: their only trace of ownership.
//   rewind_runs         one row per running rewind (layout 4): its heartbeat (stages/heartbeat:
//                       beaten every second from a thread and connection of its own), the id of
//                       the connection that holds its named locks (what IS_USED_LOCK names) and
//                       of its other connections, and the lifetime of the server those ids
//                       belong to. A holder of a lock whose run has stopped beating is dead
//                       (table_admin::TakeLock). A clean end deletes the row; a killed run's stays.
//   Layout 9 adds rewind_checkpoints.read_mark: the hash of the event a build's checkpoint
//                       stands on (page_query's EventHash), so that a resume or a segments'
//                       merge across another event table (restored from another backup: same
//                       ids, other payloads) is refused; and rewind_tables.table_id: the server's id of a live table rewind swapped in
//                       (InnoDB's TABLE_ID, which a RENAME keeps and a new table never has),
//                       so that ownership follows the table, not its name: a table put in its
//                       place (an application's table restored by RENAME) is not rewind's.
//   Layout 11 adds rewind_checkpoints.follow_source: how a follower learns of new commits
//                       ("binlog" | "poll"; '' for a row no follower wrote), and edited_events:
//                       the event-table rows the binlog showed updated or deleted while it
//                       followed (events are immutable: the read model needs a rebuild).
//   Layout 8 adds rewind_checkpoints.reconciled_events and missed_events: events found by a
//                       follow's reconciliation in holes judged final, applied or (an
//                       order-dependent read model past them) missed: it needs a rebuild.
//   Layout 5 adds rewind_checkpoints.rewind_version: the version of the rewind that started
//   the row's build ('' on rows older rewinds wrote).
//   rewind_replica_markers  one row per marker a run reading from a replica (--read-host)
//                       wrote on the primary and waits to see on the replica (layout 6): what
//                       proves the replica replicates this database, and measures its lag.
//                       Deleted once seen; a killed run's row is deleted by the next marker.
//
// This header is the one way in; the statements live one file per table under
// stages/db/bookkeeping/ (layout.cc: the DDL, Ensure and the migrations; checkpoints.cc,
// failures.cc, ingest.cc, ownership.cc, runs.cc, replica_markers.cc).
// Nobody else spells these tables' names or their SQL. The layout is versioned: Ensure()
// creates the tables, or migrates an older layout forward, under a server-wide lock so that
// two rewinds never migrate at once. A checkpoint is keyed by the table it is for, so a
// build beside the live tables can never overwrite the live table's row.
//
// Thread safety: stateless functions; each call uses the connection it is given.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/event_id.h"
#include "base/id_form.h"
#include "base/failure.h"
#include "base/gaps.h"
#include "stages/db/connection.h"

namespace rw {

inline constexpr int kSchemaVersion = 11;
inline constexpr const char* kSchemaTable = "rewind_schema";
inline constexpr const char* kCheckpointTable = "rewind_checkpoints";
inline constexpr const char* kFailureTable = "rewind_failures";
inline constexpr const char* kIngestTable = "rewind_ingest_positions";
inline constexpr const char* kOwnedTable = "rewind_tables";
inline constexpr const char* kRunsTable = "rewind_runs";
inline constexpr const char* kReplicaMarkerTable = "rewind_replica_markers";
inline constexpr const char* kIngestFilesTable = "rewind_ingest_files";
// Every bookkeeping table above, the names rewind never gives a read model's table.
inline constexpr const char* kBookkeepingTables[] = {
    kSchemaTable, kCheckpointTable, kFailureTable,       kIngestTable,
    kOwnedTable,  kRunsTable,       kReplicaMarkerTable, kIngestFilesTable};
// True when `table` is one of kBookkeepingTables (compared as the server compares names).
bool IsBookkeepingTable(std::string_view table);

// Where a checkpoint's table stands. The status column holds its text (CheckpointStatusText);
// these four are the only texts rewind writes.
enum class CheckpointStatus {
  kBuilding,   // "building": a build under way, or interrupted (what --resume continues)
  kBuilt,      // "built": an --into build, complete (never swapped in)
  kLive,       // "live": the live table, swapped in
  kFollowing,  // "following": the live table, kept up to date by a running --follow
};
std::string_view CheckpointStatusText(CheckpointStatus status);
// The status a column's text names; nullopt for a text rewind does not write.
std::optional<CheckpointStatus> ParseCheckpointStatus(std::string_view text);

struct Checkpoint {
  std::string projector;
  std::string target_table;   // the table written: a shadow, a scratch or the live table
  std::string live_table;
  // nullopt when the row holds a text rewind does not write (read, never written so).
  std::optional<CheckpointStatus> status;
  std::string run_id;
  std::string source;         // fingerprint of the event source and the read model's version
  std::string rewind_version;  // the rewind that started the build (written by Start)
  EventId last_event_id = kBeforeFirstId;
  GapSet gaps;                // ids below last_event_id still watched for a late commit
  EventId head_event_id = kBeforeFirstId;
  uint64_t events_applied = 0;
  uint64_t failed_events = 0;  // events it was given and could not apply
  uint64_t missed_events = 0;  // events committed late that it could not place exactly
  std::string read_mark;       // the hash of the event at last_event_id when it was written ("": none)
};

// Where `rewind ingest` stands in one log file.
struct IngestPosition {
  std::string source;           // the path as given
  uint64_t device = 0, inode = 0;
  uint64_t offset = 0;          // bytes consumed (whole lines)
  std::string first_line_hash;  // SHA-256 hex of the first line: a rotated file differs
  std::string throttle;         // "ip=seconds\n..." of the per-IP throttle
  uint64_t lines_read = 0, events_stored = 0;
};

// What `rewind ingest` remembers of one log file's content, whatever name it was read under.
// A file is this one when its first line hashes to first_line_hash and its first head_bytes
// bytes to head_hash (the first line alone is known as soon as it is written and never
// changes; the 4 KiB tell apart two logs that merely start alike).
inline constexpr uint64_t kIngestHeadBytes = 4096;
struct IngestFile {
  uint64_t id = 0;              // the row's key (given by CreateIngestFile)
  std::string first_line_hash;  // SHA-256 hex of its first line
  uint64_t head_bytes = 0;      // min(offset, kIngestHeadBytes); 0: not recorded yet
  std::string head_hash;        // SHA-256 hex of its first head_bytes bytes
  uint64_t offset = 0;          // bytes of its content stored (whole lines)
  uint64_t lines_read = 0, events_stored = 0;
  std::string throttle;            // the per-IP throttle's state at `offset`
  std::string source;              // the path it was last read under
  uint64_t device = 0, inode = 0;  // of that path's file then
};

// One running rewind, as its heartbeat row tells it.
struct RunRecord {
  uint64_t id = 0;              // the row's key (given by StartRun)
  std::string run_id;           // the run's id, as in rewind_checkpoints and rewind_failures
  std::string command;          // "replay", "verify", "ingest"
  std::string host;             // the machine it runs on
  uint64_t pid = 0;
  unsigned long lock_connection = 0;  // the connection holding its named locks
  std::string connections;      // every connection of the run, comma-separated
  uint64_t beats = 0;           // how many times it has beaten
  double beat_age_seconds = 0;  // since its last beat, by the server's clock
};

namespace checkpoint_store {

// Creates the tables, or migrates an older layout to kSchemaVersion. Needs CREATE/ALTER.
Status Ensure(Connection& c);
// The layout version found (0: no tables yet), without changing anything.
Result<int> Version(Connection& c);

Result<std::optional<Checkpoint>> Load(Connection& c, const std::string& projector,
                                       const std::string& target_table);
// A fresh row for a build starting from nothing (replaces any row of that key).
// REQUIRES: cp.status is set.
Status Start(Connection& c, const Checkpoint& cp);
Status SetHead(Connection& c, const std::string& projector, const std::string& target_table,
               EventId head);
// The statement a flush runs inside its transaction: moves the checkpoint.
std::string AdvanceSql(Connection& c, const std::string& projector, const std::string& target,
                       EventId last_id, const GapSet& gaps, uint64_t events, uint64_t rows,
                       uint64_t late, uint64_t failed, uint64_t reconciled, uint64_t missed);
// The statement that moves `events` of the checkpoint's applied events to its failed ones
// (events whose statement the server refused while the flush ran: RunsStatements).
std::string MoveToFailedSql(Connection& c, const std::string& projector, const std::string& target,
                            uint64_t events);
// The statement that records a checkpoint's read mark (the hash of the event it stands on,
// read beforehand by a plain, non-locking SELECT: the id may be one an open insert holds).
std::string SetReadMarkSql(Connection& c, const std::string& projector, const std::string& target,
                           const std::string& mark);
// After the swap: the build's row becomes the live table's row (the old one goes).
Status BecomeLive(Connection& c, const std::string& projector, const std::string& built_table,
                  const std::string& live_table, CheckpointStatus status, double seconds,
                  double events_per_second, uint64_t gaps_given_up);
Status SetStatus(Connection& c, const std::string& projector, const std::string& target_table,
                 CheckpointStatus status, uint64_t gaps_given_up);
Status Delete(Connection& c, const std::string& projector, const std::string& target_table);
// Following: how the row's follower learns of new commits ("binlog" | "poll").
Status SetFollowSource(Connection& c, const std::string& projector, const std::string& target_table,
                       const std::string& source);
// Following by the binlog: `edited` more event-table rows were updated or deleted.
Status AddEdited(Connection& c, const std::string& projector, const std::string& target_table, uint64_t edited);
// Rows whose target table ends with `suffix` (left behind by a killed run).
Result<std::vector<Checkpoint>> WithTargetSuffix(Connection& c, const std::string& suffix);
// Rows of builds beside `live_table` (its segments' among them), by target table.
Result<std::vector<Checkpoint>> ForLiveTable(Connection& c, const std::string& live_table);

// Ownership (rewind_tables). `live_table` is the read model's table it is built beside;
// `kind` says what it is for (shadow, scratch, into, old), for people reading the table.
// Record before creating: a crash in between leaves a record of a missing table, never a
// table without a record.
Status RecordTable(Connection& c, const std::string& table, const std::string& live_table,
                   const std::string& kind);
Status ForgetTable(Connection& c, const std::string& table);
// Records the server's id of `table` (InnoDB's TABLE_ID; NULL where it cannot be read:
// without the PROCESS grant, or another engine) beside its record.
Status RecordIdentity(Connection& c, const std::string& table);
// Whether rewind recorded creating `table`. Read-only: on bookkeeping older than layout 3
// (no records yet) it answers as the migration will, from the checkpoint rows.
Result<bool> Recorded(Connection& c, const std::string& table);
// The kind rewind recorded `table` as (layout 3 and later), or nullopt: no record (or no
// bookkeeping), or the table there now is not the one recorded (its server id differs).
// rewind-gen's event tables are kind "sample".
Result<std::optional<std::string>> RecordedKind(Connection& c, const std::string& table);

// Heartbeats (rewind_runs). Each run writes its row before it takes a named lock, then beats.
// Returns the row's id. Also forgets rows of earlier lifetimes of the server (their
// connections are gone) and rows of this user's runs whose lock connection is gone.
Result<uint64_t> StartRun(Connection& c, const RunRecord& run);
// One beat: the time (the server's), the connection ids now (they change on a reconnect).
Status Beat(Connection& c, uint64_t id, unsigned long lock_connection, const std::string& connections);
Status EndRun(Connection& c, uint64_t id);
// The freshest heartbeat of a run whose lock connection is `connection`, in this lifetime of
// the server (ids start again from 1 after a restart); nullopt when none.
Result<std::optional<RunRecord>> RunHoldingLocks(Connection& c, unsigned long connection);

// Replica markers (rewind_replica_markers). Write on the primary (deleting markers more than
// an hour old: killed runs'); Seen on the replica (false while the row, or the table, has
// not arrived there); Delete on the primary once seen.
Status WriteReplicaMarker(Connection& c, const std::string& token, const std::string& run_id);
Result<bool> ReplicaMarkerSeen(Connection& c, const std::string& token);
Status DeleteReplicaMarker(Connection& c, const std::string& token);

// Failures.
// The INSERTs of the batch's failures for `run_id` (none when there are none), each about
// 256 KiB at most: under any server's max_allowed_packet (1 MiB, or MySQL 5.7's 4 MiB).
// Reasons are made valid UTF-8 and cut on a character boundary; the excerpt is stored as bytes.
// Each statement says which failures it holds: failures[first, first + count).
struct FailureInsert {
  std::string sql;
  size_t first = 0, count = 0;
};
// `form`: how the event table writes its ids; for ULIDs and UUIDs the id goes into event_key
// as the table writes it (a UUID's bytes as its text), beside its number in event_id.
std::vector<FailureInsert> InsertFailuresSql(Connection& c, const std::string& run_id,
                                             const std::vector<Failure>& failures, const IdForm& form);
Result<uint64_t> CountFailures(Connection& c, const std::string& run_id);
Status DeleteFailuresAfter(Connection& c, const std::string& run_id, EventId after);
// A segment's build merged into the build of run `into` (pipeline/replay/segments.h): the
// failures `projector` recorded in run `from` move to `into`; the decoder's of `from` go, as
// every segment read the same events and `into` holds them once.
Status MergeFailures(Connection& c, const std::string& from, const std::string& into,
                     const std::string& projector);

// `for_update`: inside a transaction, the row locked until it ends (a batch checks that
// nobody moved it before appending).
Result<std::optional<IngestPosition>> LoadIngestPosition(Connection& c, const std::string& source,
                                                         bool for_update = false);
// The row of a source never ingested before, as `initial` (nothing read yet), so that every
// batch has a row to lock; a row already there is left as it is.
Status CreateIngestPosition(Connection& c, const IngestPosition& initial);
// The statement an ingest batch runs inside its transaction.
std::string SaveIngestPositionSql(Connection& c, const IngestPosition& position);
// Whether two positions are the same place: identity, offset, first line, counters.
bool SameIngestPosition(const IngestPosition& a, const IngestPosition& b);

// The files ingested before whose first line hashes to `first_line_hash`, by id.
Result<std::vector<IngestFile>> FindIngestFiles(Connection& c, const std::string& first_line_hash);
// `for_update` as for LoadIngestPosition.
Result<std::optional<IngestFile>> LoadIngestFile(Connection& c, uint64_t id,
                                                 bool for_update = false);
// A row for a file never ingested before, as `initial` (nothing stored yet); its id.
Result<uint64_t> CreateIngestFile(Connection& c, const IngestFile& initial);
// The statement an ingest batch runs inside its transaction (by id).
std::string SaveIngestFileSql(Connection& c, const IngestFile& file);
// Whether a row is as it was: id, offset, counters.
bool SameIngestFile(const IngestFile& a, const IngestFile& b);

// One checkpoint as `rewind status` shows it: its row of rewind_checkpoints, with the
// failures of its run and its lag behind the head. Empty optionals are the NULLs the table
// (or the lag, without a head) can hold.
struct StatusRow {
  std::string projector;
  std::string table;  // the target table: the live table, or a build beside it
  std::string live_table;
  std::string status;                 // the status column's text (building | live | following)
  std::optional<EventId> checkpoint;  // the last event id applied; none before the first event
  std::optional<EventId>
      behind;             // ids from the checkpoint up to the head (>= 0); none without a head
  uint64_t failures = 0;  // rewind_failures rows of its run, decoder's and its own
  std::string run_id;
  std::optional<std::string> last_run_at;   // DATETIME text: finished_at, else updated_at
  std::optional<double> seconds;            // rounded to 2 decimals
  std::optional<double> events_per_second;  // rounded to a whole number
  uint64_t late_events = 0;
  uint64_t gaps_given_up = 0;
  uint64_t gaps_watched = 0;  // ranges of ids still watched for a late commit
  // Found by a follow's reconciliation after their hole was judged final (layout 8): applied,
  // and missed (the read model needs a rebuild when any was).
  uint64_t reconciled_events = 0;
  uint64_t missed_events = 0;
  // Layout 11: how it was followed last ("" when never), and the event-table rows the binlog
  // showed edited meanwhile (it needs a rebuild when any was).
  std::string follow_source;
  uint64_t edited_events = 0;
  bool needs_rebuild() const { return missed_events > 0 || edited_events > 0; }
  std::string source;         // the event source's fingerprint
  uint64_t events_applied = 0;
  // The rewind that built it; none on a layout before 5 or a row an older rewind wrote.
  std::optional<std::string> rewind_version;
};

// `rewind status`: one row per checkpoint, ordered by projector and target table. `layout`
// is the layout found (Version()): 2 to kSchemaVersion are read, changing nothing.
Result<std::vector<StatusRow>> StatusRows(Connection& c, EventId head, int layout);

}  // namespace checkpoint_store

// `text` as valid UTF-8 (bad bytes become U+FFFD), cut to at most `max_bytes` on a
// character boundary ("..." marks a cut).
std::string ValidUtf8(std::string_view text, size_t max_bytes);

}  // namespace rw
