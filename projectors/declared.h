// Declared read models: one generic projector driven by a plan, for the read models a
// user declares in a TOML file (config/models.h parses and checks it) instead of C++.
//
// The shape: filter events by class -> a key from fields (optionally a time bucket) ->
// fold values per key (count, sum, subtract, min, max, first, last) -> one row per key. Types never
// depend on data: the plan fixes every column's type before the first event.
//
// Thread safety: none (see projector.h); a plan is an immutable value.
#pragma once

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "projectors/event_record.h"
#include "projectors/projector.h"

namespace rw {

enum class Bucket : uint8_t { kNone, kMinute, kHour, kDay, kWeek, kMonth, kYear };
// kSubtract is a sum's negative: a column's contributions may mix kSum and kSubtract (a
// balance that deposits add to and withdrawals take from).
enum class Op : uint8_t { kCount, kSum, kMin, kMax, kFirst, kLast, kSubtract };
enum class ValueType : uint8_t { kBigInt, kDecimal, kDouble, kText, kDate, kDateTime };

struct KeyPlan {
  std::string column;
  FieldSource source;
  Bucket bucket = Bucket::kNone;
  ValueType type = ValueType::kText;  // kBigInt, kText, kDate or kDateTime
  // Text keys only: take JSON strings alone (a number is then a failure, as in the
  // compiled URL read models) instead of a number's literal text.
  bool strict = false;
  Storage storage;  // a declared SQL type (varchar(N), int, ...): the column's, and what values fit
};

// One contribution to a value column. Several with one column (case-insensitive) are one
// column that each adds into (all kSum or kSubtract), or that the event of the highest
// (all kLast) or lowest (all kFirst) id of any of them sets; of one type (config/models.cc
// checks).
// A condition on an event (a `where` entry on the payload or negated, a value's `if`): the
// text of its field (a payload path or an event-table column) is one of `values`, byte for
// byte, or with `negated` none of them. A string matches its unescaped bytes, an integer a
// JSON number or string written so, `true` / `false` a JSON boolean only. A value that is
// missing, null, an object or an array is none of them (so a negated condition holds).
struct Condition {
  struct Match {
    ValueKind kind = ValueKind::kString;  // kString (a text), kTrue or kFalse
    std::string text;
    friend bool operator==(const Match&, const Match&) = default;
    friend auto operator<=>(const Match&, const Match&) = default;
  };
  FieldSource source;
  std::vector<Match> values;
  bool negated = false;
  // Whether the value `v` passes it.
  bool Holds(const FieldValue& v) const {
    bool found = false;
    for (const Match& m : values) {
      if (m.kind == ValueKind::kString ? (v.kind == ValueKind::kString || v.kind == ValueKind::kNumber) && v.text() == m.text
                                       : v.kind == m.kind) {
        found = true;
        break;
      }
    }
    return found != negated;
  }
  // Whether the reader also sends it to the server with the type filter (ModelPlan::where):
  // a column equal to texts.
  bool SentToServer() const {
    return source.column && !negated &&
           std::all_of(values.begin(), values.end(), [](const Match& m) { return m.kind == ValueKind::kString; });
  }
};

// Whether every one of `conditions` holds for `e`, each reading its field at `slots[i]`.
inline bool AllHold(const std::vector<Condition>& conditions, const std::vector<uint32_t>& slots,
                    const EventRecords& records, const EventRecord& e) {
  for (size_t i = 0; i < conditions.size(); ++i) {
    if (!conditions[i].Holds(records.value(e, slots[i]))) return false;
  }
  return true;
}

struct ValuePlan {
  std::string column;
  Op op = Op::kCount;
  FieldSource source;            // empty name: none (count, or a constant)
  bool has_constant = false;
  std::string constant;          // `value`, as written
  ValueType type = ValueType::kBigInt;
  uint8_t precision = 0, scale = 0;  // kDecimal
  Storage storage;               // a declared SQL type (varchar(N), int, ...), if any
  std::vector<std::string> on;   // the classes it applies to (empty: every class of the model)
  // `map`: a field's texts to the values stored ({ O = "open", C = "closed" }); a text not
  // in it makes the event a failure. Empty: the field's value as it is.
  std::vector<std::pair<std::string, std::string>> map;
  // `if`: the conditions (all must hold) under which an event contributes to it; otherwise
  // the event leaves it untouched.
  std::vector<Condition> when;
  uint32_t line = 0;             // where it is declared, for messages (not part of the version)
};

// An equality on a column of the event table (`where = { stream = "accounts" }`): an event
// counts only when the column's text is one of `values`, byte for byte. The reader also
// sends it to the server with the type filter (stages/flow/reader.h), so that the payloads
// of other events stay there; the server's equality (its collation) only narrows what comes.
using WherePlan = ColumnIn;

// A `delete` among the values (`{ op = "delete", on = [...] }`): an event of those classes
// (for which its `if` holds) removes its key's row; a later event of the key starts the row
// again from the table's defaults. Such an event contributes to no value.
struct RemovePlan {
  std::vector<std::string> on;
  std::vector<Condition> when;
  uint32_t line = 0;
};

// A handler: the statement the application's projector runs for each event of one class
// (`{ on = 'X', sql = "UPDATE {table} SET b = b + :amount WHERE uuid = :accountUuid" }`).
// `sql` is as written; `prepared` has each parameter as `?` (`{table}` kept, replaced by the
// table written when a flush is built); `params` are what each `?` binds, in order.
struct HandlerParam {
  enum class Kind : uint8_t { kField, kEventId };  // a payload path or an event-table column; the event's id
  Kind kind = Kind::kField;
  FieldSource source;  // kField
  std::string written;  // as written, e.g. ":account.id", ":@created_at"
};
struct HandlerPlan {
  std::string on;
  std::string sql, prepared;
  std::vector<HandlerParam> params;
  uint32_t line = 0;  // where it is declared, for messages (not part of the version)
};

// `sql` with each `:name` parameter as `?` (outside quotes, backquotes and comments):
// `:a.b` a payload path, `:@column` an event-table column, `:@id` the event's id. "" when it
// reads, else why not (an empty name, a `?` written, no statement of INSERT, UPDATE, DELETE or
// REPLACE first).
std::string ParseHandlerSql(std::string_view sql, std::string& prepared, std::vector<HandlerParam>& params);

struct ModelPlan {
  std::string name;                 // the read model and its table
  std::vector<std::string> events;  // classes, compared byte for byte
  // `where`: its conditions, all of which must hold (empty: every event of its classes), and
  // those of them the reader also sends to the server (Condition::SentToServer).
  std::vector<Condition> conditions;
  std::vector<WherePlan> where;
  std::vector<KeyPlan> keys;
  std::vector<ValuePlan> values;
  std::vector<RemovePlan> deletes;
  // The application's projector as statements (instead of keys and values): its handlers,
  // in the order declared; the events read are their classes.
  std::vector<HandlerPlan> handlers;
  // A statement of the application's run at the swap, its one `?` the last event id applied
  // (Projector::hand_over); not part of the version: it changes no row of the read model.
  std::string hand_over;
  std::string origin;               // "file:line" of its declaration, for messages and `list`
};

// The plan in a canonical text form (every default spelled out, no file positions):
// equal plans, however written, have equal forms. Its hash is the declaration's version.
std::string CanonicalForm(const ModelPlan& plan);
std::string PlanVersion(const ModelPlan& plan);
const char* BucketName(Bucket b);
const char* OpName(Op op);
std::string ValueTypeName(ValueType t, uint8_t precision = 0, uint8_t scale = 0);
// A declared column's type as its declaration names it: the declared SQL type (lower case,
// with its collation) when there is one, else ValueTypeName.
std::string DeclaredTypeName(ValueType t, uint8_t precision, uint8_t scale, const Storage& storage);
// Whether `text` (a text value) or `n` (an integer) fits `storage`: "" when it does, else why
// (e.g. "is 70 characters, longer than varchar(64)").
std::string FitsStorage(const Storage& storage, std::string_view text);
std::string FitsStorage(const Storage& storage, int64_t n);
// The type a key has without an explicit `type`: date for day..year, datetime for minute
// and hour, text otherwise.
ValueType DefaultKeyType(Bucket b);

// Exact decimal arithmetic for sums: a literal ("12.5", "-3", "1e2", a numeric string's
// bytes) scaled to `scale` decimals as an integer. False when it is not a number, has more
// (non-zero) decimals than `scale`, or needs more than `precision` digits.
bool ParseScaled(std::string_view literal, uint8_t precision, uint8_t scale, __int128& out);
// The literal of a scaled integer, e.g. (1250, 2) -> "12.50".
std::string FormatScaled(__int128 value, uint8_t scale);

// Whether a plan runs on the counting fast path: one bigint count of every event of its
// classes, keyed by one column (any type), or by a text and a date. Its rows and failures
// are the general path's; its state is the compiled counters' (projectors/counters.h): the
// counts in a BucketCounts or a FlatMap, each distinct text interned once per flush, no
// key bytes built per event and no per-value state.
bool CountsOnFastPath(const ModelPlan& plan);

// The distance between neighbouring buckets of a key, in the unit of its values (days for a
// date, microseconds since the epoch for a date-time): what keeps a counter's buckets dense
// (projectors/bucket_counts.h).
int64_t KeyBucketStride(const KeyPlan& key);

// A read model of keys and values, or one of handlers (MakeHandlersProjector).
std::unique_ptr<Projector> MakeDeclaredProjector(ModelPlan plan);
std::unique_ptr<Projector> MakeHandlersProjector(ModelPlan plan);

}  // namespace rw
