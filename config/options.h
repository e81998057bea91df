// Options: everything a rewind command can be told, and how it is read.
//
// Every option is declared once, in the option table of options.cc: its flag, its
// environment variables, its config-file key (the flag's long name), its group, its default
// (the field initialisers below) and its --help line. Each group is one part struct below;
// each command's options struct (ReplayOptions, IngestOptions, StressOptions) is made of the
// parts it takes, and the command table (pipeline/commands.h) says which struct each takes. Precedence, lowest first: the defaults,
// the config file, the environment, the command line. A value from a higher source wins
// in every combination: `--host` on the command line beats a socket from the environment
// (and the other way round), so the server rewind talks to is the one the user named last.
//
// The config file is read from one named place only, the first that exists of:
// --config FILE, $REWIND_CONFIG, $XDG_CONFIG_HOME/rewind/rewind.conf (or
// ~/.config/rewind/rewind.conf), the install's system file (<sysconfdir>/rewind/rewind.conf:
// /etc/rewind/rewind.conf for a /usr install), and, for a binary running from its own build
// tree only, the repository's config/rewind.conf. Never the current directory, and an
// installed binary never looks beside itself. A place that exists but cannot be read (a
// directory, no permission) is an error naming it, not skipped.
//
// Passwords: `-p`/`--password` with no attached value prompts on the terminal (as the
// mariadb client does); `-pSECRET`/`--password=SECRET` take it from the command line (main
// then scrubs it from argv so that `ps` does not show it); the config file and
// $REWIND_PASSWORD / $MYSQL_PWD are the non-interactive ways.
//
// Pure data and parsing; thread-compatible.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "base/event_id.h"
#include "base/status.h"
#include "projectors/segment.h"
#include "stages/db/connection.h"
#include "stages/control/progress.h"
#include "stages/flow/projector_runner.h"
#include "stages/flow/reader.h"

