// Build: the moving parts of one replay run (internal to pipeline/replay), and the steps
// every kind of run shares, one file per phase: Prepare (prepare.cc) connects, checks and
// creates what the run needs, Rebuild (pass.cc) makes the one pass to the head; then a
// finisher (finishers.h: the swap's in cutover.cc, the built one's and the scratch one's in
// files of their own) works on the Build through what finishing.cc does. The dry run takes
// Inspect instead of Prepare (read-only), samples, and stops. A Build owns the
// admin connection (which holds the named locks), the heartbeat, the event source (the
// Reader; the finishers see only its interface, stages/flow/event_source.h), one runner per
// read model and the run's summary.
//
// Thread safety: one thread drives a Build; the graph's threads run only inside its passes.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "pipeline/engine/run_spec.h"
#include "pipeline/engine/graph.h"
#include "pipeline/engine/read_models.h"
#include "pipeline/engine/summary.h"
#include "pipeline/replay/hand_over.h"
#include "pipeline/replay/replay.h"
#include "projectors/projector.h"
#include "stages/control/progress.h"
#include "stages/control/throttle.h"
#include "stages/db/checkpoint_store.h"
#include "stages/db/connection.h"
#include "stages/db/heartbeat.h"
#include "stages/flow/decoder.h"
#include "stages/flow/failure_recorder.h"
#include "stages/flow/projector_runner.h"
#include "stages/flow/event_source.h"

namespace rw {

// Whether a pass that reads on first asks the server's open transactions which watched
// holes are final (EventSource::ProveByOpenTransactions).
enum class Proof { kNone, kOpenTransactions };

// A follower started again (--resume --follow, a swap's plan): a read model whose live table
// carries the checkpoint of a build of the same read model continues that table from it, as
// the follower that wrote it would have; the others are rebuilt beside and swapped in. Not
// continued: a read model with an interrupted build (--resume continues that build), whose
// declaration or event source changed, whose last event read was edited since, that keeps
// part of its state in memory (order-dependent, not resumable), whose table the application
// took back at the swap (a hand_over), or whose table is gone.
struct LiveBuild {
  std::optional<Checkpoint> checkpoint;  // the live table's, when it continues
  std::string why_rebuilt;               // when it has a live build it does not continue ("" otherwise)
};
// The live build of `p` (one of `names`, the run's selection) a run of `o` by `plan` would
// continue. Reads only.
Result<LiveBuild> FindLiveBuild(Connection& c, const RunSpec& o, const RunPlan& plan,
                                const std::vector<std::string>& names, const Projector& p,
                                const std::vector<hand_over::Step>& hand_overs);

// How --follow learns of new commits (follow.cc): the server's binlog, or polling; and why.
struct FollowChoice {
  bool binlog = false;
  std::string why;  // binlog: what was checked; poll: what the binlog lacks (or that poll was asked)
};
// The follow source a run of `o` on `c`'s server uses: the binlog where --follow-source allows
// it, the ids are integers, the server serves it to this user (CheckBinlog), and every read
// model in `order_dependent` (those taking events in id order) can have its holes proven final
// by the server (`proves`: INNODB_TRX readable); else polling. --follow-source binlog where it
// cannot is an error naming what is missing. Reads only.
Result<FollowChoice> ChooseFollowSource(Connection& c, const RunSpec& o, const std::vector<std::string>& order_dependent,
                                        bool proves);

class Build {
 public:
  Build(const RunSpec& o, const RunPlan& plan, const std::atomic<bool>& stop);
  // The heartbeat stops first and its row goes last, after the admin connection (declared
  // after it) has closed and let the locks go: the row vouches for the locks while held.
  ~Build();
  Build(const Build&) = delete;
  Build& operator=(const Build&) = delete;

