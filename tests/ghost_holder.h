// A connection that holds one of rewind's named locks the way a killed run's connection
// does until the server notices it is gone: inside a statement, with (or without) the
// heartbeat row the dead run left. For the tests of table_admin::TakeLock.
#pragma once

#include <fmt/core.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <thread>

#include "stages/db/checkpoint_store.h"
#include "tests/test_db.h"

namespace rw::testing {

// A connection that holds `lock` inside a long statement, as a killed run's connection does
// until the server notices: the statement runs on a thread of its own; Join() says how it
// ended ("killed" when rewind stopped the connection).
class GhostHolder {
 public:
  GhostHolder(const ConnectionOptions& o, const std::string& lock)
      : c_(Connect(o)), watcher_(Connect(o)), id_(c_->thread_id()) {
    // A run killed just before lets its lock go when the server notices its connection is
    // gone, which may take a moment: wait for that (at most a minute), never for a fixed time.
    EXPECT_EQ(Count(*c_, fmt::format("SELECT GET_LOCK({}, 60)", c_->Quote(lock))), 1);
  }
  ~GhostHolder() {
    if (thread_.joinable()) Join();
  }
  // The heartbeat row its run (of `command`) would have left, last beaten `age_seconds` ago.
  void WriteHeartbeat(double age_seconds, const std::string& command = "replay") {
    RunRecord run;
    run.run_id = "ghost-run";
    run.command = command;
    run.host = "ghost-host";
    run.pid = 4242;
    run.lock_connection = c_->thread_id();
    run.connections = std::to_string(c_->thread_id());
    Result<uint64_t> id = checkpoint_store::StartRun(*c_, run);
    ASSERT_TRUE(id.ok()) << id.status().message();
    ASSERT_TRUE(c_->Execute(fmt::format("UPDATE rewind_runs SET beats = 7, beat_at = NOW(6) - "
                                        "INTERVAL {} MICROSECOND WHERE id = {}",
                                        static_cast<int64_t>(age_seconds * 1e6), *id))
                    .ok());
  }
  // Enters a statement that does not end by itself within the test.
  void EnterAStatement() {
    thread_ = std::thread([this] {
      Result<std::optional<std::string>> slept = c_->QueryValue("SELECT SLEEP(600)");
      // SLEEP returns 1 when interrupted; a killed connection errs.
      killed_ = !slept.ok() || (*slept && **slept == "1");
    });
  }
  // True when rewind had ended its statement (or was ending it: the server shows "Killed");
  // otherwise the test ends it, so that a failing test never waits for the statement.
  bool Join() {
    const bool stopped = Count(*watcher_, fmt::format("SELECT COUNT(*) FROM information_schema."
                                                      "PROCESSLIST WHERE ID = {} AND COMMAND <> "
                                                      "'Killed'",
                                                      id_)) == 0;
    if (!stopped) {
      EXPECT_TRUE(watcher_->Execute(fmt::format("KILL {}", id_)).ok());
    }
    thread_.join();
    return stopped && killed_;
  }
  unsigned long id() const { return id_; }

 private:
  std::unique_ptr<Connection> c_, watcher_;
  const unsigned long id_;
  std::thread thread_;
  bool killed_ = false;
};

}  // namespace rw::testing
