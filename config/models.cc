#include "config/models.h"

#include <fmt/core.h>

#include <algorithm>
#include <charconv>
#include <optional>
#include <toml++/toml.h>

#include "config/careful_file.h"
#include "projectors/projector.h"
#include "stages/db/checkpoint_store.h"
#include "stages/db/table_admin.h"

namespace rw {
namespace {

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// Where a declaration's messages point: the file, and the line of the node they are about.
class Located {
 protected:
  explicit Located(std::string file) : file_(std::move(file)) {}
  Status Fail(const toml::node& at, const std::string& what) const {
    return Status::InvalidInput(fmt::format("{}:{}: {}", file_, at.source().begin.line, what));
  }
  const std::string file_;
};

// The types of a declaration: rewind's own and the SQL types narrower than them, a text
// column's collation, the type a key or a value takes, and whether its bucket or its
// constant fits it.
class Types : protected Located {
 public:
  explicit Types(std::string file) : Located(std::move(file)) {}

  struct Type {
    ValueType type;
    uint8_t precision = 0, scale = 0;
    Storage storage = {};
  };
  // A declared SQL type narrower than rewind's (issue 38, part 2): varchar(N), char(N),
  // binary(N), varbinary(N) (text), tinyint, smallint, mediumint, int (or integer), each
  // optionally unsigned, and bigint unsigned (integers up to 2^63 - 1).
  static std::optional<Type> SqlTypeOf(const std::string& text) {
    struct Sized { const char* name; const char* sql; uint32_t most; bool bytes; };
    static constexpr Sized kSized[] = {{"varchar", "VARCHAR", 16383, false}, {"char", "CHAR", 255, false},
                                       {"binary", "BINARY", 255, true}, {"varbinary", "VARBINARY", 65532, true}};
    for (const Sized& t : kSized) {
      unsigned n = 0;
      char close = 0;
      const std::string pattern = std::string(t.name) + "(%u%c";
      if (text.rfind(std::string(t.name) + "(", 0) == 0 && std::sscanf(text.c_str(), pattern.c_str(), &n, &close) == 2 &&
          close == ')' && text.back() == ')' && text == fmt::format("{}({})", t.name, n) && n >= 1 && n <= t.most) {
        Type type{ValueType::kText};
        type.storage.sql = fmt::format("{}({})", t.sql, n);
        type.storage.length = n;
        type.storage.bytes = t.bytes;
        return type;
      }
    }
    // Times with fractional seconds (issue 51): datetime(N) and timestamp(N), N from 0 to 6
    // digits, and timestamp. Their values keep the microseconds they were written with.
    for (const char* name : {"datetime", "timestamp"}) {
      const std::string upper = name == std::string("datetime") ? "DATETIME" : "TIMESTAMP";
      if (text == "timestamp" && upper == "TIMESTAMP") {
        Type type{ValueType::kDateTime};
        type.storage.sql = upper;
        return type;
      }
      for (unsigned n = 0; n <= 6; ++n) {
        if (text != fmt::format("{}({})", name, n)) continue;
        Type type{ValueType::kDateTime};
        type.storage.sql = fmt::format("{}({})", upper, n);
        return type;
      }
    }
    struct Int { const char* name; const char* sql; int64_t min, max; };
    static constexpr Int kInts[] = {{"tinyint", "TINYINT", -128, 127},
                                    {"smallint", "SMALLINT", -32768, 32767},
                                    {"mediumint", "MEDIUMINT", -8388608, 8388607},
                                    {"int", "INT", INT32_MIN, INT32_MAX},
                                    {"integer", "INT", INT32_MIN, INT32_MAX},
                                    {"bigint", "BIGINT", INT64_MIN, INT64_MAX}};
    for (const Int& t : kInts) {
      for (const bool is_unsigned : {false, true}) {
        if (text != std::string(t.name) + (is_unsigned ? " unsigned" : "")) continue;
        if (!is_unsigned && std::string(t.name) == "bigint") return std::nullopt;  // rewind's own
        Type type{ValueType::kBigInt};
        type.storage.sql = std::string(t.sql) + (is_unsigned ? " UNSIGNED" : "");
        type.storage.min = is_unsigned ? 0 : t.min;
        type.storage.max = is_unsigned ? (t.max == INT64_MAX ? INT64_MAX : 2 * t.max + 1) : t.max;
        return type;
      }
    }
    return std::nullopt;
  }

