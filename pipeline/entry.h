// What main() does, for rewind and for the programs it runs for a command (rewind-stress):
// parse by the command table, ask for the password, install the signal handlers, run.
//
// A command whose row names a `program` (pipeline/commands.h) is run by that program, found
// beside rewind (the build tree, or a copy next to the binary) or in ../lib/rewind/ (the
// Debian package), with the same arguments, as git runs its sub-commands: rewind execs it
// before any prompt, so the program asks for the password itself.
//
// Thread safety: each is called once, by main(), on the process's only thread.
#pragma once

#include "pipeline/commands.h"

namespace rw {

// rewind's main: every command of the table, a command with a `program` exec'd.
int RewindMain(int argc, char** argv);

// The main of the program that runs `command` (its row's `program`): the arguments are
// rewind's (the command's name among them; when it is missing, it is taken as the first
// word), parsed by the same table, and `run` runs it.
int ProgramMain(int argc, char** argv, const std::string& command,
                int (*run)(const CommandLine&, const CommandContext&));

// Where `program` is found for the running binary: beside it, else in ../lib/rewind/
// ("" when neither has it).
std::string FindProgram(const std::string& program);

}  // namespace rw
