// Option precedence: defaults < config file < environment < flags.
#include "config/options.h"

#include <sys/stat.h>
#include <unistd.h>
#include "pipeline/commands.h"

#include <fmt/core.h>
#include <gtest/gtest.h>

#include <algorithm>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>

namespace rw {
namespace {

Environment Env(std::map<std::string, std::string> vars) {
  return [vars](const std::string& k) -> std::optional<std::string> {
    auto it = vars.find(k);
    return it == vars.end() ? std::nullopt : std::optional<std::string>(it->second);
  };
}

// config/rewind.conf shows every tuning option commented out with its built-in default: the
// defaults live in config/options.h alone, and the sample must not drift from them (it
// once said max-in-flight = 6 after the default became 2).
TEST(Options, TheSampleConfigShowsTheBuiltInDefaults) {
  std::ifstream in(std::string(REWIND_SOURCE_DIR) + "/config/rewind.conf");
  ASSERT_TRUE(in.good());
  const std::string help = HelpText();
  std::set<std::string> shown;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("# ", 0) != 0) continue;
    const size_t eq = line.find(" = ");
    if (eq == std::string::npos || line.find(' ', 2) != eq) continue;  // prose, not `# key = value`
    const std::string key = line.substr(2, eq - 2), value = line.substr(eq + 3);
    size_t at = help.find("  --" + key + " ");  // "  --key N ..." or "  -S,--key FILE ..."
    if (at == std::string::npos) at = help.find(",--" + key + " ");
    ASSERT_NE(at, std::string::npos) << "config/rewind.conf names an unknown option: " << key;
    const std::string help_line = help.substr(at, help.find('\n', at) - at);
    if (help_line.back() != ']') continue;  // no built-in default (socket, user, ...): an example
    const std::string fallback = help_line.substr(help_line.rfind('[') + 1);
    EXPECT_EQ(value, fallback.substr(0, fallback.size() - 1)) << key;
    shown.insert(key);
  }
  for (const char* key : {"batch-size", "max-in-flight", "read-connections", "result-buffer", "flush-every",
                          "flush-max-rows"}) {
    EXPECT_TRUE(shown.count(key)) << "config/rewind.conf does not show " << key;
  }
}

TEST(Options, DefaultsMatchTheBlogSchema) {
  auto cl = ParseRewindCommandLine({"replay", "--all"}, Env({{"REWIND_CONFIG", "/dev/null"}}));
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
  auto cl = ParseRewindCommandLine({"replay", "visits_per_day", "--config", path, "--user", "flag_user"},
                             Env({{"REWIND_USER", "env_user"}, {"REWIND_DATABASE", "env_db"},
                                  {"MYSQL_PWD", "secret"}}));
  ASSERT_TRUE(cl.ok()) << cl.status().message();
  EXPECT_EQ(cl->options.connection.socket, "/from/file");
  EXPECT_EQ(cl->options.connection.user, "flag_user");
  EXPECT_EQ(cl->options.connection.database, "env_db");
  EXPECT_EQ(cl->options.connection.password, "secret");
  EXPECT_EQ(cl->options.batch_size, 123u);
  EXPECT_EQ(cl->names, std::vector<std::string>{"visits_per_day"});
  std::remove(path.c_str());
}

// The replica to read the events from: flags or config-file keys, through the one table.
TEST(Options, TheReadServerIsAHostAndPortOrASocket) {
  const std::string path = ::testing::TempDir() + "/rewind_read_server.conf";
  std::ofstream(path) << "read-port = 3307\nread-wait = 5\n";
  auto port = ParseRewindCommandLine({"replay", "--all", "--config", path}, Env({}));
  ASSERT_TRUE(port.ok()) << port.status().message();
  EXPECT_EQ(port->options.read_host, "127.0.0.1");  // a port alone: TCP on this machine
  EXPECT_EQ(port->options.read_port, 3307u);
  EXPECT_EQ(port->options.read_wait_seconds, 5.0);
  std::remove(path.c_str());
  auto socket = ParseRewindCommandLine({"replay", "--all", "--read-socket", "/r.sock"},
                                       Env({{"REWIND_CONFIG", "/dev/null"}}));
  ASSERT_TRUE(socket.ok()) << socket.status().message();
  EXPECT_EQ(socket->options.read_socket, "/r.sock");
  EXPECT_TRUE(socket->options.read_host.empty());
  ASSERT_EQ(socket->options.read_servers.size(), 1u);
  EXPECT_EQ(socket->options.read_servers[0].socket, "/r.sock");
}

