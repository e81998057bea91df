// The rewind command line: parses options, runs one command, maps the outcome to an
// exit code. See `rewind --help`.
#include <fmt/core.h>

#include <atomic>
#include <csignal>
#include <cstdlib>
#include <fstream>
#include <unistd.h>

#include "config/options.h"
#include "pipeline/commands.h"
#include "pipeline/replay.h"

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

}  // namespace

int main(int argc, char** argv) {
  using namespace rw;
  std::vector<std::string> args(argv + 1, argv + argc);
  Result<CommandLine> cl = ParseCommandLine(args, SystemEnvironment());
  if (!cl.ok()) {
    fmt::print(stderr, "rewind: {}\n", cl.status().message());
    return 2;
  }
  const ReplayOptions& o = cl->options;
  if (cl->command == "help") {
    fmt::print("{}", HelpText());
    return 0;
  }
  if (cl->command == "list") return ListCommand(stdout);
  if (cl->command == "status") return StatusCommand(o, stdout);

  ReplayOptions selection = o;
  if (cl->command == "verify" && selection.projectors.empty()) selection.all = true;
  Result<std::vector<std::unique_ptr<Projector>>> selected = SelectProjectors(selection);
  if (!selected.ok()) {
    fmt::print(stderr, "rewind: {}\n", selected.status().message());
    return 2;
  }
  if (cl->command == "verify") return VerifyCommand(selection, std::move(*selected), stdout);

  struct sigaction sa {};
  sa.sa_handler = OnSignal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);

  ReplaySummary sum = Replay(o, std::move(*selected), g_stop);
  if (!sum.projectors.empty() && (sum.swapped || sum.interrupted || sum.events_read > 0)) {
    fmt::print("{}", sum.Text());
  }
  if (!o.stats_json.empty()) {
    std::ofstream(o.stats_json) << sum.Json();
  }
  if (sum.interrupted) {
    std::string selection = o.all ? "--all" : "";
    for (const auto& n : o.projectors) selection += (selection.empty() ? "" : " ") + n;
    fmt::print(stderr,
               "rewind: stopped by signal; every read model committed what it had applied and "
               "the live tables are untouched.\nrewind: continue with: rewind replay --resume {}\n",
               selection);
    return 128 + (g_signal.load() ? g_signal.load() : SIGINT);
  }
  if (!sum.status.ok()) {
    fmt::print(stderr, "rewind: error: {}\nrewind: nothing was swapped in; the live tables are untouched.\n",
               sum.status.message());
    return sum.ExitCode();
  }
  if (sum.failures > 0) {
    fmt::print(stderr, "rewind: {} event(s) could not be applied and were recorded in {} (run {})\n",
               sum.failures, kFailureTable, sum.run_id);
  }
  return sum.ExitCode();
}
