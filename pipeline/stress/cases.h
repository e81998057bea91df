// The cases the stress questions measure, one list each: the question that measures them
// and the report that reads their rows back (advice, plots) take them from here.
//
// Thread safety: constants.
#pragma once

#include <array>
#include <cstdint>

namespace rw::stress_cases {

// Question 1: the stream lengths an aggregate is loaded at.
inline constexpr std::array<int64_t, 7> kStreamLengths = {10, 50, 100, 500, 1000, 5000, 10000};
// Question 2: the stream lengths loaded whole and from a snapshot 50 events before the end.
inline constexpr std::array<int64_t, 10> kSnapshotLengths = {60, 80, 100, 150, 200, 300, 500, 1000, 2000, 5000};
// Question 3: the batch sizes of the rebuild by hand.
inline constexpr std::array<int, 5> kBatchSizes = {10, 50, 100, 500, 1000};

}  // namespace rw::stress_cases
