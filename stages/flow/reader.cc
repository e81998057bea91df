#include "stages/flow/reader.h"
#include "stages/db/retry.h"

#include <fmt/core.h>
#include <simdjson.h>

#include <algorithm>
#include <cstdlib>
#include <thread>

#include "base/civil_time.h"
#include "base/fault.h"
#include "stages/control/console.h"

namespace rw {

namespace {
Result<Head> HeadOf(Connection& c, const EventTableOptions& e, bool with_time);
}  // namespace

Result<EventId> ReadHeadId(Connection& c, const EventTableOptions& e) {
  Result<Head> head = HeadOf(c, e, /*with_time=*/false);
  if (!head.ok()) return head.status();
  return head->id;
}

std::optional<int64_t> EventTimeSeconds(std::string_view text) {
  std::optional<CivilTime> t = ParseDateOrTimestamp(text);
  if (!t) return std::nullopt;
  return t->epoch_seconds();
}

Status CheckEventTable(Connection& c, const EventTableOptions& e, bool with_time_column) {
  Result<Rows> table = c.Query(fmt::format(
      "SELECT COLUMN_NAME, DATA_TYPE, IS_NULLABLE FROM information_schema.COLUMNS WHERE "
      "TABLE_SCHEMA = DATABASE() AND TABLE_NAME = {} ORDER BY ORDINAL_POSITION",
      c.Quote(e.table)));
  if (!table.ok()) return table.status();
  if (table->rows.empty()) {
    return Status::NotFound(fmt::format("event table '{}' does not exist in database '{}'",
                                        e.table, c.options().database));
  }
  auto column = [&](const std::string& name) -> const std::vector<std::optional<std::string>>* {
    for (const auto& row : table->rows) {
      if (row[0] && *row[0] == name) return &row;
    }
    return nullptr;
  };
  for (const std::string* col : {&e.id_column, &e.type_column, &e.payload_column, &e.time_column}) {
    if (col == &e.time_column && !with_time_column) continue;
    if (col == &e.type_column && !e.type_path.empty()) continue;  // the class is in the payload
    if (column(*col) == nullptr) {
      std::string has;
      for (const auto& row : table->rows) has += (has.empty() ? "" : ", ") + row[0].value_or("");
      const std::string flag =
          col == &e.id_column        ? "name the id column with --id-column"
          : col == &e.type_column    ? "name the type column with --type-column, or, when the type is inside the "
                                       "JSON payload (evtstore's `type`, EventSauce's `headers.__event_type`), "
                                       "give its path with --type-path"
          : col == &e.payload_column ? "name the payload column with --payload-column"
                                     : "name the time column with --time-column";
      return Status::NotFound(fmt::format("event table '{}' has no column '{}': {} (its columns: {})", e.table,
                                          *col, flag, has));
    }
  }
  const auto& id = *column(e.id_column);
  const std::string type = id[1].value_or("");
  static const char* const kIntegers[] = {"tinyint", "smallint", "mediumint", "int", "bigint"};
  if (std::find(std::begin(kIntegers), std::end(kIntegers), type) == std::end(kIntegers)) {
    return Status::InvalidInput(fmt::format(
        "the id column '{}' of '{}' is {}, not an integer: rewind pages by it and needs an "
        "integer type (TINYINT to BIGINT, signed or unsigned)",
        e.id_column, e.table, type));
  }
  if (id[2].value_or("YES") != "NO") {
    return Status::InvalidInput(fmt::format(
        "the id column '{}' of '{}' allows NULL: rewind needs it NOT NULL", e.id_column, e.table));
  }
  // Unique: the primary key or a unique index on that column alone.
  Result<std::optional<std::string>> unique = c.QueryValue(fmt::format(
      "SELECT COUNT(*) FROM (SELECT INDEX_NAME FROM information_schema.STATISTICS WHERE "
      "TABLE_SCHEMA = DATABASE() AND TABLE_NAME = {} AND NON_UNIQUE = 0 GROUP BY INDEX_NAME "
      "HAVING COUNT(*) = 1 AND MAX(COLUMN_NAME) = {}) u",
      c.Quote(e.table), c.Quote(e.id_column)));
  if (!unique.ok()) return unique.status();
  if (!*unique || **unique == "0") {
    return Status::InvalidInput(fmt::format(
        "the id column '{}' of '{}' is not unique: rewind needs it to be the primary key or "
        "to have a unique index of its own (two events with one id would be read as one)",
        e.id_column, e.table));
  }
  return Status::Ok();
}

Status CheckReadColumns(Connection& c, const EventTableOptions& events, const std::vector<std::string>& columns) {
  for (const std::string& col : columns) {
    Result<std::optional<std::string>> n = c.QueryValue(fmt::format(
        "SELECT COUNT(*) FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND "
        "TABLE_NAME = {} AND COLUMN_NAME = {}",
        c.Quote(events.table), c.Quote(col)));
    if (!n.ok()) return n.status();
    if (!*n || **n == "0") {
      return Status::NotFound(fmt::format("a declared read model reads the field '{}', but the event "
                                          "table '{}' has no such column",
                                          col, events.table));
    }
  }
  return Status::Ok();
}

namespace {

// One row read (id, payload-or-NULL, [class index], [columns...]): counted, and kept when
// its payload came (NULL: another class, skipped).
void AddEvent(Batch& batch, EventId id, char** values, unsigned long* lengths, bool with_class,
              size_t columns) {
  ++batch.rows_read;
  if (values[1] == nullptr) {
    ++batch.skipped;
    return;
  }
  RawEvent raw{id, static_cast<uint32_t>(batch.payloads.size()), static_cast<uint32_t>(lengths[1]), 0,
               static_cast<uint32_t>(batch.raw_columns.size())};
  batch.payloads.append(values[1], lengths[1]);
  size_t at = 2;
  if (with_class) {
    unsigned cls = 0;
    for (unsigned long i = 0; i < lengths[at]; ++i) cls = cls * 10 + static_cast<unsigned>(values[at][i] - '0');
    raw.event_class = static_cast<uint16_t>(cls);
    ++at;
  }
  for (size_t i = 0; i < columns; ++i, ++at) {
    batch.raw_columns.push_back(RawColumn{static_cast<uint32_t>(batch.payloads.size()),
                                          static_cast<uint32_t>(lengths[at]), values[at] == nullptr});
    if (values[at] != nullptr) batch.payloads.append(values[at], lengths[at]);
  }
  batch.raw.push_back(raw);
}

// What the reader's page queries are padded to (ReaderOptions::result_buffer): `wanted`,
// at most half the server's max_allowed_packet (the rest is the query's own text), and 0
// when that is no more than the server's net_buffer_length (nothing to gain).
Result<size_t> PageQueryBytes(Connection& c, size_t wanted) {
  if (wanted == 0) return size_t{0};
  auto variable = [&](std::string_view name) -> Result<size_t> {
    Result<std::optional<std::string>> v = c.QueryValue(fmt::format("SELECT @@SESSION.{}", name));
    if (!v.ok()) return v.status().With(fmt::format("reading the server's {}", name));
    return *v ? std::strtoull((*v)->c_str(), nullptr, 10) : size_t{0};
  };
  Result<size_t> net_buffer = variable("net_buffer_length");
  if (!net_buffer.ok()) return net_buffer.status();
  Result<size_t> max_packet = variable("max_allowed_packet");
  if (!max_packet.ok()) return max_packet.status();
  const size_t bytes = std::min(wanted, *max_packet / 2);
  return bytes > *net_buffer ? bytes : 0;
}

// The classes a run wants, in the order of ReadScope::classes (the page-visited one alone
// when that is empty).
std::vector<std::string> WantedClasses(const ReaderOptions& o) {
  std::vector<std::string> classes = o.scope.classes;
  if (classes.empty()) classes.push_back(o.events.page_visited_class);
  return classes;
}

Result<bool> HasColumn(Connection& c, const EventTableOptions& e, const std::string& column) {
  Result<std::optional<std::string>> n = c.QueryValue(fmt::format(
      "SELECT COUNT(*) FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND "
      "TABLE_NAME = {} AND COLUMN_NAME = {}",
      c.Quote(e.table), c.Quote(column)));
  if (!n.ok()) return n.status();
  return *n && **n != "0";
}

// The server's clock when the statement began, in microseconds since the epoch: read in no
// time zone (UNIX_TIMESTAMP() and NOW(6) are the same instant), so no change of hour folds it.
constexpr const char* kServerMicros = "UNIX_TIMESTAMP() * 1000000 + MICROSECOND(NOW(6))";

// The head: the highest id and (with_time) its time column, in one indexed look, with the
// server's clock when it was read.
Result<Head> HeadOf(Connection& c, const EventTableOptions& e, bool with_time) {
  const std::string id = QuoteIdentifier(e.id_column);
  Result<Rows> rows = c.Query(fmt::format(
      "SELECT {}, h.* FROM (SELECT 1) one LEFT JOIN (SELECT {}{} FROM {} ORDER BY {} DESC LIMIT 1) h ON TRUE",
      kServerMicros, id, with_time ? ", " + QuoteIdentifier(e.time_column) : "", QuoteIdentifier(e.table), id));
  if (!rows.ok()) return rows.status();
  Head head;
  if (rows->rows.empty()) return head;
  const auto& row = rows->rows[0];
  if (row[0]) {
    head.server_us = std::strtoll(row[0]->c_str(), nullptr, 10);
    head.server_time = *head.server_us / 1'000'000;
  }
  if (!row[1]) return head;  // an empty table
  std::optional<EventId> parsed = ParseEventId(*row[1]);
  if (!parsed) return Status::InvalidInput(fmt::format("the head id '{}' is not an integer", *row[1]));
  head.id = *parsed;
  if (with_time && row[2]) head.time = EventTimeSeconds(*row[2]);
  return head;
}

}  // namespace

bool CanSeeOpenTransactions(Connection& c) {
  Result<std::optional<std::string>> wsrep = c.QueryValue("SELECT @@wsrep_on");
  if (wsrep.ok() && *wsrep && **wsrep != "0" && **wsrep != "OFF") return false;
  return c.QueryValue("SELECT COUNT(*) FROM information_schema.INNODB_TRX").ok();
}

namespace {

bool HasFourByteCharacter(const std::string& text) {
  for (unsigned char ch : text) {
    if (ch >= 0xF0) return true;
  }
  return false;
}

// A dotted path ("headers.__event_type") as a JSON path with every member quoted
// ('$."headers"."__event_type"'), so that any member name is taken as it is.
std::string JsonPathOf(const std::string& dotted) {
  std::string out = "$";
  size_t start = 0;
  while (true) {
    const size_t dot = dotted.find('.', start);
    out += ".\"";
    for (char ch : dotted.substr(start, dot == std::string::npos ? std::string::npos : dot - start)) {
      if (ch == '"' || ch == '\\') out += '\\';
      out += ch;
    }
    out += '"';
    if (dot == std::string::npos) return out;
    start = dot + 1;
  }
}

}  // namespace

Result<ClassComparison> ExactClassComparison(Connection& c, const EventTableOptions& e,
                                             const std::vector<std::string>& classes) {
  // The class's column, or its place in the payload: JSON_VALUE's result is in the payload
  // column's character set (binary for a BLOB), which then decides the comparison.
  const bool in_payload = !e.type_path.empty();
  const std::string type = in_payload ? fmt::format("JSON_VALUE({}, {})", QuoteIdentifier(e.payload_column),
                                                    c.Quote(JsonPathOf(e.type_path)))
                                      : QuoteIdentifier(e.type_column);
  const ClassComparison bytes{"BINARY " + type, "BINARY "};
  Result<std::optional<std::string>> charset = c.QueryValue(fmt::format(
      "SELECT COALESCE(CHARACTER_SET_NAME, '') FROM information_schema.COLUMNS WHERE "
      "TABLE_SCHEMA = DATABASE() AND TABLE_NAME = {} AND COLUMN_NAME = {}",
      c.Quote(e.table), c.Quote(in_payload ? e.payload_column : e.type_column)));
  if (!charset.ok()) return charset.status();
  if (!*charset) return bytes;
  if ((*charset)->empty()) return ClassComparison{type, ""};  // a binary column compares bytes
  // A character set that holds every wanted class exactly as the connection (utf8mb4) sends
  // it, so that comparing characters is comparing bytes.
  const bool holds = **charset == "utf8mb4" ||
                     ((**charset == "utf8mb3" || **charset == "utf8") &&
                      std::none_of(classes.begin(), classes.end(), HasFourByteCharacter));
  if (!holds) return bytes;
  const std::string collation = **charset + "_nopad_bin";
  Result<std::optional<std::string>> known = c.QueryValue(fmt::format(
      "SELECT COUNT(*) FROM information_schema.COLLATIONS WHERE COLLATION_NAME = {}", c.Quote(collation)));
  if (!known.ok()) return known.status();
  if (!*known || **known == "0") return bytes;  // before MariaDB 10.2, or MySQL
  return ClassComparison{fmt::format("{} COLLATE {}", type, collation), ""};
}

Reader::Reader(std::unique_ptr<Connection> c, std::vector<std::unique_ptr<Connection>> helpers,
               const ReaderOptions& o, const ClassComparison& compare, size_t query_bytes,
               int time_index, const Head& known)
    : connection_(std::move(c)),
      options_(o),
      head_id_(o.head_id),
      compare_column_(compare.column),
      query_bytes_(query_bytes),
      after_id_(o.start_after_id),
      helpers_(std::move(helpers)),
      span_(static_cast<EventId>(o.batch_size)) {
  const EventTableOptions& e = options_.events;
  // The type filter is pushed into the server, exactly (see ClassComparison): unhandled
  // events cost an id, not a payload.
  const std::string until =
      options_.until_time.empty()
          ? std::string()
          : fmt::format(" AND {} <= {}", QuoteIdentifier(e.time_column), connection_->Quote(options_.until_time));
  const std::vector<std::string> classes = WantedClasses(options_);
  std::string match, index;
  if (classes.size() == 1) {
    match = fmt::format("{} = {}{}", compare.column, compare.literal_prefix, connection_->Quote(classes[0]));
  } else {
    // Several classes: the payload for any of them, and which one it is as a small number.
    for (size_t i = 0; i < classes.size(); ++i) {
      const std::string cls = compare.literal_prefix + connection_->Quote(classes[i]);
      match += (i ? ", " : "") + cls;
      index += fmt::format(" WHEN {} THEN {}", cls, i);
    }
    match = fmt::format("{} IN ({})", compare.column, match);
    index = fmt::format(", CASE {}{} END", compare.column, index);
    with_class_ = true;
  }
  // The read models' filters on columns (ReadScope::filters): a class that has some is
  // wanted only where one of them holds.
  std::string filtered, filter;
  for (size_t i = 0; i < classes.size() && i < options_.scope.filters.size(); ++i) {
    const auto& alternatives = options_.scope.filters[i];
    if (alternatives.empty()) continue;
    const std::string cls = compare.literal_prefix + connection_->Quote(classes[i]);
    filtered += (filtered.empty() ? "" : ", ") + cls;
    std::string any;
    for (const std::vector<ColumnIn>& all : alternatives) {
      std::string each;
      for (const ColumnIn& in : all) {
        std::string values;
        for (const std::string& v : in.values) values += (values.empty() ? "" : ", ") + connection_->Quote(v);
        each += fmt::format("{}{} IN ({})", each.empty() ? "" : " AND ", QuoteIdentifier(in.column), values);
      }
      any += fmt::format("{}({})", any.empty() ? "" : " OR ", each);
    }
    filter += fmt::format(" OR ({} = {} AND ({}))", compare.column, cls, any);
  }
  if (!filtered.empty()) filter = fmt::format(" AND ({} NOT IN ({}){})", compare.column, filtered, filter);
  std::string columns;
  for (const std::string& col : options_.scope.columns) columns += ", " + QuoteIdentifier(col);
  if (time_index >= 0) {  // last: each hole is judged by the time of the event above it
    time_index_ = static_cast<int>(2 + (with_class_ ? 1 : 0) + options_.scope.columns.size());
    columns += ", " + QuoteIdentifier(e.time_column);
  }
  settle_ids_ = static_cast<EventId>(options_.settle_ids);
  if (time_index_ < 0 && settle_ids_ == 0) settle_ids_ = kDefaultSettleIds;
  select_ = fmt::format("SELECT {id}, CASE WHEN {match}{until}{filter} THEN COALESCE({payload}, '') END{index}{columns} "
                        "FROM {table}",
                        fmt::arg("until", until), fmt::arg("filter", filter), fmt::arg("id", QuoteIdentifier(e.id_column)),
                        fmt::arg("match", match), fmt::arg("index", index), fmt::arg("columns", columns),
                        fmt::arg("payload", QuoteIdentifier(e.payload_column)),
                        fmt::arg("table", QuoteIdentifier(e.table)));
  // Holes an interrupted run was watching: read again at once; their neighbours' times are
  // not known, so each is judged as written when the run starts.
  known_ = known;
  for (const IdRange& r : options_.watched.ranges()) Watch(r, known_.time);
  // The first sample is taken in Make, once proves_ is known.
  if (!watched_.empty()) queued_check_ = GapCheck::kRecheck;
}

Result<std::string> WhyJudgedByIds(Connection& c, const EventTableOptions& e, uint64_t settle_ids) {
  if (settle_ids > 0) return std::string("--settle-ids");
  Result<bool> has = HasColumn(c, e, e.time_column);
  if (!has.ok()) return has.status();
  if (!*has) return fmt::format("the event table has no time column '{}'", e.time_column);
  Result<Head> head = HeadOf(c, e, /*with_time=*/true);
  if (!head.ok()) return head.status();
  if (head->id != kBeforeFirstId && !head->time) {
    return fmt::format("the time column '{}' of the head does not parse as a time", e.time_column);
  }
  return std::string();
}

Result<std::unique_ptr<Reader>> Reader::Make(std::unique_ptr<Connection> connection,
                                             const ReaderOptions& options) {
  if (options.batch_size == 0) return Status::InvalidInput("batch size must be positive");
  if (Status s = CheckEventTable(*connection, options.events, !options.until_time.empty()); !s.ok()) {
    return s;
  }
  if (Status s = CheckReadColumns(*connection, options.events, options.scope.columns); !s.ok()) return s;
  Result<ClassComparison> compare = ExactClassComparison(*connection, options.events, WantedClasses(options));
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
  std::vector<std::unique_ptr<Connection>> helpers;
  for (size_t i = 1; i < options.connections; ++i) {
    Result<std::unique_ptr<Connection>> c = Connection::Open(connection->options());
    if (!c.ok()) return c.status().With("opening the reader's second connection");
    helpers.push_back(std::move(*c));
  }
  const bool proves = options.prove_with_server && CanSeeOpenTransactions(*connection);
  auto reader = std::unique_ptr<Reader>(new Reader(std::move(connection), std::move(helpers), options, *compare,
                                                   *query_bytes, time_index, *known));
  reader->proves_ = proves;
  reader->Sample(*known);
  // The first proof before the first page, so that rebuilding history watches nothing: it
  // can succeed once the server's clock has moved kProofMarginUs past the sample (and, on a
  // busy server, once the writers open then have ended: up to kFirstProofWait).
  if (proves) {
    constexpr auto kFirstProofWait = std::chrono::milliseconds(1500);
    const auto deadline = std::chrono::steady_clock::now() + kFirstProofWait;
    std::this_thread::sleep_for(std::chrono::microseconds(kProofMarginUs + 10'000));
    for (;;) {
      reader->Prove();
      if (reader->samples_.empty() || std::chrono::steady_clock::now() >= deadline) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(150));  // > the cache's 0.1 s
    }
  }
  return reader;
}

std::string Reader::Padded(std::string sql, const Page& page) const {
  // A page that cannot bring more than a few 16 KB writes' worth (follow mode's trickle)
  // gains nothing: its query goes as it is.
  constexpr EventId kPadFromEvents = 256;
  if (std::min<EventId>(static_cast<EventId>(page.limit), page.hi - page.lo) < kPadFromEvents) return sql;
  return PadQuery(std::move(sql), query_bytes_);
}

std::string PadQuery(std::string sql, size_t bytes) {
  // A comment of spaces, saying what it is to whoever finds it in a server's log.
  constexpr std::string_view kOpen = " /* rewind --result-buffer: padding ", kClose = "*/";
  if (sql.size() + kOpen.size() + kClose.size() >= bytes) return sql;
  sql.reserve(bytes);
  sql += kOpen;
  sql.append(bytes - sql.size() - kClose.size(), ' ');
  sql += kClose;
  return sql;
}

Reader::~Reader() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    quit_ = true;
  }
  wake_.notify_all();
  for (Worker& w : workers_) w.thread.join();
}

