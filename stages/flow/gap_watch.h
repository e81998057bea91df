// GapWatch: the judgement of the holes in the ids that a reader meets (base/gaps.h), with
// no server in it: which holes are final at once, which are watched, when a watched one
// becomes due (read once more, then settled), what a re-read settles, and which holes
// judged final are remembered for reconciliation. The Reader (stages/flow/reader.h) reads
// pages and re-reads holes and hands this unit what it saw; the rules, their reasons and
// the proof by the server's open transactions are described there, under "Gaps" and
// "Reconciliation". Every operation is logarithmic in the holes watched.
//
// The wall clock (how long a hole has been watched) is read through GapWatchOptions::now,
// so that tests can move it.
//
// Thread safety: thread-compatible (the reading thread owns it).
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "base/gaps.h"
#include "stages/flow/event_source.h"

namespace rw {

inline constexpr uint64_t kDefaultSettleIds = 10'000;
inline constexpr double kReconcileHorizonSeconds = 3600;
inline constexpr size_t kMaxReconciled = 200'000;

struct GapWatchOptions {
  // How long an application transaction may stay open (ReaderOptions::settle_seconds).
  double settle_seconds = 60;
  // Judge holes by ids: final once this many ids below the head (0: by the time column,
  // or kDefaultSettleIds when holes have no times).
  uint64_t settle_ids = 0;
  // Nonzero: the ids carry their time (ULID, UUIDv7: base/id_form.h), this many a second, and
  // judged by ids a hole is final once settle_seconds' worth of ids below the head.
  EventId ids_per_second = 0;
  // Holes come with the time of the event above them (the table has a time column).
  bool by_time = true;
  // Remember the holes settled as final for reconciliation.
  bool reconcile = false;
  std::function<std::chrono::steady_clock::time_point()> now = [] { return std::chrono::steady_clock::now(); };
};

// What a page's read saw of its holes, beside the batch's gaps (one entry per gap).
struct PageHoles {
  Head known;                       // the head known committed when the page was started
  EventId final_below = 0;          // what was proven final when the page was started
  std::vector<std::optional<int64_t>> gap_times;    // the time of the event above each gap
  std::vector<std::optional<int64_t>> below_times;  // the time of the event below each gap
  std::optional<int64_t> first_time;                // the time of the page's first event
  bool any = false;                                 // the page read an event
};

class GapWatch {
 public:
  // `proves`: holes are proven final by the server's open transactions (Proven()).
  GapWatch(const GapWatchOptions& options, bool proves);

  // A page is started: what it will be judged against.
  PageHoles StartPage() const { return PageHoles{known_, final_below_, {}, {}, {}, false}; }
  // Judges a page's holes (`gaps`, of a page that read up to `last_id` of (.., hi]): those
  // final at once are dropped from `gaps`, the others are watched; and the holes trailing
  // earlier pages that this page's first event proves final are settled.
  void JudgePage(std::vector<IdRange>& gaps, const PageHoles& page, EventId hi, EventId last_id);
  // Watches a hole (since: when first seen, default now); gives up the lowest beyond kMaxWatched.
  void Watch(IdRange range, std::optional<int64_t> time,
             std::optional<std::chrono::steady_clock::time_point> since = std::nullopt);

  // A newer head: watched holes it makes final by the fallback rule become due.
  void ExtendHead(const Head& head);
  // Records `head` as a sample for the proof (when it is newer than the last one).
  void Sample(const Head& head);
  // A proof's outcome: the server's clock (µs) and the start of its oldest open writing
  // transaction (µs, nullopt: none), read when the view of open transactions was fresh.
  // Every head sampled before both is final; watched holes below it become due.
  void Proven(int64_t server_us, std::optional<int64_t> oldest_writer_us);
  // Starts the proof afresh (another server): its samples and what it proved are dropped.
  void ResetProof(bool proves);
  bool proves() const { return proves_; }
  // Sampled heads wait for a proof.
  bool awaits_proof() const { return proves_ && !samples_.empty(); }
  bool proof_stalled() const { return proof_stalled_; }
  EventId final_below() const { return final_below_; }