  // A declared `type`: one of rewind's types or an SQL type of its own, named by a string
  // (so that once it is taken, a caller's message quotes the node's string as it is).
  Result<Type> TypeOf(const toml::node& n) const {
    const auto* ts = n.as_string();
    if (ts == nullptr) return Fail(n, "'type' must be a string");
    const std::string& text = ts->get();
    if (std::optional<Type> sql = SqlTypeOf(text)) return *sql;
    if (text == "bigint") return Type{ValueType::kBigInt};
    if (text == "double") return Type{ValueType::kDouble};
    if (text == "text") return Type{ValueType::kText};
    if (text == "date") return Type{ValueType::kDate};
    if (text == "datetime") return Type{ValueType::kDateTime};
    unsigned p = 0, s = 0;
    char close = 0;
    if (text.rfind("decimal(", 0) == 0 && std::sscanf(text.c_str(), "decimal(%u,%u%c", &p, &s, &close) == 3 &&
        close == ')' && text.back() == ')') {
      if (p < 1 || p > 38 || s > p) {
        return Fail(n, fmt::format("type '{}': rewind sums decimals exactly up to 38 digits: decimal(p,s) "
                                   "with 1 <= p <= 38 and s <= p", text));
      }
      return Type{ValueType::kDecimal, static_cast<uint8_t>(p), static_cast<uint8_t>(s)};
    }
    return Fail(n, fmt::format("unknown type '{}' (bigint, decimal(p,s), double, text, date or datetime; for a "
                               "column of its own type: varchar(N), char(N), binary(N), varbinary(N), tinyint, "
                               "smallint, mediumint, int, each integer optionally unsigned, datetime(N) or "
                               "timestamp(N) with N from 0 to 6 fractional digits, timestamp)", text));
  }

  // A text column's declared `collation` (varchar and char only): a name the server checks.
  Status CollationOf(const toml::table& t, const std::string& column, Storage& storage) const {
    const toml::node* cn = t.get("collation");
    if (cn == nullptr) return Status::Ok();
    const auto* cs = cn->as_string();
    if (cs == nullptr) return Fail(*cn, "'collation' must be a string");
    if (storage.sql.rfind("VARCHAR", 0) != 0 && storage.sql.rfind("CHAR", 0) != 0) {
      return Fail(*cn, fmt::format("column '{}': a collation is declared with type = \"varchar(N)\" or \"char(N)\"",
                                   column));
    }
    if (!IsPlainIdentifier(cs->get())) return Fail(*cn, fmt::format("collation '{}' is not a plain name", cs->get()));
    storage.collation = cs->get();
    return Status::Ok();
  }

  // A key's type: its bucket's, or the declared one, which a key can hold.
  Status KeyTypeOf(const toml::table& k, KeyPlan& key) const {
    key.type = DefaultKeyType(key.bucket);
    const toml::node* tn = k.get("type");
    if (tn == nullptr) return Status::Ok();
    Result<Type> type = TypeOf(*tn);
    if (!type.ok()) return type.status();
    if (type->type != ValueType::kText && type->type != ValueType::kBigInt && type->type != ValueType::kDate &&
        type->type != ValueType::kDateTime) {
      return Fail(*tn, fmt::format("a key's type is text, bigint, date, datetime or a text or integer SQL "
                                   "type (varchar(N), int, ...), not '{}'", tn->as_string()->get()));
    }
    key.type = type->type;
    key.storage = type->storage;
    return Status::Ok();
  }

  // A bucketed key holds a time, precise enough for its bucket.
  Status BucketFits(const toml::table& k, const KeyPlan& key) const {
    if (key.bucket == Bucket::kNone) return Status::Ok();
    if (key.type == ValueType::kText || key.type == ValueType::kBigInt) {
      return Fail(k, fmt::format("key '{}' has a bucket, so its type is date or datetime", key.column));
    }
    if (key.type == ValueType::kDate && (key.bucket == Bucket::kMinute || key.bucket == Bucket::kHour)) {
      return Fail(k, fmt::format("key '{}': a {} bucket needs type datetime", key.column, BucketName(key.bucket)));
    }
    return Status::Ok();
  }

  // Types: fixed before any event is read, by the op or declared.
  Status ValueTypeOf(const toml::table& v, ValuePlan& value) const {
    switch (value.op) {
      case Op::kCount: value.type = ValueType::kBigInt; break;
      case Op::kSum:
      case Op::kSubtract:
      case Op::kMin:
      case Op::kMax:
        value.type = ValueType::kDecimal;
        value.precision = 38;
        value.scale = 10;
        break;
      case Op::kFirst:
      case Op::kLast: value.type = ValueType::kText; break;
    }
    const toml::node* tn = v.get("type");
    if (tn == nullptr) return Status::Ok();
    Result<Type> type = TypeOf(*tn);
    if (!type.ok()) return type.status();
    const bool numeric = type->type == ValueType::kBigInt || type->type == ValueType::kDecimal ||
                         type->type == ValueType::kDouble;
    if ((value.op == Op::kCount || value.op == Op::kSum || value.op == Op::kSubtract) && !numeric) {
      return Fail(*tn, fmt::format("value '{}': a {} is bigint, decimal(p,s) or double, not '{}'", value.column,
                                   OpName(value.op), tn->as_string()->get()));
    }
    value.type = type->type;
    value.precision = type->precision;
    value.scale = type->scale;
    value.storage = type->storage;
    return Status::Ok();
  }

