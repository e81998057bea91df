#include "pipeline/commands.h"

#include <fmt/core.h>

#include <algorithm>

#include "pipeline/ingest/ingest.h"
#include "pipeline/replay/replay_command.h"
#include "pipeline/version.h"

namespace rw {
namespace {

constexpr const char* kHowAReplayWorks =
    R"(How a replay works: one reader pages through the event table by id; every selected read
model is rebuilt concurrently into a shadow table (<table>__rewind_new) on its own
connection. Then the cut-over: rewind catches up with the events appended meanwhile, holds
inserts into the event table off for a moment (LOCK TABLES ... READ, about a second at
most), applies the last events and swaps every table in with one RENAME TABLE. Bad events
are recorded in rewind_failures and skipped (--stop-on-failure stops instead). Ctrl-C
stops cleanly; `rewind replay --resume` continues.
)";

ReplayOptions Replaying(const CommandLine& cl) {
  ReplayOptions o = OptionsFor<ReplayOptions>(cl.options);
  o.projectors = cl.names;
  return o;
}

int RunHelp(const CommandLine&, const CommandContext& c) {
  fmt::print(c.out, "{}", HelpText());
  return exit_code::kOk;
}

int RunVersion(const CommandLine&, const CommandContext& c) {
  fmt::print(c.out, "{}", VersionText());
  return exit_code::kOk;
}

int RunReplay(const CommandLine& cl, const CommandContext& c) {
  return ReplayCommand(Replaying(cl), c.args, c.stop, c.signal, c.out);
}

int RunList(const CommandLine& cl, const CommandContext& c) {
  return ListCommand(Replaying(cl), c.out);
}

int RunStatus(const CommandLine& cl, const CommandContext& c) {
  return StatusCommand(Replaying(cl), c.out);
}

int RunVerify(const CommandLine& cl, const CommandContext& c) {
  return VerifyNamedCommand(Replaying(cl), c.out);
}

int RunIngest(const CommandLine& cl, const CommandContext& c) {
  return IngestCommand(OptionsFor<IngestOptions>(cl.options), cl.names, c.stop, c.out);
}

}  // namespace

const std::vector<Command>& Commands() {
  static const std::vector<Command> commands = {
      {"replay",
       "read models",
       {{"rewind replay --all", "rebuild every read model in one pass over the events"},
        {"rewind replay NAME...", "rebuild only the named read models"},
        {"rewind replay --resume ...", "continue an interrupted rebuild from its checkpoints"},
        {"rewind replay NAME... --build-only",
         "build beside the live tables, on any host; then one replay --resume of them all swaps them in"},
        {"rewind replay NAME --build-only --segment I/N",
         "build the keys of a declared read model in segment I of N; one replay --resume merges the N and swaps"},
        {"rewind replay --all --follow", "rebuild, swap in, then keep applying new events"},
        {"rewind replay --all --dry-run",
         "what a run would read, write and need; touches nothing"}},
       GroupsOf<ReplayOptions>(),
       false,
       kHowAReplayWorks,
       RunReplay},
      {"list",
       "",
       {{"rewind list", "the read models rewind can build, their tables and event types"}},
       GroupsOf<ReplayOptions>(),
       true,
       "",
       RunList},
      {"status",
       "",
       {{"rewind status [--json]", "checkpoints, lag, late and given-up events, failures"},
        {"rewind status --format prometheus [--textfile FILE]", "the same as Prometheus metrics"}},
       GroupsOf<ReplayOptions>(),
       false,
       "",
       RunStatus},
      {"verify",
       "read models",
       {{"rewind verify [NAME...]", "rebuild into scratch tables and compare with the live ones"},
        {"rewind verify --against SUFFIX", "compare the live tables with an --into build"}},
       GroupsOf<ReplayOptions>(),
       false,
       "",
       RunVerify},
      {"ingest",
       "log files",
       {{"rewind ingest FILE...",
         "append the visits of access logs to the event table\n(resumable; --from-start, "
         "--dry-run, --follow)"}},
       GroupsOf<IngestOptions>(),
       false,
       "",
       RunIngest},
      {"stress",
       "",
       {{"rewind stress [--quick] [--only 1,2,3,4] [--out DIR] [--keep]",
         "the four event-store questions answered on this server\n(in its own database, "
         "--stress-database, "
         "default\nrewind_stress; never the event table). --quick: fewer, smaller\n"
         "measurements (about 3 minutes on a 2-core server; the full run\nabout 20)"},
        {"rewind stress -D APP --events-table T [--sample N] [--models FILE]",
         "also your event table, read only: its size, a rebuild measured\non its first N "
         "events copied into the stress database, the full\ntable's time estimated"}},
       GroupsOf<StressOptions>(),
       false,
       "",
       nullptr,
       "rewind-stress"},
      {"help", "", {{"rewind help, rewind --help", "the commands, the options and the exit codes"}}, {}, true, "", RunHelp},
      {"version",
       "",
       {{"rewind version, rewind --version, -V",
         "the version, the build type and the libraries it was built with"}},
       {},
       true,
       "",
       RunVersion},
  };
  return commands;
}

