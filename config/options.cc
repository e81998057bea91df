#include "config/options.h"

#include "config/careful_file.h"

#include "base/civil_time.h"
#include "stages/db/table_admin.h"

#include <fmt/core.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <sstream>

// Where the config search looks after the user's file (cmake/package.cmake defines them).
#ifndef REWIND_SYSTEM_CONFIG
#define REWIND_SYSTEM_CONFIG "/etc/rewind/rewind.conf"
#endif
#ifndef REWIND_BUILD_TREE
#define REWIND_BUILD_TREE ""
#endif
#ifndef REWIND_REPOSITORY_CONFIG
#define REWIND_REPOSITORY_CONFIG ""
#endif

namespace rw {
namespace {

std::string Trim(std::string s) {
  const auto first = s.find_first_not_of(" \t\r");
  if (first == std::string::npos) return "";
  return s.substr(first, s.find_last_not_of(" \t\r") - first + 1);
}

// An unsigned integer in [min, max]: no sign, no trailing text, no overflow.
template <typename T>
Status Integer(const std::string& key, const std::string& text, uint64_t min, uint64_t max,
               T& out) {
  uint64_t v = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec == std::errc::invalid_argument || ptr != text.data() + text.size()) {
    return Status::InvalidInput(fmt::format("--{} expects a whole number, got '{}'", key, text));
  }
  if (ec == std::errc::result_out_of_range || v < min || v > max) {
    return Status::InvalidInput(
        fmt::format("--{} must be between {} and {}, got '{}'", key, min, max, text));
  }
  out = static_cast<T>(v);
  return Status::Ok();
}

// A size in bytes: a whole number with an optional K, M, G or T (KiB, MiB, ... ; "MiB" and
// "MB" alike are taken as powers of 1024), in [min, max].
Status Size(const std::string& key, const std::string& text, uint64_t min, uint64_t max, size_t& out) {
  uint64_t v = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  std::string unit(ptr, text.data() + text.size());
  for (char& c : unit) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (unit.ends_with("IB")) unit.resize(unit.size() - 2);
  else if (unit.ends_with("B")) unit.resize(unit.size() - 1);
  static constexpr std::string_view kUnits = "KMGT";
  const size_t power = unit.empty() ? 0 : unit.size() == 1 && kUnits.find(unit[0]) != std::string_view::npos ? kUnits.find(unit[0]) + 1 : 99;
  if (text.empty() || ptr == text.data() || ec == std::errc::invalid_argument || power == 99) {
    return Status::InvalidInput(fmt::format("--{} expects a size such as 512M or 2G, got '{}'", key, text));
  }
  const bool too_big = ec == std::errc::result_out_of_range || (power > 0 && v > (max >> (10 * power)));
  const uint64_t bytes = too_big ? 0 : v << (10 * power);
  if (too_big || bytes < min || bytes > max) {
    return Status::InvalidInput(fmt::format("--{} must be between {} and {}, got '{}'", key, ShowSize(min),
                                            ShowSize(max), text));
  }
  out = static_cast<size_t>(bytes);
  return Status::Ok();
}

// Seconds: a finite number in [min, max] (nan, inf and 1e-12 are refused: a poll interval
// of nothing is a busy loop against the server).
Status Seconds(const std::string& key, const std::string& text, double min, double max,
               double& out) {
  double v = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || ptr != text.data() + text.size() || !std::isfinite(v)) {
    return Status::InvalidInput(fmt::format("--{} expects seconds, got '{}'", key, text));
  }
  if (v < min || v > max) {
    return Status::InvalidInput(
        fmt::format("--{} must be between {} and {} seconds, got '{}'", key, min, max, text));
  }
  out = v;
  return Status::Ok();
}

Result<bool> Boolean(const std::string& key, const std::string& text) {
  std::string v;
  for (char c : text) v += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (v == "true" || v == "1" || v == "yes" || v == "on" || v.empty()) return true;
  if (v == "false" || v == "0" || v == "no" || v == "off") return false;
  return Status::InvalidInput(fmt::format("--{} is true or false, got '{}'", key, text));
}

using Group = OptionGroup;

// A table-name suffix of an --into build: a plain identifier that does not end like
// rewind's own tables (the whole name's length is checked against each read model).
// --type-path: "" (the type column) or a dotted path whose every part is non-empty.
// The servers --read-host and --read-socket name (comma-separated lists), into
// read_servers: a host's own port (HOST:PORT) wins over --read-port; one named twice is
// refused (its pages would be read twice as fast from one server, checked twice).
Status ListReadServers(ParsedOptions& o) {
  o.read_servers.clear();
  auto items = [](const std::string& list) {
    std::vector<std::string> out;
    size_t from = 0;
    for (;;) {
      const size_t comma = list.find(',', from);
      out.push_back(list.substr(from, comma == std::string::npos ? std::string::npos : comma - from));
      if (comma == std::string::npos) return out;
      from = comma + 1;
    }
  };
  if (!o.read_host.empty()) {
    for (const std::string& item : items(o.read_host)) {
      ReplayPart::ReadServer server{.host = item, .port = o.read_port, .socket = {}};
      const size_t colon = item.rfind(':');
      if (colon != std::string::npos && item.find(':') == colon) {  // HOST:PORT (an IPv6 address has several)
        server.host = item.substr(0, colon);
        if (Status s = Integer("read-host's port", item.substr(colon + 1), 1, 65535, server.port); !s.ok()) return s;
      }
      if (server.host.empty()) {
        return Status::InvalidInput(fmt::format("--read-host '{}' names an empty host: give HOST or HOST:PORT, "
                                                "several separated by commas", o.read_host));
      }
      o.read_servers.push_back(server);
    }
  }
  if (!o.read_socket.empty()) {
    for (const std::string& item : items(o.read_socket)) {
      if (item.empty()) {
        return Status::InvalidInput(fmt::format("--read-socket '{}' names an empty socket: give paths separated "
                                                "by commas", o.read_socket));
      }
      o.read_servers.push_back({.host = {}, .port = 0, .socket = item});
    }
  }
  for (size_t i = 0; i < o.read_servers.size(); ++i) {
    for (size_t j = 0; j < i; ++j) {
      const auto& a = o.read_servers[i];
      const auto& b = o.read_servers[j];
      if (a.host == b.host && a.port == b.port && a.socket == b.socket) {
        return Status::InvalidInput(fmt::format("--read-host/--read-socket name {} twice: name each replica once",
                                                a.socket.empty() ? fmt::format("{}:{}", a.host, a.port) : a.socket));
      }
    }
  }
  constexpr size_t kMaxReadServers = 16;
  if (o.read_servers.size() > kMaxReadServers) {
    return Status::InvalidInput(fmt::format("--read-host/--read-socket name {} servers: at most {}",
                                            o.read_servers.size(), kMaxReadServers));
  }
  return Status::Ok();
}

