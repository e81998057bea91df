// SHA-256 (FIPS 180-4) of a byte string, by libcrypto: the key of the URL read models' tables, computed
// here so the server does not have to (perf/README.md). Pure function, thread-safe.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace rw {

using Sha256Digest = std::array<uint8_t, 32>;

Sha256Digest Sha256(std::string_view bytes);

// The first `bytes` bytes of the digest as lower-case hex (a short, stable name for `text`).
std::string Sha256Hex(std::string_view text, size_t bytes);

}  // namespace rw
