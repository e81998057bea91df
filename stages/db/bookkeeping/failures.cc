// rewind_failures: one row per event that could not be applied, per run; ValidUtf8.
#include "stages/db/checkpoint_store.h"

#include <fmt/core.h>

#include <algorithm>

namespace rw {
namespace {

std::string Hex(std::string_view bytes) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out = "X'";
  for (unsigned char b : bytes) {
    out += kHex[b >> 4];
    out += kHex[b & 15];
  }
  return out + "'";
}

}  // namespace

std::string ValidUtf8(std::string_view s, size_t max_bytes) {
  std::string out;
  out.reserve(std::min(s.size(), max_bytes) + 4);
  size_t i = 0;
  while (i < s.size()) {
    const auto b = static_cast<unsigned char>(s[i]);
    size_t len = b < 0x80 ? 1 : (b >> 5) == 6 ? 2 : (b >> 4) == 14 ? 3 : (b >> 3) == 30 ? 4 : 0;
    bool ok = len > 0 && i + len <= s.size();
    for (size_t k = 1; ok && k < len; ++k) ok = (static_cast<unsigned char>(s[i + k]) >> 6) == 2;
    if (ok && len == 2) ok = b >= 0xC2;
    if (ok && len == 3) {
      const auto b1 = static_cast<unsigned char>(s[i + 1]);
      ok = !(b == 0xE0 && b1 < 0xA0) && !(b == 0xED && b1 >= 0xA0);  // overlong, surrogates
    }
    if (ok && len == 4) {
      const auto b1 = static_cast<unsigned char>(s[i + 1]);
      ok = b <= 0xF4 && !(b == 0xF0 && b1 < 0x90) && !(b == 0xF4 && b1 >= 0x90);
    }
    const std::string_view piece = ok ? s.substr(i, len) : std::string_view("\xEF\xBF\xBD");
    if (out.size() + piece.size() > max_bytes) {
      out += "...";
      return out;
    }
    out += piece;
    i += ok ? len : 1;
  }
  return out;
}

namespace checkpoint_store {

std::vector<FailureInsert> InsertFailuresSql(Connection& c, const std::string& run_id,
                                             const std::vector<Failure>& failures, const IdForm& form) {
  std::vector<FailureInsert> out;
  if (failures.empty()) return out;
  constexpr size_t kReasonBytes = 2000, kExcerptBytes = 255, kStatementBytes = 256 << 10;
  const std::string head = "INSERT INTO rewind_failures (run_id, event_id, event_key, stage, reason, excerpt) VALUES ";
  std::string sql = head;
  size_t first = 0;
  for (size_t i = 0; i < failures.size(); ++i) {
    const Failure& f = failures[i];
    if (sql.size() >= kStatementBytes) {
      out.push_back(FailureInsert{std::move(sql), first, i - first});
      sql = head;
      first = i;
    }
    sql += sql.size() > head.size() ? ",(" : "(";
    c.AppendQuoted(sql, run_id);
    sql += fmt::format(",{},{},", IdText(f.event_id), form.integer() ? "NULL" : "'" + IdShown(form, f.event_id) + "'");
    c.AppendQuoted(sql, ValidUtf8(f.stage, 64));
    sql += ',';
    c.AppendQuoted(sql, ValidUtf8(f.reason, kReasonBytes));
    sql += ',';
    sql += f.excerpt.empty() ? std::string("NULL")
                             : Hex(std::string_view(f.excerpt).substr(0, kExcerptBytes));
    sql += ')';
  }
  out.push_back(FailureInsert{std::move(sql), first, failures.size() - first});
  return out;
}

Result<uint64_t> CountFailures(Connection& c, const std::string& run_id) {
  Result<std::optional<std::string>> n = c.QueryValue(
      fmt::format("SELECT COUNT(*) FROM rewind_failures WHERE run_id = {}", c.Quote(run_id)));
  if (!n.ok()) return n.status();
  return *n ? std::stoull(**n) : 0;
}

Status DeleteFailuresAfter(Connection& c, const std::string& run_id, EventId after) {
  // Only the decoder's (written as batches arrive); a read model's own failures commit with
  // its checkpoint, so none lies beyond it.
  return c.Execute(fmt::format("DELETE FROM rewind_failures WHERE run_id = {} AND event_id > {} AND stage = 'decoder'",
                               c.Quote(run_id), IdText(after)));
}

Status MergeFailures(Connection& c, const std::string& from, const std::string& into,
                     const std::string& projector) {
  if (from == into) return Status::Ok();
  if (Status s = c.Execute(fmt::format("UPDATE rewind_failures SET run_id = {} WHERE run_id = {} AND stage = {}",
                                       c.Quote(into), c.Quote(from), c.Quote(projector)));
      !s.ok()) {
    return s;
  }
  return c.Execute(fmt::format("DELETE FROM rewind_failures WHERE run_id = {} AND stage = 'decoder'", c.Quote(from)));
}

}  // namespace checkpoint_store
}  // namespace rw
