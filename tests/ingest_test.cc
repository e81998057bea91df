// rewind ingest (issue 11, first part) on the real 10,000-line Apache log: the stored
// events are exactly the lines an independent reading of the rules keeps, the read models
// rebuilt from them equal counts computed from those lines, a killed ingest continues
// without a duplicate or a gap, a rotated file is read from its start, and a dry run
// writes nothing. Issue 23 part 4: every line once across concurrent runs (the lock, and the
// position checked in each batch's transaction), a line still being written, a run killed
// in <file>.1, and damaged gzip files. Issue 32: a file is known by its content, not its
// name: ingested again under another name (renamed by a rotation, gzipped, copied) it
// continues where its lines were stored, and two names of one log are never read at once.
#include <fmt/core.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <zlib.h>

#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>

#include "base/civil_time.h"
#include "stages/control/progress.h"
#include "stages/db/heartbeat.h"
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

// Issue 37 part 4. The log with one line of 50 KB (a 20 KB referer, a 30 KB agent) after the
// first `k` lines, then 50 more. Returns the file; `k` is the first kept line from 100 on.
std::string LogWithALongLine(size_t& k, const std::string& name) {
  const std::vector<std::string> lines = LogLines();
  const std::vector<Expected> reference = ReferenceIngest(kLog);
  k = 100;
  while (reference[k].reason != "kept") ++k;
  // The kept line with its referer and agent (its last two quoted fields) made long.
  const std::string& l = lines[k];
  const size_t agent = l.rfind(" \"", l.size() - 3);
  const size_t referer = l.rfind(" \"", agent - 1);
  const std::string longer = l.substr(0, referer) + " \"http://example.com/" + std::string(20000, 'r') +
                             "\" \"Mozilla/5.0 " + std::string(30000, 'a') + "\"\n";
  const std::string file = ::testing::TempDir() + "/" + name;
  std::ofstream out(file, std::ios::binary | std::ios::trunc);
  for (size_t i = 0; i < k; ++i) out << lines[i];
  out << longer;
  for (size_t i = k + 1; i < k + 51; ++i) out << lines[i];
  return file;
}

// A line whose event does not fit the payload column (TEXT: 65,535 bytes) is refused with its
// line number and nothing of it is stored cut: the lines before it are stored, the position
// stays before it, and the next run refuses it again rather than skip it or store it twice.
TEST(Ingest, ALineThatDoesNotFitThePayloadColumnIsRefusedByItsNumber) {
  ConnectionOptions o = EmptyStore("rewind_test_ingest_long_line");
  auto c = Connect(o);
  size_t k = 0;
  const std::string file = LogWithALongLine(k, "rewind_long_line.log");
  const std::vector<std::string> lines = LogLines();
  uint64_t before = 0;
  for (size_t i = 0; i < k; ++i) before += lines[i].size();
  for (int run = 0; run < 2; ++run) {
    Outcome refused = RunRewind({"ingest", file, "--batch-size", "30"}, Env(o));
    EXPECT_NE(refused.code, 0) << refused.out;
    EXPECT_NE(refused.err.find(fmt::format("line {}", k + 1)), std::string::npos) << refused.err;
    EXPECT_NE(refused.err.find("65,535"), std::string::npos) << refused.err;
    EXPECT_EQ(StoredVisits(*c), KeptAmongTheFirst(k)) << "run " << run;
    EXPECT_EQ(Count(*c, "SELECT COUNT(*) FROM stored_events WHERE NOT JSON_VALID(payload)"), 0);
    EXPECT_EQ(Count(*c, "SELECT byte_offset FROM rewind_ingest_positions"), static_cast<int64_t>(before));
  }
  // Widened, the column takes it whole, and the rest after it.
  ASSERT_TRUE(c->Execute("ALTER TABLE stored_events MODIFY payload MEDIUMTEXT NULL").ok());
  Outcome widened = RunRewind({"ingest", file, "--batch-size", "30"}, Env(o));
  ASSERT_EQ(widened.code, 0) << widened.err;
  EXPECT_EQ(StoredVisits(*c), KeptAmongTheFirst(k + 51));
  EXPECT_EQ(Count(*c, "SELECT MAX(CHAR_LENGTH(JSON_VALUE(payload, '$.userAgent'))) FROM stored_events"),
            30000 + 12);
  EXPECT_EQ(Count(*c, "SELECT COUNT(*) FROM stored_events WHERE NOT JSON_VALID(payload)"), 0);
  std::remove(file.c_str());
}

