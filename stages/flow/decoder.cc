#include "stages/flow/decoder.h"

#include <fmt/core.h>
#include <simdjson.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string_view>

#include "base/flat_map.h"
#include "base/text_table.h"

namespace rw {
namespace {

using simdjson::ondemand::json_type;

const char* TypeName(json_type t) {
  switch (t) {
    case json_type::array: return "an array";
    case json_type::object: return "an object";
    case json_type::number: return "a number";
    case json_type::string: return "a string";
    case json_type::boolean: return "a boolean";
    case json_type::null: return "null";
  }
  return "unknown";
}

// A short, printable excerpt of untrusted bytes for an error message.
std::string Excerpt(std::string_view s) {
  constexpr size_t kMax = 80;
  std::string out(s.substr(0, kMax));
  for (char& c : out) {
    if (static_cast<unsigned char>(c) < 0x20) c = ' ';
  }
  if (s.size() > kMax) out += "...";
  return out;
}

// Opens a payload as one JSON object. "" on success, else why it is not one.
std::string OpenObject(simdjson::ondemand::parser& parser, const char* data, size_t length, size_t capacity,
                       simdjson::ondemand::document& doc, simdjson::ondemand::object& obj) {
  if (length == 0) return "empty payload";
  if (auto err = parser.iterate(data, length, capacity).get(doc)) {
    return fmt::format("payload is not JSON: {}", simdjson::error_message(err));
  }
  json_type doc_type;
  if (auto err = doc.type().get(doc_type)) {
    return fmt::format("payload is not JSON: {}", simdjson::error_message(err));
  }
  if (doc_type != json_type::object) return fmt::format("payload is {}, expected an object", TypeName(doc_type));
  if (auto err = doc.get_object().get(obj)) {
    return fmt::format("payload is not a JSON object: {}", simdjson::error_message(err));
  }
  return {};
}

// After the object is read to its closing brace: a value after it (two objects glued
// together, a write appended to another) means the payload is not one JSON object and its
// fields cannot be trusted. (Stray text is already refused by simdjson's first pass.)
std::string TrailingBytes(simdjson::ondemand::document& doc, const char* data, size_t length) {
  if (const char* rest = nullptr; doc.current_location().get(rest) == simdjson::SUCCESS) {
    return fmt::format("payload has bytes after the JSON object: '{}'",
                       Excerpt(std::string_view(rest, data + length - rest)));
  }
  return {};
}

// A string value's bytes between its quotes, escapes and all (the raw token includes the
// quotes and any whitespace up to the next token); false when it has no closing quote.
bool StringToken(simdjson::ondemand::value& value, std::string_view& token) {
  token = value.raw_json_token();
  while (!token.empty() && token.back() != '"') token.remove_suffix(1);
  if (token.size() < 2) return false;
  token = token.substr(1, token.size() - 2);
  return true;
}

// A string value. Fast path: one without escapes is used in place; an escaped one is
// unescaped into the arena.
simdjson::error_code ReadString(simdjson::ondemand::value& value, StringArena& arena, std::string_view& out) {
  if (std::string_view token; StringToken(value, token) && token.find('\\') == std::string_view::npos) {
    out = token;
    return simdjson::SUCCESS;
  }
  std::string_view unescaped;
  if (auto err = value.get_string().get(unescaped)) return err;
  out = arena.Copy(unescaped);
  return simdjson::SUCCESS;
}

// One wanted text field's distinct texts in a batch, keyed by their JSON token (the bytes
// between the quotes, escapes and all). A token is unescaped, checked and hashed the first
// time the batch has it; every later event with the same token gets its id, text and hash
// from that one lookup (the blog's URLs and user agents escape every '/', and repeat).
// Only good texts enter, so a bad one is judged again, in its payload's field order, each
// time it comes.
struct TokenTable {
  TextTable ids;                        // token -> batch id
  std::vector<TextTable::Entry> texts;  // by batch id: the text (a) and TextTable::HashOf(text)
  // The last token read and its id (kNoId for none): a visitor's next event often repeats
  // it, and one compare then replaces the hash and the lookup.
  std::string_view last_token;
  uint32_t last_id;
  void Clear();
};

constexpr uint32_t kNoId = ~uint32_t{0};

void TokenTable::Clear() {
  ids.Clear();
  texts.clear();
  last_id = kNoId;
}

// A string value of a field kept in `table`: its text (viewed in place, or unescaped into
// `arena`) and its batch id, or kNoId when the text is longer than `max_bytes` (not kept).
// `keys` holds copies of the tokens for the rest of the batch.
simdjson::error_code ReadText(simdjson::ondemand::value& value, TokenTable& table, size_t max_bytes,
                              StringArena& arena, StringArena& keys, std::string_view& text, uint32_t& id) {
  std::string_view token;
  if (!StringToken(value, token)) return simdjson::STRING_ERROR;
  if (table.last_id != kNoId && token == table.last_token) {
    id = table.last_id;
    text = table.texts[id].a;
    return simdjson::SUCCESS;
  }
  const uint64_t token_hash = TextTable::HashOf(token, {});
  if (const int64_t known = table.ids.Find(token, {}, token_hash); known >= 0) {
    id = static_cast<uint32_t>(known);
    text = table.texts[id].a;
    table.last_token = token;
    table.last_id = id;
    return simdjson::SUCCESS;
  }
  if (auto err = ReadString(value, arena, text)) return err;
  if (text.size() > max_bytes) {
    id = kNoId;
    return simdjson::SUCCESS;
  }
  id = table.ids.Intern(token, {}, token_hash, &keys);
  table.texts.push_back({text, {}, text.data() == token.data() ? token_hash : TextTable::HashOf(text, {})});
  table.last_token = token;
  table.last_id = id;
  return simdjson::SUCCESS;
}

// A key. Fast path: one without escapes is viewed in place (simdjson's first pass found
// its closing quote, so the scan stops); an escaped one is unescaped by simdjson.
simdjson::error_code ReadKey(simdjson::ondemand::field& field, std::string_view& key) {
  const char* begin = field.key().raw();
  const char* p = begin;
  while (*p != '"' && *p != '\\') ++p;
  if (*p == '"') {
    key = std::string_view(begin, static_cast<size_t>(p - begin));
    return simdjson::SUCCESS;
  }
  return field.unescaped_key().get(key);
}

// The next field of an object and its key: "" when both are readable, else why not.
std::string OpenField(simdjson::simdjson_result<simdjson::ondemand::field>&& result,
                      simdjson::ondemand::field& field, std::string_view& key) {
  if (auto err = std::move(result).get(field)) {
    return fmt::format("payload is not valid JSON: {}", simdjson::error_message(err));
  }
  if (auto err = ReadKey(field, key)) {
    return fmt::format("payload has a bad key: {}", simdjson::error_message(err));
  }
  return {};
}

struct Wanted {
  std::string_view key;
  uint32_t field;
};
constexpr Wanted kWanted[] = {{"visitedAt", kFieldVisitedAt},
                              {"url", kFieldUrl},
                              {"ip", kFieldIp},
                              {"userAgent", kFieldUserAgent}};

// kWanted's indexes, for the arrays kept in its order.
constexpr size_t kVisitedAtIndex = 0, kUrlIndex = 1, kIpIndex = 2, kUserAgentIndex = 3;
static_assert(kWanted[kVisitedAtIndex].key == "visitedAt" && kWanted[kUrlIndex].key == "url" &&
                  kWanted[kIpIndex].key == "ip" && kWanted[kUserAgentIndex].key == "userAgent",
              "WantedIndex below follows this order");

// kWanted's index of a key, or -1: compared with constant-size compares (this runs for
// every key of every payload).
int WantedIndex(std::string_view key) {
  switch (key.size()) {
    case 2: return std::memcmp(key.data(), "ip", 2) == 0 ? 2 : -1;
    case 3: return std::memcmp(key.data(), "url", 3) == 0 ? 1 : -1;
    case 9:
      if (std::memcmp(key.data(), "visitedAt", 9) == 0) return 0;
      if (std::memcmp(key.data(), "userAgent", 9) == 0) return 3;
      return -1;
    default: return -1;
  }
}

// Returns "" when the whole event is usable, else the reason. A bad field other than
// visitedAt leaves the event usable for the projectors that do not need it: its bit stays
// clear in out.fields_ok and the reason is still returned.
// `tables` and `ids` are indexed as kWanted; visitedAt has no table.
std::string DecodeOne(simdjson::ondemand::parser& parser, const char* data, size_t length,
                      size_t capacity, uint32_t fields, StringArena& arena, TokenTable* tables,
                      StringArena& keys, uint32_t* ids, PageVisit& out) {
  out.fields_ok = 0;
  simdjson::ondemand::document doc;
  simdjson::ondemand::object obj;
  if (std::string why = OpenObject(parser, data, length, capacity, doc, obj); !why.empty()) return why;
  std::string_view values[4];
  uint32_t seen = 0;
  std::string field_errors;  // bad fields other than visitedAt
  auto field_error = [&](size_t i, std::string reason) -> bool {
    seen |= kWanted[i].field;  // present, but bad
    if (kWanted[i].field == kFieldVisitedAt) return false;
    field_errors += (field_errors.empty() ? "" : "; ") + reason;
    return true;
  };
  for (auto field_result : obj) {
    simdjson::ondemand::field field;
    std::string_view key;
    if (std::string why = OpenField(std::move(field_result), field, key); !why.empty()) return why;
    {
      const int i = WantedIndex(key);
      if (i < 0 || !(fields & kWanted[i].field)) continue;
      simdjson::ondemand::value value = field.value();
      json_type type;
      if (auto err = value.type().get(type)) {
        return fmt::format("field '{}' is not valid JSON: {}", key, simdjson::error_message(err));
      }
      if (type != json_type::string) {
        std::string reason =
            fmt::format("field '{}' is {}, expected a string", kWanted[i].key, TypeName(type));
        if (!field_error(i, reason)) return reason;
        continue;
      }
      const size_t max_bytes = kWanted[i].field == kFieldUrl ? kMaxUrlBytes : SIZE_MAX;
      if (auto err = i == kVisitedAtIndex ? ReadString(value, arena, values[i])
                            : ReadText(value, tables[i], max_bytes, arena, keys, values[i], ids[i])) {
        std::string reason = fmt::format("field '{}' is not a valid string: {}", kWanted[i].key,
                                         simdjson::error_message(err));
        if (!field_error(i, reason)) return reason;
        continue;
      }
      if (kWanted[i].field == kFieldUrl && values[i].size() > kMaxUrlBytes) {
        // Stored whole or not at all: never cut (two URLs would then share a row).
        if (!field_error(i, fmt::format("field 'url' is {} bytes, more than the {} rewind stores",
                                        values[i].size(), kMaxUrlBytes)))
          return "url too long";
        continue;
      }
      seen |= kWanted[i].field;
      // visitedAt's bit is set last, once the whole payload has been read: a visit
      // without it is unusable, whatever else it has.
      if (kWanted[i].field != kFieldVisitedAt) out.fields_ok |= kWanted[i].field;
    }
  }
  if (std::string why = TrailingBytes(doc, data, length); !why.empty()) return why;
  for (size_t i = 0; i < std::size(kWanted); ++i) {
    if ((fields & kWanted[i].field) && !(seen & kWanted[i].field)) {
      std::string reason = fmt::format("missing field '{}'", kWanted[i].key);
      if (!field_error(i, reason)) return reason;
    }
  }
  const std::optional<CivilTime> t = ParseIsoTimestamp(values[0]);
  if (!t) {
    return fmt::format("unparseable visitedAt '{}' (rewind reads ISO-8601 times from year 0001 to 9999)",
                       Excerpt(values[0]));
  }
  out.visited_at = *t;
  out.url = values[1];
  out.ip = values[2];
  out.user_agent = values[3];
  out.fields_ok |= kFieldVisitedAt;
  return field_errors;
}

void AddPath(Decoder::PathNode& root, std::string_view path, int32_t slot) {
  Decoder::PathNode* node = &root;
  while (true) {
    const size_t dot = path.find('.');
    const std::string_view part = path.substr(0, dot);
    Decoder::PathNode* next = nullptr;
    for (auto& c : node->children) {
      if (c.key == part) next = &c;
    }
    if (next == nullptr) {
      node->children.push_back({std::string(part), -1, {}});
      next = &node->children.back();
    }
    node = next;
    if (dot == std::string_view::npos) break;
    path.remove_prefix(dot + 1);
  }
  node->slot = slot;
}

// Records the wanted values of one JSON object (a payload, or an object inside it).
std::string WalkObject(simdjson::ondemand::object obj, const Decoder::PathNode& node, StringArena& arena,
                       FieldValue* values) {
  for (auto field_result : obj) {
    simdjson::ondemand::field field;
    std::string_view key;
    if (std::string why = OpenField(std::move(field_result), field, key); !why.empty()) return why;
    const Decoder::PathNode* child = nullptr;
    for (const auto& c : node.children) {
      if (c.key == key) child = &c;
    }
    if (child == nullptr) continue;
    simdjson::ondemand::value value = field.value();
    json_type type;
    if (auto err = value.type().get(type)) {
      return fmt::format("field '{}' is not valid JSON: {}", key, simdjson::error_message(err));
    }
    FieldValue v;
    switch (type) {
      case json_type::string: {
        v.kind = ValueKind::kString;
        if (auto err = ReadString(value, arena, v.text)) {
          return fmt::format("field '{}' is not a valid string: {}", key, simdjson::error_message(err));
        }
        break;
      }
      case json_type::number: {
        v.kind = ValueKind::kNumber;
        std::string_view token = value.raw_json_token();
        while (!token.empty() && (token.back() == ' ' || token.back() == '\n' || token.back() == '\t' ||
                                  token.back() == '\r')) {
          token.remove_suffix(1);
        }
        v.text = token;
        break;
      }
      case json_type::boolean: {
        bool b = false;
        if (auto err = value.get_bool().get(b)) {
          return fmt::format("field '{}' is not valid JSON: {}", key, simdjson::error_message(err));
        }
        v.kind = b ? ValueKind::kTrue : ValueKind::kFalse;
        break;
      }
      case json_type::null: v.kind = ValueKind::kNull; break;
      case json_type::array: v.kind = ValueKind::kArray; break;
      case json_type::object: {
        v.kind = ValueKind::kObject;
        if (!child->children.empty()) {
          simdjson::ondemand::object inner;
          if (auto err = value.get_object().get(inner)) {
            return fmt::format("field '{}' is not a valid object: {}", key, simdjson::error_message(err));
          }
          if (std::string why = WalkObject(inner, *child, arena, values); !why.empty()) return why;
        }
        break;
      }
    }
    if (child->slot >= 0) values[child->slot] = v;
  }
  return {};
}

// Decodes one payload into a record's values. "" when it is a JSON object, else why not.
std::string DecodeRecord(simdjson::ondemand::parser& parser, const char* data, size_t length, size_t capacity,
                         const Decoder::PathNode& paths, StringArena& arena, FieldValue* values) {
  simdjson::ondemand::document doc;
  simdjson::ondemand::object obj;
  if (std::string why = OpenObject(parser, data, length, capacity, doc, obj); !why.empty()) return why;
  if (std::string why = WalkObject(obj, paths, arena, values); !why.empty()) return why;
  return TrailingBytes(doc, data, length);
}

// Appends the EventRecord of `raw` (of a class a declared read model reads) and its values:
// the payload's wanted paths (none parsed when no read model reads one), the event table's
// columns, the times parsed and the texts given batch ids, once here rather than once per
// read model. Returns whether its payload failed (the failure is in the batch).
bool AppendRecord(simdjson::ondemand::parser& parser, Batch& batch, const RawEvent& raw, size_t width,
                  const Decoder::PathNode& paths, const std::vector<std::pair<uint32_t, size_t>>& column_slots,
                  const std::vector<uint32_t>& time_slots, const std::vector<uint32_t>& text_slots,
                  TextTable& record_texts, StringArena& record_text_bytes) {
  EventRecord record{raw.id, raw.event_class, false, static_cast<uint32_t>(batch.values.size())};
  batch.values.resize(batch.values.size() + width);
  FieldValue* values = &batch.values[record.first_value];
  const size_t total = batch.payloads.size();
  std::string reason = paths.children.empty()
                           ? std::string()
                           : DecodeRecord(parser, batch.payloads.data() + raw.offset, raw.length, total - raw.offset,
                                          paths, batch.strings, values);
  record.decoded = reason.empty();
  for (const auto& [slot, index] : column_slots) {
    const RawColumn& col = batch.raw_columns[raw.columns + index];
    FieldValue& v = values[slot];
    v.kind = col.null ? ValueKind::kNull : ValueKind::kString;
    if (!col.null) v.text = std::string_view(batch.payloads.data() + col.offset, col.length);
  }
  for (uint32_t slot : time_slots) {
    FieldValue& v = values[slot];
    if (v.kind != ValueKind::kString) continue;
    const std::optional<CivilTime> t = ParseDateOrTimestamp(v.text);
    v.time_state = t ? TimeState::kOk : TimeState::kBad;
    if (t) v.time = *t;
  }
  for (uint32_t slot : text_slots) {  // hashed here, while the bytes are warm
    FieldValue& v = values[slot];
    if (v.kind == ValueKind::kString || v.kind == ValueKind::kNumber) {
      v.text_id = record_texts.Intern(v.text, {}, TextTable::HashOf(v.text, {}), &record_text_bytes) + 1;
    }
  }
  batch.records.push_back(record);
  if (reason.empty()) return false;
  batch.failures.push_back(Failure{raw.id, "decoder", std::move(reason),
                                   std::string(batch.payloads.data() + raw.offset, std::min<size_t>(raw.length, 255))});
  return true;
}

}  // namespace

Decoder::Decoder(uint32_t fields, std::optional<uint16_t> page_class, EventCatalog catalog)
    : fields_(fields | kFieldVisitedAt), page_class_(page_class), catalog_(std::move(catalog)) {
  size_t column = 0;
  for (size_t i = 0; i < catalog_.fields().size(); ++i) {
    if (catalog_.wants_time(static_cast<uint32_t>(i))) time_slots_.push_back(static_cast<uint32_t>(i));
    if (catalog_.wants_text(static_cast<uint32_t>(i))) text_slots_.push_back(static_cast<uint32_t>(i));
    const FieldSource& f = catalog_.fields()[i];
    if (f.column) {
      column_slots_.push_back({static_cast<uint32_t>(i), column++});
    } else {
      AddPath(paths_, f.name, static_cast<int32_t>(i));
    }
  }
}

void Decoder::Decode(Batch& batch) const {
  thread_local simdjson::ondemand::parser parser;
  // The batch's distinct URLs, ips and user agents (kWanted's order; none for visitedAt),
  // and its distinct visitors: (ip id, user agent id) -> visitor's batch id + 1. They are
  // made run-wide at the end.
  thread_local TokenTable tables[std::size(kWanted)];
  thread_local FlatMap<uint32_t> visitor_ids;
  thread_local std::vector<TextTable::Entry> visitors;
  // The tokens, copied the first time the batch has them: the events that repeat one
  // compare with these few warm bytes instead of the first event's, far back in the batch.
  thread_local StringArena keys;
  thread_local std::vector<uint32_t> run_ids;
  // The batch's texts of text_slots_, copied the first time (as `keys` above: repeats
  // compare with warm bytes, not with the first event's far back in the batch).
  thread_local TextTable record_texts;
  thread_local StringArena record_text_bytes;
  if (!text_slots_.empty()) {
    record_texts.Clear();
    record_text_bytes.Reuse();
  }
  for (TokenTable& t : tables) t.Clear();
  visitor_ids.Reset();
  visitors.clear();
  keys.Reuse();
  constexpr uint32_t kVisitor = kFieldIp | kFieldUserAgent;
  batch.visits.reserve(batch.raw.size());
  const size_t total = batch.payloads.size();
  const size_t width = catalog_.fields().size();
  batch.width = width;
  for (const RawEvent& raw : batch.raw) {
    bool failed = false;
    if (catalog_.wants_records(raw.event_class)) {
      failed = AppendRecord(parser, batch, raw, width, paths_, column_slots_, time_slots_, text_slots_, record_texts,
                            record_text_bytes);
    }
    if (!page_class_ || raw.event_class != *page_class_) continue;
    PageVisit visit;
    visit.id = raw.id;
    uint32_t ids[std::size(kWanted)];
    std::string reason = DecodeOne(parser, batch.payloads.data() + raw.offset, raw.length, total - raw.offset,
                                   fields_, batch.strings, tables, keys, ids, visit);
    if (visit.fields_ok & kFieldVisitedAt) {  // usable, at least by some projectors
      if (visit.fields_ok & kFieldUrl) visit.url_id = ids[kUrlIndex];
      if ((visit.fields_ok & kVisitor) == kVisitor) {
        uint32_t& id = visitor_ids[(uint64_t{ids[kIpIndex]} << 32) | ids[kUserAgentIndex]];
        if (id == 0) {
          const TextTable::Entry& ip = tables[kIpIndex].texts[ids[kIpIndex]];
          const TextTable::Entry& user_agent = tables[kUserAgentIndex].texts[ids[kUserAgentIndex]];
          visitors.push_back({ip.a, user_agent.a,
                              TextTable::HashOfPair(ip.hash, ip.a.size(), user_agent.a, user_agent.hash)});
          id = static_cast<uint32_t>(visitors.size());
        }
        visit.visitor_id = id - 1;
      }
      batch.visits.push_back(visit);
      if ((visit.fields_ok & fields_) != fields_) batch.has_partial = true;
    } else {
      batch.dropped.push_back(raw.id);
    }
    if (!reason.empty() && !(failed && !(visit.fields_ok & kFieldVisitedAt))) {
      batch.failures.push_back(Failure{
          raw.id, "decoder", std::move(reason),
          std::string(batch.payloads.data() + raw.offset, std::min<size_t>(raw.length, 255))});
    }
  }
  // The batch's ids become the run's: one lock per batch, a lookup per distinct text.
  auto make_run_wide = [&](const std::vector<TextTable::Entry>& local, Interner& run, uint32_t needs,
                           uint32_t PageVisit::*id) {
    if (local.empty()) return;
    run.Resolve(local, run_ids);
    for (PageVisit& v : batch.visits) {
      if ((v.fields_ok & needs) == needs) v.*id = run_ids[v.*id];
    }
  };
  make_run_wide(tables[kUrlIndex].texts, *urls_, kFieldUrl, &PageVisit::url_id);
  make_run_wide(visitors, *visitors_, kVisitor, &PageVisit::visitor_id);
}

}  // namespace rw
