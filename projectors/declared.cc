#include "projectors/declared.h"

#include <fmt/core.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstring>
#include <optional>

#include "projectors/bucket_counts.h"
#include "base/civil_time.h"
#include "base/flat_map.h"
#include "base/sha256.h"
#include "base/text_table.h"

namespace rw {

const char* BucketName(Bucket b) {
  switch (b) {
    case Bucket::kNone: return "none";
    case Bucket::kMinute: return "minute";
    case Bucket::kHour: return "hour";
    case Bucket::kDay: return "day";
    case Bucket::kWeek: return "week";
    case Bucket::kMonth: return "month";
    case Bucket::kYear: return "year";
  }
  return "?";
}

const char* OpName(Op op) {
  switch (op) {
    case Op::kCount: return "count";
    case Op::kSum: return "sum";
    case Op::kMin: return "min";
    case Op::kMax: return "max";
    case Op::kFirst: return "first";
    case Op::kLast: return "last";
    case Op::kSubtract: return "subtract";
  }
  return "?";
}

std::string ValueTypeName(ValueType t, uint8_t precision, uint8_t scale) {
  switch (t) {
    case ValueType::kBigInt: return "bigint";
    case ValueType::kDecimal: return fmt::format("decimal({},{})", precision, scale);
    case ValueType::kDouble: return "double";
    case ValueType::kText: return "text";
    case ValueType::kDate: return "date";
    case ValueType::kDateTime: return "datetime";
  }
  return "?";
}

namespace {
std::string LowerSql(const std::string& sql) {
  std::string out;
  for (char c : sql) out += static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  return out;
}
}  // namespace

std::string DeclaredTypeName(ValueType t, uint8_t precision, uint8_t scale, const Storage& storage) {
  if (!storage.declared()) return ValueTypeName(t, precision, scale);
  std::string out = LowerSql(storage.sql);
  if (!storage.collation.empty()) out += " collate " + storage.collation;
  return out;
}

std::string FitsStorage(const Storage& storage, std::string_view text) {
  if (storage.length == 0) return {};
  size_t n = text.size();
  if (!storage.bytes) {  // UTF-8 characters: the bytes that do not continue one
    n = 0;
    for (unsigned char c : text) n += (c & 0xC0) != 0x80;
  }
  if (n <= storage.length) return {};
  return fmt::format("is {} {}, longer than {}", n, storage.bytes ? "bytes" : "characters",
                     LowerSql(storage.sql));
}

std::string FitsStorage(const Storage& storage, int64_t n) {
  if (n >= storage.min && n <= storage.max) return {};
  return fmt::format("{} is out of {} ({}..{})", n, LowerSql(storage.sql),
                     storage.min, storage.max);
}

ValueType DefaultKeyType(Bucket b) {
  switch (b) {
    case Bucket::kNone: return ValueType::kText;
    case Bucket::kMinute:
    case Bucket::kHour: return ValueType::kDateTime;
    default: return ValueType::kDate;
  }
}

namespace {

std::string SourceText(const FieldSource& s) {
  return s.name.empty() ? "-" : (s.column ? "field:" : "path:") + s.name;
}

}  // namespace

std::string CanonicalForm(const ModelPlan& p) {
  // Length-prefixed strings: no name or class can imitate a separator.
  auto q = [](const std::string& s) { return fmt::format("{}:{}", s.size(), s); };
  std::string out = "name " + q(p.name) + "\nevents";
  std::vector<std::string> events = p.events;
  std::sort(events.begin(), events.end());
  for (const auto& e : events) out += " " + q(e);
  std::vector<WherePlan> where = p.where;
  std::sort(where.begin(), where.end(), [](const WherePlan& a, const WherePlan& b) { return a.column < b.column; });
  for (WherePlan& w : where) {
    std::sort(w.values.begin(), w.values.end());
    out += "\nwhere " + q(w.column);
    for (const std::string& v : w.values) out += " " + q(v);
  }
  auto condition = [&](const Condition& c) {
    std::vector<Condition::Match> values = c.values;
    std::sort(values.begin(), values.end());
    std::string text = fmt::format("{} {}", q(SourceText(c.source)), c.negated ? "not" : "in");
    for (const Condition::Match& m : values) {
      text += fmt::format(" {}{}", m.kind == ValueKind::kString ? "" : "bool:", q(m.text));
    }
    return text;
  };
  std::vector<std::string> conditions;
  for (const Condition& c : p.conditions) {
    if (!c.SentToServer()) conditions.push_back(condition(c));  // those are the where lines above
  }
  std::sort(conditions.begin(), conditions.end());
  for (const std::string& c : conditions) out += "\nwhere " + c;
  for (const KeyPlan& k : p.keys) {
    out += fmt::format("\nkey {} {} {} {}{}", q(k.column), q(SourceText(k.source)), BucketName(k.bucket),
                       DeclaredTypeName(k.type, 0, 0, k.storage), k.strict ? " strict" : "");
  }
  // A column's contributions at its first place, in a fixed order: they are summed, so the
  // order they are written in is not part of the declaration.
  std::vector<std::string> columns;
  std::vector<std::vector<std::string>> lines;
  for (const ValuePlan& v : p.values) {
    std::vector<std::string> on = v.on.empty() ? events : v.on;
    std::sort(on.begin(), on.end());
    std::string line = fmt::format("\nvalue {} {} {} {} {}", q(v.column), OpName(v.op), q(SourceText(v.source)),
                                   v.has_constant ? q(v.constant) : "-",
                                   DeclaredTypeName(v.type, v.precision, v.scale, v.storage));
    for (const auto& e : on) line += " " + q(e);
    std::vector<std::pair<std::string, std::string>> map = v.map;
    std::sort(map.begin(), map.end());
    for (const auto& [from, to] : map) line += " map " + q(from) + " " + q(to);
    std::vector<std::string> when;
    for (const Condition& c : v.when) when.push_back(condition(c));
    std::sort(when.begin(), when.end());
    for (const std::string& c : when) line += " if " + c;
    const size_t at = std::find(columns.begin(), columns.end(), v.column) - columns.begin();
    if (at == columns.size()) {
      columns.push_back(v.column);
      lines.emplace_back();
    }
    lines[at].push_back(std::move(line));
  }
  for (std::vector<std::string>& column : lines) {
    std::sort(column.begin(), column.end());
    for (const std::string& line : column) out += line;
  }
  std::vector<std::string> deletes;
  for (const RemovePlan& r : p.deletes) {
    std::vector<std::string> on = r.on;
    std::sort(on.begin(), on.end());
    std::string line = "\ndelete";
    for (const auto& e : on) line += " " + q(e);
    std::vector<std::string> when;
    for (const Condition& c : r.when) when.push_back(condition(c));
    std::sort(when.begin(), when.end());
    for (const std::string& c : when) line += " if " + c;
    deletes.push_back(std::move(line));
  }
  std::sort(deletes.begin(), deletes.end());
  for (const std::string& line : deletes) out += line;
  // Handlers in their order: it is the order their statements run in.
  for (const HandlerPlan& h : p.handlers) out += "\nhandler " + q(h.on) + " " + q(h.sql);
  // first and last keep the id of their event in a column of their own (projector.h): a
  // table built before that has not, so a declaration with them is another version (a
  // resume refuses such a table, status marks it); the others keep theirs.
  if (std::any_of(p.values.begin(), p.values.end(), [](const ValuePlan& v) { return v.op == Op::kFirst || v.op == Op::kLast; })) {
    out += "\nstorage event-ids";
  }
  return out + "\n";
}

std::string PlanVersion(const ModelPlan& plan) { return Sha256Hex(CanonicalForm(plan), 16); }

bool ParseScaled(std::string_view s, uint8_t precision, uint8_t scale, __int128& out) {
  size_t i = 0;
  const size_t n = s.size();
  bool negative = false;
  if (i < n && (s[i] == '-' || s[i] == '+')) negative = s[i++] == '-';
  std::string digits;
  long frac = 0;
  bool dot = false, any = false;
  for (; i < n; ++i) {
    const char c = s[i];
    if (c >= '0' && c <= '9') {
      any = true;
      if (dot) ++frac;
      if (!(digits.empty() && c == '0')) digits += c;
      else if (dot) digits += c;  // zeros after the point count for the scale
    } else if (c == '.' && !dot) {
      dot = true;
    } else {
      break;
    }
  }
  if (!any) return false;
  long exponent = 0;
  if (i < n && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    bool exp_negative = false;
    if (i < n && (s[i] == '-' || s[i] == '+')) exp_negative = s[i++] == '-';
    const size_t start = i;
    while (i < n && s[i] >= '0' && s[i] <= '9' && i - start < 6) exponent = exponent * 10 + (s[i++] - '0');
    if (i == start) return false;
    if (exp_negative) exponent = -exponent;
  }
  if (i != n) return false;
  // value = digits x 10^(exponent - frac); scaled = digits x 10^(scale + exponent - frac)
  long shift = static_cast<long>(scale) + exponent - frac;
  if (shift < 0) {
    const size_t drop = static_cast<size_t>(-shift);
    const size_t keep = digits.size() > drop ? digits.size() - drop : 0;
    if (digits.find_first_not_of('0', keep) != std::string::npos) return false;  // decimals lost
    digits.resize(keep);
  } else {
    if (digits.find_first_not_of('0') != std::string::npos) {
      if (shift > 76) return false;
      digits.append(static_cast<size_t>(shift), '0');
    }
  }
  const size_t first = digits.find_first_not_of('0');
  digits = first == std::string::npos ? "" : digits.substr(first);
  if (digits.size() > precision) return false;
  __int128 v = 0;
  for (char c : digits) v = v * 10 + (c - '0');
  out = negative ? -v : v;
  return true;
}

std::string FormatScaled(__int128 value, uint8_t scale) {
  const bool negative = value < 0;
  unsigned __int128 v = negative ? static_cast<unsigned __int128>(-(value + 1)) + 1 : static_cast<unsigned __int128>(value);
  std::string digits;
  do {
    digits += static_cast<char>('0' + static_cast<int>(v % 10));
    v /= 10;
  } while (v != 0);
  while (digits.size() <= scale) digits += '0';
  std::reverse(digits.begin(), digits.end());
  if (scale > 0) digits.insert(digits.size() - scale, 1, '.');
  return negative ? "-" + digits : digits;
}

std::string ParseHandlerSql(std::string_view sql, std::string& prepared, std::vector<HandlerParam>& params) {
  prepared.clear();
  params.clear();
  const size_t n = sql.size();
  auto word_char = [](char ch) { return std::isalnum(static_cast<unsigned char>(ch)) || ch == '_' || (ch & 0x80); };
  // The first word: the statement.
  size_t i = 0;
  while (i < n && std::isspace(static_cast<unsigned char>(sql[i]))) ++i;
  size_t end = i;
  while (end < n && word_char(sql[end])) ++end;
  std::string first(sql.substr(i, end - i));
  for (char& ch : first) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  if (first != "insert" && first != "update" && first != "delete" && first != "replace") {
    return fmt::format("a handler runs one INSERT, UPDATE, DELETE or REPLACE into its read model's table, and "
                       "this statement begins with '{}'", std::string(sql.substr(i, std::min<size_t>(end - i, 20))));
  }
  for (i = 0; i < n;) {
    const char ch = sql[i];
    if (ch == '\'' || ch == '"' || ch == '`') {  // a literal or a quoted name, copied whole
      const size_t from = i;
      for (++i; i < n; ++i) {
        if (sql[i] == '\\' && ch != '`') {
          ++i;
          continue;
        }
        if (sql[i] == ch) {
          if (i + 1 < n && sql[i + 1] == ch) {
            ++i;
            continue;
          }
          break;
        }
      }
      if (i >= n) return fmt::format("a quote ({}) is not closed", ch);
      ++i;
      prepared.append(sql.substr(from, i - from));
    } else if (ch == '#' || (ch == '-' && i + 2 < n && sql[i + 1] == '-' && std::isspace(static_cast<unsigned char>(sql[i + 2])))) {
      const size_t from = i;
      while (i < n && sql[i] != '\n') ++i;
      prepared.append(sql.substr(from, i - from));
    } else if (ch == '/' && i + 1 < n && sql[i + 1] == '*') {
      const size_t close = sql.find("*/", i + 2);
      if (close == std::string_view::npos) return "a comment (/*) is not closed";
      prepared.append(sql.substr(i, close + 2 - i));
      i = close + 2;
    } else if (ch == '?') {
      return "write each value as a parameter (:path, :@column or :@id), not '?'";
    } else if (ch == ';') {
      size_t rest = i + 1;
      while (rest < n && std::isspace(static_cast<unsigned char>(sql[rest]))) ++rest;
      if (rest < n) return "a handler runs one statement: a ';' is followed by more";
      i = n;
    } else if (ch == ':' && i + 1 < n && (sql[i + 1] == '@' || std::isalpha(static_cast<unsigned char>(sql[i + 1])) || sql[i + 1] == '_')) {
      const bool column = sql[i + 1] == '@';
      size_t at = i + (column ? 2 : 1), stop = at;
      while (stop < n && (word_char(sql[stop]) || (!column && sql[stop] == '.' && stop + 1 < n && word_char(sql[stop + 1])))) {
        ++stop;
      }
      HandlerParam p;
      p.written = std::string(sql.substr(i, stop - i));
      if (stop == at) return fmt::format("parameter '{}' names nothing", p.written);
      const std::string name(sql.substr(at, stop - at));
      if (column && name == "id") {
        p.kind = HandlerParam::Kind::kEventId;
      } else {
        p.source.column = column;
        p.source.name = name;
      }
      params.push_back(std::move(p));
      prepared += '?';
      i = stop;
    } else {
      prepared += ch;
      ++i;
    }
  }
  return {};
}

bool CountsOnFastPath(const ModelPlan& p) {
  if (p.values.size() != 1 || !p.deletes.empty() || p.keys.empty() || p.keys.size() > 2) return false;
  const ValuePlan& v = p.values[0];
  if (v.op != Op::kCount || v.type != ValueType::kBigInt || v.storage.declared() || !v.when.empty()) return false;
  // Every event of the model counts: an event of a class outside `on` would make a row of 0.
  for (const std::string& e : p.events) {
    if (!v.on.empty() && std::find(v.on.begin(), v.on.end(), e) == v.on.end()) return false;
  }
  const size_t texts = std::count_if(p.keys.begin(), p.keys.end(),
                                     [](const KeyPlan& k) { return k.type == ValueType::kText; });
  if (p.keys.size() == 1) return true;
  // Two keys: a text and a date (packed into one 64-bit key with the text's id).
  return texts == 1 && (p.keys[0].type == ValueType::kDate || p.keys[1].type == ValueType::kDate);
}

int64_t KeyBucketStride(const KeyPlan& k) {
  // A date's values are days; a date-time's are microseconds (Typed::n, Emit's DateTimeMicros).
  const bool date = k.type == ValueType::kDate;
  constexpr int64_t kSecond = 1'000'000;
  switch (k.bucket) {
    case Bucket::kMinute: return 60 * kSecond;
    case Bucket::kHour: return 3600 * kSecond;
    case Bucket::kDay: return date ? 1 : 86400 * kSecond;
    case Bucket::kWeek: return date ? 7 : 7 * 86400 * kSecond;
    case Bucket::kMonth:
    case Bucket::kYear: return date ? 1 : 86400 * kSecond;
    case Bucket::kNone: return 1;
  }
  return 1;
}

namespace {

// Whether any key or value of `p` reads a path of the payload (not a column, not a constant).
bool ReadsPayload(const ModelPlan& p) {
  for (const KeyPlan& k : p.keys) {
    if (!k.source.column) return true;
  }
  for (const ValuePlan& v : p.values) {
    if (!v.source.name.empty() && !v.source.column) return true;
    for (const Condition& c : v.when) {
      if (!c.source.column) return true;
    }
  }
  for (const Condition& c : p.conditions) {
    if (!c.source.column) return true;
  }
  for (const RemovePlan& r : p.deletes) {
    for (const Condition& c : r.when) {
      if (!c.source.column) return true;
    }
  }
  return false;
}

const char* KindName(ValueKind k) {
  switch (k) {
    case ValueKind::kMissing: return "missing";
    case ValueKind::kNull: return "null";
    case ValueKind::kFalse:
    case ValueKind::kTrue: return "a boolean";
    case ValueKind::kNumber: return "a number";
    case ValueKind::kString: return "a string";
    case ValueKind::kObject: return "an object";
    case ValueKind::kArray: return "an array";
  }
  return "?";
}

std::string Short(std::string_view s) {
  std::string out(s.substr(0, 40));
  if (s.size() > 40) out += "...";
  return out;
}

bool ParseInt(std::string_view s, int64_t& out) {
  if (!s.empty() && s[0] == '+') s.remove_prefix(1);
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && end == s.data() + s.size() && !s.empty();
}

bool ParseDouble(std::string_view s, double& out) {
  if (!s.empty() && s[0] == '+') s.remove_prefix(1);
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && end == s.data() + s.size() && !s.empty();
}

// One typed value: numbers and times in `n` (scaled decimals, days, epoch seconds), doubles
// in `d`, text in `s`.
struct Typed {
  __int128 n = 0;
  double d = 0;
  std::string_view s;
};

// Converts a field's value to `type`. "" on success, else why not.
std::string Convert(const FieldValue& v, ValueType type, uint8_t precision, uint8_t scale, Bucket bucket,
                    Typed& out) {
  const bool textual = v.kind == ValueKind::kString || v.kind == ValueKind::kNumber;
  switch (type) {
    case ValueType::kText:
      if (!textual) return fmt::format("is {}, expected a string or a number", KindName(v.kind));
      out.s = v.text();
      return {};
    case ValueType::kBigInt: {
      int64_t i;
      if (!textual || !ParseInt(v.text(), i)) {
        return textual ? fmt::format("'{}' is not an integer that fits a bigint", Short(v.text()))
                       : fmt::format("is {}, expected an integer", KindName(v.kind));
      }
      out.n = i;
      return {};
    }
    case ValueType::kDecimal:
      if (!textual) return fmt::format("is {}, expected a number", KindName(v.kind));
      if (!ParseScaled(v.text(), precision, scale, out.n)) {
        return fmt::format("'{}' is not a number that fits decimal({},{})", Short(v.text()), precision, scale);
      }
      return {};
    case ValueType::kDouble:
      if (!textual || !ParseDouble(v.text(), out.d)) {
        return textual ? fmt::format("'{}' is not a number", Short(v.text()))
                       : fmt::format("is {}, expected a number", KindName(v.kind));
      }
      return {};
    case ValueType::kDate:
    case ValueType::kDateTime: {
      if (v.kind != ValueKind::kString) return fmt::format("is {}, expected a date-time string", KindName(v.kind));
      std::optional<CivilTime> t;
      if (v.time_state == TimeState::kOk) {
        t = v.time;  // parsed once by the decoder
      } else if (v.time_state == TimeState::kNotParsed) {
        t = ParseDateOrTimestamp(v.text());
      }
      if (!t) {
        return fmt::format("'{}' is not an ISO-8601 date or time from year 0001 to 9999", Short(v.text()));
      }
      int64_t seconds = t->epoch_seconds();
      int32_t days = t->days;
      switch (bucket) {
        case Bucket::kNone: break;
        case Bucket::kMinute: seconds -= t->second_of_day % 60; break;
        case Bucket::kHour: seconds -= t->second_of_day % 3600; break;
        case Bucket::kDay: seconds = int64_t{days} * 86400; break;
        case Bucket::kWeek: days = IsoWeekMonday(days); seconds = int64_t{days} * 86400; break;
        case Bucket::kMonth: days = FirstOfMonth(days); seconds = int64_t{days} * 86400; break;
        case Bucket::kYear: days = FirstOfYear(days); seconds = int64_t{days} * 86400; break;
      }
      if (type == ValueType::kDate) {
        // A date from a time: its day (floor; seconds are never negative within a day).
        out.n = seconds >= 0 ? seconds / 86400 : -((-seconds + 86399) / 86400);
      } else {
        // Microseconds: a time keeps the fraction it was written with (a bucket has none).
        out.n = seconds * 1'000'000 + (bucket == Bucket::kNone ? t->micros : 0);
      }
      return {};
    }
  }
  return "has an unknown type";
}

ColumnType StoredType(ValueType t) {
  switch (t) {
    case ValueType::kBigInt: return ColumnType::kInt64;
    case ValueType::kDecimal: return ColumnType::kDecimal;
    case ValueType::kDouble: return ColumnType::kDouble;
    case ValueType::kText: return ColumnType::kText;
    case ValueType::kDate: return ColumnType::kDate;
    case ValueType::kDateTime: return ColumnType::kDateTime;
  }
  return ColumnType::kText;
}

Merge MergeOf(Op op) {
  switch (op) {
    case Op::kCount:
    case Op::kSum:
    case Op::kSubtract: return Merge::kAdd;
    case Op::kMin: return Merge::kMin;
    case Op::kMax: return Merge::kMax;
    case Op::kFirst: return Merge::kFirst;
    case Op::kLast: return Merge::kLast;
  }
  return Merge::kLast;
}

__int128 Pow10(int n) {
  __int128 v = 1;
  while (n-- > 0) v *= 10;
  return v;
}

// A value's state per key: 48 bytes (issue 55: a row of ten values was 960 bytes with a
// std::string and a double beside the integer in each). A double column keeps `d`, any
// other `n`; a text value's bytes are in its read model's arena (texts_) until the flush.
struct Acc {
  union {
    __int128 n = 0;
    double d;
  };
  EventId id = 0;  // first and last: the event whose value it holds
  uint32_t text_at = 0, text_size = 0;
  bool set = false;
};
static_assert(sizeof(Acc) == 48);

// How a pending row holds its stored value columns: each in the bytes its op and type need
// (a count or a date in 8, a decimal or a bigint sum in 16, a text as its place in the
// read model's text arena, a first or last value with its event's id, 16 bytes, beside it), and one
// bit per min, max, first and last saying whether an event touched it. A value is read into
// an Acc to fold and written back (Load, Save).
class RowLayout {
 public:
  enum class Kind : uint8_t { kInt64, kInt128, kDouble, kText };
  struct Place {
    uint32_t offset = 0;
    Kind kind = Kind::kInt64;
    bool keeps_id = false;
    int32_t set_bit = -1;  // -1: a count or a sum, untouched is 0
  };
  // Appends a column (in stored order) of `op` and `type`.
  // `narrow`: a sum's pending delta fits 64 bits (a checked sum of a decimal of at most 18
  // digits or of an integer type narrower than bigint: its delta is the difference of two
  // values of the type).
  void Add(Op op, ValueType type, bool narrow) {
    Place p;
    const bool adds = op == Op::kCount || op == Op::kSum || op == Op::kSubtract;
    const bool wide = (type == ValueType::kDecimal || (adds && op != Op::kCount)) && !narrow;  // a bigint sum's
                                                                                              // delta may pass 2^63
    p.kind = type == ValueType::kText     ? Kind::kText
             : type == ValueType::kDouble ? Kind::kDouble
             : wide                       ? Kind::kInt128
                                          : Kind::kInt64;
    p.keeps_id = op == Op::kFirst || op == Op::kLast;
    if (!adds) p.set_bit = static_cast<int32_t>(bits_++);
    places_.push_back(p);
  }
  // Places the columns after the bits. REQUIRES: every column added.
  void Finish() {
    uint32_t at = (bits_ + 7) / 8;
    for (Place& p : places_) {
      p.offset = at;
      at += (p.kind == Kind::kInt128 ? 16 : 8) + (p.keeps_id ? sizeof(EventId) : 0);
    }
    width_ = std::max<uint32_t>(at, 1);
  }
  uint32_t width() const { return width_; }