void Reader::StartWorkers() {
  workers_.resize(1 + helpers_.size());
  for (size_t i = 0; i < workers_.size(); ++i) {
    workers_[i].connection = i == 0 ? connection_.get() : helpers_[i - 1].get();
  }
  for (size_t i = 0; i < workers_.size(); ++i) {
    workers_[i].thread = std::thread([this, i] {
      for (;;) {
        Page* page = nullptr;
        {
          std::unique_lock<std::mutex> lock(mu_);
          wake_.wait(lock, [&] { return quit_ || workers_[i].page != nullptr; });
          if (workers_[i].page == nullptr) return;  // quit, and idle
          page = workers_[i].page;
        }
        ReadRange(*workers_[i].connection, *page);
        {
          std::lock_guard<std::mutex> lock(mu_);
          page->done = true;
          workers_[i].page = nullptr;
        }
        read_.notify_all();
      }
    });
  }
}

void Reader::WaitForStartedPages() {
  std::unique_lock<std::mutex> lock(mu_);
  read_.wait(lock, [&] {
    for (const auto& p : pages_) {
      if (p->started && !p->done) return false;
    }
    return true;
  });
}

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

bool Reader::FinalAgainst(const IdRange& hole, const std::optional<int64_t>& time, const Head& known,
                          EventId final_below) const {
  if (proves_) {
    if (final_below != kBeforeFirstId && hole.hi <= final_below) return true;
    return proof_stalled_ && FallbackFinal(hole, time, known);
  }
  return FallbackFinal(hole, time, known);
}