  // A constant is a value of its column's type, and fits its declared SQL type.
  Status ConstantFits(const toml::table& v, const ValuePlan& value) const {
    if (!value.has_constant) return Status::Ok();
    if (value.type == ValueType::kDecimal || value.type == ValueType::kBigInt) {
      __int128 ignored;
      const bool fits = value.type == ValueType::kDecimal
                            ? ParseScaled(value.constant, value.precision, value.scale, ignored)
                            : ParseScaled(value.constant, 19, 0, ignored);
      if (!fits) {
        return Fail(*v.get("value"), fmt::format("value '{}': the constant '{}' is not a {}", value.column,
                                                 value.constant, ValueTypeName(value.type, value.precision, value.scale)));
      }
    }
    if (!value.storage.declared()) return Status::Ok();
    std::string why;
    int64_t n = 0;
    if (value.type == ValueType::kText) {
      why = FitsStorage(value.storage, value.constant);
    } else if (value.type == ValueType::kBigInt &&
               std::from_chars(value.constant.data(), value.constant.data() + value.constant.size(), n).ec ==
                   std::errc{}) {
      why = FitsStorage(value.storage, n);
    }
    if (!why.empty()) {
      return Fail(*v.get("value"), fmt::format("value '{}': the constant '{}' {}", value.column, value.constant, why));
    }
    return Status::Ok();
  }
};

class Parser : protected Located {
 public:
  Parser(std::string file, std::string events_table)
      : Located(file), types_(std::move(file)), events_table_(std::move(events_table)) {}

  Result<std::vector<ModelPlan>> Parse(std::string_view text) {
    toml::table root;
    try {
      root = toml::parse(text, file_);
    } catch (const toml::parse_error& e) {
      return Status::InvalidInput(fmt::format("{}:{}: {}", file_, e.source().begin.line, e.description()));
    }
    std::vector<ModelPlan> plans;
    for (auto&& [k, node] : root) {
      if (k.str() != "read_model") return Fail(node, fmt::format("unknown key '{}' (the file holds [[read_model]] tables)", k.str()));
    }
    const toml::node* models = root.get("read_model");
    if (models == nullptr) return Status::InvalidInput(fmt::format("{}: no [[read_model]] declared", file_));
    const toml::array* list = models->as_array();
    if (list == nullptr) return Fail(*models, "read_model must be an array of tables: write [[read_model]]");
    for (const toml::node& m : *list) {
      const toml::table* t = m.as_table();
      if (t == nullptr) return Fail(m, "each read_model must be a table");
      Result<ModelPlan> plan = Model(*t);
      if (!plan.ok()) return plan.status();
      for (const ModelPlan& other : plans) {
        if (Lower(other.name) == Lower(plan->name)) {
          return Fail(*t, fmt::format("read model '{}' is declared twice (also at {})", plan->name, other.origin));
        }
      }
      plans.push_back(std::move(*plan));
    }
    return plans;
  }

 private:
  Status Unknown(const toml::table& t, std::initializer_list<std::string_view> allowed, const char* where) const {
    for (auto&& [k, node] : t) {
      if (std::find(allowed.begin(), allowed.end(), k.str()) == allowed.end()) {
        std::string list;
        for (auto a : allowed) list += (list.empty() ? "" : ", ") + std::string(a);
        return Fail(node, fmt::format("unknown key '{}' in {} (known: {})", k.str(), where, list));
      }
    }
    return Status::Ok();
  }

  Result<std::string> String(const toml::table& t, std::string_view key, const char* where, bool required) const {
    const toml::node* n = t.get(key);
    if (n == nullptr) {
      if (required) return Fail(t, fmt::format("{} needs '{}'", where, key));
      return std::string();
    }
    const auto* s = n->as_string();
    if (s == nullptr) return Fail(*n, fmt::format("'{}' in {} must be a string", key, where));
    return s->get();
  }

  Result<std::vector<std::string>> Strings(const toml::node& n, std::string_view key) const {
    const toml::array* a = n.as_array();
    if (a == nullptr) return Fail(n, fmt::format("'{}' must be an array of strings", key));
    std::vector<std::string> out;
    for (const toml::node& e : *a) {
      const auto* s = e.as_string();
      if (s == nullptr || s->get().empty()) return Fail(e, fmt::format("'{}' must hold non-empty strings", key));
      out.push_back(s->get());
    }
    if (out.empty()) return Fail(n, fmt::format("'{}' is empty: name at least one event class", key));
    return out;
  }

