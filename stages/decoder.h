// Decoder: turns a batch's raw JSON payloads into PageVisits with simdjson On-Demand.
//
// Reads only the fields asked for (always `visitedAt`). A payload that is not a JSON
// object or has no usable `visitedAt` becomes a Failure in the batch, never a dropped
// event. A payload whose other requested field is missing or of the wrong type is also
// recorded as a Failure, but stays in the batch with that field marked bad
// (PageVisit::fields_ok): the read models that do not need the field still count it, so
// a read model's content never depends on which others are rebuilt with it. Strings without
// escapes are viewed in place in the batch's payload bytes; escaped ones (`\/`, `\uXXXX`)
// are unescaped into the batch's arena.
//
// Thread safety: Decode() may run concurrently on different batches; each thread keeps
// its own parser.
#pragma once

#include <cstdint>

#include "stages/batch.h"

namespace rw {

// The longest URL rewind stores (the URL tables' column holds up to 16 MiB; one row must
// also fit a statement). A longer one is a failure of that event's URL, never cut.
inline constexpr size_t kMaxUrlBytes = 1 << 20;

class Decoder {
 public:
  explicit Decoder(uint32_t fields) : fields_(fields | kFieldVisitedAt) {}
  // REQUIRES: batch.payloads ends with SIMDJSON_PADDING bytes (the reader does this).
  void Decode(Batch& batch) const;

 private:
  const uint32_t fields_;
};

}  // namespace rw