  Acc Load(const uint8_t* row, size_t j) const {
    const Place& p = places_[j];
    Acc a;
    a.set = p.set_bit < 0 || ((row[p.set_bit / 8] >> (p.set_bit % 8)) & 1) != 0;
    const uint8_t* v = row + p.offset;
    switch (p.kind) {
      case Kind::kInt64: {
        int64_t n;
        std::memcpy(&n, v, 8);
        a.n = n;
        break;
      }
      case Kind::kInt128: std::memcpy(&a.n, v, 16); break;
      case Kind::kDouble: std::memcpy(&a.d, v, 8); break;
      case Kind::kText:
        std::memcpy(&a.text_at, v, 4);
        std::memcpy(&a.text_size, v + 4, 4);
        break;
    }
    if (p.keeps_id) std::memcpy(&a.id, v + (p.kind == Kind::kInt128 ? 16 : 8), sizeof(EventId));
    return a;
  }
  void Save(uint8_t* row, size_t j, const Acc& a) const {
    const Place& p = places_[j];
    if (p.set_bit >= 0 && a.set) row[p.set_bit / 8] |= static_cast<uint8_t>(1u << (p.set_bit % 8));
    uint8_t* v = row + p.offset;
    switch (p.kind) {
      case Kind::kInt64: {
        const int64_t n = static_cast<int64_t>(a.n);
        std::memcpy(v, &n, 8);
        break;
      }
      case Kind::kInt128: std::memcpy(v, &a.n, 16); break;
      case Kind::kDouble: std::memcpy(v, &a.d, 8); break;
      case Kind::kText:
        std::memcpy(v, &a.text_at, 4);
        std::memcpy(v + 4, &a.text_size, 4);
        break;
    }
    if (p.keeps_id) std::memcpy(v + (p.kind == Kind::kInt128 ? 16 : 8), &a.id, sizeof(EventId));
  }

