// Fault points: named places where a test can make rewind stop dead (to kill it there) or
// pause (to act on the server while rewind waits at a known point).
//
// When the environment variable REWIND_FAULT is `NAME`, `NAME:N`, `NAME@FILE` or
// `NAME:N@FILE`, the N-th time (default the first) the process passes FaultPoint("NAME")
// it prints `rewind: fault point NAME reached` on stderr, then either sleeps until it is
// killed or, with `@FILE`, waits until FILE exists and goes on. Without the variable a
// fault point costs one static load. Thread-safe.
#pragma once

namespace rw {

void FaultPoint(const char* name);

}  // namespace rw
