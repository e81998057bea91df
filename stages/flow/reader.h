// Reader: keyset-paged reads of the event table into Batches, and the watch on gaps.
//
// Each Next() runs one `SELECT id, payload FROM <table> WHERE id > ? AND id <= <head>
// ORDER BY id LIMIT n` on the id column (never OFFSET, never ORDER BY an unindexed
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
// Several connections (ReaderOptions::connections > 1): after the first page, pages are id
// ranges, `WHERE id > lo AND id <= hi ORDER BY id LIMIT n`, read by one background thread
// per connection at once, and returned in id order: on a server that sends each result from
// one thread, two connections get two. A range's span follows the ids' density (it grows
// over sparse ids); a range that holds more than a batch is cut at the batch (its rest is
// the next page), so a batch never holds more than batch_size events. While Next()'s batch
// is applied, the other connections read on: up to `connections - 1` batches more are
// alive. A throttled reader reads on its one connection, inline.
//
// Thread safety: Next() and the rest from one thread at a time (the reading thread).
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "stages/flow/batch.h"
#include "stages/flow/event_source.h"
#include "stages/db/connection.h"
#include "base/gaps.h"
#include "stages/control/throttle.h"

namespace rw {

struct EventTableOptions {
  std::string table = "stored_events";
  std::string id_column = "id";
  std::string type_column = "eventClass";
  // Non-empty: the class is not a column but this dotted path into the JSON payload (e.g.
  // "headers.__event_type", EventSauce's), read and compared in the server with JSON_VALUE;
  // an event without it (or whose payload is not JSON) is of no class, skipped.
  std::string type_path;
  std::string payload_column = "payload";
  std::string time_column = "createdAt";  // read with --until-time; written by ingest
  std::string uuid_column = "uuid";       // written by ingest
  // The event class that PageVisit projectors handle (compared byte for byte).
  std::string page_visited_class = "App\\Analytics\\PageVisited";
};

// What a run reads of each event: the classes whose payloads it wants (each event comes
// with its index in this list) and the event-table columns declared read models read.
struct ReadScope {
  std::vector<std::string> classes;  // empty: the page-visited class alone
  std::vector<std::string> columns;
  // Per class (aligned with `classes`, or empty): the read models' filters on the event
  // table's columns under which its payload is wanted, any one of them (each all of its
  // equalities). No filter for a class: wanted whatever its columns hold. Sent to the
  // server with the type filter; the read models still apply their own, byte for byte.
  std::vector<std::vector<std::vector<ColumnIn>>> filters;
};

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
  // Prove holes final with the server's open transactions where it can tell (see "Gaps");
  // false for a replica, whose transactions are not the primary's.
  bool prove_with_server = true;
  // Remember the holes judged final for reconciliation (see "Reconciliation" above).
  bool reconcile = false;
};

inline constexpr double kReconcileHorizonSeconds = 3600;
inline constexpr size_t kMaxReconciled = 200'000;

// `sql` padded with a comment to `bytes` long (unchanged when it is as long already): a
// server reads a longer query into a buffer grown to its length and writes that query's
// result through it (ReaderOptions::result_buffer).
std::string PadQuery(std::string sql, size_t bytes);

// How the type column is compared with the wanted classes in the server: exactly (another
// case, a trailing space, an accent is another class) and cheaply. A column in utf8mb4 (or
// utf8mb3, for classes it can hold) is compared in its `_nopad_bin` collation, characters
// that are the bytes sent; a binary column as it is; any other column (or a server without
// the collation) cast to bytes on both sides, which costs the server a copy per row. With a
// type path the compared value is `JSON_VALUE(payload, path)`, in the payload column's
// character set, compared by the same rules.
struct ClassComparison {
  std::string column;          // the type column as compared, e.g. "`eventClass` COLLATE utf8mb4_nopad_bin"
  std::string literal_prefix;  // put before each quoted class ("BINARY " or "")
};
Result<ClassComparison> ExactClassComparison(Connection& connection, const EventTableOptions& events,
                                             const std::vector<std::string>& classes);

// A time column's value as seconds ('YYYY-MM-DD HH:MM:SS[.f]', 'T' or a zone suffix
// accepted, the zone ignored), or nullopt.
std::optional<int64_t> EventTimeSeconds(std::string_view text);

inline constexpr uint64_t kDefaultSettleIds = 10'000;

// The event source of a replay (stages/flow/event_source.h): the event table in MariaDB.
class Reader final : public EventSource {
 public:
  ~Reader() override;
  // Validates the event table (CheckEventTable). Takes ownership of the connection.
  static Result<std::unique_ptr<Reader>> Make(std::unique_ptr<Connection> connection,
                                              const ReaderOptions& options);

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
  Status MoveTo(std::unique_ptr<Connection> connection) override;
  // Pages are sized and paced by `throttle` from now on (null: none). Not owned.
  void SetThrottle(Throttle* throttle) { throttle_ = throttle; }