 private:
  std::vector<Place> places_;
  uint32_t bits_ = 0;
  uint32_t width_ = 1;
};

// The pending rows, row r's bytes (RowLayout) at row(r): in pages of whole rows allocated,
// zeroed, as they fill (no doubling, no copy of what is held: what they hold grows by a page
// at a time, which the memory budget can follow).
class RowPages {
 public:
  // Rows of `width` bytes (at least 1). REQUIRES: empty.
  void SetWidth(size_t width) {
    width_ = std::max<size_t>(1, width);
    rows_per_page_ = std::max<size_t>(1, kPageBytes / width_);
  }
  uint8_t* row(size_t r) { return pages_[r / rows_per_page_].get() + (r % rows_per_page_) * width_; }
  const uint8_t* row(size_t r) const { return pages_[r / rows_per_page_].get() + (r % rows_per_page_) * width_; }
  // A new row, all zero.
  uint8_t* Add() {
    if (rows_ == pages_.size() * rows_per_page_) pages_.emplace_back(new uint8_t[rows_per_page_ * width_]());
    return row(rows_++);
  }
  size_t bytes() const { return pages_.size() * rows_per_page_ * width_ + pages_.capacity() * sizeof(void*); }
  // Forgets every row and gives the pages back.
  void Clear() {
    std::vector<std::unique_ptr<uint8_t[]>>().swap(pages_);
    rows_ = 0;
  }