  // where = { ... } and a value's if = { ... }: each entry `column = V` (a column of the event
  // table) or `"$.a.b" = V` (a path into the payload), V a string, an integer, a boolean, an
  // array of them, or { not = one of those }. `what` names the table in messages.
  Result<std::vector<Condition>> Conditions(const toml::node& n, const char* what) const {
    const toml::table* t = n.as_table();
    if (t == nullptr || t->empty()) {
      return Fail(n, fmt::format("'{}' must be a table of event-table columns or payload paths (\"$.a.b\") and "
                                 "the values they must hold, e.g. {} = {{ stream = \"accounts\" }}, "
                                 "{{ \"$.currency\" = [\"EUR\", \"USD\"] }} or {{ \"$.status\" = {{ not = \"cancelled\" }} }}",
                                 what, what));
    }
    std::vector<Condition> out;
    for (auto&& [k, v] : *t) {
      Condition c;
      const std::string key(k.str());
      if (key.rfind("$.", 0) == 0) {
        c.source = FieldSource{false, key.substr(2)};
        const std::string& path = c.source.name;
        if (path.empty() || path.front() == '.' || path.back() == '.' || path.find("..") != std::string::npos) {
          return Fail(v, fmt::format("'{}' {}: a payload path is \"$.\" then dotted names, e.g. \"$.customer.id\"",
                                     what, key));
        }
      } else {
        c.source = FieldSource{true, key};
        if (!IsPlainIdentifier(key, 64)) {
          return Fail(v, fmt::format("'{}' names columns of the event table or payload paths (\"$.a.b\"): '{}' is "
                                     "neither a plain identifier nor a path",
                                     what, key));
        }
      }
      const toml::node* values = &v;
      if (const toml::table* inner = v.as_table()) {
        const toml::node* negated = inner->get("not");
        if (negated == nullptr || inner->size() != 1) {
          return Fail(v, fmt::format("'{}' {}: a table here is {{ not = value or [values] }}", what, key));
        }
        c.negated = true;
        values = negated;
      }
      auto one = [&](const toml::node& e) -> bool {
        if (const auto* s = e.as_string()) {
          c.values.push_back({ValueKind::kString, s->get()});
        } else if (const auto* i = e.as_integer()) {
          c.values.push_back({ValueKind::kString, std::to_string(i->get())});
        } else if (const auto* b = e.as_boolean()) {
          c.values.push_back({b->get() ? ValueKind::kTrue : ValueKind::kFalse, b->get() ? "true" : "false"});
        } else {
          return false;
        }
        return true;
      };
      if (const toml::array* a = values->as_array()) {
        if (a->empty()) return Fail(*values, fmt::format("'{}' {}: give at least one value", what, key));
        for (const toml::node& e : *a) {
          if (!one(e)) return Fail(e, fmt::format("'{}' {}: each value is a string, an integer or a boolean", what, key));
        }
      } else if (!one(*values)) {
        return Fail(*values, fmt::format("'{}' {}: a string, an integer, a boolean, an array of them or "
                                         "{{ not = ... }}", what, key));
      }
      out.push_back(std::move(c));
    }
    return out;
  }

  // path = "a.b" or field = "column": exactly one.
  Result<FieldSource> Source(const toml::table& t, const char* where, bool required) const {
    Result<std::string> path = String(t, "path", where, false);
    if (!path.ok()) return path.status();
    Result<std::string> field = String(t, "field", where, false);
    if (!field.ok()) return field.status();
    if (t.get("path") && t.get("field")) return Fail(t, fmt::format("{} has both 'path' and 'field': give one", where));
    if (t.get("path")) {
      size_t start = 0;
      while (true) {
        const size_t dot = path->find('.', start);
        if ((dot == std::string::npos ? path->size() : dot) == start) {
          return Fail(*t.get("path"), fmt::format("path '{}' has an empty part", *path));
        }
        if (dot == std::string::npos) break;
        start = dot + 1;
      }
      return FieldSource{false, *path};
    }
    if (t.get("field")) {
      if (!IsPlainIdentifier(*field)) {
        return Fail(*t.get("field"), fmt::format("field '{}' is not a plain column name", *field));
      }
      return FieldSource{true, *field};
    }
    if (required) return Fail(t, fmt::format("{} needs a 'path' (into the payload) or a 'field' (a column)", where));
    return FieldSource{};
  }

  Result<Bucket> BucketOf(const toml::table& t) const {
    Result<std::string> b = String(t, "bucket", "a key", false);
    if (!b.ok()) return b.status();
    if (!t.get("bucket")) return Bucket::kNone;
    static const std::pair<const char*, Bucket> kBuckets[] = {
        {"minute", Bucket::kMinute}, {"hour", Bucket::kHour},   {"day", Bucket::kDay},
        {"week", Bucket::kWeek},     {"month", Bucket::kMonth}, {"year", Bucket::kYear}};
    for (const auto& [name, bucket] : kBuckets) {
      if (*b == name) return bucket;
    }
    return Fail(*t.get("bucket"), fmt::format("unknown bucket '{}' (minute, hour, day, week, month or year)", *b));
  }

  Status Column(const toml::table& t, const std::string& name, std::vector<std::string>& seen) const {
    if (!IsPlainIdentifier(name)) {
      return Fail(t, fmt::format("column '{}' is not a plain identifier (letters, digits, _; at most 64)", name));
    }
    if (std::find(seen.begin(), seen.end(), Lower(name)) != seen.end()) {
      return Fail(t, fmt::format("column '{}' is declared twice", name));
    }
    seen.push_back(Lower(name));
    return Status::Ok();
  }

  Result<ModelPlan> Model(const toml::table& t) {
    ModelPlan plan;
    plan.origin = fmt::format("{}:{}", file_, t.source().begin.line);
    if (Status s = Unknown(t, {"name", "events", "where", "key", "values", "hand_over", "handlers"}, "a read_model");
        !s.ok()) {
      return s;
    }
    Result<std::string> name = Name(t);
    if (!name.ok()) return name.status();
    plan.name = std::move(*name);
    if (const toml::node* handlers = t.get("handlers")) {
      if (Status s = Handlers(t, *handlers, plan); !s.ok()) return s;
      Result<std::string> hand_over = HandOver(t);
      if (!hand_over.ok()) return hand_over.status();
      plan.hand_over = std::move(*hand_over);
      return plan;
    }
    if (Status s = Events(t, plan); !s.ok()) return s;
    Result<std::string> hand_over = HandOver(t);
    if (!hand_over.ok()) return hand_over.status();
    plan.hand_over = std::move(*hand_over);
    // Every column declared so far, lowercased: keys first, then values.
    std::vector<std::string> columns;
    if (Status s = Keys(t, plan, columns); !s.ok()) return s;
    if (Status s = Values(t, plan, columns); !s.ok()) return s;
    if (Status s = Reserved(t, plan, columns); !s.ok()) return s;
    return plan;
  }