 private:
  // A watched hole (its first id is its key in watched_).
  struct Hole {
    EventId hi;
    std::optional<int64_t> time;  // of the event just above it (unknown: trailing a page)
    std::chrono::steady_clock::time_point since;
  };
  // One page: the ids in (lo, hi], at most `limit` of them, read into `batch`.
  struct Page {
    EventId lo = 0, hi = 0;
    size_t limit = 0;
    std::unique_ptr<Batch> batch;
    EventId last_id = 0;  // the last id read
    Status status;
    bool started = false, done = false;
    Head known;  // the head known committed when the page was started
    EventId final_below = 0;  // final_below_ when the page was started
    std::vector<std::optional<int64_t>> gap_times;  // per batch gap: the time of the event above it
    std::vector<std::optional<int64_t>> below_times;  // per batch gap: the time of the event below it
    std::optional<int64_t> first_time;               // the time of the page's first event
    bool any = false;                                // the page read an event
  };
  // A connection of its own and the thread that reads pages on it, one at a time.
  struct Worker {
    Connection* connection = nullptr;
    Page* page = nullptr;  // being read; null when idle
    std::thread thread;
  };
  Reader(std::unique_ptr<Connection> c, std::vector<std::unique_ptr<Connection>> helpers,
         const ReaderOptions& o, const ClassComparison& compare, size_t query_bytes, int time_index,
         const Head& known);
  // `page`'s query `sql`, padded with a comment to query_bytes_ (ReaderOptions::
  // result_buffer) when the page may bring enough events to gain from it.
  std::string Padded(std::string sql, const Page& page) const;
  // Ends `page` at `at` and returns the rest of its range, (at, hi], as a page not started.
  static std::unique_ptr<Page> SplitOff(Page& page, EventId at);
  Status ReadPage(Connection& connection, const std::string& sql, Page& page);
  // Reads `page` on `connection`, retrying a lost connection; sets status, last_id.
  void ReadRange(Connection& connection, Page& page);
  // Batch bookkeeping once a page is read: the gaps, what it covers, the span; the batch.
  Result<std::unique_ptr<Batch>> Finish(Page& page);
  Result<std::unique_ptr<Batch>> NextInline();
  Result<std::unique_ptr<Batch>> NextFromWorkers();
  void StartWorkers();
  void StartPages();
  void WaitForStartedPages();
  // Re-reads the due holes (and, for a check, every watched one) into a late batch.
  Result<std::unique_ptr<Batch>> ReadGaps(std::optional<GapCheck> kind);
  std::unique_ptr<Batch> NewBatch();
  // Judges the page's holes (final at once, or watched) and keeps only watched ones in the
  // batch's gaps; settles the holes trailing earlier pages that this page's first event
  // proves final.
  void JudgeGaps(Page& page);
  // Watches a hole (since: when first seen, default now); gives up the lowest beyond kMaxWatched.
  void Watch(IdRange range, std::optional<int64_t> time,
             std::optional<std::chrono::steady_clock::time_point> since = std::nullopt);
  // Records `head` as a sample for the proof (when it is newer than the last one).
  void Sample(const Head& head);
  // Moves the watched holes that `known_` proves final into due_.
  void MarkDue();
  // Whether a hole whose upper neighbour was written at `time` is final: proven below
  // `final_below`, or by the fallback rule against `known` ("Gaps").
  bool FinalAgainst(const IdRange& hole, const std::optional<int64_t>& time, const Head& known,
                    EventId final_below) const;
  bool FallbackFinal(const IdRange& hole, const std::optional<int64_t>& time, const Head& known) const;
  // The fallback rule's parts: written settle_seconds before the head (its time capped at
  // the server's clock); at least `ids` ids below the head.
  bool AgedBy(const std::optional<int64_t>& time, const Head& known) const;
  static bool FarBelow(const IdRange& hole, const Head& known, EventId ids);
  void Unwatch(std::map<EventId, Hole>::iterator it);
  static constexpr size_t kMaxWatched = 100'000;  // ranges; beyond, the lowest are given up
  // Reads the events of `ranges` (any order) into `batch`, their ids into `found`.
  Status ReadIds(std::vector<IdRange> ranges, Batch& batch, std::vector<EventId>& found);
  // A hole settled as final, remembered for reconciliation (ReaderOptions::reconcile).
  void RememberFinal(IdRange range);
  // Forgets the oldest remembered holes: beyond kMaxReconciled, and those judged before `older_than`.
  void ForgetFinals(std::chrono::steady_clock::time_point older_than);
  Result<std::unique_ptr<Batch>> Reconcile();

