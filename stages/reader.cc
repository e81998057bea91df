#include "stages/reader.h"
#include "stages/retry.h"

#include <fmt/core.h>
#include <simdjson.h>

#include <algorithm>
#include <cstdlib>

#include "stages/fault.h"

namespace rw {

Result<EventId> ReadHeadId(Connection& c, const EventTableOptions& e) {
  Result<std::optional<std::string>> head = c.QueryValue(fmt::format(
      "SELECT MAX({}) FROM {}", QuoteIdentifier(e.id_column), QuoteIdentifier(e.table)));
  if (!head.ok()) return head.status();
  if (!*head) return kBeforeFirstId;
  std::optional<EventId> id = ParseEventId(**head);
  if (!id) return Status::InvalidInput(fmt::format("the head id '{}' is not an integer", **head));
  return *id;
}

Status CheckEventTable(Connection& c, const EventTableOptions& e, bool with_time_column) {
  Result<Rows> table = c.Query(fmt::format(
      "SELECT COLUMN_NAME, DATA_TYPE, IS_NULLABLE FROM information_schema.COLUMNS WHERE "
      "TABLE_SCHEMA = DATABASE() AND TABLE_NAME = {}",
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
    if (column(*col) == nullptr) {
      return Status::NotFound(fmt::format("event table '{}' has no column '{}' (see --id-column, "
                                          "--type-column, --payload-column, --time-column)",
                                          e.table, *col));
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

// The classes a run wants, in the order of ReadScope::classes (the page-visited one alone
// when that is empty).
std::vector<std::string> WantedClasses(const ReaderOptions& o) {
  std::vector<std::string> classes = o.scope.classes;
  if (classes.empty()) classes.push_back(o.events.page_visited_class);
  return classes;
}

bool HasFourByteCharacter(const std::string& text) {
  for (unsigned char ch : text) {
    if (ch >= 0xF0) return true;
  }
  return false;
}

}  // namespace

Result<ClassComparison> ExactClassComparison(Connection& c, const EventTableOptions& e,
                                             const std::vector<std::string>& classes) {
  const std::string type = QuoteIdentifier(e.type_column);
  const ClassComparison bytes{"BINARY " + type, "BINARY "};
  Result<std::optional<std::string>> charset = c.QueryValue(fmt::format(
      "SELECT COALESCE(CHARACTER_SET_NAME, '') FROM information_schema.COLUMNS WHERE "
      "TABLE_SCHEMA = DATABASE() AND TABLE_NAME = {} AND COLUMN_NAME = {}",
      c.Quote(e.table), c.Quote(e.type_column)));
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

Reader::Reader(std::unique_ptr<Connection> c, const ReaderOptions& o, const ClassComparison& compare)
    : connection_(std::move(c)), options_(o), head_id_(o.head_id), after_id_(o.start_after_id) {
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
  std::string columns;
  for (const std::string& col : options_.scope.columns) columns += ", " + QuoteIdentifier(col);
  select_ = fmt::format("SELECT {id}, CASE WHEN {match}{until} THEN COALESCE({payload}, '') END{index}{columns} "
                        "FROM {table}",
                        fmt::arg("until", until), fmt::arg("id", QuoteIdentifier(e.id_column)),
                        fmt::arg("match", match), fmt::arg("index", index), fmt::arg("columns", columns),
                        fmt::arg("payload", QuoteIdentifier(e.payload_column)),
                        fmt::arg("table", QuoteIdentifier(e.table)));
  const auto now = std::chrono::steady_clock::now();
  for (const IdRange& r : options_.watched.ranges()) watched_.push_back({r, now});
  if (!watched_.empty()) queued_check_ = GapCheck::kRecheck;
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
  return std::unique_ptr<Reader>(new Reader(std::move(connection), options, *compare));
}

std::unique_ptr<Batch> Reader::NewBatch() {
  auto batch = std::make_unique<Batch>();
  batch->pool = pool_;
  batch->payloads = pool_->Take();
  batch->payloads.reserve(last_payload_bytes_ + last_payload_bytes_ / 4 + simdjson::SIMDJSON_PADDING);
  return batch;
}

void Reader::Watch(const std::vector<IdRange>& gaps) {
  const auto now = std::chrono::steady_clock::now();
  for (const IdRange& g : gaps) watched_.push_back({g, now});
  if (watched_.size() > kMaxWatched) {
    const size_t drop = watched_.size() - kMaxWatched;
    fmt::print(stderr, "rewind: more than {} gaps in the ids are watched; giving up the {} oldest\n",
               kMaxWatched, drop);
    gaps_given_up_ += drop;
    watched_.erase(watched_.begin(), watched_.begin() + static_cast<long>(drop));
  }
}

Result<std::unique_ptr<Batch>> Reader::Next() {
  if (queued_check_) {
    const GapCheck kind = *queued_check_;
    queued_check_.reset();
    if (!watched_.empty()) return ReadGaps(kind);
  }
  if (after_id_ >= head_id_) {
    pool_->Drain();
    return std::unique_ptr<Batch>();
  }
  size_t limit = options_.batch_size;
  if (throttle_ != nullptr) {
    limit = throttle_->PageSize(limit);
    if (Status s = throttle_->Wait(limit); !s.ok()) return s;
  }
  std::unique_ptr<Batch> batch = NewBatch();
  batch->after_id = after_id_;
  batch->raw.reserve(limit);
  const std::string id = QuoteIdentifier(options_.events.id_column);
  const std::string lower = after_id_ == kBeforeFirstId ? std::string("TRUE")
                                                        : fmt::format("{} > {}", id, IdText(after_id_));
  const std::string sql = fmt::format("{} WHERE {} AND {} <= {} ORDER BY {} LIMIT {}", select_,
                                      lower, id, IdText(head_id_), id, limit);
  EventId last_id = after_id_;
  Status s = RetryOnConnectionLoss(
      *connection_,
      [&] {
        last_id = after_id_;
        batch->rows_read = batch->skipped = 0;
        batch->raw.clear();
        batch->raw_columns.clear();
        batch->gaps.clear();
        batch->payloads.clear();
        return ReadPage(sql, *batch, last_id);
      },
      [](const Status& lost, int attempt) {
        // Lost the server (restart, network): wait, reconnect, read the same page again.
        fmt::print(stderr, "rewind: reader lost the connection ({}); reconnecting, attempt {}\n",
                   lost.message(), attempt);
      });
  if (!s.ok()) return s.With(fmt::format("reading events after id {}", IdText(after_id_)));
  if (throttle_ != nullptr) throttle_->Took(batch->rows_read);
  if (batch->rows_read < limit) {
    // The page ended below the limit: the batch covers everything up to the head, and
    // any id between its last row and the head is missing (for now).
    if (last_id < head_id_) batch->gaps.push_back({last_id + 1, head_id_});
    last_id = head_id_;
  }
  FaultPoint("read-batch");
  Watch(batch->gaps);
  last_payload_bytes_ = std::max(last_payload_bytes_, batch->payloads.size());
  batch->payloads.append(simdjson::SIMDJSON_PADDING, '\0');
  batch->last_id = last_id;
  batch->sequence = next_sequence_++;
  after_id_ = last_id;
  return batch;
}

Status Reader::ReadPage(const std::string& sql, Batch& b, EventId& last_id) {
  Batch* batch = &b;
  Status bad_id;
  Status s = connection_->Stream(sql, [&](char** values, unsigned long* lengths) {
    const std::optional<EventId> id = ParseEventId(std::string_view(values[0], lengths[0]));
    if (!id) {
      bad_id = Status::InvalidInput(fmt::format("event id '{}' is not an integer",
                                                std::string_view(values[0], lengths[0])));
      return;
    }
    if (*id > last_id + 1) batch->gaps.push_back({last_id + 1, *id - 1});
    last_id = *id;
    AddEvent(*batch, *id, values, lengths, with_class_, options_.scope.columns.size());
  });
  return s.ok() ? bad_id : s;
}

Result<std::unique_ptr<Batch>> Reader::ReadGaps(GapCheck kind) {
  std::unique_ptr<Batch> batch = NewBatch();
  batch->late = true;
  batch->after_id = batch->last_id = kBeforeFirstId;
  const std::string id = QuoteIdentifier(options_.events.id_column);
  std::vector<EventId> found;
  constexpr size_t kRangesPerQuery = 500;
  for (size_t from = 0; from < watched_.size(); from += kRangesPerQuery) {
    std::string where;
    for (size_t i = from; i < std::min(watched_.size(), from + kRangesPerQuery); ++i) {
      const IdRange& r = watched_[i].range;
      where += fmt::format("{}{} BETWEEN {} AND {}", where.empty() ? "" : " OR ", id,
                           IdText(r.lo), IdText(r.hi));
    }
    const std::string sql = fmt::format("{} WHERE {} ORDER BY {}", select_, where, id);
    const size_t raw_before = batch->raw.size(), found_before = found.size();
    const size_t columns_before = batch->raw_columns.size();
    const size_t bytes_before = batch->payloads.size();
    const uint64_t rows_before = batch->rows_read, skipped_before = batch->skipped;
    Status s = RetryOnConnectionLoss(*connection_, [&] {
      batch->raw.resize(raw_before);
      batch->raw_columns.resize(columns_before);
      found.resize(found_before);
      batch->payloads.resize(bytes_before);
      batch->rows_read = rows_before;
      batch->skipped = skipped_before;
      return connection_->Stream(sql, [&](char** values, unsigned long* lengths) {
        const std::optional<EventId> got = ParseEventId(std::string_view(values[0], lengths[0]));
        if (!got) return;
        found.push_back(*got);
        AddEvent(*batch, *got, values, lengths, with_class_, options_.scope.columns.size());
      });
    });
    if (!s.ok()) return s.With("reading the ids watched for late commits");
  }
  late_events_ += found.size();
  // What is settled now: the ids found, and, by the kind of check, the ranges that are
  // final (under the lock) or were watched longer than the settle window.
  for (EventId f : found) batch->settled.push_back({f, f});
  const auto now = std::chrono::steady_clock::now();
  const auto window = std::chrono::duration<double>(options_.settle_seconds);
  std::vector<Watched> still;
  for (const Watched& w : watched_) {
    GapSet left;
    left.Add(w.range);
    for (EventId f : found) {
      if (f >= w.range.lo && f <= w.range.hi) left.Subtract({f, f});
    }
    const bool expired = now - w.since >= window;
    for (const IdRange& r : left.ranges()) {
      if (kind == GapCheck::kFinal || expired) {
        batch->settled.push_back(r);
        if (kind != GapCheck::kFinal) ++gaps_given_up_;
      } else {
        still.push_back({r, w.since});
      }
    }
  }
  watched_.swap(still);
  batch->payloads.append(simdjson::SIMDJSON_PADDING, '\0');
  batch->sequence = next_sequence_++;
  return batch;
}

}  // namespace rw