 private:
  static constexpr size_t kPageBytes = 64 * 1024;
  size_t width_ = 1;
  size_t rows_per_page_ = kPageBytes;
  std::vector<std::unique_ptr<uint8_t[]>> pages_;
  size_t rows_ = 0;
};

// Makes room in `v` for `more` elements, growing it by an eighth (at least 64 KiB), not by
// doubling: what it holds follows what it needs closely enough for the memory budget.
template <typename V>
void GrowByAnEighth(V& v, size_t more) {
  if (v.size() + more <= v.capacity()) return;
  const size_t floor = std::max<size_t>(1, (size_t{64} << 10) / sizeof(typename V::value_type));
  v.reserve(v.size() + std::max({more, v.capacity() / 8, floor}));
}

// Encoded keys to dense row numbers 0, 1, 2... in the order they come: one open-addressing
// array of row numbers (at most 3/4 full), and per row the place of its key in one byte
// store and the low half of its hash: 16 bytes a key beside its bytes and its slot, no node
// per key, grown by an eighth at a time (what it holds follows what it needs, for the
// memory budget). Only the hash's low 32 bits are used: a caller may pass any hash whose
// low half is the key's.
class KeyIndex {
 public:
  int64_t Find(std::string_view key, uint64_t hash) const {
    if (slots_.empty()) return -1;
    return int64_t{slots_[Probe(key, static_cast<uint32_t>(hash))]} - 1;
  }
  // The key's row, added as the next row when new.
  uint32_t Intern(std::string_view key, uint64_t hash);
  std::string_view key(uint32_t row) const { return std::string_view(bytes_).substr(rows_[row].at, rows_[row].size); }
  uint64_t hash(uint32_t row) const { return rows_[row].hash; }
  size_t size() const { return rows_.size(); }
  size_t bytes() const {
    return slots_.capacity() * sizeof(uint32_t) + rows_.capacity() * sizeof(Row) + bytes_.capacity();
  }

 private:
  struct Row {
    uint64_t at;
    uint32_t size, hash;
  };
  size_t Probe(std::string_view key, uint32_t hash) const {
    const size_t mask = slots_.size() - 1;
    for (size_t i = hash & mask;; i = (i + 1) & mask) {
      const uint32_t slot = slots_[i];
      if (slot == 0) return i;
      const Row& r = rows_[slot - 1];
      if (r.hash == hash && r.size == key.size() && std::memcmp(bytes_.data() + r.at, key.data(), key.size()) == 0) {
        return i;
      }
    }
  }
  std::vector<uint32_t> slots_;  // row + 1; 0 is empty
  std::vector<Row> rows_;
  std::string bytes_;
};

uint32_t KeyIndex::Intern(std::string_view key, uint64_t full_hash) {
  const uint32_t hash = static_cast<uint32_t>(full_hash);
  if ((rows_.size() + 1) * 4 > slots_.size() * 3) {  // at most 3/4 full
    slots_.assign(slots_.empty() ? 1024 : slots_.size() * 2, 0);
    const size_t mask = slots_.size() - 1;
    for (uint32_t r = 0; r < rows_.size(); ++r) {
      size_t i = rows_[r].hash & mask;
      while (slots_[i] != 0) i = (i + 1) & mask;
      slots_[i] = r + 1;
    }
  }
  const size_t i = Probe(key, hash);
  if (slots_[i] == 0) {
    GrowByAnEighth(rows_, 1);
    GrowByAnEighth(bytes_, key.size());
    rows_.push_back({bytes_.size(), static_cast<uint32_t>(key.size()), hash});
    bytes_.append(key);
    slots_[i] = static_cast<uint32_t>(rows_.size());
  }
  return slots_[i] - 1;
}

class DeclaredProjector;

// The counting fast path of a declared read model whose values are all counts, keyed by at
// most one text and one other key (CountsOnFastPath): counts in a BucketCounts (no text
// key), a vector by text id (the text alone) or a FlatMap of (date, text id), each distinct
// text interned once per batch in its read model's keys_ (by the decoder's batch id). Its
// rows are the general path's, in the same order. A part of its read model (its friend).
class CountingPath {
 public:
  explicit CountingPath(DeclaredProjector& p);
  // The key that is a text, in the plan's keys, or -1.
  int64_t text_key() const { return text_key_; }
  Folded Apply(const EventRecords& records, std::vector<EventFailure>& failures);
  size_t pending_rows() const;
  size_t bytes() const;  // what it holds (not its read model's keys_)
  void Flush(RowSink& sink);

 private:
  // The distance between neighbouring values of a key on the fast path (BucketCounts).
  DeclaredProjector& p_;
  int64_t text_key_ = -1, other_key_ = -1;  // in the plan's keys, or -1
  bool by_day_ = false;                     // the other key is a date
  std::unique_ptr<BucketCounts> by_key_;    // no text key: count by the other key
  std::vector<int64_t> by_text_;            // the text key alone: count by text id
  FlatMap<int64_t> by_pair_;                // (ordered date << 32 | text id) -> count
  std::vector<uint32_t> ids_of_batch_;      // by the decoder's text id in this batch: text id + 1, or 0
  int64_t last_key_ = 0;
  int64_t* last_ = nullptr;  // (*by_key_)[last_key_], or null
  bool last_day_ok_ = false;  // last_day_ is the day of an event whose date key is last_date_
  int32_t last_day_ = 0;
  int64_t last_date_ = 0;
};

class DeclaredProjector final : public Projector, Segmentable, HandsOver, KeepsCommitted, OrderDependent, RemovesRows {
  friend class CountingPath;

 public:
  explicit DeclaredProjector(ModelPlan plan)
      : plan_(std::move(plan)), version_(PlanVersion(plan_)) {
    table_.name = plan_.name;
    for (const KeyPlan& k : plan_.keys) {
      table_.columns.push_back({k.column, StoredType(k.type), Merge::kKey, 0, 0, k.storage});
    }
    // One stored column per value column; its contributions (sums and subtractions) fold into it.
    for (size_t i = 0; i < plan_.values.size(); ++i) {
      const ValuePlan& v = plan_.values[i];
      size_t j = 0;
      while (j < column_plan_.size() && plan_.values[column_plan_[j]].column != v.column) ++j;
      if (j == column_plan_.size()) {
        column_plan_.push_back(i);
        table_.columns.push_back({v.column, StoredType(v.type), MergeOf(v.op), v.precision, v.scale, v.storage});
        limit_.push_back(v.type == ValueType::kDecimal ? Pow10(v.precision) : 0);
        // Bounded: what events add to it can leave its type (a bigint count cannot, in 2^63 events).
        const bool bounded = ((v.op == Op::kSum || v.op == Op::kSubtract) &&
                              (v.type == ValueType::kDecimal || v.type == ValueType::kBigInt)) ||
                             (v.op == Op::kCount && (v.type == ValueType::kDecimal || v.storage.declared()));
        bounded_of_.push_back(bounded ? static_cast<int64_t>(bounded_.size()) : -1);
        if (bounded) bounded_.push_back(j);
      }
      column_of_.push_back(j);
    }
    checks_sums_ = !bounded_.empty();
    for (size_t c = 0; c < column_plan_.size(); ++c) {
      const ValuePlan& v = plan_.values[column_plan_[c]];
      // Checked (bounded_of_), every contribution of the column of one type: a pending delta
      // lies between minus and plus twice the type's largest value.
      const bool narrow = bounded_of_[c] >= 0 &&
                          ((v.type == ValueType::kDecimal && v.precision <= 18) ||
                           (v.type == ValueType::kBigInt && v.storage.declared() &&
                            static_cast<__int128>(v.storage.max) - v.storage.min < (__int128{1} << 62)));
      layout_.Add(v.op, v.type, narrow);
    }
    layout_.Finish();
    accs_.SetWidth(layout_.width());
    // Non-text keys first in the encoded key: sorted keys then come in index order.
    for (size_t i = 0; i < plan_.keys.size(); ++i) {
      if (plan_.keys[i].type != ValueType::kText) key_order_.push_back(i);
    }
    for (size_t i = 0; i < plan_.keys.size(); ++i) {
      if (plan_.keys[i].type == ValueType::kText) key_order_.push_back(i);
    }
    text_keys_ = key_order_.size() - std::count_if(plan_.keys.begin(), plan_.keys.end(), [](const KeyPlan& k) {
                   return k.type != ValueType::kText;
                 });
    if (CountsOnFastPath(plan_)) fast_ = std::make_unique<CountingPath>(*this);
  }

  std::string_view name() const override { return plan_.name; }
  const TableSpec& table() const override { return table_; }
  std::string version() const override { return version_; }
  std::string origin() const override { return plan_.origin; }
  std::string hand_over() const override { return plan_.hand_over; }
  Segmentable* segmentable() override { return this; }
  const HandsOver* hands_over() const override { return this; }
  KeepsCommitted* keeps_committed() override { return this; }
  // With deletes, a key's row depends on the order of its events (a value after a delete
  // starts afresh): the runner holds events above an open hole. Its table holds its state.
  const OrderDependent* order_dependent() const override { return plan_.deletes.empty() ? nullptr : this; }
  bool resumes() const override { return true; }
  RemovesRows* removes_rows() override { return plan_.deletes.empty() ? nullptr : this; }