Status CheckTypePath(const std::string& v, std::string& out) {
  if (!v.empty() && (v.front() == '.' || v.back() == '.' || v.find("..") != std::string::npos)) {
    return Status::InvalidInput(fmt::format("--type-path '{}' has an empty part: give a dotted path into the "
                                            "payload, e.g. headers.__event_type",
                                            v));
  }
  out = v;
  return Status::Ok();
}

Status CheckSuffix(const char* key, const std::string& v, std::string& out) {
  if (!IsPlainIdentifier(v, 40, /*leading_digit=*/true)) {
    return Status::InvalidInput(fmt::format(
        "--{} expects a plain identifier suffix (letters, digits, _; at most 40), got '{}'", key, v));
  }
  if (const char* own = table_admin::OwnSuffixOf(v)) {
    return Status::InvalidInput(fmt::format("--{} may not end like rewind's own tables ({})", key, own));
  }
  out = v;
  return Status::Ok();
}

// One option: everything about it in one place.
struct OptionSpec {
  const char* name;                // long flag without dashes; also the config-file key
  const char* short_name;          // "" or e.g. "-u"
  Group group;
  bool flag;                       // takes no value on the command line
  std::vector<const char*> env;    // environment variables, the first one wins
  const char* help;
  std::function<Status(ParsedOptions&, const std::string&)> set;
  std::function<std::string(const ParsedOptions&)> show;  // the default, for --help
};

template <typename T, typename Part>
std::function<std::string(const ParsedOptions&)> Show(T Part::*field) {
  return [field](const ParsedOptions& o) { return fmt::format("{}", o.*field); };
}

std::function<Status(ParsedOptions&, const std::string&)> Text(std::string ConnectionOptions::*f) {
  return [f](ParsedOptions& o, const std::string& v) {
    o.connection.*f = v;
    return Status::Ok();
  };
}
std::function<Status(ParsedOptions&, const std::string&)> Text(std::string EventTableOptions::*f,
                                                               bool identifier) {
  return [f, identifier](ParsedOptions& o, const std::string& v) {
    if (identifier && v.empty()) return Status::InvalidInput("a table or column name cannot be empty");
    o.events.*f = v;
    return Status::Ok();
  };
}
template <typename Part>
std::function<Status(ParsedOptions&, const std::string&)> Flag(const char* name, bool Part::*f) {
  return [name, f](ParsedOptions& o, const std::string& v) {
    Result<bool> b = Boolean(name, v);
    if (!b.ok()) return b.status();
    o.*f = *b;
    return Status::Ok();
  };
}

