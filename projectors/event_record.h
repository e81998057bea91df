// The decoded form of an event of any class, as declared read models see it: its class
// and the values of the fields the run reads (payload paths and event-table columns), each
// in the slot the run's EventCatalog gave it.
//
// Views: the strings point into the batch that carries the records, valid as long as it.
// Immutable once decoded; thread-safe to read from any number of threads.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <utility>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/civil_time.h"
#include "base/event_id.h"

namespace rw {

enum class ValueKind : uint8_t { kMissing, kNull, kFalse, kTrue, kNumber, kString, kObject, kArray };

enum class TimeState : uint8_t { kNotParsed, kOk, kBad };

// 32 bytes (a batch holds one per event and field read): the text is kept as a pointer and
// a 32-bit length, not a string_view.
struct FieldValue {
  // kString: the unescaped bytes; kNumber: the literal as written ("1.50", "-3e2").
  std::string_view text() const { return {text_data, text_size}; }
  void set_text(std::string_view s) {
    text_data = s.data();
    text_size = static_cast<uint32_t>(s.size());
  }

  const char* text_data = nullptr;
  uint32_t text_size = 0;  // a payload is at most 4 GiB (RawEvent::length)
  // For the fields read models key by text (EventCatalog::WantText), kString and kNumber:
  // the text's id within its batch + 1 (equal texts of one batch, equal ids); 0: none.
  uint32_t text_id = 0;
  CivilTime time{};
  ValueKind kind = ValueKind::kMissing;
  // For the fields read models read as times: parsed once by the decoder, not once per
  // read model (ParseDateOrTimestamp).
  TimeState time_state = TimeState::kNotParsed;
};
static_assert(sizeof(FieldValue) == 32);

struct EventRecord {
  EventId id = 0;
  uint16_t event_class = 0;  // index into EventCatalog::classes()
  bool decoded = false;      // false: the payload was not a JSON object (the decoder recorded why)
  // The checks (EventCatalog::Check) its values failed, one bit each; the decoder recorded
  // why, once for the event.
  uint8_t failed_checks = 0;
  uint32_t first_value = 0;  // this event's values are values[first_value, first_value + width)
};

// The records of one batch (or part of it), in id order.
struct EventRecords {
  std::span<const EventRecord> events;
  std::span<const FieldValue> values;
  size_t width = 0;
  const FieldValue& value(const EventRecord& e, size_t slot) const { return values[e.first_value + slot]; }
};

// An equality on a column of the event table: its text is one of `values`, byte for byte
// (a declared read model's `where`).
struct ColumnIn {
  std::string column;
  std::vector<std::string> values;
};

// Where a field comes from: a dotted path into the JSON payload, or an event-table column,
// or (EventCatalog::PairSlot) the pair of two other fields' texts.
struct FieldSource {
  bool column = false;
  std::string name;  // "customer.id" or "createdAt"; empty: none
  static constexpr uint32_t kNone = ~uint32_t{0};
  uint32_t pair_a = kNone, pair_b = kNone;  // a pair: the slots of its two texts
  bool pair() const { return pair_a != kNone; }
  friend bool operator==(const FieldSource&, const FieldSource&) = default;
};

// What the decoder checks of a field for the read models that cannot use an event without
// it (the blog's compiled ones): a string, present, of at most `max_bytes`, and with
// `iso_time` an ISO-8601 timestamp (its time then parsed into FieldValue::time). A failed
// check is recorded once per event, as the decoder's failure, and set in
// EventRecord::failed_checks; with `required` its reason alone is the event's.
struct FieldCheck {
  bool iso_time = false;
  bool required = false;
  size_t max_bytes = SIZE_MAX;
  friend bool operator==(const FieldCheck&, const FieldCheck&) = default;
};

// The classes and fields a run reads, each given a dense index once, before the run.
// Read models register what they need (Projector::Bind); stages read the lists.
class EventCatalog {
 public:
  EventCatalog() = default;
  // `default_class`: the class the blog's compiled read models read (--event-class).
  explicit EventCatalog(std::string default_class) : default_class_(std::move(default_class)) {}
  const std::string& default_class() const { return default_class_; }
  uint16_t ClassIndex(const std::string& event_class) {
    for (size_t i = 0; i < classes_.size(); ++i) {
      if (classes_[i] == event_class) return static_cast<uint16_t>(i);
    }
    classes_.push_back(event_class);
    return static_cast<uint16_t>(classes_.size() - 1);
  }
  uint32_t Slot(const FieldSource& field) {
    for (size_t i = 0; i < fields_.size(); ++i) {
      if (fields_[i] == field) return static_cast<uint32_t>(i);
    }
    fields_.push_back(field);
    return static_cast<uint32_t>(fields_.size() - 1);
  }
  // Marks a field that some read model reads as a date or time.
  void WantTime(uint32_t slot) {
    if (time_slots_.size() <= slot) time_slots_.resize(slot + 1u, false);
    time_slots_[slot] = true;
  }
  bool wants_time(uint32_t slot) const { return slot < time_slots_.size() && time_slots_[slot]; }
  // Marks a field that some read model keys by its text (FieldValue::text_id).
  void WantText(uint32_t slot) {
    if (text_slots_.size() <= slot) text_slots_.resize(slot + 1u, false);
    text_slots_[slot] = true;
  }
  bool wants_text(uint32_t slot) const { return slot < text_slots_.size() && text_slots_[slot]; }
  // Marks a field whose text ids are the run's, not the batch's (FieldValue::text_id - 1: a
  // dense id, equal texts equal ids for the whole run), for read models that key on them.
  void WantRunWide(uint32_t slot) {
    if (run_wide_slots_.size() <= slot) run_wide_slots_.resize(slot + 1u, false);
    run_wide_slots_[slot] = true;
  }
  bool wants_run_wide(uint32_t slot) const { return slot < run_wide_slots_.size() && run_wide_slots_[slot]; }
  // The slot of the pair of two fields' texts: its text_id - 1 is the pair's run-wide id,
  // set when both are strings (kind kString, no text). The two get batch ids (as WantText).
  uint32_t PairSlot(uint32_t a, uint32_t b) {
    FieldSource pair;
    pair.pair_a = a;
    pair.pair_b = b;
    return Slot(pair);
  }
  // A check of a field of the events of one class (FieldCheck): its bit in
  // EventRecord::failed_checks.
  struct ClassCheck {
    uint16_t event_class;
    uint32_t slot;
    FieldCheck check;
    friend bool operator==(const ClassCheck&, const ClassCheck&) = default;
  };
  uint8_t Check(uint16_t event_class, uint32_t slot, FieldCheck check) {
    const ClassCheck c{event_class, slot, check};
    for (size_t i = 0; i < checks_.size(); ++i) {
      if (checks_[i] == c) return static_cast<uint8_t>(1u << i);
    }
    if (checks_.size() >= 8) {  // a bit each in EventRecord::failed_checks; the compiled read models use four
      std::fprintf(stderr, "rewind: internal error: more than 8 field checks in one run\n");
      std::abort();
    }
    checks_.push_back(c);
    return static_cast<uint8_t>(1u << (checks_.size() - 1));
  }
  const std::vector<ClassCheck>& checks() const { return checks_; }
  // Marks a class as read by a record reader (a declared read model).
  void WantRecords(uint16_t event_class) {
    if (record_classes_.size() <= event_class) record_classes_.resize(event_class + 1u, false);
    record_classes_[event_class] = true;
  }
  const std::vector<std::string>& classes() const { return classes_; }
  const std::vector<FieldSource>& fields() const { return fields_; }
  bool wants_records(uint16_t event_class) const {
    return event_class < record_classes_.size() && record_classes_[event_class];
  }

 private:
  std::vector<std::string> classes_;
  std::vector<FieldSource> fields_;
  std::vector<bool> record_classes_;
  std::vector<bool> time_slots_;
  std::vector<bool> text_slots_;
  std::vector<bool> run_wide_slots_;
  std::vector<ClassCheck> checks_;
  std::string default_class_ = "App\\Analytics\\PageVisited";
};

// Why one event could not be applied to one read model.
struct EventFailure {
  EventId id;
  std::string reason;
};

}  // namespace rw
