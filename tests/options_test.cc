// Option precedence: defaults < config file < environment < flags.
#include "config/options.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <map>

namespace rw {
namespace {

Environment Env(std::map<std::string, std::string> vars) {
  return [vars](const std::string& k) -> std::optional<std::string> {
    auto it = vars.find(k);
    return it == vars.end() ? std::nullopt : std::optional<std::string>(it->second);
  };
}

TEST(Options, DefaultsMatchTheBlogSchema) {
  auto cl = ParseCommandLine({"replay", "--all"}, Env({{"REWIND_CONFIG", "/dev/null"}}));
  ASSERT_TRUE(cl.ok()) << cl.status().message();
  EXPECT_EQ(cl->command, "replay");
  EXPECT_TRUE(cl->options.all);
  EXPECT_EQ(cl->options.events.table, "stored_events");
  EXPECT_EQ(cl->options.events.type_column, "eventClass");
  EXPECT_EQ(cl->options.events.page_visited_class, "App\\Analytics\\PageVisited");
}

TEST(Options, FlagBeatsEnvironmentBeatsConfigFile) {
  const std::string path = ::testing::TempDir() + "/rewind_options_test.conf";
  std::ofstream(path) << "# comment\nsocket = /from/file\nuser = file_user\ndatabase=file_db\n"
                         "batch-size = 123\n";
  auto cl = ParseCommandLine({"replay", "visits_per_day", "--config", path, "--user", "flag_user"},
                             Env({{"REWIND_USER", "env_user"}, {"REWIND_DATABASE", "env_db"},
                                  {"MYSQL_PWD", "secret"}}));
  ASSERT_TRUE(cl.ok()) << cl.status().message();
  EXPECT_EQ(cl->options.connection.socket, "/from/file");
  EXPECT_EQ(cl->options.connection.user, "flag_user");
  EXPECT_EQ(cl->options.connection.database, "env_db");
  EXPECT_EQ(cl->options.connection.password, "secret");
  EXPECT_EQ(cl->options.batch_size, 123u);
  EXPECT_EQ(cl->options.projectors, std::vector<std::string>{"visits_per_day"});
  std::remove(path.c_str());
}

TEST(Options, BadInputIsAClearError) {
  auto e = Env({{"REWIND_CONFIG", "/dev/null"}});
  auto a = ParseCommandLine({"replay", "--batch-size", "lots"}, e);
  ASSERT_FALSE(a.ok());
  EXPECT_NE(a.status().message().find("--batch-size expects a number"), std::string::npos);
  auto b = ParseCommandLine({"replay", "--frobnicate", "1"}, e);
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.status().message().find("unknown option 'frobnicate'"), std::string::npos);
  auto c = ParseCommandLine({"rebuild"}, e);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("unknown command 'rebuild'"), std::string::npos);
  auto d = ParseCommandLine({"replay", "--all", "--config", "/no/such/file"}, e);
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.status().message().find("cannot read config file"), std::string::npos);
  auto f = ParseCommandLine({"replay", "--port=x"}, e);
  EXPECT_FALSE(f.ok());
}

TEST(Options, HelpIsTheDefaultCommand) {
  auto cl = ParseCommandLine({}, Env({{"REWIND_CONFIG", "/dev/null"}}));
  ASSERT_TRUE(cl.ok());
  EXPECT_EQ(cl->command, "help");
  EXPECT_NE(HelpText().find("rewind replay --all"), std::string::npos);
}

}  // namespace
}  // namespace rw