// Every warning of a load is read: a uuid column narrower than a uuid (the server would cut
// each one to its width) stops the ingest before its batch is stored, with the server's words.
TEST(Ingest, AWarningOfTheServerStopsTheBatchItCameFrom) {
  ConnectionOptions o = FreshDatabase("rewind_test_ingest_warning");
  auto c = Connect(o);
  ASSERT_TRUE(c->Execute("CREATE TABLE stored_events (id BIGINT AUTO_INCREMENT PRIMARY KEY, uuid CHAR(8) NOT "
                         "NULL, eventClass VARCHAR(255) NOT NULL, payload TEXT NULL, createdAt DATETIME NOT "
                         "NULL) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4")
                  .ok());
  auto mode = c->QueryValue("SELECT @@GLOBAL.sql_mode");
  ASSERT_TRUE(mode.ok() && *mode);
  GlobalsRestored restored(*c, {"sql_mode"});
  for (const std::string& m : {**mode, std::string()}) {  // the server's own, then not strict
    ASSERT_TRUE(c->Execute("SET GLOBAL sql_mode = " + c->Quote(m)).ok());
    Outcome run = RunRewind({"ingest", kLog, "--batch-size", "500"}, Env(o));
    EXPECT_NE(run.code, 0) << "sql_mode '" << m << "'";
    EXPECT_NE(run.err.find("uuid"), std::string::npos) << run.err;
    EXPECT_EQ(Count(*c, "SELECT COUNT(*) FROM stored_events"), 0) << "sql_mode '" << m << "'";
  }
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

// ---------------------------------------------------------------- a file under another name (#32)

// A directory of its own, empty.
std::string FreshDir(const std::string& name) {
  const std::string dir = ::testing::TempDir() + "/" + name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

// Writes lines [from, to) of the log to `path` (truncating or appending).
void WriteLines(const std::string& path, size_t from, size_t to, std::ios::openmode mode) {
  static const std::vector<std::string> lines = LogLines();
  std::ofstream out(path, std::ios::binary | mode);
  for (size_t i = from; i < to && i < lines.size(); ++i) out << lines[i];
}

// The path as rewind keys it (absolute, normalised).
std::string Normal(const std::string& path) {
  return std::filesystem::absolute(path).lexically_normal().string();
}

// What the rules keep of the file at `path` read on its own, as (createdAt|ip|url).
std::vector<std::string> KeptIn(const std::string& path) {
  std::vector<std::string> want;
  for (const Expected& e : ReferenceIngest(path)) {
    if (e.reason != "kept") continue;
    char when[20];
    FormatDateTime(e.t, when);
    want.push_back(std::string(when, 19) + "|" + e.ip + "|" + e.url);
  }
  return want;
}

bool Says(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// logrotate renames access.log to access.log.1; ingesting it under that name (to catch up)
// stores nothing: it is the file ingested before, and rewind says so.
TEST(Ingest, AFileIngestedAgainUnderItsRotatedNameStoresNothingNew) {
  ConnectionOptions o = EmptyStore("rewind_test_ingest_renamed");
  auto c = Connect(o);
  const std::string dir = FreshDir("rewind_renamed");
  const std::string file = dir + "/access.log";
  std::filesystem::copy_file(kLog, file);
  ASSERT_EQ(RunRewind({"ingest", file}, Env(o)).code, 0);
  ASSERT_EQ(StoredVisits(*c), KeptByTheRules());
  std::filesystem::rename(file, file + ".1");
  Outcome again = RunRewind({"ingest", file + ".1"}, Env(o));
  ASSERT_EQ(again.code, 0) << again.err;
  EXPECT_EQ(StoredVisits(*c), KeptByTheRules());
  EXPECT_TRUE(Says(again.err, "is the file ingested before as " + Normal(file))) << again.err;
  EXPECT_TRUE(
      Says(again.err, fmt::format("continuing at byte {}", std::filesystem::file_size(kLog))))
      << again.err;
  EXPECT_TRUE(Says(again.out, "0 events stored")) << again.out;
  std::filesystem::remove_all(dir);
}

// Part of a file ingested (its last line still without its newline), then it grows and is
// renamed: under the new name exactly the rest is stored, once.
TEST(Ingest, APartlyIngestedFileStoresExactlyTheRestUnderItsNewName) {
  ConnectionOptions o = EmptyStore("rewind_test_ingest_renamed_part");
  auto c = Connect(o);
  const std::vector<std::string> lines = LogLines();
  const std::string dir = FreshDir("rewind_renamed_part");
  const std::string file = dir + "/access.log";
  WriteLines(file, 0, 3000, std::ios::trunc);
  std::ofstream(file, std::ios::binary | std::ios::app) << lines[3000].substr(0, 10);
  ASSERT_EQ(RunRewind({"ingest", file, "--batch-size", "700"}, Env(o)).code, 0);
  EXPECT_EQ(StoredVisits(*c), KeptAmongTheFirst(3000));
  std::ofstream(file, std::ios::binary | std::ios::app) << lines[3000].substr(10);
  WriteLines(file, 3001, 6000, std::ios::app);
  std::filesystem::rename(file, file + ".1");
  Outcome rest = RunRewind({"ingest", file + ".1", "--batch-size", "700"}, Env(o));
  ASSERT_EQ(rest.code, 0) << rest.err;
  EXPECT_EQ(StoredVisits(*c), KeptAmongTheFirst(6000));
  std::filesystem::remove_all(dir);
}

// Killed inside a batch's transaction, then renamed: the run under the new name continues
// at the last committed batch; no line lost or stored twice. Killed in the first batch (the
// file's record made, nothing of it committed): the new name reads it from its start.
TEST(Ingest, AKilledIngestContinuesUnderTheFilesNewName) {
  for (const int batch : {1, 4}) {
    SCOPED_TRACE(batch);
    ConnectionOptions o = EmptyStore(fmt::format("rewind_test_ingest_renamed_killed_{}", batch));
    auto c = Connect(o);
    const std::string dir = FreshDir("rewind_renamed_killed");
    const std::string file = dir + "/access.log";
    std::filesystem::copy_file(kLog, file);
    {
      std::vector<std::string> env = Env(o);
      env.push_back(fmt::format("REWIND_FAULT=ingest-batch:{}", batch));
      Subprocess run(Rewind({"ingest", file, "--batch-size", "700"}), env);
      ASSERT_TRUE(run.WaitFor("fault point", 60)) << run.err();
      run.Signal(SIGKILL);
      run.Wait();
    }
    EXPECT_EQ(Count(*c, "SELECT COUNT(*) FROM stored_events"),
              static_cast<int64_t>(KeptAmongTheFirst(700 * (batch - 1)).size()));
    std::filesystem::rename(file, file + ".1");
    Outcome rest = RunRewind({"ingest", file + ".1", "--batch-size", "700"}, Env(o));
    ASSERT_EQ(rest.code, 0) << rest.err;
    EXPECT_EQ(Says(rest.err, "is the file ingested before as " + Normal(file)), batch > 1)
        << rest.err;
    EXPECT_EQ(StoredVisits(*c), KeptByTheRules());
    std::filesystem::remove_all(dir);
  }
}

// access.log (part of it ingested) -> access.log.1 (the rest ingested under that name) ->
// access.log.2.gz (gzip: the same content, another inode, compressed): the .gz stores
// nothing new.
TEST(Ingest, AGzippedFileIngestedBeforeStoresNothingNew) {
  ConnectionOptions o = EmptyStore("rewind_test_ingest_renamed_gz");
  auto c = Connect(o);
  const std::string dir = FreshDir("rewind_renamed_gz");
  const std::string file = dir + "/access.log";
  WriteLines(file, 0, 5000, std::ios::trunc);
  ASSERT_EQ(RunRewind({"ingest", file}, Env(o)).code, 0);
  WriteLines(file, 5000, 10'000, std::ios::app);
  std::filesystem::rename(file, file + ".1");
  ASSERT_EQ(RunRewind({"ingest", file + ".1"}, Env(o)).code, 0);
  EXPECT_EQ(StoredVisits(*c), KeptByTheRules());
  ASSERT_EQ(std::system(fmt::format("gzip -c {0}.1 > {0}.2.gz && rm {0}.1", file).c_str()), 0);
  Outcome gz = RunRewind({"ingest", file + ".2.gz"}, Env(o));
  ASSERT_EQ(gz.code, 0) << gz.err;
  EXPECT_TRUE(Says(gz.err, "is the file ingested before as " + Normal(file + ".1"))) << gz.err;
  EXPECT_EQ(StoredVisits(*c), KeptByTheRules());
  std::filesystem::remove_all(dir);
}

// --follow reads the old file of a rotation to its end, then the new one; the old file,
// ingested afterwards under its rotated name (and gzipped), stores nothing.
TEST(Ingest, AfterAFollowedRotationTheOldFileUnderItsNewNameStoresNothing) {
  ConnectionOptions o = EmptyStore("rewind_test_ingest_follow_renamed");
  auto c = Connect(o);
  const std::string dir = FreshDir("rewind_follow_renamed");
  const std::string file = dir + "/access.log";
  const std::string read_so_far =
      "SELECT COALESCE(SUM(lines_read), 0) FROM rewind_ingest_positions";
  WriteLines(file, 0, 3000, std::ios::trunc);
  Subprocess run(Rewind({"ingest", "--follow", file, "--poll", "0.05", "--batch-size", "300"}),
                 Env(o));
  ASSERT_TRUE(WaitUntil(*c, read_so_far, 3000)) << run.err();
  std::filesystem::rename(file, file + ".1");
  WriteLines(file + ".1", 3000, 3100, std::ios::app);
  WriteLines(file, 3100, 6000, std::ios::trunc);
  ASSERT_TRUE(run.WaitFor("was rotated", 60)) << run.err();
  ASSERT_TRUE(WaitUntil(*c, read_so_far, 6000)) << run.err();
  run.Signal(SIGINT);
  ASSERT_EQ(run.Wait(), 0) << run.err();
  ASSERT_EQ(StoredVisits(*c), KeptAmongTheFirst(6000));
  Outcome old = RunRewind({"ingest", file + ".1"}, Env(o));
  ASSERT_EQ(old.code, 0) << old.err;
  EXPECT_EQ(StoredVisits(*c), KeptAmongTheFirst(6000));
  ASSERT_EQ(std::system(fmt::format("gzip -c {0}.1 > {0}.2.gz && rm {0}.1", file).c_str()), 0);
  Outcome gz = RunRewind({"ingest", file + ".2.gz", file}, Env(o));
  ASSERT_EQ(gz.code, 0) << gz.err;
  EXPECT_EQ(StoredVisits(*c), KeptAmongTheFirst(6000));
  std::filesystem::remove_all(dir);
}

// Two files that share only their first line (a log cut and restarted, a test fixture) are
// two files: the second is read from its start.
TEST(Ingest, AFileSharingOnlyItsFirstLineWithAnIngestedOneIsReadFromItsStart) {
  ConnectionOptions o = EmptyStore("rewind_test_ingest_same_first_line");
  auto c = Connect(o);
  const std::string dir = FreshDir("rewind_same_first_line");
  WriteLines(dir + "/a.log", 0, 3000, std::ios::trunc);
  WriteLines(dir + "/b.log", 0, 1, std::ios::trunc);
  WriteLines(dir + "/b.log", 5000, 8000, std::ios::app);
  ASSERT_EQ(RunRewind({"ingest", dir + "/a.log"}, Env(o)).code, 0);
  Outcome b = RunRewind({"ingest", dir + "/b.log"}, Env(o));
  ASSERT_EQ(b.code, 0) << b.err;
  std::vector<std::string> want = KeptIn(dir + "/a.log");
  for (const std::string& v : KeptIn(dir + "/b.log")) want.push_back(v);
  EXPECT_EQ(StoredVisits(*c), want);
  // Each is known by its own content: neither stores anything again under another name.
  std::filesystem::rename(dir + "/a.log", dir + "/a.log.1");
  std::filesystem::rename(dir + "/b.log", dir + "/b.log.1");
  ASSERT_EQ(RunRewind({"ingest", dir + "/a.log.1", dir + "/b.log.1"}, Env(o)).code, 0);
  EXPECT_EQ(StoredVisits(*c), want);
  std::filesystem::remove_all(dir);
}

// A file is not known before its first line is complete: an empty one, or one whose first
// line has no newline yet, stores nothing and leaves no record; once the line is whole the
// file is known, and under another name stores nothing again.
TEST(Ingest, AFileIsKnownOnceItsFirstLineIsComplete) {
  ConnectionOptions o = EmptyStore("rewind_test_ingest_first_line");
  auto c = Connect(o);
  const std::vector<std::string> lines = LogLines();
  const std::string dir = FreshDir("rewind_first_line");
  const std::string file = dir + "/access.log";
  const std::string files = "SELECT COUNT(*) FROM rewind_ingest_files";
  Spit(file, "");
  ASSERT_EQ(RunRewind({"ingest", file}, Env(o)).code, 0);
  EXPECT_EQ(Count(*c, files), 0);
  Spit(file, lines[0].substr(0, 30));
  ASSERT_EQ(RunRewind({"ingest", file}, Env(o)).code, 0);
  EXPECT_EQ(Count(*c, files), 0);
  EXPECT_EQ(Count(*c, "SELECT COUNT(*) FROM stored_events"), 0);
  std::ofstream(file, std::ios::binary | std::ios::app) << lines[0].substr(30);
  WriteLines(file, 1, 2000, std::ios::app);
  ASSERT_EQ(RunRewind({"ingest", file}, Env(o)).code, 0);
  EXPECT_EQ(Count(*c, files), 1);
  EXPECT_EQ(StoredVisits(*c), KeptAmongTheFirst(2000));
  std::filesystem::rename(file, dir + "/renamed.log");
  ASSERT_EQ(RunRewind({"ingest", dir + "/renamed.log"}, Env(o)).code, 0);
  EXPECT_EQ(StoredVisits(*c), KeptAmongTheFirst(2000));
  EXPECT_EQ(Count(*c, files), 1);
  std::filesystem::remove_all(dir);
}

// One log under two names (a copy) ingested at once: the second is refused while the first
// holds a batch's transaction open; every line is stored once, and the copy afterwards
// stores nothing.
TEST(Ingest, TwoNamesOfTheSameLogAreNotIngestedAtOnce) {
  ConnectionOptions o = EmptyStore("rewind_test_ingest_two_names");
  auto c = Connect(o);
  const std::string dir = FreshDir("rewind_two_names");
  std::filesystem::copy_file(kLog, dir + "/a.log");
  std::filesystem::copy_file(kLog, dir + "/b.log");
  const std::string pause = PauseFile("ingest_two_names");
  std::vector<std::string> env = Env(o);
  env.push_back("REWIND_FAULT=ingest-batch:2@" + pause);
  Subprocess first(Rewind({"ingest", dir + "/a.log", "--batch-size", "700"}), env);
  ASSERT_TRUE(first.WaitFor("fault point", 60)) << first.err();
  Outcome second = RunRewind({"ingest", dir + "/b.log", "--batch-size", "700"}, Env(o));
  EXPECT_EQ(second.code, 1) << second.err;
  EXPECT_TRUE(Says(second.err, dir + "/b.log")) << second.err;
  EXPECT_TRUE(Says(second.err, "is already being ingested")) << second.err;
  Release(pause);
  EXPECT_EQ(first.Wait(), 0) << first.err();
  EXPECT_EQ(StoredVisits(*c), KeptByTheRules());
  Outcome copy = RunRewind({"ingest", dir + "/b.log"}, Env(o));
  ASSERT_EQ(copy.code, 0) << copy.err;
  EXPECT_EQ(StoredVisits(*c), KeptByTheRules());
  std::remove(pause.c_str());
  std::filesystem::remove_all(dir);
}

// A file that starts as an ingested one but is shorter than what was stored of it (a cut
// copy): it is not that file grown, and reading it could store its lines twice. Refused,
// naming it, nothing stored; --from-start reads it anyway.
TEST(Ingest, AFileShorterThanWhatWasStoredOfItIsRefused) {
  ConnectionOptions o = EmptyStore("rewind_test_ingest_shorter");
  auto c = Connect(o);
  const std::string dir = FreshDir("rewind_shorter");
  std::filesystem::copy_file(kLog, dir + "/access.log");
  WriteLines(dir + "/cut.log", 0, 3000, std::ios::trunc);
  ASSERT_EQ(RunRewind({"ingest", dir + "/access.log"}, Env(o)).code, 0);
  Outcome cut = RunRewind({"ingest", dir + "/cut.log"}, Env(o));
  EXPECT_EQ(cut.code, 1) << cut.err;
  EXPECT_TRUE(Says(cut.err, dir + "/cut.log")) << cut.err;
  EXPECT_TRUE(Says(cut.err, "shorter")) << cut.err;
  EXPECT_TRUE(Says(cut.err, "--from-start")) << cut.err;
  EXPECT_EQ(StoredVisits(*c), KeptByTheRules());
  Outcome forced = RunRewind({"ingest", "--from-start", dir + "/cut.log"}, Env(o));
  ASSERT_EQ(forced.code, 0) << forced.err;
  std::vector<std::string> want = KeptByTheRules();
  for (const std::string& v : KeptAmongTheFirst(3000)) want.push_back(v);
  EXPECT_EQ(StoredVisits(*c), want);
  std::filesystem::remove_all(dir);
}

// A rotation that does not leave the old file as <file>.1: dateext (access.log-20261201),
// compress without delaycompress (access.log.1.gz), a second rotation before the next run
// (.2.gz beside the .1 of another day). `rewind ingest access.log` alone, after it, reads
// what was left of the old file where the rotation put it, then the new file: no line lost.
TEST(Ingest, TheRestOfARotatedFileIsFoundUnderTheNameTheRotationGaveIt) {
  const struct {
    const char* name;
    const char* rotate;  // {0}: the log's path
  } rotations[] = {{"dateext", "mv {0} {0}-20261201"},
                   {"compress", "mv {0} {0}.1 && gzip {0}.1"},
                   // a .1 of another day (another first line) and this one as .2.gz
                   {"twice", "mv {0} {0}.2 && gzip {0}.2 && printf 'x\\n' > {0}.1"}};
  for (const auto& r : rotations) {
    SCOPED_TRACE(r.name);
    ConnectionOptions o = EmptyStore(std::string("rewind_test_ingest_rotated_") + r.name);
    auto c = Connect(o);
    const std::string dir = FreshDir("rewind_rotated_names");
    const std::string file = dir + "/access.log";
    WriteLines(file, 0, 3000, std::ios::trunc);
    ASSERT_EQ(RunRewind({"ingest", file, "--batch-size", "700"}, Env(o)).code, 0);
    WriteLines(file, 3000, 4000, std::ios::app);  // written before the rotation
    ASSERT_EQ(std::system(fmt::format(fmt::runtime(r.rotate), file).c_str()), 0);
    WriteLines(file, 4000, 6000, std::ios::trunc);
    Outcome run = RunRewind({"ingest", file, "--batch-size", "700"}, Env(o));
    ASSERT_EQ(run.code, 0) << run.err;
    EXPECT_TRUE(Says(run.err, "read 1000 line(s) left in")) << run.err;
    EXPECT_EQ(StoredVisits(*c), KeptAmongTheFirst(6000));
    std::filesystem::remove_all(dir);
  }
}

// Two vhosts' logs that start with the same line (a health check hitting both at the same
// second), the first ingested while that line was all it had: the second is another log
// (the first is still there, another inode), read from its start, its first line stored
// too. The first, gzipped away (its original gone), is still known: it stores nothing new.
TEST(Ingest, ALogStartingAsAShortLogStillThereIsAnotherLog) {
  ConnectionOptions o = EmptyStore("rewind_test_ingest_vhosts");
  auto c = Connect(o);
  const std::vector<Expected> reference = ReferenceIngest(kLog);
  size_t k = 0;
  while (reference[k].reason != "kept") ++k;  // the shared first line is one the rules keep
  const std::string dir = FreshDir("rewind_vhosts");
  WriteLines(dir + "/a.log", k, k + 1, std::ios::trunc);
  WriteLines(dir + "/b.log", k, k + 1, std::ios::trunc);
  WriteLines(dir + "/b.log", 5000, 6000, std::ios::app);
  ASSERT_EQ(RunRewind({"ingest", dir + "/a.log"}, Env(o)).code, 0);
  Outcome b = RunRewind({"ingest", dir + "/b.log"}, Env(o));
  ASSERT_EQ(b.code, 0) << b.err;
  std::vector<std::string> want = KeptIn(dir + "/a.log");
  for (const std::string& v : KeptIn(dir + "/b.log")) want.push_back(v);
  ASSERT_EQ(want.size(), 1 + KeptIn(dir + "/b.log").size());
  EXPECT_EQ(StoredVisits(*c), want);
  ASSERT_EQ(std::system(fmt::format("gzip {}/a.log", dir).c_str()), 0);
  Outcome gz = RunRewind({"ingest", dir + "/a.log.gz"}, Env(o));
  ASSERT_EQ(gz.code, 0) << gz.err;
  EXPECT_TRUE(Says(gz.err, "is the file ingested before as " + Normal(dir + "/a.log"))) << gz.err;
  EXPECT_EQ(StoredVisits(*c), want);
  std::filesystem::remove_all(dir);
}

// A log truncated and rewritten in place (the same inode) with other content after the same
// first line: its saved position no longer fits (its first bytes are not the ones stored),
// so it is read from its start, as any rewritten file is, not continued in the middle of
// a line of the new content.
TEST(Ingest, AFileRewrittenInPlaceAfterTheSameFirstLineIsReadFromItsStart) {
  ConnectionOptions o = EmptyStore("rewind_test_ingest_rewritten");
  auto c = Connect(o);
  const std::string dir = FreshDir("rewind_rewritten");
  const std::string file = dir + "/access.log";
  WriteLines(file, 0, 3000, std::ios::trunc);
  ASSERT_EQ(RunRewind({"ingest", file, "--batch-size", "700"}, Env(o)).code, 0);
  const auto inode = [&] {
    struct stat st {};
    EXPECT_EQ(::stat(file.c_str(), &st), 0);
    return st.st_ino;
  };
  const auto before = inode();
  const std::string both = dir + "/both.log";  // what one reading of both contents keeps
  std::filesystem::copy_file(file, both);
  WriteLines(file, 0, 1, std::ios::trunc);
  WriteLines(file, 5000, 9000, std::ios::app);
  ASSERT_EQ(inode(), before);
  WriteLines(both, 0, 1, std::ios::app);
  WriteLines(both, 5000, 9000, std::ios::app);
  Outcome again = RunRewind({"ingest", file, "--batch-size", "700"}, Env(o));
  ASSERT_EQ(again.code, 0) << again.err;
  EXPECT_EQ(StoredVisits(*c), KeptIn(both));
  std::filesystem::remove_all(dir);
}

// Two vhosts' logs that start with the same line, ingested at once (two followers, two cron
// jobs): they are two logs, so the second is not refused while the first holds a batch's
// transaction open, and each is stored once.
TEST(Ingest, TwoLogsThatStartAlikeAreIngestedAtOnce) {
  ConnectionOptions o = EmptyStore("rewind_test_ingest_vhosts_at_once");
  auto c = Connect(o);
  const std::string dir = FreshDir("rewind_vhosts_at_once");
  WriteLines(dir + "/a.log", 0, 3000, std::ios::trunc);
  WriteLines(dir + "/b.log", 0, 1, std::ios::trunc);
  WriteLines(dir + "/b.log", 5000, 8000, std::ios::app);
  const std::string pause = PauseFile("ingest_vhosts_at_once");
  std::vector<std::string> env = Env(o);
  env.push_back("REWIND_FAULT=ingest-batch:2@" + pause);
  Subprocess first(Rewind({"ingest", dir + "/a.log", "--batch-size", "700"}), env);
  ASSERT_TRUE(first.WaitFor("fault point", 60)) << first.err();
  Outcome second = RunRewind({"ingest", dir + "/b.log", "--batch-size", "700"}, Env(o));
  EXPECT_EQ(second.code, 0) << second.err;
  Release(pause);
  EXPECT_EQ(first.Wait(), 0) << first.err();
  std::vector<std::string> want = KeptIn(dir + "/a.log");
  for (const std::string& v : KeptIn(dir + "/b.log")) want.push_back(v);
  std::vector<std::string> got = StoredVisits(*c);
  std::sort(want.begin(), want.end());
  std::sort(got.begin(), got.end());
  EXPECT_EQ(got, want);
  std::remove(pause.c_str());
  std::filesystem::remove_all(dir);
}

// The layout before the record of ingested files (6): the migration makes each saved
// position a known file, so a file ingested by an older rewind and renamed since stores
// nothing new.
TEST(IngestLayout, TheLayoutBeforeKnownFilesIsMigratedAndItsPositionsKnown) {
  ConnectionOptions o = EmptyStore("rewind_test_ingest_layout6");
  auto c = Connect(o);
  const std::string dir = FreshDir("rewind_layout6");
  const std::string file = dir + "/access.log";
  std::filesystem::copy_file(kLog, file);
  ASSERT_EQ(RunRewind({"ingest", file}, Env(o)).code, 0);
  // As layout 6 left it.
  ASSERT_TRUE(c->Execute("DROP TABLE rewind_ingest_files").ok());
  ASSERT_TRUE(c->Execute("UPDATE rewind_schema SET version = 6").ok());
  std::filesystem::rename(file, file + ".1");
  Outcome again = RunRewind({"ingest", file + ".1"}, Env(o));
  ASSERT_EQ(again.code, 0) << again.err;
  EXPECT_EQ(Count(*c, "SELECT version FROM rewind_schema"), kSchemaVersion);
  EXPECT_TRUE(Says(again.err, "is the file ingested before as " + Normal(file))) << again.err;
  EXPECT_EQ(StoredVisits(*c), KeptByTheRules());
  EXPECT_EQ(Count(*c, "SELECT COUNT(*) FROM rewind_ingest_files"), 1);
  std::filesystem::remove_all(dir);
}

// An older rewind (layout 6) still ingesting while a newer one migrates: the migration
// records the file as far as its saved position was then; the older one goes on, moving
// only the position (it knows no record). The record left behind that position is as far
// as the position of the same file (its path, inode and first line): renamed, the file
// stores nothing twice.
TEST(IngestLayout, AFileAnOlderRewindIngestedAfterTheMigrationStoresNothingTwice) {
  ConnectionOptions o = EmptyStore("rewind_test_ingest_layout6_late");
  auto c = Connect(o);
  const std::string dir = FreshDir("rewind_layout6_late");
  const std::string file = dir + "/access.log";
  WriteLines(file, 0, 3000, std::ios::trunc);
  ASSERT_EQ(RunRewind({"ingest", file}, Env(o)).code, 0);
  const int64_t seeded = Count(*c, "SELECT byte_offset FROM rewind_ingest_positions");
  ASSERT_TRUE(c->Execute("DROP TABLE rewind_ingest_files").ok());
  ASSERT_TRUE(c->Execute("UPDATE rewind_schema SET version = 6").ok());
  Spit(dir + "/empty.log", "");
  ASSERT_EQ(RunRewind({"ingest", dir + "/empty.log"}, Env(o)).code, 0);  // the migration
  ASSERT_EQ(Count(*c, "SELECT byte_offset FROM rewind_ingest_files"), seeded);
  // The older rewind's next run: what it writes is what this one writes but the record.
  WriteLines(file, 3000, 6000, std::ios::app);
  ASSERT_TRUE(c->Execute("RENAME TABLE rewind_ingest_files TO hidden_files").ok());
  ASSERT_TRUE(c->Execute("CREATE TABLE rewind_ingest_files LIKE hidden_files").ok());
  ASSERT_EQ(RunRewind({"ingest", file}, Env(o)).code, 0);
  ASSERT_TRUE(c->Execute("DROP TABLE rewind_ingest_files").ok());
  ASSERT_TRUE(c->Execute("RENAME TABLE hidden_files TO rewind_ingest_files").ok());
  ASSERT_EQ(StoredVisits(*c), KeptAmongTheFirst(6000));
  std::filesystem::rename(file, file + ".1");
  Outcome renamed = RunRewind({"ingest", file + ".1"}, Env(o));
  ASSERT_EQ(renamed.code, 0) << renamed.err;
  EXPECT_EQ(StoredVisits(*c), KeptAmongTheFirst(6000));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace rw
