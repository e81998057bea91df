#include "stages/flow/flush_writer.h"

#include <fmt/core.h>

#include <chrono>

#include "base/fault.h"
#include "stages/control/console.h"
#include "stages/db/checkpoint_store.h"
#include "stages/db/retry.h"

namespace rw {

FlushWriter::~FlushWriter() {
  if (writer_.joinable()) writer_.join();
}

void FlushWriter::Run(FlushJob& job) const {
  const auto start = std::chrono::steady_clock::now();
  job.status = RunTransaction(job, &job.retries);
  job.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

void FlushWriter::Start(std::unique_ptr<FlushJob> job) {
  in_flight_ = std::move(job);
  writer_done_.store(false, std::memory_order_relaxed);
  // The thread's start orders everything above before it; its end is seen by join().
  writer_ = std::thread([this, job = in_flight_.get()] {
    Run(*job);
    writer_done_.store(true, std::memory_order_release);
  });
}

std::unique_ptr<FlushJob> FlushWriter::Wait() {
  if (in_flight_ == nullptr) return nullptr;
  writer_.join();
  return std::move(in_flight_);
}

Status FlushWriter::RunTransaction(const FlushJob& job, uint64_t* retries) const {
  const std::vector<FlushJob::Step>& steps = job.steps;
  RetryPolicy policy;
  policy.max_retries = options_.max_retries;
  RetryHooks hooks;
  hooks.before_retry = [&](const Status& last, int retry) {
    ++*retries;
    PrintLine(fmt::format("{}: {}; retrying the flush, attempt {}", job.name, last.message(), retry));
  };
  // The connection may have died after the server committed but before it said so. The
  // checkpoint moves in the same transaction, so it tells which happened.
  hooks.after_reconnect = [&]() -> Result<bool> {
    Result<std::optional<Checkpoint>> cp = checkpoint_store::Load(connection_, job.name, job.target);
    if (!cp.ok()) return cp.status();
    return *cp && (*cp)->last_event_id == job.checkpoint && (*cp)->gaps.Text() == job.gaps &&
           (job.checkpoint != job.was_committed || job.gaps != job.was_committed_gaps);
  };
  Status s = Retry(policy, &connection_, [&] {
    Status last = connection_.Execute("START TRANSACTION");
    for (size_t i = 0; last.ok() && i < steps.size(); ++i) {
      last = steps[i].load ? connection_.LoadData(steps[i].sql, steps[i].data) : connection_.Execute(steps[i].sql);
      // A value the server clamped or cut is an error, whatever its sql_mode: the flush
      // rolls back and the run stops, naming the table.
      if (last.ok()) {
        last = connection_.RefuseWarnings(fmt::format("{}[{}] (rolled back)", steps[i].load ? "LOAD DATA " : "",
                                                      std::string_view(steps[i].sql).substr(0, 100)),
                                          options_.generated_columns);
      }
    }
    if (last.ok() && options_.mark_sql) {
      // The event the checkpoint stands on, by a plain read (never waiting on an open insert).
      Result<std::optional<std::string>> mark = connection_.QueryValue("SELECT " + options_.mark_sql(job.checkpoint));
      last = mark.ok() ? connection_.Execute(checkpoint_store::SetReadMarkSql(connection_, job.name, job.target,
                                                                               mark->value_or("")))
                       : mark.status();
    }
    if (last.ok()) FaultPoint("mid-flush");  // statements sent, transaction still open
    if (last.ok()) last = connection_.Execute("COMMIT");
    if (!last.ok() && last.code() != Status::Code::kConnection) (void)connection_.Execute("ROLLBACK");
    return last;
  }, hooks);
  if (s.code() == Status::Code::kConnection || s.code() == Status::Code::kRetryable) {
    return s.With(fmt::format("gave up after {} retries", options_.max_retries));
  }
  return s;
}

}  // namespace rw
