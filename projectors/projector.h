// The projector interface: one read model, rebuilt from PageVisit events.
//
// A projector knows its table, the fields it needs, how to fold events into in-memory
// state, and how to turn that state into rows. It never sees threads, connections or
// transactions: the projector runner (stages/) owns those, calls Apply() with events
// in increasing id order, and calls Flush() inside the transaction that also writes
// the checkpoint.
//
// Thread safety: none. A projector instance is used by one runner, serially.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "projectors/page_visit.h"

namespace rw {

// Receives the rows of a flush, one value at a time, column by column in the order
// of TableSpec::columns, then EndRow(). Implemented by the writer stage.
class RowSink {
 public:
  virtual ~RowSink() = default;
  virtual void Int(int64_t value) = 0;
  virtual void Date(int32_t days) = 0;             // DATE from days since 1970-01-01
  virtual void DateTime(int64_t epoch_seconds) = 0;  // DATETIME, wall clock
  virtual void Text(std::string_view bytes) = 0;   // stored byte for byte
  virtual void Binary(std::string_view bytes) = 0;  // BINARY(n), any bytes
  virtual void EndRow() = 0;
};

struct Column {
  std::string name;
  std::string sql_type;  // e.g. "DATE NOT NULL"
  // A storage detail derived from the other columns (the URL tables' hash key): written,
  // but not part of the read model's content, so never compared or shown.
  bool derived = false;
};

// The read model's table. The last column is the counter; the others form the key.
// Rows written by Flush() are deltas: the writer adds them to what the table holds.
struct TableSpec {
  std::string name;             // live table name, e.g. "visits_per_day"
  std::vector<Column> columns;  // key columns, then the counter column
  // Keys, and any derived column they need, after the columns in CREATE TABLE:
  // e.g. "PRIMARY KEY (`date`)".
  std::string key_definition;
};

class Projector {
 public:
  virtual ~Projector() = default;

  virtual std::string_view name() const = 0;
  virtual const TableSpec& table() const = 0;
  // Bitwise OR of Field values this projector reads.
  virtual uint32_t fields() const = 0;
  // True when the result depends on the order of events (Apply must see id order).
  virtual bool order_dependent() const { return false; }

  // Folds events into the in-memory state. REQUIRES: ids increase across calls.
  virtual void Apply(std::span<const PageVisit> visits) = 0;
  // Rows that the next Flush() would write.
  virtual size_t pending_rows() const = 0;
  // Emits the pending deltas (in key order where cheap) and forgets them. The runner
  // keeps what they became until its transaction commits, and redoes that on retries.
  virtual void Flush(RowSink& sink) = 0;
};

// What `rewind list` shows and the factory that builds a fresh instance.
struct ProjectorInfo {
  std::string name;
  std::string description;
  std::unique_ptr<Projector> (*make)();
};

// Every known projector, in a stable order.
const std::vector<ProjectorInfo>& AllProjectors();

}  // namespace rw
