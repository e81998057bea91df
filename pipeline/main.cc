// The rewind command line: parses the options, asks for the password, installs the signal
// handlers and runs one command of the command table (pipeline/commands.h), whose run
// function returns the exit code. See `rewind --help`.
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

#include "config/careful_file.h"
#include "config/options.h"
#include "pipeline/commands.h"

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

}  // namespace

int main(int argc, char** argv) {
  using namespace rw;
  std::vector<std::string> args(argv + 1, argv + argc);
  Result<CommandLine> cl = ParseRewindCommandLine(args, SystemEnvironment());
  ScrubPasswordFromArgv(argc, argv);  // the parsed copy keeps it; `ps` no longer shows it
  if (!cl.ok()) {
    fmt::print(stderr, "rewind: {}\n", cl.status().message());
    return exit_code::kUsage;
  }
  const Command* command = FindCommand(cl->command);  // the parser knows only the table's
  const CommandContext context{args, g_stop, g_signal, stdout};
  if (command->offline) return command->run(*cl, context);

  ParsedOptions& o = cl->options;
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
    // Found out now, not after an hour of rebuilding; and nothing is written through the name
    // yet (a link planted there would be followed).
    if (Status s = CheckWritable(o.stats_json, "--stats-json"); !s.ok()) {
      fmt::print(stderr, "rewind: cannot write {}\n", s.message());
      return exit_code::kUsage;
    }
  }
  struct sigaction sa {};
  sa.sa_handler = OnSignal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  return command->run(*cl, context);
}
