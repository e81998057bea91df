#include "pipeline/ingest/access_log.h"

#include <fmt/core.h>

#include <algorithm>
#include <cstdlib>

#include "base/civil_time.h"

namespace rw {
namespace {

bool IsUrlChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '/' || c == '.' || c == '-';
}
bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

int Two(std::string_view s, size_t at) {
  if (at + 2 > s.size() || s[at] < '0' || s[at] > '9' || s[at + 1] < '0' || s[at + 1] > '9') return -1;
  return (s[at] - '0') * 10 + (s[at + 1] - '0');
}

// `[dd/Mon/yyyy:HH:MM:SS` anywhere in the line (the first bracket that holds one).
std::optional<int64_t> VisitTime(std::string_view line) {
  static constexpr const char* kMonths[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                            "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  for (size_t at = line.find('['); at != std::string_view::npos; at = line.find('[', at + 1)) {
    const std::string_view t = line.substr(at + 1);
    if (t.size() < 20 || t[2] != '/' || t[6] != '/' || t[11] != ':' || t[14] != ':' || t[17] != ':') continue;
    const int day = Two(t, 0), hour = Two(t, 12), minute = Two(t, 15), second = Two(t, 18);
    const int y1 = Two(t, 7), y2 = Two(t, 9);
    unsigned month = 0;
    for (unsigned m = 0; m < 12; ++m) {
      if (t.substr(3, 3) == kMonths[m]) month = m + 1;
    }
    if (day < 1 || y1 < 0 || y2 < 0 || month == 0 || hour < 0 || hour > 23 || minute < 0 ||
        minute > 59 || second < 0 || second > 60) {
      continue;
    }
    const int year = y1 * 100 + y2;
    if (year < 1 || static_cast<unsigned>(day) > DaysInMonth(year, month)) continue;
    return int64_t{DaysFromCivil(year, month, static_cast<unsigned>(day))} * 86400 + hour * 3600 +
           minute * 60 + std::min(second, 59);
  }
  return std::nullopt;
}

// The leftmost `(GET|POST)\s+[A-Za-z0-9_/.-]+`, as a regex search finds it.
std::string_view FindUrl(std::string_view line) {
  size_t get = line.find("GET"), post = line.find("POST");
  while (get != std::string_view::npos || post != std::string_view::npos) {
    const bool is_get = get <= post;  // npos is the largest
    const size_t at = is_get ? get : post;
    size_t j = at + (is_get ? 3 : 4);
    const size_t spaces = j;
    while (j < line.size() && IsSpace(line[j])) ++j;
    if (j > spaces) {
      const size_t start = j;
      while (j < line.size() && IsUrlChar(line[j])) ++j;
      if (j > start) return line.substr(start, j - start);
    }
    if (is_get) {
      get = line.find("GET", at + 1);
    } else {
      post = line.find("POST", at + 1);
    }
  }
  return {};
}

bool Affixed(std::string_view url, const std::string& affix) {
  if (url.size() < affix.size()) return false;
  // The first and last bytes rule most affixes out before any compare.
  return (url.front() == affix.front() && url.compare(0, affix.size(), affix) == 0) ||
         (url.back() == affix.back() &&
          url.compare(url.size() - affix.size(), affix.size(), affix) == 0);
}

// The status code after the quoted request: the token after the first quoted field.
std::string_view Status(std::string_view line) {
  const size_t open = line.find('"');
  if (open == std::string_view::npos) return {};
  size_t close = open + 1;
  while (close < line.size() && (line[close] != '"' || line[close - 1] == '\\')) ++close;
  if (close >= line.size()) return {};
  size_t at = close + 1;
  while (at < line.size() && line[at] == ' ') ++at;
  size_t end = at;
  while (end < line.size() && line[end] != ' ') ++end;
  return line.substr(at, end - at);
}

// The last quoted field, when the line ends with one (an escaped quote does not end it).
std::optional<std::string_view> LastQuoted(std::string_view line) {
  while (!line.empty() && IsSpace(line.back())) line.remove_suffix(1);
  if (line.size() < 2 || line.back() != '"') return std::nullopt;
  for (size_t at = line.size() - 1; at-- > 0;) {
    if (line[at] == '"' && (at == 0 || line[at - 1] != '\\')) {
      return line.substr(at + 1, line.size() - at - 2);
    }
  }
  return std::nullopt;
}

// Decodes one UTF-8 character at `s[i]`; U+FFFD (consuming one byte) when it is not valid.
char32_t NextChar(std::string_view s, size_t& i) {
  const auto b = static_cast<unsigned char>(s[i]);
  const size_t len = b < 0x80 ? 1 : (b >> 5) == 6 ? 2 : (b >> 4) == 14 ? 3 : (b >> 3) == 30 ? 4 : 0;
  if (len == 0 || i + len > s.size()) {
    ++i;
    return 0xFFFD;
  }
  char32_t cp = len == 1 ? b : len == 2 ? (b & 0x1F) : len == 3 ? (b & 0x0F) : (b & 0x07);
  for (size_t k = 1; k < len; ++k) {
    const auto c = static_cast<unsigned char>(s[i + k]);
    if ((c >> 6) != 2) {
      ++i;
      return 0xFFFD;
    }
    cp = (cp << 6) | (c & 0x3F);
  }
  static constexpr char32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < kMin[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
    ++i;
    return 0xFFFD;
  }
  i += len;
  return cp;
}

void AppendUtf8(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

// Lower-cased (ASCII letters, as PHP's strtolower does), invalid UTF-8 replaced. ASCII,
// nearly every user agent, takes the fast path.
std::string LowerValidUtf8(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    const auto b = static_cast<unsigned char>(s[i]);
    if (b < 0x80) {
      out += static_cast<char>(b >= 'A' && b <= 'Z' ? b + ('a' - 'A') : b);
      ++i;
      continue;
    }
    AppendUtf8(out, NextChar(s, i));
  }
  return out;
}

}  // namespace

