// What question 3 of `rewind stress` (projection rebuild) shares with question 4 (appends
// while rewind rebuilds): the declared OrderSummary read model, an event table of generated
// orders, and rewind's pipeline rebuilding the read model over it.
//
// Thread safety: as the harness's (the thread of the command); Pipeline's run uses
// connections of its own.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "config/models.h"
#include "pipeline/stress/harness.h"

namespace rw {

// The OrderSummary read model, declared (its one plan).
Result<std::vector<ModelPlan>> OrderSummaryModels();
// An event store whose events table is `table`, recorded and created, holding `volume`
// generated events in orders of 100 events (three in four confirmed), analyzed.
Status LoadRebuildEvents(Harness& h, const std::string& table, int64_t volume);
// The run spec of rewind's pipeline over the stress event table `table` (its read models are the caller's).
RunSpec PipelineSpec(const Harness& h, const std::string& table);
// rewind's own pipeline over `table`, with `plan`, its tables recorded as stress's own.
Status Pipeline(Harness& h, const std::string& table, const ModelPlan& plan);

}  // namespace rw
