// The hand-written SHA-256 of rewind before issue 52 (item 6): the "before" side of
// perf/sha256_bench.cc. Pure function, thread-safe.
#pragma once

#include <string_view>

#include "base/sha256.h"

namespace rw::by_hand {

Sha256Digest Sha256(std::string_view bytes);

}  // namespace rw::by_hand
