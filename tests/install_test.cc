// What an installed rewind carries besides its code (issue #25): the version text, checked
// against the library headers this build compiled with (not against CMake's own variables
// that made it), and the bash completion, checked against `rewind --help` so the two cannot
// drift apart. The package itself is checked by tests/package_test.sh.
#include <fmt/core.h>
#include <gtest/gtest.h>
#include <mariadb/mariadb_version.h>
#include <oneapi/tbb/version.h>
#include <simdjson.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "pipeline/version.h"
#include "tests/subprocess.h"

namespace {

namespace fs = std::filesystem;
using rw::testing::Subprocess;

using rw::testing::ReadFile;

// Runs `args` with stdout to a temp file; returns stdout, expects exit 0.
std::string Stdout(const std::vector<std::string>& args) {
  const fs::path out = fs::path(::testing::TempDir()) / "install_test.out";
  Subprocess p(args, {}, out.string());
  EXPECT_TRUE(p.started()) << args[0];
  EXPECT_EQ(p.Wait(), 0) << args[0] << ": " << p.err();
  return ReadFile(out);
}

std::string ProjectVersionInCMakeLists() {
  const std::string text = ReadFile(fs::path(REWIND_SOURCE_DIR) / "CMakeLists.txt");
  std::smatch m;
  EXPECT_TRUE(std::regex_search(text, m, std::regex(R"(project\(rewind VERSION ([0-9.]+))")));
  return m.size() > 1 ? m[1].str() : "?";
}

TEST(Version, NamesTheProjectVersionFromCMakeLists) {
  const std::string text = rw::VersionText();
  EXPECT_EQ(rw::VersionNumber(), ProjectVersionInCMakeLists());
  EXPECT_EQ(text.rfind("rewind " + ProjectVersionInCMakeLists(), 0), 0u) << text;
  EXPECT_NE(text.find("\nbuilt: "), std::string::npos) << text;
}

TEST(Version, NamesTheVersionsOfTheLibrariesItWasCompiledWith) {
  const std::string text = rw::VersionText();
  const std::string tbb =
      fmt::format("oneTBB {}.{}.{}", TBB_VERSION_MAJOR, TBB_VERSION_MINOR, TBB_VERSION_PATCH);
  const std::string simdjson =
      fmt::format("simdjson {}.{}.{}", static_cast<int>(simdjson::SIMDJSON_VERSION_MAJOR),
                  static_cast<int>(simdjson::SIMDJSON_VERSION_MINOR),
                  static_cast<int>(simdjson::SIMDJSON_VERSION_REVISION));
  const std::string mariadb = fmt::format("libmariadb {}", MARIADB_PACKAGE_VERSION);
  const std::string fmtlib =
      fmt::format("fmt {}.{}.{}", FMT_VERSION / 10000, FMT_VERSION / 100 % 100, FMT_VERSION % 100);
  for (const std::string& want : {tbb, simdjson, mariadb, fmtlib}) {
    EXPECT_NE(text.find(want), std::string::npos) << want << " in\n" << text;
  }
  EXPECT_EQ(text.find("unknown"), std::string::npos) << text;
}

// Every long option of `rewind --help`, each with whether a value word follows it there.
std::map<std::string, bool> HelpOptions(const std::string& help) {
  std::map<std::string, bool> options;
  std::istringstream lines(help);
  const std::regex declared(R"(^  (?:-[A-Za-z],)?(--[a-z][a-z0-9-]*)( [A-Z])?)");
  for (std::string line; std::getline(lines, line);) {
    std::smatch m;
    if (std::regex_search(line, m, declared)) options[m[1].str()] = m[2].matched;
  }
  return options;
}

std::set<std::string> Words(const std::string& text) {
  std::istringstream in(text);
  std::set<std::string> out;
  for (std::string w; in >> w;) out.insert(w);
  return out;
}

// Written by the build from scripts/completion/rewind.bash.in and the tables (rewind-completion).
const std::string kCompletion = REWIND_COMPLETION;

// The completion's lists, as bash itself reads them.
std::string CompletionList(const std::string& variable) {
  return Stdout(
      {"/bin/bash", "-c", "source \"$0\" && printf '%s\\n' \"$" + variable + "\"", kCompletion});
}

TEST(Completion, HasEveryLongOptionOfHelpAndNoOther) {
  const std::map<std::string, bool> help = HelpOptions(Stdout({REWIND_BINARY, "--help"}));
  ASSERT_GT(help.size(), 20u) << "the option lines of --help were not found";
  const std::set<std::string> flags = Words(CompletionList("_rewind_flags"));
  const std::set<std::string> valued = Words(CompletionList("_rewind_valued"));
  for (const auto& [option, takes_value] : help) {
    EXPECT_TRUE((takes_value ? valued : flags).contains(option))
        << option << (takes_value ? " (takes a value)" : " (a flag)")
        << " is in `rewind --help` but not in that list of " << kCompletion;
  }
  for (const std::set<std::string>* list : {&flags, &valued}) {
    for (const std::string& option : *list) {
      EXPECT_TRUE(help.contains(option))
          << option << " is in " << kCompletion << " but not in `rewind --help`";
    }
  }
}

TEST(Completion, HasEveryCommandOfHelp) {
  const std::string help = Stdout({REWIND_BINARY, "--help"});
  std::set<std::string> commands;
  std::istringstream lines(help);
  for (std::string line; std::getline(lines, line);) {
    std::smatch m;
    if (std::regex_search(line, m, std::regex(R"(^  rewind ([a-z]+))")))
      commands.insert(m[1].str());
  }
  ASSERT_GE(commands.size(), 5u) << "the Commands section of --help was not found";
  commands.insert("help");
  EXPECT_EQ(Words(CompletionList("_rewind_commands")), commands);
}

// bash runs the completion function: `rewind --fol<TAB>` offers --follow, `rewind rep<TAB>` replay.
TEST(Completion, CompletesOptionsAndCommandsInBash) {
  auto complete = [](const std::string& words, int cword) {
    return Stdout({"/bin/bash", "-c",
                   "source \"$0\" && COMP_WORDS=(" + words + ") && COMP_CWORD=" +
                       std::to_string(cword) + " && _rewind && printf '%s\\n' \"${COMPREPLY[@]}\"",
                   kCompletion});
  };
  EXPECT_EQ(complete("rewind --fol", 1), "--follow\n--follow-source\n");
  EXPECT_EQ(complete("rewind replay --follow-source ''", 3), "auto\nbinlog\npoll\n");
  EXPECT_EQ(complete("rewind --host db1 rep", 3), "replay\n");
  EXPECT_EQ(complete("rewind --progress ''", 2), "auto\nbar\nplain\nnone\n");
  EXPECT_EQ(complete("rewind status --format ''", 3), "text\njson\nprometheus\n");
}

}  // namespace
