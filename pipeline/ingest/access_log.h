// Access-log rules: the blog's rules for turning one line of an Apache/nginx combined-format
// log into a PageVisited event, or into the reason it is skipped (issue 11). Pure functions
// and one small stateful throttle; no I/O. The ingest command (not built yet) will feed
// these with lines and append what they keep.
//
// The rules, in order (the first that fails is the line's skip reason):
//  1. kNoDate: no bracketed `dd/Mon/yyyy:HH:MM:SS` (the offset is ignored; taken as UTC).
//  2. kUrl: no `GET` or `POST`, whitespace, then one or more of [A-Za-z0-9_/.-] anywhere in
//     the line (the leftmost such match, as a regex search finds it); the URL ends at the
//     first other character (a query string is cut off).
//  3. kBlockedUrl: the URL starts or ends with a blocked affix (the blog's list).
//  4. kStatus: the status after the quoted request does not start with `2`.
//  5. kIp: the first field is a blocked IP.
//  6. kMalformed: the line does not end with a quoted field (the user agent); kBot: the
//     user agent, lower-cased, contains a bot word.
//  7. kThrottled: the same IP's previous kept-or-throttled line is less than 3 s away
//     (absolute difference, whole seconds; the blog compares only the seconds field).
//
// Thread safety: the functions are pure; an IpThrottle is used by one thread at a time.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace rw {

enum class SkipReason { kNone, kNoDate, kUrl, kBlockedUrl, kStatus, kIp, kMalformed, kBot, kThrottled };
const char* SkipReasonName(SkipReason reason);  // "no date", "url", ...

struct AccessLogRules {
  std::vector<std::string> blocked_affixes;  // URL prefixes and suffixes
  std::vector<std::string> blocked_ips;
  std::vector<std::string> bot_words;         // lower case
  int64_t throttle_seconds = 3;
  // The blog's values.
  static AccessLogRules Blog();
};

// What rules 1-6 make of one line (rule 7 needs the IpThrottle).
struct LogVisit {
  SkipReason skip = SkipReason::kNone;
  int64_t epoch_seconds = 0;   // the visit time, UTC (valid from rule 1 on)
  std::string_view url;        // views into the line
  std::string_view ip;
  std::string user_agent;      // lower-cased, invalid UTF-8 replaced by U+FFFD
};

LogVisit ParseLogLine(std::string_view line, const AccessLogRules& rules);

// Rule 7: remembers each IP's latest kept-or-throttled time.
class IpThrottle {
 public:
  explicit IpThrottle(int64_t seconds) : seconds_(seconds) {}
  // True when the line must be skipped; either way it becomes the IP's latest time.
  bool Throttled(std::string_view ip, int64_t epoch_seconds);
  // What Throttled would say, without making it the IP's latest time.
  bool WouldThrottle(std::string_view ip, int64_t epoch_seconds) const;
  const std::unordered_map<std::string, int64_t>& latest() const { return latest_; }

 private:
  int64_t seconds_;
  std::unordered_map<std::string, int64_t> latest_;
};

// The event's payload exactly as the blog's PHP serialises it (json_encode defaults: no
// spaces, `\/`, `\uXXXX` for everything outside ASCII, invalid UTF-8 as U+FFFD):
// {"uuid","url","visitedAt" (ISO-8601, +00:00),"ip","userAgent","raw","uri"}.
std::string PageVisitedPayload(std::string_view uuid, const LogVisit& visit, std::string_view raw_line);

// PHP json_encode of one string (with its quotes).
void AppendPhpJsonString(std::string& out, std::string_view utf8);

}  // namespace rw
