#include "pipeline/replay/verify.h"

#include "pipeline/engine/compare.h"

#include "pipeline/replay/replay.h"

#include <fmt/core.h>

#include "stages/db/checkpoint_store.h"
#include "stages/db/table_admin.h"
#include "stages/db/table_schema.h"

namespace rw {

VerifySummary Verify(const RunSpec& options,
                     std::vector<std::unique_ptr<Projector>> projectors,
                     const std::atomic<bool>& stop) {
  VerifySummary v;
  std::vector<TableSpec> specs;
  for (const auto& p : projectors) specs.push_back(p->table());
  RunSpec o = options;
  o.resume = false;
  o.follow = false;
  RunPlan plan;
  plan.table_suffix = table_admin::kVerifySuffix;
  plan.lock_prefix = "rewind-verify";
  plan.finish = RunPlan::Finish::kScratch;
  // Compared while the run still holds its locks: the scratch tables are its own.
  plan.after_build = [&](Connection& c) -> Status {
    for (const TableSpec& spec : specs) {
      Result<TableDiff> d = CompareTables(c, spec, spec.name, spec.name + table_admin::kVerifySuffix);
      if (!d.ok()) return d.status();
      v.tables.push_back(std::move(*d));
    }
    return Status::Ok();
  };
  v.replay = RunRebuild(o, std::move(projectors), stop, plan);
  return v;
}

}  // namespace rw
