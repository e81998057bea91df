// The private primary and replicas of `scripts/db pair start` (a primary with the binary log
// in row format, server_id 11; a replica by file and position; a second by GTID), for the
// tests that need a binary log or a replica (replica_test, binlog_test: the `replica_pair`
// fixture starts them once and stops them after the last).
#pragma once

#include <map>
#include <sstream>
#include <string>

#include "stages/db/connection.h"
#include "tests/subprocess.h"

namespace rw::testing {

// The primary (its socket: the tests' and rewind's connection) and the replicas (TCP).
struct Pair {
  ConnectionOptions primary;
  ConnectionOptions replica;  // over TCP
  std::string replica_socket;
  ConnectionOptions replica2;  // the second replica, over TCP (by GTID: a kill -9 loses nothing)
  std::string replica2_pid_file;
  unsigned primary_port = 0;  // the primary over TCP
};

// Starts the pair (or finds it running) and fills `pair`. Sets `skip` when no MariaDB server
// can be started on this machine, `failed` when starting failed otherwise.
inline void StartPair(Pair& pair, std::string& skip, std::string& failed) {
  const std::string script = std::string(REWIND_SOURCE_DIR) + "/scripts/db";
  Subprocess start({script, "pair", "start"}, {});
  const int code = start.Wait();
  if (code == 77) {
    skip = "no MariaDB server could be started on this machine for the primary and replica: " + start.err();
    return;
  }
  if (code != 0) {
    failed = "scripts/db pair start failed: " + start.err();
    return;
  }
  const std::string env_file = ::testing::TempDir() + "/rewind_pair_env";
  Subprocess env({script, "pair", "env"}, {}, env_file);
  if (env.Wait() != 0) {
    failed = "scripts/db pair env failed: " + env.err();
    return;
  }
  std::istringstream words(ReadFile(env_file));
  std::map<std::string, std::string> vars;
  for (std::string w; words >> w;) {
    const auto eq = w.find('=');
    if (eq != std::string::npos) vars[w.substr(0, eq)] = w.substr(eq + 1);
  }
  pair.primary.socket = vars["REWIND_PAIR_PRIMARY_SOCKET"];
  pair.primary.user = pair.replica.user = vars["REWIND_PAIR_USER"];
  pair.primary.password = pair.replica.password = vars["REWIND_PAIR_PASSWORD"];
  pair.replica.host = "127.0.0.1";
  pair.replica.port = static_cast<unsigned>(std::stoul(vars["REWIND_PAIR_REPLICA_PORT"]));
  pair.replica_socket = vars["REWIND_PAIR_REPLICA_SOCKET"];
  pair.replica2 = pair.replica;
  pair.replica2.port = static_cast<unsigned>(std::stoul(vars["REWIND_PAIR_REPLICA2_PORT"]));
  pair.replica2_pid_file = vars["REWIND_PAIR_REPLICA2_PID_FILE"];
  if (vars.count("REWIND_PAIR_PRIMARY_PORT")) {
    pair.primary_port = static_cast<unsigned>(std::stoul(vars["REWIND_PAIR_PRIMARY_PORT"]));
  }
}

}  // namespace rw::testing
