// Following (finishers.h): after the swap, or when every read model continues its live
// table, rewind keeps applying new events to the live tables, with the same checkpoint
// discipline and the same in-memory state (sessions continue exactly), until stopped. How it
// learns of new commits is the follow source (--follow-source, chosen at Prepare:
// ChooseFollowSource), said on the console, in the summary and in the dry run:
//
//  - The binlog (stages/db/binlog.h): a thread reads the server's binary log from the
//    position read before the follower's first look at the table. Each committed insert's id
//    that no page has read (above the head, or in a watched hole) is awaited until a pass has
//    read it; the events themselves are read from the table by id range as every other read
//    is. So a late commit is applied exactly once whatever the clocks or how long its
//    transaction stayed open: holes are never given up by time or judged by the fallback rule
//    (GapWatch::FollowCommitLog), only proven final by the server (a rolled-back insert's
//    hole) or read when their id commits. Nothing of the binlog needs keeping across a
//    restart: a follower started again keeps its checkpoints' holes, reads the table to the
//    head, then the binlog from the position it read before that, so a purged log never
//    leaves a gap. A lost stream (a server restart) does the same again; a commit whose ids
//    the binlog does not give (statement format, rows libmariadb cannot decode: a CHAR in a
//    multi-byte character set) has the table looked at. Every --poll seconds it also looks at the table as polling does:
//    the net for writes the binlog does not show (sql_log_bin=0). Updates and deletes of the
//    event table's rows (events are immutable) are counted, said, and kept in every followed
//    read model's checkpoint: it needs a rebuild (rewind status).
//  - Polling (today's road where the binlog cannot be read): looks for new events every
//    --poll seconds; a hole is final by the server's proof or the fallback rule, given up
//    once watched --settle seconds, with the reconciliation as a net.
#include "pipeline/replay/finishers.h"

#include <fmt/core.h>
#include <fmt/format.h>

#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <thread>

#include "stages/control/sleep.h"
#include "stages/db/binlog.h"
#include "stages/db/retry.h"
#include "stages/flow/reader.h"

