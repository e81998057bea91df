// ProjectorRunner: runs one projector against its own MariaDB connection. It is in three
// parts: the fold (here: events to the projector in order, held events, gaps, late and
// reconciled events, failures, the checkpoint they reach), the flush builder (the rows'
// statements, stages/flow/flush_builder.h) and the writer (the transaction, its thread and
// its retries, stages/flow/flush_writer.h).
//
// Every read model folds the batch's EventRecords (Projector::Apply); the events it cannot
// apply are written to rewind_failures in the flush's transaction, under its name, and those
// it cannot use are counted as failed (the decoder recorded why, once for the event).
//
// It feeds batches to the projector in sequence order, and flushes the projector's
// in-memory deltas as multi-row `INSERT ... ON DUPLICATE KEY UPDATE count = count + ...`
// statements, in one transaction that also moves the projector's checkpoint (the last
// event id whose effects are committed, and the ids below it still watched for a late
// commit). A crash therefore loses at most the uncommitted flush, and a rerun resumes
// exactly from the checkpoint. A late batch (stages/flow/batch.h) applies only the events whose
// ids are still open in this runner's own gaps, so a late event counts exactly once.
//
// Order-dependent read models (Projector::order_dependent) see events in id order even when
// ids commit out of order: an event above the lowest hole still open is held (in memory,
// bounded by the events of the settle window) until that hole is found (its event applied
// in its place) or final, and the checkpoint stays below the first held event.
//
// Every statement of a flush is checked for warnings: a value the server clamped or cut
// (LOAD DATA LOCAL turns strict mode's errors into warnings) fails the flush, naming the
// table. Read models that keep committed values (KeepsCommitted) get those of the keys they
// ask for, read from the target before they fold a batch, once it may have rows (a resume,
// or a flush wrote some).
//
// Memory: after every batch the runner reports what its read model holds to the run's
// memory budget (stages/flow/memory_budget.h), which may ask it to flush early.
//
// Failure handling, per flush: a lost connection is re-established and the whole
// transaction is redone (its statements are kept until COMMIT succeeds); a deadlock or
// lock-wait timeout reruns the transaction; both with bounded retries and backoff.
// Anything else is returned to the pipeline, which stops the run.
//
// Write while reading (RunnerOptions::write_every_events): every so many events the runner
// hands its pending rows, and the checkpoint they reach, to a writer thread of its own,
// which commits them on the runner's connection while the next events fold into fresh
// state. Into a table the run created, it keeps the keys it wrote (8 bytes each), and a
// later flush sends the rows of keys not written yet by LOAD DATA, the others as upserts
// (a LOAD DATA that met a key already there would fail the flush, never count it twice). At most one flush is in flight: a flush that is due (a threshold, or Flush())
// first waits for it. Each flush is still one transaction of rows + checkpoint, committed
// in order, so what a crash loses and what a resume redoes are as without the writer. A
// flush that fails on the writer stops the run: the next Consume() (or Flush()) returns its
// error.
//
// Thread safety: the runner's methods are called by one thread at a time (a serial
// pipeline node, then the thread that flushes it); they are not thread-safe. The writer
// thread touches only the connection and the flush it was handed (FlushWriter); while it
// runs, the calling thread touches neither: it waits for the writer before it builds the
// next flush, uses the connection or takes the result. stats() and checkpoint() count a
// flush once it was taken back.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "projectors/projector.h"
#include "stages/flow/batch.h"
#include "stages/db/connection.h"
#include "base/gaps.h"
#include "base/id_form.h"
#include "stages/db/table_schema.h"
#include "stages/flow/flush_builder.h"
#include "stages/flow/flush_writer.h"
#include "stages/flow/memory_budget.h"

