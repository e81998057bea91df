// Builders on several hosts, one swap (issue 39): `rewind replay NAME… --build-only` run as
// separate processes of the real binary on disjoint read models, one of them killed (-9)
// mid-build and taken over with --resume, a claimed read model refused to another builder,
// then one `rewind replay … --resume` catching every built read model up to the head and
// swapping them all in; every read model exact against the server's own GROUP BY.
#include <fmt/core.h>
#include <gtest/gtest.h>

#include <csignal>

#include "tests/rewind_process.h"
#include "tests/test_db.h"

namespace rw {
namespace {

using namespace rw::testing;

const char* const kBuilderA[] = {"visits_per_day", "visits_per_month", "sessions_per_day"};
const char* const kBuilderB[] = {"visits_per_hour", "visits_per_post_per_day"};

std::vector<std::string> ReplayOf(std::initializer_list<const char* const*> groups,
                                  std::initializer_list<size_t> sizes, std::vector<std::string> flags) {
  std::vector<std::string> args{"replay"};
  auto size = sizes.begin();
  for (const char* const* g : groups) args.insert(args.end(), g, g + *size++);
  args.insert(args.end(), flags.begin(), flags.end());
  return args;
}

// `--build-only` of builder A's read models (with `flags`).
std::vector<std::string> BuilderA(std::vector<std::string> flags) {
  flags.insert(flags.begin(), "--build-only");
  return ReplayOf({kBuilderA}, {std::size(kBuilderA)}, std::move(flags));
}
std::vector<std::string> BuilderB(std::vector<std::string> flags) {
  flags.insert(flags.begin(), "--build-only");
  return ReplayOf({kBuilderB}, {std::size(kBuilderB)}, std::move(flags));
}

// The application appends `n` events after the first `first` (ids follow on).
void Append(Connection& c, uint64_t first, uint64_t n) {
  GeneratorOptions g;
  g.first_index = first;
  g.events = n;
  ASSERT_TRUE(LoadEvents(c, "stored_events", g, AccessLog()).ok());
}

// Every read model of both builders equals the server's computation from the event table.
void ExpectBothBuildersExact(Connection& c) {
  CreateReferenceView(c);
  const std::map<std::string, std::string> refs = ReferenceQueries();
  for (const char* const* group : {std::begin(kBuilderA), std::begin(kBuilderB)}) {
    const size_t n = group == std::begin(kBuilderA) ? std::size(kBuilderA) : std::size(kBuilderB);
    for (size_t i = 0; i < n; ++i) {
      const std::string table = group[i];
      if (table == "sessions_per_day") {
        EXPECT_EQ(TableAsMap(c, table), ReferenceSessions(c));
      } else {
        EXPECT_EQ(CompareWithReference(c, table, refs.at(table)), "");
      }
    }
  }
}

TEST(Builders, TwoBuildersOneKilledAndTakenOverThenOneSwapOfAll) {
  constexpr uint64_t kEvents = 60'000;
  ConnectionOptions o = Store("rewind_test_builders", kEvents);
  auto c = Connect(o);
  ASSERT_TRUE(c);
  // Live tables the application reads meanwhile: an earlier rebuild's.
  ASSERT_EQ(RunRewind({"replay", "--all", "--quiet"}, Env(o)).code, 0);
  const int64_t live_visits = Count(*c, "SELECT SUM(`count`) FROM visits_per_day");

  {
    // Two builders at once, as two launchers' jobs would run them; A stops dead mid-flush.
    std::vector<std::string> env_a = Env(o);
    env_a.push_back("REWIND_FAULT=mid-flush:3");
    Subprocess a(Rewind(BuilderA({"--progress", "plain", "--flush-every", "5000", "--batch-size", "2000"})), env_a);
    Subprocess b(Rewind(BuilderB({"--quiet", "--flush-every", "5000"})), Env(o));
    ASSERT_TRUE(a.WaitFor("fault point mid-flush reached", 120)) << a.err();
    EXPECT_EQ(b.Wait(), 0) << b.err();
    // A read model claimed by a builder that is alive is refused to another.
    Outcome claimed = RunRewind({"replay", "visits_per_day", "--build-only", "--quiet"}, Env(o));
    EXPECT_EQ(claimed.code, 1) << claimed.err;
    EXPECT_NE(claimed.err.find("is already rebuilding visits_per_day"), std::string::npos) << claimed.err;
    a.Signal(SIGKILL);
    EXPECT_EQ(a.Wait(), 128 + SIGKILL);
  }
  // The application goes on writing; the live tables are the earlier rebuild's.
  Append(*c, kEvents, 1'000);
  EXPECT_EQ(Count(*c, "SELECT SUM(`count`) FROM visits_per_day"), live_visits);

  // Another builder takes the dead one's read models over, from their checkpoints.
  Outcome taken = RunRewind(BuilderA({"--resume", "--quiet"}), Env(o));
  EXPECT_EQ(taken.code, 0) << taken.err;
  EXPECT_NE(taken.err.find("visits_per_day resumes after event"), std::string::npos) << taken.err;
  EXPECT_EQ(Count(*c, "SELECT COUNT(*) FROM rewind_checkpoints WHERE status = 'built' AND target_table LIKE "
                      "'%\\_\\_rewind\\_new'"),
            5);
  EXPECT_EQ(Count(*c, "SELECT SUM(`count`) FROM visits_per_day"), live_visits);

  // One swap of everything built, on one host: it catches up on what was appended while
  // it waits (the application writing meanwhile), then one cut-over.
  const std::string pause = PauseFile("builders_swap");
  std::vector<std::string> env = Env(o);
  env.push_back("REWIND_FAULT=before-catch-up@" + pause);
  const std::string out_file = ::testing::TempDir() + "/rewind_builders_swap";
  Subprocess swap(Rewind(ReplayOf({kBuilderA, kBuilderB}, {std::size(kBuilderA), std::size(kBuilderB)},
                                  {"--resume", "--progress", "plain"})),
                  env, out_file);
  ASSERT_TRUE(swap.WaitFor("fault point before-catch-up reached", 120)) << swap.err();
  Append(*c, kEvents + 1'000, 1'000);
  Release(pause);
  EXPECT_EQ(swap.Wait(), 0) << swap.err();
  for (const char* name : {"visits_per_day", "visits_per_month", "visits_per_hour", "visits_per_post_per_day"}) {
    EXPECT_NE(swap.err().find(fmt::format("{} resumes after event", name)), std::string::npos) << swap.err();
  }
  const std::string out = ReadFile(out_file);
  EXPECT_NE(out.find("rebuilt and swapped in 5 read model(s)"), std::string::npos) << out;
  EXPECT_EQ(Count(*c, "SELECT COUNT(*) FROM rewind_checkpoints WHERE status = 'live' AND projector IN "
                      "('visits_per_day', 'visits_per_month', 'sessions_per_day', 'visits_per_hour', "
                      "'visits_per_post_per_day') AND target_table = projector"),
            5);
  EXPECT_EQ(Count(*c, "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND "
                      "TABLE_NAME LIKE '%\\_\\_rewind\\_%'"),
            0);
  ExpectBothBuildersExact(*c);
  EXPECT_EQ(Count(*c, "SELECT SUM(`count`) FROM visits_per_day"), Count(*c, "SELECT COUNT(*) FROM ref_visits"));
  EXPECT_GT(Count(*c, "SELECT SUM(`count`) FROM visits_per_day"), live_visits);  // the appended ones too
}

// Builds made apart are swapped together only when they read the same event source with
// the same versions of the read models.
TEST(Builders, ASwapRefusesABuildOfAnotherSource) {
  ConnectionOptions o = Store("rewind_test_builders_source", 3'000);
  ASSERT_EQ(RunRewind({"replay", "visits_per_day", "--build-only", "--quiet"}, Env(o)).code, 0);
  Outcome other = RunRewind({"replay", "visits_per_day", "visits_per_hour", "--resume", "--quiet",
                             "--event-class", "Other"},
                            Env(o));
  EXPECT_EQ(other.code, 1);
  EXPECT_NE(other.err.find("read another event source"), std::string::npos) << other.err;
  auto c = Connect(o);
  EXPECT_EQ(Count(*c, "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND "
                      "TABLE_NAME = 'visits_per_day'"),
            0);  // nothing swapped in
}

// A build-only run never cuts over, so it cannot follow; nor does it go with --into.
TEST(Builders, BuildOnlyRefusesFollowAndInto) {
  ConnectionOptions o = Store("rewind_test_builders_flags", 100);
  Outcome follow = RunRewind({"replay", "visits_per_day", "--build-only", "--follow"}, Env(o));
  EXPECT_EQ(follow.code, 2) << follow.err;
  EXPECT_NE(follow.err.find("--follow does not go with it"), std::string::npos) << follow.err;
  Outcome into = RunRewind({"replay", "visits_per_day", "--build-only", "--into", "_x"}, Env(o));
  EXPECT_EQ(into.code, 2) << into.err;
  EXPECT_NE(into.err.find("--into does not go with it"), std::string::npos) << into.err;
}

}  // namespace
}  // namespace rw