  // Connects and checks everything before any work, takes the locks, creates (or, with
  // --resume, finds) every build table and its checkpoint, and sets up the graph's parts.
  Status Prepare(std::vector<std::unique_ptr<Projector>> projectors);
  // The dry run's build (dry_run.cc): Prepare's first steps, those that only read (connects
  // and checks the event source, plans the reads, reads the head), then it stops. Creates,
  // locks and writes nothing; the dry run reads its sample through SampleSource and checks
  // the rest itself, collecting every blocker.
  Status Inspect(std::vector<std::unique_ptr<Projector>>& projectors);
  // A source of its own from the first event to the head, on one connection to the
  // primary, in batches of at most `max_batch`: the dry run's sample.
  Result<std::unique_ptr<EventSource>> SampleSource(size_t max_batch) const;
  const ReadPlan& read_plan() const { return read_plan_; }
  // One pass from the lowest checkpoint to the head taken at the start; every read model
  // commits what it applied, also when stopped (so that a resume continues from there).
  Status Rebuild();

  // Reads on: extends the source's head to `head`, marks final what the open transactions
  // prove (with Proof::kOpenTransactions), queues `check` (a final check always; another
  // only while holes are watched), then a quiet pass. `rechecked`, when given, is set to
  // the holes watched when the check was queued (0 if none was).
  Status ReadOn(const Head& head, Proof proof, std::optional<GapCheck> check,
                uint64_t* rechecked = nullptr);
  // Following: reads again the holes judged final (EventSource::QueueReconcile), a quiet pass.
  Status Reconcile();

  // Ok, or (when a stop was asked) kCancelled "stopped before the swap", the run interrupted.
  Status StoppedBeforeSwap();
  // --max-failures: every read model within its budget, over the whole run.
  Status CheckBudget();
  // Refuses to swap an empty build over a live table with rows (unless --allow-empty).
  Status CheckNotEmpty();
  // Refuses to swap a build that missed events it knows of (committed late, not placeable
  // exactly): a result known to be wrong is never swapped in.
  Status CheckNothingMissed();
  // Under the cut-over's hold, for ids the clients make (ULIDs, UUIDs): the events up to the
  // head are the events read; more are events inserted further below than --settle (a
  // client whose clock runs behind), and nothing is swapped in. A COUNT of the table.
  // Not for a resumed build (what earlier runs read is not counted).
  Status CheckNothingBelow();
  // With a read server (--read-host/--read-socket): the reader moves to the primary, for
  // the catch-up and the cut-over (read_replica.h). Nothing to do otherwise.
  Status ReadFromPrimary();
  // The admin connection, alive and holding the locks again after a server restart.
  Status EnsureAdmin();
  // Swaps every build table in with one RENAME TABLE.
  Status SwapIn();
  // After the swap: the checkpoint rows become the live tables' (`status`), and the runners
  // write to the live tables from now on.
  void BecomeLive(CheckpointStatus status);
  // Sets the status of every read model's checkpoint (the table it writes now).
  void SetStatus(CheckpointStatus status, uint64_t gaps_given_up);
  // Following: every read model's checkpoint records how it is followed ("binlog" | "poll"),
  // and the event-table rows the binlog showed edited (it needs a rebuild then).
  void SetFollowSource(const std::string& source);
  void AddEdited(uint64_t edited);
  // Drops the scratch tables (and their checkpoints), if this run took the locks.
  void DropScratch();

  // The summary of the run ending with `s`.
  ReplaySummary Finish(Status s);

  const RunSpec& options() const { return o_; }
  const RunPlan& plan() const { return plan_; }
  bool stopping() const { return stop_.load(); }
  const std::atomic<bool>& stop_flag() const { return stop_; }
  // Seconds since the build began.
  double seconds() const;
  ReplaySummary& summary() { return sum_; }
  EventSource& source() { return *source_; }
  Connection& admin() { return *admin_; }
  // How following learns of new commits (chosen at Prepare when the run follows).
  const FollowChoice& follow_choice() const { return follow_choice_; }
  // The statements that hand the position back at the swap (hand_over.h).
  const std::vector<hand_over::Step>& hand_overs() const { return hand_overs_; }
  // The live tables the application may write during the rebuild, with their checksums.
  const std::vector<hand_over::Watched>& watched_tables() const { return watched_tables_; }
  // Whether read model i continues its live table (a follower started again), and whether
  // every read model does (nothing to swap then).
  bool continues(size_t i) const { return i < continues_.size() && continues_[i].has_value(); }
  bool all_continue() const {
    return !continues_.empty() && std::all_of(continues_.begin(), continues_.end(), [](const auto& c) { return c.has_value(); });
  }

