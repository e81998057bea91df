// Decoder: turns a batch's raw JSON payloads into EventRecords with simdjson On-Demand, as
// the run's EventCatalog says: one record per event of a class a read model reads, with the
// value of every wanted payload path (dotted, "customer.id") and event-table column, found in
// one walk of the payload. A payload that is not a JSON object is a Failure (stage "decoder")
// and its record is marked undecoded: each read model that reads a payload path counts it as
// failed, one that reads only the event table's columns applies it. When no read model of the
// run reads a payload path, payloads are not parsed at all.
//
// What the catalog asks beyond the values, once here for every read model:
// - times parsed (EventCatalog::WantTime), texts given batch ids (WantText: equal texts of a
//   batch, equal FieldValue::text_id) or run-wide dense ids (WantRunWide, and the pairs of
//   two such texts, PairSlot), one lookup per distinct token per batch;
// - checks (EventCatalog::Check): a failed one is a Failure of the event (its reasons joined,
//   or a required check's alone) and a bit in EventRecord::failed_checks, so that a read
//   model that cannot use the event skips it and one that can still counts it: a read
//   model's content never depends on which others are rebuilt with it.
// Strings without escapes are viewed in place in the batch's payload bytes; escaped ones
// (`\/`, `\uXXXX`) are unescaped into the batch's arena, a run-wide text once per batch.
//
// Thread safety: Decode() may run concurrently on different batches; each thread keeps
// its own parser and batch dictionaries; the run-wide ids are shared (stages/flow/interner.h).
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

class Decoder {
 public:
  explicit Decoder(EventCatalog catalog);
  ~Decoder();
  // REQUIRES: batch.payloads ends with SIMDJSON_PADDING bytes (the reader does this).
  void Decode(Batch& batch) const;

  // The payload paths wanted, as a tree of their dotted parts.
  struct PathNode {
    std::string key;
    int32_t slot = -1;  // the value's slot when a path ends here
    std::vector<PathNode> children;
    uint64_t sizes = 0;  // a bit per size of the children's keys: most keys are no child
  };
  // How a slot's string is read: through its run-wide token table (`token` >= 0), kept when
  // at most `max_bytes`; a checked one that cannot be read fails its check, not the payload.
  struct SlotRead {
    int32_t token = -1;
    size_t max_bytes = SIZE_MAX;
    bool checked = false;
  };
  struct Scratch;  // a decoding thread's batch tables (decoder.cc)

 private:
  struct Pair {
    uint32_t slot, a, b;
  };
  void AppendRecord(Batch& batch, const RawEvent& raw, Scratch& scratch) const;

  EventCatalog catalog_;
  PathNode paths_;
  std::vector<SlotRead> reads_;                            // by slot
  std::vector<std::pair<uint32_t, size_t>> column_slots_;  // (slot, index among the read columns)
  std::vector<uint32_t> time_slots_;  // slots read as dates or times: parsed once per event
  std::vector<uint32_t> text_slots_;  // slots keyed by text: a batch id per text (FieldValue::text_id)
  // Slots read through a token table: the run-wide ones and the pairs' parts.
  std::vector<uint32_t> token_slots_;
  std::vector<Pair> pairs_;
  // Run-wide ids, one instance per run shared by every batch: by token slot (nullptr: not
  // run-wide, a pair's part only), by pair.
  std::vector<std::unique_ptr<Interner>> run_ids_;
  std::vector<std::unique_ptr<Interner>> pair_run_ids_;
};

}  // namespace rw