namespace rw {
namespace {

// Following: reads again the holes judged final (pipeline's net under the proof and the
// fallback rule, stages/flow/reader.h "Reconciliation"); says what it found.
Status Reconcile(Build& b) {
  EventSource& source = b.source();
  if (source.gap_counts().reconciled_holes == 0) return Status::Ok();
  const uint64_t before = source.gap_counts().reconciled_events;
  if (Status s = b.Reconcile(); !s.ok()) return s;
  if (const uint64_t found = source.gap_counts().reconciled_events - before; found > 0) {
    fmt::print(stderr,
               "rewind: reconciliation found {} event(s) in holes judged final; applied where the read "
               "model takes events out of order, otherwise counted as missed (rewind status)\n",
               found);
  }
  return Status::Ok();
}

// After a pass that read on from `from` (the summary's events_read `before` it, the gap counts
// `was`): says what it read, unless quiet, and moves the summary's head.
void SayFollowed(Build& b, EventId from, uint64_t before, const GapCounts& was) {
  const RunSpec& o = b.options();
  ReplaySummary& sum = b.summary();
  EventSource& source = b.source();
  if (o.progress != ProgressMode::kQuiet && sum.events_read > before) {
    fmt::print(stderr, "rewind: followed events after {} up to {} ({} new, {} late)\n",
               IdShown(o.events.id_form, from), IdShown(o.events.id_form, source.head()), sum.events_read - before,
               source.gap_counts().late_events - was.late_events);
  }
  sum.head_id = source.head();
}

// Polling: looks for new events every --poll seconds. Ids missing below the head are watched
// for the settle window, then given up (counted in status); the reconciliation reads the
// holes judged final again every --reconcile seconds.
Status FollowByPolling(Build& b) {
  const RunSpec& o = b.options();
  ReplaySummary& sum = b.summary();
  EventSource& source = b.source();
  const auto poll = std::chrono::milliseconds(static_cast<int64_t>(o.poll_seconds * 1000));
  const auto reconcile_every = std::chrono::duration<double>(o.reconcile_seconds);
  auto reconciled_at = std::chrono::steady_clock::now();
  while (!b.stopping()) {
    (void)SleepUnlessStopped(poll, &b.stop_flag());
    if (b.stopping()) break;
    if (Status s = b.EnsureAdmin(); !s.ok()) return s;
    if (o.reconcile_seconds > 0 && std::chrono::steady_clock::now() - reconciled_at >= reconcile_every) {
      if (Status s = Reconcile(b); !s.ok()) return s;
      reconciled_at = std::chrono::steady_clock::now();
    }
    Result<Head> now = source.ReadHead();
    if (!now.ok()) return now.status();
    if (now->id <= source.head() && source.gap_counts().watched == 0) continue;
    const GapCounts was = source.gap_counts();
    const uint64_t before = sum.events_read;
    const EventId from = source.head();
    if (Status s = b.ReadOn(*now, Proof::kOpenTransactions, GapCheck::kFollow); !s.ok()) return s;
    if (const uint64_t given = source.gap_counts().given_up - was.given_up; given > 0) {
      fmt::print(stderr, "rewind: gave up {} gap(s) in the ids after {} s without a commit\n",
                 given, o.settle_seconds);
      b.SetStatus(CheckpointStatus::kFollowing, given);
    }
    SayFollowed(b, from, before, was);
  }
  return Status::Ok();
}


// The binlog read on a thread of its own: the committed transactions that touched the event
// table, handed to the follower as they come.
class CommitFeed {
 public:
  explicit CommitFeed(std::unique_ptr<BinlogStream> stream) : stream_(std::move(stream)), thread_([this] { Run(); }) {}
  // The stream's Next() returns at least every second (a heartbeat): the thread ends by then.
  ~CommitFeed() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    thread_.join();
  }
  // Waits up to `wait` for a commit (or the stream's end), then takes every commit queued.
  // An error: the stream ended (lost, or the table changed in a way it cannot read).
  Status Take(std::chrono::milliseconds wait, std::vector<Committed>& out) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, wait, [&] { return !queue_.empty() || !error_.ok(); });
    out.assign(std::make_move_iterator(queue_.begin()), std::make_move_iterator(queue_.end()));
    queue_.clear();
    return error_;
  }

 private:
  void Run() {
    for (;;) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (stop_) return;
      }
      Result<std::optional<Committed>> next = stream_->Next();
      std::lock_guard<std::mutex> lock(mu_);
      if (!next.ok()) {
        error_ = next.status();
        cv_.notify_all();
        return;
      }
      if (*next) {
        queue_.push_back(std::move(**next));
        cv_.notify_all();
      }
    }
  }

  std::unique_ptr<BinlogStream> stream_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Committed> queue_;
  Status error_;
  bool stop_ = false;
  std::thread thread_;  // last: it starts once the rest is built
};

// The follower's look at the table that the binlog continues: the position first, then the
// table to its head and every watched hole read again (what committed before the position is
// in the table now), then the binlog from the position.
Result<std::unique_ptr<CommitFeed>> StartFeed(Build& b) {
  const RunSpec& o = b.options();
  if (Status s = b.EnsureAdmin(); !s.ok()) return s;
  Result<std::string> position = ReadBinlogPosition(b.admin());
  if (!position.ok()) return position.status();
  Result<Head> head = b.source().ReadHead();
  if (!head.ok()) return head.status();
  if (Status s = b.ReadOn(*head, Proof::kOpenTransactions, GapCheck::kRecheck); !s.ok()) return s;
  Result<std::unique_ptr<BinlogStream>> stream =
      BinlogStream::Open(o.connection, *position, o.events.table, o.events.id_column);
  if (!stream.ok()) return stream.status();
  return std::make_unique<CommitFeed>(std::move(*stream));
}

// Counts and says the edits of the event table's rows the binlog showed.
void SayEdits(Build& b, uint64_t edited) {
  if (edited == 0) return;
  b.summary().edited_events += edited;
  b.AddEdited(edited);
  fmt::print(stderr,
             "rewind: {} row(s) of the event table {} were updated or deleted since the follow began ({} in all): "
             "events are immutable, so the read models followed may be wrong (rewind status: needs rebuild); "
             "rebuild them (rewind replay without --resume)\n",
             edited, b.options().events.table, b.summary().edited_events);
}

