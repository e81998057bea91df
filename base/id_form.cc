#include "base/id_form.h"

#include <algorithm>
#include <array>

namespace rw {
namespace {

constexpr std::string_view kCrockford = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";

// A Crockford base32 digit's value (case-blind; I L O are not read as 1 1 0: a ULID never has them).
int CrockfordValue(char ch) {
  const char up = (ch >= 'a' && ch <= 'z') ? static_cast<char>(ch - 'a' + 'A') : ch;
  const size_t at = kCrockford.find(up);
  return at == std::string_view::npos ? -1 : static_cast<int>(at);
}

int HexValue(char ch) {
  if (ch >= '0' && ch <= '9') return ch - '0';
  if (ch >= 'a' && ch <= 'f') return ch - 'a' + 10;
  if (ch >= 'A' && ch <= 'F') return ch - 'A' + 10;
  return -1;
}

bool IsDash(size_t i) { return i == 8 || i == 13 || i == 18 || i == 23; }

// An unsigned 128-bit value to EventId: nullopt when its highest bit is set.
std::optional<EventId> Fits(unsigned __int128 v) {
  if (v >> 127) return std::nullopt;
  return static_cast<EventId>(v);
}

std::string Ulid(EventId id, bool lower) {
  auto v = static_cast<unsigned __int128>(id);
  std::string out(26, '0');
  for (int i = 25; i >= 0; --i) {
    char ch = kCrockford[static_cast<size_t>(v & 31)];
    if (lower && ch >= 'A') ch = static_cast<char>(ch - 'A' + 'a');
    out[static_cast<size_t>(i)] = ch;
    v >>= 5;
  }
  return out;
}

std::string Hex(EventId id, bool lower, bool dashes) {
  auto v = static_cast<unsigned __int128>(id);
  const char* digits = lower ? "0123456789abcdef" : "0123456789ABCDEF";
  std::string out;
  for (int i = 31; i >= 0; --i) out += digits[static_cast<size_t>((v >> (4 * i)) & 15)];
  if (dashes) {
    for (size_t at : {8, 13, 18, 23}) out.insert(at, 1, '-');
  }
  return out;
}

}  // namespace

std::string_view IdFormName(const IdForm& f) {
  switch (f.kind) {
    case IdForm::Kind::kInteger: return "integer";
    case IdForm::Kind::kUlid: return "ULID";
    case IdForm::Kind::kUuidText: return "UUID text";
    case IdForm::Kind::kUuidBytes: return "UUID bytes";
  }
  return "integer";
}

namespace {

// The number a ULID or UUID spells, all 128 bits of it; nullopt when it is not of the form.
std::optional<unsigned __int128> Decode(IdForm::Kind kind, std::string_view held) {
  unsigned __int128 v = 0;
  switch (kind) {
    case IdForm::Kind::kInteger: return std::nullopt;
    case IdForm::Kind::kUlid:
      if (held.size() != 26) return std::nullopt;
      for (char ch : held) {
        const int d = CrockfordValue(ch);
        if (d < 0 || (v >> 123) != 0) return std::nullopt;  // not Crockford's, or beyond 128 bits
        v = (v << 5) | static_cast<unsigned>(d);
      }
      return v;
    case IdForm::Kind::kUuidText:
      if (held.size() != 36) return std::nullopt;
      for (size_t i = 0; i < held.size(); ++i) {
        if (IsDash(i)) {
          if (held[i] != '-') return std::nullopt;
          continue;
        }
        const int d = HexValue(held[i]);
        if (d < 0) return std::nullopt;
        v = (v << 4) | static_cast<unsigned>(d);
      }
      return v;
    case IdForm::Kind::kUuidBytes:
      if (held.size() != 16) return std::nullopt;
      for (char ch : held) v = (v << 8) | static_cast<unsigned char>(ch);
      return v;
  }
  return std::nullopt;
}

}  // namespace

std::optional<EventId> ParseIdAs(const IdForm& f, std::string_view held) {
  if (f.integer()) return ParseEventId(held);
  const std::optional<unsigned __int128> v = Decode(f.kind, held);
  return v ? Fits(*v) : std::nullopt;
}

std::optional<int> UuidVersion(const IdForm& f, std::string_view held) {
  if (f.kind != IdForm::Kind::kUuidText && f.kind != IdForm::Kind::kUuidBytes) return std::nullopt;
  const std::optional<unsigned __int128> v = Decode(f.kind, held);
  if (!v) return std::nullopt;
  return static_cast<int>((*v >> 76) & 15);
}

std::string IdSql(const IdForm& f, EventId id) {
  switch (f.kind) {
    case IdForm::Kind::kInteger: return IdText(id);
    case IdForm::Kind::kUlid: return "'" + Ulid(id, f.lower) + "'";
    case IdForm::Kind::kUuidText: return "'" + Hex(id, f.lower, true) + "'";
    case IdForm::Kind::kUuidBytes: return "X'" + Hex(id, false, false) + "'";
  }
  return IdText(id);
}

std::string IdShown(const IdForm& f, EventId id) {
  if (id < 0) return IdText(id);  // kBeforeFirstId, in messages that show it
  switch (f.kind) {
    case IdForm::Kind::kInteger: return IdText(id);
    case IdForm::Kind::kUlid: return Ulid(id, f.lower);
    case IdForm::Kind::kUuidText: return Hex(id, f.lower, true);
    case IdForm::Kind::kUuidBytes: return Hex(id, true, true);
  }
  return IdText(id);
}

std::optional<IdForm> IdFormOf(std::string_view data_type, uint64_t length, const std::optional<std::string>& sample) {
  static const std::array<std::string_view, 5> kIntegers = {"tinyint", "smallint", "mediumint", "int", "bigint"};
  if (std::find(kIntegers.begin(), kIntegers.end(), data_type) != kIntegers.end()) return IdForm{};
  if (data_type == "binary" || data_type == "varbinary") {
    if (sample ? Decode(IdForm::Kind::kUuidBytes, *sample).has_value() : length == 16) {
      return IdForm{IdForm::Kind::kUuidBytes, false};
    }
    return std::nullopt;
  }
  if (data_type != "char" && data_type != "varchar") return std::nullopt;
  auto lower_in = [](std::string_view s) { return std::any_of(s.begin(), s.end(), [](char ch) { return ch >= 'a' && ch <= 'z'; }); };
  if (sample) {
    for (IdForm::Kind kind : {IdForm::Kind::kUlid, IdForm::Kind::kUuidText}) {
      if (Decode(kind, *sample)) return IdForm{kind, lower_in(*sample)};
    }
    return std::nullopt;
  }
  if (length == 26) return IdForm{IdForm::Kind::kUlid, false};
  if (length == 36) return IdForm{IdForm::Kind::kUuidText, true};
  return std::nullopt;
}

bool TimeOrdered(const IdForm& f) { return f.kind != IdForm::Kind::kInteger; }

}  // namespace rw
