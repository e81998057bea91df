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

}  // namespace

// In a named namespace: the decoder's per-thread scratch (Decoder::Scratch) holds them.
namespace decoder_detail {
// One run-wide text field's distinct texts in a batch, keyed by their JSON token (the bytes
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
}  // namespace decoder_detail
using decoder_detail::TokenTable;

namespace {

constexpr uint32_t kNoId = ~uint32_t{0};

}  // namespace

void TokenTable::Clear() {
  ids.Clear();
  texts.clear();
  last_id = kNoId;
}

namespace {

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

// A key size's bit in PathNode::sizes (63: any of 63 bytes or more).
uint64_t SizeBit(size_t size) { return uint64_t{1} << std::min<size_t>(size, 63); }

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
      node->sizes |= SizeBit(part.size());
      next = &node->children.back();
    }
    node = next;
    if (dot == std::string_view::npos) break;
    path.remove_prefix(dot + 1);
  }
  node->slot = slot;
}

// The child of `node` named `key`, or nullptr: sizes first (this runs for every key of
// every payload, and most are not wanted).
const Decoder::PathNode* FindChild(const Decoder::PathNode& node, std::string_view key) {
  if (!(node.sizes & SizeBit(key.size()))) return nullptr;
  for (const auto& c : node.children) {
    if (c.key.size() != key.size()) continue;
    if (!key.empty() && (c.key.front() != key.front() || c.key.back() != key.back())) continue;
    if (std::memcmp(c.key.data(), key.data(), key.size()) == 0) return &c;
  }
  return nullptr;
}

}  // namespace

// A batch's scratch, one per decoding thread: its parser, the token tables of the token
// slots, the pairs' batch tables, the arenas.

struct Decoder::Scratch {
  simdjson::ondemand::parser parser;
  std::vector<TokenTable> tokens;                       // by token slot (Decoder::token_slots_)
  std::vector<FlatMap<uint32_t>> pair_ids;              // by pair: (a id, b id) -> pair's batch id + 1
  std::vector<std::vector<TextTable::Entry>> pairs;     // by pair: its texts, by batch id
  // The tokens, copied the first time the batch has them: the events that repeat one
  // compare with these few warm bytes instead of the first event's, far back in the batch.
  StringArena keys;
  // The batch's texts of the batch-keyed slots, copied the first time (as `keys` above).
  TextTable record_texts;
  StringArena record_text_bytes;
  std::vector<std::vector<uint32_t>> run_ids;  // by token slot, then by pair: batch id -> run id
  std::vector<std::pair<uint32_t, const std::vector<uint32_t>*>> resolved;  // (slot, its run ids)
  // The current event's strings that could not be read, of checked slots: (slot, why). The
  // check names them; the rest of the payload is still read.
  std::vector<std::pair<uint32_t, std::string>> bad_strings;
};

