#include "pipeline/stress/stress.h"

#include <fmt/core.h>
#include <strings.h>

#include <algorithm>

#include "base/fault.h"
#include "pipeline/stress/harness.h"
#include "pipeline/stress/questions.h"

namespace rw {
namespace {

// What makes the options unusable before anything is asked of a server ("" when none).
std::string UsageError(const StressOptions& o) {
  if (!o.own_table && std::find(o.only.begin(), o.only.end(), 0) != o.only.end()) {
    return "--only table measures your event table: give it with --events-table (and its "
           "database with --database)";
  }
  if (!o.own_table) return "";
  if (o.connection.database.empty()) {
    return fmt::format(
        "--events-table '{}' names your event table: give the database it is in with "
        "--database (stress only reads it)",
        o.events.table);
  }
  if (strcasecmp(o.connection.database.c_str(), o.database.c_str()) == 0) {
    return fmt::format(
        "--database '{}' is also the stress database (--stress-database): stress creates and "
        "drops tables in its own database and only reads yours; give another --stress-database",
        o.connection.database);
  }
  return "";
}

// Whether the question of `row` runs: the numbered ones as --only says, the user's table
// whenever it is given.
bool Wanted(const QuestionRow& row, const StressOptions& o) {
  if (row.only == 0) return o.own_table;
  return o.only.empty() || std::find(o.only.begin(), o.only.end(), row.only) != o.only.end();
}

int Failed(const Status& s) {
  fmt::print(stderr, "rewind stress: {}\n", s.message());
  return exit_code::kError;
}

}  // namespace

int StressCommand(const StressOptions& options, const std::atomic<bool>& stop, std::FILE* out) {
  if (const std::string usage = UsageError(options); !usage.empty()) {
    fmt::print(stderr, "rewind stress: {}\n", usage);
    return exit_code::kUsage;
  }
  Harness h(options, stop);
  std::vector<std::unique_ptr<Question>> questions;
  for (const QuestionRow& row : Questions()) {
    if (Wanted(row, options)) questions.push_back(row.make(h));
  }
  for (const auto& q : questions) {  // refused before anything is created
    if (Status s = q->Check(); !s.ok()) return Failed(s);
  }
  if (Status s = h.Prepare(); !s.ok()) return Failed(s);
  FaultPoint("stress-prepared");
  Status s = CommitLatency(h, "");  // first: it decides every write figure
  for (const auto& q : questions) {
    if (s.ok()) s = q->Run();
  }
  if (s.ok() && !stop.load()) s = CommitLatency(h, "_end");  // again: did the disk change?
  if (s.ok() && stop.load()) s = Status::Error(Status::Code::kCancelled, "stopped");
  const bool reported = h.WriteReport(out, s);
  if (!options.keep) h.Clean();
  if (!s.ok()) return Failed(s);
  if (!reported || !h.context().consistent) return exit_code::kError;
  return exit_code::kOk;
}

}  // namespace rw
