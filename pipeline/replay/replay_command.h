// `rewind replay`, `verify`, `list` and `status` as commands: turn the options into the run's
// spec (pipeline/engine/run_spec.h: the read models selected, the first problem said), run
// (a rebuild, a dry run, a verify, an inspection), print the summary and tell the user how
// to go on, and map the outcome to the exit code (config/options.h exit_code). The rebuild
// itself is replay.h's; below these, nothing takes the command line's options.
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
// `rewind list` and `rewind status` (inspect.h).
int ListCommand(const ReplayOptions& options, std::FILE* out);
int StatusCommand(const ReplayOptions& options, std::FILE* out);

// The resume command as the user must type it: the selection and every option that picks
// the server, the database and the event source (never the password).
std::string ResumeCommand(const std::vector<std::string>& args, const std::string& database);

}  // namespace rw
