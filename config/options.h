// Options: everything a rewind command can be told, and how it is read.
//
// Precedence, lowest first: built-in defaults (below, with their trade-offs), the config
// file (--config FILE, else $REWIND_CONFIG, else ./rewind.conf or ./config/rewind.conf
// when present), environment variables (REWIND_HOST, REWIND_PORT, REWIND_SOCKET,
// REWIND_USER, REWIND_PASSWORD, REWIND_DATABASE, and the mariadb client's MYSQL_HOST,
// MYSQL_TCP_PORT, MYSQL_UNIX_PORT, MYSQL_PWD), then command-line flags.
//
// Pure data and parsing; thread-compatible.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "projectors/status.h"
#include "stages/connection.h"
#include "stages/progress.h"
#include "stages/reader.h"

namespace rw {

struct ReplayOptions {
  ConnectionOptions connection;
  EventTableOptions events;
  std::vector<std::string> projectors;  // names; every projector when `all`
  bool all = false;
  // Continue an interrupted rebuild from its checkpoints instead of starting over.
  bool resume = false;
  // Stop at the first event that cannot be applied, instead of recording it and going on.
  bool stop_on_failure = false;
  // Events per read batch: larger amortises per-batch costs, costs memory in flight.
  size_t batch_size = 20000;
  // Batches admitted into the pipeline at once: the memory bound (x batch_size x payload).
  size_t max_in_flight = 6;
  // A projector commits at least every this many events: what a crash can cost to redo.
  uint64_t flush_every_events = 2'000'000;
  // ...and whenever it holds this many distinct pending rows: bounds memory by keys.
  size_t flush_max_rows = 1'000'000;
  // After the swap, keep applying new events to the live tables until stopped.
  bool follow = false;
  // How often follow mode looks for new events, in seconds.
  double poll_seconds = 1.0;
  ProgressMode progress = ProgressMode::kAuto;
  std::string stats_json;  // write the final summary as JSON to this file
  bool json = false;       // `status`: print JSON instead of text
};

struct CommandLine {
  std::string command;  // "replay", "list", "status", "verify", "help"
  ReplayOptions options;
};

using Environment = std::function<std::optional<std::string>(const std::string&)>;

// The process environment (getenv).
Environment SystemEnvironment();

// Parses argv (after the program name). `env` looks up environment variables.
Result<CommandLine> ParseCommandLine(const std::vector<std::string>& args, const Environment& env);

std::string HelpText();

}  // namespace rw