const char* SkipReasonName(SkipReason r) {
  switch (r) {
    case SkipReason::kNone: return "kept";
    case SkipReason::kNoDate: return "no date";
    case SkipReason::kUrl: return "url";
    case SkipReason::kBlockedUrl: return "blocked url";
    case SkipReason::kStatus: return "status";
    case SkipReason::kIp: return "ip";
    case SkipReason::kMalformed: return "malformed";
    case SkipReason::kBot: return "bot";
    case SkipReason::kThrottled: return "throttled";
  }
  return "?";
}

AccessLogRules AccessLogRules::Blog() {
  AccessLogRules r;
  r.blocked_affixes = {".png",      "spotify",        "/site.webmanifest", "/analytics.js",
                       "/stats",    "/rss",           "/analytics",        "/comments",
                       "/img",      "/rss/",          "/build/assets",     "/feed",
                       "/feed/",    "/favicon.ico",   ".env",              ".jpg",
                       ".jpeg",     ".gif",           ".git/HEAD",         ".tar",
                       ".gz",       ".zip",           ".bz2",              "/robots.txt",
                       "/feed.xml", "/rss.xml"};
  r.blocked_ips = {"45.155.205.141", "35.246.133.173", "34.89.200.43",
                   "130.255.160.128", "185.13.96.91", "157.15.40.6"};
  r.bot_words = {"zapier", "curl", "guzzle", "bot", "spider", "ohdear",
                 "crawl",  "feed", "rss",    "python", "uptime-kuma"};
  return r;
}

