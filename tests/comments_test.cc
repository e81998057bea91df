// A comment that names a file names one that exists (issue 34, part 6): this test reads the
// `//` comments of every .h and .cc in the source folders, takes each word that looks like a
// file (a name with one of the project's extensions, with or without folders), and fails on
// one that is not there: a path from the top of the tree or from the comment's own folder, a
// bare name anywhere in the tree. Placeholders (`XDG_CONFIG_HOME/...`, `P/...`: a first folder
// in capitals) are not files.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;

const fs::path kRoot = REWIND_SOURCE_DIR;

bool Skipped(const fs::path& p) {
  for (const auto& part : fs::relative(p, kRoot)) {
    const std::string s = part.string();
    if (s == "build" || s == "node_modules" || s == ".git" || s == ".db" || s == "out") return true;
  }
  return false;
}

// Every file and folder of the tree (relative, normalised), and every file's bare name.
struct Tree {
  std::set<std::string> paths, names;
};

Tree ReadTree() {
  Tree t;
  for (auto it = fs::recursive_directory_iterator(kRoot); it != fs::recursive_directory_iterator(); ++it) {
    if (Skipped(it->path())) {
      if (it->is_directory()) it.disable_recursion_pending();
      continue;
    }
    t.paths.insert(fs::relative(it->path(), kRoot).lexically_normal().string());
    if (it->is_regular_file()) t.names.insert(it->path().filename().string());
  }
  return t;
}

bool Placeholder(const std::string& word) {
  const size_t slash = word.find('/');
  if (slash == std::string::npos) return false;
  for (size_t i = 0; i < slash; ++i) {
    if (std::islower(static_cast<unsigned char>(word[i]))) return false;
  }
  return true;
}

TEST(Comments, NameOnlyFilesThatExist) {
  const Tree tree = ReadTree();
  const std::regex file(R"((?:^|[^\w./-])((?:[\w.-]+/)*[\w-]+\.(?:h|cc|md|toml|js|json|conf|service|tsv|sql))(?![\w/]))");
  std::vector<std::string> stale;
  size_t named = 0;
  for (const char* folder : {"base", "sample", "projectors", "stages", "config", "pipeline", "tests", "scripts", "perf"}) {
    for (auto it = fs::recursive_directory_iterator(kRoot / folder); it != fs::recursive_directory_iterator(); ++it) {
      if (Skipped(it->path())) {
        if (it->is_directory()) it.disable_recursion_pending();
        continue;
      }
      const std::string ext = it->path().extension().string();
      if (!it->is_regular_file() || (ext != ".h" && ext != ".cc")) continue;
      const fs::path dir = fs::relative(it->path().parent_path(), kRoot);
      std::ifstream in(it->path());
      std::string line;
      for (int n = 1; std::getline(in, line); ++n) {
        const size_t at = line.find("//");
        if (at == std::string::npos) continue;
        const std::string comment = line.substr(at + 2);
        for (std::sregex_iterator m(comment.begin(), comment.end(), file), end; m != end; ++m) {
          const std::string word = (*m)[1];
          if (Placeholder(word)) continue;
          ++named;
          const bool found = word.find('/') == std::string::npos
                                 ? tree.names.count(word) > 0
                                 : tree.paths.count(fs::path(word).lexically_normal().string()) > 0 ||
                                       tree.paths.count((dir / word).lexically_normal().string()) > 0;
          if (!found) stale.push_back(fs::relative(it->path(), kRoot).string() + ":" + std::to_string(n) + ": " + word);
        }
      }
    }
  }
  EXPECT_GT(named, 100u) << "the comments name files: the pattern finds them";
  std::string list;
  for (const std::string& s : stale) list += "\n  " + s;
  EXPECT_TRUE(stale.empty()) << "comments naming files that do not exist:" << list;
}

}  // namespace