namespace {

// Records the wanted values of one JSON object (a payload, or an object inside it).
// A string of a token slot is read through its token table (SlotRead::token >= 0): its
// FieldValue::text_id is then its batch id + 1 (0: longer than its check allows).
std::string WalkObject(simdjson::ondemand::object obj, const Decoder::PathNode& node, StringArena& arena,
                       const std::vector<Decoder::SlotRead>& reads, Decoder::Scratch& scratch, FieldValue* values) {
  FieldValue unslotted;  // an object on the way to wanted paths, itself not wanted
  for (auto field_result : obj) {
    simdjson::ondemand::field field;
    std::string_view key;
    if (std::string why = OpenField(std::move(field_result), field, key); !why.empty()) return why;
    const Decoder::PathNode* child = FindChild(node, key);
    if (child == nullptr) continue;
    simdjson::ondemand::value value = field.value();
    json_type type;
    if (auto err = value.type().get(type)) {
      return fmt::format("field '{}' is not valid JSON: {}", key, simdjson::error_message(err));
    }
    FieldValue& v = child->slot >= 0 ? values[child->slot] : unslotted;
    switch (type) {
      case json_type::string: {
        v.kind = ValueKind::kString;
        const Decoder::SlotRead* read = child->slot >= 0 ? &reads[static_cast<size_t>(child->slot)] : nullptr;
        simdjson::error_code err;
        if (read != nullptr && read->token >= 0) {
          uint32_t id = kNoId;
          std::string_view text;
          err = ReadText(value, scratch.tokens[static_cast<size_t>(read->token)], read->max_bytes, arena,
                         scratch.keys, text, id);
          v.set_text(text);
          v.text_id = id == kNoId ? 0 : id + 1;
        } else {
          std::string_view text;
          err = ReadString(value, arena, text);
          v.set_text(text);
        }
        if (err) {
          std::string why = fmt::format("field '{}' is not a valid string: {}", key, simdjson::error_message(err));
          if (read == nullptr || !read->checked) return why;
          scratch.bad_strings.emplace_back(static_cast<uint32_t>(child->slot), std::move(why));
          v = FieldValue{};
          continue;  // its check fails, naming why; the other fields are still read
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
        v.set_text(token);
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
          if (std::string why = WalkObject(inner, *child, arena, reads, scratch, values); !why.empty()) return why;
        }
        break;
      }
    }
  }
  return {};
}

// Decodes one payload into a record's values. "" when it is a JSON object, else why not.
std::string DecodeRecord(simdjson::ondemand::parser& parser, const char* data, size_t length, size_t capacity,
                         const Decoder::PathNode& paths, StringArena& arena,
                         const std::vector<Decoder::SlotRead>& reads, Decoder::Scratch& scratch, FieldValue* values) {
  simdjson::ondemand::document doc;
  simdjson::ondemand::object obj;
  if (std::string why = OpenObject(parser, data, length, capacity, doc, obj); !why.empty()) return why;
  if (std::string why = WalkObject(obj, paths, arena, reads, scratch, values); !why.empty()) return why;
  return TrailingBytes(doc, data, length);
}

const char* KindName(ValueKind k) {
  switch (k) {
    case ValueKind::kNull: return "null";
    case ValueKind::kFalse:
    case ValueKind::kTrue: return "a boolean";
    case ValueKind::kNumber: return "a number";
    case ValueKind::kString: return "a string";
    case ValueKind::kObject: return "an object";
    case ValueKind::kArray: return "an array";
    case ValueKind::kMissing: break;
  }
  return "missing";
}

enum class Verdict : uint8_t { kPasses, kNotAString, kTooLong, kBadTime };

// How `v` meets `check` (without building a reason: most pass); an ISO time that passes is
// parsed into `v`, once: a date-time some read model reads as a time was parsed already
// (ParseDateOrTimestamp reads a timestamp as ParseIsoTimestamp does; only a date alone, of
// 10 bytes, is not one).
Verdict Judge(const FieldCheck& check, FieldValue& v) {
  if (v.kind != ValueKind::kString) return Verdict::kNotAString;
  if (v.text_size > check.max_bytes) return Verdict::kTooLong;
  if (!check.iso_time) return Verdict::kPasses;
  if (v.time_state != TimeState::kNotParsed && v.text_size != 10) {
    return v.time_state == TimeState::kOk ? Verdict::kPasses : Verdict::kBadTime;
  }
  const std::optional<CivilTime> t = ParseIsoTimestamp(v.text());
  if (!t) return Verdict::kBadTime;
  v.time = *t;
  v.time_state = TimeState::kOk;
  return Verdict::kPasses;
}

// Why `v`, the value of `field` in `slot`, failed `check` with `verdict`.
std::string Reason(Verdict verdict, const FieldSource& field, const FieldCheck& check, const FieldValue& v,
                   uint32_t slot, const Decoder::Scratch& scratch) {
  for (const auto& [bad, why] : scratch.bad_strings) {
    if (bad == slot) return why;
  }
  switch (verdict) {
    case Verdict::kNotAString:
      if (v.kind == ValueKind::kMissing) return fmt::format("missing field '{}'", field.name);
      return fmt::format("field '{}' is {}, expected a string", field.name, KindName(v.kind));
    case Verdict::kTooLong:  // stored whole or not at all: never cut (two URLs would then share a row)
      return fmt::format("field '{}' is {} bytes, more than the {} rewind stores", field.name, v.text_size,
                         check.max_bytes);
    case Verdict::kBadTime:
      return fmt::format("unparseable {} '{}' (rewind reads ISO-8601 times from year 0001 to 9999)", field.name,
                         Excerpt(v.text()));
    case Verdict::kPasses: break;
  }
  return {};
}

}  // namespace

