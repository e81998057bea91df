// `rewind status --format prometheus` (issue #25) on the real server and the real binary:
// the lag of a read model left behind on purpose, checked against SQL on the event table;
// the exposition format checked by Prometheus' own parser (`promtool check metrics`, Debian
// package prometheus); label escaping; --textfile's atomic write.
#include <fmt/core.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "pipeline/replay/inspect.h"
#include "pipeline/version.h"
#include "tests/rewind_process.h"
#include "tests/test_db.h"

namespace rw {
namespace {

using namespace rw::testing;

// The samples of an exposition: "name{labels}" -> value. Comment lines are left out.
std::map<std::string, double> Samples(const std::string& text) {
  std::map<std::string, double> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    const size_t space = line.rfind(' ');
    if (space == std::string::npos) continue;
    out[line.substr(0, space)] = std::stod(line.substr(space + 1));
  }
  return out;
}


// promtool's verdict on `text`: its exit code and what it printed.
struct Verdict {
  int code = -1;
  std::string output;
};
Verdict Promtool(const std::string& text) {
  const std::string dir = ::testing::TempDir();
  const std::string in = dir + "/promtool_in_" + std::to_string(getpid());
  const std::string out = in + ".out";
  std::ofstream(in) << text;
  const int status =
      std::system(fmt::format("promtool check metrics < {} > {} 2>&1", in, out).c_str());
  Verdict v{WIFEXITED(status) ? WEXITSTATUS(status) : -1, ReadFile(out)};
  std::remove(in.c_str());
  std::remove(out.c_str());
  return v;
}

bool HavePromtool() { return std::system("command -v promtool > /dev/null 2>&1") == 0; }

std::string Labels(const std::string& model) {
  return fmt::format("{{read_model=\"{0}\",table=\"{0}\"}}", model);
}

TEST(PrometheusLabel, EscapesBackslashQuoteAndNewlineOnly) {
  EXPECT_EQ(PrometheusLabelValue("plain_name"), "plain_name");
  EXPECT_EQ(PrometheusLabelValue("a\\b"), "a\\\\b");
  EXPECT_EQ(PrometheusLabelValue("say \"hi\""), "say \\\"hi\\\"");
  EXPECT_EQ(PrometheusLabelValue("two\nlines"), "two\\nlines");
  EXPECT_EQ(PrometheusLabelValue("tab\tand é"), "tab\tand é");
  EXPECT_EQ(PrometheusLabelValue("\\\"\n"), "\\\\\\\"\\n");
}

class MetricsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    options_ = Store("rewind_test_metrics", 3'000, /*bad_every=*/101);
    auto c = Connect(options_);
    ASSERT_TRUE(c);
    Outcome built =
        RunRewind({"replay", "visits_per_day", "visits_per_month", "--quiet"}, Env(options_));
    ASSERT_EQ(built.code, 3) << built.err;  // swapped in, with the bad payloads recorded
    // The known lag: 700 events appended after the build, later in time.
    GeneratorOptions g;
    g.first_index = 3'000;
    g.events = 700;
    g.total_for_spread = 3'700;
    g.odd_url_every = 37;
    ASSERT_TRUE(LoadEvents(*c, "stored_events", g, AccessLog()).ok());
    CreateReferenceView(*c);
  }

  static ConnectionOptions options_;
};
ConnectionOptions MetricsTest::options_;

