// The decoded form of a `PageVisited` event, as projectors see it.
//
// A PageVisit is a view: its strings point into the storage of the batch that carries
// it, so it is valid exactly as long as that batch. Immutable once decoded; thread-safe to
// read from any number of threads.
#pragma once

#include <cstdint>
#include <string_view>

#include "base/civil_time.h"
#include "base/event_id.h"

namespace rw {

// The payload fields a projector can ask for. The decoder reads only the union of what
// the selected projectors ask for; `visitedAt` is always read.
enum Field : uint32_t {
  kFieldVisitedAt = 1u << 0,
  kFieldUrl = 1u << 1,
  kFieldIp = 1u << 2,
  kFieldUserAgent = 1u << 3,
};

struct PageVisit {
  EventId id = 0;            // the event's id in the event table
  CivilTime visited_at{};    // wall-clock time as written, offset ignored
  std::string_view url;      // empty unless kFieldUrl was requested
  std::string_view ip;       // empty unless kFieldIp was requested
  std::string_view user_agent;  // empty unless kFieldUserAgent was requested
  // Dense run-wide ids (0, 1, 2...): equal bytes have equal ids and different bytes
  // different ids, for the whole run. `url_id` is set when kFieldUrl is requested and
  // well-formed, `visitor_id` for the pair (ip, user_agent) when both are. Read models key
  // on these and keep the text only to write it.
  uint32_t url_id = 0;
  uint32_t visitor_id = 0;
  // The requested fields that were present and well-formed. A projector only ever sees
  // visits that have every field it needs (the runner filters the others out).
  uint32_t fields_ok = 0;
};

}  // namespace rw
