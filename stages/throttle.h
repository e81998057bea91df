// Throttle: keeps the reader under a rate cap and off a busy server (migration day on a
// production server that keeps serving users).
//
// - Rate cap: a token bucket (GCRA form) of `max_events_per_second`, a quarter second deep.
//   The reader asks PageSize() before each page (a page is at most a quarter second's
//   worth) and reports the events it read with Took(); Wait() sleeps until the bucket
//   allows the next page. The cap holds over any second, whatever the batch size.
// - Busy server: while the server's Threads_running, less rewind's own running
//   connections, is above `max_threads_running`, Wait() pauses reading (looking again
//   every second) and says so; reading resumes by itself. Projectors keep flushing what
//   they hold meanwhile (they are not paused).
//
// Thread safety: one thread at a time (the reader's).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "stages/connection.h"

namespace rw {

struct ThrottleOptions {
  uint64_t max_events_per_second = 0;  // 0: no cap
  uint64_t max_threads_running = 0;    // 0: not watched
};

class Throttle {
 public:
  // `probe` is a connection of its own for the Threads_running look (may be null when
  // that is not watched). `on_change` hears "throttled: ..." and "" when it ends.
  Throttle(const ThrottleOptions& options, std::unique_ptr<Connection> probe,
           const std::atomic<bool>* stop, std::function<void(const std::string&)> on_change);

  bool active() const { return options_.max_events_per_second > 0 || options_.max_threads_running > 0; }
  // The largest page to read next.
  size_t PageSize(size_t batch_size) const;
  // Blocks until the next page may be read (or stop is set).
  Status Wait();
  // `events` were read.
  void Took(uint64_t events);

 private:
  Result<int64_t> BusyThreads();

  const ThrottleOptions options_;
  std::unique_ptr<Connection> probe_;
  const std::atomic<bool>* stop_;
  std::function<void(const std::string&)> on_change_;
  std::chrono::steady_clock::time_point next_allowed_ = std::chrono::steady_clock::now();
  std::chrono::steady_clock::time_point next_probe_{};
  bool throttled_ = false;
};

}  // namespace rw
