// EventSource: where a replay takes its events from, and what the build, the cut-over and
// the dry run ask of it: batches in sequence order (the graph, pipeline/engine/graph.h),
// where it stands (position, head), the head read anew and the range extended to it, and
// the watch on the holes in the ids (base/gaps.h): proofs, checks, reconciliation and
// their counts. Two implement it: the Reader (stages/flow/reader.h, the event table in
// MariaDB) and the tests' in-memory source (tests/memory_source.h), which runs the graph,
// the runners and the gap handling without a server.
//
// Thread safety: used by one thread at a time (the graph's calling thread reads from it,
// the build's thread asks the rest between passes).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>

#include "base/event_id.h"
#include "base/status.h"
#include "stages/flow/batch.h"

namespace rw {

// The head of the event table: its highest id and that event's time column (seconds, the
// wall clock as written; nullopt when the table has no time column or it did not parse).
struct Head {
  EventId id = kBeforeFirstId;
  std::optional<int64_t> time;
  std::optional<int64_t> server_time;  // the server's clock when it was read (UNIX_TIMESTAMP())
  std::optional<int64_t> server_us;    // the same in microseconds (NOW(6))
};

enum class GapCheck {
  kRecheck,  // re-read every watched hole; settle what is found and what is due
  kFollow,   // the same, and give up holes watched settle_seconds by the wall clock
  kFinal,    // re-read every watched hole and settle all (no insert is open)
};

// The watch on the holes, counted (for the summary, the cut-over's rounds and following).
struct GapCounts {
  size_t watched = 0;             // holes watched (due ones included)
  bool due = false;               // holes proven final that the next Next() reads once more
  uint64_t late_events = 0;       // events found in watched holes
  uint64_t given_up = 0;          // holes given up (watched too long, or beyond the cap)
  uint64_t peak_watched = 0;      // the most holes watched at once
  uint64_t reconciled_events = 0;  // events found by reconciliations
  size_t reconciled_holes = 0;    // the holes judged final, remembered for the next one
  double reconcile_seconds = 0;   // spent reconciling
  bool proves_with_server = false;  // holes proven final by the server (else the fallback rule)
};

class EventSource {
 public:
  virtual ~EventSource() = default;
  // The next batch, or nullptr when the source has nothing more to give this pass (every
  // id up to head() read, and no gap check or reconciliation queued).
  virtual Result<std::unique_ptr<Batch>> Next() = 0;
  // The sequence number the next batch will carry: sequences grow across graphs (a follow
  // run builds one graph per poll), and each graph counts its batches from this one.
  virtual uint64_t next_sequence() const = 0;
  // The last id read, and the id reading stops at.
  virtual EventId position() const = 0;
  virtual EventId head() const = 0;
  // Reads the event table's head now. REQUIRES: no Next() under way.
  virtual Result<Head> ReadHead() = 0;
  // Moves the end of the range to `head` (new events were appended) and judges the watched
  // holes against it. REQUIRES: head.id >= head().
  virtual void ExtendHead(const Head& head) = 0;
  // Marks final the watched holes the server's open transactions prove so (a no-op where
  // the source cannot tell). REQUIRES: no Next() under way.
  virtual Status ProveByOpenTransactions() = 0;
  // The next Next() returns a late batch first: the watched holes read again and settled
  // as `kind` says.
  virtual void QueueGapCheck(GapCheck kind) = 0;
  // The next Next() reads again the holes judged final and returns a reconciled batch
  // (stages/flow/batch.h), when there are any.
  virtual void QueueReconcile() = 0;
  virtual GapCounts gap_counts() const = 0;
  // Whether `id` lies in a watched hole: not read yet by this source, and still awaited.
  virtual bool Watching(EventId id) const = 0;
  // A commit log (the binlog) says from now on when an id commits: holes are no longer
  // given up by time or judged final by the fallback rule (stages/flow/gap_watch.h).
  virtual void FollowCommitLog() = 0;
  // Reads from the primary from now on, after a bulk read from a replica (a no-op for a
  // source that has one place to read from). REQUIRES: no Next() under way.
  virtual Status MoveToPrimary() = 0;
};

}  // namespace rw