// Appends the EventRecord of `raw` (of a class a read model reads) and its values: the
// payload's wanted paths (none parsed when no read model reads one), the event table's
// columns, the times parsed, the texts given batch ids, the pairs made, the checks made,
// once here rather than once per read model. A failure (a payload that is no JSON object,
// a failed check) is recorded in the batch, once for the event.
void Decoder::AppendRecord(Batch& batch, const RawEvent& raw, Scratch& scratch) const {
  const size_t width = reads_.size();
  EventRecord record{raw.id, raw.event_class, false, 0, static_cast<uint32_t>(batch.values.size())};
  batch.values.resize(batch.values.size() + width);
  FieldValue* values = &batch.values[record.first_value];
  const size_t total = batch.payloads.size();
  scratch.bad_strings.clear();
  std::string reason =
      paths_.children.empty()
          ? std::string()
          : DecodeRecord(scratch.parser, batch.payloads.data() + raw.offset, raw.length, total - raw.offset, paths_,
                         batch.strings, reads_, scratch, values);
  for (const auto& [slot, why] : scratch.bad_strings) {
    // A string that could not be read is a failed check where its class checks it, and
    // elsewhere a payload that could not be read, as any other field's.
    const bool checked = std::any_of(catalog_.checks().begin(), catalog_.checks().end(), [&](const EventCatalog::ClassCheck& c) {
      return c.event_class == raw.event_class && c.slot == slot;
    });
    if (!checked && reason.empty()) reason = why;
  }
  record.decoded = reason.empty();
  for (const auto& [slot, index] : column_slots_) {
    const RawColumn& col = batch.raw_columns[raw.columns + index];
    FieldValue& v = values[slot];
    v.kind = col.null ? ValueKind::kNull : ValueKind::kString;
    if (!col.null) v.set_text(std::string_view(batch.payloads.data() + col.offset, col.length));
  }
  for (uint32_t slot : time_slots_) {
    FieldValue& v = values[slot];
    if (v.kind != ValueKind::kString) continue;
    const std::optional<CivilTime> t = ParseDateOrTimestamp(v.text());
    v.time_state = t ? TimeState::kOk : TimeState::kBad;
    if (t) v.time = *t;
  }
  for (uint32_t slot : text_slots_) {  // hashed here, while the bytes are warm
    FieldValue& v = values[slot];
    if (v.kind == ValueKind::kString || v.kind == ValueKind::kNumber) {
      v.text_id = scratch.record_texts.Intern(v.text(), {}, TextTable::HashOf(v.text(), {}), &scratch.record_text_bytes) + 1;
    }
  }
  for (size_t p = 0; p < pairs_.size(); ++p) {
    const Pair& pair = pairs_[p];
    const FieldValue& a = values[pair.a];
    const FieldValue& b = values[pair.b];
    if (a.kind != ValueKind::kString || b.kind != ValueKind::kString || a.text_id == 0 || b.text_id == 0) continue;
    uint32_t& id = scratch.pair_ids[p][(uint64_t{a.text_id} << 32) | b.text_id];
    if (id == 0) {
      const TextTable::Entry& ta = scratch.tokens[static_cast<size_t>(reads_[pair.a].token)].texts[a.text_id - 1];
      const TextTable::Entry& tb = scratch.tokens[static_cast<size_t>(reads_[pair.b].token)].texts[b.text_id - 1];
      scratch.pairs[p].push_back({ta.a, tb.a, TextTable::HashOfPair(ta.hash, ta.a.size(), tb.a, tb.hash)});
      id = static_cast<uint32_t>(scratch.pairs[p].size());
    }
    values[pair.slot].kind = ValueKind::kString;
    values[pair.slot].text_id = id;
  }
  const std::vector<EventCatalog::ClassCheck>& checks = catalog_.checks();
  for (size_t i = 0; record.decoded && i < checks.size(); ++i) {  // the reasons in the checks' order
    const auto& [event_class, slot, check] = checks[i];
    if (event_class != raw.event_class) continue;
    const Verdict verdict = Judge(check, values[slot]);
    if (verdict != Verdict::kPasses) {
      std::string why = Reason(verdict, catalog_.fields()[slot], check, values[slot], slot, scratch);
      record.failed_checks |= static_cast<uint8_t>(1u << i);
      if (check.required) {  // the event is no event of its class: this reason alone
        reason = std::move(why);
        break;
      }
      reason += (reason.empty() ? "" : "; ") + why;
    }
  }
  batch.records.push_back(record);
  if (reason.empty()) return;
  batch.failures.push_back(Failure{raw.id, "decoder", std::move(reason),
                                   std::string(batch.payloads.data() + raw.offset, std::min<size_t>(raw.length, 255))});
}

