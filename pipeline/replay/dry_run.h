// Dry run: what `rewind replay ...` would do, without doing any of it. It touches nothing
// (no table, no lock, no checkpoint row): it counts the events the run would read (exactly
// from the index, or the optimizer's estimate when counting takes longer than a few
// seconds, labelled so), decodes and applies a timed sample of the first batches in memory
// to estimate each read model's rows and size (its keys' growth between half and all of
// the sample, extrapolated) and the run's duration (labelled estimates),
// lists the tables the run would create, the grants it needs that the user lacks, and a
// lock held by another run. Exit 0 when a real run could start, 1 with the reasons.
// It is the run's own Build (replay_build.h), taking Inspect instead of Prepare: the same
// connection and checks of the event source, the same read plan and head, the sample read
// through the build's EventSource; then it stops, and checks the rest itself, every
// blocker collected rather than the first returned.
//
// Thread safety: DryRunCommand runs on the calling thread and shares nothing between calls.
#pragma once

#include <cstdio>
#include <memory>
#include <vector>

#include "pipeline/engine/run_spec.h"
#include "projectors/projector.h"

namespace rw {

int DryRunCommand(const RunSpec& spec, std::vector<std::unique_ptr<Projector>> projectors,
                  std::FILE* out);

}  // namespace rw
