// What the pipeline reads and decodes for a run's read models, and their versions.
#include <fmt/core.h>

#include <algorithm>

#include "pipeline/engine/read_models.h"
#include "base/sha256.h"
#include "stages/db/table_schema.h"

namespace rw {

ReadPlan PlanReads(const EventTableOptions& events, std::vector<std::unique_ptr<Projector>>& projectors) {
  ReadPlan plan{EventCatalog(events.page_visited_class), {}};
  for (auto& p : projectors) p->Bind(plan.catalog);
  plan.scope.classes = plan.catalog.classes();
  // Per class, the read models' filters on columns (ReadScope::filters); a class that one
  // reads without a filter (the compiled ones read theirs so) is wanted whatever it holds.
  const size_t n = plan.scope.classes.size();
  std::vector<bool> unfiltered(n, false);
  plan.scope.filters.assign(n, {});
  for (const auto& p : projectors) {
    for (size_t c = 0; c < n; ++c) {
      if (!p->reads_class(static_cast<uint16_t>(c))) continue;
      std::vector<ColumnIn> where = p->where();
      if (where.empty()) {
        unfiltered[c] = true;
      } else {
        plan.scope.filters[c].push_back(std::move(where));
      }
    }
  }
  for (size_t c = 0; c < n; ++c) {
    if (unfiltered[c]) plan.scope.filters[c].clear();
  }
  for (const FieldSource& f : plan.catalog.fields()) {
    if (f.column) plan.scope.columns.push_back(f.name);
  }
  return plan;
}

std::string ReadModelVersion(const Projector& p) {
  return Sha256Hex(std::string(p.name()) + "\x1f" + table_schema::CreateTableSql(p.table(), "t") +
                   (p.version().empty() ? "" : "\x1f" + p.version()), 6);
}

ReaderOptions ReaderOptionsFor(const RunSpec& o, const ReadScope& scope) {
  ReaderOptions ro;
  ro.events = o.events;
  ro.scope = scope;
  // The memory budget is kept at batches' grain: under a small one a batch is at most a
  // budget's 2 KiB-th in events (4 MiB: 2,048 events), so that the keys one batch brings
  // stay a part of it.
  ro.batch_size = std::min<size_t>(o.batch_size, std::max<size_t>(1'000, o.memory_bytes / 2048));
  ro.settle_seconds = o.settle_seconds;
  ro.settle_ids = o.settle_ids;
  ro.reconcile = o.follow && o.reconcile_seconds > 0;
  ro.until_time = o.until_time;
  ro.connections = o.read_connections;
  ro.result_buffer = o.result_buffer;
  ro.primary = o.connection;
  return ro;
}

}  // namespace rw
