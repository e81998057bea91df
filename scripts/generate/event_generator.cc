#include "scripts/generate/event_generator.h"

#include <fmt/core.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <random>

#include "base/civil_time.h"
#include "base/event_id.h"
#include "stages/db/row_writer.h"

namespace rw {
namespace {

// The odd URLs every store meets sooner or later.
std::vector<std::string> OddUrls() {
  return {
      "/blog/it's-\"quoted\"",
      "/search?q=back\\slash\\\\double",
      "/blog/Café",
      "/blog/cafe",
      "/blog/CAFE",
      "/emoji/\xF0\x9F\x8E\x89-party-\xF0\x9F\x91\x8D",
      "/tab\there/and%20percent?a=1&b=2",
      "/long/" + std::string(1994, 'x'),
      "/long/" + std::string(1993, 'x') + "y",
      "/\xE4\xB8\xAD\xE6\x96\x87/\xD0\xBF\xD1\x80\xD0\xB8\xD0\xB2\xD0\xB5\xD1\x82",
      "/sql/'); DROP TABLE visits_per_day; --",
  };
}

// Appends `s` as a JSON string. `old_style` escapes '/' and every non-ASCII code point.
void AppendJsonString(std::string& out, std::string_view s, bool old_style) {
  out += '"';
  for (size_t i = 0; i < s.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '/' && old_style) {
      out += "\\/";
    } else if (c < 0x20) {
      out += fmt::format("\\u{:04x}", c);
    } else if (c >= 0x80 && old_style) {
      // Decode one UTF-8 sequence, emit \uXXXX (a surrogate pair above the BMP).
      uint32_t cp;
      int extra;
      if (c >= 0xF0) cp = c & 0x07, extra = 3;
      else if (c >= 0xE0) cp = c & 0x0F, extra = 2;
      else cp = c & 0x1F, extra = 1;
      for (int k = 0; k < extra && i + 1 < s.size(); ++k) {
        cp = (cp << 6) | (static_cast<unsigned char>(s[++i]) & 0x3F);
      }
      if (cp >= 0x10000) {
        cp -= 0x10000;
        out += fmt::format("\\u{:04x}\\u{:04x}", 0xD800 + (cp >> 10), 0xDC00 + (cp & 0x3FF));
      } else {
        out += fmt::format("\\u{:04x}", cp);
      }
    } else {
      out += static_cast<char>(c);
    }
  }
  out += '"';
}

// LOAD DATA's default escaping: backslash, tab and newline.
void AppendField(std::string& out, std::string_view s) {
  for (char c : s) {
    if (c == '\\') out += "\\\\";
    else if (c == '\t') out += "\\t";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
}

std::string Uuid(std::mt19937_64& rng) {
  const uint64_t a = rng(), b = rng();
  return fmt::format("{:08x}-{:04x}-4{:03x}-{:04x}-{:012x}", a >> 32, (a >> 16) & 0xFFFF,
                     a & 0xFFF, 0x8000 | (b >> 48 & 0x3FFF), b & 0xFFFFFFFFFFFFull);
}

}  // namespace

Result<std::vector<AccessLogLine>> ReadAccessLog(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Status::NotFound(fmt::format("cannot read access log '{}'", path));
  std::vector<AccessLogLine> out;
  std::string line;
  while (std::getline(in, line)) {
    // ip - - [time] "METHOD path PROTO" status bytes "referrer" "user agent"
    const size_t sp = line.find(' ');
    const size_t q1 = line.find('"');
    if (sp == std::string::npos || q1 == std::string::npos) continue;
    const size_t q2 = line.find('"', q1 + 1);
    if (q2 == std::string::npos) continue;
    const std::string request = line.substr(q1 + 1, q2 - q1 - 1);
    const size_t m = request.find(' ');
    std::string path_part = m == std::string::npos ? request : request.substr(m + 1);
    if (const size_t p = path_part.rfind(" HTTP/"); p != std::string::npos) path_part.resize(p);
    const size_t ua_end = line.rfind('"');
    const size_t ua_start = ua_end == std::string::npos ? std::string::npos : line.rfind('"', ua_end - 1);
    if (ua_start == std::string::npos || ua_start <= q2) continue;
    out.push_back({line.substr(0, sp), path_part.empty() ? "/" : path_part,
                   line.substr(ua_start + 1, ua_end - ua_start - 1), line});
  }
  if (out.empty()) return Status::InvalidInput(fmt::format("no access log lines parsed from '{}'", path));
  return out;
}

std::vector<int64_t> GeneratedIds(const GeneratorOptions& o, int64_t after) {
  std::vector<int64_t> ids;
  if (o.id_step <= 1 && o.holes <= 0) return ids;
  const auto step = static_cast<int64_t>(std::max<uint64_t>(o.id_step, 1));
  std::mt19937_64 rng(o.seed * 0xD1B54A32D192ED03ull + static_cast<uint64_t>(after));
  std::uniform_real_distribution<double> burn(0, 1);
  ids.reserve(o.events);
  int64_t id = after;
  for (uint64_t n = 0; n < o.events; ++n) {
    id += step;
    while (o.holes > 0 && burn(rng) < o.holes) id += step;  // a rolled-back insert's id
    ids.push_back(id);
  }
  return ids;
}

void WriteEventRows(const GeneratorOptions& o, const std::vector<AccessLogLine>& log,
                    std::ostream& out, const std::vector<int64_t>& ids) {
  static const std::vector<std::string> odd = OddUrls();
  static const char* const kOffsets[] = {"+00:00", "+00:00", "+02:00", "-05:00", "+05:30", "Z"};
  static const char* const kOtherClasses[] = {"App\\Analytics\\NewsletterSubscribed",
                                              "App\\Blog\\CommentPosted"};
  const uint64_t spread = std::max<uint64_t>(o.total_for_spread ? o.total_for_spread : o.events, 1);
  const double seconds_per_event = o.span_days * 86400.0 / static_cast<double>(spread);
  std::string row, payload, path;
  for (uint64_t n = 0; n < o.events; ++n) {
    const uint64_t i = o.first_index + n;
    std::mt19937_64 rng(o.seed * 0x9E3779B97F4A7C15ull + i);
    // Consecutive events walk the log in order, so a visitor's requests stay together.
    const AccessLogLine& line = log[(i + i / log.size() * 7919) % log.size()];
    const int64_t jitter = static_cast<int64_t>(rng() % 1200) - 600;
    const int64_t t = int64_t{o.start_day} * 86400 +
                      static_cast<int64_t>(static_cast<double>(i) * seconds_per_event) + jitter;
    char when[20];
    FormatDateTime(t, when);
    when[10] = 'T';
    const std::string visited_at = std::string(when, 19) + kOffsets[rng() % std::size(kOffsets)];
    const bool old_style = static_cast<double>(i) < o.escaped_fraction * static_cast<double>(spread);

    path = line.path;
    if (o.odd_url_every && i % o.odd_url_every == o.odd_url_every / 2) path = odd[(i / o.odd_url_every) % odd.size()];
    const std::string uri = path.substr(0, path.find('?'));

    std::string event_class = "App\\Analytics\\PageVisited";
    bool null_payload = false;
    payload.clear();
    if (o.other_class_every && i % o.other_class_every == o.other_class_every - 1) {
      event_class = kOtherClasses[i / o.other_class_every % 2];
      payload = R"({"email":"reader@example.com","note":"not a page visit"})";
    } else if (o.bad_every && i % o.bad_every == o.bad_every / 3) {
      switch ((i / o.bad_every) % 9) {
        case 0: payload = "<html>502 Bad Gateway</html>"; break;
        case 1: payload = R"({"uuid":"x","url":"/truncated","visitedAt":"2023-01-01T00:00:00+00:00","ip":"1.2.3.4","userAg)"; break;
        case 2: payload = R"({"uuid":"x","url":"/no-time","ip":"1.2.3.4","userAgent":"curl"})"; break;
        case 3: payload = R"({"uuid":"x","url":12345,"visitedAt":"2023-01-01T00:00:00+00:00","ip":"1.2.3.4","userAgent":"curl"})"; break;
        case 4: payload = R"({"uuid":"x","url":"/bad-time","visitedAt":"yesterday","ip":"1.2.3.4","userAgent":"curl"})"; break;
        case 5: payload = R"({"uuid":"x","url":"/bad-date","visitedAt":"2023-02-29T10:00:00+00:00","ip":"1.2.3.4","userAgent":"curl"})"; break;
        case 6: payload = R"(["not","an","object"])"; break;
        case 7: null_payload = true; break;
        default: payload = R"({"uuid":"x","url":"/null-ip","visitedAt":"2023-01-01T00:00:00+00:00","ip":null,"userAgent":"curl"})"; break;
      }
    } else {
      payload += "{\"uuid\":";
      AppendJsonString(payload, Uuid(rng), old_style);
      payload += ",\"url\":";
      AppendJsonString(payload, path, old_style);
      payload += ",\"visitedAt\":";
      AppendJsonString(payload, visited_at, old_style);
      payload += ",\"ip\":";
      AppendJsonString(payload, line.ip, old_style);
      payload += ",\"userAgent\":";
      AppendJsonString(payload, line.user_agent, old_style);
      payload += ",\"raw\":";
      AppendJsonString(payload, line.raw, old_style);
      payload += ",\"uri\":";
      AppendJsonString(payload, uri, old_style);
      payload += '}';
    }
    // createdAt is usually the visit time; every 20th event was backfilled a year later.
    char created[20];
    FormatDateTime(t + (i % 20 == 0 ? 365 * 86400 : 0), created);
    row.clear();
    if (!ids.empty()) {
      row += std::to_string(ids[n]);
      row += '\t';
    }
    row += Uuid(rng);
    row += '\t';
    AppendField(row, event_class);
    row += '\t';
    if (null_payload) row += "\\N";
    else AppendField(row, payload);
    row += '\t';
    row.append(created, 19);
    row += '\n';
    out << row;
  }
}

