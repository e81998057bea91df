// The questions of `rewind stress`, registered in one table: each a small unit that the
// command makes for a run, checks before anything is created, and runs in the harness once
// its scratch database is ready. Beside them the server's commit latency, measured first
// (it decides every write figure) and again at the end (did the disk change?).
//
// Thread safety: a question runs on the thread of the command (the harness's); its writers
// run on threads and connections of their own, joined before Run() returns.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "pipeline/stress/harness.h"

namespace rw {

class Question {
 public:
  explicit Question(Harness& h) : h_(h) {}
  virtual ~Question() = default;
  // What is checked before stress creates anything (the user's table); Ok by default.
  virtual Status Check() { return Status::Ok(); }
  virtual Status Run() = 0;

 protected:
  Harness& h_;
};

// A row of the table: the question's --only number (0: the user's table, measured with
// --events-table whatever --only says), its name, and how it is made.
struct QuestionRow {
  int only;
  const char* name;
  std::unique_ptr<Question> (*make)(Harness&);
};

// The questions in the order they run.
const std::vector<QuestionRow>& Questions();

// Question 0: how long the server takes to commit (flush) one small transaction, and one
// round trip without a write; `when` ("" or "_end") ends the results' case names.
Status CommitLatency(Harness& h, const std::string& when);

// Each question's unit (their files are named after them).
std::unique_ptr<Question> MakeAggregateLoad(Harness& h);  // 1
std::unique_ptr<Question> MakeSnapshots(Harness& h);      // 2
std::unique_ptr<Question> MakeRebuild(Harness& h);        // 3
std::unique_ptr<Question> MakeAppends(Harness& h);        // 4
std::unique_ptr<Question> MakeYourTable(Harness& h);      // the user's table

}  // namespace rw
