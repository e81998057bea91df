#include "stages/db/heartbeat.h"

#include <fmt/core.h>
#include <unistd.h>

#include <chrono>

namespace rw {

std::string OwnConnectionIds() {
  std::string out;
  for (unsigned long id : Connection::OwnThreadIds())
    out += fmt::format("{}{}", out.empty() ? "" : ",", id);
  return out;
}

Result<std::unique_ptr<Heartbeat>> Heartbeat::Start(const ConnectionOptions& options,
                                                    const Connection& locks,
                                                    const std::string& run_id,
                                                    const std::string& command) {
  Result<std::unique_ptr<Connection>> c = Connection::Open(options);
  if (!c.ok()) return c.status();
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
  RunRecord run;
  run.run_id = run_id;
  run.command = command;
  run.host = host;
  run.pid = static_cast<uint64_t>(getpid());
  run.lock_connection = locks.thread_id();
  run.connections = OwnConnectionIds();
  Result<uint64_t> id = checkpoint_store::StartRun(**c, run);
  if (!id.ok()) return id.status().With("writing this run's heartbeat row");
  return std::unique_ptr<Heartbeat>(new Heartbeat(std::move(*c), locks, *id));
}

Heartbeat::Heartbeat(std::unique_ptr<Connection> c, const Connection& locks, uint64_t row_id)
    : c_(std::move(c)), locks_(locks), row_id_(row_id) {
  thread_ = std::thread([this] { BeatUntilStopped(); });
}

void Heartbeat::BeatUntilStopped() {
  const auto interval = std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double>(kBeatIntervalSeconds));
  std::unique_lock<std::mutex> lock(mu_);
  while (!wake_.wait_for(lock, interval, [this] { return stop_; })) {
    lock.unlock();
    Status s = checkpoint_store::Beat(*c_, row_id_, locks_.thread_id(), OwnConnectionIds());
    // A lost connection is opened again for the next beat; a miss or two is within the
    // margin of kStaleSeconds.
    if (s.code() == Status::Code::kConnection) (void)c_->Reconnect();
    lock.lock();
  }
}

void Heartbeat::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

Heartbeat::~Heartbeat() {
  Stop();
  (void)checkpoint_store::EndRun(*c_, row_id_);
}

}  // namespace rw
