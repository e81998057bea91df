// Progress: the live progress line of a replay, on stderr.
//
// On a terminal, a line redrawn in place every 0.5 s ("\r", the line, erase to the end of
// the line): bar, %, events/s, ETA, the projector that lags most and the note, fitted to
// the terminal's width (read at every redraw) by shortening the tail first. Elsewhere (a
// log, CI, a Makefile) a plain whole line every few seconds; nothing in quiet mode.
// Progress is measured on event ids: the run reads ids (start, head], and an event counts
// as done when every projector has finished it. Once reading is over (SetPhase), the line
// shows the phase with its own elapsed time and what the reading did, never a percent or
// an ETA: nothing measures how much of the writing is left.
//
// Messages printed while the line is drawn go through PrintLine (stages/control/console.h),
// which puts them on a line of their own above it: from Start() to Stop() this Progress is
// the console's active line.
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

// Where the line is drawn: whether the stream is a terminal and how wide it is. The
// default asks the stream; tests give fixed answers.
struct ProgressScreen {
  int terminal = -1;  // 1: a terminal, 0: not one, -1: ask the stream (isatty)
  int columns = 0;    // > 0: this many columns; 0: ask the stream at every redraw
};

// The width of the terminal `out` writes to: its window size (TIOCGWINSZ) when it is a
// terminal, else $COLUMNS, else 80.
int TerminalColumns(std::FILE* out);

class Progress {
 public:
  Progress(ProgressMode mode, int64_t start_id, int64_t head_id,
           std::vector<std::string> projector_names, std::FILE* out = stderr,
           ProgressScreen screen = {});
  ~Progress();

  void Start();
  void Stop();

  // Every consumer finished the events up to `last_id`; `events` more are done.
  void Done(uint64_t events, int64_t last_id);
  // Projector `index` has applied events up to `id`.
  void Position(size_t index, int64_t id);
  // What the run is doing once reading is over (e.g. writing the read models), shown at
  // the end of the line. REQUIRES: `phase` is a string literal (or outlives this object).
  // The first call starts the write phase's clock; later ones rename the phase.
  void SetPhase(const char* phase);
  // A note shown at the end of the line until replaced ("cap 5,000 events/s",
  // "throttled: threads_running 57 > 40"); "" for none. Any thread.
  void SetNote(std::string note) {
    std::lock_guard<std::mutex> lock(note_mu_);
    note_ = std::move(note);
  }

  uint64_t events_done() const { return events_done_.load(); }
  // One progress line (no newline); `width` > 0: at most width - 1 display columns.
  // Exposed for tests.
  std::string Line(bool bar, int width = 0) const;
  // What one redraw writes: on a terminal "\r" + the line fitted to its width + erase to
  // the end of the line; elsewhere a whole line "rewind: ...\n". Exposed for tests.
  std::string Frame() const;
  // Where it draws, and whether it redraws one line in place (a terminal). For the console.
  std::FILE* stream() const { return out_; }
  bool redraws_in_place() const { return mode_ == ProgressMode::kTerminal; }

 private:
  void Loop();
  int64_t SinceStart() const;  // ns
  int Width() const;           // of the terminal, in columns

  const ProgressMode mode_;
  const int64_t start_id_, head_id_;
  const std::vector<std::string> names_;
  std::FILE* const out_;
  const ProgressScreen screen_;
  const std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
  std::atomic<uint64_t> events_done_{0};
  std::atomic<int64_t> done_id_;
  std::atomic<const char*> phase_{nullptr};
  std::atomic<int64_t> phase_ns_{-1};    // since started_, when reading ended (first SetPhase)
  std::atomic<int64_t> stopped_ns_{-1};  // since started_, when Stop() froze the clock
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