const std::vector<OptionSpec>& Table() {
  static const std::vector<OptionSpec> table = {
      // Connection
      {"socket", "-S", Group::kConnection, false, {"REWIND_SOCKET", "MYSQL_UNIX_PORT"},
       "Unix socket of the server", Text(&ConnectionOptions::socket), nullptr},
      {"host", "", Group::kConnection, false, {"REWIND_HOST", "MYSQL_HOST"}, "TCP host",
       Text(&ConnectionOptions::host), nullptr},
      {"port", "-P", Group::kConnection, false, {"REWIND_PORT", "MYSQL_TCP_PORT"},
       "TCP port (1-65535; default 3306)",
       [](ParsedOptions& o, const std::string& v) { return Integer("port", v, 1, 65535, o.connection.port); },
       nullptr},
      {"user", "-u", Group::kConnection, false, {"REWIND_USER"}, "user name",
       Text(&ConnectionOptions::user), nullptr},
      {"password", "", Group::kConnection, false, {"REWIND_PASSWORD", "MYSQL_PWD"},
       "-p or --password alone: prompt; -pPW or --password=PW: given (scrubbed from argv)",
       Text(&ConnectionOptions::password), nullptr},
      {"database", "-D", Group::kConnection, false, {"REWIND_DATABASE"},
       "the database holding the events and the read models", Text(&ConnectionOptions::database),
       nullptr},
      {"connect-timeout", "", Group::kConnection, false, {}, "seconds to wait for a connection",
       [](ParsedOptions& o, const std::string& v) {
         return Integer("connect-timeout", v, 1, 3600, o.connection.connect_timeout_seconds);
       },
       [](const ParsedOptions& o) { return std::to_string(o.connection.connect_timeout_seconds); }},
      // Event table
      {"events-table", "", Group::kEvents, false, {},
       "the event table (stress: yours, in --database, read only: its size, and a rebuild measured on a\n"
       "sample of its first events copied into --stress-database; runs beside the questions of --only)",
       [](ParsedOptions& o, const std::string& v) {
         if (v.empty()) return Status::InvalidInput("a table or column name cannot be empty");
         o.events.table = v;
         o.own_table = true;
         return Status::Ok();
       },
       [](const ParsedOptions& o) { return o.events.table; }},
      {"id-column", "", Group::kEvents, false, {},
       "integer, NOT NULL, unique (rewind pages by it)", Text(&EventTableOptions::id_column, true),
       [](const ParsedOptions& o) { return o.events.id_column; }},
      {"type-column", "", Group::kEvents, false, {}, "the event class, compared byte for byte",
       Text(&EventTableOptions::type_column, true),
       [](const ParsedOptions& o) { return o.events.type_column; }},
      {"type-path", "", Group::kEvents, false, {},
       "the class is this dotted path into the payload instead of a column (EventSauce: headers.__event_type)",
       [](ParsedOptions& o, const std::string& v) { return CheckTypePath(v, o.events.type_path); }, nullptr},
      {"payload-column", "", Group::kEvents, false, {}, "JSON: url, visitedAt, ip, userAgent",
       Text(&EventTableOptions::payload_column, true),
       [](const ParsedOptions& o) { return o.events.payload_column; }},
      {"event-class", "", Group::kEvents, false, {}, "the class of page-visit events",
       Text(&EventTableOptions::page_visited_class, true),
       [](const ParsedOptions& o) { return o.events.page_visited_class; }},
      // Replay
      {"all", "", Group::kReplay, true, {}, "every read model", Flag("all", &ReplayPart::all), nullptr},
      {"resume", "", Group::kReplay, true, {}, "continue an interrupted rebuild from its checkpoints (a swap also takes every --build-only build)",
       Flag("resume", &ReplayPart::resume), nullptr},
      {"build-only", "", Group::kReplay, true, {},
       "build the shadow tables and mark them built, without the swap (builders on several hosts; "
       "then one replay --resume of them all swaps them in)",
       Flag("build-only", &ReplayPart::build_only), nullptr},
      {"segment", "", Group::kReplay, false, {},
       "with --build-only: build only the keys of each declared read model named that hash to "
       "segment I of N (0 <= I < N <= 64; one builder per segment), then one replay --resume "
       "merges the N segments and swaps",
       [](ParsedOptions& o, const std::string& v) {
         Segment s;
         if (std::string why = ParseSegment(v, s); !why.empty()) return Status::InvalidInput(why);
         o.segment = s;
         return Status::Ok();
       },
       nullptr},
      {"reshape", "", Group::kReplay, true, {},
       "replace an application's table of a declared read model with rewind's shape, keeping it aside as <table>__rewind_kept",
       Flag("reshape", &ReplayPart::reshape), nullptr},
      {"stop-on-failure", "", Group::kReplay, true, {}, "stop at the first bad event instead of recording it",
       Flag("stop-on-failure", &ReplayPart::stop_on_failure), nullptr},
      {"follow", "", Group::kReading, true, {}, "replay: after the swap, keep applying new events to the live tables; ingest: keep reading the file as it grows",
       Flag("follow", &ReadingPart::follow), nullptr},
      {"poll", "", Group::kReading, false, {}, "seconds between looks for new events with --follow (0.01-3600)",
       [](ParsedOptions& o, const std::string& v) { return Seconds("poll", v, 0.01, 3600, o.poll_seconds); },
       Show(&ReadingPart::poll_seconds)},
      {"follow-source", "", Group::kReading, false, {},
       "how --follow learns of new commits: auto (the server's binlog where it can be read, else "
       "polling the event table), binlog (refused, naming the setting or grant missing, where it "
       "cannot), poll",
       [](ParsedOptions& o, const std::string& v) {
         if (v == "auto") o.follow_source = FollowSource::kAuto;
         else if (v == "binlog") o.follow_source = FollowSource::kBinlog;
         else if (v == "poll") o.follow_source = FollowSource::kPoll;
         else return Status::InvalidInput(fmt::format("--follow-source expects auto, binlog or poll, got '{}'", v));
         return Status::Ok();
       },
       [](const ParsedOptions& o) {
         return std::string(o.follow_source == FollowSource::kBinlog ? "binlog"
                            : o.follow_source == FollowSource::kPoll ? "poll" : "auto");
       }},
      {"settle", "", Group::kReplay, false, {},
       "seconds an insert transaction may stay open: a missing id is final once the time column "
       "is this far past it (following, also once watched this long) (0-86400)",
       [](ParsedOptions& o, const std::string& v) { return Seconds("settle", v, 0, 86400, o.settle_seconds); },
       Show(&ReplayPart::settle_seconds)},
      {"reconcile", "", Group::kReplay, false, {},
       "with --follow, seconds between reads of every hole in the ids judged final in the last "
       "hour: an event found there is applied, or counted as missed (0: never) (0-86400)",
       [](ParsedOptions& o, const std::string& v) {
         return Seconds("reconcile", v, 0, 86400, o.reconcile_seconds);
       },
       Show(&ReplayPart::reconcile_seconds)},
      {"settle-ids", "", Group::kReplay, false, {},
       "judge missing ids by ids, not the time column: final this many ids below the head "
       "(0: by time; no time column: 10000) (0-1000000000)",
       [](ParsedOptions& o, const std::string& v) { return Integer("settle-ids", v, 0, 1'000'000'000, o.settle_ids); },
       Show(&ReplayPart::settle_ids)},
      {"cutover-timeout", "", Group::kReplay, false, {},
       "seconds the cut-over keeps trying for its locks before giving up, exit 6 (1-86400)",
       [](ParsedOptions& o, const std::string& v) {
         return Seconds("cutover-timeout", v, 1, 86400, o.cutover_timeout_seconds);
       },
       Show(&ReplayPart::cutover_timeout_seconds)},
      {"batch-size", "", Group::kReading, false, {}, "events per read batch; ingest: lines per insert transaction (1-1000000)",
       [](ParsedOptions& o, const std::string& v) { return Integer("batch-size", v, 1, 1'000'000, o.batch_size); },
       Show(&ReadingPart::batch_size)},
      {"max-in-flight", "", Group::kReplay, false, {}, "batches in the pipeline at once; bounds memory (1-64)",
       [](ParsedOptions& o, const std::string& v) { return Integer("max-in-flight", v, 1, 64, o.max_in_flight); },
       Show(&ReplayPart::max_in_flight)},
      {"read-connections", "", Group::kReplay, false, {},
       "connections reading events at once, each a page ahead; 1 reads one page at a time (1-8)",
       [](ParsedOptions& o, const std::string& v) { return Integer("read-connections", v, 1, 8, o.read_connections); },
       Show(&ReplayPart::read_connections)},
      {"result-buffer", "", Group::kReplay, false, {},
       "bytes the server sends each page of events in: each page query is padded to this size, which grows the "
       "server's buffer for that query (a default server sends in 16 KB pieces); 0 pads nothing (0-16777216)",
       [](ParsedOptions& o, const std::string& v) {
         return Integer("result-buffer", v, 0, 16 * 1024 * 1024, o.result_buffer);
       },
       Show(&ReplayPart::result_buffer)},
      {"read-host", "", Group::kReplay, false, {},
       "read the events from this replica (same user and password), or from several (HOST[:PORT],... : the "
       "pages are spread over them, and one that fails is dropped); the read models, checkpoints, locks, "
       "catch-up and cut-over stay on the primary",
       [](ParsedOptions& o, const std::string& v) { o.read_host = v; return Status::Ok(); }, nullptr},
      {"read-port", "", Group::kReplay, false, {}, "the replica's TCP port (1-65535; a port alone: 127.0.0.1)",
       [](ParsedOptions& o, const std::string& v) { return Integer("read-port", v, 1, 65535, o.read_port); }, nullptr},
      {"read-socket", "", Group::kReplay, false, {}, "the replica's Unix socket, or several separated by commas (with --read-host: more replicas)",
       [](ParsedOptions& o, const std::string& v) { o.read_socket = v; return Status::Ok(); }, nullptr},
      {"read-wait", "", Group::kReplay, false, {},
       "seconds to wait at start for the replica to show rewind's marker (its lag) before refusing it (1-86400)",
       [](ParsedOptions& o, const std::string& v) { return Seconds("read-wait", v, 1, 86400, o.read_wait_seconds); },
       Show(&ReplayPart::read_wait_seconds)},
      {"read-check", "", Group::kReplay, false, {},
       "how the replica is compared with the primary before its events are read: 'counts' (each chunk of ids' "
       "count and sum of ids, index-only on both servers) or 'full' (also a checksum of every event's class and "
       "payload: the primary reads every event once)",
       [](ParsedOptions& o, const std::string& v) {
         if (v != "counts" && v != "full") return Status::InvalidInput("--read-check takes 'counts' or 'full'");
         o.read_check_full = v == "full";
         return Status::Ok();
       },
       [](const ParsedOptions& o) { return std::string(o.read_check_full ? "full" : "counts"); }},
      {"flush-every", "", Group::kReplay, false, {}, "each read model commits at least every N events",
       [](ParsedOptions& o, const std::string& v) {
         return Integer("flush-every", v, 1, std::numeric_limits<int64_t>::max(), o.flush_every_events);
       },
       Show(&ReplayPart::flush_every_events)},
      {"write-every", "", Group::kReplay, false, {"REWIND_WRITE_EVERY"},
       "while reading goes on, each read model writes what it holds every N events, on a thread of its own; "
       "0 writes only at --flush-every and at the end",
       [](ParsedOptions& o, const std::string& v) {
         return Integer("write-every", v, 0, std::numeric_limits<int64_t>::max(), o.write_every_events);
       },
       Show(&ReplayPart::write_every_events)},
      {"memory", "", Group::kReplay, false, {"REWIND_MEMORY"},
       "the memory the read models' state may hold together (e.g. 256M, 2G; 4M to 1T): past it the largest write "
       "their rows and let them go (the reader's batches and the flush in flight come on top)",
       [](ParsedOptions& o, const std::string& v) { return Size("memory", v, 4 << 20, uint64_t{1} << 40, o.memory_bytes); },
       [](const ParsedOptions& o) { return ShowSize(o.memory_bytes); }},
      {"flush-max-rows", "", Group::kReplay, false, {}, "...and whenever it holds N pending rows (1-100000000)",
       [](ParsedOptions& o, const std::string& v) {
         return Integer("flush-max-rows", v, 1, 100'000'000, o.flush_max_rows);
       },
       Show(&ReplayPart::flush_max_rows)},
      // Output
      {"progress", "", Group::kOutput, false, {}, "auto (a bar on a terminal, a line every 5 s otherwise), bar, plain, none",
       [](ParsedOptions& o, const std::string& v) {
         if (v == "auto") o.progress = ProgressMode::kAuto;
         else if (v == "bar") o.progress = ProgressMode::kTerminal;
         else if (v == "plain") o.progress = ProgressMode::kPlain;
         else if (v == "none") o.progress = ProgressMode::kQuiet;
         else return Status::InvalidInput(fmt::format("--progress expects auto, bar, plain or none, got '{}'", v));
         return Status::Ok();
       },
       [](const ParsedOptions&) { return std::string("auto"); }},
      {"quiet", "", Group::kOutput, true, {}, "same as --progress none",
       [](ParsedOptions& o, const std::string& v) {
         Result<bool> b = Boolean("quiet", v);
         if (!b.ok()) return b.status();
         if (*b) o.progress = ProgressMode::kQuiet;
         return Status::Ok();
       },
       nullptr},
      {"models", "", Group::kReplay, false, {"REWIND_MODELS"},
       "declared read models (TOML); relative to the current directory, or in a config file to "
       "that file's directory (stress: yours, rebuilt on the sample of --events-table)",
       [](ParsedOptions& o, const std::string& v) {
         if (v.empty()) return Status::InvalidInput("--models needs a file name");
         o.models_file = v;
         return Status::Ok();
       },
       nullptr},
      {"stats-json", "", Group::kOutput, false, {}, "also write the run's summary as JSON to FILE",
       [](ParsedOptions& o, const std::string& v) {
         o.stats_json = v;
         return Status::Ok();
       },
       nullptr},
      {"json", "", Group::kOutput, true, {}, "status and --dry-run: print JSON", Flag("json", &OutputPart::json), nullptr},
      {"format", "", Group::kOutput, false, {}, "status: text, json (same as --json) or prometheus",
       [](ParsedOptions& o, const std::string& v) {
         if (v != "text" && v != "json" && v != "prometheus") {
           return Status::InvalidInput(fmt::format("--format expects text, json or prometheus, got '{}'", v));
         }
         o.format = v;
         if (v == "json") o.json = true;
         return Status::Ok();
       },
       nullptr},
      {"textfile", "", Group::kOutput, false, {},
       "status --format prometheus: write to FILE atomically (node_exporter's textfile collector)",
       [](ParsedOptions& o, const std::string& v) {
         if (v.empty()) return Status::InvalidInput("--textfile needs a file name");
         o.textfile = v;
         return Status::Ok();
       },
       nullptr},
      // Migration-day controls
      {"quick", "", Group::kStress, true, {},
       "stress: smaller volumes, fewer loads and writer counts: under 3 minutes here (without it, the full run:\n"
       "the published volumes, 1M-event rebuild, 1-100 writers; under 30 minutes here)",
       Flag("quick", &StressPart::quick), nullptr},
      {"repeat", "", Group::kStress, false, {}, "stress: runs of each measured point; the median and min-max are reported (1-20, default 3)",
       [](ParsedOptions& o, const std::string& v) { return Integer("repeat", v, 1, 20, o.repeat); }, nullptr},
      {"budget-ms", "", Group::kStress, false, {}, "stress: the load-time budget its snapshot advice is for, in ms (1-60000, default 50)",
       [](ParsedOptions& o, const std::string& v) { return Integer("budget-ms", v, 1, 60000, o.budget_ms); }, nullptr},
      {"only", "", Group::kStress, false, {},
       "stress: the questions to answer, e.g. 1,3 (default: 1,2,3,4); `table` alone: only your\n"
       "--events-table, none of the four",
       [](ParsedOptions& o, const std::string& v) {
         o.only.clear();
         size_t at = 0;
         while (at <= v.size()) {
           const size_t comma = std::min(v.find(',', at), v.size());
           const std::string q = v.substr(at, comma - at);
           if (q == "table") {  // 0: the user's table (which runs with --events-table anyway)
             o.only.push_back(0);
             at = comma + 1;
             continue;
           }
           if (q != "1" && q != "2" && q != "3" && q != "4") {
             return Status::InvalidInput(fmt::format(
                 "--only takes question numbers 1 to 4 and `table`, comma-separated, not '{}'", v));
           }
           o.only.push_back(q[0] - '0');
           at = comma + 1;
         }
         return Status::Ok();
       },
       nullptr},
      {"stress-database", "", Group::kStress, false, {}, "stress: the database it creates and works in (default rewind_stress)",
       [](ParsedOptions& o, const std::string& v) {
         if (!IsPlainIdentifier(v, kMaxIdentifierBytes, /*leading_digit=*/true)) {
           return Status::InvalidInput(fmt::format("--stress-database '{}' is not a plain database name", v));
         }
         o.database = v;
         return Status::Ok();
       },
       nullptr},
      {"out", "", Group::kStress, false, {}, "stress: the directory for report.md, results.csv and the PNGs (default stress-out)",
       [](ParsedOptions& o, const std::string& v) {
         if (v.empty()) return Status::InvalidInput("--out needs a directory");
         o.out = v;
         return Status::Ok();
       },
       nullptr},
      {"sample", "", Group::kStress, false, {},
       "stress with --events-table: the first N events of your table (by id) copied and rebuilt\n"
       "(1-100000000; default 200000, --quick 20000); the full table's time is estimated from it",
       [](ParsedOptions& o, const std::string& v) { return Integer("sample", v, 1, 100'000'000, o.sample); }, nullptr},
      {"keep", "", Group::kStress, true, {}, "stress: keep its database at the end (default: dropped)",
       Flag("keep", &StressPart::keep), nullptr},
      {"dry-run", "", Group::kReading, true, {}, "print what the run would read, write and need (ingest: count); touch nothing",
       Flag("dry-run", &ReadingPart::dry_run), nullptr},
      {"allow-empty", "", Group::kControl, true, {},
       "allow a build in which a read model receives no event (refused otherwise)",
       Flag("allow-empty", &ControlPart::allow_empty), nullptr},
      {"max-events-per-second", "", Group::kControl, false, {}, "never read faster than N events/s",
       [](ParsedOptions& o, const std::string& v) {
         return Integer("max-events-per-second", v, 1, 1'000'000'000, o.max_events_per_second);
       },
       nullptr},
      {"throttle-threads-running", "", Group::kControl, false, {},
       "pause reading while the server's Threads_running (not counting rewind's) is above N",
       [](ParsedOptions& o, const std::string& v) {
         return Integer("throttle-threads-running", v, 1, 100'000, o.throttle_threads_running);
       },
       nullptr},
      {"max-failures", "", Group::kControl, false, {},
       "failure budget per read model: N events or P% of its events; over it nothing is swapped (exit 5)",
       [](ParsedOptions& o, const std::string& v) {
         if (!v.empty() && v.back() == '%') {
           double pct = 0;
           if (Status s = Seconds("max-failures", v.substr(0, v.size() - 1), 0, 100, pct); !s.ok()) {
             return Status::InvalidInput(fmt::format("--max-failures expects N or P% (0-100), got '{}'", v));
           }
           o.max_failures_percent = pct;
           o.max_failures.reset();
           return Status::Ok();
         }
         uint64_t n = 0;
         if (Status s = Integer("max-failures", v, 0, UINT64_MAX, n); !s.ok()) {
           return Status::InvalidInput(fmt::format("--max-failures expects N or P%, got '{}'", v));
         }
         o.max_failures = n;
         o.max_failures_percent.reset();
         return Status::Ok();
       },
       nullptr},
      {"until-id", "", Group::kControl, false, {}, "read events with id <= N (needs --into)",
       [](ParsedOptions& o, const std::string& v) {
         std::optional<EventId> id = ParseEventId(v);
         if (!id) return Status::InvalidInput(fmt::format("--until-id expects an integer id, got '{}'", v));
         // The ids of every id column rewind reads: BIGINT and BIGINT UNSIGNED.
         constexpr EventId kLowest = -static_cast<EventId>(INT64_MAX) - 1, kHighest = UINT64_MAX;
         if (*id < kLowest || *id > kHighest) {
           return Status::InvalidInput(fmt::format("--until-id must be an id between {} and {} (a BIGINT or "
                                                   "BIGINT UNSIGNED id column), got '{}'",
                                                   IdText(kLowest), IdText(kHighest), v));
         }
         o.until_id = *id;
         return Status::Ok();
       },
       nullptr},
      {"until-time", "", Group::kControl, false, {},
       "keep events whose time column is <= 'YYYY-MM-DD HH:MM:SS', as stored (needs --into)",
       [](ParsedOptions& o, const std::string& v) {
         if (v.size() != 19 || !ParseIsoTimestamp(v)) {
           return Status::InvalidInput(
               fmt::format("--until-time expects 'YYYY-MM-DD HH:MM:SS', got '{}'", v));
         }
         o.until_time = v;
         return Status::Ok();
       },
       nullptr},
      {"uuid-column", "", Group::kEvents, false, {}, "the event table's uuid column (ingest)",
       Text(&EventTableOptions::uuid_column, true), [](const ParsedOptions& o) { return o.events.uuid_column; }},
      {"from-start", "", Group::kIngest, true, {}, "ingest: read every file from its start, ignoring its saved position and what was "
       "stored of the same log under another name",
       Flag("from-start", &IngestPart::from_start), nullptr},
      {"time-column", "", Group::kEvents, false, {}, "the event table's time column (--until-time, ingest)",
       Text(&EventTableOptions::time_column, true), [](const ParsedOptions& o) { return o.events.time_column; }},
      {"into", "", Group::kControl, false, {},
       "build <table>SUFFIX beside the live tables and never swap it in",
       [](ParsedOptions& o, const std::string& v) { return CheckSuffix("into", v, o.into); }, nullptr},
      {"against", "", Group::kControl, false, {},
       "verify: compare the live tables with an --into build's <table>SUFFIX tables",
       [](ParsedOptions& o, const std::string& v) { return CheckSuffix("against", v, o.against); }, nullptr},
  };
  return table;
}

const OptionSpec* Find(const std::string& name) {
  for (const OptionSpec& s : Table()) {
    if (name == s.name) return &s;
  }
  return nullptr;
}

// What the value of a flag is, for --help.
const char* ValueName(const std::string& name) {
  if (name == "result-buffer") return "BYTES";
  if (name == "repeat" || name == "sample") return "N";
  if (name == "budget-ms") return "MS";
  for (const char* n : {"port", "read-port", "connect-timeout", "batch-size", "max-in-flight", "read-connections", "flush-every",
                        "flush-max-rows", "write-every", "max-events-per-second", "throttle-threads-running", "until-id"}) {
    if (name == n) return "N";
  }
  for (const char* n : {"poll", "settle", "reconcile", "cutover-timeout", "read-wait"}) {
    if (name == n) return "SECONDS";
  }
  if (name == "socket" || name == "read-socket" || name == "stats-json" || name == "models") return "FILE";
  if (name == "textfile") return "FILE";
  if (name == "format") return "FORMAT";
  if (name == "host" || name == "read-host") return "HOST";
  if (name == "progress") return "MODE";
  if (name == "follow-source") return "SOURCE";
  if (name == "max-failures") return "N|P%";
  if (name == "segment") return "I/N";
  if (name == "until-time") return "TIME";
  if (name == "into" || name == "against") return "SUFFIX";
  if (name == "uuid-column" || name == "time-column") return "COLUMN";
  if (name == "type-path") return "PATH";
  return "NAME";
}

const char* GroupName(Group g) {
  switch (g) {
    case Group::kConnection: return "Connection (like the mariadb client)";
    case Group::kEvents: return "Event table (defaults: the blog's schema)";
    case Group::kReading: return "Reading and following";
    case Group::kReplay: return "Replay";
    case Group::kControl: return "Migration-day controls";
    case Group::kIngest: return "Ingest";
    case Group::kStress: return "Stress";
    case Group::kOutput: return "Output";
  }
  return "";
}

// A value parsed from one source, and how strongly it was given.
enum Level { kDefault = 0, kConfigFile = 1, kEnvironment = 2, kCommandLine = 3 };

struct Applier {
  ParsedOptions& o;
  std::map<std::string, Level> level;  // per option name: the source that set it last

  Status Set(const std::string& name, const std::string& value, Level at) {
    const OptionSpec* spec = Find(name);
    if (spec == nullptr) return Status::InvalidInput(fmt::format("unknown option '{}'", name));
    if (Status s = spec->set(o, value); !s.ok()) return s;
    level[name] = at;
    return Status::Ok();
  }
  Level Of(const std::string& name) const {
    auto it = level.find(name);
    return it == level.end() ? kDefault : it->second;
  }
};

// `key = value` lines. `#` starts a comment only at the start of a line (a password may
// hold one); a value may be quoted ("..." or '...'); a UTF-8 BOM is skipped; a boolean
// option takes true/false/yes/no/on/off/1/0.
// The file is read carefully (config/careful_file.h): refused when every user may write it,
// and a password in it refused when it belongs to another user.
Status ReadConfigFile(const std::string& path, Applier& a) {
  Result<CarefulFile> file = ReadCarefully(path, "config file");
  if (!file.ok()) return file.status();
  std::istringstream in(file->text);
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    if (n == 1 && line.rfind("\xEF\xBB\xBF", 0) == 0) line.erase(0, 3);
    line = Trim(line);
    if (line.empty() || line[0] == '#' || line[0] == ';') continue;
    const auto eq = line.find('=');
    if (eq == std::string::npos) {
      // The line itself is never shown: it may hold a secret (a password without its key, or
      // the first line of a file that is not a config file at all).
      return Status::InvalidInput(fmt::format("{}:{}: expected 'key = value' (the line is not shown: it may hold a "
                                              "secret)",
                                              path, n));
    }
    const std::string key = Trim(line.substr(0, eq));
    std::string value = Trim(line.substr(eq + 1));
    if (value.size() >= 2 && (value.front() == '"' || value.front() == '\'') &&
        value.back() == value.front()) {
      value = value.substr(1, value.size() - 2);
    }
    if (key == "config") {
      return Status::InvalidInput(fmt::format("{}:{}: a config file cannot name another", path, n));
    }
    if (Find(key) == nullptr) {
      return Status::InvalidInput(
          fmt::format("{}:{}: unknown key (keys are the long flag names of rewind --help; the line is not shown: it "
                      "may hold a secret)",
                      path, n));
    }
    if (key == "password") {
      if (Status s = RefuseSecretFrom(*file, path, "config file", "a password"); !s.ok()) return s;
    }
    if (key == "models" && !value.empty() && value[0] != '/') {  // beside the config file
      value = (std::filesystem::path(path).parent_path() / value).lexically_normal().string();
    }
    if (Status s = a.Set(key, value, kConfigFile); !s.ok()) {
      // The option's message without the value it got (a value may be a secret).
      std::string why = s.message();
      if (const size_t got = why.find(", got '"); got != std::string::npos) why.erase(got);
      return Status::InvalidInput(fmt::format("{}:{}: {} (the value is not shown)", path, n, why));
    }
  }
  return Status::Ok();
}

// The directory of the running binary (/proc/self/exe), or "" when unknown.
std::filesystem::path ProgramDirectory() {
  std::error_code ec;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::filesystem::path() : exe.parent_path();
}

// A group's heading in --help: its name, and the commands that take it unless every command
// with options does.
std::string Heading(Group g, const std::vector<CommandInfo>& commands) {
  std::string who;
  bool everyone = true;
  for (const CommandInfo& c : commands) {
    if (c.groups.empty()) continue;  // help
    if (std::find(c.groups.begin(), c.groups.end(), g) == c.groups.end()) {
      everyone = false;
      continue;
    }
    who += (who.empty() ? "" : ", ") + c.name;
  }
  if (everyone || who.empty()) return GroupName(g);
  return fmt::format("{} ({})", GroupName(g), who);
}

// Splits off what CLI11 must not see: the password forms (-p alone prompts and never
// takes the next word) and --config.
struct PreScan {
  std::vector<std::string> rest;
  std::optional<std::string> password;
  bool prompt = false;
  std::string config;
};

Result<PreScan> Prescan(const std::vector<std::string>& args) {
  PreScan p;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--") {
      p.rest.insert(p.rest.end(), args.begin() + static_cast<long>(i), args.end());
      break;
    }
    if (a == "-p" || a == "--password") {
      p.prompt = true;
    } else if (a.rfind("--password=", 0) == 0) {
      p.password = a.substr(11);
      p.prompt = false;
    } else if (a.rfind("-p", 0) == 0 && a.size() > 2 && a[2] != '-') {
      p.password = a.substr(2);
      p.prompt = false;
    } else if (a == "--config") {
      if (i + 1 >= args.size()) return Status::InvalidInput("--config needs a file name");
      p.config = args[++i];
      if (p.config.empty()) return Status::InvalidInput("--config needs a file name");
    } else if (a.rfind("--config=", 0) == 0) {
      p.config = a.substr(9);
      if (p.config.empty()) return Status::InvalidInput("--config needs a file name");
    } else {
      p.rest.push_back(a);
    }
  }
  return p;
}

// The CLI11 declaration of every option, bound to string/bool storage that the caller
// then applies through the option table (one validation path for every source).
struct Declared {
  CLI::App app{"rewind: rebuild event-sourced read models from an event table in MariaDB.",
               "rewind"};
  std::string command;
  std::vector<std::string> names;
  std::deque<std::string> values;  // stable references for CLI11
  std::vector<CLI::Option*> options;
  std::deque<bool> flags;

  explicit Declared(const std::vector<CommandInfo>& commands) {
    app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
    app.get_formatter()->column_width(34);
    const ParsedOptions defaults;
    values.resize(Table().size());
    flags.resize(Table().size());
    for (size_t i = 0; i < Table().size(); ++i) {
      const OptionSpec& s = Table()[i];
      std::string flag_names = std::string(*s.short_name ? std::string(s.short_name) + "," : "") + "--" + s.name;
      std::string help = s.help;
      if (s.show && !s.show(defaults).empty()) help += fmt::format(" [{}]", s.show(defaults));
      for (size_t e = 0; e < s.env.size(); ++e) help += fmt::format("{}${}", e ? ", " : " (env: ", s.env[e]);
      if (!s.env.empty()) help += ")";
      CLI::Option* opt = nullptr;
      if (std::string(s.name) == "password") {
        // Handled before CLI11 sees argv (-p alone must not swallow the next word); declared
        // for --help only.
        opt = app.add_flag("-p,--password", flags[i], help);
      } else if (s.flag) {
        opt = app.add_flag(flag_names, flags[i], help);
      } else {
        opt = app.add_option(flag_names, values[i], help)->type_name(ValueName(s.name));
      }
      opt->group(Heading(s.group, commands));
      options.push_back(opt);
    }
    app.add_option("--config", values.emplace_back(),
                   "read `key = value` defaults from FILE (see below)")->type_name("FILE")->group(Heading(Group::kConnection, commands));
    // rewind's own: answered by the parser before any config file is looked for
    // (ParseCommandLine). The tools borrowing the options (no commands) keep it unknown.
    if (!commands.empty()) {
      app.set_version_flag("-V,--version", std::string(),
                           "print the version, the build type and the libraries, and exit");
    }
    // The positionals, from the command table: "replay | list | ...", and what each
    // command's names are ("read models (replay, verify); log files (ingest)").
    std::string command_help, names_help;
    std::vector<std::pair<std::string, std::string>> names_of;  // what, commands
    for (const CommandInfo& c : commands) {
      command_help += (command_help.empty() ? "" : " | ") + c.name;
      if (c.names.empty()) continue;
      auto it = std::find_if(names_of.begin(), names_of.end(), [&](const auto& n) { return n.first == c.names; });
      if (it == names_of.end()) names_of.emplace_back(c.names, c.name);
      else it->second += ", " + c.name;
    }
    for (const auto& [what, who] : names_of) {
      names_help += fmt::format("{}{} ({})", names_help.empty() ? "" : "; ", what, who);
    }
    app.add_option("command", command, command_help);
    app.add_option("names", names, names_help);
  }
};

}  // namespace

