// Dependencies point one way: base <- projectors (pure C++, fmt) <- stages (libmariadb, simdjson)
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

// For each folder, the include prefixes its files may not use. A folder is read on its own
// (its subfolders have rows of their own): every folder holding sources must have a row.
const std::map<std::string, std::vector<std::string>> kForbidden = {
    // `base` (Status, Result, the fault points, event ids, gaps, failures, civil time, sha256,
    // the flat map, the text table) is the ground floor: it includes nothing else of the project.
    {"base", {"projectors/", "stages/", "pipeline/", "config/", "oneapi/", "tbb/", "mysql", "errmsg",
                "simdjson", "CLI/", "nlohmann/", "toml++"}},
    // The sample order domain (stress, rewind-gen and the tests share it) stands on the ground
    // floor alone.
    {"sample", {"projectors/", "stages/", "pipeline/", "config/", "scripts/", "oneapi/", "tbb/", "mysql",
                "errmsg", "simdjson", "CLI/", "nlohmann/", "toml++"}},
    {"projectors", {"stages/", "pipeline/", "config/", "oneapi/", "tbb/", "mysql", "errmsg", "simdjson",
                    "CLI/", "nlohmann/", "toml++"}},
    // The MariaDB plumbing uses neither the flow nor the run controls.
    {"stages/db", {"stages/flow/", "stages/control/", "pipeline/", "config/", "oneapi/", "tbb/", "CLI/", "toml++"}},
    // The bookkeeping tables' statements, one file per table, behind stages/db/checkpoint_store.h.
    {"stages/db/bookkeeping", {"stages/flow/", "stages/control/", "pipeline/", "config/", "oneapi/", "tbb/", "CLI/", "toml++"}},
    // The run controls may use the plumbing (the throttle asks the server), never the flow.
    {"stages/control", {"stages/flow/", "pipeline/", "config/", "oneapi/", "tbb/", "CLI/", "toml++"}},
    // The flow may use the plumbing and the run controls.
    {"stages/flow", {"pipeline/", "config/", "oneapi/", "tbb/", "CLI/", "toml++"}},
    {"config", {"pipeline/", "oneapi/", "tbb/"}},
    // The engine every application drives knows none of them.
    {"pipeline/engine", {"pipeline/replay/", "pipeline/ingest/", "pipeline/stress/", "pipeline/commands"}},
    // No application folder includes another's; stress measures replay through the one
    // public header of the replay application (see the allowance below).
    {"pipeline/replay", {"pipeline/ingest/", "pipeline/stress/", "pipeline/commands"}},
    {"pipeline/ingest", {"pipeline/replay/", "pipeline/stress/", "pipeline/commands"}},
    {"pipeline/stress", {"pipeline/replay/", "pipeline/ingest/", "pipeline/commands"}},
    {"pipeline", {}},
};

// Question 3 of `rewind stress` times the rebuild a user runs: it drives the replay
// application through its entry point and nothing else of it.
const std::map<std::string, std::vector<std::string>> kAllowed = {
    {"pipeline/stress", {"pipeline/replay/replay.h"}},
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
        const auto allowed = kAllowed.find(folder);
        bool allowance = false;
        if (allowed != kAllowed.end()) {
          for (const std::string& a : allowed->second) allowance = allowance || target.rfind(a + "\"", 0) == 0;
        }
        for (const std::string& f : forbidden) {
          if (!allowance && target.rfind(f, 0) == 0) {
            upward.push_back(folder + "/" + entry.path().filename().string() + ":" + std::to_string(n) +
                             " includes " + line.substr(open));
          }
        }
      }
    }
  }
  EXPECT_GT(files, 60u);  // it did read the tree
  EXPECT_TRUE(upward.empty()) << ::testing::PrintToString(upward);
}

// A new folder of sources must take its place on a floor: one without a row above would
// escape the check.
TEST(Layering, EveryFolderOfSourcesHasAFloor) {
  std::vector<std::string> unplaced;
  for (const char* top : {"base", "sample", "projectors", "stages", "config", "pipeline"}) {
    const fs::path root = fs::path(REWIND_SOURCE_DIR);
    for (const auto& entry : fs::recursive_directory_iterator(root / top)) {
      const std::string ext = entry.path().extension().string();
      if (ext != ".h" && ext != ".cc") continue;
      const std::string folder = fs::relative(entry.path().parent_path(), root).generic_string();
      if (!kForbidden.contains(folder)) unplaced.push_back(folder);
    }
  }
  EXPECT_TRUE(unplaced.empty()) << ::testing::PrintToString(unplaced);
}

}  // namespace
