#include "pipeline/ingest.h"

#include <fmt/core.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>

#include "projectors/civil_time.h"
#include "projectors/sha256.h"
#include "stages/access_log.h"
#include "stages/checkpoint_store.h"
#include "stages/connection.h"
#include "stages/fault.h"
#include "stages/progress.h"

namespace rw {
namespace {

struct Counts {
  uint64_t lines = 0, stored = 0;
  std::map<std::string, uint64_t> skipped;  // by reason
};

// A random (version 4) UUID.
std::string NewUuid(std::mt19937_64& rng) {
  const uint64_t a = rng(), b = rng();
  std::string hex = fmt::format("{:016x}{:016x}", a, b);
  hex[12] = '4';
  hex[16] = "89ab"[(b >> 62) & 3];
  return hex.substr(0, 8) + "-" + hex.substr(8, 4) + "-" + hex.substr(12, 4) + "-" + hex.substr(16, 4) +
         "-" + hex.substr(20, 12);
}

std::string ThrottleText(const IpThrottle& t) {
  std::string out;
  for (const auto& [ip, at] : t.latest()) out += fmt::format("{}={}\n", ip, at);
  return out;
}

void RestoreThrottle(IpThrottle& t, const std::string& text) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    const auto eq = line.rfind('=');
    if (eq == std::string::npos) continue;
    t.Throttled(line.substr(0, eq), std::stoll(line.substr(eq + 1)));
  }
}

// One file: read from its saved position, append what the rules keep, batch by batch.
Status IngestFile(const ReplayOptions& o, Connection* c, const std::string& path, Counts& counts,
                  std::mt19937_64& rng) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::NotFound(fmt::format("cannot read '{}'", path));
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return Status::NotFound(fmt::format("cannot stat '{}'", path));
  std::string first;
  std::getline(in, first);
  IngestPosition pos;
  std::error_code ec;
  pos.source = std::filesystem::absolute(path, ec).lexically_normal().string();
  pos.device = st.st_dev;
  pos.inode = st.st_ino;
  pos.first_line_hash = Sha256Hex(first, 32);
  const AccessLogRules rules = AccessLogRules::Blog();
  IpThrottle throttle(rules.throttle_seconds);
  if (c != nullptr && !o.from_start) {
    Result<std::optional<IngestPosition>> saved = checkpoint_store::LoadIngestPosition(*c, pos.source);
    if (!saved.ok()) return saved.status();
    if (*saved && (*saved)->device == pos.device && (*saved)->inode == pos.inode &&
        (*saved)->first_line_hash == pos.first_line_hash) {
      pos.offset = (*saved)->offset;
      pos.lines_read = (*saved)->lines_read;
      pos.events_stored = (*saved)->events_stored;
      RestoreThrottle(throttle, (*saved)->throttle);
      fmt::print(stderr, "rewind: {} continues at byte {} ({} lines read before)\n", path, pos.offset,
                 pos.lines_read);
    } else if (*saved) {
      fmt::print(stderr, "rewind: {} is another file than the one ingested before (rotated or "
                         "truncated); reading it from the start\n", path);
    }
  }
  in.clear();
  in.seekg(static_cast<std::streamoff>(pos.offset));
  const std::string insert_prefix = fmt::format(
      "INSERT INTO {} ({}, {}, {}, {}) VALUES ", QuoteIdentifier(o.events.table),
      QuoteIdentifier(o.events.uuid_column), QuoteIdentifier(o.events.type_column),
      QuoteIdentifier(o.events.payload_column), QuoteIdentifier(o.events.time_column));
  std::string values;
  uint64_t batch_lines = 0, batch_events = 0;
  std::string line;
  auto commit = [&]() -> Status {
    pos.lines_read += batch_lines;
    pos.events_stored += batch_events;
    pos.throttle = ThrottleText(throttle);
    counts.lines += batch_lines;
    counts.stored += batch_events;
    if (c != nullptr && batch_lines > 0) {
      const std::string position_sql = checkpoint_store::SaveIngestPositionSql(*c, pos);
      Status s = RetryOnConnectionLoss(*c, [&]() -> Status {
        // After a lost connection the position row tells whether the batch landed.
        Result<std::optional<IngestPosition>> landed = checkpoint_store::LoadIngestPosition(*c, pos.source);
        if (landed.ok() && *landed && (*landed)->offset == pos.offset && (*landed)->inode == pos.inode) {
          return Status::Ok();
        }
        Status t = c->Execute("START TRANSACTION");
        if (t.ok() && !values.empty()) t = c->Execute(insert_prefix + values);
        if (t.ok()) t = c->Execute(position_sql);
        if (t.ok()) FaultPoint("ingest-batch");
        if (t.ok()) t = c->Execute("COMMIT");
        if (!t.ok() && t.code() != Status::Code::kConnection) (void)c->Execute("ROLLBACK");
        return t;
      });
      if (!s.ok()) return s.With(fmt::format("appending a batch of {} from byte {}", path, pos.offset));
    }
    values.clear();
    batch_lines = batch_events = 0;
    return Status::Ok();
  };
  while (std::getline(in, line)) {
    const bool complete = !in.eof();  // a last line without its newline still counts
    pos.offset += line.size() + (complete ? 1 : 0);
    ++batch_lines;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    LogVisit v = ParseLogLine(line, rules);
    if (v.skip == SkipReason::kNone && throttle.Throttled(v.ip, v.epoch_seconds)) v.skip = SkipReason::kThrottled;
    if (v.skip != SkipReason::kNone) {
      ++counts.skipped[SkipReasonName(v.skip)];
    } else {
      const std::string uuid = NewUuid(rng);
      char when[20];
      FormatDateTime(v.epoch_seconds, when);
      if (c != nullptr) {
        values += values.empty() ? "(" : ",(";
        c->AppendQuoted(values, uuid);
        values += ',';
        c->AppendQuoted(values, o.events.page_visited_class);
        values += ',';
        c->AppendQuoted(values, PageVisitedPayload(uuid, v, line));
        values += fmt::format(",'{}')", std::string_view(when, 19));
      }
      ++batch_events;
    }
    if (batch_lines >= o.batch_size || values.size() >= (8u << 20)) {
      if (Status s = commit(); !s.ok()) return s;
    }
  }
  return commit();
}

}  // namespace

