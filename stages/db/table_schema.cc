#include "stages/db/table_schema.h"

#include <fmt/core.h>

#include "stages/db/connection.h"

namespace rw::table_schema {
namespace {

// The bytes a key column takes in an InnoDB index (utf8mb4: four a character).
size_t KeyBytes(const Column& c) {
  if (c.type != ColumnType::kText) return 8;
  return c.storage.length * (c.storage.bytes ? 1 : 4);
}

// InnoDB's longest index key (DYNAMIC rows).
constexpr size_t kMaxKeyBytes = 3072;

// The text key columns stored by their hash: all of them, when one has no declared length
// (any length, beyond an index) or the key is longer than an index takes; else none (a
// PRIMARY KEY on the columns themselves).
std::vector<const Column*> TextKeys(const TableSpec& spec) {
  std::vector<const Column*> out;
  bool indexable = true;
  size_t bytes = 0;
  for (const Column& c : spec.columns) {
    if (!c.key()) continue;
    bytes += KeyBytes(c);
    if (c.type != ColumnType::kText) continue;
    out.push_back(&c);
    indexable = indexable && c.storage.length > 0;
  }
  if (indexable && bytes <= kMaxKeyBytes) out.clear();
  return out;
}

// Whether a declared text column takes the table's default character set and collation
// (the database's: no collation declared).
bool TakesDatabaseCollation(const Column& c) {
  return c.type == ColumnType::kText && c.storage.declared() && !c.storage.bytes && c.storage.collation.empty();
}

// The DEFAULT that computes the hash for writers other than rewind: SHA-256 of the one
// text key, or of each text key as "<byte length>:<bytes>", concatenated.
std::string HashDefault(const std::vector<const Column*>& text_keys) {
  if (text_keys.size() == 1) return fmt::format("UNHEX(SHA2({}, 256))", QuoteIdentifier(text_keys[0]->name));
  std::string parts;
  for (const Column* c : text_keys) {
    const std::string q = QuoteIdentifier(c->name);
    parts += fmt::format("{}LENGTH({}), ':', {}", parts.empty() ? "" : ", ", q, q);
  }
  return fmt::format("UNHEX(SHA2(CONCAT({}), 256))", parts);
}

}  // namespace

std::string HashColumn(const TableSpec& spec) {
  if (spec.bare) return {};
  const auto text = TextKeys(spec);
  if (text.empty()) return {};
  std::string name;
  for (const Column* c : text) name += (name.empty() ? "" : "_") + c->name;
  return name + "_hash";
}

std::string IdColumn(const Column& c) { return KeepsEventId(c.merge) ? c.name + "__id" : std::string(); }

std::string SqlType(const Column& c) {
  std::string type;
  if (c.storage.declared()) {
    type = c.storage.sql;
    if (!c.storage.collation.empty()) type += " COLLATE " + c.storage.collation;
    return type + (c.key() || c.merge == Merge::kAdd ? " NOT NULL" : " NULL");
  }
  switch (c.type) {
    case ColumnType::kInt64: type = "BIGINT"; break;
    case ColumnType::kUInt64: type = "BIGINT UNSIGNED"; break;
    case ColumnType::kDecimal: type = fmt::format("DECIMAL({},{})", c.precision, c.scale); break;
    case ColumnType::kDouble: type = "DOUBLE"; break;
    case ColumnType::kText: type = "MEDIUMTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin"; break;
    case ColumnType::kDate: type = "DATE"; break;
    case ColumnType::kDateTime: type = "DATETIME"; break;
  }
  return type + (c.key() || c.merge == Merge::kAdd ? " NOT NULL" : " NULL");
}

std::string CreateTableSql(const TableSpec& spec, const std::string& name) {
  std::string sql = fmt::format("CREATE TABLE {} (", QuoteIdentifier(name));
  const auto text = TextKeys(spec);
  const std::string hash = HashColumn(spec);
  std::string key_name, key_columns;
  for (const Column& c : spec.columns) {
    if (c.key() && (c.type != ColumnType::kText || hash.empty())) {
      key_name += (key_name.empty() ? "" : "_") + c.name;
      key_columns += (key_columns.empty() ? "" : ", ") + QuoteIdentifier(c.name);
    }
  }
  bool hash_written = false;
  for (const Column& c : spec.columns) {
    if (!c.key() && !hash.empty() && !hash_written) {
      sql += fmt::format("{} BINARY(32) NOT NULL DEFAULT ({}), ", QuoteIdentifier(hash), HashDefault(text));
      hash_written = true;
    }
    sql += fmt::format("{} {}, ", QuoteIdentifier(c.name), SqlType(c));
    if (KeepsEventId(c.merge)) sql += fmt::format("{} {} NULL, ", QuoteIdentifier(IdColumn(c)), kIdType);
  }
  if (!hash.empty() && !hash_written) {
    sql += fmt::format("{} BINARY(32) NOT NULL DEFAULT ({}), ", QuoteIdentifier(hash), HashDefault(text));
  }
  if (hash.empty()) {
    sql += fmt::format("PRIMARY KEY ({})", key_columns);
  } else {
    for (const Column* c : text) key_name += (key_name.empty() ? "" : "_") + c->name;
    if (key_name.size() > kMaxIdentifierBytes) key_name = "read_model_key";
    key_columns += (key_columns.empty() ? "" : ", ") + QuoteIdentifier(hash);
    sql += fmt::format("UNIQUE KEY {} ({})", QuoteIdentifier(key_name), key_columns);
  }
  // rewind's text columns name their collation; a declared text column without one takes
  // the database's, as the application's own CREATE TABLE would.
  for (const Column& c : spec.columns) {
    if (TakesDatabaseCollation(c)) return sql + ") ENGINE=InnoDB";
  }
  return sql + ") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin";
}

bool KeyComparedByCollation(const TableSpec& spec, std::string_view database_collation) {
  // Every collation but binary and the NO PAD binary ones folds something: case, accents, or
  // (PAD SPACE: utf8mb4_bin too) trailing spaces.
  auto folds = [](std::string_view collation) {
    return collation != "binary" && collation.find("_nopad_bin") == std::string_view::npos;
  };
  for (const Column& c : spec.columns) {
    if (!c.key() || c.type != ColumnType::kText || !c.storage.declared() || c.storage.bytes) continue;
    if (folds(c.storage.collation.empty() ? database_collation : std::string_view(c.storage.collation))) return true;
  }
  return false;
}

std::string StoredColumnList(const TableSpec& spec) {
  const std::string hash = HashColumn(spec);
  std::string out;
  bool hash_written = hash.empty();
  for (const Column& c : spec.columns) {
    if (!c.key() && !hash_written) {
      out += ", " + QuoteIdentifier(hash);
      hash_written = true;
    }
    out += (out.empty() ? "" : ", ") + QuoteIdentifier(c.name);
    if (KeepsEventId(c.merge) && !spec.bare) out += ", " + QuoteIdentifier(IdColumn(c));
  }
  if (!hash_written) out += ", " + QuoteIdentifier(hash);
  return out;
}

std::string MergeClause(const TableSpec& spec) {
  std::string out;
  for (const Column& c : spec.columns) {
    const std::string q = QuoteIdentifier(c.name);
    std::string rule;
    switch (c.merge) {
      case Merge::kKey: continue;
      case Merge::kAdd: rule = fmt::format("{0} + VALUES({0})", q); break;
      case Merge::kMin: rule = fmt::format("COALESCE(LEAST({0}, VALUES({0})), {0}, VALUES({0}))", q); break;
      case Merge::kMax: rule = fmt::format("COALESCE(GREATEST({0}, VALUES({0})), {0}, VALUES({0}))", q); break;
      case Merge::kFirst:
      case Merge::kLast:
        if (spec.bare) {
          // No id beside the value (the application's table): the value of the later flush
          // wins, or the one the row has. The runner applies such a read model in id order.
          rule = c.merge == Merge::kLast ? fmt::format("IF(VALUES({0}) IS NOT NULL, VALUES({0}), {0})", q)
                                         : fmt::format("COALESCE({0}, VALUES({0}))", q);
          break;
        }
        {
        // The id first (assignments run left to right, each seeing the ones before): the
        // delta's id wins when it is the lower (first) or higher (last) one, or the row has
        // none (first: only when the row has no value either, as another writer's value is
        // kept). The value then follows whichever id won.
        const std::string id = QuoteIdentifier(IdColumn(c));
        const std::string wins = c.merge == Merge::kFirst
                                     ? fmt::format("VALUES({0}) < {0} OR ({0} IS NULL AND {1} IS NULL)", id, q)
                                     : fmt::format("VALUES({0}) > {0} OR {0} IS NULL", id);
        out += fmt::format("{0}{1} = IF(VALUES({1}) IS NOT NULL AND ({2}), VALUES({1}), {1})",
                           out.empty() ? "" : ", ", id, wins);
        rule = fmt::format("IF(VALUES({1}) IS NOT NULL AND {1} <=> VALUES({1}), VALUES({0}), {0})", q, id);
        break;
      }
    }
    out += fmt::format("{}{} = {}", out.empty() ? "" : ", ", q, rule);
  }
  if (out.empty()) {  // a table of keys only: a duplicate changes nothing
    const Column& k = spec.columns.front();
    out = fmt::format("{0} = {0}", QuoteIdentifier(k.name));
  }
  return " ON DUPLICATE KEY UPDATE " + out;
}

std::vector<const Column*> KeyColumns(const TableSpec& spec) {
  std::vector<const Column*> out;
  for (const Column& c : spec.columns) {
    if (c.key()) out.push_back(&c);
  }
  return out;
}

TableSpec KeysOnly(const TableSpec& spec) {
  TableSpec keys = spec;
  keys.columns.clear();
  for (const Column* c : KeyColumns(spec)) keys.columns.push_back(*c);
  return keys;
}

std::vector<const Column*> ValueColumns(const TableSpec& spec) {
  std::vector<const Column*> out;
  for (const Column& c : spec.columns) {
    if (!c.key()) out.push_back(&c);
  }
  return out;
}

KeyHash::KeyHash(const TableSpec& spec) {
  if (spec.bare || TextKeys(spec).empty()) return;  // no hash column
  for (size_t i = 0; i < spec.columns.size(); ++i) {
    const Column& c = spec.columns[i];
    text_key_.push_back(c.key() && c.type == ColumnType::kText);
    if (c.key()) last_key_ = static_cast<int>(i);
    if (text_key_.back()) ++text_keys_;
  }
  if (text_keys_ == 0) last_key_ = -1;
}

bool KeyHash::Next(std::string_view text) {
  if (last_key_ < 0) return false;
  const size_t i = column_++;
  if (i < text_key_.size() && text_key_[i]) {
    if (text_keys_ == 1) {
      // Once per distinct text, not once per row.
      if (auto it = seen_.find(text); it != seen_.end()) {
        digest_ = it->second;
      } else {
        digest_ = Sha256(text);
        if (seen_.size() < kMaxSeen) seen_.emplace(std::string(text), digest_);
      }
    } else {
      joined_ += fmt::format("{}:", text.size());
      joined_.append(text);
    }
  }
  if (static_cast<int>(i) == last_key_) {
    if (text_keys_ > 1) {
      digest_ = Sha256(joined_);
      joined_.clear();
    }
    return true;
  }
  return false;
}

}  // namespace rw::table_schema
