// Dependencies point one way: errors <- projectors (pure C++, fmt) <- stages (libmariadb, simdjson)
// <- config <- pipeline (the only code that includes TBB's flow graph). Link targets do not
// enforce it (every system header is visible to every file): this test reads every
// #include of the sources and fails on one that points upward.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;

// For each folder, the include prefixes its files may not use.
// `errors` (Status, Result) is the ground floor: it includes nothing of the project.
const std::map<std::string, std::vector<std::string>> kForbidden = {
    {"errors", {"projectors/", "stages/", "pipeline/", "config/", "oneapi/", "tbb/", "mysql", "errmsg",
                "simdjson", "CLI/", "nlohmann/", "toml++"}},
    {"projectors", {"stages/", "pipeline/", "config/", "oneapi/", "tbb/", "mysql", "errmsg", "simdjson",
                    "CLI/", "nlohmann/", "toml++", "errors/"}},
    {"stages", {"pipeline/", "config/", "oneapi/", "tbb/", "CLI/", "toml++"}},
    {"config", {"pipeline/", "oneapi/", "tbb/"}},
};

TEST(Layering, NoFileIncludesUpward) {
  std::vector<std::string> upward;
  size_t files = 0;
  for (const auto& [folder, forbidden] : kForbidden) {
    for (const auto& entry : fs::directory_iterator(fs::path(REWIND_SOURCE_DIR) / folder)) {
      const std::string ext = entry.path().extension().string();
      if (ext != ".h" && ext != ".cc") continue;
      ++files;
      std::ifstream in(entry.path());
      std::string line;
      for (int n = 1; std::getline(in, line); ++n) {
        const auto at = line.find("#include");
        if (at == std::string::npos) continue;
        const auto open = line.find_first_of("<\"", at);
        if (open == std::string::npos) continue;
        const std::string target = line.substr(open + 1);
        for (const std::string& f : forbidden) {
          if (target.rfind(f, 0) == 0) {
            upward.push_back(folder + "/" + entry.path().filename().string() + ":" + std::to_string(n) +
                             " includes " + line.substr(open));
          }
        }
      }
    }
  }
  EXPECT_GT(files, 20u);  // it did read the tree
  EXPECT_TRUE(upward.empty()) << ::testing::PrintToString(upward);
}

}  // namespace
