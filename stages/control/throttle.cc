#include "stages/control/throttle.h"

#include "stages/control/sleep.h"

#include <fmt/core.h>

#include <algorithm>
#include <thread>

namespace rw {

namespace {
std::chrono::steady_clock::duration Cost(uint64_t events, uint64_t per_second) {
  return std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double>(static_cast<double>(events) / static_cast<double>(per_second)));
}
}  // namespace

Throttle::Throttle(const ThrottleOptions& options, std::unique_ptr<Connection> probe,
                   const std::atomic<bool>* stop, std::function<void(const std::string&)> on_change)
    : options_(options), probe_(std::move(probe)), stop_(stop), on_change_(std::move(on_change)) {}

size_t Throttle::PageSize(size_t batch_size) const {
  if (options_.max_events_per_second == 0) return batch_size;
  const uint64_t quarter = std::max<uint64_t>(1, options_.max_events_per_second / 4);
  return static_cast<size_t>(std::min<uint64_t>(batch_size, quarter));
}

void Throttle::Took(uint64_t events) {
  if (options_.max_events_per_second == 0 || events >= charged_) return;
  next_allowed_ -= Cost(charged_ - events, options_.max_events_per_second);  // a short page
}

Result<int64_t> Throttle::BusyThreads() {
  std::string ours;
  for (unsigned long id : Connection::OwnThreadIds()) ours += fmt::format("{}{}", ours.empty() ? "" : ",", id);
  Result<std::optional<std::string>> v = probe_->QueryValue(fmt::format(
      "SELECT (SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME = "
      "'THREADS_RUNNING') - (SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE ID IN ({}) "
      "AND COMMAND <> 'Sleep')",
      ours.empty() ? "0" : ours));
  if (!v.ok()) return v.status();
  return *v ? std::stoll(**v) : 0;
}

Status Throttle::Wait(size_t page) {
  if (options_.max_threads_running > 0 && probe_ != nullptr) {
    for (;;) {
      const auto now = std::chrono::steady_clock::now();
      if (!throttled_ && now < next_probe_) break;  // looked less than a second ago
      Result<int64_t> busy = BusyThreads();
      if (!busy.ok()) return busy.status().With("reading Threads_running for --throttle-threads-running");
      next_probe_ = now + std::chrono::seconds(1);
      const bool over = *busy > static_cast<int64_t>(options_.max_threads_running);
      if (over) {
        on_change_(fmt::format("throttled: threads_running {} > {}", *busy, options_.max_threads_running));
      } else if (throttled_) {
        on_change_("");
      }
      throttled_ = over;
      if (!over) break;
      if (!SleepUnlessStopped(std::chrono::seconds(1), stop_)) return Status::Ok();
    }
  }
  if (options_.max_events_per_second == 0) return Status::Ok();
  charged_ = page;
  next_allowed_ = std::max(next_allowed_, std::chrono::steady_clock::now()) +
                  Cost(page, options_.max_events_per_second);
  (void)SleepUnlessStopped(next_allowed_ - std::chrono::steady_clock::now(), stop_);
  return Status::Ok();
}

}  // namespace rw