  std::unique_ptr<Connection> connection_;
  const ReaderOptions options_;
  EventId head_id_;
  std::string select_;  // SELECT id, payload-or-NULL[, class index][, columns] FROM table
  std::string compare_column_;  // the class comparison select_ was made with
  bool with_class_ = false;  // the select returns the class index
  size_t query_bytes_ = 0;   // what a page query is padded to (0: not padded)
  EventId after_id_;
  uint64_t next_sequence_ = 0;
  size_t last_payload_bytes_ = 0;  // to reserve the next batch's buffer in one go
  const std::shared_ptr<BufferPool> pool_ = std::make_shared<BufferPool>();
  int time_index_ = -1;        // the time column's place in select_ (-1: judged by ids)
  bool proves_ = false;  // ProveByOpenTransactions has INNODB_TRX to look at (and may)
  // The proof's samples: (server time in microseconds, head id visible then), ids rising;
  // ids up to final_below_ are proven final.
  std::deque<std::pair<int64_t, EventId>> samples_;
  EventId final_below_ = kBeforeFirstId;
  bool proof_stalled_ = false;  // a transaction open longer than settle_seconds holds it
  bool warned_stall_ = false;
  std::chrono::steady_clock::time_point last_proof_{};
  static constexpr size_t kMaxSamples = 4096;  // beyond, the newest is overwritten
  static constexpr int64_t kProofMarginUs = 50'000;
  std::unique_ptr<Connection> proof_;  // the proof's own connection (its canary transaction)
  // On `c`: the server's clock, then in a transaction begun after it (the canary) the
  // oldest open writer's start (seconds, NULL: none), that clock, and whether INNODB_TRX
  // shows the canary.
  static Result<Rows> ProofQuery(Connection& c);
  // One proof now (ProveByOpenTransactions without its pacing).
  void Prove();
  EventId settle_ids_ = 0;     // by ids: how far below the head a hole is final
  Head known_;                 // the newest head read (committed when read)
  std::map<EventId, Hole> watched_;                  // lo -> hole
  std::set<std::pair<int64_t, EventId>> by_time_;    // (time, lo) of the watched holes with a time
  // Holes that trail a page (no event above them read yet), with the head known when read.
  std::vector<std::pair<IdRange, Head>> trailing_;
  GapSet due_;                    // proven final, to be read once more
  std::vector<IdRange> settled_;  // to hand on with the next batch
  bool warned_cap_ = false;
  uint64_t peak_watched_ = 0;
  std::optional<GapCheck> queued_check_;
  uint64_t late_events_ = 0;
  uint64_t gaps_given_up_ = 0;
  // Reconciliation: the holes judged final, and when (oldest first).
  GapSet final_holes_;
  std::deque<std::pair<std::chrono::steady_clock::time_point, IdRange>> final_order_;
  bool reconcile_queued_ = false;
  uint64_t reconciled_events_ = 0;
  double reconcile_seconds_ = 0;
  Throttle* throttle_ = nullptr;
  // Several connections: the pages planned, in id order (the first may be in a worker),
  // the ids planned up to, and the span of the next range.
  std::vector<std::unique_ptr<Connection>> helpers_;  // the others (the first is connection_)
  std::deque<std::unique_ptr<Page>> pages_;
  EventId planned_to_ = 0;
  EventId span_ = 0;
  std::vector<Worker> workers_;
  std::mutex mu_;
  std::condition_variable wake_, read_;
  bool quit_ = false;
};

// Whether the server can say which transactions are open, for the proof that holes are
// final: InnoDB's INNODB_TRX, readable with the PROCESS grant, and not on a Galera node (it
// shows only that node's transactions).
bool CanSeeOpenTransactions(Connection& connection);

// How the fallback rule judges holes on this table (see "Gaps"): "" when by the time column,
// else why by ids alone ("--settle-ids"; the table has no time column; its head's time does
// not parse). The reader and the dry run ask this one function.
Result<std::string> WhyJudgedByIds(Connection& connection, const EventTableOptions& events, uint64_t settle_ids);

// The highest event id in the table (kBeforeFirstId when it is empty).
Result<EventId> ReadHeadId(Connection& connection, const EventTableOptions& events);

// Checks the event table before any work: it exists; the type and payload columns (and,
// `with_time_column`, the time column) exist; the id column is an integer type, NOT NULL
// and unique (the primary key or a one-column unique index). A clear message naming the
// problem otherwise.
Status CheckEventTable(Connection& connection, const EventTableOptions& events,
                       bool with_time_column = false);

// Checks that the event table has each of `columns` (the fields declared read models read).
Status CheckReadColumns(Connection& connection, const EventTableOptions& events,
                        const std::vector<std::string>& columns);

}  // namespace rw
