// rewind ingest (issue 11, first part) on the real 10,000-line Apache log: the stored
// events are exactly the lines an independent reading of the rules keeps, the read models
// rebuilt from them equal counts computed from those lines, a killed ingest continues
// without a duplicate or a gap, a rotated file is read from its start, and a dry run
// writes nothing. Issue 23 part 4: every line once across concurrent runs (the lock, and the
// position checked in each batch's transaction), a line still being written, a run killed
// in <file>.1, and damaged gzip files.
#include <fmt/core.h>
#include <gtest/gtest.h>
#include <zlib.h>

#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>

#include "projectors/civil_time.h"
#include "stages/db/heartbeat.h"
#include "stages/control/progress.h"
#include "stages/db/table_admin.h"
#include "tests/access_log_reference.h"
#include "tests/ghost_holder.h"
#include "tests/rewind_process.h"
#include "tests/test_db.h"

namespace rw {
namespace {

using namespace rw::testing;

const std::string kLog = std::string(REWIND_SOURCE_DIR) + "/tests/data/apache-combined/access.log";

ConnectionOptions EmptyStore(const std::string& name) {
  ConnectionOptions o = FreshDatabase(name);
  auto c = Connect(o);
  EXPECT_TRUE(c->Execute(EventTableDdl("stored_events")).ok());
  return o;
}

// The stored events without their uuids, in id order: (createdAt | payload after the uuid).
std::vector<std::string> Stored(Connection& c) {
  std::vector<std::string> out;
  auto r = c.Query("SELECT createdAt, SUBSTRING(payload, 48) FROM stored_events ORDER BY id");
  EXPECT_TRUE(r.ok());
  for (const auto& row : r->rows) out.push_back(*row[0] + "|" + *row[1]);
  return out;
}

TEST(Ingest, StoresExactlyTheLinesTheRulesKeep) {
  ConnectionOptions o = EmptyStore("rewind_test_ingest");
  auto c = Connect(o);
  Outcome run = RunRewind({"ingest", kLog, "--batch-size", "1000"}, Env(o));
  ASSERT_EQ(run.code, 0) << run.err;
  const std::vector<Expected> reference = ReferenceIngest(kLog);
  std::vector<std::string> want;
  std::map<std::string, int64_t> per_post_day;
  for (const Expected& e : reference) {
    if (e.reason != "kept") continue;
    char when[20];
    FormatDateTime(e.t, when);
    want.push_back(std::string(when, 19) + "|" + e.ip + "|" + e.url);
    ++per_post_day[std::string(when, 10) + "|" + e.url];
  }
  std::vector<std::string> got;
  auto r = c->Query("SELECT createdAt, JSON_VALUE(payload, '$.ip'), JSON_VALUE(payload, '$.url') FROM "
                    "stored_events ORDER BY id");
  ASSERT_TRUE(r.ok());
  for (const auto& row : r->rows) got.push_back(*row[0] + "|" + *row[1] + "|" + *row[2]);
  EXPECT_EQ(got, want);
  EXPECT_NE(run.out.find(WithThousands(want.size()) + " events stored"), std::string::npos) << run.out;
  // The read models rebuilt from them equal the counts of the kept lines.
  ASSERT_EQ(RunRewind({"replay", "--all", "--quiet"}, Env(o)).code, 0);
  std::map<std::string, int64_t> table;
  auto rows = c->Query("SELECT `date`, uri, `count` FROM visits_per_post_per_day");
  ASSERT_TRUE(rows.ok());
  for (const auto& row : rows->rows) table[*row[0] + "|" + *row[1]] = std::stoll(*row[2]);
  EXPECT_EQ(table, per_post_day);
  // Ingesting the same file again stores nothing more.
  Outcome again = RunRewind({"ingest", kLog}, Env(o));
  EXPECT_EQ(again.code, 0);
  EXPECT_EQ(Count(*c, "SELECT COUNT(*) FROM stored_events"), static_cast<int64_t>(want.size()));
}

TEST(Ingest, AKilledIngestContinuesWithoutADuplicateOrAGap) {
  ConnectionOptions whole = EmptyStore("rewind_test_ingest_whole");
  ASSERT_EQ(RunRewind({"ingest", kLog, "--batch-size", "700"}, Env(whole)).code, 0);
  ConnectionOptions o = EmptyStore("rewind_test_ingest_killed");
  for (const char* fault : {"ingest-batch:4", "ingest-batch:9"}) {  // killed inside a batch's transaction
    std::vector<std::string> env = Env(o);
    env.push_back(std::string("REWIND_FAULT=") + fault);
    Subprocess run(Rewind({"ingest", kLog, "--batch-size", "700"}), env);
    ASSERT_TRUE(run.WaitFor("fault point", 60)) << run.err();
    run.Signal(SIGKILL);
    run.Wait();
  }
  Outcome rest = RunRewind({"ingest", kLog, "--batch-size", "700"}, Env(o));
  ASSERT_EQ(rest.code, 0) << rest.err;
  EXPECT_NE(rest.err.find("continues at byte"), std::string::npos) << rest.err;
  auto a = Connect(whole), b = Connect(o);
  EXPECT_EQ(Stored(*b), Stored(*a));
}

// An ingest killed inside a batch, its connection still holding the file's lock inside a
// statement with its heartbeat stopped: the next ingest stops that connection and goes on
// from the saved position; every line is stored once.
TEST(Ingest, ADeadIngestsLockIsTakenOver) {
  ConnectionOptions whole = EmptyStore("rewind_test_ingest_whole_2");
  ASSERT_EQ(RunRewind({"ingest", kLog, "--batch-size", "700"}, Env(whole)).code, 0);
  ConnectionOptions o = EmptyStore("rewind_test_ingest_dead_holder");
  {
    std::vector<std::string> env = Env(o);
    env.push_back("REWIND_FAULT=ingest-batch:4");
    Subprocess run(Rewind({"ingest", kLog, "--batch-size", "700"}), env);
    ASSERT_TRUE(run.WaitFor("fault point", 60)) << run.err();
    run.Signal(SIGKILL);
    run.Wait();
  }
  GhostHolder ghost(o, table_admin::FitLockName("rewind-ingest", o.database + ":" + kLog));
  ghost.WriteHeartbeat(/*age_seconds=*/3 * kStaleSeconds, "ingest");
  ghost.EnterAStatement();
  Outcome rest = RunRewind({"ingest", kLog, "--batch-size", "700"}, Env(o));
  ASSERT_EQ(rest.code, 0) << rest.err;
  EXPECT_NE(rest.err.find(fmt::format("connection {} holds the lock on ingesting", ghost.id())),
            std::string::npos)
      << rest.err;
  EXPECT_NE(rest.err.find("it is dead"), std::string::npos) << rest.err;
  EXPECT_NE(rest.err.find("continues at byte"), std::string::npos) << rest.err;
  EXPECT_TRUE(ghost.Join());
  auto a = Connect(whole), b = Connect(o);
  EXPECT_EQ(Stored(*b), Stored(*a));
}

TEST(Ingest, ARotatedFileIsReadFromItsStartAndADryRunWritesNothing) {
  ConnectionOptions o = EmptyStore("rewind_test_ingest_rotated");
  auto c = Connect(o);
  const std::string file = ::testing::TempDir() + "/rewind_rotating.log";
  std::filesystem::copy_file(kLog, file, std::filesystem::copy_options::overwrite_existing);
  Outcome dry = RunRewind({"ingest", "--dry-run", file}, Env(o));
  EXPECT_EQ(dry.code, 0);
  EXPECT_NE(dry.out.find("nothing was written"), std::string::npos) << dry.out;
  EXPECT_EQ(Count(*c, "SELECT COUNT(*) FROM stored_events"), 0);
  ASSERT_EQ(RunRewind({"ingest", file}, Env(o)).code, 0);
  const int64_t first = Count(*c, "SELECT COUNT(*) FROM stored_events");
  // Rotated: a new file under the same name, starting with another line.
  std::filesystem::remove(file);
  {
    std::ofstream out(file);
    out << "10.9.9.9 - - [21/May/2015:10:00:00 +0000] \"GET /after-rotation HTTP/1.1\" 200 1 \"-\" \"Mozilla\"\n";
  }
  Outcome after = RunRewind({"ingest", file}, Env(o));
  EXPECT_EQ(after.code, 0);
  EXPECT_NE(after.err.find("reading it from the start"), std::string::npos) << after.err;
  EXPECT_EQ(Count(*c, "SELECT COUNT(*) FROM stored_events"), first + 1);
  std::filesystem::remove(file);
}

// What an uninterrupted reading of the whole log keeps, as (createdAt|ip|url) in line order.
std::vector<std::string> KeptByTheRules() {
  std::vector<std::string> want;
  for (const Expected& e : ReferenceIngest(kLog)) {
    if (e.reason != "kept") continue;
    char when[20];
    FormatDateTime(e.t, when);
    want.push_back(std::string(when, 19) + "|" + e.ip + "|" + e.url);
  }
  return want;
}

std::vector<std::string> StoredVisits(Connection& c) {
  std::vector<std::string> got;
  auto r = c.Query("SELECT createdAt, JSON_VALUE(payload, '$.ip'), JSON_VALUE(payload, '$.url') FROM "
                   "stored_events ORDER BY id");
  EXPECT_TRUE(r.ok());
  for (const auto& row : r->rows) got.push_back(*row[0] + "|" + *row[1] + "|" + *row[2]);
  return got;
}

// The log grows, is rotated by rename (and the old file still written to), then by
// copytruncate, while `rewind ingest --follow` runs: every line is read exactly once, so the
// stored events are those of one uninterrupted reading.
TEST(Ingest, FollowsAGrowingLogThroughBothKindsOfRotation) {
  ConnectionOptions o = EmptyStore("rewind_test_ingest_follow");
  auto c = Connect(o);
  std::vector<std::string> lines;
  {
    std::ifstream in(kLog);
    std::string line;
    while (std::getline(in, line)) lines.push_back(line + "\n");
  }
  ASSERT_EQ(lines.size(), 10'000u);
  const std::string dir = ::testing::TempDir() + "/rewind_follow";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string file = dir + "/access.log";
  auto write = [&](const std::string& path, size_t from, size_t to, std::ios::openmode mode) {
    std::ofstream out(path, std::ios::binary | mode);
    for (size_t i = from; i < to; ++i) out << lines[i];
  };
  const std::string read_so_far = "SELECT COALESCE(SUM(lines_read), 0) FROM rewind_ingest_positions";
  write(file, 0, 2500, std::ios::trunc);
  Subprocess run(Rewind({"ingest", "--follow", file, "--poll", "0.05", "--batch-size", "300"}), Env(o));
  ASSERT_TRUE(WaitUntil(*c, read_so_far, 2500)) << run.err();
  write(file, 2500, 5000, std::ios::app);  // it grows
  ASSERT_TRUE(WaitUntil(*c, read_so_far, 5000)) << run.err();
  // Rotation by rename: the old file gets a few more lines, then a new file appears.
  std::filesystem::rename(file, file + ".1");
  write(file + ".1", 5000, 5100, std::ios::app);
  write(file, 5100, 7500, std::ios::trunc);
  ASSERT_TRUE(WaitUntil(*c, read_so_far, 7500)) << run.err();
  EXPECT_TRUE(run.WaitFor("was rotated", 60)) << run.err();
  // copytruncate: appended, copied to .1, truncated in place, then written again.
  write(file, 7500, 7600, std::ios::app);
  std::filesystem::copy_file(file, file + ".1", std::filesystem::copy_options::overwrite_existing);
  std::filesystem::resize_file(file, 0);
  ASSERT_TRUE(run.WaitFor("was truncated", 60)) << run.err();
  write(file, 7600, 10'000, std::ios::app);
  ASSERT_TRUE(WaitUntil(*c, read_so_far, 10'000)) << run.err();
  run.Signal(SIGINT);
  EXPECT_EQ(run.Wait(), 0) << run.err();
  EXPECT_EQ(StoredVisits(*c), KeptByTheRules());
  std::filesystem::remove_all(dir);
}

TEST(Ingest, ReadsGzipRotatedFilesDirectly) {
  ConnectionOptions o = EmptyStore("rewind_test_ingest_gz");
  auto c = Connect(o);
  const std::string gz = ::testing::TempDir() + "/rewind_access.log.gz";
  ASSERT_EQ(std::system(("gzip -c " + kLog + " > " + gz).c_str()), 0);
  Outcome run = RunRewind({"ingest", gz, "--batch-size", "999"}, Env(o));
  ASSERT_EQ(run.code, 0) << run.err;
  EXPECT_EQ(StoredVisits(*c), KeptByTheRules());
  std::remove(gz.c_str());
}

// The log's lines, each with its newline.
std::vector<std::string> LogLines() {
  std::vector<std::string> lines;
  std::ifstream in(kLog);
  std::string line;
  while (std::getline(in, line)) lines.push_back(line + "\n");
  return lines;
}

// The kept lines of the log's first `n` lines, as (createdAt|ip|url), by the reference.
std::vector<std::string> KeptAmongTheFirst(size_t n) {
  std::vector<std::string> want;
  const std::vector<Expected> reference = ReferenceIngest(kLog);
  for (size_t i = 0; i < n && i < reference.size(); ++i) {
    const Expected& e = reference[i];
    if (e.reason != "kept") continue;
    char when[20];
    FormatDateTime(e.t, when);
    want.push_back(std::string(when, 19) + "|" + e.ip + "|" + e.url);
  }
  return want;
}

// Two `rewind ingest` of one file at once: the second is refused, naming the file, while
// the first holds a batch's transaction open (a fault point, not a sleep); the first then
// ends and every line is stored once.
TEST(Ingest, ASecondConcurrentIngestOfTheSameFileIsRefused) {
  ConnectionOptions o = EmptyStore("rewind_test_ingest_concurrent");
  auto c = Connect(o);
  const std::string pause = PauseFile("ingest_concurrent");
  std::vector<std::string> env = Env(o);
  env.push_back("REWIND_FAULT=ingest-batch:2@" + pause);
  Subprocess first(Rewind({"ingest", kLog, "--batch-size", "700"}), env);
  ASSERT_TRUE(first.WaitFor("fault point", 60)) << first.err();
  Outcome second = RunRewind({"ingest", kLog, "--batch-size", "700"}, Env(o));
  EXPECT_NE(second.code, 0) << second.err;
  EXPECT_NE(second.err.find("is already being ingested"), std::string::npos) << second.err;
  EXPECT_NE(second.err.find(kLog), std::string::npos) << second.err;
  Release(pause);
  EXPECT_EQ(first.Wait(), 0) << first.err();
  EXPECT_EQ(StoredVisits(*c), KeptByTheRules());
  std::remove(pause.c_str());
}

// The lock bypassed: the first ingest's connection is killed inside a batch (so its lock
// goes), a second ingest reads the whole file meanwhile, then the first goes on. Its batch's
// transaction finds the saved position moved by another writer and stops instead of
// appending the batch again.
TEST(Ingest, ABatchIsNotAppendedWhenAnotherWriterMovedThePosition) {
  ConnectionOptions o = EmptyStore("rewind_test_ingest_bypassed");
  auto c = Connect(o);
  const std::string pause = PauseFile("ingest_bypassed");
  std::vector<std::string> env = Env(o);
  env.push_back("REWIND_FAULT=ingest-batch:3@" + pause);
  Subprocess first(Rewind({"ingest", kLog, "--batch-size", "700"}), env);
  ASSERT_TRUE(first.WaitFor("fault point", 60)) << first.err();
  // The connection holding the file's lock (not the one its heartbeat beats on).
  auto holder = c->QueryValue(fmt::format(
      "SELECT IS_USED_LOCK({})",
      c->Quote(table_admin::FitLockName("rewind-ingest", o.database + ":" + kLog))));
  ASSERT_TRUE(holder.ok() && *holder);
  ASSERT_TRUE(c->Execute("KILL " + **holder).ok());
  Outcome second = RunRewind({"ingest", kLog, "--batch-size", "700"}, Env(o));
  ASSERT_EQ(second.code, 0) << second.err;
  Release(pause);
  EXPECT_NE(first.Wait(), 0) << first.err();
  EXPECT_NE(first.err().find("moved"), std::string::npos) << first.err();
  EXPECT_EQ(StoredVisits(*c), KeptByTheRules());
  std::remove(pause.c_str());
}

// A last line still being written (no newline yet) is left for later: not stored, the
// position before it; once it is complete the next run stores it, exactly once.
TEST(Ingest, AnUnterminatedLastLineWaitsForItsEnd) {
  ConnectionOptions o = EmptyStore("rewind_test_ingest_unterminated");
  auto c = Connect(o);
  const std::vector<std::string> lines = LogLines();
  const std::vector<Expected> reference = ReferenceIngest(kLog);
  size_t k = 100;
  while (reference[k].reason != "kept") ++k;  // the partial line is one the rules keep
  const std::string file = ::testing::TempDir() + "/rewind_unterminated.log";
  uint64_t before = 0;
  {
    std::ofstream out(file, std::ios::binary | std::ios::trunc);
    for (size_t i = 0; i < k; ++i) {
      out << lines[i];
      before += lines[i].size();
    }
    out << lines[k].substr(0, 10);  // cut before its date
  }
  Outcome run = RunRewind({"ingest", file}, Env(o));
  ASSERT_EQ(run.code, 0) << run.err;
  EXPECT_EQ(StoredVisits(*c), KeptAmongTheFirst(k));
  EXPECT_EQ(Count(*c, "SELECT byte_offset FROM rewind_ingest_positions"),
            static_cast<int64_t>(before));
  {
    std::ofstream out(file, std::ios::binary | std::ios::app);
    out << lines[k].substr(10);
  }
  Outcome again = RunRewind({"ingest", file}, Env(o));
  ASSERT_EQ(again.code, 0) << again.err;
  EXPECT_EQ(StoredVisits(*c), KeptAmongTheFirst(k + 1));
  EXPECT_EQ(Count(*c, "SELECT byte_offset FROM rewind_ingest_positions"),
            static_cast<int64_t>(before + lines[k].size()));
  std::remove(file.c_str());
}

// A run killed while it reads what a rotation left in <file>.1 (after one of those batches
// committed) continues there on the next run: no line of <file>.1 lost or stored twice.
TEST(Ingest, ARunKilledWhileReadingTheRotatedRemainderContinuesThere) {
  ConnectionOptions o = EmptyStore("rewind_test_ingest_drain_killed");
  auto c = Connect(o);
  const std::vector<std::string> lines = LogLines();
  const std::string dir = ::testing::TempDir() + "/rewind_drain";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string file = dir + "/access.log";
  auto write = [&](const std::string& path, size_t from, size_t to, std::ios::openmode mode) {
    std::ofstream out(path, std::ios::binary | mode);
    for (size_t i = from; i < to; ++i) out << lines[i];
  };
  write(file, 0, 3000, std::ios::trunc);
  ASSERT_EQ(RunRewind({"ingest", file, "--batch-size", "700"}, Env(o)).code, 0);
  write(file, 3000, 6000, std::ios::app);  // then rotated by rename before the next run
  std::filesystem::rename(file, file + ".1");
  write(file, 6000, lines.size(), std::ios::trunc);
  std::vector<std::string> env = Env(o);
  env.push_back("REWIND_FAULT=ingest-batch:3");  // two batches of <file>.1 committed
  Subprocess killed(Rewind({"ingest", file, "--batch-size", "700"}), env);
  ASSERT_TRUE(killed.WaitFor("fault point", 60)) << killed.err();
  killed.Signal(SIGKILL);
  killed.Wait();
  Outcome rest = RunRewind({"ingest", file, "--batch-size", "700"}, Env(o));
  ASSERT_EQ(rest.code, 0) << rest.err;
  EXPECT_EQ(StoredVisits(*c), KeptByTheRules());
  std::filesystem::remove_all(dir);
}

void Spit(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

// The log gzipped with zlib.
std::string Gzipped(const std::string& path) {
  const std::string out = ::testing::TempDir() + "/rewind_whole.log.gz";
  gzFile gz = gzopen(out.c_str(), "wb6");
  EXPECT_NE(gz, nullptr);
  const std::string text = ReadFile(path);
  EXPECT_EQ(gzwrite(gz, text.data(), static_cast<unsigned>(text.size())),
            static_cast<int>(text.size()));
  EXPECT_EQ(gzclose(gz), Z_OK);
  std::string bytes = ReadFile(out);
  std::remove(out.c_str());
  return bytes;
}

// A truncated gzip, a bit-flipped one and a plain file named .gz: each stops the ingest
// with a message naming it and exit 1, and nothing of it is stored (a good file before it
// in the same run is stored whole, once).
TEST(Ingest, ADamagedGzipStopsTheIngestAndStoresNothingOfIt) {
  const std::string good = Gzipped(kLog);
  ASSERT_GT(good.size(), 1000u);
  std::string flipped = good;
  flipped[flipped.size() / 2] ^= 0x10;
  const struct {
    const char* name;
    std::string bytes;
    const char* says;
  } cases[] = {{"truncated", good.substr(0, good.size() / 2), "truncated"},
               {"flipped", flipped, "corrupt"},
               {"plain", ReadFile(kLog), "is not a gzip file"}};
  const std::string dir = ::testing::TempDir() + "/rewind_gz";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  Spit(dir + "/good.log.gz", good);
  for (const auto& k : cases) {
    SCOPED_TRACE(k.name);
    ConnectionOptions o = EmptyStore(std::string("rewind_test_ingest_gz_") + k.name);
    auto c = Connect(o);
    const std::string damaged = dir + "/" + k.name + ".log.gz";
    Spit(damaged, k.bytes);
    Outcome run =
        RunRewind({"ingest", dir + "/good.log.gz", damaged, "--batch-size", "500"}, Env(o));
    EXPECT_EQ(run.code, 1) << run.err;
    EXPECT_NE(run.err.find(damaged), std::string::npos) << run.err;
    EXPECT_NE(run.err.find(k.says), std::string::npos) << run.err;
    EXPECT_EQ(StoredVisits(*c), KeptByTheRules());
    EXPECT_EQ(
        Count(*c, fmt::format("SELECT COUNT(*) FROM rewind_ingest_positions WHERE source = {} AND "
                              "byte_offset > 0",
                              c->Quote(damaged))),
        0);
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace rw