  // The read model's name, which is also its table's: not the event table's, nor one like
  // rewind's own tables, nor a compiled read model's.
  Result<std::string> Name(const toml::table& t) const {
    Result<std::string> name = String(t, "name", "a read_model", true);
    if (!name.ok()) return name.status();
    const toml::node& name_node = *t.get("name");
    // Room for the longest suffix rewind adds (table_admin::kVerifySuffix, 15 bytes) within 64.
    if (!IsPlainIdentifier(*name, 48)) {
      return Fail(name_node, fmt::format("read model name '{}' is not a plain identifier of at most 48 "
                                         "characters (letters, digits, _): it is also the table name", *name));
    }
    if (Lower(*name) == Lower(events_table_)) {
      return Fail(name_node, fmt::format("read model name '{}' is the event table's", *name));
    }
    if (const char* own = table_admin::OwnSuffixOf(*name)) {
      return Fail(name_node, fmt::format("read model name '{}' ends like the tables rewind makes beside a "
                                         "live table ({}): choose another name",
                                         *name, own));
    }
    if (Lower(*name).rfind("rewind_", 0) == 0) {
      return Fail(name_node, fmt::format("read model name '{}' is reserved: rewind's own tables start with rewind_",
                                         *name));
    }
    for (const ProjectorInfo& info : AllProjectors()) {
      if (Lower(info.name) == Lower(*name)) {
        return Fail(name_node, fmt::format("read model name '{}' is a compiled read model's", *name));
      }
    }
    return name;
  }

  // events = [...] and where = {...}: which events the read model reads.
  Status Events(const toml::table& t, ModelPlan& plan) const {
    const toml::node* events = t.get("events");
    if (events == nullptr) return Fail(t, "a read_model needs 'events' (the event classes it reads)");
    Result<std::vector<std::string>> classes = Strings(*events, "events");
    if (!classes.ok()) return classes.status();
    plan.events = std::move(*classes);
    return Where(t, plan);
  }

  // where = {...}: its conditions, and those the server also filters on.
  Status Where(const toml::table& t, ModelPlan& plan) const {
    const toml::node* where = t.get("where");
    if (where == nullptr) return Status::Ok();
    Result<std::vector<Condition>> w = Conditions(*where, "where");
    if (!w.ok()) return w.status();
    plan.conditions = std::move(*w);
    for (const Condition& c : plan.conditions) {  // columns equal to texts: the server's filter too
      if (!c.SentToServer()) continue;
      WherePlan p;
      p.column = c.source.name;
      for (const Condition::Match& m : c.values) p.values.push_back(m.text);
      plan.where.push_back(std::move(p));
    }
    return Status::Ok();
  }

  // handlers = [{ on = 'X', sql = "..." }, ...]: the application's projector as statements,
  // instead of keys and values. The events read are the handlers' classes (an `events`, if
  // given, must name each of them and no other); a `where` applies as to any read model.
  Status Handlers(const toml::table& t, const toml::node& node, ModelPlan& plan) const {
    for (const char* other : {"key", "values"}) {
      if (const toml::node* n = t.get(other)) {
        return Fail(*n, fmt::format("a read model of handlers takes no '{}': its statements write its table", other));
      }
    }
    const toml::array* list = node.as_array();
    if (list == nullptr || list->empty()) {
      return Fail(node, "'handlers' must be a non-empty array of { on = 'EventClass', sql = \"...\" }");
    }
    for (const toml::node& hn : *list) {
      const toml::table* h = hn.as_table();
      if (h == nullptr) return Fail(hn, "each handler must be a table: { on = 'EventClass', sql = \"...\" }");
      if (Status s = Unknown(*h, {"on", "sql"}, "a handler"); !s.ok()) return s;
      Result<std::string> on = String(*h, "on", "a handler", true);
      if (!on.ok()) return on.status();
      Result<std::string> sql = String(*h, "sql", "a handler", true);
      if (!sql.ok()) return sql.status();
      HandlerPlan handler;
      handler.on = std::move(*on);
      handler.sql = std::move(*sql);
      handler.line = h->source().begin.line;
      if (std::string why = ParseHandlerSql(handler.sql, handler.prepared, handler.params); !why.empty()) {
        return Fail(*h->get("sql"), fmt::format("handler on '{}': {}", handler.on, why));
      }
      if (handler.prepared.find(kTablePlaceholder) == std::string::npos) {
        return Fail(*h->get("sql"), fmt::format("handler on '{}': its statement names no {{table}} (the read model's "
                                                "table: the shadow table during a rebuild, the live one after)",
                                                handler.on));
      }
      if (std::find(plan.events.begin(), plan.events.end(), handler.on) == plan.events.end()) {
        plan.events.push_back(handler.on);
      }
      plan.handlers.push_back(std::move(handler));
    }
    if (const toml::node* events = t.get("events")) {
      Result<std::vector<std::string>> classes = Strings(*events, "events");
      if (!classes.ok()) return classes.status();
      std::vector<std::string> a = *classes, b = plan.events;
      std::sort(a.begin(), a.end());
      std::sort(b.begin(), b.end());
      if (a != b) return Fail(*events, "'events' of a read model of handlers must be its handlers' classes (or left out)");
    }
    return Where(t, plan);
  }

