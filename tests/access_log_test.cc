// The access-log rules (issue 11, groundwork) against the real 10,000-line Apache log in
// the repo, each line checked against an independent implementation of the blog's rules
// written with std::regex here; and the payload against PHP json_encode's output.
#include "pipeline/ingest/access_log.h"
#include "tests/access_log_reference.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <ctime>
#include <fstream>
#include <map>
#include <regex>

namespace rw {
namespace {

using namespace rw::testing;

TEST(AccessLog, TheRealLogMatchesAnIndependentReadingOfTheRules) {
  const std::string path = std::string(REWIND_SOURCE_DIR) + "/tests/data/apache-combined/access.log";
  const std::vector<Expected> reference = ReferenceIngest(path);
  std::ifstream in(path);
  ASSERT_TRUE(in);
  const AccessLogRules rules = AccessLogRules::Blog();
  IpThrottle throttle(rules.throttle_seconds);
  std::map<std::string, int> counts;
  std::string line;
  int lines = 0, mismatches = 0;
  while (std::getline(in, line)) {
    ASSERT_LT(static_cast<size_t>(lines), reference.size());
    const Expected& want = reference[static_cast<size_t>(lines++)];
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
