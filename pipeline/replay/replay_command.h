// `rewind replay` and `rewind verify` as commands: select the read models, run (a rebuild, a
// dry run, a verify), print the summary and tell the user how to go on, and map the outcome
// to the exit code (config/options.h exit_code). The rebuild itself is replay.h's.
//
// Thread safety: runs on the calling thread; `stop` may be set from any other (the signal
// handler), which also stores the signal's number in `signal`.
#pragma once

#include <atomic>
#include <cstdio>
#include <string>
#include <vector>

#include "config/options.h"

namespace rw {

// `args`: argv after the program name, which the resume command repeats.
int ReplayCommand(const ReplayOptions& options, const std::vector<std::string>& args,
                  const std::atomic<bool>& stop, const std::atomic<int>& signal, std::FILE* out);

// Verifies the named read models, or every one when none is named.
int VerifyNamedCommand(const ReplayOptions& options, std::FILE* out);

// The resume command as the user must type it: the selection and every option that picks
// the server, the database and the event source (never the password).
std::string ResumeCommand(const std::vector<std::string>& args, const std::string& database);

}  // namespace rw
