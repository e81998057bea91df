// The rewind command line: parses options, runs one command, maps the outcome to an
// exit code. See `rewind --help`.
#include <fmt/core.h>

#include <atomic>
#include <csignal>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <optional>
#include <fstream>
#include <termios.h>
#include <unistd.h>

#include "config/options.h"
#include "pipeline/replay/inspect.h"
#include "pipeline/replay/dry_run.h"
#include "pipeline/ingest/ingest.h"
#include "pipeline/replay/replay.h"
#include "pipeline/stress/stress.h"

namespace {

std::atomic<bool> g_stop{false};
std::atomic<int> g_signal{0};

void OnSignal(int sig) {
  if (g_stop.exchange(true)) {
    // A second Ctrl-C: the user insists. What is committed stays committed.
    static const char msg[] = "\nrewind: stopped at once; run `rewind replay --resume` to continue\n";
    (void)!write(STDERR_FILENO, msg, sizeof msg - 1);
    _exit(128 + sig);
  }
  g_signal.store(sig);
}

// Reads a password from the terminal with echo off, as the mariadb client's -p does.
std::optional<std::string> AskPassword() {
  const int fd = open("/dev/tty", O_RDWR | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  (void)!write(fd, "Enter password: ", 16);
  termios old{};
  const bool tty = tcgetattr(fd, &old) == 0;
  if (tty) {
    termios quiet = old;
    quiet.c_lflag &= ~static_cast<tcflag_t>(ECHO);
    tcsetattr(fd, TCSAFLUSH, &quiet);
  }
  std::string pw;
  char ch;
  while (read(fd, &ch, 1) == 1 && ch != '\n') pw += ch;
  if (tty) tcsetattr(fd, TCSAFLUSH, &old);
  (void)!write(fd, "\n", 1);
  close(fd);
  return pw;
}

// The resume command as the user must type it: the selection and every option that picks
// the server, the database and the event source (never the password).
std::string ResumeCommand(const std::vector<std::string>& args, const std::string& database) {
  auto quote = [](const std::string& a) {
    return a.find_first_of(" '\"\\$`") == std::string::npos ? a : "'" + a + "'";
  };
  std::string out = "rewind replay --resume";
  bool has_database = false;
  for (const std::string& a : args) {
    has_database = has_database || a == "--database" || a == "-D" || a.rfind("--database=", 0) == 0;
  }
  if (!has_database && !database.empty()) out += " --database " + quote(database);
  for (const std::string& a : args) {
    if (a == "replay" || a == "--resume" || a == "-p" || a == "--password" ||
        a.rfind("--password=", 0) == 0 || (a.rfind("-p", 0) == 0 && a.size() > 2 && a[2] != '-')) {
      continue;
    }
    out += " " + quote(a);
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace rw;
  std::vector<std::string> args(argv + 1, argv + argc);
  Result<CommandLine> cl = ParseCommandLine(args, SystemEnvironment());
  ScrubPasswordFromArgv(argc, argv);  // the parsed copy keeps it; `ps` no longer shows it
  if (!cl.ok()) {
    fmt::print(stderr, "rewind: {}\n", cl.status().message());
    return exit_code::kUsage;
  }
  ReplayOptions& o = cl->options;
  if (cl->command == "help") {
    fmt::print("{}", HelpText());
    return exit_code::kOk;
  }
  if (cl->command == "list") return ListCommand(o, stdout);
  if (cl->prompt_password) {
    std::optional<std::string> pw = AskPassword();
    if (!pw) {
      fmt::print(stderr, "rewind: -p asks for the password on a terminal, and there is none; "
                         "use the config file, $REWIND_PASSWORD or --password=...\n");
      return exit_code::kUsage;
    }
    o.connection.password = *pw;
  }
  if (!cl->config_path.empty() && cl->config_path != "/dev/null" && o.progress != ProgressMode::kQuiet) {
    fmt::print(stderr, "rewind: config file: {}\n", cl->config_path);
  }
  if (!o.stats_json.empty()) {
    // Found out now, not after an hour of rebuilding.
    std::ofstream probe(o.stats_json, std::ios::app);
    if (!probe) {
      fmt::print(stderr, "rewind: cannot write --stats-json file '{}': {}\n", o.stats_json,
                 std::strerror(errno));
      return exit_code::kUsage;
    }
  }
  struct sigaction sa {};
  sa.sa_handler = OnSignal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  if (cl->command == "status") return StatusCommand(o, stdout);
  if (cl->command == "ingest") return IngestCommand(o, o.projectors, g_stop, stdout);
  if (cl->command == "stress") {
    if (!o.projectors.empty()) {
      fmt::print(stderr, "rewind: stress takes no names (its options: --quick, --only, --stress-database, --out, --keep)\n");
      return exit_code::kUsage;
    }
    return StressCommand(o, g_stop, stdout);
  }

  ReplayOptions selection = o;
  if (cl->command == "verify" && selection.projectors.empty()) selection.all = true;
  Result<std::vector<std::unique_ptr<Projector>>> selected = SelectProjectors(selection);
  if (!selected.ok()) {
    fmt::print(stderr, "rewind: {}\n", selected.status().message());
    return 2;
  }
  if (cl->command == "verify") return VerifyCommand(selection, std::move(*selected), stdout);
  if (o.dry_run) return DryRunCommand(o, std::move(*selected), stdout);


  ReplaySummary sum = Replay(o, std::move(*selected), g_stop);
  if (!sum.projectors.empty() && (sum.swapped || sum.interrupted || sum.events_read > 0)) {
    fmt::print("{}", sum.Text());
  }
  int stats_error = 0;
  if (!o.stats_json.empty()) {
    std::ofstream out(o.stats_json, std::ios::trunc);
    out << sum.Json();
    out.close();
    if (!out) {
      fmt::print(stderr, "rewind: could not write --stats-json file '{}'\n", o.stats_json);
      stats_error = exit_code::kError;
    }
  }
  if (sum.interrupted && sum.swapped) {  // a follow, stopped
    fmt::print(stderr,
               "rewind: stopped by signal while following; every read model committed what it had "
               "applied to the live tables. The same command follows again (after a rebuild).\n");
    return 128 + (g_signal.load() ? g_signal.load() : SIGINT);
  }
  if (sum.interrupted) {
    fmt::print(stderr,
               "rewind: stopped by signal; every read model committed what it had applied and "
               "the live tables are untouched.\nrewind: continue with: {}\n",
               ResumeCommand(args, o.connection.database));
    return 128 + (g_signal.load() ? g_signal.load() : SIGINT);
  }
  if (sum.cutover_gave_up) {
    fmt::print(stderr, "rewind: {}\nrewind: the live tables are untouched; continue with: {}\n",
               sum.status.message(), ResumeCommand(args, o.connection.database));
    return exit_code::kCutoverGaveUp;
  }
  if (!sum.status.ok()) {
    // After the swap (a follow that stopped on an error) the live tables are the rebuilt ones,
    // each holding what its read model committed up to its checkpoint.
    fmt::print(stderr, "rewind: error: {}\nrewind: {}\n", sum.status.message(),
               sum.swapped ? "the rebuilt read models had been swapped in before the error: the live tables keep "
                             "what each committed up to its checkpoint (rewind status shows where)"
                           : "nothing was swapped in; the live tables are untouched.");
    return sum.ExitCode();
  }
  if (sum.failures > 0) {
    fmt::print(stderr, "rewind: {} event(s) could not be applied and were recorded in {} (run {})\n",
               sum.failures, kFailureTable, sum.run_id);
  }
  return stats_error ? stats_error : sum.ExitCode();
}
