// The finisher of a build that is not swapped in now (finishers.h).
#include "pipeline/replay/finishers.h"

namespace rw {

Status FinishBuilt(Build& b) {
  Status s = b.CheckBudget();
  if (s.ok()) b.SetStatus(CheckpointStatus::kBuilt, 0);
  return s;
}

}  // namespace rw
