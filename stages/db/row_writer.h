// Row writers: the two ways rewind writes rows into MariaDB, as RowSinks (projectors/projector.h)
// a projector's flush, ingest's event rows and stress's generated events are written into.
// TsvBuilder builds a LOAD DATA LOCAL INFILE file in the one text format LoadDataInto() names;
// UpsertBuilder builds multi-row INSERT ... ON DUPLICATE KEY UPDATE statements.
// WrittenKeys and SplitByKey let a flush into a table whose every row this writer wrote
// send the rows of keys it never wrote by LOAD DATA and only the others as upserts.
//
// Thread safety: a builder (and WrittenKeys, SplitByKey) is used by one thread at a time;
// LoadDataInto() is a pure function.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "projectors/projector.h"
#include "stages/db/connection.h"
#include "stages/db/table_schema.h"

namespace rw {

// The tail of a LOAD DATA statement for TsvBuilder's rows (Connection::LoadData's
// `load_tail`): `INTO TABLE <table, quoted> CHARACTER SET utf8mb4 FIELDS TERMINATED BY '\t'
// ESCAPED BY '\\' LINES TERMINATED BY '\n' (<column_list>)`. `column_list` goes in as given
// (already quoted where it must be).
std::string LoadDataInto(std::string_view table, std::string_view column_list);

// Builds the rows of a flush as LOAD DATA's default text format (tab-separated,
// backslash-escaped, one row a line). With a spec, it adds the hash of text keys where
// the table stores it.
class TsvBuilder final : public RowSink {
 public:
  TsvBuilder() = default;
  explicit TsvBuilder(const TableSpec& spec) : hash_(spec) {}
  void Int(int64_t value) override;
  void Date(int32_t days) override;
  void DateTimeMicros(int64_t epoch_micros) override;
  void Text(std::string_view bytes) override;
  void Number(std::string_view literal) override;
  void Double(double value) override;
  void Null() override;
  void EndRow() override;
  // The rows so far, in pieces of about kChunkBytes (whole rows each): a large flush is
  // never copied into one growing buffer.
  std::vector<std::string> Take();
  uint64_t rows() const { return rows_; }
  size_t bytes() const { return done_bytes_ + data_.size(); }
  static constexpr size_t kChunkBytes = 1 << 20;

 private:
  void Separator();
  void Escaped(std::string_view bytes);
  void Hash(std::string_view text = {});
  std::string data_;  // the current piece
  std::vector<std::string> done_;
  size_t done_bytes_ = 0;
  table_schema::KeyHash hash_;
  bool row_open_ = false;
  uint64_t rows_ = 0;
};

// Builds the multi-row upsert statements for one table; or, with kDelete and a spec of the
// key columns alone, the statements that delete the rows of the keys it is given
// (`DELETE FROM t WHERE (k1, k2, <hash>) IN ((...), ...)`: the row an upsert of the key
// would merge into, under the table's own collation); or, with kSelect, the statements that
// read `select` (columns, as SQL) of those rows.
class UpsertBuilder final : public RowSink {
 public:
  enum class Statement : uint8_t { kUpsert, kDelete, kSelect };
  UpsertBuilder(Connection& connection, const TableSpec& spec, std::string target_table,
                size_t statement_bytes, Statement statement = Statement::kUpsert, std::string_view select = {});
  void Int(int64_t value) override;
  void Date(int32_t days) override;
  void DateTimeMicros(int64_t epoch_micros) override;
  void Text(std::string_view bytes) override;
  void Number(std::string_view literal) override;
  void Double(double value) override;
  void Null() override;
  void EndRow() override;
  // The finished statements; the builder is empty afterwards.
  std::vector<std::string> Take();
  uint64_t rows() const { return rows_; }

 private:
  void Separator();
  void Close();
  void Hash(std::string_view text = {});

  Connection& connection_;
  std::string prefix_, suffix_;
  const size_t statement_bytes_;
  std::string current_;
  size_t row_start_ = 0;  // where the open row begins in current_ (its ',' included)
  std::vector<std::string> done_;
  table_schema::KeyHash hash_;
  bool row_open_ = false;
  uint64_t rows_ = 0;
};

// The keys written into one table, as 64-bit hashes of their values (an open-addressing
// set: one cache line per lookup, 16 bytes a key at most). A hash says "maybe written": two
// keys that share one are both taken as written, which costs an upsert where a LOAD DATA
// would do, never a wrong row.
class WrittenKeys {
 public:
  bool MaybeContains(uint64_t hash) const;
  void Add(const std::vector<uint64_t>& hashes);
  size_t size() const { return size_; }
  size_t bytes() const { return slots_.capacity() * sizeof(uint64_t); }
  void Clear() {
    std::vector<uint64_t>().swap(slots_);  // given back (`slots_ = {}` keeps the capacity)
    size_ = 0;
  }

