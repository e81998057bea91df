#include "pipeline/replay/replay_command.h"

#include <fmt/core.h>

#include <csignal>
#include <fstream>
#include <memory>
#include <optional>

#include "config/careful_file.h"
#include "pipeline/engine/run_spec.h"
#include "pipeline/replay/dry_run.h"
#include "pipeline/replay/inspect.h"
#include "pipeline/replay/replay.h"

namespace rw {
namespace {

// The run's spec (pipeline/engine/run_spec.h), or nullopt once its first problem was said.
std::optional<RunSpec> SpecOf(const ReplayOptions& o, RunSpec::Selection selection) {
  Result<RunSpec> spec = RunSpec::Make(PartsOf<RunSpec>(o), o.projectors, selection);
  if (!spec.ok()) {
    fmt::print(stderr, "rewind: {}\n", spec.status().message());
    return std::nullopt;
  }
  return std::move(*spec);
}

}  // namespace

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

int ListCommand(const ReplayOptions& options, std::FILE* out) {
  const std::optional<RunSpec> spec = SpecOf(options, RunSpec::Selection::kNone);
  return spec ? ListReadModels(*spec, out) : exit_code::kUsage;
}

int StatusCommand(const ReplayOptions& options, std::FILE* out) {
  const std::optional<RunSpec> spec = SpecOf(options, RunSpec::Selection::kNone);
  return spec ? ShowStatus(*spec, out) : exit_code::kUsage;
}

int VerifyNamedCommand(const ReplayOptions& options, std::FILE* out) {
  const std::optional<RunSpec> spec = SpecOf(options, RunSpec::Selection::kAllIfNone);
  return spec ? VerifyReadModels(*spec, spec->MakeSelected(), out) : exit_code::kUsage;
}

int ReplayCommand(const ReplayOptions& options, const std::vector<std::string>& args,
                  const std::atomic<bool>& stop, const std::atomic<int>& signal, std::FILE* out) {
  const std::optional<RunSpec> spec = SpecOf(options, RunSpec::Selection::kRequired);
  if (!spec) return exit_code::kUsage;
  const RunSpec& o = *spec;
  if (o.dry_run) return DryRunCommand(o, o.MakeSelected(), out);

  ReplaySummary sum = Replay(o, o.MakeSelected(), stop);
  if (!sum.projectors.empty() && (sum.swapped || sum.interrupted || sum.events_read > 0)) {
    fmt::print(out, "{}", sum.Text());
  }
  int stats_error = 0;
  if (!o.stats_json.empty()) {
    if (Status s = WriteCarefully(o.stats_json, sum.Json(), "--stats-json"); !s.ok()) {
      fmt::print(stderr, "rewind: {}\n", s.message());
      stats_error = exit_code::kError;
    }
  }
  const int by_signal = 128 + (signal.load() ? signal.load() : SIGINT);
  if (sum.interrupted && sum.rebuild_before_following) {  // a follow, stopped
    fmt::print(stderr,
               "rewind: stopped by signal while following; every read model committed what it had "
               "applied to the live tables.\nrewind: follow on from there with: {}\n",
               ResumeCommand(args, o.connection.database));
    return by_signal;
  }
  if (sum.interrupted) {
    std::string continued;
    for (const std::string& n : sum.continued) continued += (continued.empty() ? "" : ", ") + n;
    fmt::print(stderr,
               "rewind: stopped by signal; every read model committed what it had applied and "
               "the live tables are untouched{}.\nrewind: continue with: {}\n",
               continued.empty() ? "" : fmt::format(" (but for those continued in place: {})", continued),
               ResumeCommand(args, o.connection.database));
    return by_signal;
  }
  if (sum.cutover_gave_up) {
    fmt::print(stderr, "rewind: {}\nrewind: the live tables are untouched; continue with: {}\n",
               sum.status.message(), ResumeCommand(args, o.connection.database));
    return exit_code::kCutoverGaveUp;
  }
  if (!sum.status.ok()) {
    // After the swap (a follow that stopped on an error) the live tables are the rebuilt ones,
    // each holding what its read model committed up to its checkpoint.
    fmt::print(
        stderr, "rewind: error: {}\nrewind: {}\n", sum.status.message(),
        sum.swapped
            ? "the rebuilt read models had been swapped in before the error: the live tables keep "
              "what each committed up to its checkpoint (rewind status shows where)"
        : !sum.continued.empty()
            ? "nothing was swapped in; the read models that continued their live tables keep what each "
              "committed up to its checkpoint (rewind status shows where)"
            : "nothing was swapped in; the live tables are untouched.");
    return sum.ExitCode();
  }
  if (sum.failures > 0) {
    fmt::print(stderr,
               "rewind: {} event(s) could not be applied and were recorded in {} (run {})\n",
               sum.failures, kFailureTable, sum.run_id);
  }
  return stats_error ? stats_error : sum.ExitCode();
}

}  // namespace rw
