// The command table: one row per command of `rewind` (its name, its lines in --help, what
// its positionals are, the options struct it takes and its run function). main.cc parses and
// dispatches through it; the parser's list of commands, the positionals' help, --help's
// commands and its exit codes all come from it. Adding a command: its folder or file under
// pipeline/, and one row in commands.cc (plus an option group in config/options if it has
// options of its own).
//
// The only file that knows every application. The table is built once, read-only after;
// thread-safe.
#pragma once

#include <atomic>
#include <cstdio>
#include <string>
#include <vector>

#include "config/options.h"

namespace rw {

// What a run function is given besides its options.
struct CommandContext {
  const std::vector<std::string>&
      args;                        // argv after the program name (a resume command repeats them)
  const std::atomic<bool>& stop;   // set by SIGINT / SIGTERM
  const std::atomic<int>& signal;  // the signal that set `stop` (0: none)
  std::FILE* out;
};

struct Command {
  struct Usage {
    std::string line;  // "rewind replay --all"
    std::string what;  // one line (or a few, \n-separated) saying what it does
  };
  std::string name;
  std::string names;         // what its positionals are, for --help ("read models"); "" for none
  std::vector<Usage> usage;  // its lines in --help's Commands
  std::vector<OptionGroup> groups;  // the groups of its options struct (GroupsOf)
  // Runs without a server: before the password prompt, the config-file line and the signal
  // handlers (help, version, list).
  bool offline = false;
  std::string about;  // a paragraph of --help after the commands ("How a replay works"), or ""
  int (*run)(const CommandLine&, const CommandContext&) = nullptr;
  // The program that runs it instead of `run` ("rewind-stress"), with the same arguments
  // (pipeline/entry.h): its code is not linked into rewind. "": `run` does.
  std::string program = {};
};

// Every command, in --help's order.
const std::vector<Command>& Commands();

// The row named `name`, or nullptr.
const Command* FindCommand(const std::string& name);

// One row of --help's exit-code table.
struct ExitCodeRow {
  int code;
  std::string meaning;  // \n-separated lines
};
const std::vector<ExitCodeRow>& ExitCodes();

// Parses argv (after the program name) for the commands of the table.
Result<CommandLine> ParseRewindCommandLine(const std::vector<std::string>& args,
                                           const Environment& env);

// `rewind --help`: the options by group, the commands, the config file, the exit codes.
std::string HelpText();

}  // namespace rw
