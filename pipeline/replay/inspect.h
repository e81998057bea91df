// The commands other than replay: list, status, verify. Each prints to `out` and
// returns the process exit code.
//
// Thread safety: each command runs on the calling thread with connections of its own;
// verify's rebuild is Replay's (replay.h).
#pragma once

#include <cstdio>
#include <memory>
#include <vector>

#include "config/options.h"
#include "projectors/projector.h"

namespace rw {

int ListCommand(const ReplayOptions& options, std::FILE* out);
int StatusCommand(const ReplayOptions& options, std::FILE* out);
int VerifyCommand(const ReplayOptions& options, std::vector<std::unique_ptr<Projector>> projectors,
                  std::FILE* out);

}  // namespace rw
