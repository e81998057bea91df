// Which read models a run rebuilds, and what the pipeline reads and decodes for them.
#include <fmt/core.h>

#include <algorithm>

#include "config/models.h"
#include "pipeline/engine/read_models.h"
#include "base/sha256.h"
#include "stages/db/table_schema.h"
#include "projectors/declared.h"

namespace rw {

Result<std::vector<ProjectorInfo>> KnownReadModels(const ReplayOptions& o) {
  std::vector<ProjectorInfo> all = AllProjectors();
  if (o.models_file.empty()) return all;
  Result<std::vector<ModelPlan>> plans = LoadModels(o.models_file, o.events.table);
  if (!plans.ok()) return plans.status();
  for (ModelPlan& plan : *plans) {
    std::string description = fmt::format("declared in {}", plan.origin);
    std::string origin = plan.origin;
    std::string name = plan.name;
    auto shared = std::make_shared<const ModelPlan>(std::move(plan));
    all.push_back(ProjectorInfo{std::move(name), std::move(description),
                                [shared] { return MakeDeclaredProjector(*shared); }, std::move(origin)});
  }
  return all;
}

Result<std::vector<std::unique_ptr<Projector>>> SelectProjectors(const ReplayOptions& o) {
  std::vector<std::unique_ptr<Projector>> out;
  if (o.all && !o.projectors.empty()) {
    return Status::InvalidInput("give either --all or read model names, not both");
  }
  if (!o.all && o.projectors.empty()) {
    return Status::InvalidInput("which read models? give --all or names (see `rewind list`)");
  }
  Result<std::vector<ProjectorInfo>> known = KnownReadModels(o);
  if (!known.ok()) return known.status();
  const auto& all = *known;
  for (const std::string& name : o.projectors) {
    if (std::none_of(all.begin(), all.end(), [&](const auto& i) { return i.name == name; })) {
      std::string names;
      for (const auto& i : all) names += (names.empty() ? "" : ", ") + i.name;
      return Status::NotFound(fmt::format("unknown read model '{}'; known: {}{}", name, names,
                                          o.models_file.empty() ? " (declared ones need --models FILE)" : ""));
    }
  }
  // Named, any of them.
  for (const ProjectorInfo& info : all) {
    const bool named = std::find(o.projectors.begin(), o.projectors.end(), info.name) != o.projectors.end();
    if (named || (o.all && InAll(o, info))) out.push_back(info.make());
  }
  return out;
}

bool InAll(const ReplayOptions& o, const ProjectorInfo& info) {
  const EventTableOptions blog;
  const bool blogs_table = o.events.table == blog.table && o.events.type_column == blog.type_column &&
                           o.events.type_path.empty() && o.events.payload_column == blog.payload_column;
  return o.models_file.empty() || !info.origin.empty() || blogs_table;
}

ReadPlan PlanReads(const EventTableOptions& events, std::vector<std::unique_ptr<Projector>>& projectors) {
  ReadPlan plan;
  for (const auto& p : projectors) {
    if (!p->reads_records()) {
      plan.page_class = plan.catalog.ClassIndex(events.page_visited_class);
      plan.page_fields |= p->fields();
    }
  }
  for (auto& p : projectors) {
    if (p->reads_records()) p->Bind(plan.catalog);
  }
  plan.scope.classes = plan.catalog.classes();
  // Per class, the read models' filters on columns (ReadScope::filters); a class that one
  // reads without a filter (the compiled ones read theirs so) is wanted whatever it holds.
  const size_t n = plan.scope.classes.size();
  std::vector<bool> unfiltered(n, false);
  plan.scope.filters.assign(n, {});
  for (const auto& p : projectors) {
    for (size_t c = 0; c < n; ++c) {
      const bool reads = p->reads_records() ? p->reads_class(static_cast<uint16_t>(c))
                                            : plan.page_class && c == *plan.page_class;
      if (!reads) continue;
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

ReaderOptions ReaderOptionsFor(const ReplayOptions& o, const ReadScope& scope) {
  ReaderOptions ro;
  ro.events = o.events;
  ro.scope = scope;
  ro.batch_size = o.batch_size;
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
