#include "stages/flow/projector_runner.h"

#include <fmt/core.h>
#include <fmt/format.h>

#include <malloc.h>

#include <algorithm>
#include <chrono>

#include "base/civil_time.h"
#include "stages/db/checkpoint_store.h"
#include "stages/db/retry.h"
#include "stages/control/console.h"

namespace rw {
namespace {

double Seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

}  // namespace
ProjectorRunner::ProjectorRunner(std::unique_ptr<Projector> p, std::unique_ptr<Connection> c,
                                 const RunnerOptions& o)
    : projector_(std::move(p)),
      connection_(std::move(c)),
      options_(o),
      applied_id_(o.resume_after_id),
      applied_in_order_(o.resume_after_id),
      committed_id_(o.resume_after_id),
      gaps_(o.gaps),
      committed_gaps_(o.gaps.Text()) {
  for (const Column& col : projector_->table().columns) {
    ids_kept_ = ids_kept_ && !(o.application_table && KeepsEventId(col.merge));
  }
  if (connection_ == nullptr) return;  // in memory: nothing is written
  builder_ = std::make_unique<FlushBuilder>(
      *connection_, projector_->table(),
      FlushBuilderOptions{o.target_table, o.statement_bytes, o.target_starts_empty, o.bulk_load,
                          o.write_every_events > 0, o.application_table,
                          o.memory ? o.memory->budget() / 8 : SIZE_MAX});
  writer_ = std::make_unique<FlushWriter>(
      *connection_, FlushWriterOptions{o.max_retries, o.generated_columns, o.mark_sql, o.run_id, o.id_form});
  table_has_rows_ = !o.target_starts_empty;
  if (KeepsCommitted* keeps = projector_->keeps_committed()) {
    // What a read of committed values selects, by which key: built once.
    const std::vector<std::string> values = keeps->committed_columns();
    if (!values.empty()) {
      committed_keys_ = table_schema::KeysOnly(builder_->spec());
      for (const Column& k : committed_keys_.columns) {
        committed_select_ += (committed_select_.empty() ? "" : ", ") + QuoteIdentifier(k.name);
      }
      for (const std::string& v : values) committed_select_ += ", " + QuoteIdentifier(v);
      committed_width_ = committed_keys_.columns.size() + values.size();
    }
  }
}

Result<std::unique_ptr<ProjectorRunner>> ProjectorRunner::Make(
    std::unique_ptr<Projector> projector, std::unique_ptr<Connection> connection,
    const RunnerOptions& options) {
  if (options.target_table.empty()) return Status::InvalidInput("runner needs a target table");
  if (options.statement_bytes < 1024) return Status::InvalidInput("statement size too small");
  return std::unique_ptr<ProjectorRunner>(new ProjectorRunner(std::move(projector), std::move(connection), options));
}

std::unique_ptr<ProjectorRunner> ProjectorRunner::InMemory(std::unique_ptr<Projector> projector) {
  return std::unique_ptr<ProjectorRunner>(
      new ProjectorRunner(std::move(projector), nullptr, RunnerOptions{}));
}

Status ProjectorRunner::LoadCommitted(const EventRecords& view) {
  KeepsCommitted* keeps = projector_->keeps_committed();
  if (!table_has_rows_ || keeps == nullptr || committed_width_ == 0) return Status::Ok();
  const size_t width = committed_width_;
  UpsertBuilder select(*connection_, committed_keys_, options_.target_table, options_.statement_bytes,
                       UpsertBuilder::Statement::kSelect, committed_select_);
  keeps->KeysToLoad(view, select);
  if (select.rows() == 0) return Status::Ok();
  // The writer's flush in flight has the connection (its keys are known: it wrote them).
  if (Status s = WaitForWriter(); !s.ok()) return s;
  std::vector<std::string_view> row(width);
  std::string why;
  for (const std::string& sql : select.Take()) {
    // A lost connection (a server restart) reads again: loading a committed row sets its
    // values, so a row read twice is loaded once.
    Status s = RetryOnConnectionLoss(*connection_, [&] {
      return connection_->Stream(sql, [&](char** v, unsigned long* len) {
        if (!why.empty()) return;
        for (size_t i = 0; i < width; ++i) {
          if (v[i] == nullptr) {
            why = "a NULL";
            return;
          }
          row[i] = std::string_view(v[i], len[i]);
        }
        why = keeps->LoadCommitted(row);
      });
    });
    if (!s.ok()) {
      return s.With(fmt::format("projector {}: reading committed values back from {}", projector_->name(),
                                options_.target_table));
    }
    if (!why.empty()) {
      return Status::InvalidInput(fmt::format("projector {}: a row of {} cannot be read back ({}); rebuild it "
                                              "without --resume",
                                              projector_->name(), options_.target_table, why));
    }
  }
  return Status::Ok();
}

bool ProjectorRunner::ReportMemory(bool decide) {
  const size_t flushable = projector_->state_bytes();
  stats_.peak_kept_bytes = std::max(stats_.peak_kept_bytes, projector_->kept_bytes());
  size_t kept = projector_->kept_bytes() + (builder_ ? builder_->kept_bytes() : 0);
  kept += held_text_bytes_ + held_.size() * (64 + sizeof(Held) + held_width_ * sizeof(FieldValue));
  stats_.peak_state_bytes = std::max(stats_.peak_state_bytes, flushable + kept);
  // What the last batch added: the next is taken to add as much (the budget is kept at
  // batches' grain, not after the fact).
  const size_t growth = flushable > last_flushable_ ? flushable - last_flushable_ : 0;
  last_flushable_ = flushable;
  return options_.memory != nullptr && options_.memory->Report(options_.memory_slot, flushable, kept, growth, decide);
}

void ProjectorRunner::CountFailed(uint64_t events) {
  stats_.failed_events += events;
  failed_since_flush_ += events;
}

void ProjectorRunner::ApplyRecords(const Batch& batch, bool late) {
  std::span<const EventRecord> records(batch.records);
  if (late) {
    records_.clear();
    for (const EventRecord& r : records) {
      if (gaps_.Contains(r.id)) records_.push_back(r);
    }
    records = records_;
  } else if (batch.after_id < applied_id_) {  // the batch straddles the checkpoint: skip the old part
    const auto first_new = std::partition_point(records.begin(), records.end(),
                                                [&](const EventRecord& r) { return r.id <= applied_id_; });
    records = records.subspan(static_cast<size_t>(first_new - records.begin()));
  }
  if (projector_->order_dependent() != nullptr) {
    ApplyInOrder(batch, records, late);
  } else {
    (void)ApplyChosen(EventRecords{records, batch.values, batch.width}, &batch, late, /*unordered=*/false);
  }
}

uint64_t ProjectorRunner::ApplyChosen(const EventRecords& view, const Batch* batch, bool late, bool unordered) {
  if (view.events.empty() || !fold_error_.ok()) return 0;
  if (Status s = LoadCommitted(view); !s.ok()) {
    fold_error_ = s;  // nothing of `view` applied: the run stops
    return 0;
  }
  const auto start = std::chrono::steady_clock::now();
  new_failures_.clear();
  uint64_t unplaced = 0;
  const Folded folded = unordered ? projector_->ApplyUnordered(view, new_failures_, unplaced)
                                  : projector_->Apply(view, new_failures_);
  if (!unordered) applied_in_order_ = std::max(applied_in_order_, view.events.back().id);
  for (EventFailure& f : new_failures_) {
    // The payload's first bytes, as the decoder's failures have them.
    std::string excerpt;
    if (batch != nullptr) {
      const auto raw = std::lower_bound(batch->raw.begin(), batch->raw.end(), f.id,
                                        [](const RawEvent& r, EventId id) { return r.id < id; });
      if (raw != batch->raw.end() && raw->id == f.id) {
        excerpt.assign(batch->payloads.data() + raw->offset, std::min<size_t>(raw->length, 255));
      }
    }
    pending_failures_.push_back(Failure{f.id, std::string(projector_->name()), std::move(f.reason), std::move(excerpt)});
  }
  const uint64_t failed = folded.unusable + new_failures_.size();
  CountFailed(failed);
  // The checkpoint's events_applied counts what was applied; the failed ones count apart.
  stats_.events_applied += folded.events - failed;
  events_since_flush_ += folded.events - failed;
  if (late) {
    stats_.late_applied += folded.events - failed;
    late_since_flush_ += folded.events - failed;
  }
  stats_.apply_seconds += Seconds(start);
  return unplaced;
}

void ProjectorRunner::PlaceBelowCheckpoint(const Batch& batch) {
  below_.clear();
  for (const EventRecord& r : batch.records) {
    if (r.id > committed_id_ || !gaps_.Contains(r.id)) continue;
    gaps_.Subtract({r.id, r.id});
    gaps_changed_ = true;
    below_.push_back(r);
  }
  // An event is never thrown away whole: its counts and sums are placed exactly.
  const uint64_t missed =
      ApplyChosen(EventRecords{below_, batch.values, batch.width}, &batch, /*late=*/true, /*unordered=*/true);
  stats_.missed_events += missed;
  missed_since_flush_ += missed;
  if (missed > 0) {
    PrintLine(fmt::format("{}: {} event(s) committed late, below values it already wrote into the application's "
                          "table without their ids: {} (counted as missed; the read model needs a rebuild)",
                          projector_->name(), missed,
                          projector_->removes_rows() != nullptr
                              ? "none is applied, since whether a delete of its key came after it is not known"
                              : "their counts and sums are applied, but not their first or last values"));
  }
}

Status ProjectorRunner::ApplyLate(const Batch& batch) {
  // Only the ids still open for this runner: one it applied before a crash is not in its
  // gaps any more (the checkpoint moved with it), so nothing counts twice. An
  // order-dependent read model holds them in their places in id order, among the events
  // held above the hole.
  if (!ids_kept_) PlaceBelowCheckpoint(batch);
  ApplyRecords(batch, /*late=*/true);
  Settle(batch.settled);
  if (projector_->order_dependent() != nullptr) ReleaseHeld();
  return Status::Ok();
}

// The ids found by a reconciliation that this runner had settled as final (at or below
// where it applied, not open): a read model that takes events out of order applies them
// (opened again for the late path, which settles them); an order-dependent one still holds
// the events above those it has not passed yet, and misses the others (counted: it needs
// a rebuild). Ids still open for it go the late way as any late event.
Status ProjectorRunner::ApplyReconciled(const Batch& batch) {
  uint64_t missed = 0;
  for (const IdRange& r : batch.settled) {
    for (EventId id = r.lo; id <= r.hi && id <= applied_id_; ++id) {
      if (gaps_.Contains(id)) continue;
      // An order-dependent read model cannot take it; one without ids places what commutes
      // (the late path: PlaceBelowCheckpoint), counting only what it cannot place.
      if (projector_->order_dependent() != nullptr && id <= CheckpointId()) {
        missed += Reads(batch, id) ? 1 : 0;
      } else {
        gaps_.Add({id, id});
      }
    }
  }
  const uint64_t late_before = stats_.late_applied;
  if (Status s = ApplyLate(batch); !s.ok()) return s;
  stats_.reconciled_applied += stats_.late_applied - late_before;
  reconciled_since_flush_ += stats_.late_applied - late_before;
  stats_.missed_events += missed;
  missed_since_flush_ += missed;
  if (missed > 0) {
    PrintLine(fmt::format("{}: {} event(s) appeared in holes judged final, below events it already applied in "
                          "id order: counted as missed; the read model needs a rebuild",
                          projector_->name(), missed));
  }
  return Status::Ok();
}

bool ProjectorRunner::Reads(const Batch& batch, EventId id) const {
  const EventRecords view{batch.records, batch.values, batch.width};
  return std::any_of(batch.records.begin(), batch.records.end(),
                     [&](const EventRecord& r) { return r.id == id && projector_->Selects(view, r); });
}

void ProjectorRunner::Hold(const Batch& batch, std::span<const EventRecord> records, bool late) {
  if (records.empty()) return;
  const size_t before = held_.size();
  const EventRecords view{records, batch.values, batch.width};
  uint64_t failed = 0, taken = 0;
  held_width_ = batch.width;
  for (const EventRecord& r : records) {
    if (!projector_->reads_class(r.event_class)) continue;
    if (!projector_->Usable(r)) {
      ++failed;
      continue;
    }
    if (!projector_->Selects(view, r)) continue;
    // The batch's strings die with it: the held copy keeps its own, in one buffer per
    // event (a map node: it never moves), freed when the event is applied.
    Held held{r, std::vector<FieldValue>(batch.values.begin() + r.first_value,
                                         batch.values.begin() + r.first_value + static_cast<long>(batch.width))};
    std::string& text = held_text_[r.id];
    size_t bytes = 0;
    for (const FieldValue& v : held.values) bytes += v.text().size();
    text.reserve(bytes);
    held_text_bytes_ += bytes;
    for (FieldValue& v : held.values) {
      const size_t at = text.size();
      text.append(v.text());
      v.set_text(std::string_view(text).substr(at, v.text_size));
    }
    held_.push_back(std::move(held));
    ++taken;
  }
  CountFailed(failed);
  if (late) {
    stats_.late_applied += taken;
    late_since_flush_ += taken;
  }
  if (before > 0 && before < held_.size() && held_[before - 1].record.id > held_[before].record.id) {
    // late ones: into their places
    std::inplace_merge(held_.begin(), held_.begin() + static_cast<long>(before), held_.end(),
                       [](const Held& a, const Held& b) { return a.record.id < b.record.id; });
  }
}

void ProjectorRunner::ApplyHeld(size_t count) {
  held_records_.clear();
  held_values_.clear();
  for (size_t i = 0; i < count; ++i) {
    EventRecord r = held_[i].record;
    r.first_value = static_cast<uint32_t>(held_values_.size());
    held_records_.push_back(r);
    held_values_.insert(held_values_.end(), held_[i].values.begin(), held_[i].values.end());
  }
  (void)ApplyChosen(EventRecords{held_records_, held_values_, held_width_}, nullptr, /*late=*/false,
                    /*unordered=*/false);
  for (size_t i = 0; i < count; ++i) {
    const auto text = held_text_.find(held_[i].record.id);
    held_text_bytes_ -= std::min(held_text_bytes_, text->second.size());
    held_text_.erase(text);
  }
  held_.erase(held_.begin(), held_.begin() + static_cast<long>(count));
}

void ProjectorRunner::ReleaseHeld() {
  if (held_.empty()) return;
  const EventId open = gaps_.empty() ? GapSet::kMaxId : gaps_.lowest();
  auto end = std::partition_point(held_.begin(), held_.end(), [&](const Held& h) { return h.record.id < open; });
  const size_t max_held = projector_->order_dependent()->max_held();
  if (held_.size() - static_cast<size_t>(end - held_.begin()) > max_held) {
    // A hole that stays open this long is not one an application transaction holds (its
    // neighbours' times mislead): memory stays bounded, the oldest go on in id order.
    if (!warned_held_) {
      PrintLine(fmt::format("{}: more than {} events held above an open hole in the ids; applying the "
                            "oldest in id order without waiting for it", projector_->name(), max_held));
      warned_held_ = true;
    }
    end = held_.end() - static_cast<long>(max_held / 2);
  }
  if (end == held_.begin()) return;
  ApplyHeld(static_cast<size_t>(end - held_.begin()));
}

void ProjectorRunner::ApplyInOrder(const Batch& batch, std::span<const EventRecord> records, bool late) {
  // Below the lowest open hole (and nothing held before them): applied now; the rest held
  // until the holes below them settle.
  const EventId open = gaps_.empty() ? GapSet::kMaxId : gaps_.lowest();
  size_t now = 0;
  if (held_.empty()) {
    now = static_cast<size_t>(std::partition_point(records.begin(), records.end(),
                                                   [&](const EventRecord& r) { return r.id < open; }) -
                              records.begin());
    (void)ApplyChosen(EventRecords{records.first(now), batch.values, batch.width}, &batch, late, /*unordered=*/false);
  }
  Hold(batch, records.subspan(now), late);
  ReleaseHeld();
}

GapSet ProjectorRunner::CheckpointGaps() const {
  GapSet gaps = gaps_;
  gaps.TrimAbove(CheckpointId());
  return gaps;
}

EventId ProjectorRunner::CheckpointId() const {
  EventId id = held_.empty() ? applied_id_ : std::min(applied_id_, held_.front().record.id - 1);
  // An order-dependent read model applies nothing above its lowest open hole (what comes above
  // is held; unless held too long): its checkpoint stays below the hole, so that after a kill
  // the hole, committed late, and what follows it are read again and applied in id order. At
  // the hole itself, a late commit would be placed below the checkpoint, where a delete or a
  // first or last value cannot be placed exactly (tests/continue_test.cc, a deposit lost).
  if (projector_->order_dependent() != nullptr && !gaps_.empty() && gaps_.lowest() <= id &&
      applied_in_order_ < gaps_.lowest()) {
    id = gaps_.lowest() - 1;
  }
  return id;
}

void ProjectorRunner::Settle(const std::vector<IdRange>& settled) {
  for (const IdRange& r : settled) {
    if (gaps_.empty() || r.hi < gaps_.lowest()) continue;
    gaps_.Subtract(r);
    gaps_changed_ = true;
  }
}

Status ProjectorRunner::Consume(const Batch& batch) {
  // A flush the writer finished: its error stops the run now, not at the next flush.
  if (writer_ != nullptr && writer_->in_flight() && writer_->done()) {
    if (Status s = WaitForWriter(); !s.ok()) return s;
  }
  Result<bool> flush = Fold(batch);
  if (!flush.ok()) return flush.status();
  // The budget's pressure (TakeBack trims the heap): a flush it asked for, or a state past a
  // quarter of it.
  if (budget_flush_) {
    budget_flush_ = false;
    trim_after_flush_ = true;
    ++stats_.budget_flushes;
  }
  if (options_.memory != nullptr && options_.memory->total() >= options_.memory->budget() / 4) {
    trim_after_flush_ = true;
  }
  if (options_.write_every_events == 0 || writer_ == nullptr) return *flush ? Flush() : Status::Ok();
  // Writing while reading: a threshold hands the rows over after the flush in flight; so
  // does write_every_events, but only to an idle writer (reading goes on meanwhile).
  if (*flush || (events_since_flush_ >= options_.write_every_events && !writer_->in_flight())) {
    return HandToWriter();
  }
  return Status::Ok();
}

Result<bool> ProjectorRunner::Fold(const Batch& batch) {
  if (static_cast<int64_t>(batch.sequence) <= last_sequence_) {
    return Status::Internal(fmt::format("projector {} received batch {} after batch {}: order lost",
                                        projector_->name(), batch.sequence, last_sequence_));
  }
  last_sequence_ = static_cast<int64_t>(batch.sequence);
  if (batch.late) {
    if (Status s = batch.reconciled ? ApplyReconciled(batch) : ApplyLate(batch); !s.ok()) return s;
    if (!fold_error_.ok()) return fold_error_;
    return false;
  }
  if (batch.last_id <= applied_id_) {  // committed before a resume
    Settle(batch.settled);
    if (projector_->order_dependent() != nullptr) ReleaseHeld();
    return false;
  }

  for (const IdRange& g : batch.gaps) {  // this runner's part of the batch's gaps
    if (g.hi <= applied_id_) continue;
    gaps_.Add({std::max(g.lo, applied_id_ + 1), g.hi});
    gaps_changed_ = true;
  }
  Settle(batch.settled);  // holes final now (of earlier batches, or given up of this one)
  ApplyRecords(batch, /*late=*/false);
  if (options_.stop_on_failure && !pending_failures_.empty()) {
    const Failure& f = pending_failures_.front();
    return Status::InvalidInput(fmt::format("event {} failed in {}: {} (stopping because of --stop-on-failure)",
                                            IdShown(options_.id_form, f.event_id), f.stage, f.reason));
  }
  if (!fold_error_.ok()) return fold_error_;
  applied_id_ = batch.last_id;
  const size_t max_rows =
      projector_->runs_statements() != nullptr ? std::min(RunsStatements::kMaxQueued, options_.flush_max_rows)
                                               : options_.flush_max_rows;
  if (events_since_flush_ >= options_.flush_every_events || projector_->pending_rows() >= max_rows ||
      pending_failures_.size() >= kMaxPendingFailures) {
    (void)ReportMemory(/*decide=*/false);
    return true;
  }
  budget_flush_ = ReportMemory(/*decide=*/true);
  return budget_flush_;
}

Status ProjectorRunner::Flush() {
  if (connection_ == nullptr) {
    return Status::Internal(
        fmt::format("projector {}: an in-memory runner writes nothing", projector_->name()));
  }
  if (!fold_error_.ok()) return fold_error_;
  if (Status s = WaitForWriter(); !s.ok()) return s;
  std::unique_ptr<FlushJob> job = PrepareFlush();
  if (job == nullptr) return Status::Ok();
  writer_->Run(*job);
  return TakeBack(*job);
}

Status ProjectorRunner::HandToWriter() {
  if (!fold_error_.ok()) return fold_error_;
  if (Status s = WaitForWriter(); !s.ok()) return s;
  std::unique_ptr<FlushJob> job = PrepareFlush();
  if (job != nullptr) writer_->Start(std::move(job));
  return Status::Ok();
}

Status ProjectorRunner::WaitForWriter() {
  std::unique_ptr<FlushJob> job = writer_->Wait();
  return job == nullptr ? Status::Ok() : TakeBack(*job);
}

std::unique_ptr<FlushJob> ProjectorRunner::PrepareFlush() {
  const EventId checkpoint = CheckpointId();
  if (checkpoint == committed_id_ && projector_->pending_rows() == 0 && !gaps_changed_ &&
      failed_since_flush_ == 0 && reconciled_since_flush_ == 0 && missed_since_flush_ == 0) {
    return nullptr;
  }
  const auto start = std::chrono::steady_clock::now();
  auto job = std::make_unique<FlushJob>();
  job->name = std::string(projector_->name());
  job->target = options_.target_table;
  job->checkpoint = checkpoint;
  const GapSet gaps = CheckpointGaps();
  job->gaps = gaps.Text();
  job->was_committed = committed_id_;
  job->was_committed_gaps = committed_gaps_;
  job->what = fmt::format("projector {}: flush of events {}..{} into {}", job->name,
                          committed_id_ == kBeforeFirstId ? "the first" : IdShown(options_.id_form, committed_id_ + 1),
                          IdShown(options_.id_form, checkpoint), options_.target_table);
  builder_->AddRows(*projector_, *job);
  if (job->rows > 0) table_has_rows_ = true;
  (void)ReportMemory(/*decide=*/false);  // what the flush gave back
  std::vector<FlushJob::Step>& steps = job->steps;
  for (checkpoint_store::FailureInsert& insert :
       checkpoint_store::InsertFailuresSql(*connection_, options_.run_id, pending_failures_, options_.id_form)) {
    steps.push_back(FlushJob::Step{std::move(insert.sql), {}, false});
  }
  steps.push_back(FlushJob::Step{checkpoint_store::AdvanceSql(*connection_, job->name, options_.target_table,
                                                              checkpoint, gaps, events_since_flush_, job->rows,
                                                              late_since_flush_, failed_since_flush_,
                                                              reconciled_since_flush_, missed_since_flush_),
                                 {}, false});
  // What the flush commits is no longer pending: the next events count towards the next.
  job->failures = pending_failures_.size();
  pending_failures_.clear();
  gaps_changed_ = false;
  late_since_flush_ = 0;
  failed_since_flush_ = 0;
  reconciled_since_flush_ = missed_since_flush_ = 0;
  events_since_flush_ = 0;
  job->seconds = Seconds(start);
  return job;
}

Status ProjectorRunner::TakeBack(FlushJob& job) {
  stats_.retries += job.retries;
  stats_.flush_seconds += job.seconds;
  if (!job.status.ok()) return job.status.With(job.what);
  committed_id_ = job.checkpoint;
  committed_gaps_ = job.gaps;
  stats_.failures_recorded += job.failures + job.refused.size();
  // Events whose statement the server refused: failed, not applied.
  stats_.events_applied -= job.refused_events;
  stats_.failed_events += job.refused_events;
  stats_.rows_written += job.rows;
  ++stats_.flushes;
  // Under the budget's pressure (a flush it asked for, or a state past a quarter of it) what
  // the flush held (its statements, the rows it gave back) goes back to the system, not kept
  // by the allocator's arenas, so that the process's size follows the state it holds. Only
  // then: a trim after every flush cost a third more page faults on the blog's eight (67k
  // against 47k, 2M events, a state of 35 MiB), the freed pages faulted in again by the next
  // batches.
  if (trim_after_flush_) {
    trim_after_flush_ = false;
    malloc_trim(0);
  }
  return Status::Ok();
}

}  // namespace rw
