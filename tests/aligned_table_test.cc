// AlignedTable (base/aligned_table.h): the text tables of status, list, a run's summary and
// verify keep every row in line whatever the longest cell (issue 36: a 33-character read-model
// name pushed its row of `rewind status` out of line).
#include "base/aligned_table.h"

#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

namespace rw {
namespace {

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

TEST(AlignedTable, ALongNameKeepsEveryColumnInLine) {
  using A = AlignedTable::Align;
  AlignedTable t({{"read model", A::kLeft}, {"status", A::kLeft}, {"checkpoint", A::kRight}});
  const std::string long_name = "visits_per_post_per_week_by_agent";  // 33 characters
  t.Row({"visits_per_day", "live", "1200"});
  t.Row({long_name, "building", "7"});
  t.Note("    a note is printed as it is");
  const std::vector<std::string> lines = Lines(t.Text());
  ASSERT_EQ(lines.size(), 4u);
  // Every row's status starts where the heading's does, its checkpoint ends where the heading's does.
  const size_t status_at = lines[0].find("status");
  const size_t end = lines[0].size();
  EXPECT_EQ(status_at, long_name.size() + 1);
  EXPECT_EQ(lines[1].find("live"), status_at);
  EXPECT_EQ(lines[2].find("building"), status_at);
  EXPECT_EQ(lines[1].size(), end);
  EXPECT_EQ(lines[2].size(), end);
  EXPECT_EQ(lines[1].substr(end - 4), "1200");
  EXPECT_EQ(lines[3], "    a note is printed as it is");
}

TEST(AlignedTable, WidthCountsCharactersAndNoLineEndsInSpaces) {
  using A = AlignedTable::Align;
  AlignedTable t({{"name", A::kLeft}, {"n", A::kRight}, {"last", A::kLeft}});
  t.Row({"café", "1", ""});
  t.Row({"tea", "22", "x"});
  const std::vector<std::string> lines = Lines(t.Text());
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0], "name  n last");
  EXPECT_EQ(lines[1], "café  1");  // 4 characters (5 bytes), padded as 4
  EXPECT_EQ(lines[2], "tea  22 x");
}

}  // namespace
}  // namespace rw
