#include "stages/flow/failure_recorder.h"
#include "stages/db/retry.h"

#include <fmt/core.h>

#include <algorithm>

#include "stages/db/checkpoint_store.h"

namespace rw {

FailureRecorder::FailureRecorder(std::unique_ptr<Connection> connection, std::string run_id,
                                 bool stop_on_failure, const IdForm& form)
    : connection_(std::move(connection)),
      run_id_(std::move(run_id)),
      stop_on_failure_(stop_on_failure),
      form_(form) {}

Status FailureRecorder::Insert(const std::vector<Failure>& failures) {
  // Statements of at most 256 KiB (InsertFailuresSql), each written whole or not at all.
  for (const checkpoint_store::FailureInsert& insert : checkpoint_store::InsertFailuresSql(*connection_, run_id_, failures, form_)) {
    // Lost the server: reconnect and write the same rows again (autocommit: one statement
    // either landed whole or not at all; a lost reply can duplicate a row, never lose one).
    Status s = RetryOnConnectionLoss(*connection_, [&] { return connection_->Execute(insert.sql); });
    if (s.ok()) continue;
    if (s.code() == Status::Code::kConnection) return s;
    // Whatever a bad event holds must not stop the run: that statement's failures again, with
    // a plain ASCII reason and no excerpt.
    std::vector<Failure> plain(failures.begin() + static_cast<long>(insert.first),
                               failures.begin() + static_cast<long>(insert.first + insert.count));
    for (Failure& f : plain) {
      for (char& ch : f.reason) {
        if (static_cast<unsigned char>(ch) >= 0x80 || static_cast<unsigned char>(ch) < 0x20) ch = '?';
      }
      f.excerpt.clear();
    }
    for (const checkpoint_store::FailureInsert& again : checkpoint_store::InsertFailuresSql(*connection_, run_id_, plain, form_)) {
      if (Status t = connection_->Execute(again.sql); !t.ok()) return t;
    }
  }
  return Status::Ok();
}

Status FailureRecorder::Consume(const Batch& batch) {
  if (batch.failures.empty()) return Status::Ok();
  if (Status s = Insert(batch.failures); !s.ok()) return s.With("recording failed events");
  failures_ += batch.failures.size();
  if (stop_on_failure_) {
    const Failure& f = batch.failures.front();
    return Status::InvalidInput(
        fmt::format("event {} failed in {}: {} (stopping because of --stop-on-failure)",
                    IdShown(form_, f.event_id), f.stage, f.reason));
  }
  return Status::Ok();
}

Status FailureRecorder::Record(const Failure& f) {
  Status s = Insert({f});
  if (s.ok()) ++failures_;
  return s;
}

}  // namespace rw