  // Whether any hole is watched or due (a check has something to read).
  bool watching() const { return !watched_.empty() || !due_.empty(); }
  // Whether `id` lies in a hole watched or due: not read yet, and still awaited.
  bool Watching(EventId id) const;
  // From now on a commit log (the server's binlog, stages/db/binlog.h) says when an id
  // commits: a hole is final only by the server's proof or a final check, never by the
  // fallback rule or by how long it was watched (the wall clock).
  void FollowCommitLog() { commit_log_ = true; }
  bool follows_commit_log() const { return commit_log_; }
  bool has_due() const { return !due_.empty(); }
  // The holes a re-read reads: the due ones, and for a check every watched one.
  std::vector<IdRange> ToRead(std::optional<GapCheck> kind) const;
  // Settles after a re-read of ToRead(kind) found the ids `found`: the ids found, the due
  // holes, and as `kind` says (a final check every hole; following the holes watched
  // settle_seconds, given up). Returns what is settled (with what earlier pages settled).
  std::vector<IdRange> Settle(std::optional<GapCheck> kind, const std::vector<EventId>& found);
  // What earlier pages settled, to hand on with the next batch.
  std::vector<IdRange> TakeSettled() { return std::exchange(settled_, {}); }
  bool has_settled() const { return !settled_.empty(); }

  // The holes judged final and remembered (those older than kReconcileHorizonSeconds
  // forgotten first), for a reconciliation to read again.
  std::vector<IdRange> ToReconcile();
  // A reconciliation found `found`: forgotten, and returned as settled ranges.
  std::vector<IdRange> Reconciled(const std::vector<EventId>& found);

  // The counts (reconcile_seconds is the reader's).
  GapCounts counts() const;

  static constexpr size_t kMaxWatched = 100'000;  // ranges; beyond, the lowest are given up
  // A sample proves once the server's clock is this far past it (the instant between a
  // statement's NOW() and its snapshot).
  static constexpr int64_t kProofMarginUs = 50'000;

 private:
  // A watched hole (its first id is its key in watched_).
  struct Hole {
    EventId hi;
    std::optional<int64_t> time;  // of the event just above it (unknown: trailing a page)
    std::chrono::steady_clock::time_point since;
  };
  // Moves the watched holes that known_ (and the proof) make final into due_.
  void MarkDue();
  // Whether a hole whose upper neighbour was written at `time` is final: proven below
  // `final_below`, or by the fallback rule against `known`.
  bool FinalAgainst(const IdRange& hole, const std::optional<int64_t>& time, const Head& known,
                    EventId final_below) const;
  bool FallbackFinal(const IdRange& hole, const std::optional<int64_t>& time, const Head& known) const;
  // The fallback rule's parts: written settle_seconds before the head (its time capped at
  // the server's clock); at least `ids` ids below the head.
  bool AgedBy(const std::optional<int64_t>& time, const Head& known) const;
  static bool FarBelow(const IdRange& hole, const Head& known, EventId ids);
  void Unwatch(std::map<EventId, Hole>::iterator it);
  // Settles a found id inside a watched hole: the hole is split around it.
  void Found(EventId id);
  void GiveUp(std::map<EventId, Hole>::iterator it, std::vector<IdRange>& settled);
  // A hole settled as final, remembered for reconciliation.
  void RememberFinal(IdRange range);
  // Forgets the oldest remembered holes: beyond kMaxReconciled, and those judged before `older_than`.
  void ForgetFinals(std::chrono::steady_clock::time_point older_than);

  const GapWatchOptions options_;
  EventId settle_ids_ = 0;  // by ids: how far below the head a hole is final
  bool proves_;
  // The proof's samples: (server time in microseconds, head id visible then), ids rising;
  // ids up to final_below_ are proven final.
  std::deque<std::pair<int64_t, EventId>> samples_;
  EventId final_below_ = kBeforeFirstId;
  bool proof_stalled_ = false;  // a transaction open longer than settle_seconds holds it
  bool commit_log_ = false;      // FollowCommitLog(): no fallback rule, no giving up by time
  bool warned_stall_ = false;
  static constexpr size_t kMaxSamples = 4096;  // beyond, the newest is overwritten
  Head known_;                                     // the newest head read (committed when read)
  std::map<EventId, Hole> watched_;                // lo -> hole
  std::set<std::pair<int64_t, EventId>> by_time_;  // (time, lo) of the watched holes with a time
  // Holes that trail a page (no event above them read yet), with the head known when read.
  std::vector<std::pair<IdRange, Head>> trailing_;
  GapSet due_;                    // proven final, to be read once more
  std::vector<IdRange> settled_;  // to hand on with the next batch
  bool warned_cap_ = false;
  uint64_t peak_watched_ = 0;
  uint64_t late_events_ = 0;
  uint64_t gaps_given_up_ = 0;
  // Reconciliation: the holes judged final, and when (oldest first).
  GapSet final_holes_;
  std::deque<std::pair<std::chrono::steady_clock::time_point, IdRange>> final_order_;
  uint64_t reconciled_events_ = 0;
};

}  // namespace rw