  // hand_over = "...": the application's statement, empty when none is declared.
  Result<std::string> HandOver(const toml::table& t) const {
    const toml::node* hand_over = t.get("hand_over");
    if (hand_over == nullptr) return std::string();
    Result<std::string> sql = String(t, "hand_over", "a read_model", true);
    if (!sql.ok()) return sql.status();
    if (sql->find('?') == std::string::npos) {
      return Fail(*hand_over, "'hand_over' is a statement whose '?' is the last event id applied, e.g. "
                              "\"UPDATE bookmarks SET position = ? WHERE bookmark = 'balances'\"");
    }
    return sql;
  }

  Status Keys(const toml::table& t, ModelPlan& plan, std::vector<std::string>& columns) const {
    const toml::node* keys = t.get("key");
    if (keys == nullptr) return Fail(t, "a read_model needs 'key' (one or more columns)");
    const toml::array* key_list = keys->as_array();
    if (key_list == nullptr || key_list->empty()) return Fail(*keys, "'key' must be a non-empty array of tables");
    for (const toml::node& kn : *key_list) {
      Result<KeyPlan> key = Key(kn, columns);
      if (!key.ok()) return key.status();
      plan.keys.push_back(std::move(*key));
    }
    return Status::Ok();
  }

  Result<KeyPlan> Key(const toml::node& kn, std::vector<std::string>& columns) const {
    const toml::table* k = kn.as_table();
    if (k == nullptr) return Fail(kn, "each key must be a table: { column = ..., path = ... }");
    if (Status s = Unknown(*k, {"column", "path", "field", "bucket", "type", "collation", "strict"}, "a key"); !s.ok()) return s;
    KeyPlan key;
    Result<std::string> col = String(*k, "column", "a key", true);
    if (!col.ok()) return col.status();
    key.column = *col;
    if (Status s = Column(*k, key.column, columns); !s.ok()) return s;
    Result<FieldSource> src = Source(*k, "a key", true);
    if (!src.ok()) return src.status();
    key.source = *src;
    Result<Bucket> bucket = BucketOf(*k);
    if (!bucket.ok()) return bucket.status();
    key.bucket = *bucket;
    if (Status s = types_.KeyTypeOf(*k, key); !s.ok()) return s;
    if (Status s = types_.CollationOf(*k, key.column, key.storage); !s.ok()) return s;
    if (const toml::node* sn = k->get("strict")) {
      const auto* b = sn->as_boolean();
      if (b == nullptr) return Fail(*sn, "'strict' must be true or false");
      if (key.type != ValueType::kText) return Fail(*sn, "'strict' applies to text keys only");
      key.strict = b->get();
    }
    if (Status s = types_.BucketFits(*k, key); !s.ok()) return s;
    return key;
  }

  Status Values(const toml::table& t, ModelPlan& plan, std::vector<std::string>& columns) const {
    const toml::node* values = t.get("values");
    if (values == nullptr) return Status::Ok();
    const toml::array* value_list = values->as_array();
    if (value_list == nullptr) return Fail(*values, "'values' must be an array of tables");
    for (const toml::node& vn : *value_list) {
      const toml::table* v = vn.as_table();
      if (v == nullptr) return Fail(vn, "each value must be a table: { column = ..., op = ... }");
      if (const toml::node* op = v->get("op"); op != nullptr && op->as_string() && op->as_string()->get() == "delete") {
        Result<RemovePlan> removal = Removal(*v, plan);
        if (!removal.ok()) return removal.status();
        plan.deletes.push_back(std::move(*removal));
        continue;
      }
      Result<ValuePlan> value = Value(*v, plan, columns);
      if (!value.ok()) return value.status();
      plan.values.push_back(std::move(*value));
    }
    return Status::Ok();
  }

  // { op = "delete", on = [...], if = {...} }: the events that remove their key's row.
  Result<RemovePlan> Removal(const toml::table& v, const ModelPlan& plan) const {
    if (Status s = Unknown(v, {"op", "on", "if"}, "a delete"); !s.ok()) return s;
    const toml::node* on = v.get("on");
    if (on == nullptr) return Fail(v, "op = \"delete\" needs 'on': the events that remove their key's row");
    RemovePlan removal;
    Result<std::vector<std::string>> classes = Strings(*on, "on");
    if (!classes.ok()) return classes.status();
    for (const std::string& c : *classes) {
      if (std::find(plan.events.begin(), plan.events.end(), c) == plan.events.end()) {
        return Fail(*on, fmt::format("a delete's 'on' names '{}', which is not in the read model's events", c));
      }
    }
    removal.on = std::move(*classes);
    if (const toml::node* when = v.get("if")) {
      Result<std::vector<Condition>> c = Conditions(*when, "if");
      if (!c.ok()) return c.status();
      removal.when = std::move(*c);
    }
    removal.line = v.source().begin.line;
    return removal;
  }