namespace rw {

struct RunnerOptions {
  std::string target_table;                          // the table written (a shadow table)
  // Events <= this are already committed, but for the ids in `gaps` (still watched).
  EventId resume_after_id = kBeforeFirstId;
  GapSet gaps;
  // The target was just created empty: the first flush can bulk-load its rows with
  // LOAD DATA LOCAL INFILE (served from memory) instead of upserting them.
  bool target_starts_empty = false;
  // Flush when this many events were applied since the last flush: bounds the work a
  // crash can lose. Larger is faster (fewer, larger transactions).
  uint64_t flush_every_events = 2'000'000;
  // Flush when the projector holds this many pending rows: bounds memory by distinct keys.
  size_t flush_max_rows = 1'000'000;
  // Largest multi-row statement, in bytes (must stay below the server's max_allowed_packet).
  size_t statement_bytes = 8 << 20;
  // Write while reading: when this many events were applied since the last flush and the
  // writer is idle, the pending rows go to the runner's writer thread (see above); 0: every
  // flush runs on the calling thread, when flush_every_events or flush_max_rows says. On by
  // default since #39 item 0: all eight read models over 2M events, 6 pairs against 0,
  // wall 0.92x (0.84-0.95), CPU 1.02x, peak RSS +39 MiB, wall/bound 1.13-1.14 against
  // 1.18-1.22 (perf/HISTORY.md, "Write while reading, again"). A run of fewer events than
  // this never uses the writer thread.
  uint64_t write_every_events = 500'000;
  int max_retries = 8;  // per flush, for lost connections and deadlocks (~30 s of backoff)
  // The run the events a declared read model cannot apply are recorded under (in
  // rewind_failures, in the flush's own transaction: each exactly once).
  std::string run_id;
  // How the event table writes its ids (base/id_form.h): failures and messages show them so.
  IdForm id_form;
  // The first event a declared read model cannot apply ends the run (--stop-on-failure).
  bool stop_on_failure = false;
  // The target is of the application's shape (stages/db/live_shape.h): rows go by column
  // name, without rewind's storage columns (TableSpec::bare). A first or last value there
  // has no id beside it, so an event that comes late, below what a flush already committed,
  // cannot be placed among them: it is counted as missed (the read model needs a rebuild).
  bool application_table = false;
  // The target's generated columns: the server's notes on them are not refused (row_writer
  // never names them; the server computes them as for the application's own writes).
  std::vector<std::string> generated_columns;
  // The read mark of a checkpoint id: a scalar subquery (page_query's EventHashSql) that each
  // flush reads (a plain SELECT) and records beside the checkpoint; none: no mark.
  std::function<std::string(EventId)> mark_sql;
  // Rows may go by LOAD DATA (false: upserts only, as under a collation that makes keys
  // rewind keeps apart one row of the table).
  bool bulk_load = true;
  // The run's memory budget (stages/flow/memory_budget.h) and this runner's place in it;
  // none: only the thresholds above bound what it holds.
  std::shared_ptr<MemoryBudget> memory;
  size_t memory_slot = 0;
};

struct RunnerStats {
  uint64_t events_applied = 0;
  uint64_t rows_written = 0;
  uint64_t flushes = 0;
  uint64_t budget_flushes = 0;  // of those, asked for by the memory budget
  size_t peak_state_bytes = 0;  // the most its state (the projector's and its own) held
  size_t peak_kept_bytes = 0;   // of it, the most its projector kept across flushes (kept_bytes)
  uint64_t retries = 0;
  uint64_t late_applied = 0;  // events that committed after a higher id was applied
  // Of a reconciliation (stages/flow/batch.h): applied after their hole was judged final,
  // and missed (an order-dependent read model past them: it needs a rebuild).
  uint64_t reconciled_applied = 0;
  uint64_t missed_events = 0;
  uint64_t failed_events = 0; // events given to this read model that it could not apply
  uint64_t failures_recorded = 0;  // of those, recorded by this runner (declared read models)
  double apply_seconds = 0;
  double flush_seconds = 0;
};

class ProjectorRunner {
 public:
  // Waits for a flush still in flight (its outcome is lost: the run is ending anyway).
  ~ProjectorRunner() = default;
  ProjectorRunner(const ProjectorRunner&) = delete;
  ProjectorRunner& operator=(const ProjectorRunner&) = delete;