Environment SystemEnvironment() {
  return [](const std::string& name) -> std::optional<std::string> {
    const char* v = std::getenv(name.c_str());
    return v ? std::optional<std::string>(v) : std::nullopt;
  };
}

Result<CommandLine> ParseCommandLine(const std::vector<std::string>& args, const Environment& env,
                                     const std::vector<CommandInfo>& commands) {
  CommandLine cl;
  ParsedOptions& o = cl.options;
  Result<PreScan> pre = Prescan(args);
  if (!pre.ok()) return pre.status();

  Declared d(commands);
  std::vector<std::string> reversed(pre->rest.rbegin(), pre->rest.rend());
  try {
    d.app.parse(reversed);
  } catch (const CLI::CallForHelp&) {
    cl.command = "help";
    return cl;
  } catch (const CLI::CallForVersion&) {
    cl.command = "version";
    return cl;
  } catch (const CLI::ExtrasError& e) {
    std::string what = e.what();
    for (const std::string& a : pre->rest) {
      if (a.rfind("-", 0) == 0 && what.find(a) != std::string::npos) {
        return Status::InvalidInput(fmt::format("unknown option '{}' (see rewind --help)", a));
      }
    }
    return Status::InvalidInput(fmt::format("{} (see rewind --help)", what));
  } catch (const CLI::ParseError& e) {
    return Status::InvalidInput(fmt::format("{} (see rewind --help)", e.what()));
  }

  Applier a{o, {}};
  // 1. The config file.
  Result<std::string> config = LocateConfigFile(pre->config, env, BuiltInConfigPlaces());
  if (!config.ok()) return config.status();
  if (!config->empty()) {
    if (Status s = ReadConfigFile(*config, a); !s.ok()) return s;
    cl.config_path = *config;
  }
  // 2. The environment.
  for (const OptionSpec& s : Table()) {
    for (const char* var : s.env) {
      if (auto v = env(var); v && !v->empty()) {
        if (Status st = a.Set(s.name, *v, kEnvironment); !st.ok()) return st.With(fmt::format("${}", var));
        break;
      }
    }
  }
  // 3. The command line.
  for (size_t i = 0; i < Table().size(); ++i) {
    const OptionSpec& s = Table()[i];
    if (std::string(s.name) == "password" || d.options[i]->count() == 0) continue;
    if (Status st = a.Set(s.name, s.flag ? "true" : d.values[i], kCommandLine); !st.ok()) return st;
  }
  if (pre->password) {
    o.connection.password = *pre->password;
    a.level["password"] = kCommandLine;
  }
  cl.prompt_password = pre->prompt;

  // The socket and host/port name two different servers: the one given by the stronger
  // source wins; given by the same one, the user must choose.
  const Level socket_at = a.Of("socket");
  const Level tcp_at = std::max(a.Of("host"), a.Of("port"));
  if (socket_at > kDefault && tcp_at > kDefault) {
    if (tcp_at > socket_at) {
      o.connection.socket.clear();
    } else if (socket_at > tcp_at) {
      o.connection.host.clear();
      o.connection.port = 0;
    } else {
      return Status::InvalidInput(
          "both a socket and a host/port are given at the same level (flags, environment or "
          "config file): keep the one you mean");
    }
  }
  if (o.connection.port != 0 && o.connection.host.empty() && o.connection.socket.empty()) {
    o.connection.host = "127.0.0.1";  // a port alone means TCP on this machine
  }

  if (o.read_port != 0 && o.read_host.empty() && o.read_socket.empty()) o.read_host = "127.0.0.1";
  if (Status s = ListReadServers(o); !s.ok()) return s;
  if (o.stop_on_failure && (o.max_failures || o.max_failures_percent)) {
    return Status::InvalidInput("--stop-on-failure is a failure budget of 0 that stops at once: "
                                "give it or --max-failures, not both");
  }
  if ((o.until_id || !o.until_time.empty()) && o.into.empty()) {
    return Status::InvalidInput("--until-id and --until-time need --into SUFFIX: a read model cut "
                                "short never replaces a live one");
  }
  if (!o.into.empty() && o.follow) {
    return Status::InvalidInput("--into builds beside the live tables and never swaps: --follow "
                                "does not go with it");
  }
  if (o.build_only && (!o.into.empty() || o.follow)) {
    return Status::InvalidInput(fmt::format("--build-only builds the shadow tables for a later swap: {} does not go "
                                            "with it", o.follow ? "--follow" : "--into"));
  }
  if (o.segment && !o.build_only) {
    return Status::InvalidInput("--segment builds one share of a read model for a later swap: it needs --build-only "
                                "(then one replay --resume merges the segments and swaps)");
  }
  cl.command = d.command.empty() ? "help" : d.command;
  cl.names = d.names;
  const bool known = commands.empty() || std::any_of(commands.begin(), commands.end(), [&](const CommandInfo& c) {
                       return c.name == cl.command;
                     });
  if (!known) return Status::InvalidInput(fmt::format("unknown command '{}' (see rewind --help)", cl.command));
  return cl;
}