// Several replicas: hosts (each with its own port, or --read-port's) and sockets, in order.
TEST(Options, SeveralReadServersAreListsOfHostsAndSockets) {
  auto e = Env({{"REWIND_CONFIG", "/dev/null"}});
  auto both = ParseRewindCommandLine(
      {"replay", "--all", "--read-socket", "/r.sock,/s.sock", "--read-host", "r1,r2:3310", "--read-port", "3307"}, e);
  ASSERT_TRUE(both.ok()) << both.status().message();
  const auto& servers = both->options.read_servers;
  ASSERT_EQ(servers.size(), 4u);
  EXPECT_EQ(servers[0].host, "r1");
  EXPECT_EQ(servers[0].port, 3307u);
  EXPECT_EQ(servers[1].host, "r2");
  EXPECT_EQ(servers[1].port, 3310u);
  EXPECT_EQ(servers[2].socket, "/r.sock");
  EXPECT_EQ(servers[3].socket, "/s.sock");
  for (const std::vector<std::string>& bad :
       {std::vector<std::string>{"--read-host", "r1,,r2"}, {"--read-host", "r1:0"}, {"--read-host", "r1:99999"},
        {"--read-socket", "/a.sock,"}, {"--read-host", "r1,r1"}, {"--read-host", ":3306"}}) {
    std::vector<std::string> args{"replay", "--all"};
    args.insert(args.end(), bad.begin(), bad.end());
    auto r = ParseRewindCommandLine(args, e);
    EXPECT_FALSE(r.ok()) << bad[1];
    if (!r.ok()) {
      EXPECT_NE(r.status().message().find("read-"), std::string::npos) << r.status().message();
    }
  }
}

TEST(Options, BadInputIsAClearError) {
  auto e = Env({{"REWIND_CONFIG", "/dev/null"}});
  auto a = ParseRewindCommandLine({"replay", "--batch-size", "lots"}, e);
  ASSERT_FALSE(a.ok());
  EXPECT_NE(a.status().message().find("--batch-size expects a whole number"), std::string::npos);
  auto b = ParseRewindCommandLine({"replay", "--frobnicate", "1"}, e);
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.status().message().find("unknown option '--frobnicate'"), std::string::npos)
      << b.status().message();
  auto c = ParseRewindCommandLine({"rebuild"}, e);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("unknown command 'rebuild'"), std::string::npos);
  auto d = ParseRewindCommandLine({"replay", "--all", "--config", "/no/such/file"}, e);
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.status().message().find("cannot read config file"), std::string::npos);
  auto f = ParseRewindCommandLine({"replay", "--port=x"}, e);
  EXPECT_FALSE(f.ok());
}

// --build-only builds the shadow tables for a later swap: never with --follow or --into.
TEST(Options, BuildOnlyIsTheSwapsBuildAlone) {
  auto e = Env({{"REWIND_CONFIG", "/dev/null"}});
  auto ok = ParseRewindCommandLine({"replay", "visits_per_day", "--build-only", "--resume"}, e);
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  EXPECT_TRUE(OptionsFor<ReplayOptions>(ok->options).build_only);
  for (const char* other : {"--follow", "--into=_x"}) {
    auto bad = ParseRewindCommandLine({"replay", "visits_per_day", "--build-only", other}, e);
    ASSERT_FALSE(bad.ok()) << other;
    EXPECT_NE(bad.status().message().find("--build-only builds the shadow tables for a later swap"),
              std::string::npos)
        << bad.status().message();
  }
}

// --segment I/N (0 <= I < N <= 64) is one share of a --build-only build.
TEST(Options, SegmentIsAShareOfABuildOnlyBuild) {
  auto e = Env({{"REWIND_CONFIG", "/dev/null"}});
  auto ok = ParseRewindCommandLine({"replay", "m", "--build-only", "--segment", "2/3"}, e);
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  EXPECT_EQ(OptionsFor<ReplayOptions>(ok->options).segment, (Segment{2, 3}));
  for (const auto& [args, why] : std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{"replay", "m", "--segment", "0/3"}, "it needs --build-only"},
           {{"replay", "m", "--build-only", "--segment", "3/3"}, "I must be below N"},
           {{"replay", "m", "--build-only", "--segment", "0/0"}, "N must be between 1 and 64"},
           {{"replay", "m", "--build-only", "--segment", "0/65"}, "N must be between 1 and 64"},
           {{"replay", "m", "--build-only", "--segment", "-1/3"}, "expects I/N"},
           {{"replay", "m", "--build-only", "--segment", "1/3x"}, "expects I/N"}}) {
    auto bad = ParseRewindCommandLine(args, e);
    ASSERT_FALSE(bad.ok()) << args.back();
    EXPECT_NE(bad.status().message().find(why), std::string::npos) << bad.status().message();
  }
}

