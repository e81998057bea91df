// The one retry policy: what is worth retrying, how long to wait before each retry, and
// when to give up. Every stage that retries (the reader, the failure recorder, the
// projector runner's flush, ingest, the cut-over) runs its attempt through Retry().
//
// Retried: a lost connection (kConnection: wait, reconnect, run the attempt again) when a
// connection is given, and a deadlock or lock-wait timeout (kRetryable: wait, run again)
// when the policy says so. Anything else ends at once. Waits grow 250 ms, 500 ms, ... up to
// 8 s (eight retries span about half a minute: a server restart), capped by max_delay.
//
// Thread safety: stateless; each call uses what it is given.
#pragma once

#include <chrono>
#include <functional>
#include <limits>
#include <optional>

#include "base/status.h"
#include "stages/db/connection.h"

namespace rw {

struct RetryPolicy {
  // Retries after the first attempt.
  int max_retries = 8;
  // And never past this moment (the cut-over's bound), whichever comes first.
  std::optional<std::chrono::steady_clock::time_point> deadline;
  std::chrono::milliseconds max_delay{8000};
  // Retry deadlocks and lock-wait timeouts (kRetryable) too, not only lost connections.
  bool retry_transient = true;
};

struct RetryHooks {
  // Before each retry, with the failure that caused it and the retry's number (1, 2, ...).
  std::function<void(const Status&, int)> before_retry;
  // After a reconnect, before the attempt runs again: true when the work is known to be
  // done already (the server committed it before the connection died), which ends Retry
  // with success.
  std::function<Result<bool>()> after_reconnect;
};

// How long retry `retry` (0, 1, 2, ...) waits, before the policy's cap.
std::chrono::milliseconds BackoffDelay(int retry);

// Runs `attempt` until it succeeds or fails in a way the policy does not retry, or the
// retries or the time are spent; returns its last outcome. Lost connections are retried
// only with a `connection` to reconnect. `attempt` must be safe to redo.
Status Retry(const RetryPolicy& policy, Connection* connection, const std::function<Status()>& attempt,
             const RetryHooks& hooks = {});

// Retry() for lost connections alone (a read, an insert that is safe to redo).
Status RetryOnConnectionLoss(Connection& c, const std::function<Status()>& attempt,
                             const std::function<void(const Status&, int)>& on_retry = {});

}  // namespace rw
