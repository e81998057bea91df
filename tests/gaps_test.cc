// Pure pieces of the "nothing lost" work: event ids over the whole BIGINT range, the gap
// set that checkpoints carry, and the UTF-8 cleaning of failure reasons.
#include <gtest/gtest.h>

#include "projectors/event_id.h"
#include "stages/checkpoint_store.h"
#include "stages/gaps.h"

namespace rw {
namespace {

TEST(EventId, TextRoundTripsAcrossSignedAndUnsignedBigint) {
  for (const char* text : {"0", "1", "-1", "-9223372036854775808", "9223372036854775807",
                           "18446744073709551615", "-9223372036854775809"}) {
    const auto id = ParseEventId(text);
    ASSERT_TRUE(id.has_value()) << text;
    EXPECT_EQ(IdText(*id), text);
  }
  EXPECT_EQ(IdText(kBeforeFirstId), "-9223372036854775809");
  EXPECT_LT(kBeforeFirstId, *ParseEventId("-9223372036854775808"));
  for (const char* bad : {"", "-", "1.5", "12a", "1e3", " 1"}) EXPECT_FALSE(ParseEventId(bad).has_value()) << bad;
}

TEST(GapSet, MergesSplitsAndRoundTrips) {
  GapSet g;
  g.Add({5, 7});
  g.Add({10, 10});
  g.Add({8, 9});  // bridges the two
  ASSERT_EQ(g.size(), 1u);
  EXPECT_EQ(g.Text(), "5:10");
  g.Subtract({7, 7});  // a late event found inside
  EXPECT_EQ(g.Text(), "5:6,8:10");
  EXPECT_TRUE(g.Contains(6));
  EXPECT_FALSE(g.Contains(7));
  EXPECT_TRUE(g.Contains(10));
  EXPECT_FALSE(g.Contains(11));
  g.Add({-3, -3});
  g.Add({static_cast<EventId>(UINT64_MAX) - 1, static_cast<EventId>(UINT64_MAX)});
  const auto parsed = GapSet::Parse(g.Text());
  ASSERT_TRUE(parsed.has_value());
  EXPECT_EQ(parsed->ranges(), g.ranges());
  g.TrimAbove(8);
  EXPECT_EQ(g.Text(), "-3,5:6,8");
  g.Subtract({kBeforeFirstId, GapSet::kMaxId});
  EXPECT_TRUE(g.empty());
  EXPECT_FALSE(GapSet::Parse("5:3").has_value());
  EXPECT_FALSE(GapSet::Parse("x").has_value());
  EXPECT_TRUE(GapSet::Parse("")->empty());
}

TEST(ValidUtf8, CutsOnCharacterBoundariesAndReplacesBadBytes) {
  const std::string e_acute = "\xC3\xA9";
  EXPECT_EQ(ValidUtf8("abc", 10), "abc");
  EXPECT_EQ(ValidUtf8(e_acute + e_acute, 3), e_acute + "...");  // never half a character
  EXPECT_EQ(ValidUtf8("a\xFF" "b", 10), "a\xEF\xBF\xBD" "b");
  EXPECT_EQ(ValidUtf8("\xC3", 10), "\xEF\xBF\xBD");                // truncated sequence
  EXPECT_EQ(ValidUtf8("\xED\xA0\x80", 10), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");  // a surrogate
  EXPECT_EQ(ValidUtf8("\xF0\x9F\x8E\x89", 10), "\xF0\x9F\x8E\x89");  // an emoji is fine
}

}  // namespace
}  // namespace rw
