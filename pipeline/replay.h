// Replay: one whole rebuild run: prepare, rebuild beside, swap, report.
//
//  1. Connect, check the event table, create rewind's own tables if missing, and take a
//     named lock per read model in the database (GET_LOCK), so a second rewind on the
//     same read models refuses instead of interleaving.
//  2. Prepare a shadow table `<table>__rewind_new` per read model (or, with resume,
//     find the interrupted one and its checkpoint).
//  3. Run the graph from the lowest checkpoint to the head id taken at the start.
//  4. Flush every projector; then swap all shadow tables in with one RENAME TABLE.
//
// On error nothing is swapped: the live tables are untouched and the shadow tables keep
// their committed checkpoints. On `stop` (a signal) every projector commits what it
// applied, and the run can be resumed.
#pragma once

#include <atomic>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "config/options.h"
#include "projectors/projector.h"

namespace rw {

struct ProjectorSummary {
  std::string name;
  std::string table;
  int64_t resumed_after = 0;  // checkpoint it started from (0: from scratch)
  uint64_t events_applied = 0;
  uint64_t rows_written = 0;
  uint64_t flushes = 0;
  uint64_t retries = 0;
  double apply_seconds = 0, flush_seconds = 0;
};

struct ReplaySummary {
  Status status;
  bool swapped = false;
  bool interrupted = false;
  std::string run_id;
  int64_t head_id = 0;
  uint64_t events_read = 0;  // every event in the id range, skipped ones included
  uint64_t skipped = 0;      // events of types no selected read model handles
  uint64_t failures = 0;     // events recorded in rewind_failures
  int64_t peak_in_flight = 0;
  double seconds = 0;
  std::vector<ProjectorSummary> projectors;

  // 0 ok, 3 swapped with failures, 1 error; the caller maps interruptions to 128+signal.
  int ExitCode() const;
  std::string Text() const;
  std::string Json() const;
};

// Names of the tables rewind owns, and the suffixes of the tables a rebuild and a verify
// write beside each live table.
inline constexpr const char* kCheckpointTable = "rewind_checkpoints";
inline constexpr const char* kFailureTable = "rewind_failures";
inline constexpr const char* kShadowSuffix = "__rewind_new";
inline constexpr const char* kVerifySuffix = "__rewind_verify";

// A query whose one row fingerprints `table` (of the shape `spec`): rows, total count, and
// two order-independent sums of per-row hashes over every column. Equal rows mean equal
// tables but for a collision in both sums.
std::string FingerprintQuery(const TableSpec& spec, const std::string& table);

// Creates rewind_checkpoints and rewind_failures if they do not exist.
Status EnsureBookkeepingTables(Connection& connection);

// Selects projectors by name (or every one when `all`). Unknown names are an error that
// lists the known ones.
Result<std::vector<std::unique_ptr<Projector>>> SelectProjectors(const ReplayOptions& options);

// Rebuilds beside, swaps in; with options.follow, then keeps applying new events.
ReplaySummary Replay(const ReplayOptions& options,
                     std::vector<std::unique_ptr<Projector>> projectors,
                     const std::atomic<bool>& stop);

// How a rebuilt table differs from the live one.
struct TableDiff {
  std::string table;
  uint64_t live_rows = 0, rebuilt_rows = 0;
  int64_t live_total = 0, rebuilt_total = 0;  // sums of the counter column
  uint64_t only_live = 0;      // keys only in the live table
  uint64_t only_rebuilt = 0;   // keys only in the rebuilt one
  uint64_t count_differs = 0;  // keys in both, with another count
  std::vector<std::string> examples;  // the first few differing keys, readable
  bool identical() const { return only_live == 0 && only_rebuilt == 0 && count_differs == 0; }
};

// Compares two tables of the shape `spec` (keys, then the counter). A missing `live`
// table counts as empty.
Result<TableDiff> CompareTables(Connection& c, const TableSpec& spec, const std::string& live,
                                const std::string& rebuilt);

struct VerifySummary {
  ReplaySummary replay;  // the scratch rebuild
  std::vector<TableDiff> tables;
  bool identical() const {
    for (const auto& t : tables) {
      if (!t.identical()) return false;
    }
    return replay.status.ok();
  }
};

// Rebuilds into scratch tables (<table>__rewind_verify), never swaps, compares with the
// live tables, drops the scratch tables. Live tables and their checkpoints are untouched.
VerifySummary Verify(const ReplayOptions& options,
                     std::vector<std::unique_ptr<Projector>> projectors,
                     const std::atomic<bool>& stop);

}  // namespace rw
