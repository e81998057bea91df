// The user's event table in `rewind stress` (--events-table), in two files: the question
// (your_table.cc: the checks before anything is created, its size, the sample of its first
// events copied into stress's database, the checks after) and the rebuilds measured on that
// sample (your_rebuilds.cc: rewind's pipeline with the built-in read model and with the
// user's, by hand in batches of 50 and one save per event, each estimated for the table).
//
// Thread safety: as the harness's (the thread of the command).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "config/models.h"
#include "pipeline/stress/harness.h"

namespace rw {

// The copy of the first events of the user's table, in stress's database, and its first
// quarter.
inline constexpr const char* kYourSample = "your_events_sample";
inline constexpr const char* kYourPart = "your_events_sample_quarter";
// The question of the results rows that measure the user's table.
inline constexpr const char* kYourQuestion = "your_table";

// The rebuilds on the sample of `copied` events (kYourSample, whose event types are in the
// harness's context), each estimated for the table's `rows`: rewind's pipeline with the
// built-in read model (events per type, per day when `their_time`: the table has the time
// column) and with `your_models` (--models), by hand in batches of 50, and one save per event
// on the first events only (`single_last` gets the last id it saved).
Status MeasureYourRebuilds(Harness& h, bool their_time, const std::vector<ModelPlan>& your_models,
                           double rows, uint64_t copied, std::string& single_last);

}  // namespace rw
