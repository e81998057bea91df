// IdForm: how an event table writes its ids, and the order-preserving map between those ids
// and EventId (base/event_id.h).
//
// Integer ids are themselves. Time-sortable text and binary ids (ULID as 26 Crockford base32
// characters, a UUID as 36 hexadecimal characters with hyphens, a UUID as 16 bytes) are the
// unsigned 128-bit number they spell, whose order is the order the server sorts them in
// (text compared character by character in ASCII order, upper or lower case as the table
// writes them; bytes compared as bytes). Such a number fits EventId when its highest bit is
// clear: a ULID or a UUIDv7 made before the year 6400. The space between two such ids is a
// range of EventIds like any other, so that holes, pages and segments need nothing new; a
// hole's width only says nothing about how many events may still arrive in it.
//
// Plain values; thread-compatible.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "base/event_id.h"

namespace rw {

struct IdForm {
  enum class Kind : uint8_t { kInteger, kUlid, kUuidText, kUuidBytes };
  Kind kind = Kind::kInteger;
  bool lower = false;  // text ids written in lower case (hexadecimal UUIDs, as most libraries)

  bool integer() const { return kind == Kind::kInteger; }
  bool operator==(const IdForm&) const = default;
};

// "integer", "ULID", "UUID text", "UUID bytes": for messages.
std::string_view IdFormName(const IdForm& f);

// The id as the table holds it (decimal text for integers, the raw 16 bytes for kUuidBytes)
// to its EventId; nullopt when it is not an id of that form, or one beyond EventId.
std::optional<EventId> ParseIdAs(const IdForm& f, std::string_view held);

// The version of a UUID (its 13th hexadecimal digit); nullopt for another form, or not a UUID.
std::optional<int> UuidVersion(const IdForm& f, std::string_view held);

// The id as a SQL literal compared with the id column: 42, '01J0...', 'xxxxxxxx-...', X'...'.
std::string IdSql(const IdForm& f, EventId id);

// The id as a person reads it, in messages: 42, 01J0..., xxxxxxxx-....
std::string IdShown(const IdForm& f, EventId id);

// The form a column's values take, from its information_schema DATA_TYPE and the text (or
// bytes) of one of its values (none: an empty table, judged by the type and its length).
// nullopt: not a form rewind can page by.
std::optional<IdForm> IdFormOf(std::string_view data_type, uint64_t length, const std::optional<std::string>& sample);

// Whether the form's ids carry their creation time in their highest 48 bits (milliseconds
// since 1970: ULID and UUIDv7), so that a distance between ids is a distance in time.
bool TimeOrdered(const IdForm& f);
// For such forms, EventIds per millisecond.
inline constexpr EventId kIdsPerMillisecond = static_cast<EventId>(1) << 80;

}  // namespace rw
