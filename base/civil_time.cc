#include "base/civil_time.h"

#include <cstring>

namespace rw {
namespace {

// Reads exactly `n` digits at `p`; returns -1 if any is not a digit.
int Digits(const char* p, int n) {
  int v = 0;
  for (int i = 0; i < n; ++i) {
    const unsigned d = static_cast<unsigned char>(p[i]) - '0';
    if (d > 9) return -1;
    v = v * 10 + static_cast<int>(d);
  }
  return v;
}

void Put(char* out, int value, int width) {
  for (int i = width - 1; i >= 0; --i) {
    out[i] = static_cast<char>('0' + value % 10);
    value /= 10;
  }
}

}  // namespace

std::optional<CivilTime> ParseIsoTimestamp(std::string_view s) {
  if (s.size() < 19) return std::nullopt;
  const char* p = s.data();
  if (p[4] != '-' || p[7] != '-' || (p[10] != 'T' && p[10] != ' ' && p[10] != 't') ||
      p[13] != ':' || p[16] != ':')
    return std::nullopt;
  const int y = Digits(p, 4), mo = Digits(p + 5, 2), d = Digits(p + 8, 2);
  const int h = Digits(p + 11, 2), mi = Digits(p + 14, 2), sec = Digits(p + 17, 2);
  if (y < 1 || mo < 1 || mo > 12 || d < 1 || h < 0 || h > 23 || mi < 0 || mi > 59 || sec < 0 ||
      sec > 60)
    return std::nullopt;
  if (static_cast<unsigned>(d) > DaysInMonth(y, static_cast<unsigned>(mo))) return std::nullopt;

  size_t i = 19;
  int32_t micros = 0;
  if (i < s.size() && (s[i] == '.' || s[i] == ',')) {
    size_t j = i + 1;
    int scale = 100000;
    while (j < s.size() && s[j] >= '0' && s[j] <= '9') {
      micros += (s[j] - '0') * scale;  // digits past the sixth are cut
      scale /= 10;
      ++j;
    }
    if (j == i + 1) return std::nullopt;
    i = j;
  }
  if (i < s.size()) {
    const std::string_view off = s.substr(i);
    if (off == "Z" || off == "z") {
      // UTC
    } else if (off[0] == '+' || off[0] == '-') {
      int oh = -1, om = 0;
      if (off.size() == 3) {
        oh = Digits(off.data() + 1, 2);
      } else if (off.size() == 5) {
        oh = Digits(off.data() + 1, 2), om = Digits(off.data() + 3, 2);
      } else if (off.size() == 6 && off[3] == ':') {
        oh = Digits(off.data() + 1, 2), om = Digits(off.data() + 4, 2);
      }
      if (oh < 0 || oh > 23 || om < 0 || om > 59) return std::nullopt;
    } else {
      return std::nullopt;
    }
  }
  return CivilTime{DaysFromCivil(y, static_cast<unsigned>(mo), static_cast<unsigned>(d)),
                   h * 3600 + mi * 60 + (sec == 60 ? 59 : sec), micros};
}

int FormatDate(int32_t days, char* out) {
  const CivilDate c = CivilFromDays(days);
  Put(out, c.year, 4);
  out[4] = '-';
  Put(out + 5, c.month, 2);
  out[7] = '-';
  Put(out + 8, c.day, 2);
  return 10;
}

int FormatDateTime(int64_t epoch_seconds, char* out) {
  int64_t days = epoch_seconds / 86400;
  int64_t sod = epoch_seconds % 86400;
  if (sod < 0) sod += 86400, --days;
  FormatDate(static_cast<int32_t>(days), out);
  out[10] = ' ';
  Put(out + 11, static_cast<int>(sod / 3600), 2);
  out[13] = ':';
  Put(out + 14, static_cast<int>(sod / 60 % 60), 2);
  out[16] = ':';
  Put(out + 17, static_cast<int>(sod % 60), 2);
  return 19;
}

int FormatDateTimeMicros(int64_t epoch_micros, char* out) {
  int64_t seconds = epoch_micros / 1'000'000;
  int64_t micros = epoch_micros % 1'000'000;
  if (micros < 0) micros += 1'000'000, --seconds;
  const int n = FormatDateTime(seconds, out);
  if (micros == 0) return n;
  out[n] = '.';
  Put(out + n + 1, static_cast<int>(micros), 6);
  return n + 7;
}

std::optional<CivilTime> ParseDateOrTimestamp(std::string_view text) {
  if (text.size() == 10) {
    char buf[19];
    std::memcpy(buf, text.data(), 10);
    std::memcpy(buf + 10, "T00:00:00", 9);
    return ParseIsoTimestamp(std::string_view(buf, 19));
  }
  return ParseIsoTimestamp(text);
}

}  // namespace rw
