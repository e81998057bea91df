// Pure pieces of the "nothing lost" work: event ids over the whole BIGINT range, the gap
// set that checkpoints carry, and the UTF-8 cleaning of failure reasons.
#include <gtest/gtest.h>

#include <set>

#include "base/event_id.h"
#include "stages/db/checkpoint_store.h"
#include "base/gaps.h"

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

// Against a plain set of ids: random adds and subtracts of short ranges over a small
// space, so that merges, splits and touching ranges all happen.
TEST(GapSet, AgreesWithASetOfIdsUnderRandomAddsAndSubtracts) {
  GapSet g;
  std::set<int> ids;
  uint64_t x = 88172645463325252ull;
  auto draw = [&](int n) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    return static_cast<int>(x % static_cast<uint64_t>(n));
  };
  for (int step = 0; step < 20000; ++step) {
    const int lo = draw(400), hi = lo + draw(6);
    if (draw(3) == 0) {
      g.Subtract({lo, hi});
      for (int i = lo; i <= hi; ++i) ids.erase(i);
    } else {
      g.Add({lo, hi});
      for (int i = lo; i <= hi; ++i) ids.insert(i);
    }
    if (step % 97 == 0) {
      for (int i = -1; i <= 410; ++i) ASSERT_EQ(g.Contains(i), ids.count(i) == 1) << i << " at step " << step;
      // Disjoint, not touching, in order: the canonical form the checkpoint text relies on.
      const std::vector<IdRange> rs = g.ranges();
      for (size_t k = 1; k < rs.size(); ++k) ASSERT_GT(rs[k].lo, rs[k - 1].hi + 1);
      if (!ids.empty()) {
        ASSERT_EQ(g.lowest(), *ids.begin());
      }
    }
  }
}

// A hole after every event (ids stepping by 2), a million of them, settled one by one as
// a rebuild settles them: the set stays consistent (and this runs in well under a second
// with logarithmic operations; the vector it replaced copied itself on every subtract).
TEST(GapSet, AMillionSingleHolesAddAndSettleOneByOne) {
  GapSet g;
  constexpr int kHoles = 1'000'000;
  for (int i = 0; i < kHoles; ++i) g.Add({2 * i + 1, 2 * i + 1});
  ASSERT_EQ(g.size(), static_cast<size_t>(kHoles));
  for (int i = 0; i < kHoles; i += 2) g.Subtract({2 * i + 1, 2 * i + 1});
  EXPECT_EQ(g.size(), static_cast<size_t>(kHoles / 2));
  EXPECT_FALSE(g.Contains(1));
  EXPECT_TRUE(g.Contains(3));
  g.Subtract({kBeforeFirstId, GapSet::kMaxId});
  EXPECT_TRUE(g.empty());
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