bool Reader::FallbackFinal(const IdRange& hole, const std::optional<int64_t>& time, const Head& known) const {
  if (time_index_ < 0) return FarBelow(hole, known, settle_ids_);
  return AgedBy(time, known) && FarBelow(hole, known, kDefaultSettleIds);
}

bool Reader::AgedBy(const std::optional<int64_t>& time, const Head& known) const {
  if (!time || !known.time) return false;
  // The head's time, never later than the server's clock when it was read: a writer whose
  // clock runs ahead cannot age the holes below it.
  const int64_t head_time = known.server_time ? std::min(*known.time, *known.server_time) : *known.time;
  return static_cast<double>(head_time - *time) >= options_.settle_seconds;
}

bool Reader::FarBelow(const IdRange& hole, const Head& known, EventId ids) {
  return known.id != kBeforeFirstId && known.id >= ids && hole.hi <= known.id - ids;
}

void Reader::Watch(IdRange range, std::optional<int64_t> time,
                   std::optional<std::chrono::steady_clock::time_point> since) {
  watched_.emplace(range.lo, Hole{range.hi, time, since.value_or(std::chrono::steady_clock::now())});
  if (time) by_time_.emplace(*time, range.lo);
  peak_watched_ = std::max<uint64_t>(peak_watched_, watched_.size() + due_.size());
  if (watched_.size() <= kMaxWatched) return;
  // Too many open at once: the lowest is given up (counted), so memory and the checkpoint
  // stay bounded.
  if (!warned_cap_) {
    PrintLine(fmt::format("more than {} holes in the ids are open at once; giving up the lowest ones",
                          kMaxWatched));
    warned_cap_ = true;
  }
  auto lowest = watched_.begin();
  settled_.push_back({lowest->first, lowest->second.hi});
  RememberFinal({lowest->first, lowest->second.hi});
  ++gaps_given_up_;
  Unwatch(lowest);
}

