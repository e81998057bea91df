// The commands other than replay: list, status, verify. Each prints to `out` and
// returns the process exit code.
//
// Thread safety: each command runs on the calling thread with connections of its own;
// verify's rebuild is Replay's (replay.h).
#pragma once

#include <cstdio>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "pipeline/engine/run_spec.h"
#include "projectors/projector.h"

namespace rw {

int ListReadModels(const RunSpec& spec, std::FILE* out);
// `rewind status`: text, --json (--format json) or --format prometheus (to `out`, or with
// --textfile written to that file atomically: a temp file beside it, then a rename).
int ShowStatus(const RunSpec& spec, std::FILE* out);
// `value` as a label value of Prometheus' text exposition format: backslash, double quote
// and newline escaped (\\, \", \n); every other byte as it is.
std::string PrometheusLabelValue(std::string_view value);
int VerifyReadModels(const RunSpec& spec, std::vector<std::unique_ptr<Projector>> projectors,
                     std::FILE* out);

}  // namespace rw