namespace rw {

// One table of exit codes, kept by every command (and printed by --help).
namespace exit_code {
inline constexpr int kOk = 0;              // done
inline constexpr int kError = 1;           // error; nothing swapped in
inline constexpr int kUsage = 2;           // bad usage
inline constexpr int kFailedEvents = 3;    // swapped in, but some events failed
inline constexpr int kDiffers = 4;         // verify found differences
inline constexpr int kOverBudget = 5;      // over a failure budget: nothing swapped
inline constexpr int kCutoverGaveUp = 6;   // the cut-over gave up; live tables untouched
inline constexpr int kEmptyBuild = 7;      // a read model received no event: nothing swapped
}  // namespace exit_code

// The groups of the option table (options.cc): each is one part below, and a command's
// options struct is made of the parts of the groups it takes.
enum class OptionGroup { kConnection, kEvents, kReading, kReplay, kControl, kIngest, kStress, kOutput };

// The server (like the mariadb client's options).
struct ServerPart {
  static constexpr OptionGroup kGroup = OptionGroup::kConnection;
  ConnectionOptions connection;
};

// The event table and its columns (defaults: the blog's schema).
struct EventTablePart {
  static constexpr OptionGroup kGroup = OptionGroup::kEvents;
  EventTableOptions events;
};

// How `--follow` learns of new commits: the server's binlog where it can be read, else by
// polling the event table (auto); or one of them, refusing the binlog where it cannot be read.
enum class FollowSource { kAuto, kBinlog, kPoll };

// How the events are read or written in batches, and followed: replay and ingest.
struct ReadingPart {
  static constexpr OptionGroup kGroup = OptionGroup::kReading;
  // Events per read batch (ingest: lines per insert transaction): larger amortises
  // per-batch costs, costs memory in flight.
  size_t batch_size = ReaderOptions().batch_size;  // the default is the reader's
  // Replay: after the swap, keep applying new events to the live tables until stopped.
  // Ingest: keep reading what is appended to the one file until stopped.
  bool follow = false;
  // How often follow mode looks for new events, in seconds.
  double poll_seconds = 1.0;
  // Replay: how following learns of new commits (pipeline/replay/cutover.cc, "Following").
  FollowSource follow_source = FollowSource::kAuto;
  // Replay: print what a run would do (events, rows, size, duration, tables, grants) and
  // touch nothing. Ingest: count and write nothing.
  bool dry_run = false;
};

// A rebuild: which read models, and how the pipeline runs.
struct ReplayPart {
  static constexpr OptionGroup kGroup = OptionGroup::kReplay;
  // A TOML file of declared read models (config/models.h): they join the compiled ones.
  std::string models_file;
  bool all = false;
  // Continue an interrupted rebuild from its checkpoints instead of starting over; a
  // rebuild that swaps also takes every read model's complete --build-only build.
  bool resume = false;
  // Build the shadow tables (<table>__rewind_new, under the rebuild's named locks) and mark
  // them built, without the swap: builders on several hosts, then one `--resume` swaps all.
  bool build_only = false;
  // With build_only: build only the keys of each declared read model that hash to this
  // segment (projectors/segment.h); the swap (--resume) merges the N segments. None: whole.
  std::optional<Segment> segment;
  // A declared read model's live table that the application made is rebuilt in its shape
  // (stages/db/live_shape.h); this replaces it with rewind's shape instead, keeping it aside.
  bool reshape = false;
  // Stop at the first event that cannot be applied, instead of recording it and going on.
  bool stop_on_failure = false;
  // Batches in the pipeline at once, plus the one being read and those read ahead on the
  // other connections: the memory bound ((max_in_flight + read_connections) x batch_size x
  // payload). With two connections reading, 2 keeps both cores busy; more only cost memory
  // (all eight at 2M: 4 peaked at 207 MiB, 2 at 185, wall 0.97x; perf/README.md).
  size_t max_in_flight = 2;
  // Connections reading pages at once (stages/flow/reader.h). Two: the server sends each result
  // from one thread, and a default server's sending thread is the read phase's limit.
  size_t read_connections = 2;
  // Bytes the server writes each page of events in (stages/flow/reader.h, ReaderOptions::
  // result_buffer): a server left at the default net_buffer_length writes in 16 KB pieces,
  // every one a wakeup on both sides. 0 leaves the server's own size.
  size_t result_buffer = 128 * 1024;
  // The server the bulk read of events goes to (a replica of the primary above, reached
  // with the same user and password): a host (and port) or a socket; empty: the primary.
  // The read models, checkpoints, locks, catch-up and cut-over stay on the primary
  // (pipeline/replay/read_replica.h).
  // Several servers: --read-host takes a comma-separated list of HOST or HOST:PORT
  // (--read-port for those without one) and --read-socket one of sockets; the pages are
  // spread over them all (pipeline/replay/read_replica.h).
  std::string read_host, read_socket;
  unsigned read_port = 0;
  // The read servers those name, in order (hosts, then sockets), filled when the options are
  // checked; empty: the primary.
  struct ReadServer {
    std::string host;
    unsigned port = 0;
    std::string socket;
  };
  std::vector<ReadServer> read_servers;
  // How long a run waits at start to see its marker on the read server before refusing it.
  double read_wait_seconds = 60;
  // How the replica's events are compared with the primary's before they are read
  // (pipeline/replay/read_replica.h, CompareWithPrimary): false, each chunk of ids' count
  // and sum of ids; true, also a checksum of every event's class and payload.
  bool read_check_full = false;
  // A projector commits at least every this many events: what a crash can cost to redo.
  uint64_t flush_every_events = RunnerOptions().flush_every_events;  // the runner's default
  // ...and whenever it holds this many distinct pending rows: bounds memory by keys.
  size_t flush_max_rows = RunnerOptions().flush_max_rows;  // the runner's default
  // The memory the read models' state may hold together (--memory): past it the largest
  // flush their rows as deltas (stages/flow/memory_budget.h).
  size_t memory_bytes = kDefaultMemoryBudget;
  // Write while reading: every this many events each read model hands its rows to a writer
  // thread of its own (stages/flow/projector_runner.h); 0: it writes only at the thresholds
  // above and at the end.
  uint64_t write_every_events = RunnerOptions().write_every_events;  // the runner's default
  // The longest an application's insert transaction stays open. An id missing between two
  // events is final once the event table's time column (--time-column: the application's
  // clock) has moved this far past the event above it; following, also once it was watched
  // this long by rewind's clock (given up, counted in status). A cut-over makes every
  // missing id final at once. Longer waits cost nothing when rebuilding history.
  double settle_seconds = ReaderOptions().settle_seconds;  // the default is the reader's
  // Judge missing ids by ids instead of the time column (whose values may not be
  // the insert times, e.g. events copied in with their old times): final once this many
  // ids below the head. 0: by the time column; a table without it: 10,000.
  uint64_t settle_ids = ReaderOptions().settle_ids;
  // Following: how often the holes judged final (in the last hour) are read again, as a
  // net under the proof and the fallback rule; an event found there is applied where the
  // read model takes events out of order, else counted as missed: status says the read
  // model needs a rebuild. 0: never.
  double reconcile_seconds = 60;
  // How long the cut-over keeps trying to take its locks (the event table's READ lock, the
  // live tables' RENAME) before it gives up cleanly (exit 6, resumable). Each single wait
  // is at most about a second, so no application query waits longer than that.
  double cutover_timeout_seconds = 60.0;
};

// Migration-day controls of a rebuild.
struct ControlPart {
  static constexpr OptionGroup kGroup = OptionGroup::kControl;
  // The reader never exceeds this many events per second (0: no cap). A token bucket:
  // pages shrink to a quarter second's worth, so the cap holds over any second.
  uint64_t max_events_per_second = 0;
  // The reader pauses while the server's Threads_running, less rewind's own running
  // connections, is above this (0: off); checked every second.
  uint64_t throttle_threads_running = 0;
  // A failure budget per read model over the whole run (resumed parts included): at most
  // this many failed events, or this percent of the events the read model was given. Over
  // it, nothing is swapped and the exit code is 5.
  std::optional<uint64_t> max_failures;
  std::optional<double> max_failures_percent;
  // Allow a build in which a read model receives no event (e.g. an --until-id below the
  // first event). Off: such a build is refused, as it is more often a mistake than a wish.
  bool allow_empty = false;
  // Rebuild up to a point, beside the live tables (REQUIRES: into).
  std::optional<EventId> until_id;            // events with id <= this: a BIGINT or BIGINT UNSIGNED
  std::string until_time;                     // events whose time column is <= this
  // Build <table><into> and never swap it in: its own checkpoints and locks.
  std::string into;
  // verify: compare the live tables with the <table><against> tables of an --into build.
  std::string against;
};

// `rewind ingest` (pipeline/ingest/ingest.h).
struct IngestPart {
  static constexpr OptionGroup kGroup = OptionGroup::kIngest;
  // Ignore the saved position of each file and read it from its start.
  bool from_start = false;
};

// `rewind stress` (pipeline/stress/stress.h).
struct StressPart {
  static constexpr OptionGroup kGroup = OptionGroup::kStress;
  bool quick = false;                     // smaller volumes, fewer loads
  std::vector<int> only;                  // questions 1..4, 0 the user's table (empty: all)
  std::string database = "rewind_stress";  // its own (the scratch database)
  std::string out = "stress-out";
  // --events-table was given: your event table (in --database) is measured too, read only,
  // on a sample of its first events copied into the stress database.
  bool own_table = false;
  uint64_t sample = 0;                    // events of the sample (0: 200,000; --quick 20,000)
  std::string your_models_file;           // --models (a Replay option, handed over by RunStress)
  bool keep = false;                      // keep the database at the end
  int repeat = 3;                         // runs of each measured point
  int budget_ms = 50;                     // the load budget of the snapshot advice
};

// What is printed, and where.
struct OutputPart {
  static constexpr OptionGroup kGroup = OptionGroup::kOutput;
  ProgressMode progress = ProgressMode::kAuto;
  std::string stats_json;  // write the final summary as JSON to this file
  bool json = false;       // `status`, dry run: print JSON instead of text
  // `status --format`: "" (not given), "text", "json" (sets `json` too), "prometheus".
  std::string format;
  std::string textfile;    // `status --format prometheus`: write it to FILE (temp + rename)
};

// Each command's options: the parts it takes. The command table (pipeline/commands.h)
// builds one from the parsed parts (OptionsFor) and hands it to the command's run function.

// replay, and its inspections list, status and verify.
struct ReplayOptions : ServerPart, EventTablePart, ReadingPart, ReplayPart, ControlPart, OutputPart {
  std::vector<std::string> projectors;  // names; every projector when `all`
};

struct IngestOptions : ServerPart, EventTablePart, ReadingPart, IngestPart, OutputPart {};

struct StressOptions : ServerPart, EventTablePart, StressPart {};

// What the sources gave, every part of every group: parsing fills it, and each command takes
// its own struct out of it (OptionsFor). An option of a group the command does not take is
// accepted and ignored, as it always was (a config file serves every command).
struct ParsedOptions : ServerPart, EventTablePart, ReadingPart, ReplayPart, ControlPart, IngestPart,
                       StressPart, OutputPart {};

// The parts `To` shares with `from` (any struct made of the parts above: a command's options,
// the parsed ones, a run's spec), copied; its other members are left as constructed.
template <typename To, typename From>
To PartsOf(const From& from) {
  To to;
  auto take = [&]<typename Part>(const Part* /*part*/) {
    if constexpr (std::is_base_of_v<Part, To> && std::is_base_of_v<Part, From>) {
      static_cast<Part&>(to) = static_cast<const Part&>(from);
    }
  };
  take(static_cast<const ServerPart*>(nullptr));
  take(static_cast<const EventTablePart*>(nullptr));
  take(static_cast<const ReadingPart*>(nullptr));
  take(static_cast<const ReplayPart*>(nullptr));
  take(static_cast<const ControlPart*>(nullptr));
  take(static_cast<const IngestPart*>(nullptr));
  take(static_cast<const StressPart*>(nullptr));
  take(static_cast<const OutputPart*>(nullptr));
  return to;
}

// The parts of `Options` (a command's struct), as parsed.
template <typename Options>
Options OptionsFor(const ParsedOptions& parsed) {
  return PartsOf<Options>(parsed);
}

// The groups whose options `Options` takes: the kGroup of each of its parts.
template <typename Options>
std::vector<OptionGroup> GroupsOf() {
  std::vector<OptionGroup> groups;
  auto part = [&]<typename Part>(const Part*) {
    if constexpr (std::is_base_of_v<Part, Options>) groups.push_back(Part::kGroup);
  };
  part(static_cast<const ServerPart*>(nullptr));
  part(static_cast<const EventTablePart*>(nullptr));
  part(static_cast<const ReadingPart*>(nullptr));
  part(static_cast<const ReplayPart*>(nullptr));
  part(static_cast<const ControlPart*>(nullptr));
  part(static_cast<const IngestPart*>(nullptr));
  part(static_cast<const StressPart*>(nullptr));
  part(static_cast<const OutputPart*>(nullptr));
  return groups;
}

// What the parser and --help know of a command (the rows of pipeline/commands.h).
struct CommandInfo {
  std::string name;
  std::string names;                // what its positionals are ("read models"); "" for none
  std::vector<OptionGroup> groups;  // the groups of its options
};

struct CommandLine {
  std::string command;              // a name of the command table, "help" or "version"
  std::vector<std::string> names;   // the positionals after it (read models, log files)
  ParsedOptions options;
  std::string config_path;       // the config file that was read ("" when none)
  bool prompt_password = false;  // -p / --password without a value: ask on the terminal
};

using Environment = std::function<std::optional<std::string>(const std::string&)>;

// The process environment (getenv).
Environment SystemEnvironment();

// Parses argv (after the program name). `env` looks up environment variables. The first
// positional is the command, one of `commands` (none given: any word, for the tools that
// borrow rewind's options: perf/, rewind-gen, the tests).
Result<CommandLine> ParseCommandLine(const std::vector<std::string>& args, const Environment& env,
                                     const std::vector<CommandInfo>& commands = {});

// Overwrites, in place, every password given on the command line (`-pX`, `--password=X`)
// so that it no longer shows in `ps` or /proc/PID/cmdline. Call after ParseCommandLine.
void ScrubPasswordFromArgv(int argc, char** argv);

// The config file's paragraph of --help.
extern const char kConfigFileHelp[];

// Where the config file is looked for after --config and $REWIND_CONFIG (see the top).
struct ConfigPlaces {
  std::string system_file;      // <sysconfdir>/rewind/rewind.conf ("" : none)
  std::string program_dir;      // the running binary's directory
  std::string build_tree;       // the build tree it was built in (CMAKE_BINARY_DIR)
  std::string repository_file;  // the repository's config/rewind.conf
};

// This binary's places: the ones CMake compiled in, and /proc/self/exe's directory.
ConfigPlaces BuiltInConfigPlaces();

// The one config file to read ("" when none): the first place that exists.
Result<std::string> LocateConfigFile(const std::string& flag, const Environment& env,
                                     const ConfigPlaces& places);

// One row of the option table as --help and the man page show it.
struct OptionDoc {
  std::string name;        // the long flag without dashes
  std::string short_name;  // "" or e.g. "-u"
  OptionGroup group;
  std::string value_name;  // what follows the flag ("N", "FILE"); "" for a flag
  std::string help;
  std::string default_value;     // "" when none is shown
  std::vector<std::string> env;  // environment variables, the first one wins
};

// The option table's rows in order, then --config.
std::vector<OptionDoc> OptionDocs();

// A group's title in --help ("Connection (like the mariadb client)").
std::string GroupTitle(OptionGroup group);

// The long flags of the options of `group`, e.g. "--quick, --only, ..." (for messages).
std::string FlagsOf(OptionGroup group);

// --help: the usage, every option under its group (with the commands that take it), then
// `footer` (the command table's commands and exit codes: pipeline/commands.h HelpText).
std::string OptionsHelp(const std::vector<CommandInfo>& commands, const std::string& footer);

}  // namespace rw
