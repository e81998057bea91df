#include "stages/flow/reader.h"
#include "stages/db/retry.h"

#include <fmt/core.h>
#include <simdjson.h>

#include <algorithm>
#include <cstdlib>
#include <thread>

#include "base/fault.h"
#include "stages/control/console.h"

namespace rw {

bool CanSeeOpenTransactions(Connection& c) {
  Result<std::optional<std::string>> wsrep = c.QueryValue("SELECT @@wsrep_on");
  if (wsrep.ok() && *wsrep && **wsrep != "0" && **wsrep != "OFF") return false;
  return c.QueryValue("SELECT COUNT(*) FROM information_schema.INNODB_TRX").ok();
}

Reader::Reader(std::unique_ptr<Connection> c, std::vector<std::unique_ptr<Connection>> helpers,
               const ReaderOptions& o, const ClassComparison& compare, size_t query_bytes,
               int time_index, const Head& known, bool proves)
    : connection_(std::move(c)),
      options_(o),
      head_id_(o.head_id),
      query_(*connection_, o.events, o.scope, o.until_time, compare, time_index >= 0),
      query_bytes_(query_bytes),
      after_id_(o.start_after_id),
      gaps_(GapWatchOptions{.settle_seconds = o.settle_seconds,
                            .settle_ids = o.settle_ids,
                            .ids_per_second = TimeOrdered(o.events.id_form) ? 1000 * kIdsPerMillisecond : 0,
                            .by_time = time_index >= 0,
                            .reconcile = o.reconcile},
            proves),
      helpers_(std::move(helpers)),
      prefetch_(
          o.batch_size, !o.events.id_form.integer(), [this](Connection& c, EventPage& page) { ReadRange(c, page); },
          [this](EventPage& page) {
            page.batch = NewBatch();
            page.holes = gaps_.StartPage();
          }) {
  // Holes an interrupted run was watching: read again at once; their neighbours' times are
  // not known, so each is judged as written when the run starts.
  gaps_.ExtendHead(known);  // the first sample, for the first proof
  for (const IdRange& r : options_.watched.ranges()) gaps_.Watch(r, known.time);
  if (gaps_.watching()) queued_check_ = GapCheck::kRecheck;
}

namespace {

// What `where` pads a page query to, when it compares the event classes as `column` (the
// first server does): a server that compares them otherwise would select other events.
Result<size_t> SameComparison(const ConnectionOptions& where, const ReaderOptions& options, const std::string& column) {
  Result<std::unique_ptr<Connection>> c = Connection::Open(where);
  if (!c.ok()) return c.status().With("connecting to a server the reader may read from");
  Result<ClassComparison> compare =
      ExactClassComparison(**c, options.events, WantedClasses(options.events, options.scope));
  if (!compare.ok()) return compare.status();
  if (compare->column != column) {
    return Status::InvalidInput(fmt::format(
        "{} compares the event classes as {}, the first read server as {} (another server version?): read "
        "from servers of one version",
        where.Describe(), compare->column, column));
  }
  return PageQueryBytes(**c, options.result_buffer);
}

bool SameServer(const ConnectionOptions& a, const ConnectionOptions& b) {
  return a.host == b.host && a.port == b.port && a.socket == b.socket;
}

}  // namespace

Result<std::unique_ptr<Reader>> Reader::Make(std::unique_ptr<Connection> connection, ReaderOptions options) {
  if (options.batch_size == 0) return Status::InvalidInput("batch size must be positive");
  if (Status s = CheckEventTable(*connection, options.events, !options.until_time.empty()); !s.ok()) {
    return s;
  }
  if (Status s = CheckReadColumns(*connection, options.events, options.scope.columns); !s.ok()) return s;
  Result<ClassComparison> compare = ExactClassComparison(*connection, options.events, WantedClasses(options.events, options.scope));
  if (!compare.ok()) return compare.status();
  Result<size_t> query_bytes = PageQueryBytes(*connection, options.result_buffer);
  if (!query_bytes.ok()) return query_bytes.status();
  // Holes are judged by the time column when the table has it (and its head's time
  // parses), else by ids.
  Result<std::string> by_ids = WhyJudgedByIds(*connection, options.events, options.settle_ids);
  if (!by_ids.ok()) return by_ids.status();
  const int time_index = by_ids->empty() ? 0 : -1;
  Result<Head> known = HeadOf(*connection, options.events, time_index >= 0);
  if (!known.ok()) return known.status();
  // Every server a page may be read from (the replicas and, should they all fail, the
  // primary) compares the classes as this one does, and takes the padded query.
  std::vector<ConnectionOptions> servers{connection->options()};
  servers.insert(servers.end(), options.more_servers.begin(), options.more_servers.end());
  std::vector<ConnectionOptions> checked = servers;
  if (options.replicas) checked.push_back(options.primary);
  size_t padding = *query_bytes;
  for (size_t i = 1; i < checked.size(); ++i) {
    Result<size_t> other = SameComparison(checked[i], options, compare->column);
    if (!other.ok()) return other.status();
    padding = std::min(padding, *other);
  }
  // At least one connection on each server: connection i reads from server i mod their count.
  std::vector<std::unique_ptr<Connection>> helpers;
  for (size_t i = 1; i < std::max(options.connections, servers.size()); ++i) {
    Result<std::unique_ptr<Connection>> c = Connection::Open(servers[i % servers.size()]);
    if (!c.ok()) return c.status().With("opening another of the reader's connections");
    helpers.push_back(std::move(*c));
  }
  // The proof says no transaction open then can still commit below the head; it says nothing
  // of ids the clients make (ULIDs, UUIDs): a writer whose clock runs behind inserts below the
  // head later. Those holes wait settle_seconds of the ids' own time (GapWatchOptions).
  const bool proves = options.prove_with_server && options.events.id_form.integer() &&
                      CanSeeOpenTransactions(*connection);
  auto reader = std::unique_ptr<Reader>(new Reader(std::move(connection), std::move(helpers), options, *compare,
                                                   padding, time_index, *known, proves));
  if (options.replicas) {
    for (const ConnectionOptions& where : servers) {
      ReadServer server;
      server.where = where;
      reader->servers_.push_back(server);
    }
  }
  // The first proof before the first page, so that rebuilding history watches nothing: it
  // can succeed once the server's clock has moved kProofMarginUs past the sample (and, on a
  // busy server, once the writers open then have ended: up to kFirstProofWait).
  if (proves) {
    constexpr auto kFirstProofWait = std::chrono::milliseconds(1500);
    const auto deadline = std::chrono::steady_clock::now() + kFirstProofWait;
    std::this_thread::sleep_for(std::chrono::microseconds(GapWatch::kProofMarginUs + 10'000));
    for (;;) {
      reader->Prove();
      if (!reader->gaps_.awaits_proof() || std::chrono::steady_clock::now() >= deadline) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(150));  // > the cache's 0.1 s
    }
  }
  return reader;
}

std::string Reader::Padded(std::string sql, const EventPage& page) const {
  // A page that cannot bring more than a few 16 KB writes' worth (follow mode's trickle)
  // gains nothing: its query goes as it is.
  constexpr EventId kPadFromEvents = 256;
  if (std::min<EventId>(static_cast<EventId>(page.limit), page.hi - page.lo) < kPadFromEvents) return sql;
  return PadQuery(std::move(sql), query_bytes_);
}

Reader::~Reader() = default;

std::unique_ptr<Batch> Reader::NewBatch() {
  auto batch = std::make_unique<Batch>();
  batch->pool = pool_;
  batch->payloads = pool_->Take();
  // Room for a batch as large as the largest so far, and a quarter more for a new buffer.
  // Only when short: a reserve beyond the capacity at least doubles it, so reserving the
  // quarter on every batch made a recycled buffer grow (fresh pages, faults) each time the
  // largest batch grew by a few bytes.
  if (const size_t need = last_payload_bytes_ + simdjson::SIMDJSON_PADDING; batch->payloads.capacity() < need) {
    batch->payloads.reserve(need + last_payload_bytes_ / 4);
  }
  return batch;
}

void Reader::ExtendHead(const Head& head) {
  head_id_ = head.id;
  gaps_.ExtendHead(head);
}

Status Reader::ProveByOpenTransactions() {
  if (!gaps_.awaits_proof()) return Status::Ok();
  // Not more often than this: INNODB_TRX is a cache, refreshed only once nobody has read it
  // for 0.1 s, so polling it faster would keep it from being refreshed at all.
  constexpr auto kProofEvery = std::chrono::milliseconds(250);
  if (std::chrono::steady_clock::now() - last_proof_ < kProofEvery) return Status::Ok();
  Prove();
  return Status::Ok();
}

void Reader::Prove() {
  last_proof_ = std::chrono::steady_clock::now();
  if (!proof_) {  // (re)opened here: a proof is never a need, so a failure only delays it
    Result<std::unique_ptr<Connection>> c = Connection::Open(connection_->options());
    if (!c.ok()) return;
    proof_ = std::move(*c);
  }
  Result<Rows> r = ProofQuery(*proof_);
  if (!r.ok()) {
    proof_.reset();
    return;
  }
  const auto& row = r->rows[0];
  // The canary (this connection's own transaction, begun after `since`) not shown: the
  // cache predates it (someone else reads INNODB_TRX too often), so it proves nothing.
  if (!row[2] || *row[2] == "0" || !row[1]) return;
  const int64_t since = std::strtoll(row[1]->c_str(), nullptr, 10);
  std::optional<int64_t> oldest;  // the oldest writing transaction's start, if one is open
  if (row[0]) oldest = std::strtoll(row[0]->c_str(), nullptr, 10) * 1'000'000;
  gaps_.Proven(since, oldest);
}

Result<Rows> Reader::ProofQuery(Connection& c) {
  Result<std::optional<std::string>> since = c.QueryValue(fmt::format("SELECT {}", kServerMicros));
  if (!since.ok() || !*since) return since.ok() ? Status::Internal("the server gave no clock") : since.status();
  if (Status s = c.Execute("START TRANSACTION WITH CONSISTENT SNAPSHOT"); !s.ok()) return s;
  // The writers' oldest start (a plain reader's snapshot, or an autocommit SELECT, holds no
  // id), and whether this transaction, the canary, is shown. trx_started is the server's
  // time in whole seconds, shown in the system time zone: read there.
  Result<Rows> r = c.Query(fmt::format(
      "SET STATEMENT time_zone = 'SYSTEM' FOR SELECT UNIX_TIMESTAMP(MIN(CASE WHEN trx_mysql_thread_id <> "
      "CONNECTION_ID() AND trx_autocommit_non_locking = 0 AND (trx_rows_modified > 0 OR trx_tables_locked > 0 OR "
      "trx_tables_in_use > 0) THEN trx_started END)), {}, SUM(trx_mysql_thread_id = CONNECTION_ID()) FROM "
      "information_schema.INNODB_TRX",
      **since));
  Status done = c.Execute("COMMIT");
  if (!r.ok()) return r.status();
  if (!done.ok()) return done;
  if (r->rows.empty()) return Status::Internal("INNODB_TRX gave no row");
  return r;
}

Status Reader::MoveToPrimary() {
  Result<std::unique_ptr<Connection>> opened = Connection::Open(options_.primary);
  if (!opened.ok()) return opened.status();
  std::unique_ptr<Connection> connection = std::move(*opened);
  Result<ClassComparison> compare =
      ExactClassComparison(*connection, options_.events, WantedClasses(options_.events, options_.scope));
  if (!compare.ok()) return compare.status();
  if (compare->column != query_.compare_column()) {
    return Status::InvalidInput(
        fmt::format("{} compares the event classes as {}, the server the events were read from as "
                    "{} (another server "
                    "version?): rebuild reading from one of them",
                    connection->options().Describe(), compare->column, query_.compare_column()));
  }
  Result<size_t> query_bytes = PageQueryBytes(*connection, options_.result_buffer);
  if (!query_bytes.ok()) return query_bytes.status();
  std::vector<std::unique_ptr<Connection>> helpers;
  for (size_t i = 0; i < helpers_.size(); ++i) {
    Result<std::unique_ptr<Connection>> c = Connection::Open(connection->options());
    if (!c.ok()) return c.status().With("opening the reader's second connection");
    helpers.push_back(std::move(*c));
  }
  prefetch_.Stop();  // they start again on the new connections
  if (servers_.size() > 1 || (servers_.size() == 1 && !servers_[0].dropped.empty())) {
    PrintLine(fmt::format("read from the replicas: {}", Shares()));
  }
  {
    std::lock_guard<std::mutex> lock(servers_mu_);
    servers_.clear();  // from now on: the primary
  }
  // The server moved to is the primary (a replica's holes may be its lag): proven by its
  // open transactions, watched holes below its proven head are read there once more.
  gaps_.ResetProof(CanSeeOpenTransactions(*connection));
  proof_.reset();
  connection_ = std::move(connection);
  helpers_ = std::move(helpers);
  query_bytes_ = *query_bytes;
  if (Result<Head> head = HeadOf(*connection_, options_.events, query_.time_index() >= 0); head.ok()) gaps_.Sample(*head);
  return Status::Ok();
}

GapCounts Reader::gap_counts() const {
  GapCounts counts = gaps_.counts();
  counts.reconcile_seconds = reconcile_seconds_;
  return counts;
}

Result<Head> Reader::ReadHead() {
  prefetch_.WaitForStarted();  // the first connection is free
  Result<Head> head = Status::Ok();
  Status s = OnReadServer(*connection_, [&] {
    head = HeadOf(*connection_, options_.events, query_.time_index() >= 0);
    return head.ok() ? Status::Ok() : head.status();
  });
  if (!s.ok()) return s.With("reading the head of the event table");
  return head;
}

Result<std::unique_ptr<Batch>> Reader::Next() {
  // The proof, a few times a second while a sampled head is not proven yet.
  if (Status s = ProveByOpenTransactions(); !s.ok()) return s;
  if (reconcile_queued_) {
    reconcile_queued_ = false;
    if (gaps_.counts().reconciled_holes > 0) {
      prefetch_.WaitForStarted();
      return Reconcile();
    }
  }
  if (queued_check_ || gaps_.has_due()) {
    std::optional<GapCheck> kind = queued_check_;
    queued_check_.reset();
    if (gaps_.watching()) {
      prefetch_.WaitForStarted();  // the first connection reads the gaps
      return ReadGaps(kind);
    }
  }
  if (prefetch_.empty() && after_id_ >= head_id_) {
    if (gaps_.has_settled()) return ReadGaps(std::nullopt);  // hand on what was settled
    pool_->Drain();
    return std::unique_ptr<Batch>();
  }
  // The first page starts at the first id, wherever it is; a throttled reader paces
  // every page itself.
  const bool inline_read = helpers_.empty() || throttle_ != nullptr || after_id_ == kBeforeFirstId;
  if (prefetch_.empty() && inline_read) return NextInline();
  return NextFromWorkers();
}

Result<std::unique_ptr<Batch>> Reader::NextInline() {
  size_t limit = options_.batch_size;
  if (throttle_ != nullptr) {
    limit = throttle_->PageSize(limit);
    if (Status s = throttle_->Wait(limit); !s.ok()) return s;
  }
  EventPage page;
  page.lo = after_id_;
  page.hi = head_id_;
  page.limit = limit;
  page.batch = NewBatch();
  page.holes = gaps_.StartPage();
  ReadRange(*connection_, page);
  if (page.status.ok() && throttle_ != nullptr) throttle_->Took(page.batch->rows_read);
  return Finish(page);
}

Result<std::unique_ptr<Batch>> Reader::NextFromWorkers() {
  std::vector<Connection*> connections{connection_.get()};
  for (const auto& h : helpers_) connections.push_back(h.get());
  std::unique_ptr<EventPage> page = prefetch_.Next(after_id_, head_id_, connections);
  return Finish(*page);
}

void Reader::ReadRange(Connection& connection, EventPage& page) {
  Batch& batch = *page.batch;
  batch.after_id = page.lo;
  batch.raw.reserve(page.limit);
  const std::string sql = Padded(query_.Range(page.lo, page.hi, page.limit), page);
  page.status = OnReadServer(
      connection,
      [&] {
        page.last_id = page.lo;
        page.holes.gap_times.clear();
        page.holes.below_times.clear();
        page.holes.first_time.reset();
        page.holes.any = false;
        batch.rows_read = batch.skipped = 0;
        batch.raw.clear();
        batch.raw_columns.clear();
        batch.gaps.clear();
        batch.payloads.clear();
        return ReadPage(connection, sql, page);
      });
  if (page.status.ok()) CountRead(connection, batch.rows_read);
}

Status Reader::OnReadServer(Connection& c, const std::function<Status()>& attempt) {
  auto on_retry = [](const Status& lost, int retry) {
    // Lost the server (restart, network): wait, reconnect, read the same page again.
    PrintLine(fmt::format("reader lost the connection ({}); reconnecting, attempt {}", lost.message(), retry));
  };
  for (;;) {
    std::optional<size_t> at;
    {
      std::lock_guard<std::mutex> lock(servers_mu_);
      for (size_t i = 0; i < servers_.size() && !at; ++i) {
        if (SameServer(servers_[i].where, c.options())) at = i;
      }
    }
    if (!at) return RetryOnConnectionLoss(c, attempt, on_retry);  // the primary, or one server
    Status s = attempt();
    // A connection killed (a proxy, wait_timeout) is not a server gone: one reconnect first.
    if (s.code() == Status::Code::kConnection && c.Reconnect().ok()) s = attempt();
    if (s.code() != Status::Code::kConnection) return s;
    // Dropped: the next replica serving takes the connection (the primary when none is left).
    Status why = s;
    for (;;) {
      ConnectionOptions to = options_.primary;
      {
        std::lock_guard<std::mutex> lock(servers_mu_);
        if (servers_[*at].dropped.empty()) servers_[*at].dropped = why.message();
        for (size_t k = 0; k < servers_.size(); ++k) {
          const size_t i = (next_server_ + k) % servers_.size();
          if (servers_[i].dropped.empty()) {
            to = servers_[i].where;
            next_server_ = i + 1;
            at = i;
            break;
          }
        }
      }
      const bool to_primary = SameServer(to, options_.primary);
      PrintLine(fmt::format("dropped the replica {} ({}); its pages are read again from {}{}",
                            c.options().Describe(), why.message(), to.Describe(), to_primary ? ", the primary" : ""));
      Status r = c.ReconnectTo(to);
      if (r.ok()) break;
      if (to_primary) return RetryOnConnectionLoss(c, attempt, on_retry);  // as everywhere (retry.h)
      why = r;  // that replica is gone too
    }
  }
}

void Reader::CountRead(const Connection& c, uint64_t events) {
  std::lock_guard<std::mutex> lock(servers_mu_);
  for (ReadServer& server : servers_) {
    if (SameServer(server.where, c.options())) {
      server.events += events;
      ++server.pages;
      return;
    }
  }
}

std::string Reader::Shares() const {
  std::lock_guard<std::mutex> lock(servers_mu_);
  std::string out;
  for (const ReadServer& server : servers_) {
    out += fmt::format("{}{} {} events in {} pages{}", out.empty() ? "" : "; ", server.where.Describe(),
                       server.events, server.pages,
                       server.dropped.empty() ? "" : fmt::format(" (dropped: {})", server.dropped));
  }
  return out;
}

Result<std::unique_ptr<Batch>> Reader::Finish(EventPage& page) {
  if (!page.status.ok()) {
    return page.status.With(fmt::format("reading events after id {}", IdShown(options_.events.id_form, page.lo)));
  }
  EventId last_id = page.last_id;
  if (page.batch->rows_read < page.limit) {
    // The page ended below the limit: the batch covers its whole range, and any id
    // between its last row and the range's end is missing (for now).
    if (last_id < page.hi) {
      page.batch->gaps.push_back({last_id + 1, page.hi});
      page.holes.gap_times.push_back(std::nullopt);  // the event above it is in a later page
      page.holes.below_times.push_back(std::nullopt);
    }
    last_id = page.hi;
  }
  FaultPoint("read-batch");
  gaps_.JudgePage(page.batch->gaps, page.holes, page.hi, page.last_id);
  std::unique_ptr<Batch> batch = std::move(page.batch);
  last_payload_bytes_ = std::max(last_payload_bytes_, batch->payloads.size());
  batch->payloads.append(simdjson::SIMDJSON_PADDING, '\0');
  batch->last_id = last_id;
  batch->settled = gaps_.TakeSettled();
  batch->sequence = next_sequence_++;
  after_id_ = last_id;
  return batch;
}

Status Reader::ReadPage(Connection& connection, const std::string& sql, EventPage& page) {
  Batch* batch = page.batch.get();
  EventId& last_id = page.last_id;
  Status bad_id;
  const int time_at = query_.time_index();
  // The fallback rule also reads the time of the event below each hole: the previous row's,
  // kept as text (parsed only at a hole).
  const bool below = time_at >= 0 && !gaps_.proves();
  char prev_time[64];
  size_t prev_time_size = 0;
  bool prev_has_time = false;
  bool after_hole = false;  // the row before this one followed a hole
  EventId first_id = 0;     // the page's first row
  PageHoles& holes = page.holes;
  Status s = connection.Stream(sql, [&](char** values, unsigned long* lengths) {
    const std::optional<EventId> id = ParseIdAs(options_.events.id_form, std::string_view(values[0], lengths[0]));
    if (!id) {
      // A text or bytes column may hold one id of another form than the rest.
      bad_id = Status::InvalidInput(fmt::format(
          "event id '{}' (after {}) is not {} id: rewind reads the ids of {} in their order, and cannot place it",
          Printable(std::string_view(values[0], lengths[0])),
          IdShown(options_.events.id_form, last_id),
          options_.events.id_form.integer() ? "an integer" : fmt::format("a {}", IdFormName(options_.events.id_form)),
          options_.events.table));
      return;
    }
    const bool hole = *id > last_id + 1;
    const bool first_row = holes.any && last_id == first_id;  // this is the page's second row
    if ((hole || after_hole || !holes.any || first_row) && time_at >= 0) {
      // The time of the event above a hole judges the hole (the earlier of it and the next
      // one's, so that one event whose time column runs ahead of its neighbours' cannot
      // keep a hole open); the page's first one judges the hole trailing the page before.
      std::optional<int64_t> time;
      if (values[time_at] != nullptr) time = EventTimeSeconds(std::string_view(values[time_at], lengths[time_at]));
      if (!holes.any) holes.first_time = time;
      if (holes.any && first_row && time && holes.first_time) holes.first_time = std::min(*holes.first_time, *time);
      if (after_hole && time && holes.gap_times.back()) holes.gap_times.back() = std::min(*holes.gap_times.back(), *time);
      if (hole) {
        holes.gap_times.push_back(time);
        holes.below_times.push_back(holes.any && prev_has_time
                                       ? EventTimeSeconds(std::string_view(prev_time, prev_time_size))
                                       : std::nullopt);
      }
    } else if (hole) {
      holes.gap_times.push_back(std::nullopt);
      holes.below_times.push_back(std::nullopt);
    }
    if (below) {
      prev_has_time = values[time_at] != nullptr && lengths[time_at] <= sizeof(prev_time);
      if (prev_has_time) {
        prev_time_size = lengths[time_at];
        std::copy_n(values[time_at], prev_time_size, prev_time);
      }
    }
    after_hole = hole;
    if (hole) batch->gaps.push_back({last_id + 1, *id - 1});
    if (!holes.any) first_id = *id;
    holes.any = true;
    last_id = *id;
    query_.AddRow(*batch, *id, values, lengths);
  });
  return s.ok() ? bad_id : s;
}

Status Reader::ReadIds(std::vector<IdRange> ranges, Batch& batch, std::vector<EventId>& found) {
  std::sort(ranges.begin(), ranges.end(), [](const IdRange& a, const IdRange& b) { return a.lo < b.lo; });
  constexpr size_t kRangesPerQuery = 1000;
  for (size_t from = 0; from < ranges.size(); from += kRangesPerQuery) {
    const std::string sql =
        query_.Ids(std::span<const IdRange>(ranges).subspan(from, std::min(kRangesPerQuery, ranges.size() - from)));
    const size_t raw_before = batch.raw.size(), found_before = found.size();
    const size_t columns_before = batch.raw_columns.size();
    const size_t bytes_before = batch.payloads.size();
    const uint64_t rows_before = batch.rows_read, skipped_before = batch.skipped;
    Status s = OnReadServer(*connection_, [&] {
      batch.raw.resize(raw_before);
      batch.raw_columns.resize(columns_before);
      found.resize(found_before);
      batch.payloads.resize(bytes_before);
      batch.rows_read = rows_before;
      batch.skipped = skipped_before;
      return connection_->Stream(sql, [&](char** values, unsigned long* lengths) {
        const std::optional<EventId> got = ParseIdAs(options_.events.id_form, std::string_view(values[0], lengths[0]));
        if (!got) return;
        found.push_back(*got);
        query_.AddRow(batch, *got, values, lengths);
      });
    });
    if (!s.ok()) return s;
  }
  return Status::Ok();
}

Result<std::unique_ptr<Batch>> Reader::Reconcile() {
  const auto start = std::chrono::steady_clock::now();
  std::unique_ptr<Batch> batch = NewBatch();
  batch->late = batch->reconciled = true;
  batch->after_id = batch->last_id = kBeforeFirstId;
  std::vector<EventId> found;
  if (Status s = ReadIds(gaps_.ToReconcile(), *batch, found); !s.ok()) {
    return s.With("reading again the holes judged final (reconciliation)");
  }
  batch->settled = gaps_.Reconciled(found);
  batch->payloads.append(simdjson::SIMDJSON_PADDING, '\0');
  batch->sequence = next_sequence_++;
  reconcile_seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return batch;
}

Result<std::unique_ptr<Batch>> Reader::ReadGaps(std::optional<GapCheck> kind) {
  std::unique_ptr<Batch> batch = NewBatch();
  batch->late = true;
  batch->after_id = batch->last_id = kBeforeFirstId;
  std::vector<EventId> found;
  if (Status s = ReadIds(gaps_.ToRead(kind), *batch, found); !s.ok()) {
    return s.With("reading the ids watched for late commits");
  }
  batch->settled = gaps_.Settle(kind, found);
  batch->payloads.append(simdjson::SIMDJSON_PADDING, '\0');
  batch->sequence = next_sequence_++;
  return batch;
}

}  // namespace rw

