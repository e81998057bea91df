// The rewind binary as a tool (issue #25), run as a process with no server: `--version` /
// `-V`, where it looks for its config file (an installed copy never looks beside itself,
// the build tree's binary reads the repository's sample).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>

#include "pipeline/version.h"
#include "tests/subprocess.h"

namespace {

namespace fs = std::filesystem;
using rw::testing::Subprocess;

std::string ReadFile(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

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

}  // namespace