void Reader::Unwatch(std::map<EventId, Hole>::iterator it) {
  if (it->second.time) by_time_.erase({*it->second.time, it->first});
  watched_.erase(it);
}

void Reader::MarkDue() {
  // Proven: every watched hole up to final_below_ (holes do not overlap: his rise with los).
  while (proves_ && !watched_.empty() && watched_.begin()->second.hi <= final_below_) {
    due_.Add({watched_.begin()->first, watched_.begin()->second.hi});
    Unwatch(watched_.begin());
  }
  if (proves_ && !proof_stalled_) return;
  if (time_index_ >= 0) {
    const auto now = std::chrono::steady_clock::now();
    const auto window = std::chrono::duration<double>(options_.settle_seconds);
    // Oldest by time first; the walk stops at the first hole too recent by time (the rest
    // are newer), and passes over one the ids' part of the rule still holds back.
    for (auto t = by_time_.begin(); t != by_time_.end();) {
      const auto [time, lo] = *t++;
      auto it = watched_.find(lo);
      const IdRange hole{lo, it->second.hi};
      if (!AgedBy(time, known_)) break;
      // Far enough below the head, or watched the settle window by this process's own clock.
      if (FarBelow(hole, known_, kDefaultSettleIds) || now - it->second.since >= window) {
        due_.Add(hole);
        Unwatch(it);  // erases (time, lo), behind t
      }
    }
    return;
  }
  while (!watched_.empty() && FallbackFinal({watched_.begin()->first, watched_.begin()->second.hi}, {}, known_)) {
    due_.Add({watched_.begin()->first, watched_.begin()->second.hi});
    Unwatch(watched_.begin());
  }
}

