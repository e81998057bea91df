// Segments: one declared read model built in N shares by key (`replay --build-only
// --segment I/N`), merged into one shadow table by the swap (pipeline/replay/segments.h).
//
// A key's segment is FNV-1a 64 of the key's canonical encoding, modulo N. The encoding is
// the declared projector's row key after buckets, the key columns in key order (every
// non-text key first, then every text key, each group in declaration order): an integer
// key (bigint, a date's day number, a datetime's seconds) as 8 bytes big-endian with the
// sign bit flipped, a text key as its length (4 bytes big-endian) then its bytes. It
// depends on nothing but the key's values, so every process, host and rewind version that
// keeps this encoding puts a key in the same segment. Segments are numbered from 0.
//
// Thread safety: pure functions and a value type.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace rw {

struct Segment {
  uint32_t index = 0;  // 0 <= index < count
  uint32_t count = 1;
  bool operator==(const Segment&) const = default;
};

// At most this many segments: a sane bound on the builders of one read model (and on the
// tables and named locks the swap takes at once).
inline constexpr uint32_t kMaxSegments = 64;

// FNV-1a 64 of `bytes` (offset basis 14695981039346656037, prime 1099511628211).
inline uint64_t Fnv1a64(std::string_view bytes) {
  uint64_t h = 14695981039346656037ull;
  for (const char c : bytes) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ull;
  }
  return h;
}

// The segment of `count` that an encoded key falls in.
inline uint32_t SegmentOfKey(std::string_view encoded_key, uint32_t count) {
  return static_cast<uint32_t>(Fnv1a64(encoded_key) % count);
}

// "I/N" as a Segment, or "" and the segment in `out`; otherwise why it is not one.
std::string ParseSegment(std::string_view text, Segment& out);
// "I/N".
std::string SegmentText(const Segment& s);
// The suffix of a segment's build table beside the live table: "__rewind_seg<I>of<N>".
std::string SegmentSuffix(const Segment& s);
// The segment whose build table is `table` beside `live` (a name rewind gave it), if it is one.
std::optional<Segment> SegmentOfTable(std::string_view live, std::string_view table);

}  // namespace rw
