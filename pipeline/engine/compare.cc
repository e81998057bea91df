#include "pipeline/engine/compare.h"

#include <fmt/core.h>

#include <cctype>

#include "stages/db/checkpoint_store.h"
#include "stages/db/live_shape.h"
#include "stages/db/table_admin.h"
#include "stages/db/table_schema.h"

namespace rw {
namespace {

// A key value as a person can read it: valid UTF-8, control bytes escaped, long ones cut.
std::string Readable(const std::optional<std::string>& v) {
  if (!v) return "NULL";
  std::string out;
  for (char ch : ValidUtf8(*v, 80)) {
    if (static_cast<unsigned char>(ch) < 0x20 || ch == 0x7f) {
      out += fmt::format("\\x{:02x}", static_cast<unsigned char>(ch));
    } else {
      out += ch;
    }
  }
  return "'" + out + "'";
}

}  // namespace

namespace {

// The sum that TableDiff reports: the first added column (a count), else none.
std::string TotalExpr(const TableSpec& spec) {
  for (const Column* v : table_schema::ValueColumns(spec)) {
    if (v->merge == Merge::kAdd) return fmt::format("SUM({})", QuoteIdentifier(v->name));
  }
  return "0";
}

}  // namespace

// The differing rows as examples, "(key): live values, rebuilt values": each row is its keys,
// then a live and a rebuilt value per value column, then whether it is in each table.
static std::vector<std::string> Examples(const Rows& ex, size_t nkeys, size_t nvalues) {
  std::vector<std::string> out;
  for (const auto& row : ex.rows) {
    std::string key, lv, rv;
    for (size_t i = 0; i < nkeys; ++i) key += (i ? ", " : "") + Readable(row[i]);
    for (size_t i = 0; i < nvalues; ++i) {
      const auto& l = row[nkeys + 2 * i];
      const auto& r = row[nkeys + 2 * i + 1];
      lv += (i ? ", " : "") + (nvalues == 1 && l ? *l : Readable(l));
      rv += (i ? ", " : "") + (nvalues == 1 && r ? *r : Readable(r));
    }
    const bool in_live = *row[nkeys + 2 * nvalues] != "0", in_new = *row[nkeys + 2 * nvalues + 1] != "0";
    out.push_back(fmt::format("({}): live {}, rebuilt {}", key, in_live ? lv : std::string("missing"),
                              in_new ? rv : std::string("missing")));
  }
  return out;
}

// What the comparison groups the union of the two tables by, key column by key column.
// GROUP BY compares long text by its first max_sort_length bytes only, and pads spaces: a
// hash of the whole value keeps two long URLs with a common prefix apart. A key the live
// table keeps as VARCHAR or CHAR is compared by its column's collation, as the table's unique
// key compares it: 'sku-1' and 'SKU-1' are one key of a case-blind table, and so are 'c1'
// and 'c1 ' under a PAD SPACE one; grouped by a hash of the collation's weights (of the
// whole value, whatever max_sort_length).
static Result<std::string> GroupKeys(Connection& c, const std::vector<const Column*>& key_columns,
                                     const std::string& live) {
  Result<Rows> short_text = c.Query(fmt::format(
      "SELECT LOWER(COLUMN_NAME), COALESCE(COLLATION_NAME, '') FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = "
      "DATABASE() AND TABLE_NAME = {} AND DATA_TYPE IN ('varchar', 'char')",
      c.Quote(live)));
  if (!short_text.ok()) return short_text.status();
  auto collation_of = [&](const Column& k) -> std::string {
    if (k.type != ColumnType::kText || k.storage.bytes) return {};
    std::string lower = k.name;
    for (char& ch : lower) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    for (const auto& row : short_text->rows) {
      if (row[0].value_or("") == lower) return row[1].value_or("");
    }
    return {};
  };
  std::string group;
  for (size_t i = 0; i < key_columns.size(); ++i) {
    const std::string col = QuoteIdentifier(key_columns[i]->name);
    const std::string collation = collation_of(*key_columns[i]);
    group += i ? ", " : "";
    if (!collation.empty()) {
      const bool pads = collation.find("nopad") == std::string::npos;
      group += fmt::format("SHA2(WEIGHT_STRING({}), 256)", pads ? fmt::format("TRIM(TRAILING ' ' FROM {})", col) : col);
    } else if (key_columns[i]->type == ColumnType::kText) {
      group += fmt::format("SHA2({}, 256), {}", col, col);
    } else {
      group += col;
    }
  }
  return group;
}

Result<TableDiff> CompareTables(Connection& c, const TableSpec& spec, const std::string& live,
                                const std::string& rebuilt) {
  if (spec.by_statements) {
    // A read model of handlers describes no columns: compared on the table's own.
    Result<std::optional<live_shape::Shape>> shape = live_shape::Read(c, rebuilt);
    if (!shape.ok()) return shape.status();
    if (!*shape) return Status::NotFound(fmt::format("no table {} to compare", rebuilt));
    return CompareTables(c, live_shape::ComparedSpec(**shape, spec.name), live, rebuilt);
  }
  TableDiff d;
  d.table = live;
  // The read model's own columns: its keys, then its values. A storage column (the hash
  // of text keys) is neither compared nor shown, so the blog's original table layout
  // (without it) compares too.
  const std::vector<const Column*> key_columns = table_schema::KeyColumns(spec);
  const std::vector<const Column*> value_columns = table_schema::ValueColumns(spec);
  std::string keys, values, sides, differs;
  for (size_t i = 0; i < key_columns.size(); ++i) keys += (i ? ", " : "") + QuoteIdentifier(key_columns[i]->name);
  Result<std::string> grouped = GroupKeys(c, key_columns, live);
  if (!grouped.ok()) return grouped.status();
  const std::string& group_keys = *grouped;
  for (size_t i = 0; i < value_columns.size(); ++i) {
    const std::string col = QuoteIdentifier(value_columns[i]->name);
    values += ", " + col;
    sides += fmt::format(", MAX(IF(side = 0, {0}, NULL)) AS l{1}, MAX(IF(side = 1, {0}, NULL)) AS r{1}", col, i);
    // Byte for byte: a PAD SPACE collation calls 'a' and 'a ' equal.
    differs += value_columns[i]->type == ColumnType::kText
                   ? fmt::format(" OR NOT (BINARY l{0} <=> BINARY r{0})", i)
                   : fmt::format(" OR NOT (l{0} <=> r{0})", i);
  }
  const std::string total = TotalExpr(spec);
  Result<bool> live_exists = table_admin::Exists(c, live);
  if (!live_exists.ok()) return live_exists.status();
  auto totals = [&](const std::string& table, uint64_t& rows, int64_t& sum) -> Status {
    Result<Rows> r = c.Query(fmt::format("SELECT COUNT(*), COALESCE({}, 0) FROM {}", total,
                                         QuoteIdentifier(table)));
    if (!r.ok()) return r.status();
    rows = std::stoull(*r->rows[0][0]);
    sum = std::stoll(*r->rows[0][1]);
    return Status::Ok();
  };
  if (Status s = totals(rebuilt, d.rebuilt_rows, d.rebuilt_total); !s.ok()) return s;
  if (!*live_exists) {
    d.only_rebuilt = d.rebuilt_rows;
    d.examples.push_back(fmt::format("the live table {} does not exist", live));
    return d;
  }
  if (Status s = totals(live, d.live_rows, d.live_total); !s.ok()) return s;
  // Fast path: equal fingerprints mean equal tables.
  Result<Rows> fl = c.Query(FingerprintQuery(spec, live));
  Result<Rows> fr = c.Query(FingerprintQuery(spec, rebuilt));
  if (!fl.ok()) return fl.status();
  if (!fr.ok()) return fr.status();
  if (fl->rows == fr->rows) return d;
  // One pass over both tables: group the union by key, keep the keys that differ.
  const std::string differing = fmt::format(
      "SELECT {keys}{sides}, SUM(side = 0) AS in_live, SUM(side = 1) AS in_new FROM (SELECT "
      "{keys}{values}, 0 AS side FROM {live} UNION ALL SELECT {keys}{values}, 1 FROM {new}) u "
      "GROUP BY {group} HAVING in_live = 0 OR in_new = 0{differs}",
      fmt::arg("keys", keys), fmt::arg("group", group_keys), fmt::arg("values", values),
      fmt::arg("sides", sides), fmt::arg("differs", differs), fmt::arg("live", QuoteIdentifier(live)),
      fmt::arg("new", QuoteIdentifier(rebuilt)));
  Result<Rows> counts = c.Query(
      "SELECT COALESCE(SUM(in_new = 0), 0), COALESCE(SUM(in_live = 0), 0), "
      "COALESCE(SUM(in_live > 0 AND in_new > 0), 0) FROM (" + differing + ") d");
  if (!counts.ok()) return counts.status();
  d.only_live = std::stoull(*counts->rows[0][0]);
  d.only_rebuilt = std::stoull(*counts->rows[0][1]);
  d.count_differs = std::stoull(*counts->rows[0][2]);
  if (!d.identical()) {
    Result<Rows> ex = c.Query(differing + " LIMIT 5");
    if (!ex.ok()) return ex.status();
    d.examples = Examples(*ex, key_columns.size(), value_columns.size());
  }
  return d;
}

std::string FingerprintQuery(const TableSpec& spec, const std::string& table) {
  std::string cols;
  for (const Column& col : spec.columns) {
    // NULL as a byte no value text holds (CONCAT_WS would skip it).
    cols += (cols.empty() ? "" : ", ") +
            (col.key() || col.merge == Merge::kAdd ? QuoteIdentifier(col.name)
                                                   : fmt::format("IFNULL({}, 0x1e)", QuoteIdentifier(col.name)));
  }
  return fmt::format(
      "SELECT COUNT(*), {1}, SUM(CRC32(CONCAT_WS(0x1f, {0}))), "
      "SUM(CAST(CONV(LEFT(MD5(CONCAT_WS(0x1f, {0})), 15), 16, 10) AS UNSIGNED)) FROM {2}",
      cols, TotalExpr(spec), QuoteIdentifier(table));
}

}  // namespace rw
