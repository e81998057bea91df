// What the perf tools share: the connection their remaining arguments name (rewind
// replay's connection options, with rewind's config file and environment).
#pragma once

#include <fmt/core.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "config/options.h"
#include "stages/db/connection.h"

namespace rw {

struct PerfTool {
  CommandLine command_line;
  std::unique_ptr<Connection> connection;
};

// Parses `rest` ("replay" and its options) and connects. On failure prints "<name>: why"
// and sets `exit_code`: 2 for bad arguments, 1 for a connection that failed.
inline std::optional<PerfTool> OpenPerfTool(const char* name, const std::vector<std::string>& rest, int& exit_code) {
  Result<CommandLine> cl = ParseCommandLine(rest, SystemEnvironment());
  if (!cl.ok()) {
    fmt::print(stderr, "{}: {}\n", name, cl.status().message());
    exit_code = 2;
    return std::nullopt;
  }
  Result<std::unique_ptr<Connection>> conn = Connection::Open(cl->options.connection);
  if (!conn.ok()) {
    fmt::print(stderr, "{}: {}\n", name, conn.status().message());
    exit_code = 1;
    return std::nullopt;
  }
  return PerfTool{std::move(*cl), std::move(*conn)};
}

}  // namespace rw