int IngestCommand(const ReplayOptions& o, const std::vector<std::string>& files, std::FILE* out) {
  if (files.empty()) {
    fmt::print(stderr, "rewind: ingest needs one or more log files: rewind ingest FILE...\n");
    return exit_code::kUsage;
  }
  std::unique_ptr<Connection> conn;
  if (!o.dry_run) {
    Result<std::unique_ptr<Connection>> c = Connection::Open(o.connection);
    if (!c.ok()) {
      fmt::print(stderr, "rewind: {}\n", c.status().message());
      return exit_code::kError;
    }
    conn = std::move(*c);
    if (Status s = checkpoint_store::Ensure(*conn); !s.ok()) {
      fmt::print(stderr, "rewind: {}\n", s.message());
      return exit_code::kError;
    }
  }
  std::random_device seed;
  std::mt19937_64 rng((static_cast<uint64_t>(seed()) << 32) ^ seed());
  Counts counts;
  for (const std::string& file : files) {
    if (Status s = IngestFile(o, conn.get(), file, counts, rng); !s.ok()) {
      fmt::print(stderr, "rewind: {}\n", s.message());
      return exit_code::kError;
    }
  }
  uint64_t skipped = 0;
  std::string reasons;
  for (const auto& [reason, n] : counts.skipped) {
    skipped += n;
    reasons += fmt::format("{}{} {}", reasons.empty() ? "" : ", ", reason, WithThousands(n));
  }
  fmt::print(out, "{}{} lines read, {} events {}, {} skipped ({})\n", o.dry_run ? "dry run: " : "",
             WithThousands(counts.lines), WithThousands(counts.stored),
             o.dry_run ? "would be stored (nothing was written)" : "stored", WithThousands(skipped),
             reasons.empty() ? "none" : reasons);
  if (!o.stats_json.empty()) {
    nlohmann::json j = {{"lines_read", counts.lines}, {"events_stored", counts.stored},
                        {"dry_run", o.dry_run}, {"skipped", counts.skipped}};
    std::ofstream(o.stats_json) << j.dump(2) << "\n";
  }
  return exit_code::kOk;
}

}  // namespace rw
