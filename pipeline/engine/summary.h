// ReplaySummary: what one run did, per read model and in total; printed as text at the
// end of a run and written as JSON with --stats-json (one JSON writer for every command:
// nlohmann::json).
//
// Thread safety: plain values, thread-compatible; a run fills its summary on the thread
// that called it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/event_id.h"
#include "base/id_form.h"
#include "base/status.h"
#include "projectors/segment.h"

namespace rw {

struct ProjectorSummary {
  std::string name;
  std::string table;
  EventId resumed_after = kBeforeFirstId;  // checkpoint it started from
  uint64_t events_applied = 0;
  uint64_t rows_written = 0;
  uint64_t flushes = 0;
  uint64_t budget_flushes = 0;  // of those, asked for by the memory budget
  size_t peak_state_bytes = 0;  // the most its state held (--memory counts it)
  size_t peak_kept_bytes = 0;   // of it, what it keeps across flushes (its order's memory)
  uint64_t retries = 0;
  uint64_t late_applied = 0;
  // Found by a follow's reconciliation in holes judged final: applied, or missed (it needs
  // a rebuild).
  uint64_t reconciled_applied = 0, missed_events = 0;
  uint64_t failed_events = 0;  // given to it and not applied, over the whole run
  double apply_seconds = 0, flush_seconds = 0;
};

struct ReplaySummary {
  Status status;
  bool swapped = false;
  // A follower started again (replay --resume --follow): the read models that continued their
  // live tables from their checkpoints instead of being rebuilt.
  std::vector<std::string> continued;
  bool interrupted = false;
  bool cutover_gave_up = false;  // the cut-over could not get its locks in time
  bool over_budget = false;      // some read model failed more events than --max-failures
  bool within_budget = false;    // a failure budget was given and every read model kept it
  bool empty_build = false;      // a read model received no event, its live table has rows
  std::string built_into;        // --into: the suffix of the tables built (never swapped)
  bool built_only = false;       // --build-only: the shadow tables built, for a later swap
  std::optional<Segment> segment;  // --build-only --segment: which, for a later merge
  std::string run_id;
  IdForm id_form;  // how the event table writes its ids: shown and written so
  EventId head_id = kBeforeFirstId;
  uint64_t events_read = 0;  // every event in the id range, skipped ones included
  uint64_t skipped = 0;      // events of types no selected read model handles
  uint64_t failures = 0;     // events recorded in rewind_failures
  uint64_t late_events = 0;  // events that committed after a higher id was read
  uint64_t gaps_given_up = 0;
  uint64_t holes_watched_peak = 0;     // the most missing-id ranges watched at once
  // Following: events found by reconciliations in holes judged final; seconds it read.
  uint64_t reconciled_events = 0;
  double reconcile_seconds = 0;
  // How holes were proven final (stages/flow/reader.h, "Gaps"): "server" (its open
  // transactions), "fallback" (the event table's times and ids), "id-times" (the times ULIDs and
  // UUIDv7s carry), "" (nothing read).
  std::string finality;
  // --follow: how following learned of new commits ("binlog" | "poll"; "" when not
  // following), and why; rows of the event table the binlog showed updated or deleted.
  std::string follow_source, follow_source_why;
  uint64_t edited_events = 0;
  uint64_t holes_read_under_lock = 0;  // watched ranges read again under the cut-over's lock
  uint64_t catch_up_events = 0;      // appended while the rebuild ran, applied before the swap
  double writers_held_seconds = 0;   // how long the cut-over held inserts off the event table
  int cutover_attempts = 0;
  std::optional<double> replica_lag_seconds;  // --read-host: the replica's lag at the start
  int64_t peak_in_flight = 0;
  // The memory budget (--memory), the most the read models' state held at once, and the
  // flushes it asked for (0: none; the budget was never reached).
  size_t memory_budget = 0, memory_peak = 0;
  uint64_t memory_flushes = 0;
  double seconds = 0;
  // --follow: the rebuild's share, up to the swap (events_read and seconds count the following
  // after it too); nullopt when the run did not follow.
  struct Rebuild {
    uint64_t events = 0;
    double seconds = 0;
  };
  std::optional<Rebuild> rebuild_before_following;
  // The rebuild's events and seconds: rebuild_before_following, or the whole run.
  Rebuild RebuildShare() const {
    return rebuild_before_following.value_or(Rebuild{events_read, seconds});
  }
  std::vector<ProjectorSummary> projectors;

  // 0 ok, 3 swapped with failures, 6 cut-over gave up, 1 error; the caller maps
  // interruptions to 128+signal.
  int ExitCode() const;
  std::string Text() const;
  std::string Outcome() const;  // what became of the read models (Text's line)
  std::string Following() const;  // the following's lines of Text: its events, its source, the edits
  std::string Json() const;
};

}  // namespace rw
