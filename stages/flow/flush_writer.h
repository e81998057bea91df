// FlushWriter: the third part of a read model's runner (stages/flow/projector_runner.h): it
// commits flushes. A flush (FlushJob) is a list of statements, built by the runner's flush
// builder (stages/flow/flush_builder.h), that move a read model's rows and its checkpoint
// in one transaction; the writer runs that transaction on the runner's connection, on the
// calling thread (Run) or on a thread of its own while the caller folds the next events
// (Start, then Wait), one flush in flight at most.
//
// Every statement is checked for warnings: a value the server clamped or cut (LOAD DATA
// LOCAL turns strict mode's errors into warnings) fails the flush, naming the statement. A
// lost connection is re-established and the whole transaction redone (unless the
// checkpoint's row shows the server committed it before the connection died); a deadlock or
// lock-wait timeout reruns it; both within the one retry policy (stages/db/retry.h).
//
// A read model of handlers (projectors/projector.h, RunsStatements) sends bound statements:
// each group of events goes as one bulk execution. When the server refuses one of them for
// an event's values (a duplicate key, a value out of range, a warning), the transaction is
// rolled back and run again carefully: each event's statement alone, behind a savepoint,
// and an event the server refuses is that event's failure (recorded, with the server's
// message, in the same transaction, and counted as failed instead of applied).
//
// Thread safety: one thread calls its methods. While a flush is in flight on the writer's
// thread, that thread alone touches the connection and the job; the caller touches neither
// until Wait() returned it.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "base/event_id.h"
#include "base/failure.h"
#include "base/id_form.h"
#include "base/status.h"
#include "stages/db/connection.h"

namespace rw {

// One flush: its statements, what it commits, and (once run) its outcome.
struct FlushJob {
  // One statement; with `load`, a LOAD DATA whose file is `data`.
  struct Step {
    std::string sql;
    std::vector<std::string> data;  // LOAD DATA's rows, in pieces
    bool load = false;
    // A group of bound statements (a read model of handlers), `sql` their statement: its
    // events [first, first + count), one bulk execution (a packet the server takes).
    std::shared_ptr<const BoundStatements> bound;
    size_t first = 0, count = 0;
  };
  std::vector<Step> steps;
  std::string name, target;             // the read model's and its table's, for messages
  EventId checkpoint = kBeforeFirstId;  // what it commits
  std::string gaps;                     // ...and the gaps up to it (GapSet::Text)
  EventId was_committed = kBeforeFirstId;  // the checkpoint before it
  std::string was_committed_gaps;
  std::string what;  // "flush of events a..b into t", for its error
  uint64_t rows = 0, failures = 0;
  // Events whose bound statement the server refused (found while running it): recorded as
  // failures by the same transaction, and counted as failed instead of applied.
  std::vector<Failure> refused;
  uint64_t refused_events = 0;
  // The outcome, written by whoever runs it.
  Status status;
  uint64_t retries = 0;
  double seconds = 0;  // building and running it
};

struct FlushWriterOptions {
  int max_retries = 8;  // per flush, for lost connections and deadlocks (~30 s of backoff)
  // The target's generated columns: the server's notes on them are not refused.
  std::vector<std::string> generated_columns;
  // The read mark of a checkpoint id: a scalar subquery each flush reads (a plain SELECT)
  // and records beside the checkpoint; none: no mark.
  std::function<std::string(EventId)> mark_sql;
  // For the failures a bound statement finds: the run that records them, and how ids are shown.
  std::string run_id;
  IdForm id_form;
};

class FlushWriter {
 public:
  FlushWriter(Connection& connection, FlushWriterOptions options)
      : connection_(connection), options_(std::move(options)) {}
  // Waits for a flush still in flight (its outcome is lost: the run is ending anyway).
  ~FlushWriter();
  FlushWriter(const FlushWriter&) = delete;
  FlushWriter& operator=(const FlushWriter&) = delete;

  // Runs `job`'s transaction on the calling thread; its outcome is in the job.
  // REQUIRES: nothing in flight.
  void Run(FlushJob& job) const;
  // Runs `job` on the writer's thread. REQUIRES: nothing in flight (Wait first).
  void Start(std::unique_ptr<FlushJob> job);
  // The flush in flight, once finished (its outcome in it); nullptr when none was.
  std::unique_ptr<FlushJob> Wait();
  bool in_flight() const { return in_flight_ != nullptr; }
  // Whether the flush in flight has finished (Wait would not block).
  bool done() const { return writer_done_.load(std::memory_order_acquire); }

 private:
  Status RunTransaction(FlushJob& job, uint64_t* retries) const;
  // Runs a group of bound statements: at once, or (`careful`) each event's alone behind a
  // savepoint, adding the events the server refuses to job.refused.
  Status RunBound(const FlushJob::Step& step, bool careful, FlushJob& job) const;

  Connection& connection_;
  const FlushWriterOptions options_;
  std::unique_ptr<FlushJob> in_flight_;
  std::thread writer_;
  std::atomic<bool> writer_done_{false};
};

}  // namespace rw