 private:
  static uint64_t Slot(uint64_t hash) { return hash == 0 ? 1 : hash; }  // 0 marks a free slot
  void Insert(uint64_t slot);
  std::vector<uint64_t> slots_;  // a power of two, at most half full
  size_t size_ = 0;
};

// Routes each row by its key (the first `key_columns` values): a key maybe in `written` goes
// to `existing` (upserts), any other to `fresh` (a LOAD DATA); fresh_keys() are the hashes
// of the keys sent to `fresh`, for WrittenKeys::Add once the rows are on their way.
class SplitByKey final : public RowSink {
 public:
  SplitByKey(size_t key_columns, const WrittenKeys& written, RowSink& fresh, RowSink& existing)
      : key_columns_(key_columns), written_(written), fresh_(fresh), existing_(existing) {}
  void Int(int64_t value) override;
  void Date(int32_t days) override;
  void DateTimeMicros(int64_t epoch_micros) override;
  void Text(std::string_view bytes) override;
  void Number(std::string_view literal) override;
  void Double(double value) override;
  void Null() override;
  void EndRow() override;
  std::vector<uint64_t>& fresh_keys() { return fresh_keys_; }

 private:
  // A key value, kept until the key is complete: its kind, its bytes.
  enum class Kind : char { kInt, kDate, kDateTime, kText, kNumber, kDouble, kNull };
  // A key value is kept (and hashed once the key is whole); a value after the key goes on.
  bool Key(Kind kind, std::string_view bytes);
  void Route();  // the key is whole: choose the sink, hand it the key values
  const size_t key_columns_;
  const WrittenKeys& written_;
  RowSink& fresh_;
  RowSink& existing_;
  RowSink* to_ = nullptr;  // this row's sink, once its key is whole
  size_t column_ = 0;
  std::string key_;  // the key's values: kind, length, bytes each
  std::vector<uint64_t> fresh_keys_;
};

// Passes a flush's rows on without the event id a projector gives after each first or last
// value (projectors/projector.h): for a table of the application's shape (TableSpec::bare),
// which has no `__id` columns.
class WithoutEventIds final : public RowSink {
 public:
  WithoutEventIds(const TableSpec& spec, RowSink& to);
  void Int(int64_t value) override { if (!Skip()) to_.Int(value); }
  void Date(int32_t days) override { if (!Skip()) to_.Date(days); }
  void DateTimeMicros(int64_t epoch_micros) override { if (!Skip()) to_.DateTimeMicros(epoch_micros); }
  void Text(std::string_view bytes) override { if (!Skip()) to_.Text(bytes); }
  void Number(std::string_view literal) override { if (!Skip()) to_.Number(literal); }
  void Double(double value) override { if (!Skip()) to_.Double(value); }
  void Null() override { if (!Skip()) to_.Null(); }
  void EndRow() override {
    at_ = 0;
    to_.EndRow();
  }

 private:
  bool Skip() { return at_ < skip_.size() && skip_[at_++]; }
  std::vector<bool> skip_;  // per value of a row: an event id
  size_t at_ = 0;
  RowSink& to_;
};

// Groups a flush's rows, for a table of the application's shape (TableSpec::bare, after
// WithoutEventIds), by the value columns they write: a NULL value is one no event of the
// flush touched, and the table's column may be NOT NULL with a default. Each group's spec
// names the keys and the columns its rows write, so that its inserts leave the others to
// the table's DEFAULT (as the application's own upsert does) and its upserts leave them
// as they are.
class ByWrittenColumns final : public RowSink {
 public:
  explicit ByWrittenColumns(const TableSpec& spec) : spec_(spec) {}
  void Int(int64_t value) override { Add(Kind::kInt).i = value; }
  void Date(int32_t days) override { Add(Kind::kDate).i = days; }
  void DateTimeMicros(int64_t epoch_micros) override { Add(Kind::kDateTime).i = epoch_micros; }
  void Text(std::string_view bytes) override { Add(Kind::kText).text = bytes; }
  void Number(std::string_view literal) override { Add(Kind::kNumber).text = literal; }
  void Double(double value) override { Add(Kind::kDouble).d = value; }
  void Null() override { Add(Kind::kNull); }
  void EndRow() override;

  struct Group;
  // The groups so far (in the order their first row came); the sink is empty afterwards.
  std::vector<Group> Take();

 private:
  enum class Kind : char { kInt, kDate, kDateTime, kText, kNumber, kDouble, kNull };
  struct Value {
    Kind kind = Kind::kNull;
    int64_t i = 0;
    double d = 0;
    std::string text;
  };
  Value& Add(Kind kind) {
    row_.emplace_back().kind = kind;
    return row_.back();
  }

 public:
  struct Group {
    TableSpec spec;             // the keys and the columns these rows write
    std::vector<Value> values;  // their values, row after row, without the NULLs
    size_t rows = 0;
    void Replay(RowSink& to) const;  // the rows, as spec's columns
  };

 private:
  const TableSpec& spec_;
  std::vector<Value> row_;
  std::vector<Group> groups_;
  std::vector<std::vector<bool>> masks_;  // per group: which of spec_'s columns it writes
};

}  // namespace rw
