// TableSchema: how a read model's described table (projectors/projector.h) is stored.
//
// The one place that turns typed columns into SQL: the CREATE TABLE, the column list a
// bulk load names, the upsert that merges a flush's deltas into the table, and the
// storage columns a projector never sees. A key with text columns is stored as a unique
// key on (the other key columns, SHA-256 of the text): text can be any length, beyond an
// InnoDB key prefix. rewind computes the hash and sends it; any other writer (the
// application's own projector inserting after the swap) gets it from the column's
// DEFAULT. A key of declared types (varchar(N), char(N), binary(N), integers: issue 38,
// part 2) an index can hold is a PRIMARY KEY on its columns, without the hash. A declared
// text column takes its declared collation, or the database's. perf/HISTORY.md has the measurements: 1.45x faster bulk loads than MariaDB's
// long unique key, and 1.5-1.8x faster again than the server hashing every row.
//
// Thread safety: stateless functions; KeyHash is a value used by one writer.
#pragma once

#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "projectors/projector.h"
#include "base/sha256.h"

namespace rw::table_schema {

// "" when the key has no text column; else e.g. "uri_hash".
std::string HashColumn(const TableSpec& spec);
// A first or last column's hidden companion, "<name>__id": the id of the event whose value
// the row holds, which the merge compares (projector.h); "" for other columns. Stored right
// after its column, as DECIMAL(39,0) NULL (every signed and unsigned BIGINT id, and the number of a ULID or a UUID).
std::string IdColumn(const Column& column);
inline constexpr const char* kIdType = "DECIMAL(39,0)";
// The SQL type of a column, with its nullability (keys and sums NOT NULL).
std::string SqlType(const Column& column);
std::string CreateTableSql(const TableSpec& spec, const std::string& name);
// Every stored column in storage order (keys, the hash if any, values each followed by its
// id column if any), quoted.
std::string StoredColumnList(const TableSpec& spec);
// Whether the table's key compares a text column by a collation that folds bytes (a
// declared varchar or char key, under its collation or else `database_collation`): keys
// rewind keeps apart may then be one row, which only upserts merge (no LOAD DATA).
bool KeyComparedByCollation(const TableSpec& spec, std::string_view database_collation);
// The ON DUPLICATE KEY UPDATE clause that merges a delta row into the table.
std::string MergeClause(const TableSpec& spec);
// The read model's own columns (no storage column): what verify compares.
std::vector<const Column*> KeyColumns(const TableSpec& spec);
std::vector<const Column*> ValueColumns(const TableSpec& spec);
// `spec` with its key columns alone (and so, where the table stores it, the hash of its text
// keys): the table's unique key, which the upserts merge on, for statements that name rows
// by key (a delete, a read of committed values).
TableSpec KeysOnly(const TableSpec& spec);

// Follows a row's values as a writer emits them and says when to add the hash of the
// text keys (right after the last key column).
class KeyHash {
 public:
  KeyHash() = default;  // no hash: a table without text keys, or rows that are not a read model's
  explicit KeyHash(const TableSpec& spec);
  bool active() const { return last_key_ >= 0; }
  // Called once per value emitted, in column order. Returns true when the digest is
  // ready to be written (after the last key column). `text` is the value of a text column.
  bool Next(std::string_view text = {});
  void EndRow() { column_ = 0; }
  std::string_view digest() const {
    return {reinterpret_cast<const char*>(digest_.data()), digest_.size()};
  }

 private:
  std::vector<bool> text_key_;
  int last_key_ = -1;   // index of the last key column, when the key has text; else -1
  int text_keys_ = 0;
  size_t column_ = 0;
  std::string joined_;  // several text keys: length-prefixed, so no two keys collide
  Sha256Digest digest_{};
  // Digests of the texts seen (a URL is on many rows: one per day or week), up to a bound.
  struct TextHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  std::unordered_map<std::string, Sha256Digest, TextHash, std::equal_to<>> seen_;
  static constexpr size_t kMaxSeen = 200'000;
};

}  // namespace rw::table_schema
