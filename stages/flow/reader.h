// Reader: keyset-paged reads of the event table into Batches, and the watch on gaps: the
// reader reads and reads again; which holes are final, watched or due is judged by the
// GapWatch (stages/flow/gap_watch.h), a unit with no server in it, by the rules below.
//
// Each Next() runs one `SELECT id, payload FROM <table> WHERE id > ? AND id <= <head>
// ORDER BY id LIMIT n` (its SQL, and every other statement on the event table, in
// stages/flow/page_query.h) on the id column (never OFFSET, never ORDER BY an unindexed
// column) and streams it completely before returning, so no result stream stays open
// while the pipeline applies backpressure. Events whose type no selected projector
// handles come back with a NULL payload (the filter runs in the server, exactly — see
// ClassComparison — their payloads never cross the wire) and are counted as skipped.
//
// Gaps (see base/gaps.h): an id missing between two events read may belong to a
// transaction that is still open. It matters only while that transaction may still commit.
// A missing id ("hole") is final when the reader can show that no transaction that could
// hold it is still open, in one of two ways:
//  - By the server (the default, where it can tell: INNODB_TRX readable, the PROCESS grant,
//    not a Galera node, not a replica). Ids are taken from the auto-increment counter in
//    increasing order, so every id below a head H that was visible at the server's time t
//    was taken before t, by a transaction that began before t. The reader samples the head
//    (H, t) whenever it reads it; once every open writing transaction began after t (their
//    trx_started, in whole seconds, against the server's own NOW(6)), every id <= H is
//    committed or never will be: a hole below the highest such H ("final_below") read after
//    that proof is final. No application clock takes part. INNODB_TRX is a cache, refreshed
//    only when nobody read it for 0.1 s: each proof runs in a transaction of its own (the
//    canary, begun after the clock it compares with) and counts only when the view shows
//    the canary, i.e. was built after it; and proofs come at most every 250 ms. Make() makes
//    the first proof before the first page (waiting up to 1.5 s for the writers open at the
//    start to end), so rebuilding history watches nothing.
//    A transaction open longer than settle_seconds stalls the proof: holes are then judged
//    by the fallback rule below (said once on the console).
//  - By the fallback rule, where the server cannot tell. No one clock decides: a hole is
//    final at once only when (a) the event above it (the earlier of it and the next one's
//    time; and never earlier than the event below it, so that events from a slow clock
//    above a hole cannot age it) was written `settle_seconds` before the head, the head's
//    time taken no later than the server's clock when the head was read (a writer whose
//    clock runs ahead cannot age the holes below it), and (b) it lies at least
//    kDefaultSettleIds ids below that head, or (a watched hole) it has been watched
//    settle_seconds by this process's own clock. With settle_ids > 0 (or a table without the
//    time column), by ids alone: final once settle_ids ids below the head (Axon's
//    maxGapOffset).
// Every other hole is watched, in structures whose every operation is logarithmic, and
// handed to the projectors in the batch's `gaps`. A watched hole becomes *due* when a proof
// (or, by the fallback rule, a newer head: ExtendHead) makes it final, and then is read once
// more and settled: found (a late event) or final. QueueGapCheck() re-reads every watched
// hole: a recheck settles what it found (and, following, what was watched settle_seconds by
// the wall clock: given up, counted); a final check (under the cut-over's lock, when no
// insert is open) settles every hole. Settled ranges reach the projectors in a later batch's
// `settled`. At most kMaxWatched holes are watched; beyond, the lowest are given up.
//
// Reconciliation (ReaderOptions::reconcile, when following): a hole judged final may still
// fill if the judgement was wrong (the fallback rule met a transaction open longer than it
// allows, or a proof was wrong). The holes settled as final (read once more and found
// empty, or given up) are remembered for kReconcileHorizonSeconds, at most kMaxReconciled
// ranges (the oldest forgotten first), and QueueReconcile() reads them all again: what it
// finds comes in a reconciled batch (stages/flow/batch.h), each id once, and is forgotten.
// The cut-over's final check forgets them all: under its lock no insert is open, so every
// hole below the head is final for good; following reconciles what is judged after it.
//
// A lost connection (server restart) is retried: reconnect with backoff, reread the page.
//
// Several servers (ReaderOptions::more_servers: replicas beside the connection's own, from
// --read-host/--read-socket, each checked at the start, pipeline/replay/read_replica.h):
// connection i reads from server i mod the count (at least one connection each), so each
// page, an id range, comes whole from one replica. A replica whose connection is lost and
// cannot be reached again at once is dropped (said on the console): its page is read again,
// from its first id, on the next replica still serving (the primary when none is left,
// which holds every event), so no event is lost or read twice. A replica that stops
// replicating mid-run costs nothing: it was shown to hold every event up to the head before
// the first page, and what comes after is read on the primary (MoveToPrimary).
//
// Several connections (ReaderOptions::connections > 1): after the first page, pages are id
// ranges read ahead by one thread per connection and returned in id order (the Prefetch,
// stages/flow/prefetch.h): while Next()'s batch is applied, the other connections read on,
// and up to `connections - 1` batches more are alive. A throttled reader reads on its one
// connection, inline.
//
// Thread safety: Next() and the rest from one thread at a time (the reading thread).
#pragma once

