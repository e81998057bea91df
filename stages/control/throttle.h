// Throttle: keeps the reader under a rate cap and off a busy server (migration day on a
// production server that keeps serving users).
//
// - Rate cap: a token bucket of `max_events_per_second` that starts empty and holds one
//   page: a page is at most a quarter second's worth (PageSize()), Wait(n) charges the page
//   before it is read and sleeps until the bucket holds it, Took() gives back what a short
//   page did not use. So at most N events are read in any second, and at most N x t in the
//   first t seconds, whatever the batch size.
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

#include "stages/db/connection.h"

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
  // Blocks until a page of `page` events may be read (or stop is set).
  Status Wait(size_t page);
  // The page asked for in Wait() held `events`.
  void Took(uint64_t events);

 private:
  Result<int64_t> BusyThreads();

  const ThrottleOptions options_;
  std::unique_ptr<Connection> probe_;
  const std::atomic<bool>* stop_;
  std::function<void(const std::string&)> on_change_;
  std::chrono::steady_clock::time_point next_allowed_{};  // when the bucket holds the page
  size_t charged_ = 0;                                     // the page charged in Wait()
  std::chrono::steady_clock::time_point next_probe_{};
  bool throttled_ = false;
};

}  // namespace rw
