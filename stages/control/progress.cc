#include "stages/control/progress.h"

#include <fmt/core.h>
#include <unistd.h>

#include <algorithm>

namespace rw {

std::string WithThousands(uint64_t n) {
  std::string digits = std::to_string(n), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

Progress::Progress(ProgressMode mode, int64_t start_id, int64_t head_id,
                   std::vector<std::string> projector_names, std::FILE* out)
    : mode_(mode == ProgressMode::kAuto
                ? (isatty(fileno(out)) ? ProgressMode::kTerminal : ProgressMode::kPlain)
                : mode),
      start_id_(start_id),
      head_id_(head_id),
      names_(std::move(projector_names)),
      out_(out),
      done_id_(start_id),
      positions_(new std::atomic<int64_t>[names_.size()]) {
  for (size_t i = 0; i < names_.size(); ++i) positions_[i] = start_id;
}

Progress::~Progress() { Stop(); }

void Progress::Start() {
  if (mode_ == ProgressMode::kQuiet || thread_.joinable()) return;
  thread_ = std::thread([this] { Loop(); });
}

void Progress::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) {
    thread_.join();
    if (mode_ == ProgressMode::kTerminal) {
      std::fputs(("\r\033[K" + Line(false) + "\n").c_str(), out_);
    }
  }
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

std::string Progress::Line(bool bar) const {
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
  const uint64_t done = events_done_.load();
  const int64_t at = done_id_.load();
  const double span = static_cast<double>(std::max<int64_t>(head_id_ - start_id_, 1));
  const double fraction = std::clamp(static_cast<double>(at - start_id_) / span, 0.0, 1.0);
  const double rate = elapsed > 0 ? static_cast<double>(done) / elapsed : 0;
  std::string eta = "--:--";
  if (fraction > 0.001 && fraction < 1) {
    const auto left = static_cast<int64_t>(elapsed / fraction * (1 - fraction));
    eta = fmt::format("{}:{:02}:{:02}", left / 3600, left / 60 % 60, left % 60);
  } else if (fraction >= 1) {
    eta = "0:00:00";
  }
  std::string line;
  if (bar) {
    constexpr int kWidth = 24;
    const int filled = static_cast<int>(fraction * kWidth);
    line = "[" + std::string(filled, '#') + std::string(kWidth - filled, '.') + "] ";
  }
  line += fmt::format("{:5.1f}%  {} events  {} ev/s  ETA {}", fraction * 100, WithThousands(done),
                      WithThousands(static_cast<uint64_t>(rate)), eta);
  if (const char* phase = phase_.load()) {
    line += fmt::format("  {}", phase);
  } else if (!names_.empty()) {
    size_t slowest = 0;
    for (size_t i = 1; i < names_.size(); ++i) {
      if (positions_[i].load() < positions_[slowest].load()) slowest = i;
    }
    line += fmt::format("  slowest: {} at id {}", names_[slowest],
                        WithThousands(static_cast<uint64_t>(std::max<int64_t>(positions_[slowest].load(), 0))));
  }
  std::lock_guard<std::mutex> lock(note_mu_);
  if (!note_.empty()) line += "  [" + note_ + "]";
  return line;
}

void Progress::Loop() {
  const auto period = mode_ == ProgressMode::kTerminal ? std::chrono::milliseconds(500)
                                                       : std::chrono::milliseconds(5000);
  std::unique_lock<std::mutex> lock(mu_);
  while (!cv_.wait_for(lock, period, [this] { return stopping_; })) {
    if (mode_ == ProgressMode::kTerminal) {
      std::fputs(("\r\033[K" + Line(true)).c_str(), out_);
    } else {
      std::fputs(("rewind: " + Line(false) + "\n").c_str(), out_);
    }
    std::fflush(out_);
  }
}

}  // namespace rw