#include <chrono>
#include <deque>
#include <functional>
#include <memory>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "stages/flow/batch.h"
#include "stages/flow/event_source.h"
#include "stages/flow/gap_watch.h"
#include "stages/flow/page_query.h"
#include "stages/flow/prefetch.h"
#include "stages/db/connection.h"
#include "base/gaps.h"
#include "stages/control/throttle.h"

namespace rw {

struct ReaderOptions {
  EventTableOptions events;
  ReadScope scope;
  // Events per batch. Larger batches amortises per-batch work; memory in flight is
  // about batch_size x (max_in_flight + connections) x payload size.
  size_t batch_size = 20000;
  EventId start_after_id = kBeforeFirstId;  // resume point: read ids > this
  EventId head_id = kBeforeFirstId;         // read ids <= this
  GapSet watched;                           // gaps left open by an interrupted run
  // How long an application transaction may stay open: a hole is final once the event
  // table's time column has moved this far past it (and, following, once it was watched
  // this long by the wall clock). See "Gaps" above.
  double settle_seconds = 60;
  // Judge holes by ids instead: final once this many ids below the head (0: by the time
  // column; a table without it is judged by kDefaultSettleIds).
  uint64_t settle_ids = 0;
  // Events whose time column is after this ('YYYY-MM-DD HH:MM:SS', as stored) are skipped
  // in the server like events of other classes ("" = none).
  std::string until_time;
  // Connections reading pages at once (see above); 1 reads inline, one page per Next().
  size_t connections = 1;
  // Bytes the server's network buffer is grown to for each page it sends (0: left as it
  // is). A server writes a result through the buffer it read the query into, which is
  // net_buffer_length (16 KB by default) unless the query was longer: so each page query
  // is padded with a comment to this length, and its rows leave in writes of this size
  // instead of 16 KB ones (the server's buffer is shrunk back after each query; nothing
  // of the server's configuration changes). Not padded when the server's own
  // net_buffer_length is already as large, never beyond half its max_allowed_packet, and
  // not for a page that cannot bring 256 events (a trickle in follow mode).
  size_t result_buffer = 0;
  // The primary, which MoveToPrimary() reads from after a bulk read from a replica.
  ConnectionOptions primary;
  // Other replicas holding the same events as the connection's server: pages are spread
  // over them all (see "Several servers" above). Empty: one server.
  std::vector<ConnectionOptions> more_servers;
  // The connection's server (and more_servers) are replicas of `primary`: one that fails is
  // dropped, and the primary reads its pages when none is left.
  bool replicas = false;
  // Prove holes final with the server's open transactions where it can tell (see "Gaps");
  // false for a replica, whose transactions are not the primary's.
  bool prove_with_server = true;
  // Remember the holes judged final for reconciliation (see "Reconciliation" above).
  bool reconcile = false;
};

// The event source of a replay (stages/flow/event_source.h): the event table in MariaDB.
class Reader final : public EventSource {
 public:
  ~Reader() override;
  // Validates the event table (CheckEventTable). Takes ownership of the connection.
  // (options.events.id_form is found here, from the id column.)
  static Result<std::unique_ptr<Reader>> Make(std::unique_ptr<Connection> connection, ReaderOptions options);

  // The next batch, or nullptr when every id up to head_id has been read and no gap
  // check is queued.
  Result<std::unique_ptr<Batch>> Next() override;

  EventId position() const override { return after_id_; }
  EventId head() const override { return head_id_; }
  uint64_t next_sequence() const override { return next_sequence_; }
  // Reads the event table's head now (on the reader's connection). REQUIRES: no Next()
  // under way.
  Result<Head> ReadHead() override;
  // Moves the end of the range to `head` (new events were appended) and judges the
  // watched holes against it: those it proves final are read once more by the next
  // Next(). REQUIRES: head.id >= the current head.
  void ExtendHead(const Head& head) override;
  // The next Next() returns a late batch first (see above).
  void QueueGapCheck(GapCheck kind) override { queued_check_ = kind; }
  // The next Next() reads again the holes judged final and returns a reconciled batch
  // (see "Reconciliation"), when there are any.
  void QueueReconcile() override { reconcile_queued_ = true; }
  GapCounts gap_counts() const override;
  bool Watching(EventId id) const override { return gaps_.Watching(id); }
  void FollowCommitLog() override { gaps_.FollowCommitLog(); }
  // Where the server shows its open transactions (see "Gaps"): proves final the ids below
  // every head sampled before all of them began, and marks due the watched holes among
  // them, so that each is read once more and settled. Nothing happens without that view
  // (proves_with_server false). Next() calls it too, about once a second while holes
  // are watched. REQUIRES: no Next() under way.
  Status ProveByOpenTransactions() override;
  // Reads from `connection`'s server from now on, on it and on helpers opened there (the
  // primary, after a replica's bulk read: pipeline/replay/read_replica.h); pages already
  // read stay. Fails, changing nothing, when that server compares the event classes
  // otherwise. REQUIRES: no Next() under way.
  Status MoveToPrimary() override;
  // Pages are sized and paced by `throttle` from now on (null: none). Not owned.
  void SetThrottle(Throttle* throttle) { throttle_ = throttle; }