// A key's segment: FNV-1a 64 (its published test vectors) of the encoded key, modulo N;
// a segment's table name read back.
TEST(Options, SegmentHashAndTableNames) {
  EXPECT_EQ(Fnv1a64(""), 0xcbf29ce484222325ull);
  EXPECT_EQ(Fnv1a64("a"), 0xaf63dc4c8601ec8cull);
  EXPECT_EQ(Fnv1a64("foobar"), 0x85944171f73967e8ull);
  EXPECT_EQ(SegmentOfKey("foobar", 7), 0x85944171f73967e8ull % 7);
  EXPECT_EQ(SegmentSuffix({1, 3}), "__rewind_seg1of3");
  EXPECT_EQ(SegmentOfTable("t", "t__rewind_seg1of3"), (Segment{1, 3}));
  EXPECT_EQ(SegmentOfTable("t", "t__rewind_seg3of3"), std::nullopt);
  EXPECT_EQ(SegmentOfTable("t", "t__rewind_seg01of3"), std::nullopt);
  EXPECT_EQ(SegmentOfTable("t", "u__rewind_seg1of3"), std::nullopt);
  EXPECT_EQ(SegmentOfTable("t", "t__rewind_new"), std::nullopt);
}

// An --until-id is an id of a BIGINT or BIGINT UNSIGNED column, or it is refused (#23).
TEST(Options, AnUntilIdOutsideEveryIdColumnIsRefused) {
  auto e = Env({{"REWIND_CONFIG", "/dev/null"}});
  for (const char* id : {"99999999999999999999", "18446744073709551616", "-9223372036854775809"}) {
    auto r = ParseRewindCommandLine({"replay", "--all", "--into", "_x", "--until-id", id}, e);
    ASSERT_FALSE(r.ok()) << id;
    EXPECT_NE(r.status().message().find("--until-id"), std::string::npos) << r.status().message();
    EXPECT_NE(r.status().message().find(id), std::string::npos) << r.status().message();
    EXPECT_NE(r.status().message().find("18446744073709551615"), std::string::npos) << r.status().message();
  }
  for (const char* id : {"18446744073709551615", "-9223372036854775808", "-5", "0"}) {
    auto r = ParseRewindCommandLine({"replay", "--all", "--into", "_x", "--until-id", id}, e);
    EXPECT_TRUE(r.ok()) << id << ": " << r.status().message();
  }
  auto allow = ParseRewindCommandLine({"replay", "--all", "--allow-empty"}, e);
  ASSERT_TRUE(allow.ok()) << allow.status().message();
  EXPECT_TRUE(allow->options.allow_empty);
}

TEST(Options, HelpIsTheDefaultCommand) {
  auto cl = ParseRewindCommandLine({}, Env({{"REWIND_CONFIG", "/dev/null"}}));
  ASSERT_TRUE(cl.ok());
  EXPECT_EQ(cl->command, "help");
  EXPECT_NE(HelpText().find("rewind replay --all"), std::string::npos);
  EXPECT_EQ(HelpText().find("no --follow yet"), std::string::npos);  // ingest has --follow
}

// Each of these was a bug of the hand-written parser (issue 8, section 4).
TEST(Options, ValuesAreCheckedWhateverTheirSource) {
  auto e = Env({{"REWIND_CONFIG", "/dev/null"}});
  auto refused = [&](std::vector<std::string> args, const std::string& why) {
    auto cl = ParseRewindCommandLine(args, e);
    EXPECT_FALSE(cl.ok()) << args.back();
    if (!cl.ok()) {
      EXPECT_NE(cl.status().message().find(why), std::string::npos) << cl.status().message();
    }
  };
  refused({"replay", "--bogus"}, "unknown option '--bogus'");
  refused({"replay", "--batch-size", "4294967296"}, "--batch-size must be between 1 and 1000000");
  refused({"replay", "--batch-size", "0"}, "--batch-size must be between");
  refused({"replay", "--batch-size", "-5"}, "--batch-size expects a whole number");
  refused({"replay", "--poll", "nan"}, "--poll expects seconds");
  refused({"replay", "--poll", "inf"}, "--poll expects seconds");
  refused({"replay", "--poll", "1e-12"}, "--poll must be between 0.01 and 3600");
  refused({"replay", "--port", "70000"}, "--port must be between 1 and 65535");
  refused({"replay", "--port", "0"}, "--port must be between 1 and 65535");
  refused({"replay", "--progress", "loud"}, "--progress expects auto, bar, plain or none");
  refused({"replay", "--type-path", "headers..__event_type"}, "--type-path 'headers..__event_type' has an empty part");
  refused({"replay", "--type-path", "headers."}, "has an empty part");
  auto path = ParseRewindCommandLine({"replay", "--type-path", "headers.__event_type"}, e);
  ASSERT_TRUE(path.ok()) << path.status().message();
  EXPECT_EQ(path->options.events.type_path, "headers.__event_type");
}

