// Decoder: turns a batch's raw JSON payloads into PageVisits (for the compiled read
// models) and EventRecords (for declared ones) with simdjson On-Demand.
//
// EventRecords: one per event of a class a declared read model reads, with the value of
// every wanted payload path (dotted, "customer.id") and event-table column, found in one
// walk of the payload. A payload that is not a JSON object is a Failure (stage "decoder")
// and its record is marked undecoded: each read model that reads a payload path counts it
// as failed, one that reads only the event table's columns applies it. When no read model
// of the run reads a payload path, payloads are not parsed at all.
//
// Reads only the fields asked for (always `visitedAt`). A payload that is not a JSON
// object or has no usable `visitedAt` becomes a Failure in the batch, never a dropped
// event. A payload whose other requested field is missing or of the wrong type is also
// recorded as a Failure, but stays in the batch with that field marked bad
// (PageVisit::fields_ok): the read models that do not need the field still count it, so
// a read model's content never depends on which others are rebuilt with it. Strings without
// escapes are viewed in place in the batch's payload bytes; escaped ones (`\/`, `\uXXXX`)
// are unescaped into the batch's arena, a URL, ip or user agent once per batch.
//
// URLs and visitors (ip, user agent) get run-wide dense ids (PageVisit::url_id,
// visitor_id; stages/flow/interner.h): one lookup per text here, keyed by its JSON token, for
// every read model. The record fields read models key by text get a batch id per text
// (FieldValue::text_id), so that no read model hashes the text of every event.
//
// Thread safety: Decode() may run concurrently on different batches; each thread keeps
// its own parser and batch dictionaries.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "stages/flow/batch.h"
#include "stages/flow/interner.h"

namespace rw {

// The longest URL rewind stores (the URL tables' column holds up to 16 MiB; one row must
// also fit a statement). A longer one is a failure of that event's URL, never cut.
inline constexpr size_t kMaxUrlBytes = 1 << 20;

class Decoder {
 public:
  // PageVisits only, of every event (class 0): the compiled read models' decoder.
  explicit Decoder(uint32_t fields) : fields_(fields | kFieldVisitedAt) {}
  // PageVisits for the events of class `page_class` (none without it), and EventRecords
  // with the catalog's fields for the classes declared read models read.
  Decoder(uint32_t fields, std::optional<uint16_t> page_class, EventCatalog catalog);
  // REQUIRES: batch.payloads ends with SIMDJSON_PADDING bytes (the reader does this).
  void Decode(Batch& batch) const;

  // The payload paths wanted, as a tree of their dotted parts.
  struct PathNode {
    std::string key;
    int32_t slot = -1;  // the value's slot when a path ends here
    std::vector<PathNode> children;
  };

 private:
  const uint32_t fields_;
  std::optional<uint16_t> page_class_ = 0;
  EventCatalog catalog_;
  PathNode paths_;
  std::vector<std::pair<uint32_t, size_t>> column_slots_;  // (slot, index among the read columns)
  std::vector<uint32_t> time_slots_;  // slots read as dates or times: parsed once per event
  std::vector<uint32_t> text_slots_;  // slots keyed by text: a batch id per text (FieldValue::text_id)
  // Run-wide ids of URLs and of visitors: one instance per run, shared by every batch.
  std::unique_ptr<Interner> urls_ = std::make_unique<Interner>();
  std::unique_ptr<Interner> visitors_ = std::make_unique<Interner>();
};

}  // namespace rw
