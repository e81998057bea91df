#include "stages/db/retry.h"

#include <algorithm>
#include <thread>

namespace rw {

std::chrono::milliseconds BackoffDelay(int retry) {
  return std::chrono::milliseconds(250 << std::min(std::max(retry, 0), 5));
}

Status Retry(const RetryPolicy& policy, Connection* connection, const std::function<Status()>& attempt,
             const RetryHooks& hooks) {
  Status s = attempt();
  for (int retry = 0; !s.ok(); ++retry) {
    const bool lost = s.code() == Status::Code::kConnection && connection != nullptr;
    const bool transient = s.code() == Status::Code::kRetryable && policy.retry_transient;
    if (!lost && !transient) return s;
    if (retry >= policy.max_retries) return s;
    if (policy.deadline && std::chrono::steady_clock::now() >= *policy.deadline) return s;
    if (hooks.before_retry) hooks.before_retry(s, retry + 1);
    std::this_thread::sleep_for(std::min(BackoffDelay(retry), policy.max_delay));
    if (lost) {
      if (Status r = connection->Reconnect(); !r.ok()) {
        s = r;
        continue;
      }
      if (hooks.after_reconnect) {
        Result<bool> done = hooks.after_reconnect();
        if (!done.ok()) {
          s = done.status();
          continue;
        }
        if (*done) return Status::Ok();
      }
    }
    s = attempt();
  }
  return s;
}

Status RetryOnConnectionLoss(Connection& c, const std::function<Status()>& attempt,
                             const std::function<void(const Status&, int)>& on_retry) {
  RetryPolicy policy;
  policy.retry_transient = false;
  return Retry(policy, &c, attempt, RetryHooks{on_retry, {}});
}

}  // namespace rw
