#include "pipeline/replay/hand_over.h"

#include <fmt/core.h>
#include <mysql.h>

namespace rw::hand_over {
namespace {

// The table's CHECKSUM TABLE ("" when it does not exist).
Result<std::string> Checksum(Connection& c, const std::string& table) {
  Result<Rows> r = c.Query("CHECKSUM TABLE " + QuoteIdentifier(table));
  if (!r.ok()) return r.status();
  if (r->rows.empty() || r->rows[0].size() < 2) return std::string();
  return r->rows[0][1].value_or("");
}

// How many parameters the server finds in `sql` (it prepares it: syntax, tables, columns).
Result<unsigned long> Parameters(Connection& c, const std::string& sql) {
  MYSQL_STMT* st = mysql_stmt_init(c.raw());
  if (st == nullptr) return Status::Error(Status::Code::kConnection, "out of memory preparing a statement");
  const int rc = mysql_stmt_prepare(st, sql.data(), sql.size());
  const std::string error = rc == 0 ? std::string() : mysql_stmt_error(st);
  const unsigned long n = rc == 0 ? mysql_stmt_param_count(st) : 0;
  mysql_stmt_close(st);
  if (rc != 0) return Status::InvalidInput(error);
  return n;
}

}  // namespace

Result<std::vector<Step>> Prepare(Connection& c, const std::vector<const Projector*>& projectors, bool follow,
                                  bool swaps) {
  std::vector<Step> steps;
  for (const Projector* p : projectors) {
    const std::string sql = p->hand_over();
    if (sql.empty()) continue;
    const std::string name(p->name());
    if (follow) {
      return Status::InvalidInput(fmt::format(
          "{} ({}) hands the position back to the application's projector at the swap (hand_over), "
          "and --follow would go on applying the same events after it: run without --follow",
          name, p->origin()));
    }
    if (!swaps) continue;  // a build beside the live tables hands nothing over
    Result<unsigned long> n = Parameters(c, sql);
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
    Result<std::string> sum = Checksum(c, p->table().name);
    if (!sum.ok()) return sum.status();
    steps.push_back({name, p->table().name, sql, *sum});
  }
  return steps;
}

Status CheckUntouched(Connection& c, const std::vector<Step>& steps) {
  for (const Step& s : steps) {
    Result<std::string> sum = Checksum(c, s.live_table);
    if (!sum.ok()) return sum.status();
    if (*sum != s.checksum) {
      return Status::InvalidInput(fmt::format(
          "the live table {} changed during the rebuild (CHECKSUM TABLE {} then {}): the application's "
          "projector (or something else) is still writing it, and its position would not be the rebuild's. "
          "Nothing was swapped in: pause it, then run again",
          s.live_table, s.checksum.empty() ? "none" : s.checksum, sum->empty() ? "none" : *sum));
    }
  }
  return Status::Ok();
}

Result<std::unique_ptr<Connection>> Begin(const ConnectionOptions& o, const std::vector<Step>& steps,
                                          EventId position, std::vector<uint64_t>* changed) {
  Result<std::unique_ptr<Connection>> c = Connection::Open(o);
  if (!c.ok()) return c.status();
  Connection& h = **c;
  Status s = h.Execute("START TRANSACTION");
  if (s.ok()) s = h.Execute(fmt::format("SET @rewind_position = {}", IdText(position)));
  for (const Step& step : steps) {
    if (s.ok()) s = h.Execute("PREPARE rewind_hand_over FROM " + h.Quote(step.sql));
    if (s.ok()) s = h.Execute("EXECUTE rewind_hand_over USING @rewind_position");
    if (!s.ok()) {
      (void)h.Execute("ROLLBACK");
      return s.With(fmt::format("handing the position {} back ({} of {}); nothing was swapped in",
                                IdText(position), step.sql, step.read_model));
    }
    Result<std::optional<std::string>> n = h.QueryValue("SELECT ROW_COUNT()");
    changed->push_back(n.ok() && *n ? std::stoull(**n) : 0);
    (void)h.Execute("DEALLOCATE PREPARE rewind_hand_over");
  }
  if (!s.ok()) return s;
  return std::move(*c);
}

Status Finish(Connection& c, const std::vector<Step>& steps, EventId position, Status swapped) {
  if (!swapped.ok()) {
    (void)c.Execute("ROLLBACK");
    return swapped;
  }
  if (Status s = c.Execute("COMMIT"); !s.ok()) {
    std::string todo;
    for (const Step& step : steps) todo += fmt::format("{}{} (with {})", todo.empty() ? "" : "; ", step.sql, IdText(position));
    return s.With(fmt::format("the read models were swapped in, but handing the position back did not commit: "
                              "run it yourself before the application's projector starts: {}",
                              todo));
  }
  return Status::Ok();
}

}  // namespace rw::hand_over
