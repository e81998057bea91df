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

namespace {

// The server's refusals that are one event's values (its statement alone fails): any other
// error (a table gone, a column unknown, a lost connection) is the flush's.
bool RefusesTheEvent(unsigned error) {
  switch (error) {
    case 1048:  // ER_BAD_NULL_ERROR
    case 1062:  // ER_DUP_ENTRY
    case 1264:  // ER_WARN_DATA_OUT_OF_RANGE
    case 1265:  // WARN_DATA_TRUNCATED
    case 1292:  // ER_TRUNCATED_WRONG_VALUE
    case 1365:  // ER_DIVISION_BY_ZERO
    case 1366:  // ER_TRUNCATED_WRONG_VALUE_FOR_FIELD
    case 1406:  // ER_DATA_TOO_LONG
    case 1451:  // ER_ROW_IS_REFERENCED_2
    case 1452:  // ER_NO_REFERENCED_ROW_2
    case 1586:  // ER_DUP_ENTRY_WITH_KEY_NAME
    case 1690:  // ER_DATA_OUT_OF_RANGE
    case 3140:  // ER_INVALID_JSON_TEXT
    case 4025:  // ER_CONSTRAINT_FAILED
      return true;
    default:
      return false;
  }
}

// Marks a flush to be run again carefully: a bound statement refused an event's values.
constexpr std::string_view kRefused = "a bound statement refused an event";

}  // namespace

Status FlushWriter::RunBound(const FlushJob::Step& step, bool careful, FlushJob& job) const {
  const BoundStatements& b = *step.bound;
  const size_t first = step.first, end = step.first + step.count;
  unsigned error = 0;
  if (!careful) {
    Status s = connection_.ExecuteBound(step.sql, b, first, step.count, &error);
    if (s.ok()) s = connection_.RefuseWarnings(step.sql.substr(0, 100), options_.generated_columns);
    if (!s.ok() && (RefusesTheEvent(error) || (error == 0 && s.code() == Status::Code::kDatabase))) {
      return Status::Error(Status::Code::kInvalidInput, std::string(kRefused));
    }
    return s;
  }
  for (size_t r = first; r < end; ++r) {
    if (Status s = connection_.Execute("SAVEPOINT rewind_event"); !s.ok()) return s;
    Status s = connection_.ExecuteBound(step.sql, b, r, 1, &error);
    if (s.ok()) s = connection_.RefuseWarnings(step.sql.substr(0, 100), options_.generated_columns);
    if (s.ok()) continue;
    if (!RefusesTheEvent(error) && !(error == 0 && s.code() == Status::Code::kDatabase)) return s;
    if (Status back = connection_.Execute("ROLLBACK TO SAVEPOINT rewind_event"); !back.ok()) return back;
    std::string message(s.message());
    if (const size_t at = message.find("]: "); at != std::string::npos) message = message.substr(at + 3);
    if (!job.refused.empty() && job.refused.back().event_id == b.ids[r]) {
      job.refused.back().reason += "; " + message;  // another statement of the same event
      continue;
    }
    job.refused.push_back(Failure{b.ids[r], job.name,
                                  fmt::format("handler at {}: the server refused its statement: {}", b.origin, message),
                                  {}});
  }
  return Status::Ok();
}

Status FlushWriter::RunTransaction(FlushJob& job, uint64_t* retries) const {
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
  bool careful = false;  // a bound statement refused an event: each event's statement alone
  Status s = Retry(policy, &connection_, [&] {
    Status last = connection_.Execute("START TRANSACTION");
    job.refused.clear();
    job.refused_events = 0;
    for (size_t i = 0; last.ok() && i < steps.size(); ++i) {
      if (steps[i].bound != nullptr) {
        last = RunBound(steps[i], careful, job);
        if (!careful && !last.ok() && last.message() == kRefused) {
          // Once more from the start, carefully (the transaction is rolled back first).
          (void)connection_.Execute("ROLLBACK");
          careful = true;
          last = connection_.Execute("START TRANSACTION");
          i = static_cast<size_t>(-1);
        }
        continue;
      }
      last = steps[i].load ? connection_.LoadData(steps[i].sql, steps[i].data) : connection_.Execute(steps[i].sql);
      // A value the server clamped or cut is an error, whatever its sql_mode: the flush
      // rolls back and the run stops, naming the table.
      if (last.ok()) {
        last = connection_.RefuseWarnings(fmt::format("{}[{}] (rolled back)", steps[i].load ? "LOAD DATA " : "",
                                                      std::string_view(steps[i].sql).substr(0, 100)),
                                          options_.generated_columns);
      }
    }
    if (last.ok() && !job.refused.empty()) {
      // The events refused: recorded, and counted as failed instead of applied.
      for (const checkpoint_store::FailureInsert& insert :
           checkpoint_store::InsertFailuresSql(connection_, options_.run_id, job.refused, options_.id_form)) {
        if (last.ok()) last = connection_.Execute(insert.sql);
      }
      job.refused_events = job.refused.size();
      if (last.ok()) last = connection_.Execute(checkpoint_store::MoveToFailedSql(connection_, job.name, job.target,
                                                                                  job.refused_events));
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
