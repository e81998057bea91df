// An independent reading of the blog's access-log rules (issue 11), with std::regex, for
// tests to hold rewind's own parser (pipeline/ingest/access_log) and ingest against.
#pragma once

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <map>
#include <regex>
#include <string>
#include <vector>

#include "pipeline/ingest/access_log.h"

namespace rw::testing {

struct Expected {
  std::string reason;
  std::string url, ip;
  int64_t t = 0;
};

inline Expected Skipped(const char* reason) {
  Expected e;
  e.reason = reason;
  return e;
}

// The blog's rules, as regexes, line by line.
inline Expected Reference(const std::string& line, const AccessLogRules& rules) {
  static const std::regex date(R"(\[(\d{2})/(\w{3})/(\d{4}):(\d{2}):(\d{2}):(\d{2}))");
  static const std::regex url(R"((GET|POST)\s+([a-zA-Z0-9_/.\-]+))");
  static const std::regex status(R"re("(?:[^"\\]|\\.)*"\s*(\S+))re");
  static const std::regex agent(R"re("((?:[^"\\]|\\.)*)"\s*$)re");
  static const std::string months = "JanFebMarAprMayJunJulAugSepOctNovDec";
  Expected e;
  std::smatch m;
  if (!std::regex_search(line, m, date) || months.find(m[2].str()) == std::string::npos) return Skipped("no date");
  std::tm tm{};
  tm.tm_year = std::stoi(m[3]) - 1900;
  tm.tm_mon = static_cast<int>(months.find(m[2].str()) / 3);
  tm.tm_mday = std::stoi(m[1]);
  tm.tm_hour = std::stoi(m[4]);
  tm.tm_min = std::stoi(m[5]);
  tm.tm_sec = std::stoi(m[6]);
  e.t = timegm(&tm);
  if (!std::regex_search(line, m, url)) return Skipped("url");
  e.url = m[2];
  for (const std::string& a : rules.blocked_affixes) {
    if (e.url.starts_with(a) || e.url.ends_with(a)) return Skipped("blocked url");
  }
  if (!std::regex_search(line, m, status) || m[1].str()[0] != '2') return Skipped("status");
  e.ip = line.substr(0, line.find(' '));
  if (std::count(rules.blocked_ips.begin(), rules.blocked_ips.end(), e.ip)) return Skipped("ip");
  if (!std::regex_search(line, m, agent)) return Skipped("malformed");
  std::string ua = m[1];
  for (char& c : ua) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (const std::string& w : rules.bot_words) {
    if (ua.find(w) != std::string::npos) return Skipped("bot");
  }
  e.reason = "kept";
  return e;
}

// Every line of `path` through the reference rules, the throttle included.
inline std::vector<Expected> ReferenceIngest(const std::string& path) {
  const AccessLogRules rules = AccessLogRules::Blog();
  std::map<std::string, int64_t> last_seen;
  std::vector<Expected> out;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    Expected want = Reference(line, rules);
    if (want.reason == "kept") {
      auto [it, fresh] = last_seen.try_emplace(want.ip, want.t);
      if (!fresh) {
        if (std::llabs(want.t - it->second) < rules.throttle_seconds) want.reason = "throttled";
        it->second = want.t;
      }
    }
    out.push_back(want);
  }
  return out;
}

}  // namespace rw::testing
