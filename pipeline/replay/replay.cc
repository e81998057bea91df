// RunRebuild (a build, then its plan's finisher) and Replay (segments caught up first, then
// RunRebuild); the Build's birth and summary; the plan of a run. The build's phases are in
// prepare.cc, pass.cc and finishing.cc, the finishers in files of their own (finishers.h).
#include "pipeline/replay/replay.h"

#include <fmt/core.h>
#include <unistd.h>

#include <chrono>
#include <ctime>

#include "base/fault.h"
#include "pipeline/replay/finishers.h"
#include "pipeline/replay/replay_build.h"
#include "pipeline/replay/segments.h"
#include "stages/flow/page_query.h"

namespace rw {

namespace {

std::string NewRunId() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y%m%dT%H%M%SZ", &tm);
  return fmt::format("{}-{}", buf, getpid());
}

double Since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace

Build::Build(const RunSpec& o, const RunPlan& plan, const std::atomic<bool>& stop)
    : o_(o), plan_(plan), stop_(stop) {
  sum_.run_id = NewRunId();
}

Build::~Build() {
  if (heartbeat_) heartbeat_->Stop();
}

double Build::seconds() const { return Since(started_); }

ReplaySummary Build::Finish(Status s) {
  sum_.status = std::move(s);
  sum_.seconds = Since(started_);
  return std::move(sum_);
}

Result<live_shape::Judgement> JudgeLiveTable(Connection& c, const Projector& p, bool reshape) {
  if (p.origin().empty()) return live_shape::Judgement{};  // compiled: its table is rewind's
  Result<live_shape::Judgement> j = live_shape::Judge(c, p.table(), reshape);
  if (j.ok() && j->kind == live_shape::Kind::kApplications && !j->problems.empty()) {
    return live_shape::Refusal(p.table().name, *j);
  }
  return j;
}

Status CheckUntilId(Connection& c, const RunSpec& o) {
  if (o.until_id && !o.events.id_form.integer()) {
    return Status::InvalidInput(fmt::format("--until-id takes an integer id, and the ids of {} are {}s: stop the "
                                            "build at a time with --until-time instead",
                                            o.events.table, IdFormName(o.events.id_form)));
  }
  if (!o.until_id || o.allow_empty) return Status::Ok();
  Result<std::optional<EventId>> read = ReadFirstId(c, o.events);
  if (!read.ok()) return read.status();
  const std::optional<EventId> first = *read;
  if (!first || *o.until_id >= *first) return Status::Ok();  // no events: not an --until-id question
  return Status::InvalidInput(fmt::format(
      "--until-id {} is below the first event of {} (id {}): the build would receive no event; "
      "pass --allow-empty to build empty read models up to it anyway",
      IdText(*o.until_id), o.events.table, IdText(*first)));
}

RunPlan PlanFor(const RunSpec& options) {
  RunPlan plan;
  if (!options.into.empty()) {  // beside the live tables, never swapped in
    plan.table_suffix = options.into;
    plan.finish = RunPlan::Finish::kInto;
  } else if (options.build_only) {  // the swap's build, swapped in by a later --resume
    plan.finish = RunPlan::Finish::kBuildOnly;
    if (options.segment) {  // one share of it, merged by the swap
      plan.segment = options.segment;
      plan.table_suffix = SegmentSuffix(*options.segment);
    }
  }
  return plan;
}

std::string LockedTable(const RunPlan& plan, const std::string& live) {
  return plan.finish != RunPlan::Finish::kInto && !plan.segment ? live : live + plan.table_suffix;
}

ReplaySummary RunRebuild(const RunSpec& options,
                         std::vector<std::unique_ptr<Projector>> projectors,
                         const std::atomic<bool>& stop, const RunPlan& plan) {
  Build b(options, plan, stop);
  Status s = b.Prepare(std::move(projectors));
  if (s.ok()) s = b.Rebuild();
  if (s.ok()) FaultPoint("after-build");
  if (s.ok()) s = b.StoppedBeforeSwap();
  switch (plan.finish) {
    case RunPlan::Finish::kSwap:
      if (s.ok()) s = FinishSwap(b);
      break;
    case RunPlan::Finish::kInto:
    case RunPlan::Finish::kBuildOnly:
      if (s.ok()) s = FinishBuilt(b);
      break;
    case RunPlan::Finish::kScratch:  // drops its tables whatever the build's outcome
      s = FinishScratch(b, std::move(s));
      break;
  }
  return b.Finish(std::move(s));
}

ReplaySummary Replay(const RunSpec& options, std::vector<std::unique_ptr<Projector>> projectors,
                     const std::atomic<bool>& stop) {
  const RunPlan plan = PlanFor(options);
  // Segment merging sits above the rebuild: a swap that resumes first brings the segments of
  // a read model built in segments to one id (segments.h), each segment's catch-up a build of
  // its own; then the swap's build merges them.
  const Status caught_up = plan.swap() && options.resume ? segments::CatchUp(options, projectors, stop) : Status::Ok();
  if (!caught_up.ok()) {
    ReplaySummary failed;
    failed.run_id = NewRunId();
    failed.status = caught_up;
    return failed;
  }
  ReplaySummary sum = RunRebuild(options, std::move(projectors), stop, plan);
  sum.built_into = options.into;
  sum.built_only = options.build_only;
  sum.segment = options.segment;
  return sum;
}

}  // namespace rw
