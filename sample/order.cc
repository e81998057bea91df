#include "sample/order.h"

#include <fmt/core.h>

namespace rw::order {

Kind KindOf(std::string_view type) {
  if (type == kCreated) return Kind::kCreated;
  if (type == kItemAdded) return Kind::kItemAdded;
  if (type == kDiscountApplied) return Kind::kDiscountApplied;
  if (type == kConfirmed) return Kind::kConfirmed;
  if (type == kNoteAdded) return Kind::kNoteAdded;
  return Kind::kUnknown;
}

const char* TypeName(Kind k) {
  switch (k) {
    case Kind::kCreated:
      return kCreated;
    case Kind::kItemAdded:
      return kItemAdded;
    case Kind::kDiscountApplied:
      return kDiscountApplied;
    case Kind::kConfirmed:
      return kConfirmed;
    case Kind::kNoteAdded:
      return kNoteAdded;
    case Kind::kUnknown:
      break;
  }
  return "Unknown";
}

void Fold(State& s, const Event& e) {
  ++s.version;
  switch (e.kind) {
    case Kind::kCreated:
      s.status = "created";
      s.customer = e.customer;
      break;
    case Kind::kItemAdded:
      ++s.items;
      s.quantity += e.quantity;
      s.total_cents += e.cents;
      break;
    case Kind::kDiscountApplied:
      s.discount_cents += e.cents;
      break;
    case Kind::kConfirmed:
      s.status = "confirmed";
      if (s.confirmed_at.empty()) s.confirmed_at = e.at;
      break;
    case Kind::kNoteAdded:
    case Kind::kUnknown:
      break;
  }
}

namespace {
uint64_t Mix(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  return x;
}
}  // namespace

Event Generate(const std::string& stream, int64_t n, int64_t confirm_at) {
  const uint64_t h = Mix(std::hash<std::string>{}(stream)*31 + static_cast<uint64_t>(n));
  Event e;
  const int day = 1 + static_cast<int>(h % 28), minute = static_cast<int>(n % 60);
  if (n == 1) {
    e.kind = Kind::kCreated;
    e.customer = fmt::format("customer-{}", h % 5000);
    e.at = fmt::format("2024-03-{:02d}T10:{:02d}:00", day, minute);
  } else if (n == confirm_at) {
    e.kind = Kind::kConfirmed;
    e.at = fmt::format("2024-03-{:02d}T18:{:02d}:00", day, minute);
  } else if (h % 10 < 5) {
    e.kind = Kind::kItemAdded;
    e.sku = fmt::format("SKU-{:04d}", h % 997);
    e.quantity = 1 + static_cast<int64_t>(h % 5);
    e.cents = e.quantity * (199 + static_cast<int64_t>(h % 9000));
  } else if (h % 10 < 7) {
    e.kind = Kind::kDiscountApplied;
    e.cents = 50 + static_cast<int64_t>(h % 1000);
  } else {
    e.kind = Kind::kNoteAdded;
    e.note = fmt::format(
        "Please leave the parcel with the neighbour at number {} if nobody answers.", h % 100);
  }
  return e;
}

std::string Payload(const std::string& stream, const Event& e) {
  switch (e.kind) {
    case Kind::kCreated:
      return fmt::format(
          R"({{"orderId":"{}","status":"created","customer":{{"id":"{}","segment":"retail"}},"at":"{}","currency":"EUR"}})",
          stream, e.customer, e.at);
    case Kind::kItemAdded:
      return fmt::format(
          R"({{"orderId":"{}","sku":"{}","quantity":{},"unitPrice":{},"lineTotal":{}}})", stream,
          e.sku, e.quantity, Money(e.cents / e.quantity), Money(e.cents));
    case Kind::kDiscountApplied:
      return fmt::format(R"({{"orderId":"{}","code":"SPRING","amount":{}}})", stream,
                         Money(e.cents));
    case Kind::kConfirmed:
      return fmt::format(R"({{"orderId":"{}","status":"confirmed","at":"{}"}})", stream, e.at);
    case Kind::kNoteAdded:
      return fmt::format(R"({{"orderId":"{}","note":"{}"}})", stream, e.note);
    case Kind::kUnknown:
      break;
  }
  return "{}";
}

std::string SnapshotJson(const State& s) {
  return fmt::format(
      R"({{"version":{},"status":"{}","customer":"{}","items":{},"quantity":{},"totalCents":{},"discountCents":{},"confirmedAt":"{}"}})",
      s.version, s.status, s.customer, s.items, s.quantity, s.total_cents, s.discount_cents,
      s.confirmed_at);
}

std::string Money(int64_t cents) { return fmt::format("{}.{:02d}", cents / 100, cents % 100); }

State Folded(const std::string& stream, int64_t n, int64_t confirm_at) {
  State s;
  for (int64_t v = 1; v <= n; ++v) Fold(s, Generate(stream, v, confirm_at));
  return s;
}

}  // namespace rw::order
