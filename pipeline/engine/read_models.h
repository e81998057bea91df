// Read models: which a run rebuilds (compiled and declared), the version each one's table
// is built by, and what the pipeline reads and decodes for a set of them. Every
// application that rebuilds read models starts here. Pure functions; thread-compatible.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "config/options.h"
#include "projectors/projector.h"
#include "stages/flow/reader.h"

namespace rw {

// Selects projectors by name (or every one when `all`). Unknown names are an error that
// lists the known ones.
Result<std::vector<std::unique_ptr<Projector>>> SelectProjectors(const ReplayOptions& options);
// Every read model the options know: the compiled ones, then those declared in
// options.models_file (an error names the file, line and problem).
Result<std::vector<ProjectorInfo>> KnownReadModels(const ReplayOptions& options);
// Whether `--all` takes `info`: every read model without --models; with it, the declared
// ones, and the compiled ones (the blog's, reading its PageVisited events) only on the
// blog's own event table (elsewhere their tables would be made, empty, in the
// application's database). `rewind list` lists what --all takes.
bool InAll(const ReplayOptions& options, const ProjectorInfo& info);
// The short hash of a read model's table and (declared) declaration: the last part of
// the source fingerprint its checkpoint keeps, which `status` compares.
std::string ReadModelVersion(const Projector& p);

// What the pipeline reads and decodes for a set of read models: the classes (the page
// visit class first when a compiled read model is among them) and the fields declared
// read models read. Binds each declared read model to the catalog.
struct ReadPlan {
  EventCatalog catalog;
  std::optional<uint16_t> page_class;
  uint32_t page_fields = 0;
  ReadScope scope;
};
ReadPlan PlanReads(const EventTableOptions& events, std::vector<std::unique_ptr<Projector>>& projectors);

// The reader's options for a run with these options, reading `scope` (the range, and
// the holes an interrupted run left, are the caller's).
ReaderOptions ReaderOptionsFor(const ReplayOptions& options, const ReadScope& scope);

}  // namespace rw
