#include "stages/control/progress.h"

#include "stages/control/console.h"

#include <fmt/core.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string_view>

namespace rw {
namespace {

// The display columns of one code point: 0 for combining marks and zero-width spaces, 2
// for East Asian wide and fullwidth characters and emoji, 1 otherwise (a subset of
// wcwidth() that needs no locale).
int CodePointColumns(char32_t c) {
  struct Range {
    char32_t first, last;
  };
  static constexpr Range kZero[] = {{0x0300, 0x036F}, {0x1AB0, 0x1AFF}, {0x1DC0, 0x1DFF},
                                    {0x200B, 0x200F}, {0x20D0, 0x20FF}, {0xFE00, 0xFE0F},
                                    {0xFE20, 0xFE2F}};
  static constexpr Range kWide[] = {
      {0x1100, 0x115F}, {0x2E80, 0x303E},   {0x3041, 0x33FF},   {0x3400, 0x4DBF},  {0x4E00, 0x9FFF},
      {0xA000, 0xA4CF}, {0xAC00, 0xD7A3},   {0xF900, 0xFAFF},   {0xFE30, 0xFE4F},  {0xFF00, 0xFF60},
      {0xFFE0, 0xFFE6}, {0x1F300, 0x1F64F}, {0x1F900, 0x1F9FF}, {0x20000, 0x3FFFD}};
  const auto in = [c](const auto& ranges) {
    return std::any_of(std::begin(ranges), std::end(ranges),
                       [c](Range r) { return c >= r.first && c <= r.last; });
  };
  return in(kZero) ? 0 : in(kWide) ? 2 : 1;
}

// The length in bytes of the UTF-8 character at s[i] and its columns; a byte that starts
// no valid character counts as one column on its own (terminals show it as one).
size_t NextCharacter(std::string_view s, size_t i, int* columns) {
  const auto b = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = b(i);
  size_t len = c < 0x80             ? 1
               : (c & 0xE0) == 0xC0 ? 2
               : (c & 0xF0) == 0xE0 ? 3
               : (c & 0xF8) == 0xF0 ? 4
                                    : 0;
  if (len == 0 || i + len > s.size()) {
    *columns = 1;
    return 1;
  }
  char32_t cp = len == 1 ? c : c & (0x7F >> len);
  for (size_t k = 1; k < len; ++k) {
    if ((b(i + k) & 0xC0) != 0x80) {
      *columns = 1;
      return 1;
    }
    cp = (cp << 6) | (b(i + k) & 0x3F);
  }
  *columns = CodePointColumns(cp);
  return len;
}

size_t Columns(std::string_view s) {
  size_t n = 0;
  for (size_t i = 0; i < s.size();) {
    int c = 0;
    i += NextCharacter(s, i, &c);
    n += static_cast<size_t>(c);
  }
  return n;
}

// `s` in at most `columns` display columns: whole, or cut at a character boundary and
// ended with "…".
std::string Shorten(std::string_view s, size_t columns) {
  if (Columns(s) <= columns) return std::string(s);
  if (columns == 0) return "";
  size_t used = 0, i = 0;
  while (i < s.size()) {
    int c = 0;
    const size_t len = NextCharacter(s, i, &c);
    if (used + static_cast<size_t>(c) > columns - 1) break;
    used += static_cast<size_t>(c);
    i += len;
  }
  return std::string(s.substr(0, i)) + "\u2026";
}

// "H:MM:SS"; `round_up`: a part of a second counts as one (an ETA).
std::string Clock(double seconds, bool round_up = false) {
  seconds = std::max(seconds, 0.0);
  const auto s = static_cast<int64_t>(round_up ? std::ceil(seconds) : seconds);
  return fmt::format("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60);
}

// The pieces of a progress line, from the most to the least kept: the head (percent,
// rate, ETA; or the write phase's clock and text) always; then the bar, the event count,
// the note and the per-read-model detail, dropped or shortened in the reverse order when
// the line must fit.
struct Pieces {
  std::string percent;  // the head before the count (the whole head in the write phase)
  std::string events;   // "  1,234 events" (may be empty)
  std::string rest;     // the head after the count: rate and ETA
  bool bar = false;
  double fraction = 0;
  std::string detail;            // "slowest: ..." (may be empty)
  std::string detail_short;      // the detail's shorter form, tried before cutting it
  std::string note;              // without its brackets (may be empty)
  bool note_goes_first = false;  // shortened before the detail, not after
};

constexpr size_t kBarCells = 24;
constexpr size_t kMinBarCells = 8;
constexpr size_t kMinShortened = 10;  // columns a shortened detail or note keeps at least

std::string Compose(const Pieces& p, size_t bar_cells, bool events, const std::string& detail,
                    const std::string& note) {
  std::string line;
  if (bar_cells > 0) {
    const auto filled = static_cast<size_t>(p.fraction * static_cast<double>(bar_cells));
    // Formatted: GCC 12 mis-warns (-Wrestrict, its bug 105329) on "[" + std::string.
    line = fmt::format("[{}{}] ", std::string(filled, '#'), std::string(bar_cells - filled, '.'));
  }
  line += p.percent;
  if (events) line += p.events;
  line += p.rest;
  if (!detail.empty()) line += "  " + detail;
  if (!note.empty()) line += "  [" + note + "]";
  return line;
}

// The line in at most `limit` columns: the detail is shortened, then dropped; then the
// note (the other way round with note_goes_first); then the bar narrows and goes; then
// the count; the head is cut only when nothing else is left.
std::string Fit(const Pieces& p, size_t limit) {
  const size_t bar = p.bar ? kBarCells : 0;
  std::string line = Compose(p, bar, true, p.detail, p.note);
  if (Columns(line) <= limit) return line;
  // The tail: the piece that goes first is shortened (the other kept whole), then
  // dropped; then the other is shortened.
  for (int step = 0; step < 2; ++step) {
    const bool note = (step == 0) == p.note_goes_first;
    const std::string& piece = note ? p.note : p.detail;
    if (piece.empty()) continue;
    const std::string other = step == 1 ? "" : note ? p.detail : p.note;
    const auto with = [&](const std::string& text) {
      return note ? Compose(p, bar, true, other, text) : Compose(p, bar, true, text, other);
    };
    if (line = with(piece); Columns(line) <= limit) return line;
    if (!note && !p.detail_short.empty()) {
      if (line = with(p.detail_short); Columns(line) <= limit) return line;
    }
    const size_t without = Columns(with("")), frame = note ? 4 : 2;  // "  [" "]" or "  "
    if (without + frame + kMinShortened <= limit)
      return with(Shorten(piece, limit - without - frame));
  }
  line = Compose(p, bar, true, "", "");
  if (Columns(line) <= limit) return line;
  if (bar > 0) {
    const size_t without = Columns(Compose(p, 0, true, "", ""));
    if (without + 3 + kMinBarCells <= limit) {
      return Compose(p, std::min(bar, limit - without - 3), true, "", "");
    }
  }
  line = Compose(p, 0, true, "", "");
  if (Columns(line) <= limit) return line;
  return Shorten(Compose(p, 0, false, "", ""), limit);
}

}  // namespace

std::string WithThousands(uint64_t n) {
  std::string digits = std::to_string(n), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

int TerminalColumns(std::FILE* out) {
  const int fd = out ? fileno(out) : -1;
  winsize ws{};
  if (fd >= 0 && isatty(fd) && ioctl(fd, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) return ws.ws_col;
  if (const char* env = std::getenv("COLUMNS")) {
    int n = 0;
    const char* end = env + std::strlen(env);
    const auto [at, ec] = std::from_chars(env, end, n);
    if (ec == std::errc() && at == end && n > 0) return n;
  }
  return 80;
}

Progress::Progress(ProgressMode mode, int64_t start_id, int64_t head_id,
                   std::vector<std::string> projector_names, std::FILE* out, ProgressScreen screen)
    : mode_(mode != ProgressMode::kAuto ? mode
            : (screen.terminal >= 0 ? screen.terminal == 1 : isatty(fileno(out)) == 1)
                ? ProgressMode::kTerminal
                : ProgressMode::kPlain),
      start_id_(start_id),
      head_id_(head_id),
      names_(std::move(projector_names)),
      out_(out),
      screen_(screen),
      done_id_(start_id),
      positions_(new std::atomic<int64_t>[names_.size()]) {
  for (size_t i = 0; i < names_.size(); ++i) positions_[i] = start_id;
}

Progress::~Progress() { Stop(); }

void Progress::Start() {
  if (mode_ == ProgressMode::kQuiet || thread_.joinable()) return;
  {
    std::lock_guard<std::mutex> console(console_internal::Mutex());
    console_internal::ActiveLocked() = this;
  }
  thread_ = std::thread([this] { Loop(); });
}

void Progress::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  int64_t running = -1;
  stopped_ns_.compare_exchange_strong(running, SinceStart());
  if (thread_.joinable()) {
    thread_.join();
    // The last line, and no message drawn after it will redraw this one.
    std::lock_guard<std::mutex> console(console_internal::Mutex());
    if (console_internal::ActiveLocked() == this) console_internal::ActiveLocked() = nullptr;
    if (mode_ == ProgressMode::kTerminal) {
      std::fputs(fmt::format("\r{}\033[K\n", Line(false, Width())).c_str(), out_);
      std::fflush(out_);
    }
  }
}

void Progress::SetPhase(const char* phase) {
  int64_t unset = -1;
  phase_ns_.compare_exchange_strong(unset, SinceStart());
  phase_.store(phase);
}

void Progress::Done(uint64_t events, int64_t last_id) {
  events_done_.fetch_add(events, std::memory_order_relaxed);
  int64_t prev = done_id_.load(std::memory_order_relaxed);
  while (prev < last_id && !done_id_.compare_exchange_weak(prev, last_id)) {
  }
}

void Progress::Position(size_t index, int64_t id) {
  positions_[index].store(id, std::memory_order_relaxed);
}

int64_t Progress::SinceStart() const {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() -
                                                              started_)
      .count();
}

int Progress::Width() const {
  return screen_.columns > 0 ? screen_.columns : TerminalColumns(out_);
}

std::string Progress::Line(bool bar, int width) const {
  const int64_t stopped = stopped_ns_.load();
  const double now = static_cast<double>(stopped >= 0 ? stopped : SinceStart()) / 1e9;
  const uint64_t done = events_done_.load();
  Pieces p;
  if (const char* phase = phase_.load()) {
    // Reading is over: what comes now (writing the read models) has no measure of its
    // own here, so it shows its elapsed time, and the reading what it did; no percent
    // and no ETA that would pose as the end of the run.
    const double read_for = static_cast<double>(phase_ns_.load()) / 1e9;
    const double rate = read_for > 0 ? static_cast<double>(done) / read_for : 0;
    // The clock first: when the line must be cut, the phase's text goes, not its time.
    p.percent = fmt::format("write phase {}  {}", Clock(now - read_for), phase);
    p.detail = fmt::format("{} events read in {}, {} ev/s", WithThousands(done), Clock(read_for),
                           WithThousands(static_cast<uint64_t>(rate)));
    p.detail_short = fmt::format("{} events read, {} ev/s", WithThousands(done),
                                 WithThousands(static_cast<uint64_t>(rate)));
    p.note_goes_first = true;  // a cap or a throttle concerns the reading, which is over
  } else {
    const int64_t at = done_id_.load();
    const double span = static_cast<double>(std::max<int64_t>(head_id_ - start_id_, 1));
    const double fraction = std::clamp(static_cast<double>(at - start_id_) / span, 0.0, 1.0);
    const double rate = now > 0 ? static_cast<double>(done) / now : 0;
    std::string eta = "--:--";
    if (fraction > 0.001 && fraction < 1) {
      eta = Clock(now / fraction * (1 - fraction), /*round_up=*/true);
    } else if (fraction >= 1) {
      eta = "0:00:00";
    }
    p.bar = bar;
    p.fraction = fraction;
    p.percent = fmt::format("{:5.1f}%", fraction * 100);
    p.events = fmt::format("  {} events", WithThousands(done));
    p.rest = fmt::format("  {} ev/s  ETA {}", WithThousands(static_cast<uint64_t>(rate)), eta);
    if (!names_.empty()) {
      size_t slowest = 0;
      for (size_t i = 1; i < names_.size(); ++i) {
        if (positions_[i].load() < positions_[slowest].load()) slowest = i;
      }
      p.detail = fmt::format(
          "slowest: {} at id {}", names_[slowest],
          WithThousands(static_cast<uint64_t>(std::max<int64_t>(positions_[slowest].load(), 0))));
      p.detail_short = "slowest: " + names_[slowest];
    }
  }
  {
    std::lock_guard<std::mutex> lock(note_mu_);
    p.note = note_;
  }
  if (width <= 0) return Compose(p, p.bar ? kBarCells : 0, true, p.detail, p.note);
  return Fit(p, static_cast<size_t>(width - 1));
}

std::string Progress::Frame() const {
  if (mode_ == ProgressMode::kTerminal) return fmt::format("\r{}\033[K", Line(true, Width()));
  return "rewind: " + Line(false) + "\n";
}

void Progress::Loop() {
  const auto period = mode_ == ProgressMode::kTerminal ? std::chrono::milliseconds(500)
                                                       : std::chrono::milliseconds(5000);
  std::unique_lock<std::mutex> lock(mu_);
  while (!cv_.wait_for(lock, period, [this] { return stopping_; })) {
    std::lock_guard<std::mutex> console(console_internal::Mutex());
    std::fputs(Frame().c_str(), out_);
    std::fflush(out_);
  }
}

}  // namespace rw