const Command* FindCommand(const std::string& name) {
  for (const Command& c : Commands()) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

const std::vector<ExitCodeRow>& ExitCodes() {
  static const std::vector<ExitCodeRow> codes = {
      {exit_code::kOk, "done (rebuilt and swapped in; verify: identical)"},
      {exit_code::kError, "error: nothing swapped in"},
      {exit_code::kUsage, "bad usage"},
      {exit_code::kFailedEvents,
       "rebuilt and swapped in, but some events failed (see rewind_failures)"},
      {exit_code::kDiffers, "verify found differences"},
      {exit_code::kOverBudget,
       "over the failure budget (--max-failures): nothing swapped in, shadow tables kept"},
      {exit_code::kCutoverGaveUp,
       "the cut-over gave up: live tables untouched, resumable with --resume"},
      {exit_code::kEmptyBuild,
       "a read model received no event while its live table has rows (a class or table "
       "that\nmatches nothing?): "
       "nothing swapped in, shadow tables kept; --allow-empty swaps anyway\n(stress: 1 also when "
       "its own check "
       "found a lost or duplicated append)"},
      {128 + 2, "stopped by SIGINT, 143 by SIGTERM: resumable with --resume"},
  };
  return codes;
}

namespace {

std::vector<CommandInfo> Infos() {
  std::vector<CommandInfo> infos;
  for (const Command& c : Commands()) infos.push_back({c.name, c.names, c.groups});
  return infos;
}

// `text`'s lines after the first, indented by `indent`.
std::string Indented(const std::string& text, size_t indent) {
  std::string out;
  for (char ch : text) {
    out += ch;
    if (ch == '\n') out += std::string(indent, ' ');
  }
  return out;
}

}  // namespace

Result<CommandLine> ParseRewindCommandLine(const std::vector<std::string>& args,
                                           const Environment& env) {
  return ParseCommandLine(args, env, Infos());
}

std::string HelpText() {
  constexpr size_t kWhat = 36;  // the column the commands' descriptions start in
  std::string footer = "Commands:\n";
  std::string about;
  for (const Command& c : Commands()) {
    for (const Command::Usage& u : c.usage) {
      const std::string line = "  " + u.line;
      footer += line.size() + 1 > kWhat ? line + "\n" + std::string(kWhat, ' ')
                                        : fmt::format("{:<{}}", line, kWhat);
      footer += Indented(u.what, kWhat) + "\n";
    }
    if (!c.about.empty()) about += "\n" + c.about;
  }
  footer += about + "\n" + kConfigFileHelp + "\nExit codes:\n";
  for (const ExitCodeRow& e : ExitCodes()) {
    footer += fmt::format("  {:<5}{}\n", e.code, Indented(e.meaning, 7));
  }
  return OptionsHelp(Infos(), footer);
}

}  // namespace rw