 private:
  // Prepare's steps, in order.
  Status ConnectToSource();
  Status PlanTheReads(std::vector<std::unique_ptr<Projector>>& projectors);
  Status NameTheTables(const std::vector<std::unique_ptr<Projector>>& projectors);
  Status JudgeTheLiveTables(const std::vector<std::unique_ptr<Projector>>& projectors);
  Status PrepareTheHandOvers(const std::vector<std::unique_ptr<Projector>>& projectors);
  Status WatchTheApplicationsTables(const std::vector<std::unique_ptr<Projector>>& projectors);
  Status FindTheLiveBuilds(const std::vector<std::unique_ptr<Projector>>& projectors);
  // (read model, live table) of every live table the application may write: its own shape
  // (kept or reshaped), or one a hand_over hands back.
  std::vector<std::pair<std::string, std::string>> ApplicationsTables() const;
  Status CheckTablesInTheWay();
  Status TakeOwnership();
  Status ReadTheHead();
  Status CheckTheReadServer();
  Result<std::unique_ptr<Connection>> CheckOneReadServer(const ConnectionOptions& where);
  Status PrepareSegments(const std::vector<std::unique_ptr<Projector>>& projectors);
  Status PrepareRunners(std::vector<std::unique_ptr<Projector>> projectors, GapSet* watched);
  void ContinueRuns(const std::set<std::string>& runs);
  void SayWhatResumes(size_t fresh_under_resume) const;
  Status StartReader(const GapSet& watched);
  // With --follow: the follow source (ChooseFollowSource), refused before any work when
  // --follow-source binlog cannot be had.
  Status ChooseTheFollowSource(const std::vector<std::unique_ptr<Projector>>& projectors);
  Status StartRecorder();

  // The one call of RunGraph: over what the reader has queued (a gap check, then ids up to
  // its head).
  Status RunTheGraph(Progress& progress, const std::atomic<bool>& stop);
  // The graph, then every read model commits. A quiet pass shows no progress line and runs
  // to the end of what is queued (a small range), whatever the stop flag says.
  Status Pass(Progress& progress, const std::atomic<bool>& stop);
  Status QuietPass();
  void Collect();
  void SetNote(const std::string& throttled);

  const RunSpec& o_;
  const RunPlan& plan_;
  const std::atomic<bool>& stop_;
  const std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
  ReplaySummary sum_;
  std::unique_ptr<Heartbeat> heartbeat_;
  std::unique_ptr<Connection> admin_;
  bool locked_ = false;
  std::vector<std::string> live_tables_, names_;
  std::vector<live_shape::Judgement> shapes_;  // of each live table, as live_tables_
  std::vector<hand_over::Step> hand_overs_;
  std::vector<hand_over::Watched> watched_tables_;
  std::vector<std::string> lock_tables_;  // the tables this run's named locks are on
  // Per read model, the checkpoint of the live table it continues (FindTheLiveBuilds), or
  // nullopt: rebuilt beside and swapped in.
  std::vector<std::optional<Checkpoint>> continues_;
  FollowChoice follow_choice_;
  std::set<std::string> rebuilt_said_;  // the read models a restarted follower rebuilds, said with why
  std::vector<uint64_t> prior_applied_, prior_failed_, prior_missed_;
  std::unique_ptr<Throttle> throttle_;
  Progress* progress_ = nullptr;
  std::vector<std::unique_ptr<ProjectorRunner>> runners_;
  // The memory budget its runners share (--memory).
  std::shared_ptr<MemoryBudget> memory_;
  EventId start_after_ = kBeforeFirstId;
  uint64_t prior_failures_ = 0;  // recorded by the interrupted part of a resumed run
  std::unique_ptr<EventSource> source_;
  std::unique_ptr<Connection> read_server_;  // the first replica's connection, until the reader takes it
  std::vector<ConnectionOptions> more_read_servers_;  // the other replicas that passed their checks
  bool reads_replica_ = false;               // the reader reads the replica (until ReadFromPrimary)
  std::unique_ptr<FailureRecorder> recorder_;
  ReadPlan read_plan_;
  std::unique_ptr<Decoder> decoder_;
  std::vector<Branch> branches_;
};

}  // namespace rw