// The least time between two passes that apply commits: commits that come within it share one
// pass. A pass per commit, at 1,000 commits a second, cost 466 µs of rewind's CPU per event and
// tripled the server's (a graph, and a transaction per read model, per pass): perf/follow_latency.
constexpr auto kGather = std::chrono::milliseconds(50);

// The follower by the binlog: commits announced by the feed are applied in passes at most
// every kGather; every --poll seconds it also looks at the table as polling does (its head,
// its watched holes, the server's proof): a net for what the binlog does not show (a session
// with sql_log_bin=0), and what settles a rolled-back insert's hole.
class BinlogFollower {
 public:
  explicit BinlogFollower(Build& b)
      : b_(b),
        source_(b.source()),
        poll_(std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(b.options().poll_seconds))) {}

  Status Run() {
    source_.FollowCommitLog();
    while (!b_.stopping()) {
      if (!feed_) {
        if (Status s = Start(); !s.ok()) return s.With("following the binlog");
      }
      // Commits are applied at most every kGather: those that come meanwhile share a pass.
      if (const auto next = last_pass_ + kGather; !awaited_.empty() && Clock::now() < next) {
        (void)SleepUnlessStopped(next - Clock::now(), &b_.stop_flag());
      }
      Result<bool> took = Take();
      if (!took.ok()) return took.status();
      if (!*took) continue;  // the feed starts again
      if (Clock::now() - last_look_ >= poll_ || (look_at_ && Clock::now() >= *look_at_)) {
        last_look_ = Clock::now();
        // A commit whose ids are unknown: looked at now, and once more a little later (it may
        // not be visible yet: the binlog is written before the engine's commit).
        look_at_ = look_again_ ? std::optional(last_look_ + kGather) : std::nullopt;
        look_again_ = false;
        if (Status s = Pass(/*look=*/true); !s.ok()) return s;
      } else if (!awaited_.empty() && Clock::now() >= last_pass_ + kGather) {
        if (Status s = Pass(/*look=*/false); !s.ok()) return s;
      }
    }
    return Status::Ok();
  }

 private:
  using Clock = std::chrono::steady_clock;

  // (Re)starts the feed. A server restarting may go away between its steps: they are taken
  // again, with backoff.
  Status Start() {
    Result<std::unique_ptr<CommitFeed>> started = StartFeed(b_);
    for (int retry = 1; !started.ok() && started.status().code() == Status::Code::kConnection && retry <= 10 &&
                        SleepUnlessStopped(BackoffDelay(retry), &b_.stop_flag());
         ++retry) {
      started = StartFeed(b_);
    }
    if (!started.ok()) return started.status();
    feed_ = std::move(*started);
    last_look_ = Clock::now();
    return Status::Ok();
  }

  // Takes the commits the feed has (waiting a little when nothing is awaited): the ids no page
  // read are awaited, the edits said; a commit whose ids are unknown (statement format, rows
  // libmariadb cannot decode) has the table looked at. False when the feed was lost and must
  // start again.
  Result<bool> Take() {
    std::vector<Committed> commits;
    const auto wait = std::chrono::milliseconds(awaited_.empty() ? 200 : 0);
    if (Status s = feed_->Take(wait, commits); !s.ok()) {
      if (s.code() != Status::Code::kConnection) return s;
      fmt::print(stderr, "rewind: {}; reading the table again, then the binlog from the server's position now\n",
                 s.message());
      feed_.reset();
      return false;
    }
    uint64_t edited = 0;
    for (const Committed& c : commits) {
      if (c.unreadable) {  // its ids unknown: the table is looked at (Run)
        look_at_ = Clock::now();
        look_again_ = true;
      }
      if (!c.undecodable.empty() && !said_undecodable_) {
        fmt::print(stderr, "rewind: the binlog's rows of {} cannot be decoded here ({}): each of their commits is "
                   "read from the table by a look instead\n", b_.options().events.table, c.undecodable);
        said_undecodable_ = true;
      }
      edited += c.edited;
      for (EventId id : c.inserted) {
        if (id > source_.head() || source_.Watching(id)) awaited_.emplace(id, Clock::now());
      }
    }
    SayEdits(b_, edited);
    return true;
  }

  // A pass to the head read now: the awaited commits, and with `look` the watched holes read
  // again (a look reads on even when the binlog announced nothing).
  Status Pass(bool look) {
    Result<Head> now = source_.ReadHead();
    if (!now.ok()) return now.status();
    const GapCounts was = source_.gap_counts();
    // A look that finds nothing new, no hole and nothing awaited makes no pass (as polling).
    if (now->id <= source_.head() && was.watched == 0 && awaited_.empty()) return Status::Ok();
    const ReplaySummary& sum = b_.summary();
    const uint64_t before = sum.events_read;
    const EventId from = source_.head();
    const bool recheck = was.watched > 0 && (look || awaited_.begin()->first <= source_.head());
    last_pass_ = Clock::now();
    if (Status s = b_.ReadOn(*now, Proof::kOpenTransactions, recheck ? std::optional(GapCheck::kRecheck) : std::nullopt);
        !s.ok()) {
      return s;
    }
    // Read by a page now (at or below where the source read, in no hole): applied. The rest
    // committed but is not visible yet (the binlog is written before the engine's commit), or
    // was deleted since: awaited at most kAwaitAtMost, then left to the looks (its hole stays
    // watched until found or proven final).
    std::erase_if(awaited_, [&](const auto& a) {
      return (a.first <= source_.position() && !source_.Watching(a.first)) || last_pass_ - a.second > kAwaitAtMost;
    });
    SayFollowed(b_, from, before, was);
    return Status::Ok();
  }

  Build& b_;
  EventSource& source_;
  const Clock::duration poll_;
  std::unique_ptr<CommitFeed> feed_;
  // Committed (the binlog says), not read by a pass yet: since when.
  std::map<EventId, Clock::time_point> awaited_;
  static constexpr auto kAwaitAtMost = std::chrono::seconds(10);
  std::optional<Clock::time_point> look_at_;  // a look due before the next --poll
  bool look_again_ = false;                    // and one more kGather after it
  bool said_undecodable_ = false;
  Clock::time_point last_pass_ = Clock::now(), last_look_ = Clock::now();
};

}  // namespace