void Reader::ExtendHead(const Head& head) {
  head_id_ = head.id;
  if (head.id > known_.id) known_ = head;
  Sample(head);
  MarkDue();
}

void Reader::Sample(const Head& head) {
  if (!proves_ || !head.server_us || head.id == kBeforeFirstId || head.id <= final_below_) return;
  if (!samples_.empty() && head.id <= samples_.back().second) return;  // the older sample proves sooner
  if (samples_.size() >= kMaxSamples) {
    samples_.back() = {*head.server_us, head.id};  // still true: that id was visible by then
  } else {
    samples_.emplace_back(*head.server_us, head.id);
  }
}

Status Reader::ProveByOpenTransactions() {
  if (!proves_ || samples_.empty()) return Status::Ok();
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
  const bool open = row[0].has_value();  // some writing transaction is open
  const int64_t oldest = open ? std::strtoll(row[0]->c_str(), nullptr, 10) * 1'000'000 : since;
  // A sample (t, H): every id <= H was taken before t, give or take the instant between a
  // statement's NOW() and its snapshot, by a transaction begun by then. The cache was built
  // after `since` and lists every transaction open then; if every writer it lists began
  // after t, the one that took a hole's id below H has ended.
  const int64_t bound = std::min(since, oldest) - kProofMarginUs;
  while (!samples_.empty() && samples_.front().first < bound) {
    final_below_ = std::max(final_below_, samples_.front().second);
    samples_.pop_front();
  }
  // A transaction open longer than the settle window holds the proof back: judge by the
  // fallback rule meanwhile (said once), as the window promised.
  const bool stalled = !samples_.empty() && open &&
                       static_cast<double>(since - oldest) >= options_.settle_seconds * 1e6;
  if (stalled && !warned_stall_) {
    PrintLine(fmt::format("a transaction open for {} s holds back the proof that holes are final; "
                          "judging them by the event table's times and ids meanwhile (see docs/replay.md, late commits)",
                          (since - oldest) / 1'000'000));
    warned_stall_ = true;
  }
  proof_stalled_ = stalled;
  MarkDue();
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

Status Reader::MoveTo(std::unique_ptr<Connection> connection) {
  Result<ClassComparison> compare =
      ExactClassComparison(*connection, options_.events, WantedClasses(options_));
  if (!compare.ok()) return compare.status();
  if (compare->column != compare_column_) {
    return Status::InvalidInput(
        fmt::format("{} compares the event classes as {}, the server the events were read from as "
                    "{} (another server "
                    "version?): rebuild reading from one of them",
                    connection->options().Describe(), compare->column, compare_column_));
  }
  Result<size_t> query_bytes = PageQueryBytes(*connection, options_.result_buffer);
  if (!query_bytes.ok()) return query_bytes.status();
  std::vector<std::unique_ptr<Connection>> helpers;
  for (size_t i = 0; i < helpers_.size(); ++i) {
    Result<std::unique_ptr<Connection>> c = Connection::Open(connection->options());
    if (!c.ok()) return c.status().With("opening the reader's second connection");
    helpers.push_back(std::move(*c));
  }
  WaitForStartedPages();  // every worker is idle: stop them (they start again on the new
                          // connections)
  {
    std::lock_guard<std::mutex> lock(mu_);
    quit_ = true;
  }
  wake_.notify_all();
  for (Worker& w : workers_) w.thread.join();
  workers_.clear();
  quit_ = false;
  // The server moved to is the primary (a replica's holes may be its lag): proven by its
  // open transactions, watched holes below its proven head are read there once more.
  proves_ = CanSeeOpenTransactions(*connection);
  proof_.reset();
  samples_.clear();
  final_below_ = kBeforeFirstId;
  proof_stalled_ = false;
  connection_ = std::move(connection);
  helpers_ = std::move(helpers);
  query_bytes_ = *query_bytes;
  if (Result<Head> head = HeadOf(*connection_, options_.events, time_index_ >= 0); head.ok()) Sample(*head);
  return Status::Ok();
}

GapCounts Reader::gap_counts() const {
  return GapCounts{.watched = watched_.size() + due_.size(),
                   .due = !due_.empty(),
                   .late_events = late_events_,
                   .given_up = gaps_given_up_,
                   .peak_watched = peak_watched_,
                   .reconciled_events = reconciled_events_,
                   .reconciled_holes = final_holes_.size(),
                   .reconcile_seconds = reconcile_seconds_,
                   .proves_with_server = proves_};
}

Result<Head> Reader::ReadHead() {
  WaitForStartedPages();  // the first connection is free
  Result<Head> head = Status::Ok();
  Status s = RetryOnConnectionLoss(*connection_, [&] {
    head = HeadOf(*connection_, options_.events, time_index_ >= 0);
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
    if (!final_holes_.empty()) {
      WaitForStartedPages();
      return Reconcile();
    }
  }
  if (queued_check_ || !due_.empty()) {
    std::optional<GapCheck> kind = queued_check_;
    queued_check_.reset();
    if (!watched_.empty() || !due_.empty()) {
      WaitForStartedPages();  // the first connection reads the gaps
      return ReadGaps(kind);
    }
  }
  if (pages_.empty() && after_id_ >= head_id_) {
    if (!settled_.empty()) return ReadGaps(std::nullopt);  // hand on what was settled
    pool_->Drain();
    return std::unique_ptr<Batch>();
  }
  // The first page starts at the first id, wherever it is; a throttled reader paces
  // every page itself.
  const bool inline_read = helpers_.empty() || throttle_ != nullptr || after_id_ == kBeforeFirstId;
  if (pages_.empty() && inline_read) return NextInline();
  return NextFromWorkers();
}

Result<std::unique_ptr<Batch>> Reader::NextInline() {
  size_t limit = options_.batch_size;
  if (throttle_ != nullptr) {
    limit = throttle_->PageSize(limit);
    if (Status s = throttle_->Wait(limit); !s.ok()) return s;
  }
  Page page;
  page.lo = after_id_;
  page.hi = head_id_;
  page.limit = limit;
  page.batch = NewBatch();
  page.known = known_;
  page.final_below = final_below_;
  ReadRange(*connection_, page);
  if (page.status.ok() && throttle_ != nullptr) throttle_->Took(page.batch->rows_read);
  return Finish(page);
}

// Starts the first pages (one per connection at most, in id order) that are not started
// yet on idle connections; a range wider than the span now (the rest of a page cut at the
// batch, or a span that shrank) is split first. Called with mu_ held.
void Reader::StartPages() {
  bool started = false;
  for (size_t i = 0; i < std::min(pages_.size(), workers_.size()); ++i) {
    Page& page = *pages_[i];
    if (page.started) continue;
    auto idle = std::find_if(workers_.begin(), workers_.end(), [](const Worker& w) { return w.page == nullptr; });
    if (idle == workers_.end()) break;
    if (page.hi - page.lo > span_) pages_.insert(pages_.begin() + static_cast<long>(i) + 1, SplitOff(page, page.lo + span_));
    page.limit = options_.batch_size;
    page.batch = NewBatch();
    page.known = known_;
    page.final_below = final_below_;
    page.started = true;
    idle->page = &page;
    started = true;
  }
  if (started) wake_.notify_all();
}

std::unique_ptr<Reader::Page> Reader::SplitOff(Page& page, EventId at) {
  auto rest = std::make_unique<Page>();
  rest->lo = at;
  rest->hi = page.hi;
  page.hi = at;
  return rest;
}

Result<std::unique_ptr<Batch>> Reader::NextFromWorkers() {
  if (workers_.empty()) StartWorkers();
  if (pages_.empty()) planned_to_ = after_id_;  // the pages cover (after_id_, planned_to_]
  // Plan one page per connection; start them as connections are free; wait for the first.
  while (pages_.size() < workers_.size() && planned_to_ < head_id_) {
    auto page = std::make_unique<Page>();
    page->lo = planned_to_;
    page->hi = std::min(head_id_, planned_to_ + span_);
    planned_to_ = page->hi;
    pages_.push_back(std::move(page));
  }
  std::unique_ptr<Page> front;
  {
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      StartPages();
      if (pages_.front()->done) break;
      read_.wait(lock);
    }
    front = std::move(pages_.front());
    pages_.pop_front();
  }
  const bool cut = front->status.ok() && front->batch->rows_read >= front->limit && front->last_id < front->hi;
  if (cut) pages_.push_front(SplitOff(*front, front->last_id));  // the rest is the next page
  // The span that holds about a batch: from this page's density, nine tenths of it (so
  // that few ranges are cut), growing fourfold over a range with no event at all, up to the
  // whole range of 64-bit ids (a denser range than it guessed is cut at the batch).
  if (front->status.ok()) {
    const EventId width = front->hi - front->lo;
    const auto rows = static_cast<EventId>(front->batch->rows_read);
    const EventId n = static_cast<EventId>(options_.batch_size);
    EventId next = rows == 0 ? span_ * 4 : std::max<EventId>(1, width * n * 9 / (rows * 10));
    span_ = std::min<EventId>(std::max<EventId>(next, n), EventId(1) << 65);
  }
  return Finish(*front);
}

void Reader::ReadRange(Connection& connection, Page& page) {
  Batch& batch = *page.batch;
  batch.after_id = page.lo;
  batch.raw.reserve(page.limit);
  const std::string id = QuoteIdentifier(options_.events.id_column);
  const std::string lower = page.lo == kBeforeFirstId ? std::string("TRUE")
                                                      : fmt::format("{} > {}", id, IdText(page.lo));
  const std::string sql = Padded(fmt::format("{} WHERE {} AND {} <= {} ORDER BY {} LIMIT {}", select_, lower,
                                             id, IdText(page.hi), id, page.limit),
                                 page);
  page.status = RetryOnConnectionLoss(
      connection,
      [&] {
        page.last_id = page.lo;
        page.gap_times.clear();
        page.below_times.clear();
        page.first_time.reset();
        page.any = false;
        batch.rows_read = batch.skipped = 0;
        batch.raw.clear();
        batch.raw_columns.clear();
        batch.gaps.clear();
        batch.payloads.clear();
        return ReadPage(connection, sql, page);
      },
      [](const Status& lost, int attempt) {
        // Lost the server (restart, network): wait, reconnect, read the same page again.
        PrintLine(fmt::format("reader lost the connection ({}); reconnecting, attempt {}", lost.message(),
                              attempt));
      });
}

Result<std::unique_ptr<Batch>> Reader::Finish(Page& page) {
  if (!page.status.ok()) return page.status.With(fmt::format("reading events after id {}", IdText(page.lo)));
  EventId last_id = page.last_id;
  if (page.batch->rows_read < page.limit) {
    // The page ended below the limit: the batch covers its whole range, and any id
    // between its last row and the range's end is missing (for now).
    if (last_id < page.hi) {
      page.batch->gaps.push_back({last_id + 1, page.hi});
      page.gap_times.push_back(std::nullopt);  // the event above it is in a later page
      page.below_times.push_back(std::nullopt);
    }
    last_id = page.hi;
  }
  FaultPoint("read-batch");
  JudgeGaps(page);
  std::unique_ptr<Batch> batch = std::move(page.batch);
  last_payload_bytes_ = std::max(last_payload_bytes_, batch->payloads.size());
  batch->payloads.append(simdjson::SIMDJSON_PADDING, '\0');
  batch->last_id = last_id;
  batch->settled = std::move(settled_);
  settled_.clear();
  batch->sequence = next_sequence_++;
  after_id_ = last_id;
  return batch;
}

void Reader::JudgeGaps(Page& page) {
  // Holes that trailed earlier pages: this page's first event is the one above them.
  if (page.any && !trailing_.empty()) {
    for (const auto& [hole, known] : trailing_) {
      auto it = watched_.find(hole.lo);
      if (it == watched_.end() || it->second.hi != hole.hi) continue;  // settled meanwhile
      if (!proves_ && FallbackFinal(hole, page.first_time, known)) {  // final when it was read
        settled_.push_back(hole);
        Unwatch(it);
      } else if (page.first_time) {
        it->second.time = page.first_time;
        by_time_.emplace(*page.first_time, hole.lo);
      }
    }
    trailing_.clear();
  }
  std::vector<IdRange>& gaps = page.batch->gaps;
  size_t kept = 0;
  for (size_t i = 0; i < gaps.size(); ++i) {
    const IdRange hole = gaps[i];
    std::optional<int64_t> time = page.gap_times[i];
    // Never earlier than the event below the hole: events from a slow clock above it
    // cannot age it.
    if (time && page.below_times[i]) time = std::max(*time, *page.below_times[i]);
    const bool trailing = i + 1 == gaps.size() && hole.hi == page.hi && page.last_id < page.hi;
    if (FinalAgainst(hole, time, page.known, page.final_below)) continue;  // final at once
    if (trailing && time_index_ >= 0 && !proves_) trailing_.push_back({hole, page.known});
    Watch(hole, time);
    gaps[kept++] = hole;
  }
  gaps.resize(kept);
}

Status Reader::ReadPage(Connection& connection, const std::string& sql, Page& page) {
  Batch* batch = page.batch.get();
  EventId& last_id = page.last_id;
  Status bad_id;
  const int time_at = time_index_;
  // The fallback rule also reads the time of the event below each hole: the previous row's,
  // kept as text (parsed only at a hole).
  const bool below = time_at >= 0 && !proves_;
  char prev_time[64];
  size_t prev_time_size = 0;
  bool prev_has_time = false;
  bool after_hole = false;  // the row before this one followed a hole
  EventId first_id = 0;     // the page's first row
  Status s = connection.Stream(sql, [&](char** values, unsigned long* lengths) {
    const std::optional<EventId> id = ParseEventId(std::string_view(values[0], lengths[0]));
    if (!id) {
      bad_id = Status::InvalidInput(fmt::format("event id '{}' is not an integer",
                                                std::string_view(values[0], lengths[0])));
      return;
    }
    const bool hole = *id > last_id + 1;
    const bool first_row = page.any && last_id == first_id;  // this is the page's second row
    if ((hole || after_hole || !page.any || first_row) && time_at >= 0) {
      // The time of the event above a hole judges the hole (the earlier of it and the next
      // one's, so that one event whose time column runs ahead of its neighbours' cannot
      // keep a hole open); the page's first one judges the hole trailing the page before.
      std::optional<int64_t> time;
      if (values[time_at] != nullptr) time = EventTimeSeconds(std::string_view(values[time_at], lengths[time_at]));
      if (!page.any) page.first_time = time;
      if (page.any && first_row && time && page.first_time) page.first_time = std::min(*page.first_time, *time);
      if (after_hole && time && page.gap_times.back()) page.gap_times.back() = std::min(*page.gap_times.back(), *time);
      if (hole) {
        page.gap_times.push_back(time);
        page.below_times.push_back(page.any && prev_has_time
                                       ? EventTimeSeconds(std::string_view(prev_time, prev_time_size))
                                       : std::nullopt);
      }
    } else if (hole) {
      page.gap_times.push_back(std::nullopt);
      page.below_times.push_back(std::nullopt);
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
    if (!page.any) first_id = *id;
    page.any = true;
    last_id = *id;
    AddEvent(*batch, *id, values, lengths, with_class_, options_.scope.columns.size());
  });
  return s.ok() ? bad_id : s;
}

Status Reader::ReadIds(std::vector<IdRange> ranges, Batch& batch, std::vector<EventId>& found) {
  std::sort(ranges.begin(), ranges.end(), [](const IdRange& a, const IdRange& b) { return a.lo < b.lo; });
  const std::string id = QuoteIdentifier(options_.events.id_column);
  constexpr size_t kRangesPerQuery = 1000;
  for (size_t from = 0; from < ranges.size(); from += kRangesPerQuery) {
    std::string where;
    for (size_t i = from; i < std::min(ranges.size(), from + kRangesPerQuery); ++i) {
      const IdRange& r = ranges[i];
      if (!where.empty()) where += " OR ";
      where += r.lo == r.hi ? fmt::format("{} = {}", id, IdText(r.lo))
                            : fmt::format("{} BETWEEN {} AND {}", id, IdText(r.lo), IdText(r.hi));
    }
    const std::string sql = fmt::format("{} WHERE {} ORDER BY {}", select_, where, id);
    const size_t raw_before = batch.raw.size(), found_before = found.size();
    const size_t columns_before = batch.raw_columns.size();
    const size_t bytes_before = batch.payloads.size();
    const uint64_t rows_before = batch.rows_read, skipped_before = batch.skipped;
    Status s = RetryOnConnectionLoss(*connection_, [&] {
      batch.raw.resize(raw_before);
      batch.raw_columns.resize(columns_before);
      found.resize(found_before);
      batch.payloads.resize(bytes_before);
      batch.rows_read = rows_before;
      batch.skipped = skipped_before;
      return connection_->Stream(sql, [&](char** values, unsigned long* lengths) {
        const std::optional<EventId> got = ParseEventId(std::string_view(values[0], lengths[0]));
        if (!got) return;
        found.push_back(*got);
        AddEvent(batch, *got, values, lengths, with_class_, options_.scope.columns.size());
      });
    });
    if (!s.ok()) return s;
  }
  return Status::Ok();
}

void Reader::RememberFinal(IdRange range) {
  if (!options_.reconcile) return;
  final_holes_.Add(range);
  final_order_.emplace_back(std::chrono::steady_clock::now(), range);
  ForgetFinals(std::chrono::steady_clock::time_point::min());
}

void Reader::ForgetFinals(std::chrono::steady_clock::time_point older_than) {
  while (!final_order_.empty() && (final_order_.size() > kMaxReconciled || final_order_.front().first < older_than)) {
    final_holes_.Subtract(final_order_.front().second);
    final_order_.pop_front();
  }
}

Result<std::unique_ptr<Batch>> Reader::Reconcile() {
  const auto start = std::chrono::steady_clock::now();
  ForgetFinals(start - std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                           std::chrono::duration<double>(kReconcileHorizonSeconds)));
  std::unique_ptr<Batch> batch = NewBatch();
  batch->late = batch->reconciled = true;
  batch->after_id = batch->last_id = kBeforeFirstId;
  std::vector<EventId> found;
  if (Status s = ReadIds(final_holes_.ranges(), *batch, found); !s.ok()) {
    return s.With("reading again the holes judged final (reconciliation)");
  }
  for (EventId f : found) {
    final_holes_.Subtract({f, f});
    batch->settled.push_back({f, f});
  }
  reconciled_events_ += found.size();
  batch->payloads.append(simdjson::SIMDJSON_PADDING, '\0');
  batch->sequence = next_sequence_++;
  reconcile_seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return batch;
}

Result<std::unique_ptr<Batch>> Reader::ReadGaps(std::optional<GapCheck> kind) {
  std::unique_ptr<Batch> batch = NewBatch();
  batch->late = true;
  batch->after_id = batch->last_id = kBeforeFirstId;
  // What to read: the due holes, and for a check every watched one.
  std::vector<IdRange> ranges = due_.ranges();
  if (kind) {
    for (const auto& [lo, hole] : watched_) ranges.push_back({lo, hole.hi});
  }
  std::vector<EventId> found;
  if (Status s = ReadIds(std::move(ranges), *batch, found); !s.ok()) {
    return s.With("reading the ids watched for late commits");
  }
  late_events_ += found.size();
  // What is settled now: the ids found; the due holes (final: read once more after the
  // head proved them so); for a final check every hole; following, the holes watched the
  // settle window by the wall clock (given up).
  std::vector<IdRange>& settled = batch->settled;
  settled = std::move(settled_);
  settled_.clear();
  for (EventId f : found) {
    settled.push_back({f, f});
    auto it = watched_.upper_bound(f);
    if (it == watched_.begin() || std::prev(it)->second.hi < f) continue;  // a due hole's
    it = std::prev(it);
    const Hole hole = it->second;
    const EventId lo = it->first;
    Unwatch(it);
    if (lo < f) Watch({lo, f - 1}, hole.time, hole.since);
    if (f < hole.hi) Watch({f + 1, hole.hi}, hole.time, hole.since);
  }
  for (const IdRange& r : due_.ranges()) {
    settled.push_back(r);  // found ids inside come twice: harmless
    if (kind != GapCheck::kFinal) RememberFinal(r);
  }
  due_ = GapSet();
  if (kind == GapCheck::kFinal) {
    // Under the cut-over's lock no insert is open: every hole below the head is final for
    // good, those judged before too. Reconciliation covers what is judged after it.
    final_holes_ = GapSet();
    final_order_.clear();
    for (const auto& [lo, hole] : watched_) settled.push_back({lo, hole.hi});
    watched_.clear();
    by_time_.clear();
    trailing_.clear();
  } else if (kind == GapCheck::kFollow) {
    const auto now = std::chrono::steady_clock::now();
    const auto window = std::chrono::duration<double>(options_.settle_seconds);
    for (auto it = watched_.begin(); it != watched_.end();) {
      auto next = std::next(it);
      if (now - it->second.since >= window) {
        settled.push_back({it->first, it->second.hi});
        RememberFinal({it->first, it->second.hi});
        ++gaps_given_up_;
        Unwatch(it);
      }
      it = next;
    }
  }
  for (EventId f : found) final_holes_.Subtract({f, f});  // in a due hole: not final
  batch->payloads.append(simdjson::SIMDJSON_PADDING, '\0');
  batch->sequence = next_sequence_++;
  return batch;
}

}  // namespace rw