  static Result<std::unique_ptr<ProjectorRunner>> Make(std::unique_ptr<Projector> projector,
                                                       std::unique_ptr<Connection> connection,
                                                       const RunnerOptions& options);

  // A runner that writes nothing (the dry run): no connection, no target, nothing read
  // back. It folds batches with Fold() and hands its rows to a sink with FlushInto();
  // Flush() returns an error (and so does Consume() once a flush is due).
  static std::unique_ptr<ProjectorRunner> InMemory(std::unique_ptr<Projector> projector);

  // Applies the batch's events newer than the checkpoint; flushes when a threshold is
  // reached (with write_every_events, on the writer thread). Returns the error of a flush
  // the writer finished since. REQUIRES: batches arrive in increasing sequence order (checked).
  Status Consume(const Batch& batch);
  // Consume's apply step alone: folds the batch into the projector's memory (the events
  // newer than the checkpoint, or, of a late batch, those still in the gaps) and writes
  // nothing. Returns whether a flush is due (a threshold is reached).
  Result<bool> Fold(const Batch& batch);
  // Writes every pending delta and the checkpoint in one transaction, on the calling thread,
  // after the flush in flight (if any): when it returns Ok, everything applied is committed.
  Status Flush();
  // Hands every pending delta to `sink` instead of writing it (the dry run counts them);
  // no checkpoint moves.
  void FlushInto(RowSink& sink) { projector_->Flush(sink); }

  // Order-dependent read models: applies, in id order, every event held above a hole still
  // open (a build that never cuts over ends with its holes open).
  void ReleaseAllHeld() {
    if (!held_.empty()) ApplyHeld(held_.size());
  }

  // Writes into another table from now on, and keeps its checkpoint in that table's row
  // (follow mode: the live table after the swap). REQUIRES: nothing pending and no flush
  // in flight (after Flush()).
  // Its rows are no longer all this runner's (the application writes the live table too):
  // every later flush upserts.
  void Retarget(const std::string& table) {
    options_.target_table = table;
    if (builder_) builder_->Retarget(table);
  }
  // The run its failures are recorded under (a resumed run keeps the first one's).
  void SetRunId(const std::string& run_id) { options_.run_id = run_id; }

  const Projector& projector() const { return *projector_; }
  const RunnerStats& stats() const { return stats_; }
  EventId checkpoint() const { return committed_id_; }
  const std::string& target_table() const { return options_.target_table; }
  Connection& connection() { return *connection_; }

 private:
  ProjectorRunner(std::unique_ptr<Projector> p, std::unique_ptr<Connection> c,
                  const RunnerOptions& o);
  // Builds the next flush from what is pending (the rows by the flush builder, then the
  // failures and the checkpoint), and resets the counts since the last flush; nullptr when
  // there is nothing to commit. REQUIRES: no flush in flight.
  std::unique_ptr<FlushJob> PrepareFlush();
  // The calling thread takes a flush's outcome into the runner's state.
  Status TakeBack(FlushJob& job);
  // Waits for the flush in flight, if any, and takes it back.
  Status WaitForWriter();
  // Hands the pending rows to the writer thread (after the flush in flight).
  Status HandToWriter();
  // When the target may have rows: hands the projector the committed values it asks for
  // before folding `view` (KeepsCommitted), one query per statement's worth of keys.
  Status LoadCommitted(const EventRecords& view);
  // Reports what it holds to the memory budget; with `decide`, whether the budget asks it
  // to flush now.
  bool ReportMemory(bool decide);
  Status ApplyLate(const Batch& batch);
  Status ApplyReconciled(const Batch& batch);
  // Whether `batch` holds an event with id `id` that this read model reads.
  bool Reads(const Batch& batch, EventId id) const;
  // Without ids_kept_: the late events of `batch` at or below the checkpoint are taken out of
  // the gaps and applied without their first and last values, which cannot be placed among
  // those already written; the events that had one are counted as missed (a swap is then
  // refused: pipeline/replay).
  void PlaceBelowCheckpoint(const Batch& batch);
  // Removes ranges that are settled (found, or final) from the watched gaps.
  void Settle(const std::vector<IdRange>& settled);
  // Order-dependent read models: applies `records` of `batch` in id order only, holding
  // those above the lowest open hole (copies, in held_) until it settles.
  void ApplyInOrder(const Batch& batch, std::span<const EventRecord> records, bool late);
  void Hold(const Batch& batch, std::span<const EventRecord> records, bool late);
  void ReleaseHeld();
  // Applies the first `count` held events, in id order, and forgets them.
  void ApplyHeld(size_t count);
  // What a flush commits as the checkpoint: the last id applied, but below the first
  // held event; and the gaps up to it.
  EventId CheckpointId() const;
  GapSet CheckpointGaps() const;
  void CountFailed(uint64_t events);
  // The records of the batch with ids above the checkpoint, or (late) in this runner's gaps.
  void ApplyRecords(const Batch& batch, bool late);
  // The fold of the chosen records `view` (of `batch`, whose payloads the failures quote;
  // nullptr: held copies); `unordered`: Projector::ApplyUnordered. Returns the events whose
  // first or last value was left out.
  uint64_t ApplyChosen(const EventRecords& view, const Batch* batch, bool late, bool unordered);

