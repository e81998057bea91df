#include "stages/flow/failure_recorder.h"
#include "stages/db/retry.h"

#include <fmt/core.h>

#include <algorithm>

#include "stages/db/checkpoint_store.h"

namespace rw {

FailureRecorder::FailureRecorder(std::unique_ptr<Connection> connection, std::string run_id,
                                 bool stop_on_failure)
    : connection_(std::move(connection)),
      run_id_(std::move(run_id)),
      stop_on_failure_(stop_on_failure) {}

Status FailureRecorder::Insert(const std::vector<Failure>& failures) {
  // In groups small enough for any server's max_allowed_packet (a row is under 3 KB), each
  // written whole or not at all.
  constexpr size_t kGroup = 64;
  for (size_t at = 0; at < failures.size(); at += kGroup) {
    const std::vector<Failure> group(failures.begin() + static_cast<long>(at),
                                     failures.begin() + static_cast<long>(std::min(failures.size(), at + kGroup)));
    if (Status s = InsertGroup(group); !s.ok()) return s;
  }
  return Status::Ok();
}

Status FailureRecorder::InsertGroup(const std::vector<Failure>& failures) {
  // Lost the server: reconnect and write the same rows again (autocommit: one statement
  // either landed whole or not at all; a lost reply can duplicate a row, never lose one).
  Status s = Status::Ok();
  for (const std::string& sql : checkpoint_store::InsertFailuresSql(*connection_, run_id_, failures)) {
    s = RetryOnConnectionLoss(*connection_, [&] { return connection_->Execute(sql); });
    if (!s.ok()) break;
  }
  if (s.ok() || s.code() == Status::Code::kConnection) return s;
  // Whatever a bad event holds must not stop the run: record it again with a plain ASCII
  // reason and no excerpt.
  std::vector<Failure> plain = failures;
  for (Failure& f : plain) {
    for (char& ch : f.reason) {
      if (static_cast<unsigned char>(ch) >= 0x80 || static_cast<unsigned char>(ch) < 0x20) ch = '?';
    }
    f.excerpt.clear();
  }
  for (const std::string& sql : checkpoint_store::InsertFailuresSql(*connection_, run_id_, plain)) {
    if (Status again = connection_->Execute(sql); !again.ok()) return again;
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
                    IdText(f.event_id), f.stage, f.reason));
  }
  return Status::Ok();
}

Status FailureRecorder::Record(const Failure& f) {
  Status s = Insert({f});
  if (s.ok()) ++failures_;
  return s;
}

}  // namespace rw
