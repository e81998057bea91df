#include "stages/flow/page_query.h"

#include <fmt/core.h>

#include <algorithm>
#include <cstdlib>
#include <iterator>

#include "base/civil_time.h"

namespace rw {

namespace {

// One row read (id, payload-or-NULL, [class index], [columns...]): counted, and kept when
// its payload came (NULL: another class, skipped).
void AddEvent(Batch& batch, EventId id, char** values, unsigned long* lengths, bool with_class,
              size_t columns) {
  ++batch.rows_read;
  if (values[1] == nullptr) {
    ++batch.skipped;
    return;
  }
  RawEvent raw{id, static_cast<uint32_t>(batch.payloads.size()), static_cast<uint32_t>(lengths[1]), 0,
               static_cast<uint32_t>(batch.raw_columns.size())};
  batch.payloads.append(values[1], lengths[1]);
  size_t at = 2;
  if (with_class) {
    unsigned cls = 0;
    for (unsigned long i = 0; i < lengths[at]; ++i) cls = cls * 10 + static_cast<unsigned>(values[at][i] - '0');
    raw.event_class = static_cast<uint16_t>(cls);
    ++at;
  }
  for (size_t i = 0; i < columns; ++i, ++at) {
    batch.raw_columns.push_back(RawColumn{static_cast<uint32_t>(batch.payloads.size()),
                                          static_cast<uint32_t>(lengths[at]), values[at] == nullptr});
    if (values[at] != nullptr) batch.payloads.append(values[at], lengths[at]);
  }
  batch.raw.push_back(raw);
}

Result<bool> HasColumn(Connection& c, const EventTableOptions& e, const std::string& column) {
  Result<std::optional<std::string>> n = c.QueryValue(fmt::format(
      "SELECT COUNT(*) FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND "
      "TABLE_NAME = {} AND COLUMN_NAME = {}",
      c.Quote(e.table), c.Quote(column)));
  if (!n.ok()) return n.status();
  return *n && **n != "0";
}

bool HasFourByteCharacter(const std::string& text) {
  for (unsigned char ch : text) {
    if (ch >= 0xF0) return true;
  }
  return false;
}

// A dotted path ("headers.__event_type") as a JSON path with every member quoted
// ('$."headers"."__event_type"'), so that any member name is taken as it is.
std::string JsonPathOf(const std::string& dotted) {
  std::string out = "$";
  size_t start = 0;
  while (true) {
    const size_t dot = dotted.find('.', start);
    out += ".\"";
    for (char ch : dotted.substr(start, dot == std::string::npos ? std::string::npos : dot - start)) {
      if (ch == '"' || ch == '\\') out += '\\';
      out += ch;
    }
    out += '"';
    if (dot == std::string::npos) return out;
    start = dot + 1;
  }
}

// The read models' filters on columns (ReadScope::filters), as a condition under which a
// class that has some is wanted ("" when no class has one).
std::string ColumnFilters(Connection& c, const std::vector<std::string>& classes, const ReadScope& scope,
                          const ClassComparison& compare) {
  std::string filtered, filter;
  for (size_t i = 0; i < classes.size() && i < scope.filters.size(); ++i) {
    const auto& alternatives = scope.filters[i];
    if (alternatives.empty()) continue;
    const std::string cls = compare.literal_prefix + c.Quote(classes[i]);
    filtered += (filtered.empty() ? "" : ", ") + cls;
    std::string any;
    for (const std::vector<ColumnIn>& all : alternatives) {
      std::string each;
      for (const ColumnIn& in : all) {
        std::string values;
        for (const std::string& v : in.values) values += (values.empty() ? "" : ", ") + c.Quote(v);
        each += fmt::format("{}{} IN ({})", each.empty() ? "" : " AND ", QuoteIdentifier(in.column), values);
      }
      any += fmt::format("{}({})", any.empty() ? "" : " OR ", each);
    }
    filter += fmt::format(" OR ({} = {} AND ({}))", compare.column, cls, any);
  }
  if (filtered.empty()) return "";
  return fmt::format(" AND ({} NOT IN ({}){})", compare.column, filtered, filter);
}

}  // namespace

Result<EventId> ReadHeadId(Connection& c, const EventTableOptions& e) {
  Result<Head> head = HeadOf(c, e, /*with_time=*/false);
  if (!head.ok()) return head.status();
  return head->id;
}

std::optional<int64_t> EventTimeSeconds(std::string_view text) {
  std::optional<CivilTime> t = ParseDateOrTimestamp(text);
  if (!t) return std::nullopt;
  return t->epoch_seconds();
}

Result<std::optional<EventId>> ReadFirstId(Connection& c, const EventTableOptions& e) {
  Result<std::optional<std::string>> min = c.QueryValue(
      fmt::format("SELECT MIN({}) FROM {}", QuoteIdentifier(e.id_column), QuoteIdentifier(e.table)));
  if (!min.ok()) return min.status();
  if (!*min) return std::optional<EventId>();
  const std::optional<EventId> id = ParseIdAs(e.id_form, **min);
  if (!id) {
    return Status::InvalidInput(fmt::format("the lowest id of {} is not an event id: '{}'", e.table, **min));
  }
  return std::optional<EventId>(*id);
}

Result<uint64_t> CountEvents(Connection& c, const EventTableOptions& e, std::optional<EventId> after,
                             EventId upto, unsigned max_seconds) {
  const std::string id = QuoteIdentifier(e.id_column);
  Result<std::optional<std::string>> n = c.QueryValue(fmt::format(
      "{}SELECT COUNT(*) FROM {} WHERE {} <= {}{}",
      max_seconds > 0 ? fmt::format("SET STATEMENT max_statement_time = {} FOR ", max_seconds) : std::string(),
      QuoteIdentifier(e.table), id, upto == kBeforeFirstId ? std::string("NULL") : IdSql(e.id_form, upto),
      after ? fmt::format(" AND {} > {}", id, IdSql(e.id_form, *after)) : std::string()));
  if (!n.ok()) return n.status();
  return *n ? std::stoull(**n) : 0;
}

Result<std::pair<std::optional<std::string>, std::optional<std::string>>> TimesOf(Connection& c,
                                                                                 const EventTableOptions& e,
                                                                                 EventId a, EventId b) {
  const std::string table = QuoteIdentifier(e.table), id = QuoteIdentifier(e.id_column);
  Result<Rows> t = c.Query(fmt::format("SELECT (SELECT {0} FROM {1} WHERE {2} = {3}), (SELECT {0} FROM {1} WHERE {2} = {4})",
                                       QuoteIdentifier(e.time_column), table, id, IdSql(e.id_form, a), IdSql(e.id_form, b)));
  if (!t.ok()) return t.status();
  if (t->rows.empty()) return std::pair<std::optional<std::string>, std::optional<std::string>>();
  return std::pair(t->rows[0][0], t->rows[0][1]);
}

std::string EventHashSql(const EventTableOptions& e, EventId id) {
  const bool type_column = e.type_path.empty();
  return fmt::format("(SELECT MD5(CONCAT_WS(0x1f, COALESCE({}, 0x00), {})) FROM {} WHERE {} = {})",
                     QuoteIdentifier(e.payload_column),
                     type_column ? fmt::format("COALESCE({}, 0x00)", QuoteIdentifier(e.type_column))
                                 : std::string("''"),
                     QuoteIdentifier(e.table), QuoteIdentifier(e.id_column), IdSql(e.id_form, id));
}

Result<std::optional<std::string>> EventHash(Connection& c, const EventTableOptions& e, EventId id) {
  return c.QueryValue("SELECT " + EventHashSql(e, id));
}

Result<std::string> ChangedSinceRead(Connection& c, const EventTableOptions& e, EventId id, const std::string& mark) {
  if (mark.empty() || id == kBeforeFirstId) return std::string();
  Result<std::optional<std::string>> now = EventHash(c, e, id);
  if (!now.ok()) return now.status();
  if (!*now) return fmt::format("the event {} it stopped at is no longer in {}", IdShown(e.id_form, id), e.table);
  if (**now != mark) {
    return fmt::format("the event {} it stopped at is not the one it read (another class or payload: the table "
                       "{} was restored or replaced since)",
                       IdShown(e.id_form, id), e.table);
  }
  return std::string();
}

Result<std::map<std::string, std::string>> ChunkSums(Connection& c, const EventTableOptions& e, EventId lo,
                                                     EventId hi, EventId chunk, bool full,
                                                     const std::vector<std::string>* only) {
  if (!e.id_form.integer()) {
    return Status::InvalidInput(fmt::format(
        "comparing a read server's event table with the primary's goes by chunks of integer ids, and the ids of "
        "'{}' are {}s: read them from the primary alone (without --read-host or --read-socket)",
        e.table, IdFormName(e.id_form)));
  }
  const std::string id = QuoteIdentifier(e.id_column);
  std::string what = fmt::format("COUNT(*), SUM({})", id);
  if (full) {
    const std::string type = e.type_path.empty() ? QuoteIdentifier(e.type_column) : std::string("''");
    what += fmt::format(", BIT_XOR(CRC32(CONCAT_WS(0x1f, {}, {})))", type, QuoteIdentifier(e.payload_column));
  }
  std::string where = fmt::format("{} > {} AND {} <= {}", id, IdText(lo), id, IdText(hi));
  if (only != nullptr) {
    std::string keys;
    for (const std::string& k : *only) keys += (keys.empty() ? "" : ", ") + k;
    where += fmt::format(" AND FLOOR({} / {}) IN ({})", id, IdText(chunk), keys);
  }
  Result<Rows> rows = c.Query(fmt::format("SELECT FLOOR({0} / {1}) AS k, {2} FROM {3} WHERE {4} GROUP BY k",
                                          id, IdText(chunk), what, QuoteIdentifier(e.table), where));
  if (!rows.ok()) return rows.status();
  std::map<std::string, std::string> out;
  for (const auto& row : rows->rows) {
    std::string v;
    for (size_t i = 1; i < row.size(); ++i) v += (i > 1 ? " " : "") + row[i].value_or("NULL");
    out[row[0].value_or("NULL")] = v;
  }
  return out;
}

Result<Rows> CommonClasses(Connection& c, const EventTableOptions& e, size_t first, size_t top) {
  const std::string cls = e.type_path.empty()
                              ? QuoteIdentifier(e.type_column)
                              : fmt::format("JSON_VALUE({}, {})", QuoteIdentifier(e.payload_column),
                                            c.Quote(JsonPathOf(e.type_path)));
  return c.Query(fmt::format(
      "SELECT t, COUNT(*) FROM (SELECT {} AS t FROM {} ORDER BY {} LIMIT {}) x GROUP BY t ORDER BY 2 DESC LIMIT {}",
      cls, QuoteIdentifier(e.table), QuoteIdentifier(e.id_column), first, top));
}

std::string Printable(std::string_view v) {
  const bool text = std::all_of(v.begin(), v.end(), [](char ch) { return ch >= 0x20 && ch < 0x7f; });
  if (text) return std::string(v.substr(0, 40)) + (v.size() > 40 ? "..." : "");
  std::string hex = "0x";
  for (unsigned char ch : v.substr(0, 20)) hex += fmt::format("{:02x}", ch);
  return hex;
}

namespace {

// The form of the id column (IdFormOf, judged by its type and its highest id, else its lowest,
// else its declared length): integers, or time-sortable text or bytes; refused with the way out
// otherwise.
Result<IdForm> IdFormOfColumn(Connection& c, const EventTableOptions& e, const std::string& type) {
  const IdForm integer;
  if (IdFormOf(type, 0, std::nullopt) == integer) return integer;
  Result<Rows> probe = c.Query(fmt::format(
      "SELECT (SELECT CHARACTER_MAXIMUM_LENGTH FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND "
      "TABLE_NAME = {0} AND COLUMN_NAME = {1}), (SELECT MIN({2}) FROM {3}), (SELECT MAX({2}) FROM {3})",
      c.Quote(e.table), c.Quote(e.id_column), QuoteIdentifier(e.id_column), QuoteIdentifier(e.table)));
  if (!probe.ok()) return probe.status();
  const auto& row = probe->rows.at(0);
  // Characters for text, bytes for BINARY, whatever the character set.
  const uint64_t length = row[0] ? std::strtoull(row[0]->c_str(), nullptr, 10) : 0;
  const std::optional<IdForm> form = IdFormOf(type, length, row[2] ? row[2] : row[1]);
  const std::string way_out =
      "rewind pages by the id column and needs integers (TINYINT to BIGINT), ULIDs (CHAR(26)), or UUIDs of "
      "version 7 (CHAR(36) or BINARY(16)); for another id, give the table an AUTO_INCREMENT column of its own "
      "and name it with --id-column (docs/frameworks.md, \"Ids that are not integers\")";
  if (!form) {
    return Status::InvalidInput(fmt::format("the id column '{}' of '{}' is {}{}, not an integer: {}", e.id_column,
                                            e.table, type,
                                            row[2] ? fmt::format(" holding ids like '{}'", Printable(*row[2])) : "",
                                            way_out));
  }
  // UUIDs sort in the order they were made only in version 7 (time first); the version is the
  // 13th hexadecimal digit. Both ends of the table are checked.
  for (const auto& v : {row[1], row[2]}) {
    if (!v) continue;
    const int version = UuidVersion(*form, *v).value_or(7);  // a ULID has none
    if (version != 7) {
      return Status::InvalidInput(fmt::format(
          "the id column '{}' of '{}' holds UUIDs of version {} ({}): only version 7 sorts in the order the "
          "events were written, and rewind reads by that order; {}",
          e.id_column, e.table, version, Printable(*v), way_out));
    }
    if (!ParseIdAs(*form, *v)) {  // the highest of 128 bits set
      return Status::InvalidInput(fmt::format(
          "the id '{}' of '{}' is a {} of a time after the year 6400 (its highest bit set), beyond what rewind "
          "reads: a wrong id in the table? Delete or correct it, or {}",
          Printable(*v), e.table, IdFormName(*form), way_out.substr(way_out.find("give the table"))));
    }
  }
  return *form;
}

}  // namespace

void FindIdForm(const ConnectionOptions& server, EventTableOptions& e) {
  if (server.database.empty()) return;
  Result<std::unique_ptr<Connection>> c = Connection::Open(server);
  if (!c.ok()) return;
  EventTableOptions found = e;
  if (CheckEventTable(**c, found, false).ok()) e.id_form = found.id_form;
}

Status CheckEventTable(Connection& c, EventTableOptions& e, bool with_time_column) {
  Result<Rows> table = c.Query(fmt::format(
      "SELECT COLUMN_NAME, DATA_TYPE, IS_NULLABLE FROM information_schema.COLUMNS WHERE "
      "TABLE_SCHEMA = DATABASE() AND TABLE_NAME = {} ORDER BY ORDINAL_POSITION",
      c.Quote(e.table)));
  if (!table.ok()) return table.status();
  if (table->rows.empty()) {
    return Status::NotFound(fmt::format("event table '{}' does not exist in database '{}'",
                                        e.table, c.options().database));
  }
  auto column = [&](const std::string& name) -> const std::vector<std::optional<std::string>>* {
    for (const auto& row : table->rows) {
      if (row[0] && *row[0] == name) return &row;
    }
    return nullptr;
  };
  for (const std::string* col : {&e.id_column, &e.type_column, &e.payload_column, &e.time_column}) {
    if (col == &e.time_column && !with_time_column) continue;
    if (col == &e.type_column && !e.type_path.empty()) continue;  // the class is in the payload
    if (column(*col) == nullptr) {
      std::string has;
      for (const auto& row : table->rows) has += (has.empty() ? "" : ", ") + row[0].value_or("");
      const std::string flag =
          col == &e.id_column        ? "name the id column with --id-column"
          : col == &e.type_column    ? "name the type column with --type-column, or, when the type is inside the "
                                       "JSON payload (evtstore's `type`, EventSauce's `headers.__event_type`), "
                                       "give its path with --type-path"
          : col == &e.payload_column ? "name the payload column with --payload-column"
                                     : "name the time column with --time-column";
      return Status::NotFound(fmt::format("event table '{}' has no column '{}': {} (its columns: {})", e.table,
                                          *col, flag, has));
    }
  }
  const auto& id = *column(e.id_column);
  Result<IdForm> form = IdFormOfColumn(c, e, id[1].value_or(""));
  if (!form.ok()) return form.status();
  e.id_form = *form;
  if (id[2].value_or("YES") != "NO") {
    return Status::InvalidInput(fmt::format(
        "the id column '{}' of '{}' allows NULL: rewind needs it NOT NULL", e.id_column, e.table));
  }
  // Unique: the primary key or a unique index on that column alone.
  Result<std::optional<std::string>> unique = c.QueryValue(fmt::format(
      "SELECT COUNT(*) FROM (SELECT INDEX_NAME FROM information_schema.STATISTICS WHERE "
      "TABLE_SCHEMA = DATABASE() AND TABLE_NAME = {} AND NON_UNIQUE = 0 GROUP BY INDEX_NAME "
      "HAVING COUNT(*) = 1 AND MAX(COLUMN_NAME) = {}) u",
      c.Quote(e.table), c.Quote(e.id_column)));
  if (!unique.ok()) return unique.status();
  if (!*unique || **unique == "0") {
    return Status::InvalidInput(fmt::format(
        "the id column '{}' of '{}' is not unique: rewind needs it to be the primary key or "
        "to have a unique index of its own (two events with one id would be read as one)",
        e.id_column, e.table));
  }
  return Status::Ok();
}

Status CheckReadColumns(Connection& c, const EventTableOptions& events, const std::vector<std::string>& columns) {
  for (const std::string& col : columns) {
    Result<std::optional<std::string>> n = c.QueryValue(fmt::format(
        "SELECT COUNT(*) FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND "
        "TABLE_NAME = {} AND COLUMN_NAME = {}",
        c.Quote(events.table), c.Quote(col)));
    if (!n.ok()) return n.status();
    if (!*n || **n == "0") {
      return Status::NotFound(fmt::format("a declared read model reads the field '{}', but the event "
                                          "table '{}' has no such column",
                                          col, events.table));
    }
  }
  return Status::Ok();
}

Result<size_t> PageQueryBytes(Connection& c, size_t wanted) {
  if (wanted == 0) return size_t{0};
  auto variable = [&](std::string_view name) -> Result<size_t> {
    Result<std::optional<std::string>> v = c.QueryValue(fmt::format("SELECT @@SESSION.{}", name));
    if (!v.ok()) return v.status().With(fmt::format("reading the server's {}", name));
    return *v ? std::strtoull((*v)->c_str(), nullptr, 10) : size_t{0};
  };
  Result<size_t> net_buffer = variable("net_buffer_length");
  if (!net_buffer.ok()) return net_buffer.status();
  Result<size_t> max_packet = variable("max_allowed_packet");
  if (!max_packet.ok()) return max_packet.status();
  const size_t bytes = std::min(wanted, *max_packet / 2);
  return bytes > *net_buffer ? bytes : 0;
}

std::vector<std::string> WantedClasses(const EventTableOptions& events, const ReadScope& scope) {
  std::vector<std::string> classes = scope.classes;
  if (classes.empty()) classes.push_back(events.page_visited_class);
  return classes;
}

Result<Head> HeadOf(Connection& c, const EventTableOptions& e, bool with_time) {
  const std::string id = QuoteIdentifier(e.id_column);
  Result<Rows> rows = c.Query(fmt::format(
      "SELECT {}, h.* FROM (SELECT 1) one LEFT JOIN (SELECT {}{} FROM {} ORDER BY {} DESC LIMIT 1) h ON TRUE",
      kServerMicros, id, with_time ? ", " + QuoteIdentifier(e.time_column) : "", QuoteIdentifier(e.table), id));
  if (!rows.ok()) return rows.status();
  Head head;
  if (rows->rows.empty()) return head;
  const auto& row = rows->rows[0];
  if (row[0]) {
    head.server_us = std::strtoll(row[0]->c_str(), nullptr, 10);
    head.server_time = *head.server_us / 1'000'000;
  }
  if (!row[1]) return head;  // an empty table
  std::optional<EventId> parsed = ParseIdAs(e.id_form, *row[1]);
  if (!parsed) {
    return Status::InvalidInput(fmt::format("the head id '{}' is not an id of the form {}", Printable(*row[1]),
                                            IdFormName(e.id_form)));
  }
  head.id = *parsed;
  if (with_time && row[2]) head.time = EventTimeSeconds(*row[2]);
  return head;
}


Result<ClassComparison> ExactClassComparison(Connection& c, const EventTableOptions& e,
                                             const std::vector<std::string>& classes) {
  // The class's column, or its place in the payload: JSON_VALUE's result is in the payload
  // column's character set (binary for a BLOB), which then decides the comparison.
  const bool in_payload = !e.type_path.empty();
  const std::string type = in_payload ? fmt::format("JSON_VALUE({}, {})", QuoteIdentifier(e.payload_column),
                                                    c.Quote(JsonPathOf(e.type_path)))
                                      : QuoteIdentifier(e.type_column);
  const ClassComparison bytes{"BINARY " + type, "BINARY "};
  Result<std::optional<std::string>> charset = c.QueryValue(fmt::format(
      "SELECT COALESCE(CHARACTER_SET_NAME, '') FROM information_schema.COLUMNS WHERE "
      "TABLE_SCHEMA = DATABASE() AND TABLE_NAME = {} AND COLUMN_NAME = {}",
      c.Quote(e.table), c.Quote(in_payload ? e.payload_column : e.type_column)));
  if (!charset.ok()) return charset.status();
  if (!*charset) return bytes;
  if ((*charset)->empty()) return ClassComparison{type, ""};  // a binary column compares bytes
  // A character set that holds every wanted class exactly as the connection (utf8mb4) sends
  // it, so that comparing characters is comparing bytes.
  const bool holds = **charset == "utf8mb4" ||
                     ((**charset == "utf8mb3" || **charset == "utf8") &&
                      std::none_of(classes.begin(), classes.end(), HasFourByteCharacter));
  if (!holds) return bytes;
  const std::string collation = **charset + "_nopad_bin";
  Result<std::optional<std::string>> known = c.QueryValue(fmt::format(
      "SELECT COUNT(*) FROM information_schema.COLLATIONS WHERE COLLATION_NAME = {}", c.Quote(collation)));
  if (!known.ok()) return known.status();
  if (!*known || **known == "0") return bytes;  // before MariaDB 10.2, or MySQL
  return ClassComparison{fmt::format("{} COLLATE {}", type, collation), ""};
}

Result<std::string> WhyJudgedByIds(Connection& c, const EventTableOptions& e, uint64_t settle_ids) {
  if (settle_ids > 0) return std::string("--settle-ids");
  Result<bool> has = HasColumn(c, e, e.time_column);
  if (!has.ok()) return has.status();
  if (!*has) return fmt::format("the event table has no time column '{}'", e.time_column);
  Result<Head> head = HeadOf(c, e, /*with_time=*/true);
  if (!head.ok()) return head.status();
  if (head->id != kBeforeFirstId && !head->time) {
    return fmt::format("the time column '{}' of the head does not parse as a time", e.time_column);
  }
  return std::string();
}

std::string PadQuery(std::string sql, size_t bytes) {
  // A comment of spaces, saying what it is to whoever finds it in a server's log.
  constexpr std::string_view kOpen = " /* rewind --result-buffer: padding ", kClose = "*/";
  if (sql.size() + kOpen.size() + kClose.size() >= bytes) return sql;
  sql.reserve(bytes);
  sql += kOpen;
  sql.append(bytes - sql.size() - kClose.size(), ' ');
  sql += kClose;
  return sql;
}

PageQuery::PageQuery(Connection& c, const EventTableOptions& events, const ReadScope& scope,
                     const std::string& until_time, const ClassComparison& compare, bool with_time)
    : id_(QuoteIdentifier(events.id_column)), form_(events.id_form), compare_column_(compare.column), columns_(scope.columns.size()) {
  // The type filter is pushed into the server, exactly (see ClassComparison): unhandled
  // events cost an id, not a payload.
  const std::string until =
      until_time.empty() ? std::string()
                         : fmt::format(" AND {} <= {}", QuoteIdentifier(events.time_column), c.Quote(until_time));
  const std::vector<std::string> classes = WantedClasses(events, scope);
  std::string match, index;
  if (classes.size() == 1) {
    match = fmt::format("{} = {}{}", compare.column, compare.literal_prefix, c.Quote(classes[0]));
  } else {
    // Several classes: the payload for any of them, and which one it is as a small number.
    for (size_t i = 0; i < classes.size(); ++i) {
      const std::string cls = compare.literal_prefix + c.Quote(classes[i]);
      match += (i ? ", " : "") + cls;
      index += fmt::format(" WHEN {} THEN {}", cls, i);
    }
    match = fmt::format("{} IN ({})", compare.column, match);
    index = fmt::format(", CASE {}{} END", compare.column, index);
    with_class_ = true;
  }
  std::string columns;
  for (const std::string& col : scope.columns) columns += ", " + QuoteIdentifier(col);
  if (with_time) {  // last: each hole is judged by the time of the event above it
    time_index_ = static_cast<int>(2 + (with_class_ ? 1 : 0) + scope.columns.size());
    columns += ", " + QuoteIdentifier(events.time_column);
  }
  select_ = fmt::format("SELECT {id}, CASE WHEN {match}{until}{filter} THEN COALESCE({payload}, '') END{index}{columns} "
                        "FROM {table}",
                        fmt::arg("until", until), fmt::arg("filter", ColumnFilters(c, classes, scope, compare)),
                        fmt::arg("id", id_), fmt::arg("match", match), fmt::arg("index", index),
                        fmt::arg("columns", columns), fmt::arg("payload", QuoteIdentifier(events.payload_column)),
                        fmt::arg("table", QuoteIdentifier(events.table)));
}

std::string PageQuery::Range(EventId lo, EventId hi, size_t limit) const {
  const std::string lower = lo == kBeforeFirstId ? std::string("TRUE") : fmt::format("{} > {}", id_, IdSql(form_, lo));
  return fmt::format("{} WHERE {} AND {} <= {} ORDER BY {} LIMIT {}", select_, lower, id_, IdSql(form_, hi), id_, limit);
}

std::string PageQuery::Ids(std::span<const IdRange> ranges) const {
  std::string where;
  for (const IdRange& r : ranges) {
    if (!where.empty()) where += " OR ";
    where += r.lo == r.hi ? fmt::format("{} = {}", id_, IdSql(form_, r.lo))
                          : fmt::format("{} BETWEEN {} AND {}", id_, IdSql(form_, r.lo), IdSql(form_, r.hi));
  }
  return fmt::format("{} WHERE {} ORDER BY {}", select_, where, id_);
}

void PageQuery::AddRow(Batch& batch, EventId id, char** values, unsigned long* lengths) const {
  AddEvent(batch, id, values, lengths, with_class_, columns_);
}

}  // namespace rw