TEST(Options, PasswordFlagNeverSwallowsTheNextWord) {
  auto e = Env({{"REWIND_CONFIG", "/dev/null"}});
  auto prompt = ParseRewindCommandLine({"replay", "-p", "visits_per_day"}, e);
  ASSERT_TRUE(prompt.ok()) << prompt.status().message();
  EXPECT_TRUE(prompt->prompt_password);
  EXPECT_EQ(prompt->names, std::vector<std::string>{"visits_per_day"});
  auto attached = ParseRewindCommandLine({"replay", "-psecret", "--all"}, e);
  ASSERT_TRUE(attached.ok());
  EXPECT_FALSE(attached->prompt_password);
  EXPECT_EQ(attached->options.connection.password, "secret");
  auto long_form = ParseRewindCommandLine({"replay", "--password=a b#c", "--password", "--all"}, e);
  ASSERT_TRUE(long_form.ok());
  EXPECT_TRUE(long_form->prompt_password);  // the last one asks
  auto given = ParseRewindCommandLine({"replay", "--password", "--password=x y", "--all"}, e);
  ASSERT_TRUE(given.ok());
  EXPECT_FALSE(given->prompt_password);
  EXPECT_EQ(given->options.connection.password, "x y");
}

TEST(Options, ScrubsThePasswordFromArgv) {
  std::string a0 = "rewind", a1 = "replay", a2 = "--password=hunter2", a3 = "-phunter3", a4 = "--all";
  char* argv[] = {a0.data(), a1.data(), a2.data(), a3.data(), a4.data()};
  ScrubPasswordFromArgv(5, argv);
  EXPECT_EQ(std::string(argv[2]), "--password=xxxxxxx");
  EXPECT_EQ(std::string(argv[3]), "-pxxxxxxx");
  EXPECT_EQ(std::string(argv[4]), "--all");
}

// Issue 37 part 5. A config file every user may write is refused (a group-writable one is
// taken: a group of operators sharing one is a choice); one that belongs to another user may
// not give the password, and gives the rest.
TEST(Options, AConfigFileEveryUserMayWriteIsRefused) {
  const std::string path = ::testing::TempDir() + "/rewind_options_writable.conf";
  std::ofstream(path) << "user = someone\n";
  ASSERT_EQ(::chmod(path.c_str(), 0666), 0);
  auto refused = ParseRewindCommandLine({"replay", "--all", "--config", path}, Env({}));
  ASSERT_FALSE(refused.ok()) << "a world-writable config file was read";
  EXPECT_NE(refused.status().message().find("writable by every user (mode 0666)"), std::string::npos)
      << refused.status().message();
  EXPECT_NE(refused.status().message().find(path), std::string::npos);
  ASSERT_EQ(::chmod(path.c_str(), 0664), 0);
  auto group = ParseRewindCommandLine({"replay", "--all", "--config", path}, Env({}));
  ASSERT_TRUE(group.ok()) << group.status().message();
  EXPECT_EQ(group->options.connection.user, "someone");
  std::remove(path.c_str());
}

TEST(Options, APasswordFromAnotherUsersConfigFileIsRefused) {
  if (::geteuid() != 0) GTEST_SKIP() << "giving a file to another user needs root";
  const std::string path = ::testing::TempDir() + "/rewind_options_theirs.conf";
  std::ofstream(path) << "user = someone\npassword = secret\n";
  ASSERT_EQ(::chown(path.c_str(), 65534, 65534), 0);  // nobody
  auto refused = ParseRewindCommandLine({"replay", "--all", "--config", path}, Env({}));
  ASSERT_FALSE(refused.ok()) << "a password was taken from a file another user owns";
  EXPECT_NE(refused.status().message().find("holds a password but belongs to"), std::string::npos)
      << refused.status().message();
  std::ofstream(path) << "user = someone\n";  // no secret: the file is taken
  auto taken = ParseRewindCommandLine({"replay", "--all", "--config", path}, Env({}));
  ASSERT_TRUE(taken.ok()) << taken.status().message();
  EXPECT_EQ(taken->options.connection.user, "someone");
  std::remove(path.c_str());
}