 private:
  Reader(std::unique_ptr<Connection> c, std::vector<std::unique_ptr<Connection>> helpers,
         const ReaderOptions& o, const ClassComparison& compare, size_t query_bytes, int time_index,
         const Head& known, bool proves);
  // `page`'s query `sql`, padded with a comment to query_bytes_ (ReaderOptions::
  // result_buffer) when the page may bring enough events to gain from it.
  std::string Padded(std::string sql, const EventPage& page) const;
  Status ReadPage(Connection& connection, const std::string& sql, EventPage& page);
  // Reads `page` on `connection`, retrying a lost connection; sets status, last_id.
  void ReadRange(Connection& connection, EventPage& page);
  // Batch bookkeeping once a page is read: the gaps judged, what it covers; the batch.
  Result<std::unique_ptr<Batch>> Finish(EventPage& page);
  Result<std::unique_ptr<Batch>> NextInline();
  Result<std::unique_ptr<Batch>> NextFromWorkers();
  // Re-reads the due holes (and, for a check, every watched one) into a late batch.
  Result<std::unique_ptr<Batch>> ReadGaps(std::optional<GapCheck> kind);
  std::unique_ptr<Batch> NewBatch();
  // Reads the events of `ranges` (any order) into `batch`, their ids into `found`.
  Status ReadIds(std::vector<IdRange> ranges, Batch& batch, std::vector<EventId>& found);
  Result<std::unique_ptr<Batch>> Reconcile();
  // On `c`: the server's clock, then in a transaction begun after it (the canary) the
  // oldest open writer's start (seconds, NULL: none), that clock, and whether INNODB_TRX
  // shows the canary.
  static Result<Rows> ProofQuery(Connection& c);
  // One proof now (ProveByOpenTransactions without its pacing).
  void Prove();

  // Runs `attempt` (safe to redo) on `c`: on a replica (see "Several servers"), a lost
  // connection reconnects once, then drops the replica and moves `c` to the next one serving
  // (or the primary) and runs it again there; elsewhere, lost connections are retried with
  // backoff (stages/db/retry.h). Thread-safe (workers call it on their own connections).
  Status OnReadServer(Connection& c, const std::function<Status()>& attempt);
  // Counts `events` read on `c`'s server (one page).
  void CountRead(const Connection& c, uint64_t events);
  // What each replica served: "h1:3306 1,000 events in 4 pages; h2:3306 ... (dropped: ...)".
  std::string Shares() const;

  struct ReadServer {
    ConnectionOptions where;
    uint64_t events = 0, pages = 0;
    std::string dropped;  // why it was dropped ("" while it serves)
  };
  // The replicas read while reading replicas (empty with one server, and after MoveToPrimary).
  std::vector<ReadServer> servers_;
  mutable std::mutex servers_mu_;
  size_t next_server_ = 0;  // where the next dropped replica's connection goes (round robin)

  std::unique_ptr<Connection> connection_;
  const ReaderOptions options_;
  EventId head_id_;
  const PageQuery query_;  // the event table's SQL
  size_t query_bytes_ = 0;   // what a page query is padded to (0: not padded)
  EventId after_id_;
  uint64_t next_sequence_ = 0;
  size_t last_payload_bytes_ = 0;  // to reserve the next batch's buffer in one go
  const std::shared_ptr<BufferPool> pool_ = std::make_shared<BufferPool>();
  GapWatch gaps_;             // the holes met, judged (proven with INNODB_TRX where it can)
  std::chrono::steady_clock::time_point last_proof_{};
  std::unique_ptr<Connection> proof_;  // the proof's own connection (its canary transaction)
  std::optional<GapCheck> queued_check_;
  bool reconcile_queued_ = false;
  double reconcile_seconds_ = 0;
  Throttle* throttle_ = nullptr;
  std::vector<std::unique_ptr<Connection>> helpers_;  // the others (the first is connection_)
  // Several connections: pages read ahead on each (last: its workers end first).
  Prefetch prefetch_;
};

// Whether the server can say which transactions are open, for the proof that holes are
// final: InnoDB's INNODB_TRX, readable with the PROCESS grant, and not on a Galera node (it
// shows only that node's transactions).
bool CanSeeOpenTransactions(Connection& connection);

}  // namespace rw