  void Bind(EventCatalog& catalog) override {
    model_classes_.clear();
    for (const std::string& e : plan_.events) {
      const uint16_t c = catalog.ClassIndex(e);
      catalog.WantRecords(c);
      Mark(model_classes_, c);
    }
    auto is_time = [](ValueType t) { return t == ValueType::kDate || t == ValueType::kDateTime; };
    condition_slots_.clear();
    for (const Condition& c : plan_.conditions) condition_slots_.push_back(catalog.Slot(c.source));
    when_slots_.assign(plan_.values.size(), {});
    for (size_t i = 0; i < plan_.values.size(); ++i) {
      for (const Condition& c : plan_.values[i].when) when_slots_[i].push_back(catalog.Slot(c.source));
    }
    delete_on_.assign(plan_.deletes.size(), {});
    delete_when_slots_.assign(plan_.deletes.size(), {});
    for (size_t i = 0; i < plan_.deletes.size(); ++i) {
      for (const std::string& e : plan_.deletes[i].on) Mark(delete_on_[i], catalog.ClassIndex(e));
      for (const Condition& c : plan_.deletes[i].when) delete_when_slots_[i].push_back(catalog.Slot(c.source));
    }
    key_slots_.clear();
    for (const KeyPlan& k : plan_.keys) {
      key_slots_.push_back(catalog.Slot(k.source));
      if (is_time(k.type)) catalog.WantTime(key_slots_.back());
    }
    if (fast_ && fast_->text_key() >= 0) catalog.WantText(key_slots_[static_cast<size_t>(fast_->text_key())]);
    value_slots_.clear();
    value_on_.assign(plan_.values.size(), {});
    for (size_t i = 0; i < plan_.values.size(); ++i) {
      const ValuePlan& v = plan_.values[i];
      value_slots_.push_back(v.source.name.empty() ? -1 : static_cast<int64_t>(catalog.Slot(v.source)));
      if (value_slots_.back() >= 0 && is_time(v.type)) catalog.WantTime(static_cast<uint32_t>(value_slots_.back()));
      for (const std::string& e : v.on.empty() ? plan_.events : v.on) Mark(value_on_[i], catalog.ClassIndex(e));
    }
  }

  bool reads_class(uint16_t c) const override { return c < model_classes_.size() && model_classes_[c]; }
  bool reads_payload() const override { return reads_payload_; }

  std::vector<ColumnIn> where() const override { return plan_.where; }

  // Whether `e` is one of its classes and passes its `where` (byte for byte).
  bool Selects(const EventRecords& records, const EventRecord& e) const override {
    if (!reads_class(e.event_class) || !AllHold(plan_.conditions, condition_slots_, records, e)) return false;
    return !segment_ || InSegment(records, e);
  }

  // Every declared read model folds per key (all of a key's events in one segment, in id
  // order), so first and last stay exact: any of them splits.
  void SetSegment(const Segment& segment) override {
    segment_ = segment.count > 1 ? std::optional<Segment>(segment) : std::nullopt;
  }
  bool CountsUnkeyed() const override { return !segment_ || segment_->index == 0; }

  // Whether value `i`'s `if` holds for `e` (none: it does).
  bool When(size_t i, const EventRecords& records, const EventRecord& e) const {
    return AllHold(plan_.values[i].when, when_slots_[i], records, e);
  }

  // Whether `e` removes its key's row: of a delete's classes, its `if` holding.
  bool Removes(const EventRecords& records, const EventRecord& e) const {
    for (size_t i = 0; i < plan_.deletes.size(); ++i) {
      if (Marked(delete_on_[i], e.event_class) && AllHold(plan_.deletes[i].when, delete_when_slots_[i], records, e)) {
        return true;
      }
    }
    return false;
  }

  Folded ApplyUnordered(const EventRecords& records, std::vector<EventFailure>& failures,
                        uint64_t& unplaced) override {
    if (!plan_.deletes.empty()) {
      // A late event below events already written: whether a delete of its key came after
      // it is not known here, so none is placed (each counted as missed: a rebuild places it).
      Folded ignored;
      unplaced = 0;
      for (const EventRecord& e : records.events) unplaced += Take(records, e, ignored) ? 1 : 0;
      return {};
    }
    unordered_ = true;
    unplaced_ = 0;
    const Folded folded = Apply(records, failures);
    unordered_ = false;
    unplaced = unplaced_;
    return folded;
  }

  // Whether it applies `e`, counting it in `folded` when it is one of its events: of its
  // classes and selected, or unusable (counted once over a read model's segments).
  bool Take(const EventRecords& records, const EventRecord& e, Folded& folded) const {
    if (!reads_class(e.event_class)) return false;
    if (!Usable(e)) {
      if (!CountsUnkeyed()) return false;
      ++folded.events;
      ++folded.unusable;
      return false;
    }
    if (!Selects(records, e)) return false;
    ++folded.events;
    return true;
  }

  Folded Apply(const EventRecords& records, std::vector<EventFailure>& failures) override {
    if (fast_) return fast_->Apply(records, failures);
    Folded folded;
    const size_t nvalues = plan_.values.size(), ncolumns = column_plan_.size();
    typed_.resize(nvalues);
    present_.resize(nvalues);
    sums_.resize(ncolumns);
    for (const EventRecord& e : records.events) {
      if (!Take(records, e, folded)) continue;
      // The key.
      key_.clear();
      std::string reason;
      for (size_t i : key_order_) {
        Typed t;
        if (!KeyValue(i, records.value(e, key_slots_[i]), t, reason)) break;
        AppendKey(plan_.keys[i].type, t);
      }
      if (reason.empty() && removes_ && Removes(records, e)) {
        Remove();
        continue;
      }
      // The values, each converted before any is applied: an event counts wholly or not at all.
      for (size_t i = 0; reason.empty() && i < nvalues; ++i) {
        const ValuePlan& p = plan_.values[i];
        present_[i] = false;
        if (!Marked(value_on_[i], e.event_class) || !When(i, records, e)) continue;
        if (p.op == Op::kCount) {
          present_[i] = true;
          continue;
        }
        FieldValue v;
        if (p.has_constant) {
          v.kind = ValueKind::kString;
          v.set_text(p.constant);
        } else {
          v = records.value(e, static_cast<size_t>(value_slots_[i]));
        }
        if (v.kind == ValueKind::kMissing || v.kind == ValueKind::kNull) continue;  // untouched
        if (!p.map.empty()) {
          const auto to = std::find_if(p.map.begin(), p.map.end(), [&](const auto& m) {
            return (v.kind == ValueKind::kString || v.kind == ValueKind::kNumber) && m.first == v.text();
          });
          if (to == p.map.end()) {
            reason = fmt::format("value '{}' ({} '{}'): {} is not in its map", p.column,
                                 p.source.column ? "field" : "path", p.source.name,
                                 v.kind == ValueKind::kString || v.kind == ValueKind::kNumber
                                     ? "'" + std::string(v.text().substr(0, 80)) + "'" : std::string("a non-text value"));
            break;
          }
          v.kind = ValueKind::kString;
          v.set_text(to->second);
        }
        if (std::string why = Convert(v, p.type, p.precision, p.scale, Bucket::kNone, typed_[i]); !why.empty()) {
          reason = fmt::format("value '{}' ({}) {}", p.column,
                               p.has_constant ? "constant" : (p.source.column ? "field '" : "path '") + p.source.name + "'",
                               why);
          break;
        }
        // A value stored as it is must fit the column (a sum's is checked as a sum, below).
        const bool stored_as_is = p.op != Op::kSum && p.op != Op::kSubtract;
        if (std::string why = stored_as_is ? Fits(p.storage, p.type, typed_[i]) : std::string(); !why.empty()) {
          reason = fmt::format("value '{}' ({}) {}", p.column,
                               p.has_constant ? "constant" : (p.source.column ? "field '" : "path '") + p.source.name + "'",
                               why);
          break;
        }
        present_[i] = true;
      }
      if (!reason.empty()) {
        failures.push_back({e.id, std::move(reason)});
        continue;
      }
      // Sums that would leave their type are refused before anything is applied: each
      // column's sum as it will be after this event's contributions, taken in turn.
      // A key's sum is its committed value (in the table) plus what this flush holds.
      const uint64_t hash = TextTable::HashOf(key_, {});
      const int64_t found = keys_.Find(key_, hash);
      uint8_t* row = found < 0 ? nullptr : accs_.row(static_cast<size_t>(found));
      int64_t committed = -1;
      if (checks_sums_) {
        committed = found >= 0 ? pending_committed_[static_cast<size_t>(found)] : committed_keys_.Find(key_, hash);
        // A row removed in this flush starts from nothing: the table's row goes first.
        const bool removed = found >= 0 && removes_ && (row_state_[static_cast<size_t>(found)] & kRemoved) != 0;
        const __int128* base =
            committed < 0 || removed ? nullptr : committed_.data() + static_cast<size_t>(committed) * bounded_.size();
        for (size_t b = 0; b < bounded_.size(); ++b) {
          sums_[bounded_[b]] = (row ? layout_.Load(row, bounded_[b]).n : 0) + (base ? base[b] : 0);
        }
      }
      for (size_t i = 0; checks_sums_ && reason.empty() && i < nvalues; ++i) {
        const ValuePlan& p = plan_.values[i];
        if (!present_[i] || bounded_of_[column_of_[i]] < 0) continue;
        __int128& sum = sums_[column_of_[i]];
        const __int128 delta = p.op == Op::kCount ? Pow10(p.scale) : typed_[i].n;
        const bool overflow =
            p.op == Op::kSubtract ? __builtin_sub_overflow(sum, delta, &sum) : __builtin_add_overflow(sum, delta, &sum);
        const bool leaves = p.type == ValueType::kDecimal
                                ? sum >= limit_[column_of_[i]] || sum <= -limit_[column_of_[i]]
                                : sum > p.storage.max || sum < p.storage.min;
        if (overflow || leaves) {
          reason = fmt::format("value '{}': the {} leaves {}", p.column, p.op == Op::kCount ? "count" : "sum",
                               DeclaredTypeName(p.type, p.precision, p.scale, p.storage));
        }
      }
      if (!reason.empty()) {
        failures.push_back({e.id, std::move(reason)});
        continue;
      }
      if (!row) {
        row = NewRow(hash, committed);
      } else if (removes_) {
        row_state_[static_cast<size_t>(found)] &= static_cast<uint8_t>(~kEmpty);  // written again
      }
      bool unplaced = false;
      for (size_t i = 0; i < nvalues; ++i) {
        if (!present_[i]) continue;
        if (unordered_ && (plan_.values[i].op == Op::kFirst || plan_.values[i].op == Op::kLast)) {
          unplaced = true;  // its place among the values written is not known
          continue;
        }
        Acc a = layout_.Load(row, column_of_[i]);
        Fold(plan_.values[i], typed_[i], e.id, a);
        layout_.Save(row, column_of_[i], a);
      }
      unplaced_ += unplaced ? 1 : 0;
    }
    return folded;
  }

