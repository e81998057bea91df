// Progress: the live progress line of a replay, on stderr.
//
// On a terminal, a line redrawn in place every 0.5 s (bar, %, events/s, ETA and the
// projector that lags most); elsewhere (a log, CI, a Makefile) a plain line every few
// seconds; nothing in quiet mode. Progress is measured on event ids: the run reads ids
// (start, head], and an event counts as done when every projector has finished it.
//
// Thread safety: Done() and Position() may be called from any thread; Start()/Stop()
// from the thread that owns the object. Stop() is idempotent.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace rw {

enum class ProgressMode { kAuto, kTerminal, kPlain, kQuiet };

class Progress {
 public:
  Progress(ProgressMode mode, int64_t start_id, int64_t head_id,
           std::vector<std::string> projector_names, std::FILE* out = stderr);
  ~Progress();

  void Start();
  void Stop();

  // Every consumer finished the events up to `last_id`; `events` more are done.
  void Done(uint64_t events, int64_t last_id);
  // Projector `index` has applied events up to `id`.
  void Position(size_t index, int64_t id);
  // What the run is doing once reading is over (e.g. writing the read models), shown at
  // the end of the line. REQUIRES: `phase` is a string literal (or outlives this object).
  void SetPhase(const char* phase) { phase_.store(phase); }
  // A note shown at the end of the line until replaced ("cap 5,000 events/s",
  // "throttled: threads_running 57 > 40"); "" for none. Any thread.
  void SetNote(std::string note) {
    std::lock_guard<std::mutex> lock(note_mu_);
    note_ = std::move(note);
  }

  uint64_t events_done() const { return events_done_.load(); }
  // One progress line (no newline); exposed for tests.
  std::string Line(bool bar) const;

 private:
  void Loop();

  const ProgressMode mode_;
  const int64_t start_id_, head_id_;
  const std::vector<std::string> names_;
  std::FILE* const out_;
  const std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
  std::atomic<uint64_t> events_done_{0};
  std::atomic<int64_t> done_id_;
  std::atomic<const char*> phase_{nullptr};
  std::unique_ptr<std::atomic<int64_t>[]> positions_;
  mutable std::mutex note_mu_;
  std::string note_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::thread thread_;
};

// "1,234,567"
std::string WithThousands(uint64_t n);

}  // namespace rw
