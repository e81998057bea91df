// The sample order domain that `rewind stress`, `rewind-gen` and the tests share: orders
// created by a customer, given items and discounts, confirmed. Here the Order aggregate of
// `rewind stress`: its events, its fold, and its JSON forms; shop_events.h beside it writes
// the same orders as a shop application stores them (for rewind-gen --shop and the tests
// of declared read models).
//
// Pure code (no I/O): pipeline/stress/event_store reads and decodes, and the stress harness
// measures fetch, decode and fold apart. Five event types with realistic payloads;
// OrderSummary folds four of them (OrderNoteAdded is the fifth, which a projection filters
// out).
//
// Thread safety: values; Fold() mutates only the state it is given.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace rw::order {

inline constexpr const char* kCreated = "OrderCreated";
inline constexpr const char* kItemAdded = "ItemAdded";
inline constexpr const char* kDiscountApplied = "DiscountApplied";
inline constexpr const char* kConfirmed = "OrderConfirmed";
inline constexpr const char* kNoteAdded = "OrderNoteAdded";

enum class Kind : uint8_t {
  kCreated,
  kItemAdded,
  kDiscountApplied,
  kConfirmed,
  kNoteAdded,
  kUnknown
};
Kind KindOf(std::string_view type);
const char* TypeName(Kind k);

// One decoded event (only the fields its kind has are set).
struct Event {
  Kind kind = Kind::kUnknown;
  std::string customer;  // created
  std::string sku;       // item
  int64_t quantity = 0;  // item
  int64_t cents = 0;     // item: line total; discount: amount
  std::string at;        // created, confirmed: 'YYYY-MM-DDTHH:MM:SS'
  std::string note;      // note
};

// The state an Order folds to (and what a snapshot holds).
struct State {
  int64_t version = 0;  // events folded
  std::string status;   // "", "created", "confirmed"
  std::string customer;
  int64_t items = 0;
  int64_t quantity = 0;
  int64_t total_cents = 0;
  int64_t discount_cents = 0;
  std::string confirmed_at;
  bool operator==(const State&) const = default;
};

void Fold(State& state, const Event& event);

// The event of number `n` (1-based) in a stream of the generator: a created first, then
// items (50 %), discounts (20 %: the one type in five a filtered projection reads) and notes
// (30 %), a confirmation at `confirm_at` (0: never).
Event Generate(const std::string& stream, int64_t n, int64_t confirm_at);
// The payload JSON of an event (`stream` is its orderId).
std::string Payload(const std::string& stream, const Event& event);
// An amount of `cents` as a decimal text: "12.05".
std::string Money(int64_t cents);
// A snapshot's JSON.
std::string SnapshotJson(const State& state);
// The state a generated stream folds to after `n` events (computed, not loaded).
State Folded(const std::string& stream, int64_t n, int64_t confirm_at);

}  // namespace rw::order