TEST_F(MetricsTest, LagAndCountersMatchTheEventTable) {
  Outcome status = RunRewind({"status", "--format", "prometheus"}, Env(options_));
  ASSERT_EQ(status.code, 0) << status.err;
  const std::map<std::string, double> m = Samples(status.out);
  auto c = Connect(options_);
  for (const std::string model : {"visits_per_day", "visits_per_month"}) {
    SCOPED_TRACE(model);
    const std::string cp = fmt::format(
        "(SELECT last_event_id FROM rewind_checkpoints WHERE projector = '{}' AND target_table = "
        "'{}')",
        model, model);
    const std::string l = Labels(model);
    // Lag in events: the events above the checkpoint.
    const int64_t lag = Count(*c, "SELECT COUNT(*) FROM stored_events WHERE id > " + cp);
    EXPECT_EQ(lag, 700);
    ASSERT_TRUE(m.count("rewind_lag_events" + l)) << status.out;
    EXPECT_EQ(m.at("rewind_lag_events" + l), lag);
    // Lag in seconds: the time column of the head event less that of the checkpoint's event.
    const int64_t seconds = Count(
        *c, "SELECT TIMESTAMPDIFF(SECOND, (SELECT createdAt FROM stored_events WHERE id = " + cp +
                "), (SELECT createdAt FROM stored_events ORDER BY id DESC LIMIT 1))");
    EXPECT_GT(seconds, 0);
    ASSERT_TRUE(m.count("rewind_lag_seconds" + l)) << status.out;
    EXPECT_EQ(m.at("rewind_lag_seconds" + l), seconds);
    // Events applied: the page visits up to the checkpoint that the reference decodes (an
    // object with a real time: what these two read models count, tests/test_db.h);
    // failures: the other page visits up to it.
    const int64_t visits = Count(*c, "SELECT COUNT(*) FROM ref_visits WHERE id <= " + cp);
    EXPECT_EQ(m.at("rewind_events_applied_total" + l), visits);
    const int64_t failures =
        Count(*c,
              "SELECT COUNT(*) FROM stored_events WHERE BINARY eventClass = BINARY "
              "'App\\\\Analytics\\\\PageVisited' AND id <= " +
                  cp) -
        visits;
    EXPECT_GT(failures, 0);
    EXPECT_EQ(m.at("rewind_failures_total" + l), failures);
    EXPECT_EQ(m.at("rewind_late_events_total" + l), 0);
    EXPECT_EQ(m.at("rewind_gaps_given_up_total" + l), 0);
    // The last run's rate, as its checkpoint recorded it.
    EXPECT_EQ(
        m.at("rewind_last_run_events_per_second" + l),
        Count(*c,
              fmt::format(
                  "SELECT ROUND(events_per_second) FROM rewind_checkpoints WHERE projector = '{}'",
                  model)));
    const std::string info =
        fmt::format("rewind_build_info{{read_model=\"{0}\",table=\"{0}\",version=\"{1}\"}}", model,
                    BuildVersion());
    ASSERT_TRUE(m.count(info)) << status.out;
    EXPECT_EQ(m.at(info), 1);
  }
  // Every family is announced, with its type, before its samples.
  for (const char* family :
       {"rewind_lag_events gauge", "rewind_lag_seconds gauge",
        "rewind_events_applied_total counter", "rewind_failures_total counter",
        "rewind_late_events_total counter", "rewind_gaps_given_up_total counter",
        "rewind_last_run_events_per_second gauge", "rewind_build_info gauge"}) {
    const std::string name = std::string(family).substr(0, std::string(family).find(' '));
    const size_t type = status.out.find(std::string("# TYPE ") + family + "\n");
    EXPECT_NE(type, std::string::npos) << family << "\n" << status.out;
    EXPECT_NE(status.out.find("# HELP " + name + " "), std::string::npos) << family;
    EXPECT_LT(type, status.out.find("\n" + name + "{")) << family;
  }
  ASSERT_TRUE(HavePromtool())
      << "promtool is missing: scripts/setup installs it (Debian package prometheus)";
  const Verdict v = Promtool(status.out);
  EXPECT_EQ(v.code, 0) << v.output << status.out;
  EXPECT_EQ(v.output, "") << status.out;
}

TEST_F(MetricsTest, WithoutATimeColumnTheSecondsAreAbsent) {
  Outcome status = RunRewind(
      {"status", "--format", "prometheus", "--time-column", "no_such_column"}, Env(options_));
  ASSERT_EQ(status.code, 0) << status.err;
  const std::map<std::string, double> m = Samples(status.out);
  EXPECT_TRUE(m.count("rewind_lag_events" + Labels("visits_per_day"))) << status.out;
  EXPECT_FALSE(m.count("rewind_lag_seconds" + Labels("visits_per_day"))) << status.out;
  ASSERT_TRUE(HavePromtool());
  EXPECT_EQ(Promtool(status.out).code, 0) << status.out;
}

TEST_F(MetricsTest, LabelValuesAreEscaped) {
  // A declared name cannot hold a quote or a backslash (config/models.cc); a checkpoint row
  // can, so give one such a name directly.
  auto c = Connect(options_);
  const std::string odd = "we\"ird\\name\nline";
  ASSERT_TRUE(c->Execute("DROP TABLE IF EXISTS odd_checkpoint").ok());
  ASSERT_TRUE(
      c->Execute("CREATE TEMPORARY TABLE odd_checkpoint AS SELECT * FROM rewind_checkpoints WHERE "
                 "projector = 'visits_per_day'")
          .ok());
  ASSERT_TRUE(
      c->Execute(fmt::format("UPDATE odd_checkpoint SET projector = {0}, target_table = {0}",
                             c->Quote(odd)))
          .ok());
  ASSERT_TRUE(c->Execute("INSERT INTO rewind_checkpoints SELECT * FROM odd_checkpoint").ok());
  Outcome status = RunRewind({"status", "--format", "prometheus"}, Env(options_));
  ASSERT_TRUE(
      c->Execute(fmt::format("DELETE FROM rewind_checkpoints WHERE projector = {}", c->Quote(odd)))
          .ok());
  ASSERT_EQ(status.code, 0) << status.err;
  EXPECT_NE(status.out.find("rewind_lag_events{read_model=\"we\\\"ird\\\\name\\nline\",table="
                            "\"we\\\"ird\\\\name\\nline\"} 700\n"),
            std::string::npos)
      << status.out;
  ASSERT_TRUE(HavePromtool());
  const Verdict v = Promtool(status.out);
  EXPECT_EQ(v.code, 0) << v.output << status.out;
}