std::string EventTableDdl(const std::string& table) {
  return fmt::format(
      "CREATE TABLE IF NOT EXISTS {} (id BIGINT AUTO_INCREMENT PRIMARY KEY, uuid CHAR(36) NOT "
      "NULL, eventClass VARCHAR(255) NOT NULL, payload TEXT NULL, createdAt DATETIME NOT NULL) "
      "ENGINE=InnoDB DEFAULT CHARSET=utf8mb4",
      QuoteIdentifier(table));
}

Status LoadEvents(Connection& c, const std::string& table, const GeneratorOptions& o,
                  const std::vector<AccessLogLine>& log) {
  if (Status s = c.Execute(EventTableDdl(table)); !s.ok()) return s;
  int64_t after = 0;
  if (o.id_step > 1 || o.holes > 0) {
    Result<std::optional<std::string>> max = c.QueryValue("SELECT MAX(id) FROM " + QuoteIdentifier(table));
    if (!max.ok()) return max.status();
    if (*max) after = std::stoll(**max);
  }
  const std::vector<int64_t> all_ids = GeneratedIds(o, after);
  constexpr uint64_t kChunk = 100'000;  // bounded memory and transactions
  for (uint64_t done = 0; done < o.events; done += kChunk) {
    GeneratorOptions part = o;
    part.first_index = o.first_index + done;
    part.events = std::min(kChunk, o.events - done);
    part.total_for_spread = o.total_for_spread ? o.total_for_spread : o.first_index + o.events;
    std::vector<int64_t> ids;
    if (!all_ids.empty()) ids.assign(all_ids.begin() + done, all_ids.begin() + done + part.events);
    std::ostringstream rows;
    WriteEventRows(part, log, rows, ids);
    // Served from memory through rewind's own LOAD DATA handler: no temporary file.
    Status s = c.LoadData(
        LoadDataInto(table, fmt::format("{}uuid, eventClass, payload, createdAt", ids.empty() ? "" : "id, ")),
        rows.str());
    if (!s.ok()) return s.With("loading generated events");
  }
  return Status::Ok();
}

