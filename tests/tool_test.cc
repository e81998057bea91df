// The rewind binary as a tool (issue #25), run as a process with no server: `--version` /
// `-V`, where it looks for its config file (an installed copy never looks beside itself,
// the build tree's binary reads the repository's sample), and the man page generated from
// the command and option tables (build/rewind.1, scripts/man/rewind_man.cc).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "config/options.h"
#include "pipeline/commands.h"
#include "pipeline/version.h"
#include "tests/subprocess.h"

namespace {

namespace fs = std::filesystem;
using rw::testing::Subprocess;

using rw::testing::ReadFile;

// No user config, no system variable: only what a test names.
const std::vector<std::string> kNoConfig = {
    "REWIND_CONFIG=", "XDG_CONFIG_HOME=", "HOME=/nonexistent-rewind-home"};

struct Outcome {
  int rc;
  std::string out, err;
};

Outcome Start(const std::vector<std::string>& args, std::vector<std::string> env = kNoConfig) {
  const fs::path out = fs::path(::testing::TempDir()) / "tool_test.out";
  Subprocess p(args, env, out.string());
  EXPECT_TRUE(p.started()) << args[0];
  const int rc = p.Wait();
  return {rc, ReadFile(out), p.err()};
}

std::string ProjectVersionInCMakeLists() {
  const std::string text = ReadFile(fs::path(REWIND_SOURCE_DIR) / "CMakeLists.txt");
  std::smatch m;
  EXPECT_TRUE(std::regex_search(text, m, std::regex(R"(project\(rewind VERSION ([0-9.]+))")));
  return m.size() > 1 ? m[1].str() : "?";
}

// With no server, and a $REWIND_CONFIG that names no file (which any other command refuses).
TEST(VersionFlag, PrintsTheVersionAndExitsZeroWithNoServerAndNoConfig) {
  for (const char* flag : {"--version", "-V"}) {
    const Outcome r = Start({REWIND_BINARY, flag}, {"REWIND_CONFIG=/no/such/rewind.conf"});
    EXPECT_EQ(r.rc, 0) << flag << ": " << r.err;
    EXPECT_EQ(r.out.rfind("rewind " + ProjectVersionInCMakeLists(), 0), 0u)
        << flag << ": " << r.out;
    EXPECT_EQ(r.out, rw::VersionText()) << flag;
    EXPECT_EQ(r.err, "") << flag;
  }
}

// A copy of the binary outside its build tree (as `cmake --install` puts it) does not read
// P/config/rewind.conf beside its own directory: a stranger's file there is ignored.
TEST(ConfigSearch, AnInstalledBinaryNeverReadsAConfigBesideItself) {
  const fs::path prefix = fs::path(::testing::TempDir()) / "rewind_tool_prefix";
  fs::remove_all(prefix);
  fs::create_directories(prefix / "bin");
  fs::create_directories(prefix / "config");
  fs::copy_file(REWIND_BINARY, prefix / "bin" / "rewind");
  std::ofstream(prefix / "config" / "rewind.conf") << "no-such-key = 1\n";
  const Outcome r = Start({(prefix / "bin" / "rewind").string(), "list"});
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.err.find("rewind.conf"), std::string::npos) << r.err;
  fs::remove_all(prefix);
}

// The binary in its build tree reads the repository's sample config (and says so).
TEST(ConfigSearch, TheBuildTreeBinaryReadsTheRepositoryConfig) {
  const Outcome r = Start({REWIND_BINARY, "status", "--socket",
                           "/nonexistent/rewind-tool-test.sock", "--connect-timeout", "1"});
  EXPECT_NE(r.rc, 0);
  const std::string repository =
      (fs::path(REWIND_SOURCE_DIR) / "config" / "rewind.conf").lexically_normal().string();
  EXPECT_NE(r.err.find("config file: " + repository), std::string::npos) << r.err;
}

// Runs `args` and returns what it printed on stdout (its stderr and exit code checked).
std::string Rendered(const std::vector<std::string>& args, std::vector<std::string> env) {
  const Outcome r = Start(args, std::move(env));
  EXPECT_EQ(r.rc, 0) << args[0] << ": " << r.err;
  EXPECT_EQ(r.err, "") << args[0] << " warned on " << REWIND_MAN_PAGE;
  return r.out;
}

// `man --warnings -l` (man-db's own check) and groff with every warning on render the page
// with nothing on stderr.
TEST(ManPage, RendersWithoutAWarning) {
  const std::string text = Rendered({"/usr/bin/man", "--warnings", "-l", REWIND_MAN_PAGE},
                                    {"MANPAGER=cat", "MANWIDTH=80", "LC_ALL=C.UTF-8"});
  EXPECT_NE(text.find("EXIT STATUS"), std::string::npos) << text;
  Rendered({"/usr/bin/groff", "-man", "-Tutf8", "-ww", "-z", REWIND_MAN_PAGE}, {});
}

