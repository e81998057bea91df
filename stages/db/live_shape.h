// The live table of a declared read model, as the application made it: its columns, its
// unique keys, and whether a rebuild can fill a copy of it (CREATE TABLE ... LIKE) in its
// shape instead of replacing it with rewind's. The one place that reads a live table's shape
// and judges whether a read model's rows fit it (issue 38, part 1).
//
// A table rewind made (recorded as kind "live" at the swap, or identical to the shape rewind
// would make) is rewind's, and rebuilt in rewind's shape; any other is the application's.
// The application's is kept: the rebuild's table is made LIKE it, the declared columns are
// written into it by name (no storage columns), and the swap leaves SHOW CREATE TABLE as it
// was. What cannot be kept is refused before any work, column by column.
//
// Thread safety: stateless functions; each call uses the connection it is given.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "projectors/projector.h"
#include "stages/db/connection.h"

namespace rw::live_shape {

struct TableColumn {
  std::string name;
  std::string data_type;    // information_schema's DATA_TYPE, lower case ("varchar")
  std::string column_type;  // its COLUMN_TYPE ("varchar(255)", "int(10) unsigned")
  std::string collation;    // "" for columns without one
  bool nullable = false;
  bool has_default = false;
  bool auto_increment = false;
  bool generated = false;
  int precision = 0, scale = 0;  // decimal; scale: a time's fractional digits too
};

struct UniqueKey {
  std::string name;
  std::vector<std::string> columns;
};

struct Shape {
  std::vector<TableColumn> columns;  // in the table's order
  std::vector<UniqueKey> unique_keys;
  int triggers = 0;
  int foreign_keys = 0;  // referencing it or from it
};

// The shape of `table` in the connection's database; nullopt when there is no such table.
Result<std::optional<Shape>> Read(Connection& c, const std::string& table);

// How a rebuild treats a read model's live table.
enum class Kind {
  kNew,           // no live table: rewind's shape
  kRewinds,       // rewind made it: rebuilt in rewind's shape
  kApplications,  // the application's, and the rows fit it: rebuilt LIKE it
  kReshaped,      // the application's, replaced by rewind's shape (--reshape), kept aside
};

struct Judgement {
  Kind kind = Kind::kNew;
  // The application's table: the column-by-column account (what the model writes, what the
  // table has, what does not fit), one line each, for the dry run and the refusal.
  std::vector<std::string> account;
  std::vector<std::string> problems;  // what does not fit (empty: it fits)
  // Rows may go by LOAD DATA: no text key compared by a collation that folds bytes (under
  // one, keys rewind keeps apart are one row of the table; upserts add them up, as the
  // application's own writes would).
  bool bulk_load = true;
  // The table's generated columns (never written: the server computes them, and a note it
  // gives while computing one is the application's, not a value rewind wrote).
  std::vector<std::string> generated;
};

// Judges the live table of `spec` (a declared read model's). `reshape` (--reshape): an
// application's table is replaced by rewind's shape, whether it fits or not.
Result<Judgement> Judge(Connection& c, const TableSpec& spec, bool reshape);

// The columns a read model of handlers (TableSpec::by_statements: no columns of its own) is
// compared on, as verify compares tables: the first unique key without an auto-increment
// column as its key, the other columns as values; auto-increment and generated columns
// left out (the server gives them). Without such a key, every other column is the key.
TableSpec ComparedSpec(const Shape& shape, const std::string& name);

// The refusal of a table that does not fit, with the account and what to do.
Status Refusal(const std::string& table, const Judgement& j);

// Whether rows of `type` can be stored in `column` (by kind of type: lengths and ranges are
// the server's to check, and a flush it clamps or cuts is refused). "" when they can, else why.
std::string FitOf(const Column& declared, const TableColumn& column);

}  // namespace rw::live_shape
