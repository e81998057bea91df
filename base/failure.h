// Failure: why one event could not be applied, as the failures table keeps it. A value;
// thread-compatible.
#pragma once

#include <string>

#include "base/event_id.h"

namespace rw {

// Why one event could not be applied.
struct Failure {
  EventId event_id;
  std::string stage;    // "decoder" or a projector name
  std::string reason;   // readable, names the field and what was wrong
  std::string excerpt;  // the payload's first bytes, as they were (any bytes)
};

}  // namespace rw