// The page is written from the tables --help is printed from: it names every command, every
// option of the option table and of --help, every exit code and every environment variable.
TEST(ManPage, NamesEveryCommandOptionExitCodeAndVariableOfTheTables) {
  const std::string text =
      Rendered({"/usr/bin/groff", "-man", "-Tascii", "-P-cbou", REWIND_MAN_PAGE}, {});
  for (const rw::Command& c : rw::Commands()) {
    EXPECT_NE(text.find("rewind " + c.name), std::string::npos) << "command " << c.name;
  }
  std::set<std::string> options;
  for (const rw::OptionDoc& d : rw::OptionDocs()) {
    options.insert("--" + d.name);
    for (const std::string& e : d.env) EXPECT_NE(text.find(e), std::string::npos) << "$" << e;
  }
  ASSERT_GT(options.size(), 20u);
  std::istringstream help(Start({REWIND_BINARY, "--help"}).out);
  const std::regex declared(R"(^  (?:-[A-Za-z],)?(--[a-z][a-z0-9-]*))");
  size_t from_help = 0;
  for (std::string line; std::getline(help, line);) {
    std::smatch m;
    if (std::regex_search(line, m, declared)) from_help += options.insert(m[1].str()).second;
  }
  EXPECT_GE(from_help, 2u);  // --help and --version are CLI11's, not rows of the table
  for (const std::string& o : options) {
    const std::regex whole("(^|[^a-z-])" + o + "($|[^a-z-])");
    EXPECT_TRUE(std::regex_search(text, whole)) << o << " is not in the man page";
  }
  for (const rw::ExitCodeRow& e : rw::ExitCodes()) {
    EXPECT_TRUE(std::regex_search(text, std::regex("\n +" + std::to_string(e.code) + "\\b")))
        << "exit code " << e.code;
  }
  const std::string system_file = rw::BuiltInConfigPlaces().system_file;
  EXPECT_NE(text.find(system_file), std::string::npos) << system_file << " in FILES";
  for (const char* section : {"NAME", "SYNOPSIS", "DESCRIPTION", "COMMANDS", "OPTIONS",
                              "EXIT STATUS", "GRANTS", "FILES", "ENVIRONMENT", "EXAMPLES"}) {
    EXPECT_TRUE(std::regex_search(text, std::regex(std::string("\n") + section + "\n"))) << section;
  }
}

}  // namespace

// `rewind stress` is run by rewind-stress (pipeline/entry.h), found beside rewind or in
// ../lib/rewind/ (the package's place); without it, rewind says so. rewind-stress run on its
// own is `rewind stress`. No server: the stress program's own refusal proves it ran.
TEST(StressProgram, RewindRunsRewindStressFromItsPlacesAndSaysWhenItIsMissing) {
  const fs::path root = fs::path(::testing::TempDir()) / "stress_program";
  fs::remove_all(root);
  fs::create_directories(root / "bin");
  const fs::path rewind = root / "bin" / "rewind";
  fs::copy_file(REWIND_BINARY, rewind);
  const std::string socket = (root / "no-server.sock").string();
  const std::vector<std::string> stress = {rewind.string(), "stress", "--quick", "--socket", socket};

  const Outcome missing = Start(stress);
  EXPECT_EQ(missing.rc, 1) << missing.err;
  EXPECT_NE(missing.err.find("`rewind stress` is run by rewind-stress, found neither beside rewind nor in "
                             "../lib/rewind/"),
            std::string::npos)
      << missing.err;

  for (const fs::path& dir : {root / "lib" / "rewind", root / "bin"}) {
    fs::create_directories(dir);
    fs::copy_file(REWIND_STRESS_BINARY, dir / "rewind-stress", fs::copy_options::overwrite_existing);
    const Outcome ran = Start(stress);
    EXPECT_EQ(ran.rc, 1) << dir << ": " << ran.err;
    EXPECT_EQ(ran.err.find("found neither"), std::string::npos) << dir << ": " << ran.err;
    EXPECT_NE(ran.err.find("rewind stress: "), std::string::npos) << dir << ": " << ran.err;
  }
  const Outcome alone = Start({REWIND_STRESS_BINARY, "--quick", "--socket", socket});
  EXPECT_EQ(alone.rc, 1) << alone.err;
  EXPECT_NE(alone.err.find("rewind stress: "), std::string::npos) << alone.err;
  // Its usage errors are rewind's: the same option table.
  const Outcome usage = Start({rewind.string(), "stress", "--repeat", "0"});
  EXPECT_EQ(usage.rc, 2) << usage.err;
  EXPECT_NE(usage.err.find("--repeat must be between 1 and 20"), std::string::npos) << usage.err;
  fs::remove_all(root);
}