Status DeleteIdRanges(Connection& c, const std::string& table, const std::string& ranges) {
  std::string_view rest = ranges;
  while (!rest.empty()) {
    const size_t comma = rest.find(',');
    const std::string_view item = rest.substr(0, comma);
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    const size_t colon = item.find(':');
    const auto lo = ParseEventId(item.substr(0, colon));
    const auto hi = colon == std::string_view::npos ? lo : ParseEventId(item.substr(colon + 1));
    if (!lo || !hi || *lo > *hi) {
      return Status::InvalidInput(fmt::format("'{}' is not an id range LO:HI", item));
    }
    if (Status s = c.Execute(fmt::format("DELETE FROM {} WHERE id BETWEEN {} AND {}", QuoteIdentifier(table),
                                         IdText(*lo), IdText(*hi)));
        !s.ok()) {
      return s;
    }
  }
  return Status::Ok();
}

std::string FindAccessLog() {
  if (const char* env = std::getenv("REWIND_ACCESS_LOG"); env != nullptr && *env != '\0') return env;
  // An installed rewind-gen: the copy installed beside it (cmake/package.cmake).
  std::error_code ec;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const std::filesystem::path installed = exe.parent_path() / REWIND_DATA_FROM_BIN;
    if (std::filesystem::exists(installed, ec)) return installed.lexically_normal().string();
  }
  // The fixture ships inside the repository; the build knows where its sources are.
  return std::string(REWIND_SOURCE_DIR) + "/tests/data/apache-combined/access.log";
}

Status InsertShopEvents(Connection& c, const std::string& table, const std::vector<shop::Event>& events) {
  std::string sql;
  for (size_t i = 0; i <= events.size(); ++i) {
    if (i == events.size() || sql.size() > (1 << 20)) {
      if (!sql.empty()) {
        if (Status s = c.Execute(sql); !s.ok()) return s;
      }
      sql.clear();
      if (i == events.size()) break;
    }
    const shop::Event& e = events[i];
    sql += sql.empty() ? "INSERT INTO " + QuoteIdentifier(table) + " (uuid, eventClass, payload, createdAt) VALUES " : ",";
    sql += "(UUID(), ";
    c.AppendQuoted(sql, e.event_class);
    sql += ", ";
    c.AppendQuoted(sql, e.payload);
    sql += ", ";
    c.AppendQuoted(sql, e.created_at);
    sql += ")";
  }
  return Status::Ok();
}

}  // namespace rw
