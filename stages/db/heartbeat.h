// Heartbeat: a running rewind's sign of life, so that another rewind can tell a dead holder
// of a named lock from a live one.
//
// The server releases a GET_LOCK lock only when it notices that the connection holding it
// is gone, and it notices late when that connection was inside a statement (a LOAD DATA, a
// RENAME waiting for its lock) or when the client's machine vanished. So each run writes a
// row in checkpoint_store's rewind_runs before it takes its named locks, naming the
// connection that holds them, and beats it every kBeatIntervalSeconds from a thread and a
// connection of its own, whatever the run's own threads are doing (a long LOAD DATA, a
// cut-over, a fault point). A holder whose run has not beaten for kStaleSeconds is dead
// (table_admin::TakeLock stops its connection and takes the lock); one whose run beats is
// alive. The ten missed beats of that margin leave room for a busy server, never for a live
// run to be taken for dead on one slow statement.
//
// Lifecycle: Start() writes the row and starts beating; Stop() stops beating (idempotent)
// and keeps the row, so that the lock connection can close while the row still vouches for
// it; the destructor stops and deletes the row. A killed run's row stays and goes stale.
//
// Thread safety: Start, Stop and the destructor from one thread; the beating thread reads
// only the lock connection's thread_id() (atomic) and the process's connection ids.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "stages/db/checkpoint_store.h"
#include "stages/db/connection.h"

namespace rw {

// How often a run beats, and how long without a beat makes it dead (by the server's clock).
inline constexpr double kBeatIntervalSeconds = 1;
inline constexpr double kStaleSeconds = 10;

class Heartbeat {
 public:
  // Writes the run's row, `locks` being the connection that holds (or is about to take) its
  // named locks, and starts beating on a connection of its own opened with `options`.
  // REQUIRES: the bookkeeping tables exist (checkpoint_store::Ensure); `locks` outlives Stop().
  static Result<std::unique_ptr<Heartbeat>> Start(const ConnectionOptions& options,
                                                  const Connection& locks,
                                                  const std::string& run_id,
                                                  const std::string& command);
  ~Heartbeat();
  Heartbeat(const Heartbeat&) = delete;
  Heartbeat& operator=(const Heartbeat&) = delete;

  void Stop();
  uint64_t row_id() const { return row_id_; }

 private:
  Heartbeat(std::unique_ptr<Connection> c, const Connection& locks, uint64_t row_id);
  void BeatUntilStopped();

  std::unique_ptr<Connection> c_;
  const Connection& locks_;
  const uint64_t row_id_;
  std::mutex mu_;
  std::condition_variable wake_;
  bool stop_ = false;
  std::thread thread_;
};

// Every connection id of this process, comma-separated (what a heartbeat row records).
std::string OwnConnectionIds();

}  // namespace rw
