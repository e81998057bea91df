// Running the real rewind binary against a test database: its environment, its argv,
// and a one-call run that returns the exit code and stderr.
#pragma once

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <sstream>
#include <unistd.h>
#include <string>
#include <vector>

#include "stages/db/connection.h"
#include "tests/subprocess.h"

namespace rw::testing {

// The environment that points rewind at `o` and reads no config file.
inline std::vector<std::string> Env(const ConnectionOptions& o) {
  return {"REWIND_SOCKET=" + o.socket, "REWIND_HOST=" + o.host, "REWIND_USER=" + o.user,
          "REWIND_PASSWORD=" + o.password, "REWIND_DATABASE=" + o.database,
          "REWIND_CONFIG=/dev/null"};
}

// The binary under test: this build's, or $REWIND_TEST_BINARY (to run the suite against
// another build, e.g. an older one, and see which tests it fails).
inline std::vector<std::string> Rewind(std::vector<std::string> args) {
  const char* other = std::getenv("REWIND_TEST_BINARY");
  args.insert(args.begin(), other != nullptr && *other != '\0' ? other : REWIND_BINARY);
  return args;
}

// A file a paused rewind waits for (REWIND_FAULT=NAME@FILE), fresh for each use; Release()
// lets it go on.
inline std::string PauseFile(const std::string& name) {
  const std::string path = ::testing::TempDir() + "/rewind_pause_" + name;
  std::remove(path.c_str());
  return path;
}
inline void Release(const std::string& file) { std::ofstream(file) << "go"; }

// The tests' real clients: applications written with published libraries from the npm
// registry (tests/client, installed by scripts/setup), run by the node binary on the PATH.
inline const std::string kClient = std::string(REWIND_SOURCE_DIR) + "/tests/client";

inline std::string NodeBinary() {
  std::istringstream path(std::getenv("PATH") ? std::getenv("PATH") : "/usr/bin");
  for (std::string dir; std::getline(path, dir, ':');) {
    if (access((dir + "/node").c_str(), X_OK) == 0) return dir + "/node";
  }
  return "/usr/bin/node";
}

// The environment of a client pointed at `o`.
inline std::vector<std::string> ClientEnv(const ConnectionOptions& o) {
  std::vector<std::string> env = Env(o);
  env.push_back("NODE_PATH=" + kClient + "/node_modules");
  return env;
}

// `node tests/client/SCRIPT args...`
inline std::vector<std::string> Client(const std::string& script, std::vector<std::string> args) {
  args.insert(args.begin(), {NodeBinary(), kClient + "/" + script});
  return args;
}

struct Outcome {
  int code;
  std::string err;
  std::string out;
};

// Runs rewind to its end; keeps what it printed.
inline Outcome RunRewind(const std::vector<std::string>& args, std::vector<std::string> env) {
  static int calls = 0;
  const std::string out_file = ::testing::TempDir() + "/rewind_stdout_" + std::to_string(getpid()) +
                               "_" + std::to_string(++calls);
  Subprocess p(Rewind(args), env, out_file);
  const int code = p.Wait();
  std::ifstream in(out_file);
  std::string out((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::remove(out_file.c_str());
  return {code, p.err(), out};
}

}  // namespace rw::testing
