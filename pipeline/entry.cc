#include "pipeline/entry.h"

#include <fmt/core.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <optional>
#include <termios.h>
#include <unistd.h>

#include "config/careful_file.h"
#include "config/options.h"

namespace rw {
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

// Replaces this process with `program`, given `args`; returns only when that failed.
int ExecProgram(const Command& command, const std::vector<std::string>& args) {
  const std::string path = FindProgram(command.program);
  if (path.empty()) {
    fmt::print(stderr,
               "rewind: `rewind {}` is run by {}, found neither beside rewind nor in ../lib/rewind/ "
               "(a partial install?)\n",
               command.name, command.program);
    return exit_code::kError;
  }
  std::vector<char*> argv;
  argv.push_back(const_cast<char*>(path.c_str()));
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  execv(path.c_str(), argv.data());
  fmt::print(stderr, "rewind: cannot run {}: {}\n", path, std::strerror(errno));
  return exit_code::kError;
}

// Everything after the parse: the password, the config file's line, --stats-json's check,
// the signal handlers, then `run`.
int Run(CommandLine& cl, const std::vector<std::string>& args,
        int (*run)(const CommandLine&, const CommandContext&)) {
  ParsedOptions& o = cl.options;
  if (cl.prompt_password) {
    std::optional<std::string> pw = AskPassword();
    if (!pw) {
      fmt::print(stderr, "rewind: -p asks for the password on a terminal, and there is none; "
                         "use the config file, $REWIND_PASSWORD or --password=...\n");
      return exit_code::kUsage;
    }
    o.connection.password = *pw;
  }
  if (!cl.config_path.empty() && cl.config_path != "/dev/null" && o.progress != ProgressMode::kQuiet) {
    fmt::print(stderr, "rewind: config file: {}\n", cl.config_path);
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
  const CommandContext context{args, g_stop, g_signal, stdout};
  return run(cl, context);
}

}  // namespace

std::string FindProgram(const std::string& program) {
  std::error_code ec;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return {};
  for (const std::filesystem::path& dir : {self.parent_path(), self.parent_path() / ".." / "lib" / "rewind"}) {
    const std::filesystem::path candidate = dir / program;
    if (access(candidate.c_str(), X_OK) == 0) return candidate.lexically_normal().string();
  }
  return {};
}

int RewindMain(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  Result<CommandLine> cl = ParseRewindCommandLine(args, SystemEnvironment());
  if (!cl.ok()) {
    fmt::print(stderr, "rewind: {}\n", cl.status().message());
    return exit_code::kUsage;
  }
  const Command* command = FindCommand(cl->command);  // the parser knows only the table's
  // Before the password prompt and the scrub: the program parses the same arguments (and
  // scrubs its own argv at once).
  if (!command->program.empty()) return ExecProgram(*command, args);
  ScrubPasswordFromArgv(argc, argv);  // the parsed copy keeps it; `ps` no longer shows it
  if (command->offline) {
    const CommandContext context{args, g_stop, g_signal, stdout};
    return command->run(*cl, context);
  }
  return Run(*cl, args, command->run);
}

int ProgramMain(int argc, char** argv, const std::string& command,
                int (*run)(const CommandLine&, const CommandContext&)) {
  std::vector<std::string> args(argv + 1, argv + argc);
  Result<CommandLine> cl = ParseRewindCommandLine(args, SystemEnvironment());
  if (!cl.ok() || cl->command != command) {
    // Run on its own (`rewind-stress --quick`): the command's name is taken as the first word.
    args.insert(args.begin(), command);
    Result<CommandLine> again = ParseRewindCommandLine(args, SystemEnvironment());
    if (again.ok() || cl.ok()) cl = std::move(again);
  }
  ScrubPasswordFromArgv(argc, argv);
  if (!cl.ok()) {
    fmt::print(stderr, "rewind: {}\n", cl.status().message());
    return exit_code::kUsage;
  }
  if (cl->command != command) {  // help, version
    const Command* other = FindCommand(cl->command);
    const CommandContext context{args, g_stop, g_signal, stdout};
    if (other != nullptr && other->offline) return other->run(*cl, context);
    fmt::print(stderr, "rewind: this program runs `rewind {}`, not `rewind {}`\n", command, cl->command);
    return exit_code::kUsage;
  }
  return Run(*cl, args, run);
}

}  // namespace rw
