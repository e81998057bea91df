// Every public header opens with what it is and its thread-safety contract (LevelDB's habit):
// this test reads the leading comment of each header under base/, projectors/, stages/,
// config/ and pipeline/ and fails on one that has no purpose line or says nothing about
// thread safety.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;

// The leading `//` lines of a header, joined, in lower case; empty when it does not open
// with a comment.
std::string LeadingComment(const fs::path& header) {
  std::ifstream in(header);
  std::string line, text;
  while (std::getline(in, line) && line.rfind("//", 0) == 0) text += line.substr(2) + "\n";
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  return text;
}

// "Thread safety: ...", "thread-safe", "not thread-safe", "thread-compatible", ...
bool SpeaksOfThreadSafety(const std::string& comment) {
  for (const char* words : {"thread safety", "thread-safe", "thread safe", "thread-compatible"}) {
    if (comment.find(words) != std::string::npos) return true;
  }
  return false;
}

TEST(Headers, EachOpensWithItsPurposeAndThreadSafety) {
  std::vector<std::string> silent;
  size_t headers = 0;
  for (const char* folder : {"base", "sample", "projectors", "stages", "config", "pipeline"}) {
    for (const auto& entry :
         fs::recursive_directory_iterator(fs::path(REWIND_SOURCE_DIR) / folder)) {
      if (entry.path().extension() != ".h") continue;
      ++headers;
      const std::string name = fs::relative(entry.path(), REWIND_SOURCE_DIR).string();
      const std::string comment = LeadingComment(entry.path());
      const std::string purpose = comment.substr(0, comment.find('\n'));
      if (purpose.find_first_not_of(" ") == std::string::npos) {
        silent.push_back(name + ": does not open with a line saying what it is");
      } else if (!SpeaksOfThreadSafety(comment)) {
        silent.push_back(name + ": its leading comment says nothing of thread safety");
      }
    }
  }
  EXPECT_GT(headers, 40u);  // it did read the tree
  EXPECT_TRUE(silent.empty()) << ::testing::PrintToString(silent);
}

}  // namespace