TEST(Options, ConfigFileKeepsHashesQuotesBomAndBooleans) {
  const std::string path = ::testing::TempDir() + "/rewind_options_bom.conf";
  std::ofstream(path) << "\xEF\xBB\xBFpassword = ab#cd\n  # a comment\nuser = \"quoted user\"\n"
                         "follow = true\nstop-on-failure = no\nresume = 1\ndatabase = 'db'\n";
  auto cl = ParseRewindCommandLine({"replay", "--all", "--config", path}, Env({}));
  ASSERT_TRUE(cl.ok()) << cl.status().message();
  EXPECT_EQ(cl->options.connection.password, "ab#cd");
  EXPECT_EQ(cl->options.connection.user, "quoted user");
  EXPECT_EQ(cl->options.connection.database, "db");
  EXPECT_TRUE(cl->options.follow);
  EXPECT_TRUE(cl->options.resume);
  EXPECT_FALSE(cl->options.stop_on_failure);
  EXPECT_EQ(cl->config_path, path);
  std::ofstream(path) << "follow = perhaps\n";
  auto bad = ParseRewindCommandLine({"replay", "--config", path}, Env({}));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find(path + ":1"), std::string::npos) << bad.status().message();
  std::ofstream(path) << "bogus = 1\n";
  auto unknown = ParseRewindCommandLine({"replay", "--config", path}, Env({}));
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find(path + ":1: unknown key"), std::string::npos) << unknown.status().message();
  auto dir = ParseRewindCommandLine({"replay", "--config", ::testing::TempDir()}, Env({}));
  ASSERT_FALSE(dir.ok());
  EXPECT_NE(dir.status().message().find("is a directory"), std::string::npos);
  std::remove(path.c_str());
}

TEST(Options, ConfigIsNeverReadFromTheCurrentDirectory) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(::testing::TempDir()) / "rewind_cwd_config";
  fs::create_directories(dir / "config");
  std::ofstream(dir / "rewind.conf") << "stats-json = /tmp/overwritten-by-a-stranger\n";
  std::ofstream(dir / "config" / "rewind.conf") << "stats-json = /tmp/overwritten-by-a-stranger\n";
  const fs::path old = fs::current_path();
  fs::current_path(dir);
  auto cl = ParseRewindCommandLine({"replay", "--all"}, Env({{"HOME", dir.string() + "/nohome"}}));
  fs::current_path(old);
  ASSERT_TRUE(cl.ok()) << cl.status().message();
  EXPECT_EQ(cl->options.stats_json, "");
  EXPECT_EQ(cl->config_path.find(dir.string()), std::string::npos) << cl->config_path;
  // The user's XDG config is a named place, and it is said which file was read.
  fs::create_directories(dir / "xdg" / "rewind");
  std::ofstream(dir / "xdg" / "rewind" / "rewind.conf") << "database = from_xdg\n";
  auto xdg = ParseRewindCommandLine({"replay", "--all"}, Env({{"XDG_CONFIG_HOME", (dir / "xdg").string()}}));
  ASSERT_TRUE(xdg.ok()) << xdg.status().message();
  EXPECT_EQ(xdg->options.connection.database, "from_xdg");
  EXPECT_EQ(xdg->config_path, (dir / "xdg" / "rewind" / "rewind.conf").string());
  fs::remove_all(dir);
}

// --version / -V: answered by the parser itself, before any config file is looked for (a
// broken or missing one does not stop it) and with no server.
TEST(Options, VersionIsAnsweredBeforeAnyConfigFile) {
  const Environment broken = Env({{"REWIND_CONFIG", "/no/such/rewind.conf"}});
  for (const char* flag : {"--version", "-V"}) {
    auto cl = ParseRewindCommandLine({flag}, broken);
    ASSERT_TRUE(cl.ok()) << flag << ": " << cl.status().message();
    EXPECT_EQ(cl->command, "version") << flag;
    EXPECT_EQ(cl->config_path, "") << flag;
  }
  const Command* version = FindCommand("version");
  ASSERT_NE(version, nullptr);
  EXPECT_TRUE(version->offline);  // no password prompt, no server
}

// A place of the config search that exists but cannot be read is an error naming it, never
// skipped for the next place (the user would be running with a config they did not mean).
// A directory in the file's place fails for root too; a mode-000 file only for others.
TEST(Options, AConfigPlaceThatExistsButCannotBeReadIsAnError) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(::testing::TempDir()) / "rewind_unreadable_config";
  fs::remove_all(dir);
  fs::create_directories(dir / "xdg" / "rewind" / "rewind.conf");  // a directory in its place
  auto d = ParseRewindCommandLine({"replay", "--all"},
                                  Env({{"XDG_CONFIG_HOME", (dir / "xdg").string()}}));
  ASSERT_FALSE(d.ok()) << "a directory in the XDG config's place was skipped";
  EXPECT_NE(d.status().message().find((dir / "xdg" / "rewind" / "rewind.conf").string()),
            std::string::npos)
      << d.status().message();
  fs::create_directories(dir / "home" / ".config" / "rewind");
  const fs::path locked = dir / "home" / ".config" / "rewind" / "rewind.conf";
  std::ofstream(locked) << "database = locked\n";
  fs::permissions(locked, fs::perms::none);
  if (std::ifstream probe(locked); !probe) {  // not root: mode 000 is unreadable
    auto m = ParseRewindCommandLine({"replay", "--all"}, Env({{"HOME", (dir / "home").string()}}));
    ASSERT_FALSE(m.ok()) << "an unreadable ~/.config/rewind/rewind.conf was skipped";
    EXPECT_NE(m.status().message().find(locked.string()), std::string::npos)
        << m.status().message();
    EXPECT_NE(m.status().message().find("ermission denied"), std::string::npos)
        << m.status().message();
  }
  fs::permissions(locked, fs::perms::owner_all);
  fs::remove_all(dir);
}