  size_t pending_rows() const override {
    return fast_ ? fast_->pending_rows() : keys_.size();
  }

  // Its pending rows (the keys, their values, their texts) and the committed values it holds.
  size_t state_bytes() const override {
    size_t bytes = keys_.bytes() + committed_keys_.bytes() +
                   committed_.capacity() * sizeof(__int128);
    if (fast_) return bytes + fast_->bytes();
    return bytes + accs_.bytes() + texts_.capacity() + row_state_.capacity() +
           pending_committed_.capacity() * sizeof(int32_t);
  }

  void FlushRemoved(RowSink& sink) override {
    std::vector<Typed> keys(plan_.keys.size());
    for (uint32_t r = 0; r < keys_.size(); ++r) {
      if ((row_state_[r] & kRemoved) == 0) continue;
      DecodeKey(keys_.key(r), keys);
      for (size_t i = 0; i < plan_.keys.size(); ++i) Emit(sink, plan_.keys[i].type, 0, keys[i]);
      sink.EndRow();
    }
  }

  void Flush(RowSink& sink) override {
    if (fast_) return fast_->Flush(sink);
    std::vector<uint32_t> rows;
    rows.reserve(keys_.size());
    for (uint32_t r = 0; r < keys_.size(); ++r) {
      if (!removes_ || (row_state_[r] & kEmpty) == 0) rows.push_back(r);  // a row removed and not written again: none
    }
    // In the order of the stored key's leading non-text columns (text keys are stored by
    // their hash, which no order here can follow): comparing that fixed prefix is enough.
    const size_t prefix = 8 * (key_order_.size() - text_keys_);
    if (prefix > 0) {
      std::sort(rows.begin(), rows.end(), [this, prefix](uint32_t a, uint32_t b) {
        return std::memcmp(keys_.key(a).data(), keys_.key(b).data(), prefix) < 0;
      });
    }
    const size_t ncolumns = column_plan_.size();
    std::vector<Typed> keys(plan_.keys.size());
    for (const uint32_t r : rows) {
      DecodeKey(keys_.key(r), keys);
      for (size_t i = 0; i < plan_.keys.size(); ++i) Emit(sink, plan_.keys[i].type, 0, keys[i]);
      const uint8_t* row = accs_.row(r);
      for (size_t j = 0; j < ncolumns; ++j) {
        const ValuePlan& p = plan_.values[column_plan_[j]];
        const Acc a = layout_.Load(row, j);
        const Merge merge = MergeOf(p.op);
        if (!a.set && merge != Merge::kAdd) {
          sink.Null();
          if (KeepsEventId(merge)) sink.Null();
          continue;
        }
        Typed t;
        if (p.type == ValueType::kDouble) {
          t.d = a.d;
        } else {
          t.n = a.n;
        }
        if (p.type == ValueType::kText) t.s = TextOf(a);
        Emit(sink, p.type, p.scale, t);
        if (KeepsEventId(merge)) sink.Number(IdText(a.id));
      }
      sink.EndRow();
    }
    if (checks_sums_) Commit();
    // Given back, not kept for the next rows: what a flush frees is what the memory
    // budget counts on (the next rows grow their own).
    keys_ = KeyIndex();
    accs_.Clear();
    std::string().swap(texts_);
    std::vector<uint8_t>().swap(row_state_);
  }

  // The keys of `records`' events whose committed values it holds neither as pending rows nor
  // from its last flush: each emitted once, and counted as 0 until LoadCommitted() finds it.
  void KeysToLoad(const EventRecords& records, RowSink& sink) override {
    if (!checks_sums_ || fast_) return;
    const size_t nb = bounded_.size();
    std::vector<Typed> keys(plan_.keys.size());
    for (const EventRecord& e : records.events) {
      if (!reads_class(e.event_class) || !Usable(e) || !Selects(records, e)) continue;
      key_.clear();
      std::string reason;
      bool ok = true;
      for (size_t i : key_order_) {
        if (!KeyValue(i, records.value(e, key_slots_[i]), keys[i], reason)) {
          ok = false;
          break;
        }
        AppendKey(plan_.keys[i].type, keys[i]);
      }
      if (!ok) continue;
      const uint64_t hash = TextTable::HashOf(key_, {});
      if (keys_.Find(key_, hash) >= 0 || committed_keys_.Find(key_, hash) >= 0) continue;
      committed_keys_.Intern(key_, hash);
      GrowByAnEighth(committed_, nb);
      committed_.resize(committed_.size() + nb, 0);
      for (size_t i = 0; i < plan_.keys.size(); ++i) Emit(sink, plan_.keys[i].type, 0, keys[i]);
      sink.EndRow();
    }
  }


  std::vector<std::string> committed_columns() const override {
    std::vector<std::string> out;
    for (size_t j : bounded_) out.push_back(plan_.values[column_plan_[j]].column);
    return out;
  }

  std::string LoadCommitted(std::span<const std::string_view> row) override {
    if (row.size() != plan_.keys.size() + bounded_.size()) return "a committed row of the wrong width";
    key_.clear();
    for (size_t i : key_order_) {
      FieldValue v;
      v.kind = ValueKind::kString;
      v.set_text(row[i]);
      Typed t;
      if (std::string why = Convert(v, plan_.keys[i].type, 0, 0, Bucket::kNone, t); !why.empty()) {
        return fmt::format("key '{}' {}", plan_.keys[i].column, why);
      }
      AppendKey(plan_.keys[i].type, t);
    }
    const uint64_t hash = TextTable::HashOf(key_, {});
    // A key asked for (KeysToLoad), or one the table holds under its collation's equal
    // (a key of other bytes: taken as it is).
    int64_t at = committed_keys_.Find(key_, hash);
    if (at < 0) {
      at = committed_keys_.Intern(key_, hash);
      GrowByAnEighth(committed_, bounded_.size());
      committed_.resize(committed_.size() + bounded_.size(), 0);
    }
    for (size_t b = 0; b < bounded_.size(); ++b) {
      const ValuePlan& p = plan_.values[column_plan_[bounded_[b]]];
      const std::string_view text = row[plan_.keys.size() + b];
      __int128 n = 0;
      int64_t i = 0;
      const bool ok = p.type == ValueType::kDecimal ? ParseScaled(text, p.precision, p.scale, n) : ParseInt(text, i);
      if (!ok) return fmt::format("value '{}' is '{}', not a {}", p.column, Short(text), ValueTypeName(p.type, p.precision, p.scale));
      committed_[static_cast<size_t>(at) * bounded_.size() + b] = p.type == ValueType::kDecimal ? n : __int128{i};
    }
    return {};
  }

 private:
  // Key column i's value `v` as its type, in `t`: false, with the event's failure in
  // `reason`, when it has none. Both paths take their keys, and their failures, from here.
  bool KeyValue(size_t i, const FieldValue& v, Typed& t, std::string& reason) const {
    const KeyPlan& k = plan_.keys[i];
    if (v.kind == ValueKind::kMissing) {
      reason = fmt::format("key '{}': {} '{}' is missing", k.column, k.source.column ? "field" : "path", k.source.name);
      return false;
    }
    if (k.strict && v.kind != ValueKind::kString) {
      reason = fmt::format("key '{}' ({} '{}') is {}, expected a string", k.column,
                           k.source.column ? "field" : "path", k.source.name, KindName(v.kind));
      return false;
    }
    std::string why = Convert(v, k.type, 0, 0, k.bucket, t);
    if (why.empty()) why = Fits(k.storage, k.type, t);
    if (!why.empty()) {
      reason = fmt::format("key '{}' ({} '{}') {}", k.column, k.source.column ? "field" : "path", k.source.name, why);
      return false;
    }
    return true;
  }

