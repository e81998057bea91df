// The one stop-aware sleep: every wait of rewind that a signal must cut short (a follow's
// poll, the throttle's pauses) sleeps here, waking every 10 ms to look at the stop flag.
// Thread-safe.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>

namespace rw {

// Sleeps for `d`, or less when `stop` (may be null) becomes true. True when it slept the
// whole time, false when stopped.
inline bool SleepUnlessStopped(std::chrono::steady_clock::duration d, const std::atomic<bool>* stop) {
  const auto until = std::chrono::steady_clock::now() + d;
  for (;;) {
    if (stop != nullptr && stop->load()) return false;
    const auto left = until - std::chrono::steady_clock::now();
    if (left <= std::chrono::steady_clock::duration::zero()) return true;
    std::this_thread::sleep_for(std::min<std::chrono::steady_clock::duration>(left, std::chrono::milliseconds(10)));
  }
}

}  // namespace rw