  // Columns rewind keeps beside the declared ones: no declared column may take their names.
  Status Reserved(const toml::table& t, const ModelPlan& plan, const std::vector<std::string>& columns) const {
    auto declared = [&](const std::string& column) {
      return std::find(columns.begin(), columns.end(), Lower(column)) != columns.end();
    };
    // first and last keep their event's id in "<column>__id" (stages/db/table_schema.h): rewind's too.
    for (const ValuePlan& v : plan.values) {
      if (v.op != Op::kFirst && v.op != Op::kLast) continue;
      const std::string id = v.column + "__id";
      if (id.size() > kMaxIdentifierBytes) {
        return Fail(t, fmt::format("column '{}' ({}) is longer than 60 characters: rewind stores the id of its "
                                   "event beside it, in '{}'", v.column, OpName(v.op), id));
      }
      if (declared(id)) {
        return Fail(DeclarationOf(t, id), fmt::format("column '{}' is reserved: rewind stores the id of the event of "
                                                      "'{}' ({}) there", id, v.column, OpName(v.op)));
      }
    }
    // The storage column of text keys is rewind's: a declared column may not take its name.
    std::string hash;
    for (const KeyPlan& k : plan.keys) {
      if (k.type == ValueType::kText) hash += (hash.empty() ? "" : "_") + k.column;
    }
    if (hash.empty()) return Status::Ok();
    hash += "_hash";
    if (declared(hash)) {
      return Fail(DeclarationOf(t, hash), fmt::format("column '{}' is reserved: rewind stores the hash of the text "
                                                      "key there", hash));
    }
    return Status::Ok();
  }

  // The declaration of a column, for a message at its own line (the read model's if none).
  static const toml::node& DeclarationOf(const toml::table& t, const std::string& column) {
    for (const char* list : {"values", "key"}) {
      const toml::array* a = t.get(list) != nullptr ? t.get(list)->as_array() : nullptr;
      if (a == nullptr) continue;
      for (const toml::node& n : *a) {
        const toml::table* entry = n.as_table();
        const toml::node* c = entry != nullptr ? entry->get("column") : nullptr;
        if (c != nullptr && c->as_string() != nullptr && Lower(c->as_string()->get()) == Lower(column)) return n;
      }
    }
    return t;
  }

  Result<ValuePlan> Value(const toml::table& v, const ModelPlan& plan, std::vector<std::string>& columns) const {
    if (Status s = Unknown(v, {"column", "op", "path", "field", "value", "type", "collation", "on", "map", "if"}, "a value"); !s.ok()) {
      return s;
    }
    ValuePlan value;
    Result<std::string> col = String(v, "column", "a value", true);
    if (!col.ok()) return col.status();
    value.column = *col;
    // A column declared again is another contribution to it (checked below, once typed).
    const ValuePlan* earlier = Earlier(plan, value.column);
    if (earlier == nullptr) {
      if (Status s = Column(v, value.column, columns); !s.ok()) return s;
    }
    Result<Op> op = OpOf(v);
    if (!op.ok()) return op.status();
    value.op = *op;
    if (Status s = InputOf(v, value); !s.ok()) return s;
    if (Status s = OnOf(v, plan, value); !s.ok()) return s;
    if (const toml::node* when = v.get("if")) {
      Result<std::vector<Condition>> c = Conditions(*when, "if");
      if (!c.ok()) return c.status();
      value.when = std::move(*c);
    }
    if (Status s = types_.ValueTypeOf(v, value); !s.ok()) return s;
    if (Status s = types_.CollationOf(v, value.column, value.storage); !s.ok()) return s;
    if (Status s = types_.ConstantFits(v, value); !s.ok()) return s;
    if (earlier != nullptr) {
      if (Status s = Contributes(v, *earlier, value); !s.ok()) return s;
      value.column = earlier->column;  // one column, spelled as first declared
    }
    value.line = v.source().begin.line;
    return value;
  }

  // The first value declared with `column` (case-insensitive), if any.
  static const ValuePlan* Earlier(const ModelPlan& plan, const std::string& column) {
    for (const ValuePlan& e : plan.values) {
      if (Lower(e.column) == Lower(column)) return &e;
    }
    return nullptr;
  }

  Result<Op> OpOf(const toml::table& v) const {
    Result<std::string> op = String(v, "op", "a value", true);
    if (!op.ok()) return op.status();
    static const std::pair<const char*, Op> kOps[] = {{"count", Op::kCount}, {"sum", Op::kSum},
                                                      {"subtract", Op::kSubtract}, {"min", Op::kMin},
                                                      {"max", Op::kMax},     {"first", Op::kFirst},
                                                      {"last", Op::kLast}};
    for (const auto& [name, o] : kOps) {
      if (*op == name) return o;
    }
    return Fail(*v.get("op"), fmt::format("unknown op '{}' (count, sum, subtract, min, max, first, last or delete)", *op));
  }

