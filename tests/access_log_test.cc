// The access-log rules (issue 11, groundwork) against the real 10,000-line Apache log in
// the repo, each line checked against an independent implementation of the blog's rules
// written with std::regex here; and the payload against PHP json_encode's output.
#include "stages/access_log.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <ctime>
#include <fstream>
#include <map>
#include <regex>

namespace rw {
namespace {

struct Expected {
  std::string reason;
  std::string url, ip;
  int64_t t = 0;
};

Expected Skipped(const char* reason) {
  Expected e;
  e.reason = reason;
  return e;
}

// The blog's rules, as regexes, line by line.
Expected Reference(const std::string& line, const AccessLogRules& rules) {
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

TEST(AccessLog, TheRealLogMatchesAnIndependentReadingOfTheRules) {
  std::ifstream in(std::string(REWIND_SOURCE_DIR) + "/tests/data/apache-combined/access.log");
  ASSERT_TRUE(in);
  const AccessLogRules rules = AccessLogRules::Blog();
  IpThrottle throttle(rules.throttle_seconds);
  std::map<std::string, int64_t> last_seen;  // the reference throttle
  std::map<std::string, int> counts;
  std::string line;
  int lines = 0, mismatches = 0;
  while (std::getline(in, line)) {
    ++lines;
    Expected want = Reference(line, rules);
    if (want.reason == "kept") {
      auto [it, fresh] = last_seen.try_emplace(want.ip, want.t);
      if (!fresh) {
        if (std::llabs(want.t - it->second) < 3) want.reason = "throttled";
        it->second = want.t;
      }
    }
    LogVisit got = ParseLogLine(line, rules);
    if (got.skip == SkipReason::kNone && throttle.Throttled(got.ip, got.epoch_seconds)) {
      got.skip = SkipReason::kThrottled;
    }
    const std::string reason = SkipReasonName(got.skip);
    ++counts[reason];
    const bool same = reason == want.reason &&
                      (reason != "kept" || (got.url == want.url && got.ip == want.ip && got.epoch_seconds == want.t));
    if (!same && ++mismatches <= 5) {
      ADD_FAILURE() << "line " << lines << ": rewind says " << reason << ", the rules say " << want.reason
                    << "\n" << line;
    }
  }
  EXPECT_EQ(lines, 10'000);
  EXPECT_EQ(mismatches, 0);
  // Every rule is exercised by this real log.
  for (const char* r : {"kept", "url", "blocked url", "status", "bot", "throttled"}) {
    EXPECT_GT(counts[r], 0) << r;
  }
  std::string summary;
  for (const auto& [r, n] : counts) summary += r + " " + std::to_string(n) + "; ";
  RecordProperty("counts", summary);
  std::printf("access log: %s\n", summary.c_str());
}

TEST(AccessLog, OddLinesAreSkippedWithAReasonNeverCrash) {
  const AccessLogRules rules = AccessLogRules::Blog();
  const std::string ok = R"(1.2.3.4 - - [17/May/2015:10:05:03 +0000] "GET /blog/x.html?a=1 HTTP/1.1" 200 12 "-" "Mozilla/5.0")";
  LogVisit v = ParseLogLine(ok, rules);
  EXPECT_EQ(v.skip, SkipReason::kNone);
  EXPECT_EQ(v.url, "/blog/x.html");  // the query string is cut off
  EXPECT_EQ(v.ip, "1.2.3.4");
  EXPECT_EQ(v.user_agent, "mozilla/5.0");
  EXPECT_EQ(ParseLogLine("", rules).skip, SkipReason::kNoDate);
  EXPECT_EQ(ParseLogLine(std::string(1 << 20, 'x'), rules).skip, SkipReason::kNoDate);
  EXPECT_EQ(ParseLogLine(std::string("\0\xff\xfe[17/May/2015:10:05:03]", 24), rules).skip, SkipReason::kUrl);
  EXPECT_EQ(ParseLogLine(ok.substr(0, ok.size() - 1), rules).skip, SkipReason::kMalformed);  // truncated
  EXPECT_EQ(ParseLogLine(R"(1.2.3.4 - - [17/May/2015:10:05:03 +0000] "GET /feedback HTTP/1.1" 200 1 "-" "a")", rules).skip,
            SkipReason::kBlockedUrl);  // the blog's rule: "/feed" is a prefix
  EXPECT_EQ(ParseLogLine(R"(1.2.3.4 - - [31/Feb/2015:10:05:03 +0000] "GET / HTTP/1.1" 200 1 "-" "a")", rules).skip,
            SkipReason::kNoDate);
  LogVisit bad_utf8 = ParseLogLine(R"(1.2.3.4 - - [17/May/2015:10:05:03 +0000] "GET / HTTP/1.1" 200 1 "-" "A)"
                                   "\xC3\x28" R"(B")", rules);
  EXPECT_EQ(bad_utf8.skip, SkipReason::kNone);
  EXPECT_EQ(bad_utf8.user_agent, "a\xEF\xBF\xBD(b");
}

TEST(AccessLog, ThrottleComparesWholeSecondsEitherWay) {
  IpThrottle t(3);
  EXPECT_FALSE(t.Throttled("a", 100));
  EXPECT_TRUE(t.Throttled("a", 102));   // 2 s after
  EXPECT_TRUE(t.Throttled("a", 100));   // 2 s before (logs are not ordered): still the latest
  EXPECT_FALSE(t.Throttled("a", 103));  // 3 s after the latest
  EXPECT_FALSE(t.Throttled("b", 103));
  EXPECT_FALSE(t.Throttled("a", 165));  // 1 min 2 s: the blog would say 2 s; we do not
}

TEST(AccessLog, PayloadIsWhatPhpJsonEncodeWrites) {
  const AccessLogRules rules = AccessLogRules::Blog();
  const std::string line = "9.8.7.6 - - [17/May/2015:10:05:03 +0200] \"GET /caf\xC3\xA9/x HTTP/1.1\" 200 1 "
                           "\"-\" \"Mozilla \\\"Q\\\" \xF0\x9F\x8E\x89\"";
  LogVisit v = ParseLogLine(line, rules);
  ASSERT_EQ(v.skip, SkipReason::kNone);
  EXPECT_EQ(PageVisitedPayload("u-1", v, line),
            "{\"uuid\":\"u-1\",\"url\":\"\\/caf\",\"visitedAt\":\"2015-05-17T10:05:03+00:00\",\"ip\":\"9.8.7.6\","
            "\"userAgent\":\"mozilla \\\\\\\"q\\\\\\\" \\ud83c\\udf89\",\"raw\":\"9.8.7.6 - - [17\\/May\\/2015:10:05:03 "
            "+0200] \\\"GET \\/caf\\u00e9\\/x HTTP\\/1.1\\\" 200 1 \\\"-\\\" \\\"Mozilla \\\\\\\"Q\\\\\\\" "
            "\\ud83c\\udf89\\\"\",\"uri\":\"\\/caf\"}");
  std::string s;
  AppendPhpJsonString(s, std::string("a\tb\x01\xFF", 5));
  EXPECT_EQ(s, "\"a\\tb\\u0001\\ufffd\"");
}

}  // namespace
}  // namespace rw