LogVisit ParseLogLine(std::string_view line, const AccessLogRules& rules) {
  LogVisit v;
  const std::optional<int64_t> t = VisitTime(line);
  if (!t) {
    v.skip = SkipReason::kNoDate;
    return v;
  }
  v.epoch_seconds = *t;
  v.url = FindUrl(line);
  if (v.url.empty()) {
    v.skip = SkipReason::kUrl;
    return v;
  }
  for (const std::string& affix : rules.blocked_affixes) {
    if (Affixed(v.url, affix)) {
      v.skip = SkipReason::kBlockedUrl;
      return v;
    }
  }
  const std::string_view status = Status(line);
  if (status.empty() || status[0] != '2') {
    v.skip = SkipReason::kStatus;
    return v;
  }
  v.ip = line.substr(0, line.find(' '));
  if (std::find(rules.blocked_ips.begin(), rules.blocked_ips.end(), v.ip) != rules.blocked_ips.end()) {
    v.skip = SkipReason::kIp;
    return v;
  }
  const std::optional<std::string_view> ua = LastQuoted(line);
  if (!ua) {
    v.skip = SkipReason::kMalformed;
    return v;
  }
  v.user_agent = LowerValidUtf8(*ua);
  for (const std::string& word : rules.bot_words) {
    if (v.user_agent.find(word) != std::string::npos) {
      v.skip = SkipReason::kBot;
      return v;
    }
  }
  return v;
}

bool IpThrottle::Throttled(std::string_view ip, int64_t t) {
  auto [it, fresh] = latest_.try_emplace(std::string(ip), t);
  if (fresh) return false;
  const bool throttled = std::llabs(t - it->second) < seconds_;
  it->second = t;
  return throttled;
}

bool IpThrottle::WouldThrottle(std::string_view ip, int64_t t) const {
  const auto it = latest_.find(std::string(ip));
  return it != latest_.end() && std::llabs(t - it->second) < seconds_;
}

void AppendPhpJsonString(std::string& out, std::string_view s) {
  out += '"';
  for (size_t i = 0; i < s.size();) {
    // A run of printable ASCII that needs no escape is appended whole.
    size_t run = i;
    while (run < s.size()) {
      const auto b = static_cast<unsigned char>(s[run]);
      if (b < 0x20 || b >= 0x80 || b == '"' || b == '\\' || b == '/') break;
      ++run;
    }
    if (run > i) {
      out.append(s.data() + i, run - i);
      i = run;
      continue;
    }
    const char32_t cp = NextChar(s, i);
    switch (cp) {
      case '"': out += "\\\""; continue;
      case '\\': out += "\\\\"; continue;
      case '/': out += "\\/"; continue;
      case '\b': out += "\\b"; continue;
      case '\f': out += "\\f"; continue;
      case '\n': out += "\\n"; continue;
      case '\r': out += "\\r"; continue;
      case '\t': out += "\\t"; continue;
      default: break;
    }
    if (cp >= 0x20 && cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x10000) {
      out += fmt::format("\\u{:04x}", static_cast<unsigned>(cp));
    } else {  // a surrogate pair, as PHP writes it
      const char32_t v = cp - 0x10000;
      out += fmt::format("\\u{:04x}\\u{:04x}", static_cast<unsigned>(0xD800 + (v >> 10)),
                         static_cast<unsigned>(0xDC00 + (v & 0x3FF)));
    }
  }
  out += '"';
}

std::string PageVisitedPayload(std::string_view uuid, const LogVisit& v, std::string_view raw) {
  char when[20];
  FormatDateTime(v.epoch_seconds, when);
  when[10] = 'T';
  std::string out = "{\"uuid\":";
  AppendPhpJsonString(out, uuid);
  out += ",\"url\":";
  AppendPhpJsonString(out, v.url);
  out += ",\"visitedAt\":";
  AppendPhpJsonString(out, std::string(when, 19) + "+00:00");
  out += ",\"ip\":";
  AppendPhpJsonString(out, v.ip);
  out += ",\"userAgent\":";
  AppendPhpJsonString(out, v.user_agent);
  out += ",\"raw\":";
  AppendPhpJsonString(out, raw);
  out += ",\"uri\":";
  AppendPhpJsonString(out, v.url);
  out += '}';
  return out;
}

}  // namespace rw