// The search's later places: the system file after the user's, and the repository's sample
// only for a binary whose directory is the build tree (an installed one never looks beside
// itself). Places in a temp dir stand in for /etc and the build tree.
TEST(Options, TheSystemFileComesAfterTheUsersAndTheRepositoryOnlyInTheBuildTree) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(::testing::TempDir()) / "rewind_config_places";
  fs::remove_all(dir);
  fs::create_directories(dir / "etc" / "rewind");
  fs::create_directories(dir / "build");
  fs::create_directories(dir / "repo" / "config");
  fs::create_directories(dir / "usr" / "bin");
  const std::string system = (dir / "etc" / "rewind" / "rewind.conf").string();
  const std::string repository = (dir / "repo" / "config" / "rewind.conf").string();
  std::ofstream(repository) << "\n";
  const Environment home = Env({{"HOME", (dir / "home").string()}});
  const ConfigPlaces in_build{system, (dir / "build").string(), (dir / "build").string(),
                              repository};
  const ConfigPlaces installed{system, (dir / "usr" / "bin").string(), (dir / "build").string(),
                               repository};
  // No system file: the build tree's binary reads the repository's, an installed one nothing.
  EXPECT_EQ(*LocateConfigFile("", home, in_build), repository);
  EXPECT_EQ(*LocateConfigFile("", home, installed), "");
  // The system file, once there, comes first for both...
  std::ofstream(system) << "\n";
  EXPECT_EQ(*LocateConfigFile("", home, in_build), system);
  EXPECT_EQ(*LocateConfigFile("", home, installed), system);
  // ...after the user's XDG file, $REWIND_CONFIG and --config.
  fs::create_directories(dir / "home" / ".config" / "rewind");
  std::ofstream(dir / "home" / ".config" / "rewind" / "rewind.conf") << "\n";
  EXPECT_EQ(*LocateConfigFile("", home, installed),
            (dir / "home" / ".config" / "rewind" / "rewind.conf").string());
  EXPECT_EQ(
      *LocateConfigFile("", Env({{"HOME", (dir / "home").string()}, {"REWIND_CONFIG", "/x.conf"}}),
                        installed),
      "/x.conf");
  EXPECT_EQ(*LocateConfigFile("/y.conf", home, installed), "/y.conf");
  // This binary's own places: the install's sysconfdir file, and this build tree.
  const ConfigPlaces mine = BuiltInConfigPlaces();
  EXPECT_EQ(fs::path(mine.system_file).filename(), "rewind.conf");
  EXPECT_EQ(fs::path(mine.system_file).parent_path().filename(), "rewind");
  EXPECT_EQ(mine.repository_file,
            (fs::path(REWIND_SOURCE_DIR) / "config" / "rewind.conf").string());
  fs::remove_all(dir);
}

// A server named by a stronger source wins, whichever kind (socket or host) it is.
TEST(Options, TheServerNamedLastWinsInEveryCombination) {
  const std::string path = ::testing::TempDir() + "/rewind_options_server.conf";
  struct Case {
    std::string file;
    std::map<std::string, std::string> env;
    std::vector<std::string> flags;
    std::string socket, host;
    unsigned port;
  };
  const Case cases[] = {
      {"", {{"REWIND_SOCKET", "/env.sock"}}, {"--host", "db.flag"}, "", "db.flag", 0},
      {"", {{"REWIND_SOCKET", "/env.sock"}}, {"--port", "3307"}, "", "127.0.0.1", 3307},
      {"", {{"REWIND_HOST", "db.env"}, {"REWIND_PORT", "3310"}}, {"--socket", "/flag.sock"}, "/flag.sock", "", 0},
      {"socket = /file.sock\n", {{"REWIND_HOST", "db.env"}}, {}, "", "db.env", 0},
      {"host = db.file\nport = 3311\n", {{"MYSQL_UNIX_PORT", "/env.sock"}}, {}, "/env.sock", "", 0},
      {"socket = /file.sock\n", {}, {"--host=db.flag", "--port=3312"}, "", "db.flag", 3312},
      {"host = db.file\n", {}, {"-S", "/flag.sock"}, "/flag.sock", "", 0},
      {"", {{"REWIND_SOCKET", "/env.sock"}}, {}, "/env.sock", "", 0},
  };
  for (const Case& c : cases) {
    std::ofstream(path) << c.file;
    std::vector<std::string> args = {"status", "--config", path};
    args.insert(args.end(), c.flags.begin(), c.flags.end());
    auto cl = ParseRewindCommandLine(args, Env(c.env));
    ASSERT_TRUE(cl.ok()) << cl.status().message();
    SCOPED_TRACE(c.file + " / " + (c.flags.empty() ? std::string() : c.flags[0]));
    EXPECT_EQ(cl->options.connection.socket, c.socket);
    EXPECT_EQ(cl->options.connection.host, c.host);
    EXPECT_EQ(cl->options.connection.port, c.port);
  }
  std::ofstream(path) << "";
  auto both = ParseRewindCommandLine({"status", "--config", path, "--socket", "/a", "--host", "b"}, Env({}));
  ASSERT_FALSE(both.ok());
  EXPECT_NE(both.status().message().find("both a socket and a host"), std::string::npos);
  std::remove(path.c_str());
}