  // Whether a converted value fits its column's declared type: "" when it does (or none is declared).
  void LimitValueBytes(size_t bytes) override { max_value_bytes_ = bytes; }

  std::string Fits(const Storage& storage, ValueType type, const Typed& t) const {
    // rewind's own text values are MEDIUMTEXT: a longer one is that event's failure, not a
    // flush the server cuts (which would stop every read model of the run); so is one a
    // statement under the server's max_allowed_packet cannot carry.
    constexpr size_t kMediumText = (size_t{1} << 24) - 1;
    if (!storage.declared() && type == ValueType::kText && t.s.size() > kMediumText) {
      return fmt::format("is {} bytes, longer than a text value holds (MEDIUMTEXT: {} bytes)", t.s.size(), kMediumText);
    }
    if (type == ValueType::kText && t.s.size() > max_value_bytes_) {
      return fmt::format("is {} bytes, longer than a row the server takes in one statement holds ({} bytes, from "
                         "its max_allowed_packet)",
                         t.s.size(), max_value_bytes_);
    }
    if (!storage.declared()) return {};
    if (type == ValueType::kText) return FitsStorage(storage, t.s);
    if (type == ValueType::kBigInt) return FitsStorage(storage, static_cast<int64_t>(t.n));
    return {};
  }

  static void Mark(std::vector<bool>& set, uint16_t c) {
    if (set.size() <= c) set.resize(c + 1u, false);
    set[c] = true;
  }
  static bool Marked(const std::vector<bool>& set, uint16_t c) { return c < set.size() && set[c]; }

  // Integers big-endian with the sign flipped, so that encoded keys sort as numbers. Also
  // what a key's segment hashes (projectors/segment.h): keep the two in step.
  void AppendKey(ValueType type, const Typed& t) { AppendKeyTo(key_, type, t); }
  static void AppendKeyTo(std::string& key, ValueType type, const Typed& t) {
    if (type == ValueType::kText) {
      const uint32_t len = static_cast<uint32_t>(t.s.size());
      for (int b = 3; b >= 0; --b) key += static_cast<char>((len >> (8 * b)) & 0xff);
      key.append(t.s);
      return;
    }
    const uint64_t u = ToOrdered(static_cast<int64_t>(t.n));
    for (int b = 7; b >= 0; --b) key += static_cast<char>((u >> (8 * b)) & 0xff);
  }

  // Whether `e` belongs to this segment: its encoded key hashes to it. An event without a
  // key (a failure) belongs to segment 0 alone, so that the segments count it once.
  bool InSegment(const EventRecords& records, const EventRecord& e) const {
    // Scratch kept between events: a key longer than the small-string buffer would
    // otherwise be a heap allocation per event.
    std::string& key = segment_key_;
    key.clear();
    std::string reason;
    for (size_t i : key_order_) {
      Typed t;
      if (!KeyValue(i, records.value(e, key_slots_[i]), t, reason)) return segment_->index == 0;
      AppendKeyTo(key, plan_.keys[i].type, t);
    }
    return SegmentOfKey(key, segment_->count) == segment_->index;
  }

  void DecodeKey(std::string_view key, std::vector<Typed>& out) const {
    size_t at = 0;
    for (size_t i : key_order_) {
      const auto byte = [&](size_t j) { return static_cast<uint64_t>(static_cast<unsigned char>(key[at + j])); };
      if (plan_.keys[i].type == ValueType::kText) {
        uint32_t len = 0;
        for (size_t j = 0; j < 4; ++j) len = (len << 8) | static_cast<uint32_t>(byte(j));
        out[i].s = key.substr(at + 4, len);
        at += 4 + len;
      } else {
        uint64_t u = 0;
        for (size_t j = 0; j < 8; ++j) u = (u << 8) | byte(j);
        out[i].n = FromOrdered<int64_t>(u);
        at += 8;
      }
    }
  }

  static void Emit(RowSink& sink, ValueType type, uint8_t scale, const Typed& t) {
    switch (type) {
      case ValueType::kBigInt: sink.Int(static_cast<int64_t>(t.n)); break;
      case ValueType::kDecimal: sink.Number(FormatScaled(t.n, scale)); break;
      case ValueType::kDouble: sink.Double(t.d); break;
      case ValueType::kText: sink.Text(t.s); break;
      case ValueType::kDate: sink.Date(static_cast<int32_t>(t.n)); break;
      case ValueType::kDateTime: sink.DateTimeMicros(static_cast<int64_t>(t.n)); break;
    }
  }

  std::string_view TextOf(const Acc& a) const { return std::string_view(texts_).substr(a.text_at, a.text_size); }

  int Compare(ValueType type, const Typed& t, const Acc& a) const {
    switch (type) {
      case ValueType::kDouble: return t.d < a.d ? -1 : t.d > a.d ? 1 : 0;
      case ValueType::kText: return t.s.compare(TextOf(a));
      default: return t.n < a.n ? -1 : t.n > a.n ? 1 : 0;
    }
  }

  // A text value replaced by a longer one leaves its old bytes in texts_ until the flush
  // (bounded by the events between flushes); by one as long or shorter, it takes its place.
  void Store(ValueType type, const Typed& t, Acc& a) {
    if (type == ValueType::kDouble) {
      a.d = t.d;
    } else {
      a.n = t.n;
    }
    if (type == ValueType::kText && a.set && t.s.size() <= a.text_size) {
      // Where the value it replaces was (its bytes are this value's alone): a key's last
      // value of each event does not take more room each time.
      if (!t.s.empty()) std::memcpy(texts_.data() + a.text_at, t.s.data(), t.s.size());
      a.text_size = static_cast<uint32_t>(t.s.size());
    } else if (type == ValueType::kText) {
      // Grown by an eighth at a time, not doubled: what it holds follows what it needs
      // closely enough for the memory budget.
      GrowByAnEighth(texts_, t.s.size());
      a.text_at = static_cast<uint32_t>(texts_.size());
      a.text_size = static_cast<uint32_t>(t.s.size());
      texts_.append(t.s);
    }
    a.set = true;
  }

  // A new pending row for key_ (hashed `hash`), its committed key `committed` (-1: none).
  uint8_t* NewRow(uint64_t hash, int64_t committed) {
    keys_.Intern(key_, hash);  // the next row
    uint8_t* row = accs_.Add();
    if (checks_sums_) {
      GrowByAnEighth(pending_committed_, 1);
      pending_committed_.push_back(static_cast<int32_t>(committed));
    }
    if (removes_) {
      GrowByAnEighth(row_state_, 1);
      row_state_.push_back(0);
    }
    return row;
  }

  // The event (its key in key_) removes its key's row: the table's row goes in this flush,
  // and what this flush held for it is forgotten.
  void Remove() {
    const uint64_t hash = TextTable::HashOf(key_, {});
    const int64_t found = keys_.Find(key_, hash);
    uint8_t* row = found >= 0 ? accs_.row(static_cast<size_t>(found))
                              : NewRow(hash, checks_sums_ ? committed_keys_.Find(key_, hash) : -1);
    std::memset(row, 0, layout_.width());
    row_state_[found >= 0 ? static_cast<size_t>(found) : keys_.size() - 1] = kRemoved | kEmpty;
  }

  // The committed values of the bounded columns after this flush, of its keys alone: what
  // they had plus the flushed deltas (a removed row's replace them). The keys it held from
  // earlier flushes and loads are forgotten: their rows are in the table (an earlier flush
  // is committed before the next is built), read back when an event of theirs comes.
  void Commit() {
    const size_t nb = bounded_.size();
    KeyIndex keys;
    std::vector<__int128> values(keys_.size() * nb, 0);
    for (uint32_t r = 0; r < keys_.size(); ++r) {
      const int64_t c = pending_committed_[r];
      const size_t at = keys.Intern(keys_.key(r), keys_.hash(r));
      const uint8_t* row = accs_.row(r);
      const bool removed = removes_ && (row_state_[r] & kRemoved) != 0;
      for (size_t b = 0; b < nb; ++b) {
        const __int128 before = removed || c < 0 ? 0 : committed_[static_cast<size_t>(c) * nb + b];
        values[at * nb + b] = before + layout_.Load(row, bounded_[b]).n;
      }
    }
    committed_keys_ = std::move(keys);
    committed_ = std::move(values);
    std::vector<int32_t>().swap(pending_committed_);
  }

  void Fold(const ValuePlan& p, const Typed& t, EventId id, Acc& a) {
    const bool dbl = p.type == ValueType::kDouble;
    switch (p.op) {
      case Op::kCount:
        if (p.type == ValueType::kDecimal) {
          a.n += Pow10(p.scale);
        } else if (dbl) {
          a.d += 1;
        } else {
          a.n += 1;
        }
        a.set = true;
        break;
      case Op::kSum:
        if (dbl) {
          a.d += t.d;
        } else {
          a.n += t.n;
        }
        a.set = true;
        break;
      case Op::kSubtract:
        if (dbl) {
          a.d -= t.d;
        } else {
          a.n -= t.n;
        }
        a.set = true;
        break;
      case Op::kMin:
        if (!a.set || Compare(p.type, t, a) < 0) Store(p.type, t, a);
        break;
      case Op::kMax:
        if (!a.set || Compare(p.type, t, a) > 0) Store(p.type, t, a);
        break;
      // By id: a late event (a lower id applied after higher ones) wins only where its id is the extreme one.
      case Op::kFirst:
        if (!a.set || id < a.id) {
          Store(p.type, t, a);
          a.id = id;
        }
        break;
      case Op::kLast:
        if (!a.set || id > a.id) {
          Store(p.type, t, a);
          a.id = id;
        }
        break;
    }
  }

