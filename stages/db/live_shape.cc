#include "stages/db/live_shape.h"

#include <fmt/core.h>

#include <algorithm>
#include <cctype>

#include "stages/db/checkpoint_store.h"
#include "stages/db/table_admin.h"
#include "stages/db/table_schema.h"

namespace rw::live_shape {
namespace {

std::string Lower(std::string s) {
  for (char& ch : s) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return s;
}

bool OneOf(const std::string& v, std::initializer_list<const char*> names) {
  for (const char* n : names) {
    if (v == n) return true;
  }
  return false;
}

bool IsInteger(const std::string& t) { return OneOf(t, {"tinyint", "smallint", "mediumint", "int", "bigint"}); }
bool IsFloat(const std::string& t) { return OneOf(t, {"float", "double"}); }
bool IsText(const std::string& t) {
  return OneOf(t, {"char", "varchar", "tinytext", "text", "mediumtext", "longtext", "enum", "set"});
}
bool IsBinary(const std::string& t) {
  return OneOf(t, {"binary", "varbinary", "tinyblob", "blob", "mediumblob", "longblob"});
}

const char* DeclaredKind(const Column& c) {
  switch (c.type) {
    case ColumnType::kInt64:
    case ColumnType::kUInt64: return "integer";
    case ColumnType::kDecimal: return "decimal";
    case ColumnType::kDouble: return "double";
    case ColumnType::kText: return "text";
    case ColumnType::kDate: return "date";
    case ColumnType::kDateTime: return "datetime";
  }
  return "?";
}

std::string Declared(const Column& c) {
  if (c.storage.declared()) return c.storage.sql + (c.storage.collation.empty() ? "" : " COLLATE " + c.storage.collation);
  if (c.type == ColumnType::kDecimal) return fmt::format("decimal({},{})", c.precision, c.scale);
  return DeclaredKind(c);
}

const char* MergeWord(Merge m) {
  switch (m) {
    case Merge::kKey: return "key";
    case Merge::kAdd: return "added up";
    case Merge::kMin: return "min";
    case Merge::kMax: return "max";
    case Merge::kFirst: return "first";
    case Merge::kLast: return "last";
  }
  return "?";
}

const TableColumn* Find(const Shape& shape, const std::string& name) {
  const std::string want = Lower(name);
  for (const TableColumn& c : shape.columns) {
    if (Lower(c.name) == want) return &c;
  }
  return nullptr;
}

std::string Joined(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

// Whether the table is exactly the one rewind would make for `spec` (an older rewind's swap,
// before swapped tables were recorded): SHOW CREATE TABLE of both, from the column list on.
bool SameAsRewinds(Connection& c, const TableSpec& spec) {
  const std::string probe = "rewind_shape_probe";
  std::string ddl = table_schema::CreateTableSql(spec, probe);
  ddl.replace(0, std::string("CREATE TABLE").size(), "CREATE TEMPORARY TABLE");
  if (!c.Execute("DROP TEMPORARY TABLE IF EXISTS " + QuoteIdentifier(probe)).ok() || !c.Execute(ddl).ok()) {
    return false;
  }
  auto body = [&](const std::string& table) -> std::string {
    Result<Rows> r = c.Query("SHOW CREATE TABLE " + QuoteIdentifier(table));
    if (!r.ok() || r->rows.empty() || r->rows[0].size() < 2 || !r->rows[0][1]) return {};
    const std::string& text = *r->rows[0][1];
    const size_t open = text.find('(');
    return open == std::string::npos ? std::string() : text.substr(open);
  };
  const std::string mine = body(probe), theirs = body(spec.name);
  (void)c.Execute("DROP TEMPORARY TABLE IF EXISTS " + QuoteIdentifier(probe));
  return !mine.empty() && mine == theirs;
}

}  // namespace

Result<std::optional<Shape>> Read(Connection& c, const std::string& table) {
  const std::string t = c.Quote(table);
  Result<Rows> cols = c.Query(fmt::format(
      "SELECT COLUMN_NAME, LOWER(DATA_TYPE), COLUMN_TYPE, COALESCE(COLLATION_NAME, ''), IS_NULLABLE, "
      "COLUMN_DEFAULT IS NOT NULL, EXTRA, COALESCE(NUMERIC_PRECISION, 0), COALESCE(NUMERIC_SCALE, DATETIME_PRECISION, 0) "
      "FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = {} "
      "ORDER BY ORDINAL_POSITION",
      t));
  if (!cols.ok()) return cols.status();
  if (cols->rows.empty()) return std::optional<Shape>();
  Shape shape;
  for (const auto& row : cols->rows) {
    TableColumn col;
    col.name = row[0].value_or("");
    col.data_type = row[1].value_or("");
    col.column_type = row[2].value_or("");
    col.collation = row[3].value_or("");
    col.nullable = row[4].value_or("") == "YES";
    col.has_default = row[5].value_or("0") == "1";
    const std::string extra = Lower(row[6].value_or(""));
    col.auto_increment = extra.find("auto_increment") != std::string::npos;
    col.generated = extra.find("generated") != std::string::npos;
    col.precision = std::stoi(row[7].value_or("0"));
    col.scale = std::stoi(row[8].value_or("0"));
    shape.columns.push_back(std::move(col));
  }
  Result<Rows> keys = c.Query(fmt::format(
      "SELECT INDEX_NAME, COLUMN_NAME, SUB_PART FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = "
      "DATABASE() AND TABLE_NAME = {} AND NON_UNIQUE = 0 ORDER BY INDEX_NAME = 'PRIMARY' DESC, "
      "INDEX_NAME, SEQ_IN_INDEX",
      t));
  if (!keys.ok()) return keys.status();
  for (const auto& row : keys->rows) {
    const std::string name = row[0].value_or("");
    if (shape.unique_keys.empty() || shape.unique_keys.back().name != name) shape.unique_keys.push_back({name, {}});
    // A prefix (customer(3)) is not the column: it compares the first characters only, and
    // keys that share them would fold into one row. Named with its length, it matches no key.
    shape.unique_keys.back().columns.push_back(row[1].value_or("") +
                                               (row[2] ? fmt::format("({})", *row[2]) : std::string()));
  }
  Result<std::optional<std::string>> triggers = c.QueryValue(fmt::format(
      "SELECT COUNT(*) FROM information_schema.TRIGGERS WHERE EVENT_OBJECT_SCHEMA = DATABASE() AND "
      "EVENT_OBJECT_TABLE = {}",
      t));
  if (!triggers.ok()) return triggers.status();
  shape.triggers = std::stoi(triggers->value_or("0"));
  Result<std::optional<std::string>> fks = c.QueryValue(fmt::format(
      "SELECT COUNT(*) FROM information_schema.REFERENTIAL_CONSTRAINTS WHERE CONSTRAINT_SCHEMA = "
      "DATABASE() AND (TABLE_NAME = {0} OR REFERENCED_TABLE_NAME = {0})",
      t));
  if (!fks.ok()) return fks.status();
  shape.foreign_keys = std::stoi(fks->value_or("0"));
  return std::optional<Shape>(std::move(shape));
}

std::string FitOf(const Column& declared, const TableColumn& column) {
  const std::string& t = column.data_type;
  const bool text = IsText(t) || IsBinary(t);
  switch (declared.type) {
    case ColumnType::kInt64:
    case ColumnType::kUInt64:
      if (IsInteger(t) || IsFloat(t) || t == "decimal" || text) return {};
      break;
    case ColumnType::kDecimal:
      if (t == "decimal") {
        if (column.scale < declared.scale) {
          return fmt::format("{} keeps {} decimals, the read model's values {}: they would be rounded",
                             column.column_type, column.scale, declared.scale);
        }
        if (column.precision - column.scale < declared.precision - declared.scale) {
          return fmt::format("{} holds {} digits before the point, the read model's values up to {}",
                             column.column_type, column.precision - column.scale,
                             declared.precision - declared.scale);
        }
        return {};
      }
      if (IsInteger(t) && declared.scale == 0) return {};
      if (IsFloat(t) || text) return {};
      break;
    case ColumnType::kDouble:
      if (IsFloat(t) || t == "decimal" || text) return {};
      break;
    case ColumnType::kText:
      if (text) return {};
      if (IsInteger(t) || t == "decimal") {
        return fmt::format("{} holds numbers, the read model's values are text (declare the key or "
                           "value with type = \"bigint\" or a decimal)",
                           column.column_type);
      }
      break;
    case ColumnType::kDate:
      if (OneOf(t, {"date", "datetime", "timestamp"}) || text) return {};
      break;
    case ColumnType::kDateTime:
      if (OneOf(t, {"datetime", "timestamp"})) {
        // A declared datetime(N) keeps N fractional digits: a column that keeps fewer cuts them.
        const size_t open = declared.storage.sql.find('(');
        const int digits = open == std::string::npos ? 0 : declared.storage.sql[open + 1] - '0';
        if (digits > column.scale) {
          return fmt::format("{} keeps {} fractional digits of a second, the read model's values {}: they would be "
                             "cut",
                             column.column_type, column.scale, digits);
        }
        return {};
      }
      if (text) return {};
      if (t == "date") return fmt::format("{} has no time of day, the read model's values do", column.column_type);
      break;
  }
  return fmt::format("{} cannot hold the read model's {} values", column.column_type, Declared(declared));
}

// The account of each column: what the read model writes beside what the table has, then
// the table's columns it does not write and how they are filled. Returns the declared key's
// columns, lower case.
static std::vector<std::string> AccountColumns(const TableSpec& spec, const Shape& shape, Judgement& j) {
  std::vector<std::string> keys;
  for (const Column& d : spec.columns) {
    const TableColumn* col = Find(shape, d.name);
    std::string line = fmt::format("  {:<24} the read model writes {} ({})", d.name, Declared(d), MergeWord(d.merge));
    if (!col) {
      j.problems.push_back(fmt::format("the column {} is not in the table", d.name));
      line += "; the table has no such column: missing";
    } else if (col->generated) {
      // The server computes it: a write into it is refused, and rewind never writes one.
      j.problems.push_back(fmt::format("the column {} is generated by the table (the server computes it): the "
                                       "read model cannot write it; leave it out of the declaration",
                                       col->name));
      line += fmt::format("; the table generates {} ({}): not writable", col->name, col->column_type);
    } else {
      line += fmt::format("; the table has {}{}", col->column_type, col->nullable ? "" : " NOT NULL");
      if (std::string why = FitOf(d, *col); !why.empty()) {
        j.problems.push_back(fmt::format("the column {}: {}", col->name, why));
        line += ": does not fit (" + why + ")";
      } else {
        line += ": fits";
      }
      // Every collation but a NO PAD binary one folds something: case, accents, or (PAD SPACE,
      // utf8mb4_bin too) trailing spaces: 'c1' and 'c1 ' are one key of the table.
      if (d.key() && d.type == ColumnType::kText && (IsText(col->data_type)) && !col->collation.empty() &&
          col->collation.find("_nopad_bin") == std::string::npos) {
        j.bulk_load = false;
        line += fmt::format(" (compared by {}: keys equal under it are one row)", col->collation);
      }
    }
    if (d.key()) keys.push_back(Lower(d.name));
    j.account.push_back(std::move(line));
  }
  for (const TableColumn& col : shape.columns) {
    bool written = false;
    for (const Column& d : spec.columns) written = written || Lower(d.name) == Lower(col.name);
    if (written) continue;
    const char* filled = col.auto_increment ? "its auto-increment"
                         : col.generated   ? "its generation"
                         : col.has_default ? "its default"
                         : col.nullable    ? "NULL"
                                           : nullptr;
    if (filled) {
      j.account.push_back(fmt::format("  {:<24} not written; the table has {}: filled by {}", col.name, col.column_type, filled));
    } else {
      j.problems.push_back(fmt::format("the column {} ({} NOT NULL, no default) is not written by the read model",
                                       col.name, col.column_type));
      j.account.push_back(fmt::format("  {:<24} not written; the table has {} NOT NULL without a default: "
                                      "every row would be refused", col.name, col.column_type));
    }
  }
  return keys;
}

// rewind's shape: rows go by LOAD DATA unless a declared text key compares by a collation
// that folds bytes (its own, or the database's).
static Result<Judgement> InRewindsShape(Connection& c, const TableSpec& spec, Judgement j) {
  Result<std::optional<std::string>> collation = c.QueryValue("SELECT @@collation_database");
  if (!collation.ok()) return collation.status();
  j.bulk_load = !table_schema::KeyComparedByCollation(spec, collation->value_or("binary"));
  return j;
}

TableSpec ComparedSpec(const Shape& shape, const std::string& name) {
  auto compared = [&](const std::string& column) {
    for (const TableColumn& col : shape.columns) {
      if (Lower(col.name) == Lower(column)) return !col.auto_increment && !col.generated;
    }
    return false;
  };
  const UniqueKey* key = nullptr;
  for (const UniqueKey& k : shape.unique_keys) {
    if (std::all_of(k.columns.begin(), k.columns.end(), compared)) {
      key = &k;
      break;
    }
  }
  TableSpec spec;
  spec.name = name;
  spec.bare = true;
  auto column_of = [](const TableColumn& col, Merge merge) {
    Column c;
    c.name = col.name;
    c.merge = merge;
    const std::string& t = col.data_type;
    if (t == "tinyint" || t == "smallint" || t == "mediumint" || t == "int" || t == "bigint" || t == "year") {
      c.type = ColumnType::kInt64;
    } else if (t == "decimal") {
      c.type = ColumnType::kDecimal;
    } else if (t == "double" || t == "float") {
      c.type = ColumnType::kDouble;
    } else if (t == "date") {
      c.type = ColumnType::kDate;
    } else if (t == "datetime" || t == "timestamp") {
      c.type = ColumnType::kDateTime;
    } else {
      c.type = ColumnType::kText;
      c.storage.bytes = t.find("binary") != std::string::npos || t.find("blob") != std::string::npos;
    }
    return c;
  };
  auto in_key = [&](const TableColumn& col) {
    if (key == nullptr) return true;
    return std::any_of(key->columns.begin(), key->columns.end(),
                       [&](const std::string& k) { return Lower(k) == Lower(col.name); });
  };
  for (const TableColumn& col : shape.columns) {
    if (compared(col.name) && in_key(col)) spec.columns.push_back(column_of(col, Merge::kKey));
  }
  for (const TableColumn& col : shape.columns) {
    if (compared(col.name) && !in_key(col)) spec.columns.push_back(column_of(col, Merge::kLast));
  }
  return spec;
}

// What a copy LIKE the table does not keep, as problems: its triggers (dropped with the old
// table at the swap) and its foreign keys.
static void RefuseWhatACopyLoses(const Shape& shape, Judgement& j) {
  if (shape.triggers > 0) {
    j.problems.push_back(fmt::format("the table has {} trigger(s), which the swap would drop with the old table",
                                     shape.triggers));
  }
  if (shape.foreign_keys > 0) {
    j.problems.push_back(fmt::format("the table has {} foreign key(s) (to or from it), which a copy LIKE it "
                                     "does not keep", shape.foreign_keys));
  }
}

Result<Judgement> Judge(Connection& c, const TableSpec& spec, bool reshape) {
  Judgement j;
  Result<std::optional<Shape>> read = Read(c, spec.name);
  if (!read.ok()) return read.status();
  if (spec.by_statements) {
    // Its handlers' statements write the application's table: rebuilt LIKE it, always.
    if (!*read) {
      return Status::InvalidInput(fmt::format(
          "{}: its handlers run the application's statements into the application's table, and there is no table "
          "{}: create it as the application's migration does; nothing was done",
          spec.name, spec.name));
    }
    for (const TableColumn& col : (*read)->columns) {
      if (col.generated) j.generated.push_back(col.name);
    }
    j.kind = Kind::kApplications;
    j.bulk_load = false;
    j.account.push_back("  written by its handlers' statements, in the table's own shape");
    RefuseWhatACopyLoses(**read, j);
    return j;
  }
  if (!*read) return InRewindsShape(c, spec, j);  // kNew
  const Shape& shape = **read;
  for (const TableColumn& col : shape.columns) {
    if (col.generated) j.generated.push_back(col.name);
  }
  Result<std::optional<std::string>> kind = checkpoint_store::RecordedKind(c, spec.name);
  if (!kind.ok()) return kind.status();
  if ((*kind && **kind == "live") || SameAsRewinds(c, spec)) {
    j.kind = Kind::kRewinds;
    return InRewindsShape(c, spec, j);
  }
  j.kind = reshape ? Kind::kReshaped : Kind::kApplications;
  std::vector<std::string> keys = AccountColumns(spec, shape, j);
  std::sort(keys.begin(), keys.end());
  const UniqueKey* match = nullptr;
  std::string uniques;
  bool prefix = false;  // a key on a column's prefix (its name then carries the length)
  for (const UniqueKey& k : shape.unique_keys) {
    std::vector<std::string> cols;
    for (const std::string& n : k.columns) {
      cols.push_back(Lower(n));
      prefix = prefix || n.find('(') != std::string::npos;
    }
    std::sort(cols.begin(), cols.end());
    if (cols == keys && !match) match = &k;
    uniques += fmt::format("{}{} ({})", uniques.empty() ? "" : ", ", k.name, Joined(k.columns));
  }
  std::vector<std::string> declared_keys;
  for (const Column* k : table_schema::KeyColumns(spec)) declared_keys.push_back(k->name);
  if (match) {
    j.account.push_back(fmt::format("  key ({}): the table's unique key {}", Joined(declared_keys), match->name));
  } else {
    j.problems.push_back(fmt::format("the read model's key ({}) is not a unique key of the table (its unique keys: {}){}",
                                     Joined(declared_keys), uniques.empty() ? "none" : uniques,
                                     prefix ? "; a key on a prefix (column(N)) compares only its first N characters, "
                                              "so keys that share them would fold into one row"
                                            : ""));
    j.account.push_back(fmt::format("  key ({}): not a unique key of the table (its unique keys: {})",
                                    Joined(declared_keys), uniques.empty() ? "none" : uniques));
  }
  RefuseWhatACopyLoses(shape, j);
  if (j.kind == Kind::kReshaped) return InRewindsShape(c, spec, j);
  return j;
}

Status Refusal(const std::string& table, const Judgement& j) {
  std::string text = fmt::format(
      "the read model's rows do not fit the application's table {}, and rewind keeps a live table's shape: ",
      table);
  for (size_t i = 0; i < j.problems.size(); ++i) text += (i ? "; " : "") + j.problems[i];
  text += ". Nothing was done. Column by column:\n";
  for (const std::string& line : j.account) text += line + "\n";
  text += fmt::format(
      "Declare the read model to match the table, or pass --reshape to replace {} with rewind's shape "
      "(your table is then kept aside as {}{})",
      table, table, table_admin::kKeptSuffix);
  return Status::InvalidInput(text);
}

}  // namespace rw::live_shape
