// The scratch build's finisher, verify's (finishers.h).
#include "pipeline/replay/finishers.h"

namespace rw {

Status FinishScratch(Build& b, Status built) {
  Status s = std::move(built);
  if (s.ok() && b.plan().after_build) s = b.plan().after_build(b.admin());
  b.DropScratch();
  if (s.ok()) s = b.CheckBudget();
  return s;
}

}  // namespace rw
