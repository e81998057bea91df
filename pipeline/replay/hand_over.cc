#include "pipeline/replay/hand_over.h"

#include <fmt/core.h>
#include <mysql.h>

#include <algorithm>
#include <cctype>
#include <map>

namespace rw::hand_over {
namespace {

// The table's CHECKSUM TABLE ("" when it does not exist).
Result<std::string> Checksum(Connection& c, const std::string& table) {
  Result<Rows> r = c.Query("CHECKSUM TABLE " + QuoteIdentifier(table));
  if (!r.ok()) return r.status();
  if (r->rows.empty() || r->rows[0].size() < 2) return std::string();
  return r->rows[0][1].value_or("");
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& ch : out) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return out;
}

// The tables of the current database named in `sql` (case-blind, as a refusal on a word that
// merely looks like a table is safe) with whether their engine rolls back.
Result<std::map<std::string, bool>> NamedTables(Connection& c, const std::string& sql) {
  Result<Rows> r = c.Query(
      "SELECT t.TABLE_NAME, COALESCE(e.TRANSACTIONS, 'NO') FROM information_schema.TABLES t "
      "LEFT JOIN information_schema.ENGINES e ON e.ENGINE = t.ENGINE "
      "WHERE t.TABLE_SCHEMA = DATABASE() AND t.TABLE_TYPE = 'BASE TABLE'");
  if (!r.ok()) return r.status();
  std::map<std::string, bool> named;
  std::vector<std::string> words = NamedIdentifiers(sql);
  for (std::string& w : words) w = Lower(w);
  for (const auto& row : r->rows) {
    const std::string table = row[0].value_or("");
    if (std::find(words.begin(), words.end(), Lower(table)) == words.end()) continue;
    named[table] = row[1].value_or("NO") == "YES";
  }
  return named;
}

}  // namespace

Result<unsigned long> ServerParameters(Connection& c, const std::string& sql) {
  MYSQL_STMT* st = mysql_stmt_init(c.raw());
  if (st == nullptr) return Status::Error(Status::Code::kConnection, "out of memory preparing a statement");
  const int rc = mysql_stmt_prepare(st, sql.data(), sql.size());
  const std::string error = rc == 0 ? std::string() : mysql_stmt_error(st);
  const unsigned long n = rc == 0 ? mysql_stmt_param_count(st) : 0;
  mysql_stmt_close(st);
  if (rc != 0) return Status::InvalidInput(error);
  return n;
}

std::vector<std::string> NamedIdentifiers(std::string_view sql) {
  std::vector<std::string> words;
  size_t i = 0;
  const size_t n = sql.size();
  auto word = [](char ch) { return std::isalnum(static_cast<unsigned char>(ch)) || ch == '_' || ch == '$' || (ch & 0x80); };
  while (i < n) {
    const char ch = sql[i];
    if (ch == '\'' || ch == '"') {  // a string literal: skipped, escapes and doubled quotes too
      for (++i; i < n; ++i) {
        if (sql[i] == '\\') { ++i; continue; }
        if (sql[i] == ch) {
          if (i + 1 < n && sql[i + 1] == ch) { ++i; continue; }
          break;
        }
      }
      ++i;
    } else if (ch == '`') {
      std::string w;
      for (++i; i < n; ++i) {
        if (sql[i] == '`') {
          if (i + 1 < n && sql[i + 1] == '`') { w += '`'; ++i; continue; }
          break;
        }
        w += sql[i];
      }
      ++i;
      words.push_back(std::move(w));
    } else if (ch == '#' || (ch == '-' && i + 1 < n && sql[i + 1] == '-')) {
      while (i < n && sql[i] != '\n') ++i;
    } else if (ch == '/' && i + 1 < n && sql[i + 1] == '*') {
      const size_t end = sql.find("*/", i + 2);
      i = end == std::string_view::npos ? n : end + 2;
    } else if (word(ch)) {
      const size_t start = i;
      while (i < n && word(sql[i])) ++i;
      words.emplace_back(sql.substr(start, i - start));
    } else {
      ++i;
    }
  }
  return words;
}

