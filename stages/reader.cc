#include "stages/reader.h"

#include <fmt/core.h>
#include <simdjson.h>

#include <cstdlib>

namespace rw {

Result<int64_t> ReadHeadId(Connection& c, const EventTableOptions& e) {
  Result<std::optional<std::string>> head = c.QueryValue(
      fmt::format("SELECT COALESCE(MAX({}), 0) FROM {}", QuoteIdentifier(e.id_column),
                  QuoteIdentifier(e.table)));
  if (!head.ok()) return head.status();
  return static_cast<int64_t>(std::stoll(head->value_or("0")));
}

Status CheckEventTable(Connection& c, const EventTableOptions& e) {
  Result<Rows> table = c.Query(fmt::format(
      "SELECT COLUMN_NAME FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() "
      "AND TABLE_NAME = {}",
      c.Quote(e.table)));
  if (!table.ok()) return table.status();
  if (table->rows.empty()) {
    return Status::NotFound(fmt::format("event table '{}' does not exist in database '{}'",
                                        e.table, c.options().database));
  }
  for (const std::string* col : {&e.id_column, &e.type_column, &e.payload_column}) {
    bool found = false;
    for (const auto& row : table->rows) found = found || (row[0] && *row[0] == *col);
    if (!found) {
      return Status::NotFound(fmt::format("event table '{}' has no column '{}' (see --id-column, "
                                          "--type-column, --payload-column)",
                                          e.table, *col));
    }
  }
  return Status::Ok();
}

Reader::Reader(std::unique_ptr<Connection> c, const ReaderOptions& o)
    : connection_(std::move(c)), options_(o), head_id_(o.head_id), after_id_(o.start_after_id) {
  const EventTableOptions& e = options_.events;
  // The type filter is pushed into the server: unhandled events cost an id, not a payload.
  query_prefix_ = fmt::format("SELECT {id}, CASE WHEN {type} = {cls} THEN COALESCE({payload}, '') "
                              "END FROM {table} WHERE {id} > ",
                              fmt::arg("id", QuoteIdentifier(e.id_column)),
                              fmt::arg("type", QuoteIdentifier(e.type_column)),
                              fmt::arg("cls", connection_->Quote(e.page_visited_class)),
                              fmt::arg("payload", QuoteIdentifier(e.payload_column)),
                              fmt::arg("table", QuoteIdentifier(e.table)));
}

Result<std::unique_ptr<Reader>> Reader::Make(std::unique_ptr<Connection> connection,
                                             const ReaderOptions& options) {
  if (options.batch_size == 0) return Status::InvalidInput("batch size must be positive");
  if (Status s = CheckEventTable(*connection, options.events); !s.ok()) return s;
  return std::unique_ptr<Reader>(new Reader(std::move(connection), options));
}

Result<std::unique_ptr<Batch>> Reader::Next() {
  if (after_id_ >= head_id_) return std::unique_ptr<Batch>();
  auto batch = std::make_unique<Batch>();
  batch->pool = pool_;
  batch->payloads = pool_->Take();
  batch->after_id = after_id_;
  batch->payloads.reserve(last_payload_bytes_ + last_payload_bytes_ / 4 + simdjson::SIMDJSON_PADDING);
  batch->raw.reserve(options_.batch_size);
  const std::string sql =
      fmt::format("{}{} AND {} <= {} ORDER BY {} LIMIT {}", query_prefix_, after_id_,
                  QuoteIdentifier(options_.events.id_column), head_id_,
                  QuoteIdentifier(options_.events.id_column), options_.batch_size);
  int64_t last_id = after_id_;
  Status s;
  for (int attempt = 0;; ++attempt) {
    last_id = after_id_;
    batch->rows_read = batch->skipped = 0;
    batch->raw.clear();
    batch->payloads.clear();
    s = ReadPage(sql, *batch, last_id);
    if (s.code() != Status::Code::kConnection || attempt >= kMaxReconnects) break;
    // Lost the server (restart, network): wait, reconnect, read the same page again.
    fmt::print(stderr, "rewind: reader lost the connection ({}); reconnecting, attempt {}\n",
               s.message(), attempt + 1);
    if (Status r = connection_->ReconnectAfterBackoff(attempt); !r.ok()) s = r;
  }
  if (!s.ok()) return s.With(fmt::format("reading events after id {}", after_id_));
  if (batch->rows_read == 0) {  // nothing left below the head
    after_id_ = head_id_;
    return std::unique_ptr<Batch>();
  }
  last_payload_bytes_ = batch->payloads.size();
  batch->payloads.append(simdjson::SIMDJSON_PADDING, '\0');
  batch->last_id = last_id;
  batch->sequence = next_sequence_++;
  after_id_ = last_id;
  return batch;
}

Status Reader::ReadPage(const std::string& sql, Batch& b, int64_t& last_id) {
  Batch* batch = &b;
  return connection_->Stream(sql, [&](char** values, unsigned long* lengths) {
    last_id = std::strtoll(values[0], nullptr, 10);
    ++batch->rows_read;
    if (values[1] == nullptr) {
      ++batch->skipped;
      return;
    }
    batch->raw.push_back(RawEvent{last_id, static_cast<uint32_t>(batch->payloads.size()),
                                  static_cast<uint32_t>(lengths[1])});
    batch->payloads.append(values[1], lengths[1]);
  });
}

}  // namespace rw