  // What a value takes from each event: a path or a field (its texts mapped or not), a
  // constant, or nothing (a count), as its op needs.
  Status InputOf(const toml::table& v, ValuePlan& value) const {
    Result<FieldSource> src = Source(v, "a value", false);
    if (!src.ok()) return src.status();
    value.source = *src;
    if (Status s = ConstantOf(v, value); !s.ok()) return s;
    if (Status s = MapOf(v, value); !s.ok()) return s;
    if (value.op == Op::kCount) {
      if (!value.source.name.empty() || value.has_constant) {
        return Fail(v, fmt::format("value '{}': op = \"count\" counts events and takes no path, field or value",
                                   value.column));
      }
    } else if (value.source.name.empty() && !value.has_constant) {
      return Fail(v, fmt::format("value '{}': op = \"{}\" needs a 'path', a 'field' or a constant 'value'",
                                 value.column, OpName(value.op)));
    }
    return Status::Ok();
  }

  // value = ...: kept as written, checked against the value's type once that is known.
  Status ConstantOf(const toml::table& v, ValuePlan& value) const {
    const toml::node* c = v.get("value");
    if (c == nullptr) return Status::Ok();
    if (!value.source.name.empty()) return Fail(*c, "a value takes 'path', 'field' or 'value', only one");
    value.has_constant = true;
    if (const auto* s = c->as_string()) {
      value.constant = s->get();
    } else if (const auto* i = c->as_integer()) {
      value.constant = std::to_string(i->get());
    } else if (const auto* f = c->as_floating_point()) {
      value.constant = fmt::format("{}", f->get());
    } else if (const auto* b = c->as_boolean()) {
      value.constant = b->get() ? "true" : "false";
    } else {
      return Fail(*c, "'value' must be a string, a number or a boolean");
    }
    return Status::Ok();
  }

  Status MapOf(const toml::table& v, ValuePlan& value) const {
    const toml::node* m = v.get("map");
    if (m == nullptr) return Status::Ok();
    const toml::table* table = m->as_table();
    if (table == nullptr || table->empty() || value.source.name.empty()) {
      return Fail(*m, fmt::format("value '{}': 'map' is a table of the field's texts to the values stored, "
                                  "e.g. map = {{ O = \"open\", C = \"closed\" }}, on a value with a path or field",
                                  value.column));
    }
    for (const auto& [from, to] : *table) {
      const auto* text = to.as_string();
      const auto* number = to.as_integer();
      if (text == nullptr && number == nullptr) {
        return Fail(to, fmt::format("value '{}': map's '{}' must be a string or an integer", value.column, from.str()));
      }
      value.map.emplace_back(std::string(from.str()), text ? text->get() : std::to_string(number->get()));
    }
    return Status::Ok();
  }

  // on = [...]: some of the read model's events; a constant says which.
  Status OnOf(const toml::table& v, const ModelPlan& plan, ValuePlan& value) const {
    if (const toml::node* on = v.get("on")) {
      Result<std::vector<std::string>> classes = Strings(*on, "on");
      if (!classes.ok()) return classes.status();
      for (const std::string& c : *classes) {
        if (std::find(plan.events.begin(), plan.events.end(), c) == plan.events.end()) {
          return Fail(*on, fmt::format("value '{}': 'on' names '{}', which is not in the read model's events",
                                       value.column, c));
        }
      }
      value.on = std::move(*classes);
    } else if (value.has_constant) {
      return Fail(v, fmt::format("value '{}' is a constant: say which events it applies to with 'on'", value.column));
    }
    return Status::Ok();
  }

  // Every contribution to one column adds into it (sums and subtractions), or sets it by
  // the event's id (all last, or all first); of one type.
  Status Contributes(const toml::table& v, const ValuePlan& earlier, const ValuePlan& value) const {
    auto adds = [](Op o) { return o == Op::kSum || o == Op::kSubtract; };
    const bool same_kind = (adds(earlier.op) && adds(value.op)) ||
                           (earlier.op == value.op && (value.op == Op::kLast || value.op == Op::kFirst));
    const std::string first_type = DeclaredTypeName(earlier.type, earlier.precision, earlier.scale, earlier.storage);
    const std::string this_type = DeclaredTypeName(value.type, value.precision, value.scale, value.storage);
    if (!same_kind || first_type != this_type) {
      return Fail(v, fmt::format("column '{}' is declared twice ({} {} here, {} {} at line {}): a "
                                 "column takes several contributions only when each is op = \"sum\" or "
                                 "\"subtract\", or each \"last\", or each \"first\", of the same type; "
                                 "otherwise give it another name",
                                 value.column, OpName(value.op), this_type, OpName(earlier.op), first_type,
                                 earlier.line));
    }
    return Status::Ok();
  }

  const Types types_;
  const std::string events_table_;
};

}  // namespace

Result<std::vector<ModelPlan>> ParseModels(std::string_view text, const std::string& file,
                                           const std::string& events_table) {
  return Parser(file, events_table).Parse(text);
}

Result<std::vector<ModelPlan>> LoadModels(const std::string& file, const std::string& events_table) {
  Result<CarefulFile> read = ReadCarefully(file, "models file");
  if (!read.ok()) return read.status();
  return ParseModels(read->text, file, events_table);
}

}  // namespace rw
