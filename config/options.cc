#include "config/options.h"

#include <fmt/core.h>

#include <charconv>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>

namespace rw {
namespace {

std::string Trim(std::string s) {
  const auto first = s.find_first_not_of(" \t\r");
  if (first == std::string::npos) return "";
  return s.substr(first, s.find_last_not_of(" \t\r") - first + 1);
}

template <typename T>
Status ParseNumber(const std::string& key, const std::string& text, T& out) {
  T v{};
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || ptr != text.data() + text.size()) {
    return Status::InvalidInput(fmt::format("--{} expects a number, got '{}'", key, text));
  }
  out = v;
  return Status::Ok();
}

// Applies one `key = value` setting (a long flag without its dashes).
Status Apply(ReplayOptions& o, const std::string& key, const std::string& value) {
  ConnectionOptions& c = o.connection;
  EventTableOptions& e = o.events;
  if (key == "host") c.host = value;
  else if (key == "port") return ParseNumber(key, value, c.port);
  else if (key == "socket") c.socket = value;
  else if (key == "user") c.user = value;
  else if (key == "password") c.password = value;
  else if (key == "database") c.database = value;
  else if (key == "connect-timeout") return ParseNumber(key, value, c.connect_timeout_seconds);
  else if (key == "events-table") e.table = value;
  else if (key == "id-column") e.id_column = value;
  else if (key == "type-column") e.type_column = value;
  else if (key == "payload-column") e.payload_column = value;
  else if (key == "event-class") e.page_visited_class = value;
  else if (key == "batch-size") return ParseNumber(key, value, o.batch_size);
  else if (key == "max-in-flight") return ParseNumber(key, value, o.max_in_flight);
  else if (key == "flush-every") return ParseNumber(key, value, o.flush_every_events);
  else if (key == "flush-max-rows") return ParseNumber(key, value, o.flush_max_rows);
  else if (key == "stats-json") o.stats_json = value;
  else if (key == "poll") {
    char* end = nullptr;
    o.poll_seconds = std::strtod(value.c_str(), &end);
    if (end == value.c_str() || *end != '\0' || o.poll_seconds <= 0) {
      return Status::InvalidInput(fmt::format("--poll expects seconds, got '{}'", value));
    }
  }
  else if (key == "progress") {
    if (value == "auto") o.progress = ProgressMode::kAuto;
    else if (value == "bar") o.progress = ProgressMode::kTerminal;
    else if (value == "plain") o.progress = ProgressMode::kPlain;
    else if (value == "none") o.progress = ProgressMode::kQuiet;
    else return Status::InvalidInput("--progress expects auto, bar, plain or none");
  } else {
    return Status::InvalidInput(fmt::format("unknown option '{}' (see rewind --help)", key));
  }
  return Status::Ok();
}

Status ReadConfigFile(const std::string& path, ReplayOptions& o) {
  std::ifstream in(path);
  if (!in) return Status::NotFound(fmt::format("cannot read config file '{}'", path));
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    line = Trim(line.substr(0, line.find('#')));
    if (line.empty()) continue;
    const auto eq = line.find('=');
    if (eq == std::string::npos) {
      return Status::InvalidInput(fmt::format("{}:{}: expected 'key = value'", path, n));
    }
    if (Status s = Apply(o, Trim(line.substr(0, eq)), Trim(line.substr(eq + 1))); !s.ok()) {
      return s.With(fmt::format("{}:{}", path, n));
    }
  }
  return Status::Ok();
}

}  // namespace

Environment SystemEnvironment() {
  return [](const std::string& name) -> std::optional<std::string> {
    const char* v = std::getenv(name.c_str());
    return v ? std::optional<std::string>(v) : std::nullopt;
  };
}