void ScrubPasswordFromArgv(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    char* a = argv[i];
    char* secret = nullptr;
    if (std::strncmp(a, "--password=", 11) == 0) secret = a + 11;
    else if (std::strncmp(a, "-p", 2) == 0 && a[2] != '\0' && a[2] != '-') secret = a + 2;
    if (secret != nullptr) std::memset(secret, 'x', std::strlen(secret));
  }
}

std::string FlagsOf(OptionGroup group) {
  std::string out;
  for (const OptionSpec& s : Table()) {
    if (s.group == group) out += fmt::format("{}--{}", out.empty() ? "" : ", ", s.name);
  }
  return out;
}

const char kConfigFileHelp[] =
    "Config file: `key = value` lines, keys are the long flag names; read from the first that\n"
    "exists of --config FILE, $REWIND_CONFIG, $XDG_CONFIG_HOME/rewind/rewind.conf (else\n"
    "~/.config/rewind/rewind.conf), the system's " REWIND_SYSTEM_CONFIG ",\n"
    "and for a binary in its build tree the repository's config/rewind.conf; never the\n"
    "current directory (one that exists but cannot be read is an error). Then the\n"
    "environment, then the flags: the last one wins.\n";

std::string OptionsHelp(const std::vector<CommandInfo>& commands, const std::string& footer) {
  Declared d(commands);
  d.app.footer(footer);
  return d.app.help();
}