  std::unique_ptr<Projector> projector_;
  std::unique_ptr<Connection> connection_;
  RunnerOptions options_;
  // The flush's two other parts; none in an in-memory runner.
  std::unique_ptr<FlushBuilder> builder_;
  std::unique_ptr<FlushWriter> writer_;
  // The target may hold rows (not created empty by the run, or a flush wrote some): a read
  // model keeping committed values reads them back before it folds.
  bool table_has_rows_ = false;
  // A read of committed values (KeepsCommitted): the key columns it names, what it selects
  // (the keys, then the committed columns) and how many; 0: the read model keeps none.
  TableSpec committed_keys_;
  std::string committed_select_;
  size_t committed_width_ = 0;
  // An error met while folding (reading committed values back): the next step returns it.
  Status fold_error_ = Status::Ok();
  bool budget_flush_ = false;  // the flush due was asked for by the memory budget
  bool trim_after_flush_ = false;  // under the budget's pressure: the next flush taken back trims the heap
  size_t last_flushable_ = 0;  // Projector::state_bytes() when last reported
  bool ids_kept_ = true;  // every first or last value is stored with its event's id
  EventId applied_id_;    // highest event id folded into memory
  // Order-dependent: the highest id applied in id order (from the checkpoint resumed on): what
  // comes above the lowest open hole is held, so it stays below that hole unless held too long.
  EventId applied_in_order_;
  EventId committed_id_;  // highest event id committed (the checkpoint)
  GapSet gaps_;           // ids <= applied_id_ not seen yet, still watched
  std::string committed_gaps_;  // gaps_ as last committed
  bool gaps_changed_ = false;
  uint64_t late_since_flush_ = 0;
  uint64_t failed_since_flush_ = 0;
  uint64_t reconciled_since_flush_ = 0, missed_since_flush_ = 0;
  int64_t last_sequence_ = -1;
  uint64_t events_since_flush_ = 0;
  // Order-dependent: the events above an open hole, by id, with copies of their values.
  struct Held {
    EventRecord record;
    std::vector<FieldValue> values;  // their texts in held_text_
  };
  std::vector<Held> held_;
  std::map<EventId, std::string> held_text_;  // their strings, by event
  size_t held_text_bytes_ = 0;                // their bytes (for the memory budget)
  size_t held_width_ = 0;                     // values per record
  std::vector<EventRecord> held_records_;     // scratch: the held events applied
  std::vector<FieldValue> held_values_;
  bool warned_held_ = false;
  std::vector<EventRecord> records_;  // scratch for late records
  std::vector<EventRecord> below_;    // scratch: late records below the checkpoint
  std::vector<EventFailure> new_failures_;  // scratch
  std::vector<Failure> pending_failures_;   // recorded with the next flush
  static constexpr size_t kMaxPendingFailures = 5000;  // then flush: bounds memory and the INSERT
  RunnerStats stats_;
};

}  // namespace rw
