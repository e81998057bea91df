// Running the real rewind binary against a test database: its environment, its argv,
// and a one-call run that returns the exit code and stderr.
#pragma once

#include <string>
#include <vector>

#include "stages/connection.h"
#include "tests/subprocess.h"

namespace rw::testing {

// The environment that points rewind at `o` and reads no config file.
inline std::vector<std::string> Env(const ConnectionOptions& o) {
  return {"REWIND_SOCKET=" + o.socket, "REWIND_HOST=" + o.host, "REWIND_USER=" + o.user,
          "REWIND_PASSWORD=" + o.password, "REWIND_DATABASE=" + o.database,
          "REWIND_CONFIG=/dev/null"};
}

inline std::vector<std::string> Rewind(std::vector<std::string> args) {
  args.insert(args.begin(), REWIND_BINARY);
  return args;
}

struct Outcome {
  int code;
  std::string err;
};

// Runs rewind to its end.
inline Outcome RunRewind(const std::vector<std::string>& args, std::vector<std::string> env) {
  Subprocess p(Rewind(args), env);
  const int code = p.Wait();
  return {code, p.err()};
}

}  // namespace rw::testing
