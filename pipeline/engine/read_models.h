// Read models: the version each one's table is built by, and what the pipeline reads and
// decodes for a set of them (which ones a run rebuilds: its RunSpec, run_spec.h). Every
// application that rebuilds read models starts here. Pure functions; thread-compatible.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "pipeline/engine/run_spec.h"
#include "projectors/projector.h"
#include "stages/flow/reader.h"

namespace rw {

// The short hash of a read model's table and (declared) declaration: the last part of
// the source fingerprint its checkpoint keeps, which `status` compares.
std::string ReadModelVersion(const Projector& p);

// What the pipeline reads and decodes for a set of read models: the classes and fields they
// read (the blog's compiled ones read the class --event-class names). Binds each read model
// to the catalog.
struct ReadPlan {
  EventCatalog catalog;
  ReadScope scope;
};
ReadPlan PlanReads(const EventTableOptions& events, std::vector<std::unique_ptr<Projector>>& projectors);

// The reader's options for a run of `spec`, reading `scope` (the range, and
// the holes an interrupted run left, are the caller's).
ReaderOptions ReaderOptionsFor(const RunSpec& spec, const ReadScope& scope);

}  // namespace rw