TEST_F(MetricsTest, TextfileIsReplacedByARename) {
  const std::string dir = ::testing::TempDir() + "/rewind_textfile_" + std::to_string(getpid());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string file = dir + "/rewind.prom";
  // A file there already, with a second name: written in place, the second name would see
  // the new text; replaced by a rename, it keeps the old one.
  std::ofstream(file) << "old\n";
  std::filesystem::create_hard_link(file, dir + "/before");
  Outcome status =
      RunRewind({"status", "--format", "prometheus", "--textfile", file}, Env(options_));
  ASSERT_EQ(status.code, 0) << status.err;
  EXPECT_EQ(status.out, "");
  Outcome printed = RunRewind({"status", "--format", "prometheus"}, Env(options_));
  EXPECT_EQ(ReadFile(file), printed.out);
  EXPECT_EQ(ReadFile(dir + "/before"), "old\n");
  // Nothing else is left in the directory (no temp file).
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"before", "rewind.prom"}));
  // A directory that does not exist: a clear message naming the file, exit 1.
  Outcome missing = RunRewind(
      {"status", "--format", "prometheus", "--textfile", dir + "/nope/rewind.prom"}, Env(options_));
  EXPECT_EQ(missing.code, 1);
  EXPECT_NE(missing.err.find("--textfile " + dir + "/nope/rewind.prom"), std::string::npos)
      << missing.err;
  std::filesystem::remove_all(dir);
}

// Issue 37 part 5: the temporary file is made afresh (O_EXCL, never through a symlink
// another user planted at the name it would take) and is 0644 whatever the umask, as the
// textfile collector's user must read it. The name an older rewind took was predictable,
// `.rewind.prom.<pid>.tmp`: a shell plants a symlink there for its own pid, then execs
// rewind under that pid.
TEST_F(MetricsTest, TextfileIsWrittenThroughNoPlantedSymlinkAndIsReadableByTheCollector) {
  const std::string dir = ::testing::TempDir() + "/rewind_textfile_link_" + std::to_string(getpid());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string file = dir + "/rewind.prom", victim = dir + "/victim";
  std::ofstream(victim) << "precious\n";
  std::vector<std::string> command = Rewind({"status", "--format", "prometheus", "--textfile", file});
  command.insert(command.begin(), {"/bin/sh", "-c",
                                   "ln -s \"$VICTIM\" \"$DIR/.rewind.prom.$$.tmp\" && umask 077 && exec \"$0\" \"$@\""});
  std::vector<std::string> env = Env(options_);
  env.push_back("VICTIM=" + victim);
  env.push_back("DIR=" + dir);
  Subprocess run(command, env);
  ASSERT_EQ(run.Wait(), 0) << run.err();
  EXPECT_EQ(ReadFile(victim), "precious\n");
  Outcome printed = RunRewind({"status", "--format", "prometheus"}, Env(options_));
  EXPECT_EQ(ReadFile(file), printed.out);
  struct stat st {};
  ASSERT_EQ(::lstat(file.c_str(), &st), 0);
  EXPECT_TRUE(S_ISREG(st.st_mode));
  EXPECT_EQ(st.st_mode & 07777, 0644u);
  std::filesystem::remove_all(dir);
}

TEST_F(MetricsTest, FormatChoicesAndTheirMistakes) {
  Outcome json = RunRewind({"status", "--format", "json"}, Env(options_));
  ASSERT_EQ(json.code, 0) << json.err;
  EXPECT_NE(json.out.find("\"rewind_version\": \"" + BuildVersion() + "\""), std::string::npos)
      << json.out;
  EXPECT_EQ(RunRewind({"status", "--json"}, Env(options_)).out, json.out);
  Outcome text = RunRewind({"status", "--format", "text"}, Env(options_));
  EXPECT_EQ(text.code, 0);
  EXPECT_NE(text.out.find("event store head"), std::string::npos) << text.out;
  Outcome both = RunRewind({"status", "--json", "--format", "prometheus"}, Env(options_));
  EXPECT_EQ(both.code, 2);
  EXPECT_NE(both.err.find("--json and --format prometheus"), std::string::npos) << both.err;
  Outcome textfile = RunRewind({"status", "--textfile", "x.prom"}, Env(options_));
  EXPECT_EQ(textfile.code, 2);
  EXPECT_NE(textfile.err.find("add --format prometheus"), std::string::npos) << textfile.err;
  Outcome bad = RunRewind({"status", "--format", "yaml"}, Env(options_));
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.err.find("--format expects text, json or prometheus, got 'yaml'"),
            std::string::npos)
      << bad.err;
}

}  // namespace
}  // namespace rw
