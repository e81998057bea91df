// Fault points: named places where a test can make rewind stop dead, to kill it there.
//
// When the environment variable REWIND_FAULT is `NAME` or `NAME:N`, the N-th time (default
// the first) the process passes FaultPoint("NAME") it prints
// `rewind: fault point NAME reached` on stderr and sleeps until it is killed. Without the
// variable a fault point costs one relaxed atomic load. Thread-safe.
#pragma once

namespace rw {

void FaultPoint(const char* name);

}  // namespace rw