Result<std::vector<Step>> Prepare(Connection& c, const std::vector<const Projector*>& projectors, bool follow,
                                  bool swaps, const std::string& events_table) {
  std::vector<Step> steps;
  for (const Projector* p : projectors) {
    const std::string sql = p->hands_over() != nullptr ? p->hands_over()->hand_over() : std::string();
    if (sql.empty()) continue;
    const std::string name(p->name());
    if (follow) {
      return Status::InvalidInput(fmt::format(
          "{} ({}) hands the position back to the application's projector at the swap (hand_over), "
          "and --follow would go on applying the same events after it: run without --follow",
          name, p->origin()));
    }
    if (!swaps) continue;  // a build beside the live tables hands nothing over
    Result<unsigned long> n = ServerParameters(c, sql);
    if (!n.ok()) {
      return Status::InvalidInput(fmt::format("the hand_over of {} ({}) does not prepare on the server: {}; "
                                              "nothing was done",
                                              name, p->origin(), n.status().message()));
    }
    if (*n != 1) {
      return Status::InvalidInput(fmt::format("the hand_over of {} ({}) has {} parameters ('?'); it takes one, the "
                                              "last event id applied; nothing was done",
                                              name, p->origin(), *n));
    }
    Result<std::map<std::string, bool>> tables = NamedTables(c, sql);
    if (!tables.ok()) return tables.status();
    for (const auto& [table, transactional] : *tables) {
      if (Lower(table) == Lower(events_table)) {
        return Status::InvalidInput(fmt::format(
            "the hand_over of {} ({}) names the event table {}: it would run while the cut-over holds that "
            "table's inserts off, and wait on that hold. Keep the application's position in a table of its own; "
            "nothing was done",
            name, p->origin(), table));
      }
      if (!transactional) {
        return Status::InvalidInput(fmt::format(
            "the hand_over of {} ({}) names {}, whose engine cannot roll back: if the swap did not happen, the "
            "position it wrote would stay, and the application's projector would skip events. Make {} "
            "transactional (ALTER TABLE {} ENGINE=InnoDB), or leave hand_over out and set the position yourself "
            "after the swap; nothing was done",
            name, p->origin(), table, table, QuoteIdentifier(table)));
      }
    }
    steps.push_back({name, p->table().name, sql});
  }
  return steps;
}

Result<std::vector<Watched>> Watch(Connection& c, const std::vector<std::pair<std::string, std::string>>& tables) {
  std::vector<Watched> out;
  for (const auto& [read_model, table] : tables) {
    Result<std::string> sum = Checksum(c, table);
    if (!sum.ok()) return sum.status();
    out.push_back({read_model, table, *sum});
  }
  return out;
}

Status CheckUntouched(Connection& c, const std::vector<Watched>& watched) {
  for (const Watched& s : watched) {
    Result<std::string> sum = Checksum(c, s.live_table);
    if (!sum.ok()) return sum.status();
    if (*sum != s.checksum) {
      return Status::InvalidInput(fmt::format(
          "the live table {} changed during the rebuild (CHECKSUM TABLE {} then {}): the application's "
          "projector (or something else) is still writing it; its writes would be lost at the swap, and its "
          "position would not be the rebuild's. Nothing was swapped in: pause it, then run again (--resume "
          "keeps what was built)",
          s.live_table, s.checksum.empty() ? "none" : s.checksum, sum->empty() ? "none" : *sum));
    }
  }
  return Status::Ok();
}

bool ApplicationMayWrite(live_shape::Kind kind, const std::string& live, const std::vector<Step>& steps) {
  return kind == live_shape::Kind::kApplications || kind == live_shape::Kind::kReshaped ||
         std::any_of(steps.begin(), steps.end(), [&](const Step& s) { return s.live_table == live; });
}

Result<std::unique_ptr<Connection>> Begin(const ConnectionOptions& o, const std::vector<Step>& steps,
                                          const std::string& position, std::vector<uint64_t>* changed) {
  Result<std::unique_ptr<Connection>> c = Connection::Open(o);
  if (!c.ok()) return c.status();
  Connection& h = **c;
  // Under the cut-over's hold: every wait bounded, as the RENAME's is.
  Status s = h.Execute("SET SESSION lock_wait_timeout = 1, innodb_lock_wait_timeout = 1");
  if (s.ok()) s = h.Execute("START TRANSACTION");
  if (s.ok()) s = h.Execute(fmt::format("SET @rewind_position = {}", position));
  for (const Step& step : steps) {
    if (s.ok()) s = h.Execute("PREPARE rewind_hand_over FROM " + h.Quote(step.sql));
    if (s.ok()) s = h.Execute("EXECUTE rewind_hand_over USING @rewind_position");
    if (!s.ok()) {
      (void)h.Execute("ROLLBACK");
      return s.With(fmt::format("handing the position {} back ({} of {}); nothing was swapped in",
                                position, step.sql, step.read_model));
    }
    Result<std::optional<std::string>> n = h.QueryValue("SELECT ROW_COUNT()");
    changed->push_back(n.ok() && *n ? std::stoull(**n) : 0);
    (void)h.Execute("DEALLOCATE PREPARE rewind_hand_over");
  }
  if (!s.ok()) return s;
  return std::move(*c);
}

Status Finish(Connection& c, const std::vector<Step>& steps, const std::string& position, Status swapped) {
  if (!swapped.ok()) {
    (void)c.Execute("ROLLBACK");
    return swapped;
  }
  if (Status s = c.Execute("COMMIT"); !s.ok()) {
    std::string todo;
    for (const Step& step : steps) todo += fmt::format("{}{} (with {})", todo.empty() ? "" : "; ", step.sql, position);
    return s.With(fmt::format("the read models were swapped in, but handing the position back did not commit: "
                              "run it yourself before the application's projector starts: {}",
                              todo));
  }
  return Status::Ok();
}

}  // namespace rw::hand_over