Result<FollowChoice> ChooseFollowSource(Connection& c, const RunSpec& o, const std::vector<std::string>& order_dependent,
                                        bool proves) {
  if (o.follow_source == FollowSource::kPoll) return FollowChoice{false, "--follow-source poll"};
  std::string why_not;
  std::string checked;
  if (!o.events.id_form.integer()) {
    why_not = "the ids are not integers: the binlog's ids are read from an integer id column only";
  } else if (!order_dependent.empty() && !proves) {
    why_not = fmt::format(
        "{} take(s) events in id order, which needs the server's proof that a hole is final (the PROCESS grant), "
        "and this user lacks it",
        fmt::join(order_dependent, ", "));
  } else {
    Result<BinlogAccess> access = CheckBinlog(c, o.events.table, o.events.id_column);
    if (!access.ok()) return access.status();
    (access->usable ? checked : why_not) = access->why;
  }
  if (why_not.empty()) return FollowChoice{true, checked};
  if (o.follow_source == FollowSource::kBinlog) {
    return Status::InvalidInput(fmt::format(
        "--follow-source binlog: the binlog cannot be followed: {}; --follow-source poll follows by polling the "
        "event table instead",
        why_not));
  }
  return FollowChoice{false, why_not};
}

Status Follow(Build& b) {
  const RunSpec& o = b.options();
  ReplaySummary& sum = b.summary();
  const FollowChoice& choice = b.follow_choice();
  sum.rebuild_before_following = ReplaySummary::Rebuild{sum.events_read, b.seconds()};
  sum.follow_source = choice.binlog ? "binlog" : "poll";
  sum.follow_source_why = choice.why;
  b.SetFollowSource(sum.follow_source);
  if (o.progress != ProgressMode::kQuiet) {
    fmt::print(stderr, "rewind: following new events after id {} by {} ({}) (Ctrl-C to stop)\n",
               IdShown(o.events.id_form, sum.head_id), choice.binlog ? "the server's binlog" : "polling", choice.why);
  }
  Status s = choice.binlog ? BinlogFollower(b).Run() : FollowByPolling(b);
  if (!s.ok()) return s;
  b.SetStatus(CheckpointStatus::kLive, 0);
  // Stopped: a clean end (everything applied is committed to the live tables), which the
  // exit code says as any stop by a signal does (130 / 143).
  sum.interrupted = true;
  return Status::Ok();
}

}  // namespace rw
