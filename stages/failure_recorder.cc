#include "stages/failure_recorder.h"

#include <fmt/core.h>

namespace rw {

FailureRecorder::FailureRecorder(std::unique_ptr<Connection> connection, std::string table,
                                 std::string run_id, bool stop_on_failure)
    : connection_(std::move(connection)),
      table_(std::move(table)),
      run_id_(std::move(run_id)),
      stop_on_failure_(stop_on_failure) {}

Status FailureRecorder::Consume(const Batch& batch) {
  if (batch.failures.empty()) return Status::Ok();
  std::string sql = fmt::format("INSERT INTO {} (run_id, event_id, stage, reason) VALUES ",
                                QuoteIdentifier(table_));
  for (size_t i = 0; i < batch.failures.size(); ++i) {
    const Failure& f = batch.failures[i];
    sql += i ? ",(" : "(";
    connection_->AppendQuoted(sql, run_id_);
    sql += fmt::format(",{},", f.event_id);
    connection_->AppendQuoted(sql, f.stage);
    sql += ',';
    connection_->AppendQuoted(sql, f.reason);
    sql += ')';
  }
  Status s = connection_->Execute(sql);
  for (int attempt = 0; s.code() == Status::Code::kConnection && attempt < 8; ++attempt) {
    // Lost the server: wait, reconnect, write the same rows again (autocommit: one
    // statement either landed whole or not at all; a lost reply can duplicate a row,
    // never lose one).
    s = connection_->ReconnectAfterBackoff(attempt);
    if (s.ok()) s = connection_->Execute(sql);
  }
  if (!s.ok()) return s.With("recording failed events");
  failures_ += batch.failures.size();
  if (stop_on_failure_) {
    const Failure& f = batch.failures.front();
    return Status::InvalidInput(
        fmt::format("event {} failed in {}: {} (stopping because of --stop-on-failure)",
                    f.event_id, f.stage, f.reason));
  }
  return Status::Ok();
}

Status FailureRecorder::Record(const Failure& f) {
  Status s = connection_->Execute(fmt::format(
      "INSERT INTO {} (run_id, event_id, stage, reason) VALUES ({}, {}, {}, {})",
      QuoteIdentifier(table_), connection_->Quote(run_id_), f.event_id, connection_->Quote(f.stage),
      connection_->Quote(f.reason)));
  if (s.ok()) ++failures_;
  return s;
}

}  // namespace rw