TEST(Options, HelpListsEveryExitCode) {
  const std::string help = HelpText();
  for (const char* code : {"  0 ", "  1 ", "  2 ", "  3 ", "  4 ", "  5 ", "  6 ", "  130 "}) {
    EXPECT_NE(help.find(code), std::string::npos) << code;
  }
  EXPECT_NE(help.find("--cutover-timeout"), std::string::npos);
  EXPECT_NE(help.find("REWIND_SOCKET"), std::string::npos);
}

// --help comes from the command table: every command (in the positionals and with its usage
// lines) and every exit code of the table is there (the help footer once forgot `stress`).
TEST(Options, HelpListsEveryCommandAndEveryExitCodeOfTheTable) {
  const std::string help = HelpText();
  const size_t positional = help.find("  command ");
  ASSERT_NE(positional, std::string::npos) << help;
  const std::string command_line = help.substr(positional, help.find('\n', positional) - positional);
  ASSERT_FALSE(Commands().empty());
  for (const Command& c : Commands()) {
    EXPECT_NE(command_line.find(" " + c.name), std::string::npos) << c.name << " in: " << command_line;
    ASSERT_FALSE(c.usage.empty()) << c.name;
    for (const Command::Usage& u : c.usage) EXPECT_NE(help.find("  " + u.line), std::string::npos) << u.line;
    if (!c.names.empty()) {
      EXPECT_NE(help.find(c.names + " ("), std::string::npos) << c.names;
    }
    EXPECT_TRUE((c.run != nullptr) != !c.program.empty()) << c.name << ": a run function or a program, one";
    EXPECT_EQ(FindCommand(c.name), &c);
  }
  ASSERT_FALSE(ExitCodes().empty());
  for (const ExitCodeRow& e : ExitCodes()) {
    EXPECT_NE(help.find(fmt::format("\n  {:<5}{}", e.code, e.meaning.substr(0, e.meaning.find('\n')))),
              std::string::npos)
        << e.code;
  }
  // Every command of the table parses; a word outside it does not.
  for (const Command& c : Commands()) {
    auto cl = ParseRewindCommandLine({c.name}, Env({{"REWIND_CONFIG", "/dev/null"}}));
    ASSERT_TRUE(cl.ok()) << c.name << ": " << cl.status().message();
    EXPECT_EQ(cl->command, c.name);
  }
}

