// EventId: an event's id, wide enough for every integer id column rewind accepts (signed
// and unsigned BIGINT, negative ids included), with one value below all of them that
// means "nothing read yet".
//
// Plain values; thread-compatible.
#pragma once

#include <charconv>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace rw {

using EventId = __int128;

// Below every BIGINT and BIGINT UNSIGNED value: the position before the first event.
inline constexpr EventId kBeforeFirstId = -static_cast<EventId>(INT64_MAX) - 2;

// Decimal text, as SQL literals and messages want it.
inline std::string IdText(EventId id) {
  if (id >= INT64_MIN && id <= INT64_MAX) {  // every signed BIGINT: no 128-bit division
    char buf[24];
    const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, static_cast<int64_t>(id));
    return std::string(buf, end);
  }
  const bool negative = id < 0;
  unsigned __int128 v = negative ? static_cast<unsigned __int128>(-(id + 1)) + 1
                                 : static_cast<unsigned __int128>(id);
  char buf[48];
  int i = sizeof buf;
  while (v > 0) {
    buf[--i] = static_cast<char>('0' + static_cast<int>(v % 10));
    v /= 10;
  }
  if (negative) buf[--i] = '-';
  return std::string(buf + i, sizeof buf - static_cast<size_t>(i));
}

// Parses decimal text ("-12", "18446744073709551615"); nullopt when it is not an integer
// of at most 39 digits.
inline std::optional<EventId> ParseEventId(std::string_view s) {
  if (s.empty()) return std::nullopt;
  const bool negative = s[0] == '-';
  if (negative) s.remove_prefix(1);
  if (s.empty() || s.size() > 38) return std::nullopt;
  EventId v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + (c - '0');
  }
  return negative ? -v : v;
}

// A display-only position for progress bars (saturates outside int64).
inline int64_t ProgressPosition(EventId id) {
  if (id > INT64_MAX) return INT64_MAX;
  if (id < INT64_MIN) return INT64_MIN;
  return static_cast<int64_t>(id);
}

}  // namespace rw
