// rewind_ingest_positions and rewind_ingest_files: where `rewind ingest` stands in each log.
#include "stages/db/checkpoint_store.h"

#include <fmt/core.h>

namespace rw {
namespace checkpoint_store {

Result<std::optional<IngestPosition>> LoadIngestPosition(Connection& c, const std::string& source,
                                                         bool for_update) {
  Result<Rows> r =
      c.Query(fmt::format("SELECT device, inode, byte_offset, first_line_hash, throttle, "
                          "lines_read, events_stored FROM "
                          "rewind_ingest_positions WHERE source = {}{}",
                          c.Quote(source), for_update ? " FOR UPDATE" : ""));
  if (!r.ok()) return r.status();
  if (r->rows.empty()) return std::optional<IngestPosition>();
  const auto& row = r->rows[0];
  IngestPosition p;
  p.source = source;
  p.device = std::stoull(row[0].value_or("0"));
  p.inode = std::stoull(row[1].value_or("0"));
  p.offset = std::stoull(row[2].value_or("0"));
  p.first_line_hash = row[3].value_or("");
  p.throttle = row[4].value_or("");
  p.lines_read = std::stoull(row[5].value_or("0"));
  p.events_stored = std::stoull(row[6].value_or("0"));
  return std::optional<IngestPosition>(p);
}

namespace {
// `verb` (REPLACE, INSERT IGNORE) of one position row.
std::string WriteIngestPositionSql(Connection& c, const char* verb, const IngestPosition& p) {
  return fmt::format(
      "{} INTO rewind_ingest_positions (source, device, inode, byte_offset, first_line_hash, "
      "throttle, lines_read, events_stored, updated_at) VALUES ({}, {}, {}, {}, {}, {}, {}, {}, "
      "NOW(6))",
      verb, c.Quote(p.source), p.device, p.inode, p.offset, c.Quote(p.first_line_hash),
      c.Quote(p.throttle), p.lines_read, p.events_stored);
}
}  // namespace

std::string SaveIngestPositionSql(Connection& c, const IngestPosition& p) {
  return WriteIngestPositionSql(c, "REPLACE", p);
}

Status CreateIngestPosition(Connection& c, const IngestPosition& p) {
  return c.Execute(WriteIngestPositionSql(c, "INSERT IGNORE", p));
}

bool SameIngestPosition(const IngestPosition& a, const IngestPosition& b) {
  return a.source == b.source && a.device == b.device && a.inode == b.inode &&
         a.offset == b.offset && a.first_line_hash == b.first_line_hash &&
         a.lines_read == b.lines_read && a.events_stored == b.events_stored;
}

namespace {
const char* const kIngestFileColumns =
    "id, first_line_hash, head_bytes, head_hash, byte_offset, lines_read, events_stored, "
    "throttle, source, device, inode";

IngestFile IngestFileFromRow(const std::vector<std::optional<std::string>>& row) {
  auto number = [&](size_t i) { return std::stoull(row[i].value_or("0")); };
  IngestFile f;
  f.id = number(0);
  f.first_line_hash = row[1].value_or("");
  f.head_bytes = number(2);
  f.head_hash = row[3].value_or("");
  f.offset = number(4);
  f.lines_read = number(5);
  f.events_stored = number(6);
  f.throttle = row[7].value_or("");
  f.source = row[8].value_or("");
  f.device = number(9);
  f.inode = number(10);
  return f;
}
}  // namespace

Result<std::vector<IngestFile>> FindIngestFiles(Connection& c, const std::string& first_line_hash) {
  Result<Rows> r = c.Query(
      fmt::format("SELECT {} FROM rewind_ingest_files WHERE first_line_hash = {} ORDER BY id",
                  kIngestFileColumns, c.Quote(first_line_hash)));
  if (!r.ok()) return r.status();
  std::vector<IngestFile> out;
  for (const auto& row : r->rows) out.push_back(IngestFileFromRow(row));
  return out;
}

Result<std::optional<IngestFile>> LoadIngestFile(Connection& c, uint64_t id, bool for_update) {
  Result<Rows> r = c.Query(fmt::format("SELECT {} FROM rewind_ingest_files WHERE id = {}{}",
                                       kIngestFileColumns, id, for_update ? " FOR UPDATE" : ""));
  if (!r.ok()) return r.status();
  if (r->rows.empty()) return std::optional<IngestFile>();
  return std::optional<IngestFile>(IngestFileFromRow(r->rows[0]));
}

Result<uint64_t> CreateIngestFile(Connection& c, const IngestFile& f) {
  if (Status s = c.Execute(fmt::format(
          "INSERT INTO rewind_ingest_files (first_line_hash, head_bytes, head_hash, byte_offset, "
          "lines_read, events_stored, throttle, source, device, inode, created_at, updated_at) "
          "VALUES ({}, {}, {}, {}, {}, {}, {}, {}, {}, {}, NOW(6), NOW(6))",
          c.Quote(f.first_line_hash), f.head_bytes, c.Quote(f.head_hash), f.offset, f.lines_read,
          f.events_stored, c.Quote(f.throttle), c.Quote(f.source), f.device, f.inode));
      !s.ok()) {
    return s;
  }
  Result<std::optional<std::string>> id = c.QueryValue("SELECT LAST_INSERT_ID()");
  if (!id.ok()) return id.status();
  return *id ? std::stoull(**id) : 0;
}

std::string SaveIngestFileSql(Connection& c, const IngestFile& f) {
  return fmt::format(
      "UPDATE rewind_ingest_files SET head_bytes = {}, head_hash = {}, byte_offset = {}, "
      "lines_read = {}, events_stored = {}, throttle = {}, source = {}, device = {}, inode = {}, "
      "updated_at = NOW(6) WHERE id = {}",
      f.head_bytes, c.Quote(f.head_hash), f.offset, f.lines_read, f.events_stored,
      c.Quote(f.throttle), c.Quote(f.source), f.device, f.inode, f.id);
}

bool SameIngestFile(const IngestFile& a, const IngestFile& b) {
  return a.id == b.id && a.offset == b.offset && a.lines_read == b.lines_read &&
         a.events_stored == b.events_stored;
}

}  // namespace checkpoint_store
}  // namespace rw