  const ModelPlan plan_;
  const std::string version_;
  size_t max_value_bytes_ = SIZE_MAX;  // LimitValueBytes
  bool unordered_ = false;  // ApplyRecordsUnordered: first and last values are left out
  uint64_t unplaced_ = 0;   // events whose first or last value was left out
  TableSpec table_;
  std::vector<size_t> column_plan_;  // per stored value column: its first contribution in plan_.values
  std::vector<size_t> column_of_;    // per contribution: its stored column
  std::vector<__int128> limit_;      // per stored value column: 10^precision for decimals
  // The stored value columns whose added values can leave their type (sums and subtractions of
  // decimals and bigints, counts as decimals), and each stored column's place among them (or -1).
  std::vector<size_t> bounded_;
  std::vector<int64_t> bounded_of_;
  bool checks_sums_ = false;         // bounded_ is not empty
  std::vector<size_t> key_order_;  // key columns in encoded order
  size_t text_keys_ = 0;
  std::vector<bool> model_classes_;
  std::vector<uint32_t> condition_slots_;          // by plan_.conditions
  std::vector<std::vector<uint32_t>> when_slots_;  // by value, by its `if`'s conditions
  std::vector<uint32_t> key_slots_;
  std::vector<int64_t> value_slots_;
  std::vector<std::vector<bool>> value_on_;
  std::string key_;  // scratch
  mutable std::string segment_key_;  // InSegment's scratch (Selects is const)
  std::optional<Segment> segment_;  // the keys it builds (SetSegment); none: every key
  std::vector<Typed> typed_;
  std::vector<bool> present_;
  std::vector<__int128> sums_;  // scratch, per stored value column
  KeyIndex keys_;      // encoded key -> row index (rows in order of arrival)
  RowLayout layout_;  // how a pending row holds the stored value columns
  RowPages accs_;     // the pending rows, row r at row(r)
  std::string texts_;      // the bytes of the text values in accs_ (Acc::text_at)
  // Deletes only: per pending row, kRemoved (its table row goes before this flush's rows)
  // and kEmpty (nothing written since: no row is written).
  static constexpr uint8_t kRemoved = 1, kEmpty = 2;
  const bool removes_ = !plan_.deletes.empty();
  std::vector<uint8_t> row_state_;
  std::vector<std::vector<bool>> delete_on_;               // by plan_.deletes: its classes
  std::vector<std::vector<uint32_t>> delete_when_slots_;  // by plan_.deletes, by its `if`'s conditions
  // Bounded columns only: the committed values of the keys of the last flush and of the keys
  // read back since (bounded_.size() per key, in the order of committed_keys_), and each
  // pending row's committed key (-1: none, 0 in the table). Memory grows with the rows of a
  // flush, not with the read model's keys.
  KeyIndex committed_keys_;
  std::vector<__int128> committed_;
  std::vector<int32_t> pending_committed_;  // a window's keys are fewer than 2^31
  // The counting fast path (CountsOnFastPath), or null: keys_ interns its texts.
  std::unique_ptr<CountingPath> fast_;
  // A key or value reads a path of the payload (false: the event table's columns alone).
  const bool reads_payload_ = ReadsPayload(plan_);
};

CountingPath::CountingPath(DeclaredProjector& p) : p_(p) {
  const ModelPlan& plan = p.plan_;
  for (size_t i = 0; i < plan.keys.size(); ++i) {
    (plan.keys[i].type == ValueType::kText ? text_key_ : other_key_) = static_cast<int64_t>(i);
  }
  if (other_key_ >= 0) {
    const KeyPlan& k = plan.keys[static_cast<size_t>(other_key_)];
    by_day_ = k.type == ValueType::kDate;
    if (text_key_ < 0) by_key_ = std::make_unique<BucketCounts>(KeyBucketStride(k));
  }
}

size_t CountingPath::bytes() const {
  return (by_key_ ? by_key_->bytes() : 0) + by_text_.capacity() * sizeof(int64_t) + by_pair_.bytes() +
         ids_of_batch_.capacity() * sizeof(uint32_t);
}

size_t CountingPath::pending_rows() const {
  if (text_key_ < 0) return by_key_->size();
  if (other_key_ >= 0) return by_pair_.size();
  return p_.keys_.size();
}

// The fast path's fold (CountsOnFastPath): the other key first, then the text, as the
// general path takes them (key_order_), so that a failure names the same key.
Folded CountingPath::Apply(const EventRecords& records, std::vector<EventFailure>& failures) {
  Folded folded;
  std::string reason;
  ids_of_batch_.clear();  // the batch's text ids are new with every batch
  for (const EventRecord& e : records.events) {
    if (!p_.Take(records, e, folded)) continue;
    int64_t other = 0;
    if (other_key_ >= 0) {
      const size_t k = static_cast<size_t>(other_key_);
      const FieldValue& v = records.value(e, p_.key_slots_[k]);
      // A date key is a function of the time's day alone: on the last event's day, no
      // calendar arithmetic.
      if (by_day_ && last_day_ok_ && v.kind == ValueKind::kString && v.time_state == TimeState::kOk &&
          v.time.days == last_day_) {
        other = last_date_;
      } else {
        Typed t;
        if (!p_.KeyValue(k, v, t, reason)) {
          failures.push_back({e.id, std::move(reason)});
          reason.clear();
          continue;
        }
        other = static_cast<int64_t>(t.n);
        if (by_day_) {
          last_day_ok_ = v.time_state == TimeState::kOk;
          last_day_ = v.time.days;
          last_date_ = other;
        }
      }
    }
    if (text_key_ < 0) {
      // Neighbouring events mostly share a bucket: its count is kept at hand.
      if (last_ == nullptr || other != last_key_) {
        last_key_ = other;
        last_ = &(*by_key_)[other];
      }
      ++*last_;
      continue;
    }
    Typed t;
    const FieldValue& text = records.value(e, p_.key_slots_[static_cast<size_t>(text_key_)]);
    if (!p_.KeyValue(static_cast<size_t>(text_key_), text, t, reason)) {
      failures.push_back({e.id, std::move(reason)});
      reason.clear();
      continue;
    }
    uint32_t id;
    if (const uint32_t batch_id = text.text_id; batch_id != 0) {
      // The decoder's id of the text in this batch: hashed and interned here once per batch.
      if (batch_id >= ids_of_batch_.size()) {
        ids_of_batch_.resize(std::max<size_t>(batch_id + 1, 2 * ids_of_batch_.size()), 0);
      }
      uint32_t& mine = ids_of_batch_[batch_id];
      if (mine == 0) mine = p_.keys_.Intern(t.s, TextTable::HashOf(t.s, {})) + 1;
      id = mine - 1;
    } else {
      id = p_.keys_.Intern(t.s, TextTable::HashOf(t.s, {}));
    }
    if (other_key_ < 0) {
      if (id == by_text_.size()) by_text_.push_back(0);
      ++by_text_[id];
    } else {
      ++by_pair_[(uint64_t{ToOrdered(static_cast<int32_t>(other))} << 32) | id];  // date, then text
    }
  }
  return folded;
}

// The fast path's rows: in the order of the other key (then the text's arrival), as the
// general path sorts them by its fixed prefix.
void CountingPath::Flush(RowSink& sink) {
  const auto row = [&](int64_t other, uint32_t text, int64_t count) {
    for (size_t i = 0; i < p_.plan_.keys.size(); ++i) {
      if (static_cast<int64_t>(i) == text_key_) {
        sink.Text(p_.keys_.key(text));
      } else {
        Typed t;
        t.n = other;
        p_.Emit(sink, p_.plan_.keys[i].type, 0, t);
      }
    }
    sink.Int(count);
    sink.EndRow();
  };
  if (text_key_ < 0) {
    for (const auto& [key, count] : by_key_->TakeSorted()) row(key, 0, count);
    last_ = nullptr;
  } else if (other_key_ < 0) {
    for (uint32_t id = 0; id < by_text_.size(); ++id) row(0, id, by_text_[id]);
    std::vector<int64_t>().swap(by_text_);
  } else {
    for (const auto& e : by_pair_.TakeSorted()) {
      row(FromOrdered<int32_t>(static_cast<uint32_t>(e.key >> 32)), static_cast<uint32_t>(e.key), e.value);
    }
  }
  p_.keys_ = KeyIndex();
  ids_of_batch_.clear();
}

}  // namespace

std::unique_ptr<Projector> MakeDeclaredProjector(ModelPlan plan) {
  if (!plan.handlers.empty()) return MakeHandlersProjector(std::move(plan));
  return std::make_unique<DeclaredProjector>(std::move(plan));
}

}  // namespace rw
