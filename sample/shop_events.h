// Shop events: the orders of the sample domain (order.h) as a shop application stores them,
// for declared read models (tests/declared_test.cc, rewind-gen --shop, the demo).
//
// Orders are placed by customers (unicode ids, some numeric), get items, discounts, a
// confirmation, some a refund. Amounts are written as JSON integers, decimals and numeric
// strings; a few events are deliberately bad (an amount that is not a number, a missing
// customer). Every event keeps its facts as plain fields beside its JSON, so that a test
// can compute the expected read models from the facts, never from rewind.
//
// Deterministic for a given seed. Header-only; thread-compatible.
#pragma once

#include <fmt/core.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "sample/order.h"

namespace rw::shop {

// The event classes: the sample domain's event types (order.h) in the shop's namespace, as a
// PHP application names its classes, and one type the shop adds (a refund).
inline const std::string kNamespace = "App\\Shop\\";
inline const std::string kCreated = kNamespace + order::kCreated;
inline const std::string kItemAdded = kNamespace + order::kItemAdded;
inline const std::string kDiscount = kNamespace + order::kDiscountApplied;
inline const std::string kConfirmed = kNamespace + order::kConfirmed;
inline const std::string kRefunded = kNamespace + "OrderRefunded";

struct Event {
  std::string event_class;
  std::string payload;     // JSON
  std::string created_at;  // the event table's createdAt, 'YYYY-MM-DD HH:MM:SS'
  // The facts (what the payload says, for a reference computation).
  int64_t order = 0;
  std::string customer;    // as a text key (a numeric id is its digits)
  bool has_customer = true;
  std::string when;        // placedAt / confirmedAt wall clock 'YYYY-MM-DD HH:MM:SS'
  int64_t cents = 0;       // amount, lineTotal
  bool bad_amount = false; // the amount is not a number
  std::string sku;
  int64_t quantity = 0;
};

inline std::string Money(int64_t cents, int style) {
  const std::string text = order::Money(cents);
  switch (style % 3) {
    case 0: return cents % 100 == 0 ? std::to_string(cents / 100) : text;  // a JSON integer when whole
    case 1: return text;                                                      // a JSON decimal
    default: return "\"" + text + "\"";                                       // a numeric string
  }
}

inline std::vector<Event> Events(int orders, uint64_t seed = 7) {
  static const char* const kCustomers[] = {"anna", "björn", "顧客-7", "zoë", "c\"quoted\"", "emoji-\xF0\x9F\x8E\x89",
                                           "42", "1001"};
  static const char* const kSkus[] = {"book", "pen", "mug", "t-shirt", "poster"};
  std::mt19937_64 rng(seed);
  std::vector<Event> out;
  int64_t day_seconds = 0;
  for (int o = 1; o <= orders; ++o) {
    const std::string customer = kCustomers[rng() % std::size(kCustomers)];
    const bool numeric_customer = customer == "42" || customer == "1001";
    const int month = 1 + static_cast<int>(rng() % 4), day = 1 + static_cast<int>(rng() % 28);
    const int hour = static_cast<int>(rng() % 24), minute = static_cast<int>(rng() % 60);
    const std::string when = fmt::format("2024-{:02d}-{:02d} {:02d}:{:02d}:00", month, day, hour, minute);
    const std::string iso = when.substr(0, 10) + "T" + when.substr(11) + (o % 2 ? "+02:00" : "Z");
    const std::string created = fmt::format("2024-{:02d}-{:02d} {:02d}:{:02d}:{:02d}", month, day, hour, minute,
                                            static_cast<int>(day_seconds++ % 60));
    const std::string customer_json = numeric_customer ? customer : "\"" + (customer == "c\"quoted\"" ? std::string("c\\\"quoted\\\"") : customer) + "\"";
    // Placed: 10% are a tenth of a unit (exact sums: ten of them are 1.00, not 0.9999).
    Event placed;
    placed.event_class = kCreated;
    placed.order = o;
    placed.customer = customer;
    placed.when = when;
    placed.created_at = created;
    placed.cents = o % 10 == 0 ? 10 : static_cast<int64_t>(100 + rng() % 20000);
    placed.bad_amount = o % 97 == 0;
    placed.has_customer = o % 89 != 0;
    const std::string amount = placed.bad_amount ? "\"twelve\"" : Money(placed.cents, o);
    placed.payload = placed.has_customer
                         ? fmt::format(R"({{"orderId":{},"customer":{{"id":{},"tier":"gold"}},"placedAt":"{}","amount":{}}})", o,
                                       customer_json, iso, amount)
                         : fmt::format(R"({{"orderId":{},"placedAt":"{}","amount":{}}})", o, iso, amount);
    out.push_back(placed);
    const int items = 1 + static_cast<int>(rng() % 3);
    for (int i = 0; i < items; ++i) {
      Event item;
      item.event_class = kItemAdded;
      item.order = o;
      item.sku = kSkus[rng() % std::size(kSkus)];
      item.quantity = 1 + static_cast<int64_t>(rng() % 4);
      item.cents = static_cast<int64_t>(50 + rng() % 5000);
      item.created_at = created;
      item.payload = fmt::format(R"({{"orderId":"{}","sku":"{}","quantity":{},"lineTotal":{}}})", o, item.sku,
                                 item.quantity, Money(item.cents, i + o));
      out.push_back(item);
    }
    if (rng() % 3 == 0) {
      Event discount;
      discount.event_class = kDiscount;
      discount.order = o;
      discount.cents = static_cast<int64_t>(10 + rng() % 500);
      discount.created_at = created;
      discount.payload = fmt::format(R"({{"orderId":{},"amount":{}}})", o, Money(discount.cents, o + 1));
      out.push_back(discount);
    }
    if (rng() % 4 != 0) {
      Event confirmed;
      confirmed.event_class = kConfirmed;
      confirmed.order = o;
      confirmed.when = fmt::format("2024-{:02d}-{:02d} {:02d}:{:02d}:30", month, day, hour, minute);
      confirmed.created_at = created;
      confirmed.payload = fmt::format(R"({{"orderId":{},"confirmedAt":"{}"}})", o,
                                      confirmed.when.substr(0, 10) + "T" + confirmed.when.substr(11));
      out.push_back(confirmed);
    }
    if (placed.has_customer && !placed.bad_amount && rng() % 8 == 0) {
      Event refund = placed;
      refund.event_class = kRefunded;
      refund.payload = fmt::format(R"({{"orderId":{},"customer":{{"id":{}}},"placedAt":"{}","amount":{}}})", o,
                                   customer_json, iso, Money(placed.cents, o + 2));
      out.push_back(refund);
    }
  }
  return out;
}

}  // namespace rw::shop