Decoder::Decoder(EventCatalog catalog) : catalog_(std::move(catalog)) {
  size_t column = 0;
  const size_t width = catalog_.fields().size();
  reads_.assign(width, SlotRead{});
  for (const EventCatalog::ClassCheck& c : catalog_.checks()) {
    reads_[c.slot].max_bytes = std::min(reads_[c.slot].max_bytes, c.check.max_bytes);
    reads_[c.slot].checked = true;
  }
  std::vector<bool> pair_part(width, false);  // read through a token table for its pair
  for (const FieldSource& f : catalog_.fields()) {
    if (f.pair()) pair_part[f.pair_a] = pair_part[f.pair_b] = true;
  }
  for (size_t i = 0; i < width; ++i) {
    const uint32_t slot = static_cast<uint32_t>(i);
    const FieldSource& f = catalog_.fields()[i];
    if (catalog_.wants_time(slot)) time_slots_.push_back(slot);
    if (f.pair()) {
      pairs_.push_back(Pair{slot, f.pair_a, f.pair_b});
      pair_run_ids_.push_back(std::make_unique<Interner>());
      continue;
    }
    if (catalog_.wants_run_wide(slot) || pair_part[i]) {
      reads_[i].token = static_cast<int32_t>(token_slots_.size());
      token_slots_.push_back(slot);
      run_ids_.push_back(catalog_.wants_run_wide(slot) ? std::make_unique<Interner>() : nullptr);
    } else if (catalog_.wants_text(slot)) {
      text_slots_.push_back(slot);
    }
    if (f.column) {
      column_slots_.push_back({slot, column++});
    } else {
      AddPath(paths_, f.name, static_cast<int32_t>(i));
    }
  }
}

Decoder::~Decoder() = default;

void Decoder::Decode(Batch& batch) const {
  thread_local Scratch scratch;
  if (!text_slots_.empty()) {
    scratch.record_texts.Clear();
    scratch.record_text_bytes.Reuse();
  }
  scratch.tokens.resize(token_slots_.size());
  for (TokenTable& t : scratch.tokens) t.Clear();
  scratch.pair_ids.resize(pairs_.size());
  scratch.pairs.resize(pairs_.size());
  for (auto& m : scratch.pair_ids) m.Reset();
  for (auto& p : scratch.pairs) p.clear();
  scratch.keys.Reuse();
  batch.width = reads_.size();
  if (batch.pool && batch.records.capacity() == 0) {  // recycled: warm, no page faults
    batch.records = batch.pool->TakeRecords();
    batch.values = batch.pool->TakeValues();
  }
  batch.records.reserve(batch.raw.size());
  batch.values.reserve(batch.raw.size() * batch.width);
  for (const RawEvent& raw : batch.raw) {
    if (catalog_.wants_records(raw.event_class)) AppendRecord(batch, raw, scratch);
  }
  // The batch's ids become the run's: one lock per batch and per run-wide slot, a lookup per
  // distinct text, then one pass over the records.
  scratch.run_ids.resize(token_slots_.size() + pairs_.size());
  auto& resolved_ = scratch.resolved;
  resolved_.clear();
  for (size_t k = 0; k < token_slots_.size(); ++k) {
    if (run_ids_[k] == nullptr || scratch.tokens[k].texts.empty()) continue;
    run_ids_[k]->Resolve(scratch.tokens[k].texts, scratch.run_ids[k]);
    resolved_.push_back({token_slots_[k], &scratch.run_ids[k]});
  }
  for (size_t p = 0; p < pairs_.size(); ++p) {
    if (scratch.pairs[p].empty()) continue;
    std::vector<uint32_t>& ids = scratch.run_ids[token_slots_.size() + p];
    pair_run_ids_[p]->Resolve(scratch.pairs[p], ids);
    resolved_.push_back({pairs_[p].slot, &ids});
  }
  if (resolved_.empty()) return;
  for (const EventRecord& r : batch.records) {
    FieldValue* values = &batch.values[r.first_value];
    for (const auto& [slot, ids] : resolved_) {
      uint32_t& id = values[slot].text_id;
      if (id != 0) id = (*ids)[id - 1] + 1;
    }
  }
}

}  // namespace rw
