// Verify: does a rebuild from the events give the live read models? Rebuilds into scratch
// tables (<table>__rewind_verify; RunRebuild with a scratch plan), never swaps, compares
// them with the live tables on the read model's own columns while the run still holds its
// locks, then drops the scratch tables. The scratch tables belong to the run that holds the
// verify lock of their read model: a second verify refuses and touches nothing; one killed
// leaves them behind, and the next verify run drops them (and their checkpoint rows) when
// their lock is free.
//
// Thread safety: Verify runs on the calling thread; `stop` may be set from any thread or a
// signal handler.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "pipeline/engine/run_spec.h"
#include "pipeline/engine/compare.h"
#include "pipeline/engine/summary.h"
#include "projectors/projector.h"
#include "stages/db/connection.h"

namespace rw {

struct VerifySummary {
  ReplaySummary replay;  // the scratch rebuild
  std::vector<TableDiff> tables;
  bool identical() const {
    for (const auto& t : tables) {
      if (!t.identical()) return false;
    }
    return replay.status.ok();
  }
};

VerifySummary Verify(const RunSpec& spec,
                     std::vector<std::unique_ptr<Projector>> projectors,
                     const std::atomic<bool>& stop);

}  // namespace rw