Result<CommandLine> ParseCommandLine(const std::vector<std::string>& args, const Environment& env) {
  CommandLine cl;
  ReplayOptions& o = cl.options;

  // Pass 1: the config file, which the rest overrides.
  std::string config;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--config" && i + 1 < args.size()) config = args[i + 1];
    if (args[i].rfind("--config=", 0) == 0) config = args[i].substr(9);
  }
  if (config.empty()) config = env("REWIND_CONFIG").value_or("");
  if (config.empty()) {
    for (const char* candidate : {"rewind.conf", "config/rewind.conf"}) {
      if (std::filesystem::exists(candidate)) {
        config = candidate;
        break;
      }
    }
  }
  if (!config.empty()) {
    if (Status s = ReadConfigFile(config, o); !s.ok()) return s;
  }

  // Pass 2: the environment.
  const std::pair<const char*, const char*> env_keys[] = {
      {"MYSQL_HOST", "host"},         {"MYSQL_TCP_PORT", "port"},    {"MYSQL_UNIX_PORT", "socket"},
      {"MYSQL_PWD", "password"},      {"REWIND_HOST", "host"},       {"REWIND_PORT", "port"},
      {"REWIND_SOCKET", "socket"},    {"REWIND_USER", "user"},       {"REWIND_PASSWORD", "password"},
      {"REWIND_DATABASE", "database"}};
  for (const auto& [var, key] : env_keys) {
    if (auto v = env(var); v && !v->empty()) {
      if (Status s = Apply(o, key, *v); !s.ok()) return s.With(fmt::format("${}", var));
    }
  }

  // Pass 3: the command line.
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "-h" || a == "--help" || a == "help") {
      cl.command = "help";
      return cl;
    }
    if (a.rfind("--", 0) != 0) {
      if (cl.command.empty()) {
        cl.command = a;
      } else {
        o.projectors.push_back(a);
      }
      continue;
    }
    std::string key = a.substr(2), value;
    if (key == "all") o.all = true;
    else if (key == "resume") o.resume = true;
    else if (key == "stop-on-failure") o.stop_on_failure = true;
    else if (key == "quiet") o.progress = ProgressMode::kQuiet;
    else if (key == "json") o.json = true;
    else if (key == "follow") o.follow = true;
    else {
      if (const auto eq = key.find('='); eq != std::string::npos) {
        value = key.substr(eq + 1);
        key = key.substr(0, eq);
      } else if (i + 1 < args.size()) {
        value = args[++i];
      } else {
        return Status::InvalidInput(fmt::format("--{} needs a value (see rewind --help)", key));
      }
      if (key == "config") continue;
      if (Status s = Apply(o, key, value); !s.ok()) return s;
    }
  }
  if (cl.command.empty()) cl.command = "help";
  static const char* const kCommands[] = {"replay", "list", "status", "verify", "help"};
  if (std::find(std::begin(kCommands), std::end(kCommands), cl.command) == std::end(kCommands)) {
    return Status::InvalidInput(fmt::format("unknown command '{}' (see rewind --help)", cl.command));
  }
  if (o.batch_size == 0 || o.max_in_flight == 0 || o.flush_every_events == 0 ||
      o.flush_max_rows == 0) {
    return Status::InvalidInput("--batch-size, --max-in-flight, --flush-every and --flush-max-rows must be positive");
  }
  return cl;
}

std::string HelpText() {
  return R"(rewind: rebuild event-sourced read models from an event table in MariaDB.

Usage:
  rewind list                       the read models rewind can build, their tables and event types
  rewind replay --all               rebuild every read model in one pass over the events
  rewind replay NAME...             rebuild only the named read models
  rewind replay --resume ...        continue an interrupted rebuild from its checkpoints
  rewind replay --all --follow      rebuild, swap in, then keep applying new events
  rewind status [--json]            checkpoints, lag and failures per read model
  rewind verify [NAME...]           rebuild into scratch tables and compare with the live ones

How a replay works: one reader pages through the event table by id; every selected read
model is rebuilt concurrently into a shadow table (<table>__rewind_new) on its own
connection; when all are complete they replace the live tables in one atomic RENAME TABLE.
Until then, whatever reads the live tables sees the old data. Events whose payload cannot
be decoded are recorded in the table rewind_failures and skipped (--stop-on-failure stops
instead). Ctrl-C stops cleanly; `rewind replay --resume` continues.

Connection (like the mariadb client):
  --socket PATH      Unix socket                  ($REWIND_SOCKET, $MYSQL_UNIX_PORT)
  --host HOST        TCP host                     ($REWIND_HOST, $MYSQL_HOST)
  --port N           TCP port                     ($REWIND_PORT, $MYSQL_TCP_PORT)
  --user NAME                                     ($REWIND_USER)
  --password PW                                   ($REWIND_PASSWORD, $MYSQL_PWD)
  --database NAME    the database holding the events and the read models ($REWIND_DATABASE)
  --config FILE      read `key = value` defaults from FILE (keys are the long flag names);
                     otherwise $REWIND_CONFIG, ./rewind.conf or ./config/rewind.conf

Event table (defaults match the original blog's schema):
  --events-table NAME      stored_events
  --id-column NAME         id          (must be the primary key: rewind pages by it)
  --type-column NAME       eventClass
  --payload-column NAME    payload     (JSON: url, visitedAt, ip, userAgent)
  --event-class NAME       App\Analytics\PageVisited

Replay tuning:
  --batch-size N           events per read batch (20000)
  --max-in-flight N        batches in the pipeline at once; bounds memory (6)
  --flush-every N          each read model commits at least every N events (2000000)
  --flush-max-rows N       ...and whenever it holds N pending rows (1000000)
  --stop-on-failure        stop at the first bad event instead of recording it
  --follow                 after the swap, keep applying new events to the live tables
  --poll SECONDS           how often --follow looks for new events (1)
  --progress MODE          auto (bar on a terminal, a line every 5 s otherwise), bar, plain, none
  --quiet                  same as --progress none
  --stats-json FILE        also write the final summary as JSON

verify exits 0 only when every rebuilt table equals its live table, 4 when any differs.

Exit codes: 0 every selected read model rebuilt and swapped in; 3 rebuilt and swapped in,
but some events failed (see rewind_failures); 1 error (nothing swapped in); 2 bad usage;
130/143 stopped by SIGINT/SIGTERM (resumable).
)";
}

}  // namespace rw