// Each command takes its own struct, made of the parts of its groups, out of what was parsed.
TEST(Options, EachCommandTakesItsOwnOptions) {
  auto e = Env({{"REWIND_CONFIG", "/dev/null"}});
  auto ingest = ParseRewindCommandLine({"ingest", "--from-start", "--batch-size", "7", "--follow", "a.log"}, e);
  ASSERT_TRUE(ingest.ok()) << ingest.status().message();
  const IngestOptions io = OptionsFor<IngestOptions>(ingest->options);
  EXPECT_TRUE(io.from_start);
  EXPECT_TRUE(io.follow);
  EXPECT_EQ(io.batch_size, 7u);
  EXPECT_EQ(io.events.table, "stored_events");
  EXPECT_EQ(ingest->names, std::vector<std::string>{"a.log"});

  auto stress = ParseRewindCommandLine({"stress", "--quick", "--only", "1,3", "--stress-database", "s_db", "-D", "d"}, e);
  ASSERT_TRUE(stress.ok()) << stress.status().message();
  const StressOptions so = OptionsFor<StressOptions>(stress->options);
  EXPECT_TRUE(so.quick);
  EXPECT_EQ(so.only, (std::vector<int>{1, 3}));
  EXPECT_EQ(so.database, "s_db");
  EXPECT_EQ(so.connection.database, "d");
  EXPECT_FALSE(so.keep);
  EXPECT_EQ(so.out, "stress-out");
  EXPECT_EQ(so.repeat, 3);
  EXPECT_EQ(so.budget_ms, 50);
  EXPECT_FALSE(so.own_table);  // -D alone (or $REWIND_DATABASE): the four questions only
  auto yours = ParseRewindCommandLine(
      {"stress", "-D", "app", "--events-table", "stored_events", "--sample", "5000"}, e);
  ASSERT_TRUE(yours.ok()) << yours.status().message();
  const StressOptions yo = OptionsFor<StressOptions>(yours->options);
  EXPECT_TRUE(yo.own_table);  // --events-table: the user's table too
  EXPECT_EQ(yo.events.table, "stored_events");
  EXPECT_EQ(yo.sample, 5000u);
  auto table_only = ParseRewindCommandLine({"stress", "--only", "table,2", "-D", "app", "--events-table", "t"}, e);
  ASSERT_TRUE(table_only.ok()) << table_only.status().message();
  EXPECT_EQ(OptionsFor<StressOptions>(table_only->options).only, (std::vector<int>{0, 2}));  // 0: your table
  EXPECT_EQ(yo.connection.database, "app");
  auto tuned = ParseRewindCommandLine({"stress", "--repeat", "5", "--budget-ms", "20"}, e);
  ASSERT_TRUE(tuned.ok()) << tuned.status().message();
  EXPECT_EQ(OptionsFor<StressOptions>(tuned->options).repeat, 5);
  EXPECT_EQ(OptionsFor<StressOptions>(tuned->options).budget_ms, 20);
  for (const auto& [args, why] : std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{"stress", "--repeat", "0"}, "--repeat must be between 1 and 20"},
           {{"stress", "--budget-ms", "-5"}, "--budget-ms expects a whole number"},
           {{"stress", "--sample", "0"}, "--sample must be between 1 and 100000000"}}) {
    auto bad = ParseRewindCommandLine(args, e);
    ASSERT_FALSE(bad.ok()) << args.back();
    EXPECT_NE(bad.status().message().find(why), std::string::npos) << bad.status().message();
  }

  EXPECT_EQ(GroupsOf<StressOptions>(),
            (std::vector<OptionGroup>{OptionGroup::kConnection, OptionGroup::kEvents,
                                      OptionGroup::kStress}));
  const std::vector<OptionGroup> ingest_groups = FindCommand("ingest")->groups;
  EXPECT_NE(std::find(ingest_groups.begin(), ingest_groups.end(), OptionGroup::kIngest),
            ingest_groups.end());
  EXPECT_EQ(std::find(ingest_groups.begin(), ingest_groups.end(), OptionGroup::kReplay),
            ingest_groups.end());
  EXPECT_EQ(FlagsOf(OptionGroup::kIngest), "--from-start");

  // An option of a group the command does not take is accepted and ignored, as it always was
  // (one config file serves every command).
  auto other = ParseRewindCommandLine({"status", "--quick", "--from-start"}, e);
  ASSERT_TRUE(other.ok()) << other.status().message();
}

}  // namespace
}  // namespace rw

namespace rw {
namespace {

// Issue 51 item 16: a config file's error names the file and the line, never the line's
// content: a password typed without its '=', a secret given as another option's value, or
// the first line of a file that is no config file at all (a link to /etc/shadow).
TEST(Options, ConfigErrorsNameTheLineNeverItsContent) {
  const std::string path = ::testing::TempDir() + "/rewind_secret_line.conf";
  const std::string secret = ::testing::TempDir() + "/rewind_secret_shadow";
  const std::string link = ::testing::TempDir() + "/rewind_secret_link.conf";
  std::ofstream(secret) << "root:$6$TOPSECRETHASH:19000:0:99999:7:::\n";
  std::remove(link.c_str());
  ASSERT_EQ(::symlink(secret.c_str(), link.c_str()), 0);
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"user = me\npassword TOPSECRETpw\n", ":2: expected 'key = value'"},
      {"port = TOPSECRETpw\n", ":1: --port expects a whole number"},
      {"TOPSECRETpw = 1\n", ":1: unknown key"},
  };
  for (const auto& [text, want] : cases) {
    std::ofstream(path) << text;
    ::chmod(path.c_str(), 0600);
    auto r = ParseRewindCommandLine({"replay", "--all", "--config", path}, Env({}));
    ASSERT_FALSE(r.ok()) << text;
    EXPECT_NE(r.status().message().find(path + want), std::string::npos) << r.status().message();
    EXPECT_EQ(r.status().message().find("TOPSECRET"), std::string::npos) << r.status().message();
  }
  auto shadow = ParseRewindCommandLine({"replay", "--all", "--config", link}, Env({}));
  ASSERT_FALSE(shadow.ok());
  EXPECT_NE(shadow.status().message().find(link + ":1"), std::string::npos) << shadow.status().message();
  EXPECT_EQ(shadow.status().message().find("TOPSECRET"), std::string::npos) << shadow.status().message();
  std::remove(path.c_str());
  std::remove(link.c_str());
  std::remove(secret.c_str());
}

}  // namespace
}  // namespace rw