ConfigPlaces BuiltInConfigPlaces() {
  return {REWIND_SYSTEM_CONFIG, ProgramDirectory().string(), REWIND_BUILD_TREE,
          REWIND_REPOSITORY_CONFIG};
}

Result<std::string> LocateConfigFile(const std::string& flag, const Environment& env,
                                     const ConfigPlaces& places) {
  namespace fs = std::filesystem;
  if (!flag.empty()) return flag;
  if (auto v = env("REWIND_CONFIG"); v && !v->empty()) return *v;
  std::vector<fs::path> candidates;
  if (auto xdg = env("XDG_CONFIG_HOME"); xdg && !xdg->empty()) {
    candidates.push_back(fs::path(*xdg) / "rewind" / "rewind.conf");
  } else if (auto home = env("HOME"); home && !home->empty()) {
    candidates.push_back(fs::path(*home) / ".config" / "rewind" / "rewind.conf");
  }
  if (!places.system_file.empty()) candidates.push_back(places.system_file);
  // The repository's sample only for the binary in its own build tree: an installed one
  // (or a copy anywhere else) never looks beside itself.
  std::error_code same_ec;
  if (!places.repository_file.empty() && !places.build_tree.empty() &&
      !places.program_dir.empty() && fs::equivalent(places.program_dir, places.build_tree, same_ec)) {
    candidates.push_back(places.repository_file);
  }
  for (const auto& c : candidates) {
    // Anything there counts (a dangling link, a directory, a file it may not read): reading
    // it then fails naming it, rather than silently falling through to the next place.
    std::error_code ec;
    const fs::file_status st = fs::symlink_status(c, ec);
    if (!ec && fs::exists(st)) return c.lexically_normal().string();
  }
  return std::string();
}

std::vector<OptionDoc> OptionDocs() {
  const ParsedOptions defaults;
  std::vector<OptionDoc> docs;
  for (const OptionSpec& s : Table()) {
    OptionDoc d{s.name, s.short_name, s.group, "", s.help, "", {}};
    // The password's value is attached (-pPW, --password=PW), never the next word.
    if (!s.flag && std::string(s.name) != "password") d.value_name = ValueName(s.name);
    if (s.show) d.default_value = s.show(defaults);
    for (const char* e : s.env) d.env.emplace_back(e);
    docs.push_back(std::move(d));
  }
  docs.push_back({"config", "", Group::kConnection, "FILE",
                  "read `key = value` defaults from FILE (see FILES)", "", {}});
  return docs;
}

std::string GroupTitle(OptionGroup group) { return GroupName(group); }

}  // namespace rw
