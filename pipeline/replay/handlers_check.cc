#include "pipeline/replay/handlers_check.h"

#include <fmt/core.h>

#include <algorithm>
#include <cctype>

#include "pipeline/replay/hand_over.h"

namespace rw::handlers_check {
namespace {

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& ch : out) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return out;
}

}  // namespace

Result<std::vector<std::string>> Prepare(Connection& c, const std::vector<const Projector*>& projectors,
                                         const std::string& events_table) {
  std::vector<std::string> lines;
  std::vector<std::string> tables, columns;  // the database's tables, the event table's columns; lower case
  bool read = false;
  for (const Projector* p : projectors) {
    const RunsStatements* statements = p->runs_statements();
    if (statements == nullptr) continue;
    if (!read) {
      Result<Rows> r = c.Query("SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE()");
      if (!r.ok()) return r.status();
      for (const auto& row : r->rows) tables.push_back(Lower(row[0].value_or("")));
      r = c.Query(fmt::format("SELECT COLUMN_NAME FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND "
                              "TABLE_NAME = {}",
                              c.Quote(events_table)));
      if (!r.ok()) return r.status();
      for (const auto& row : r->rows) columns.push_back(Lower(row[0].value_or("")));
      read = true;
    }
    const std::string live = p->table().name;
    for (const RunsStatements::Handler& h : statements->handlers()) {
      const std::string where = fmt::format("{}: {}: handler on '{}'", h.origin, p->name(), h.on);
      for (const std::string& column : h.columns) {
        if (std::find(columns.begin(), columns.end(), Lower(column)) == columns.end()) {
          return Status::InvalidInput(fmt::format("{}: parameter :@{} names no column of the event table {}; nothing "
                                                  "was done",
                                                  where, column, events_table));
        }
      }
      if (std::find(tables.begin(), tables.end(), Lower(live)) == tables.end()) continue;  // live_shape refuses it
      // Another table named: the event table, rewind's bookkeeping, any other of the database.
      for (const std::string& word : hand_over::NamedIdentifiers(h.prepared)) {
        const std::string w = Lower(word);
        if (w == Lower(live)) continue;
        const bool rewinds = w.rfind("rewind_", 0) == 0;
        if (rewinds || std::find(tables.begin(), tables.end(), w) != tables.end()) {
          return Status::InvalidInput(fmt::format(
              "{}: its statement names the table '{}': a handler writes its read model's table alone, written "
              "{{table}} (a column that shares a table's name cannot be told from it here); nothing was done",
              where, word));
        }
      }
      const std::string sql = WithTable(h.prepared, QuoteIdentifier(live));
      Result<unsigned long> n = hand_over::ServerParameters(c, sql);
      if (!n.ok()) {
        return Status::InvalidInput(fmt::format("{}: the server refuses its statement: {} (prepared as: {}); nothing "
                                                "was done",
                                                where, n.status().message(), sql));
      }
      if (*n != h.parameters) {
        return Status::InvalidInput(fmt::format("{}: the server finds {} parameter(s) in its statement and rewind "
                                                "{}: write each value as :path, :@column or :@id; nothing was done",
                                                where, *n, h.parameters));
      }
      lines.push_back(fmt::format("{}: on '{}' ({}), prepared: {}", p->name(), h.on, h.origin, sql));
    }
  }
  return lines;
}

}  // namespace rw::handlers_check
