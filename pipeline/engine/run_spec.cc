#include "pipeline/engine/run_spec.h"

#include <fmt/core.h>

#include <algorithm>

#include "config/models.h"
#include "projectors/declared.h"
#include "stages/flow/page_query.h"

namespace rw {
namespace {

// Every read model `spec` knows: the compiled ones, then those declared in its models file
// (an error names the file, line and problem).
Result<std::vector<ProjectorInfo>> KnownReadModels(const RunSpec& spec) {
  std::vector<ProjectorInfo> all = AllProjectors();
  if (spec.models_file.empty()) return all;
  Result<std::vector<ModelPlan>> plans = LoadModels(spec.models_file, spec.events.table);
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

// The read models of `names` (or --all's), refusing a name the run does not know.
Result<std::vector<ProjectorInfo>> Select(const RunSpec& spec, const std::vector<std::string>& names) {
  for (const std::string& name : names) {
    if (spec.Known(name) != nullptr) continue;
    std::string known;
    for (const ProjectorInfo& i : spec.known) known += (known.empty() ? "" : ", ") + i.name;
    return Status::NotFound(fmt::format("unknown read model '{}'; known: {}{}", name, known,
                                        spec.models_file.empty() ? " (declared ones need --models FILE)" : ""));
  }
  std::vector<ProjectorInfo> out;
  for (const ProjectorInfo& info : spec.known) {
    const bool named = std::find(names.begin(), names.end(), info.name) != names.end();
    if (named || (spec.all && InAll(spec, info))) out.push_back(info);
  }
  return out;
}

}  // namespace

Result<RunSpec> RunSpec::Make(RunSpec parts, const std::vector<std::string>& names, Selection selection) {
  RunSpec spec = std::move(parts);
  spec.known.clear();
  spec.selected.clear();
  if (selection == Selection::kAllIfNone && names.empty()) spec.all = true;
  if (selection != Selection::kNone) {
    if (spec.all && !names.empty()) return Status::InvalidInput("give either --all or read model names, not both");
    if (!spec.all && names.empty()) {
      return Status::InvalidInput("which read models? give --all or names (see `rewind list`)");
    }
  }
  // Ids that are not integers (base/id_form.h): their form, asked once; a table that cannot
  // be read yet is left to the run's own checks, which say why.
  FindIdForm(spec.connection, spec.events);
  Result<std::vector<ProjectorInfo>> known = KnownReadModels(spec);
  if (!known.ok()) return known.status();
  spec.known = std::move(*known);
  if (selection != Selection::kNone) {
    Result<std::vector<ProjectorInfo>> selected = Select(spec, names);
    if (!selected.ok()) return selected.status();
    spec.selected = std::move(*selected);
  }
  return spec;
}

std::vector<std::unique_ptr<Projector>> RunSpec::MakeSelected() const {
  std::vector<std::unique_ptr<Projector>> out;
  for (const ProjectorInfo& info : selected) out.push_back(info.make());
  return out;
}

const ProjectorInfo* RunSpec::Known(const std::string& name) const {
  for (const ProjectorInfo& info : known) {
    if (info.name == name) return &info;
  }
  return nullptr;
}

RunSpec RunSpec::ForSegment(const std::string& model, const Segment& segment, EventId head) const {
  RunSpec one = *this;
  one.selected.clear();
  if (const ProjectorInfo* info = Known(model)) one.selected.push_back(*info);
  one.all = false;
  one.build_only = true;
  one.resume = true;
  one.follow = false;
  one.segment = segment;
  one.until_id = head;
  one.progress = ProgressMode::kQuiet;
  return one;
}

bool InAll(const RunSpec& spec, const ProjectorInfo& info) {
  const EventTableOptions blog;
  const bool blogs_table = spec.events.table == blog.table && spec.events.type_column == blog.type_column &&
                           spec.events.type_path.empty() && spec.events.payload_column == blog.payload_column;
  return spec.models_file.empty() || !info.origin.empty() || blogs_table;
}

}  // namespace rw
