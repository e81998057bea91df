// The declared read models file: every mistake named with its line, the version a hash of
// the parsed declaration, exact decimal sums, and the generic projector's folds on records
// built here by hand.
#include <gtest/gtest.h>

#include <fmt/core.h>

#include <sys/stat.h>

#include <cstdio>
#include <deque>
#include <fstream>

#include "config/models.h"
#include "projectors/declared.h"
#include "text_sink.h"

namespace rw {
namespace {

Status Parse(const std::string& text) {
  Result<std::vector<ModelPlan>> r = ParseModels(text, "m.toml", "stored_events");
  return r.ok() ? Status::Ok() : r.status();
}

const char* const kGood = R"toml(
[[read_model]]
name   = "revenue"
events = ['Shop\Placed', 'Shop\Refunded']
key = [
  { column = "customer", path = "customer.id" },
  { column = "month",    path = "placedAt", bucket = "month" },
]
values = [
  { column = "orders",  op = "count", on = ['Shop\Placed'] },
  { column = "revenue", op = "sum", path = "amount", type = "decimal(18,2)", on = ['Shop\Placed'] },
  { column = "status",  op = "last", value = "refunded", on = ['Shop\Refunded'] },
]
)toml";

// `text` with the line that holds `from` replaced by `to`.
std::string With(const std::string& from, const std::string& to, std::string s = kGood) {
  const size_t at = s.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return s.replace(at, from.size(), to);
}

void ExpectError(const std::string& text, const std::string& where, const std::string& what) {
  Status s = Parse(text);
  EXPECT_FALSE(s.ok()) << text;
  EXPECT_NE(s.message().find(where), std::string::npos) << s.message();
  EXPECT_NE(s.message().find(what), std::string::npos) << s.message();
}

TEST(Models, AGoodFileParsesWithEveryDefaultSpelledOut) {
  Result<std::vector<ModelPlan>> r = ParseModels(kGood, "m.toml", "stored_events");
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->size(), 1u);
  const ModelPlan& p = (*r)[0];
  EXPECT_EQ(p.origin, "m.toml:2");
  EXPECT_EQ(p.keys[0].type, ValueType::kText);
  EXPECT_EQ(p.keys[1].type, ValueType::kDate);
  EXPECT_EQ(p.values[0].type, ValueType::kBigInt);
  EXPECT_EQ(p.values[1].precision, 18);
  EXPECT_EQ(p.values[2].type, ValueType::kText);
}

TEST(Models, DeclaredSqlTypesGiveTheColumnAndItsBounds) {
  std::string text = With("path = \"customer.id\"", "path = \"customer.id\", type = \"varchar(36)\", collation = \"utf8mb4_general_ci\"");
  text = With("on = ['Shop\\Placed'] },\n  { column = \"revenue\"", "on = ['Shop\\Placed'], type = \"smallint unsigned\" },\n  { column = \"revenue\"", text);
  auto r = ParseModels(text, "m.toml", "stored_events");
  ASSERT_TRUE(r.ok()) << r.status().message();
  const ModelPlan& p = (*r)[0];
  EXPECT_EQ(p.keys[0].type, ValueType::kText);
  EXPECT_EQ(p.keys[0].storage.sql, "VARCHAR(36)");
  EXPECT_EQ(p.keys[0].storage.length, 36u);
  EXPECT_EQ(p.keys[0].storage.collation, "utf8mb4_general_ci");
  EXPECT_EQ(p.values[0].type, ValueType::kBigInt);
  EXPECT_EQ(p.values[0].storage.sql, "SMALLINT UNSIGNED");
  EXPECT_EQ(p.values[0].storage.min, 0);
  EXPECT_EQ(p.values[0].storage.max, 65535);
  // A declared type is part of the version: another type, another table.
  EXPECT_NE(PlanVersion(p), PlanVersion((*ParseModels(kGood, "m.toml", "stored_events"))[0]));
  EXPECT_EQ(FitsStorage(p.keys[0].storage, std::string(36, 'x')), "");
  std::string accents(30, 'x');
  for (int i = 0; i < 6; ++i) accents += "\xc3\xa9";  // 36 characters, 42 bytes
  EXPECT_EQ(FitsStorage(p.keys[0].storage, accents), "") << "characters, not bytes";
  EXPECT_EQ(FitsStorage(p.keys[0].storage, std::string(37, 'x')), "is 37 characters, longer than varchar(36)");
  EXPECT_EQ(FitsStorage(p.values[0].storage, int64_t{65536}), "65536 is out of smallint unsigned (0..65535)");
}

TEST(Models, EveryMistakeIsNamedWithItsLine) {
  ExpectError("[[read_model]\nname = 1", "m.toml:1", "");                            // TOML syntax
  ExpectError(With("op = \"count\"", "op = \"avg\""), "m.toml:10", "unknown op 'avg'");
  ExpectError(With("bucket = \"month\"", "bucket = \"fortnight\""), "m.toml:7", "unknown bucket 'fortnight'");
  ExpectError(With("op = \"count\",", "op = \"count\", path = \"x\","), "m.toml:10", "takes no path");
  ExpectError(With("value = \"refunded\", on = ['Shop\\Refunded']", "value = \"refunded\""), "m.toml:12",
              "say which events it applies to with 'on'");
  ExpectError(With("column = \"revenue\"", "column = \"orders\""), "m.toml:11", "column 'orders' is declared twice");
  ExpectError(With("column = \"revenue\"", "column = \"Orders\""), "m.toml:11", "declared twice");
  // A reserved name is reported at the line of the column that takes it (once at line 2,
  // the read model's).
  ExpectError(With("column = \"status\"", "column = \"customer_hash\""), "m.toml:12", "'customer_hash' is reserved");
  ExpectError(With("column = \"status\"", "column = \"CUSTOMER_HASH\""), "m.toml:12", "is reserved");
  // first and last keep their event's id beside them, in <column>__id.
  ExpectError(With("column = \"orders\"", "column = \"status__id\""), "m.toml:10", "'status__id' is reserved");
  ExpectError(With("column = \"status\"", "column = \"" + std::string(61, 's') + "\""), "m.toml:2",
              "longer than 60 characters");
  ExpectError(With("name   = \"revenue\"", "name = \"stored_events\""), "m.toml:3", "the event table's");
  ExpectError(With("name   = \"revenue\"", "name = \"rewind_checkpoints\""), "m.toml:3", "reserved");
  ExpectError(With("name   = \"revenue\"", "name = \"visits_per_day\""), "m.toml:3", "compiled read model");
  // Names that end like the tables rewind makes beside a live table (#23).
  for (const char* name : {"foo__rewind_verify", "bar__rewind_new", "baz__rewind_old", "Baz__REWIND_OLD"}) {
    ExpectError(With("name   = \"revenue\"", fmt::format("name = \"{}\"", name)), "m.toml:3", "ends like");
  }
  ExpectError(With("name   = \"revenue\"", "name = \"rev-enue\""), "m.toml:3", "not a plain identifier");
  ExpectError(With("column = \"month\"", "column = \"mon th\""), "m.toml:7", "not a plain identifier");
  ExpectError(With("events = ['Shop\\Placed', 'Shop\\Refunded']", "events = []"), "m.toml:4", "is empty");
  ExpectError(With("type = \"decimal(18,2)\"", "type = \"money\""), "m.toml:11", "unknown type 'money'");
  ExpectError(With("type = \"decimal(18,2)\"", "type = \"decimal(40,2)\""), "m.toml:11", "38 digits");
  // Declared SQL types (issue 38, part 2): their bounds, a collation on text only, a constant that fits.
  ExpectError(With("type = \"decimal(18,2)\"", "type = \"varchar(0)\""), "m.toml:11", "unknown type 'varchar(0)'");
  ExpectError(With("type = \"decimal(18,2)\"", "type = \"char(256)\""), "m.toml:11", "unknown type 'char(256)'");
  ExpectError(With("type = \"decimal(18,2)\"", "type = \"varchar(16)\""), "m.toml:11",
              "a sum is bigint, decimal(p,s) or double, not 'varchar(16)'");
  ExpectError(With("type = \"decimal(18,2)\"", "type = \"int\", collation = \"utf8mb4_bin\""), "m.toml:11",
              "a collation is declared with type");
  ExpectError(With("value = \"refunded\",", "value = \"refunded\", type = \"char(4)\","), "m.toml:12",
              "the constant 'refunded' is 8 characters, longer than char(4)");
  ExpectError(With("op = \"sum\",", "op = \"sum\", colour = \"red\","), "m.toml:11", "unknown key 'colour'");
  ExpectError(With("name   = \"revenue\"", "name = \"revenue\"\nowner = \"me\""), "m.toml:4", "unknown key 'owner'");
  ExpectError(std::string(kGood) + "\n[settings]\nx = 1\n", "m.toml:", "unknown key 'settings'");
  ExpectError(With("on = ['Shop\\Placed'] },\n  { column = \"revenue\"", "on = ['Shop\\Other'] },\n  { column = \"revenue\""),
              "m.toml:10", "not in the read model's events");
  ExpectError(std::string(kGood) + kGood, "m.toml:15", "declared twice");
  ExpectError(With("path = \"customer.id\"", "path = \"customer..id\""), "m.toml:6", "empty part");
  ExpectError(With("bucket = \"month\"", "bucket = \"hour\", type = \"date\""), "m.toml:7", "needs type datetime");
  ExpectError(With("{ column = \"status\",  op = \"last\", value = \"refunded\", on = ['Shop\\Refunded'] },",
                   "{ column = \"status\",  op = \"sum\", value = \"abc\", on = ['Shop\\Refunded'] },"),
              "m.toml:12", "is not a decimal(38,10)");
}

// Issue 37 part 5: a models file every user may write is refused before it is parsed.
TEST(Models, AModelsFileEveryUserMayWriteIsRefused) {
  const std::string path = ::testing::TempDir() + "/rewind_models_writable.toml";
  std::ofstream(path) << kGood;
  ASSERT_EQ(::chmod(path.c_str(), 0646), 0);
  auto refused = LoadModels(path, "stored_events");
  ASSERT_FALSE(refused.ok()) << "a world-writable models file was read";
  EXPECT_NE(refused.status().message().find("models file '" + path + "' is writable by every user"),
            std::string::npos)
      << refused.status().message();
  ASSERT_EQ(::chmod(path.c_str(), 0644), 0);
  auto read = LoadModels(path, "stored_events");
  ASSERT_TRUE(read.ok()) << read.status().message();
  EXPECT_EQ(read->size(), 1u);
  std::remove(path.c_str());
}

TEST(Models, TheVersionIsAHashOfTheDeclarationNotOfTheBytes) {
  auto plans = [](const std::string& text) { return *ParseModels(text, "m.toml", "stored_events"); };
  const std::string version = PlanVersion(plans(kGood)[0]);
  // Reformatted, reordered classes, defaults written out: the same declaration.
  std::string same = With("events = ['Shop\\Placed', 'Shop\\Refunded']", "events = [ 'Shop\\Refunded',\n  'Shop\\Placed' ] # a comment");
  same = same.replace(same.find("op = \"count\","), 13, "op = \"count\", type = \"bigint\",");
  EXPECT_EQ(PlanVersion(plans(same)[0]), version);
  // A changed op or type is another version.
  EXPECT_NE(PlanVersion(plans(With("op = \"last\"", "op = \"first\""))[0]), version);
  EXPECT_NE(PlanVersion(plans(With("decimal(18,2)", "decimal(18,3)"))[0]), version);
}

// A delete (issue 53, part 1): among the values, with `on` (and an `if`), in a read model
// with a key; part of the declaration's version; written wrong, refused with its line.
TEST(Models, ADeleteTakesItsEventsAndConditionsAndIsRefusedWhenWrittenWrong) {
  const std::string with_delete =
      With("  { column = \"status\",  op = \"last\", value = \"refunded\", on = ['Shop\\Refunded'] },",
           "  { column = \"status\",  op = \"last\", value = \"refunded\", on = ['Shop\\Refunded'] },\n"
           "  { op = \"delete\", on = ['Shop\\Refunded'], if = { \"$.full\" = true } },");
  auto plans = ParseModels(with_delete, "m.toml", "stored_events");
  ASSERT_TRUE(plans.ok()) << plans.status().message();
  const ModelPlan& plan = (*plans)[0];
  ASSERT_EQ(plan.deletes.size(), 1u);
  EXPECT_EQ(plan.deletes[0].on, std::vector<std::string>{"Shop\\Refunded"});
  EXPECT_EQ(plan.deletes[0].when.size(), 1u);
  EXPECT_EQ(plan.deletes[0].line, 13u);
  EXPECT_EQ(plan.values.size(), 3u);  // a delete is no value column
  EXPECT_NE(PlanVersion(plan), PlanVersion((*ParseModels(kGood, "m.toml", "stored_events"))[0]));
  EXPECT_NE(CanonicalForm(plan).find("\ndelete"), std::string::npos);

  const auto model = [](const std::string& key, const std::string& removal) {
    return "[[read_model]]\nname = \"m\"\nevents = ['A', 'B']\n" + key +
           "values = [{ column = \"n\", op = \"count\" },\n  " + removal + "]\n";
  };
  const std::string key = "key = [{ column = \"k\", path = \"k\" }]\n";
  EXPECT_TRUE(Parse(model(key, "{ op = \"delete\", on = ['B'] }")).ok());
  const std::pair<std::string, std::string> bad[] = {
      {model(key, "{ op = \"delete\" }"), "m.toml:6: op = \"delete\" needs 'on'"},
      {model(key, "{ op = \"delete\", on = ['C'] }"), "names 'C', which is not in the read model's events"},
      {model(key, "{ op = \"delete\", on = ['B'], column = \"n\" }"), "m.toml:6"},
      {model(key, "{ op = \"delete\", on = ['B'], if = \"x\" }"), "'if' must be a table"},
  };
  for (const auto& [text, message] : bad) {
    const Status s = Parse(text);
    EXPECT_FALSE(s.ok()) << text;
    EXPECT_NE(s.message().find(message), std::string::npos) << s.message();
  }
}

// A handler's statement (issue 53, part 3): each :parameter outside quotes and comments a
// `?`, in order: a payload path, an event-table column (:@column), the event's id (:@id).
TEST(Models, AHandlersParametersAreFoundOutsideQuotesAndComments) {
  std::string prepared;
  std::vector<HandlerParam> params;
  ASSERT_EQ(ParseHandlerSql("UPDATE {table} SET a = :x.y, b = ':not', c = \":no\", `:col` = :@created_at, "
                            "d = @v := 1 /* :c */ WHERE id = :@id # :e\n AND k = :k_2;",
                            prepared, params),
            "");
  EXPECT_EQ(prepared, "UPDATE {table} SET a = ?, b = ':not', c = \":no\", `:col` = ?, d = @v := 1 /* :c */ WHERE "
                      "id = ? # :e\n AND k = ?");
  ASSERT_EQ(params.size(), 4u);
  EXPECT_EQ(params[0].source.name, "x.y");
  EXPECT_FALSE(params[0].source.column);
  EXPECT_EQ(params[1].source.name, "created_at");
  EXPECT_TRUE(params[1].source.column);
  EXPECT_EQ(params[2].kind, HandlerParam::Kind::kEventId);
  EXPECT_EQ(params[3].source.name, "k_2");
  EXPECT_NE(ParseHandlerSql("SELECT 1", prepared, params).find("begins with 'SELECT'"), std::string::npos);
  EXPECT_NE(ParseHandlerSql("DELETE FROM {table} WHERE a = ?", prepared, params).find("not '?'"), std::string::npos);
  EXPECT_NE(ParseHandlerSql("DELETE FROM {table} WHERE a = ':x", prepared, params).find("not closed"), std::string::npos);
  EXPECT_NE(ParseHandlerSql("DELETE FROM {table}; DROP TABLE t", prepared, params).find("one statement"),
            std::string::npos);
  EXPECT_NE(ParseHandlerSql("UPDATE {table} SET a = :@", prepared, params).find("names nothing"), std::string::npos);

  const auto model = [](const std::string& more) {
    return "[[read_model]]\nname = \"m\"\n" + more +
           "handlers = [{ on = 'A', sql = \"UPDATE {table} SET n = n + 1 WHERE k = :k\" }]\n";
  };
  auto plans = ParseModels(model(""), "m.toml", "stored_events");
  ASSERT_TRUE(plans.ok()) << plans.status().message();
  EXPECT_EQ((*plans)[0].events, std::vector<std::string>{"A"});
  EXPECT_EQ((*plans)[0].handlers[0].line, 3u);
  EXPECT_NE(CanonicalForm((*plans)[0]).find("handler 1:A"), std::string::npos);
  const std::pair<std::string, std::string> bad[] = {
      {model("key = [{ column = \"k\", path = \"k\" }]\n"), "takes no 'key'"},
      {model("events = ['B']\n"), "must be its handlers' classes"},
      {"[[read_model]]\nname = \"m\"\nhandlers = [{ on = 'A', sql = \"UPDATE t SET n = 1\" }]\n", "names no {table}"},
      {"[[read_model]]\nname = \"m\"\nhandlers = [{ on = 'A' }]\n", "m.toml:3"},
      {"[[read_model]]\nname = \"m\"\nhandlers = []\n", "non-empty array"},
  };
  for (const auto& [text, message] : bad) {
    const Status st = Parse(text);
    EXPECT_FALSE(st.ok()) << text;
    EXPECT_NE(st.message().find(message), std::string::npos) << st.message();
  }
}

TEST(Decimal, SumsAreExact) {
  __int128 v = 0, sum = 0;
  for (int i = 0; i < 10; ++i) {
    ASSERT_TRUE(ParseScaled("0.1", 38, 10, v));
    sum += v;
  }
  EXPECT_EQ(FormatScaled(sum, 10), "1.0000000000");
  ASSERT_TRUE(ParseScaled("-12.5", 18, 2, v));
  EXPECT_EQ(FormatScaled(v, 2), "-12.50");
  ASSERT_TRUE(ParseScaled("1e2", 18, 2, v));
  EXPECT_EQ(FormatScaled(v, 2), "100.00");
  ASSERT_TRUE(ParseScaled("1.250", 18, 2, v));  // a trailing zero is not a lost decimal
  EXPECT_EQ(FormatScaled(v, 2), "1.25");
  EXPECT_FALSE(ParseScaled("1.234", 18, 2, v));          // more decimals than the type holds
  EXPECT_FALSE(ParseScaled("12345678901234567", 18, 2, v));  // more digits than the type holds
  EXPECT_FALSE(ParseScaled("12a", 18, 2, v));
  EXPECT_FALSE(ParseScaled("", 18, 2, v));
  EXPECT_FALSE(ParseScaled(".", 18, 2, v));
  EXPECT_EQ(FormatScaled(5, 3), "0.005");
  EXPECT_EQ(FormatScaled(0, 0), "0");
}

using testing::TextSink;

TEST(DeclaredProjector, FoldsEveryOpAndRecordsWhatItCannotApply) {
  auto plans = ParseModels(R"toml(
[[read_model]]
name   = "m"
events = ['A', 'B']
key    = [{ column = "k", path = "k" }, { column = "week", path = "t", bucket = "week" }]
values = [
  { column = "n",     op = "count" },
  { column = "total", op = "sum", path = "x", type = "decimal(10,2)" },
  { column = "lo",    op = "min", path = "x", type = "double" },
  { column = "hi",    op = "max", path = "t", type = "datetime" },
  { column = "first", op = "first", path = "s" },
  { column = "last",  op = "last", path = "s" },
  { column = "b",     op = "count", on = ['B'] },
  { column = "flag",  op = "last", value = "seen-b", on = ['B'] },
]
)toml", "m.toml", "stored_events");
  ASSERT_TRUE(plans.ok()) << plans.status().message();
  std::unique_ptr<Projector> p = MakeDeclaredProjector((*plans)[0]);
  EventCatalog catalog;
  catalog.ClassIndex("Other");  // classes the projector does not read keep their indexes
  p->Bind(catalog);
  const uint16_t a = catalog.ClassIndex("A"), b = catalog.ClassIndex("B"), other = 0;
  const size_t width = catalog.fields().size();
  auto slot = [&](const char* path) { return catalog.Slot(FieldSource{false, path}); };
  std::vector<EventRecord> events;
  std::vector<FieldValue> values;
  auto add = [&](EventId id, uint16_t cls, std::map<std::string, FieldValue> fields) {
    events.push_back({id, cls, true, 0, static_cast<uint32_t>(values.size())});
    values.resize(values.size() + width);
    for (const auto& [path, v] : fields) values[events.back().first_value + slot(path.c_str())] = v;
  };
  using K = ValueKind;
  auto F = [](ValueKind kind, std::string_view text) {
    FieldValue v;
    v.kind = kind;
    v.set_text(text);
    return v;
  };
  add(1, a, {{"k", F(K::kString, "x")}, {"t", F(K::kString, "2024-01-03T10:00:00+02:00")}, {"x", F(K::kNumber, "0.1")},
             {"s", F(K::kString, "one")}});
  add(2, b, {{"k", F(K::kString, "x")}, {"t", F(K::kString, "2024-01-07 23:59:59")}, {"x", F(K::kString, "0.2")},
             {"s", F(K::kString, "two")}});
  add(3, a, {{"k", F(K::kNumber, "7")}, {"t", F(K::kString, "2024-01-08")}});                    // x, s missing: untouched
  add(4, a, {{"t", F(K::kString, "2024-01-08")}});                                                // no key: failure
  add(5, a, {{"k", F(K::kString, "x")}, {"t", F(K::kString, "2024-01-04")}, {"x", F(K::kString, "1.005")}});  // too many decimals
  add(6, a, {{"k", F(K::kObject, "")}, {"t", F(K::kString, "2024-01-04")}});                      // wrong key type
  add(7, other, {{"k", F(K::kString, "x")}, {"t", F(K::kString, "2024-01-04")}});                 // not its class
  add(8, a, {{"k", F(K::kString, "x")}, {"t", F(K::kString, "2024-01-05")}, {"x", F(K::kNull, "")}, {"s", F(K::kNumber, "3")}});
  std::vector<EventFailure> failures;
  p->Apply(EventRecords{events, values, width}, failures);
  ASSERT_EQ(failures.size(), 3u);
  EXPECT_EQ(failures[0].id, 4);
  EXPECT_NE(failures[0].reason.find("key 'k': path 'k' is missing"), std::string::npos) << failures[0].reason;
  EXPECT_EQ(failures[1].id, 5);
  EXPECT_NE(failures[1].reason.find("decimal(10,2)"), std::string::npos) << failures[1].reason;
  EXPECT_EQ(failures[2].id, 6);
  EXPECT_NE(failures[2].reason.find("an object"), std::string::npos) << failures[2].reason;
  TextSink sink(/*quote_text=*/true);
  p->Flush(sink);
  std::sort(sink.rows.begin(), sink.rows.end());
  EXPECT_EQ(sink.rows, (std::vector<std::string>{
                           // key 7 (a number as text) in the week of Monday 2024-01-08: nothing but the count
                           // (first and last are each followed by their event's id)
                           "'7'|2024-01-08|1|0.00|NULL|2024-01-08 00:00:00|NULL|NULL|NULL|NULL|0|NULL|NULL",
                           // key x, week of Monday 2024-01-01: events 1, 2 and 8 (8's x is null: untouched)
                           "'x'|2024-01-01|3|0.30|0.1|2024-01-07 23:59:59|'one'|1|'3'|8|1|'seen-b'|2",
                       }));
  EXPECT_EQ(p->pending_rows(), 0u);
}

// Sums (and counts as decimals) are checked from the value a key has in the table: the
// committed rows handed over at a resume, then every flush's deltas. first/last follow ids
// when a late event (a lower id) comes after higher ones.
TEST(DeclaredProjector, ChecksSumsFromTheCommittedValueAndKeepsFirstAndLastInIdOrder) {
  auto plans = ParseModels(R"toml(
[[read_model]]
name   = "m"
events = ['A', 'B']
key    = [{ column = "k", path = "k" }]
values = [
  { column = "s", op = "sum", path = "x", type = "decimal(3,1)" },
  { column = "c", op = "count", type = "decimal(3,0)", on = ['B'] },
  { column = "f", op = "first", path = "v" },
  { column = "l", op = "last", path = "v" },
]
)toml", "m.toml", "stored_events");
  ASSERT_TRUE(plans.ok()) << plans.status().message();
  std::unique_ptr<Projector> p = MakeDeclaredProjector((*plans)[0]);
  EXPECT_EQ(p->keeps_committed()->committed_columns(), (std::vector<std::string>{"s", "c"}));
  EventCatalog catalog;
  p->Bind(catalog);
  const uint16_t a = catalog.ClassIndex("A"), b = catalog.ClassIndex("B");
  const size_t width = catalog.fields().size();
  auto slot = [&](const char* path) { return catalog.Slot(FieldSource{false, path}); };
  std::vector<EventRecord> events;
  std::vector<FieldValue> values;
  std::deque<std::string> texts;  // the bytes the values point into
  auto add = [&](EventId id, uint16_t cls, std::map<std::string, std::string> fields) {
    events.push_back({id, cls, true, 0, static_cast<uint32_t>(values.size())});
    values.resize(values.size() + width);
    for (const auto& [path, text] : fields) {
      FieldValue& v = values[events.back().first_value + slot(path.c_str())];
      v.kind = ValueKind::kString;
      v.set_text(texts.emplace_back(text));
    }
  };
  auto apply = [&] {
    std::vector<EventFailure> failures;
    p->Apply(EventRecords{events, values, width}, failures);
    events.clear();
    values.clear();
    return failures;
  };
  const std::string_view committed[] = {"x", "99.0", "998"};
  EXPECT_EQ(p->keeps_committed()->LoadCommitted(committed), "");
  add(10, a, {{"k", "x"}, {"x", "0.5"}});  // 99.5
  add(11, a, {{"k", "x"}, {"x", "0.5"}});  // 100.0: leaves decimal(3,1)
  add(12, b, {{"k", "x"}});                // 999
  add(13, b, {{"k", "x"}});                // 1000: leaves decimal(3,0)
  add(20, a, {{"k", "y"}, {"v", "b"}});
  add(21, a, {{"k", "y"}, {"v", "c"}});
  add(15, a, {{"k", "y"}, {"v", "a"}});    // late: first of y, not last
  std::vector<EventFailure> failures = apply();
  ASSERT_EQ(failures.size(), 2u);
  EXPECT_EQ(failures[0].id, 11);
  EXPECT_NE(failures[0].reason.find("the sum leaves decimal(3,1)"), std::string::npos) << failures[0].reason;
  EXPECT_EQ(failures[1].id, 13);
  EXPECT_NE(failures[1].reason.find("the count leaves decimal(3,0)"), std::string::npos) << failures[1].reason;
  TextSink sink(/*quote_text=*/true);
  p->Flush(sink);
  std::sort(sink.rows.begin(), sink.rows.end());
  EXPECT_EQ(sink.rows, (std::vector<std::string>{"'x'|0.5|1|NULL|NULL|NULL|NULL", "'y'|0.0|0|'a'|15|'c'|21"}));
  // The flushed deltas count from now on: x holds 99.5.
  add(30, a, {{"k", "x"}, {"x", "0.6"}});  // 100.1: leaves
  add(31, a, {{"k", "x"}, {"x", "0.4"}});  // 99.9
  failures = apply();
  ASSERT_EQ(failures.size(), 1u);
  EXPECT_EQ(failures[0].id, 30);
  sink.rows.clear();
  p->Flush(sink);
  EXPECT_EQ(sink.rows, (std::vector<std::string>{"'x'|0.4|0|NULL|NULL|NULL|NULL"}));
  // A committed row that is not of its types is refused, with the column.
  const std::string_view bad[] = {"z", "12.34", "1"};
  EXPECT_NE(p->keeps_committed()->LoadCommitted(bad).find("value 's'"), std::string::npos);
}

}  // namespace
}  // namespace rw

namespace rw {
namespace {

// A date-time key's values are microseconds since the epoch: so is its buckets' stride. (It
// was in seconds: neighbouring minutes were a million places apart in the counter's array,
// which then started again at almost every event and sorted its whole map each time; the
// declared per-minute counter of config/blog.toml ran at ~500 events/s on 60,000 events.)
// Issue 53 item 2: `where` and a value's `if` on payload paths, lists, `not`, booleans; a
// declaration that says them wrong is refused with its file and line.
TEST(Models, ConditionsAreRefusedWhenWrittenWrongWithTheirLine) {
  const auto model = [](const std::string& where, const std::string& value_if) {
    return "[[read_model]]\nname = \"m\"\nevents = ['A']\n" + (where.empty() ? "" : "where = " + where + "\n") +
           "key = [{ column = \"k\", path = \"k\" }]\nvalues = [{ column = \"n\", op = \"count\"" +
           (value_if.empty() ? "" : ", if = " + value_if) + " }]\n";
  };
  EXPECT_TRUE(Parse(model(R"({ "$.currency" = "EUR", stream = ["a", "b"], "$.vip" = true })", "")).ok());
  EXPECT_TRUE(Parse(model("", R"({ "$.kind" = { not = ["refund", 7] } })")).ok());
  const std::pair<std::string, std::string> bad[] = {
      {model(R"({ "$." = "x" })", ""), "m.toml:4: 'where' $.: a payload path is"},
      {model(R"({ "$.a..b" = "x" })", ""), "a payload path is"},
      {model(R"({ "not a column" = "x" })", ""), "neither a plain identifier nor a path"},
      {model(R"({ "$.a" = { not = "x", also = 1 } })", ""), "a table here is { not = value or [values] }"},
      {model(R"({ "$.a" = [] })", ""), "give at least one value"},
      {model(R"({ "$.a" = 1.5 })", ""), "a string, an integer, a boolean"},
      {model("", R"({ "$.a" = [{ x = 1 }] })"), "'if' $.a: each value is a string, an integer or a boolean"},
      {model("", R"("refund")"), "'if' must be a table"},
  };
  for (const auto& [text, message] : bad) {
    const Status s = Parse(text);
    EXPECT_FALSE(s.ok()) << text;
    EXPECT_NE(s.message().find(message), std::string::npos) << s.message();
  }
}

TEST(DeclaredProjector, AConditionComparesTextsByteForByteAndAMissingValueIsNoneOfItsValues) {
  auto plans = ParseModels(R"([[read_model]]
name = "m"
events = ['A']
where = { "$.status" = { not = "cancelled" } }
key = [{ column = "k", path = "k" }]
values = [
  { column = "n", op = "count" },
  { column = "vip", op = "count", if = { "$.vip" = true } },
  { column = "eur", op = "count", if = { "$.currency" = ["EUR", 978] } },
]
)", "m.toml", "stored_events");
  ASSERT_TRUE(plans.ok()) << plans.status().message();
  std::unique_ptr<Projector> p = MakeDeclaredProjector((*plans)[0]);
  EventCatalog catalog;
  p->Bind(catalog);
  const uint32_t k = catalog.Slot(FieldSource{false, "k"}), status = catalog.Slot(FieldSource{false, "status"}),
                 vip = catalog.Slot(FieldSource{false, "vip"}), currency = catalog.Slot(FieldSource{false, "currency"});
  const size_t width = catalog.fields().size();
  std::vector<EventRecord> events;
  std::vector<FieldValue> values;
  // (status, vip, currency) per event; nullptr: missing.
  struct Given {
    const char* status;
    ValueKind vip;
    ValueKind currency_kind;
    const char* currency;
  };
  const Given given[] = {
      {"paid", ValueKind::kTrue, ValueKind::kString, "EUR"},         // n, vip, eur
      {"cancelled", ValueKind::kTrue, ValueKind::kString, "EUR"},    // left out by where
      {nullptr, ValueKind::kString, ValueKind::kNumber, "978"},      // n, eur (a number written so); vip "true" text: no
      {"paid", ValueKind::kFalse, ValueKind::kString, "eur"},        // n only (byte for byte)
      {"Cancelled", ValueKind::kMissing, ValueKind::kNull, nullptr}, // n only (not the same bytes)
  };
  for (size_t i = 0; i < std::size(given); ++i) {
    events.push_back({static_cast<EventId>(i + 1), catalog.ClassIndex("A"), true, 0, static_cast<uint32_t>(values.size())});
    values.resize(values.size() + width);
    FieldValue* v = &values[values.size() - width];
    v[k].kind = ValueKind::kString;
    v[k].set_text("k");
    if (given[i].status != nullptr) {
      v[status].kind = ValueKind::kString;
      v[status].set_text(given[i].status);
    }
    v[vip].kind = given[i].vip;
    if (given[i].vip == ValueKind::kString) v[vip].set_text("true");
    v[currency].kind = given[i].currency_kind;
    if (given[i].currency != nullptr) v[currency].set_text(given[i].currency);
  }
  std::vector<EventFailure> failures;
  const Folded folded = p->Apply(EventRecords{events, values, width}, failures);
  EXPECT_TRUE(failures.empty());
  EXPECT_EQ(folded.events, 4u);
  TextSink sink;
  p->Flush(sink);
  EXPECT_EQ(sink.rows, (std::vector<std::string>{"k|4|1|2"}));
}

TEST(DeclaredProjector, ABucketsStrideIsInTheUnitOfItsKeysValues) {
  const auto key = [](ValueType type, Bucket bucket) {
    KeyPlan k;
    k.type = type;
    k.bucket = bucket;
    return KeyBucketStride(k);
  };
  EXPECT_EQ(key(ValueType::kDateTime, Bucket::kMinute), 60'000'000);
  EXPECT_EQ(key(ValueType::kDateTime, Bucket::kHour), 3'600'000'000);
  EXPECT_EQ(key(ValueType::kDateTime, Bucket::kDay), 86'400'000'000);
  EXPECT_EQ(key(ValueType::kDateTime, Bucket::kWeek), 7 * 86'400'000'000);
  EXPECT_EQ(key(ValueType::kDate, Bucket::kDay), 1);
  EXPECT_EQ(key(ValueType::kDate, Bucket::kWeek), 7);
  EXPECT_EQ(key(ValueType::kDate, Bucket::kMonth), 1);
  EXPECT_EQ(key(ValueType::kBigInt, Bucket::kNone), 1);
}

TEST(DeclaredProjector, AReadModelOfKeysAloneHasOneRowPerKey) {
  auto plans = ParseModels("[[read_model]]\nname = \"skus\"\nevents = ['A']\nkey = [{ column = \"sku\", path = \"sku\" }]\n",
                           "m.toml", "stored_events");
  ASSERT_TRUE(plans.ok()) << plans.status().message();
  std::unique_ptr<Projector> p = MakeDeclaredProjector((*plans)[0]);
  EventCatalog catalog;
  p->Bind(catalog);
  std::vector<EventRecord> events;
  std::vector<FieldValue> values(3);
  for (uint32_t i = 0; i < 3; ++i) {
    events.push_back({i + 1, catalog.ClassIndex("A"), true, 0, i});
    values[i].kind = ValueKind::kString;
    values[i].set_text(i == 1 ? "mug" : "pen");
  }
  std::vector<EventFailure> failures;
  p->Apply(EventRecords{events, values, 1}, failures);
  EXPECT_TRUE(failures.empty());
  TextSink sink(/*quote_text=*/true);
  p->Flush(sink);
  std::sort(sink.rows.begin(), sink.rows.end());
  EXPECT_EQ(sink.rows, (std::vector<std::string>{"'mug'", "'pen'"}));
}

}  // namespace
}  // namespace rw

namespace rw {
namespace {

// A balance: one column that adds on some events and subtracts on others.
const char* const kBalance = R"toml(
[[read_model]]
name   = "balances"
events = ['Bank\Deposited', 'Bank\Withdrawn', 'Bank\Fee']
key    = [{ column = "account", path = "account" }]
values = [
  { column = "balance", op = "sum",      path = "amount", type = "decimal(6,2)", on = ['Bank\Deposited'] },
  { column = "balance", op = "subtract", path = "amount", type = "decimal(6,2)", on = ['Bank\Withdrawn'] },
  { column = "balance", op = "subtract", path = "fee",    type = "decimal(6,2)", on = ['Bank\Withdrawn', 'Bank\Fee'] },
  { column = "moves",   op = "count" },
]
)toml";

std::string BalanceWith(const std::string& from, const std::string& to) {
  std::string s = kBalance;
  const size_t at = s.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return s.replace(at, from.size(), to);
}

TEST(Models, AColumnTakesSeveralSumsAndSubtractionsOfOneType) {
  Result<std::vector<ModelPlan>> r = ParseModels(kBalance, "m.toml", "stored_events");
  ASSERT_TRUE(r.ok()) << r.status().message();
  const ModelPlan& p = (*r)[0];
  ASSERT_EQ(p.values.size(), 4u);
  EXPECT_EQ(p.values[1].op, Op::kSubtract);
  // Mixed ops, or one type and another, for one column: refused with the line and the first.
  ExpectError(BalanceWith("op = \"subtract\", path = \"fee\"", "op = \"max\", path = \"fee\""), "m.toml:9",
              "column 'balance' is declared twice");
  ExpectError(BalanceWith("op = \"subtract\", path = \"fee\"", "op = \"max\", path = \"fee\""), "m.toml:9",
              "line 7");
  ExpectError(BalanceWith("path = \"amount\", type = \"decimal(6,2)\", on = ['Bank\\Withdrawn']",
                          "path = \"amount\", type = \"decimal(6,3)\", on = ['Bank\\Withdrawn']"),
              "m.toml:8", "decimal(6,3)");
  ExpectError(BalanceWith("{ column = \"moves\",   op = \"count\" }", "{ column = \"Balance\", op = \"count\" }"),
              "m.toml:10", "declared twice");
  ExpectError(BalanceWith("op = \"subtract\", path = \"fee\",    type = \"decimal(6,2)\"",
                          "op = \"subtract\", path = \"fee\",    type = \"text\""),
              "m.toml:9", "a subtract is bigint, decimal(p,s) or double");
  ExpectError(BalanceWith("op = \"subtract\", path = \"fee\",", "op = \"subtract\","), "m.toml:9",
              "op = \"subtract\" needs a 'path'");
  // A column that is a key's cannot be a value's, repeated or not.
  ExpectError(BalanceWith("{ column = \"moves\",   op = \"count\" }", "{ column = \"account\", op = \"sum\", path = \"x\" }"),
              "m.toml:10", "declared twice");
}

TEST(Models, AColumnTakesSeveralLastsOrFirstsAndAMap) {
  const std::string text = R"toml(
[[read_model]]
name   = "status"
events = ["opened", "closed"]
key    = [ { column = "id", field = "aggregate_id" } ]
values = [
  { column = "status", op = "last", value = "open",   on = ["opened"] },
  { column = "Status", op = "last", value = "closed", on = ["closed"] },
  { column = "kind",   op = "first", path = "k", map = { a = "alpha", 2 = 3 } },
]
)toml";
  Result<std::vector<ModelPlan>> r = ParseModels(text, "m.toml", "events");
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ((*r)[0].values.size(), 3u);
  EXPECT_EQ((*r)[0].values[1].column, "status");
  EXPECT_EQ((*r)[0].values[2].map, (std::vector<std::pair<std::string, std::string>>{{"2", "3"}, {"a", "alpha"}}));
  auto with = [&](const std::string& from, const std::string& to) {
    std::string s = text;
    return s.replace(s.find(from), from.size(), to);
  };
  // last and first do not mix in one column; a map needs a field to map, and texts or integers.
  ExpectError(with("\"Status\", op = \"last\"", "\"Status\", op = \"first\""), "m.toml:8", "declared twice");
  ExpectError(with("path = \"k\", map", "value = \"x\", on = [\"opened\"], map"), "m.toml:9", "'map' is a table");
  ExpectError(with("2 = 3", "2 = 3.5"), "m.toml:9", "must be a string or an integer");
  // The map is part of the version: another map, another build.
  Result<std::vector<ModelPlan>> other = ParseModels(with("\"alpha\"", "\"beta\""), "m.toml", "events");
  ASSERT_TRUE(other.ok());
  EXPECT_NE(PlanVersion((*r)[0]), PlanVersion((*other)[0]));
}

TEST(Models, AColumnsContributionsInAnyOrderAreOneVersion) {
  auto version = [](const std::string& text) {
    Result<std::vector<ModelPlan>> r = ParseModels(text, "m.toml", "stored_events");
    EXPECT_TRUE(r.ok()) << r.status().message();
    return r.ok() ? PlanVersion((*r)[0]) : std::string();
  };
  const std::string v = version(kBalance);
  const std::string sum = "  { column = \"balance\", op = \"sum\",      path = \"amount\", type = \"decimal(6,2)\", on = ['Bank\\Deposited'] },\n";
  std::string moved = kBalance;
  moved.erase(moved.find(sum), sum.size());
  moved.insert(moved.find("  { column = \"moves\""), sum);  // the sum after the subtractions
  EXPECT_EQ(version(moved), v);
  EXPECT_NE(version(BalanceWith("op = \"subtract\", path = \"amount\"", "op = \"sum\", path = \"amount\"")), v);
}

TEST(DeclaredProjector, AddsOnSomeEventsAndSubtractsOnOthersInOneColumn) {
  auto plans = ParseModels(kBalance, "m.toml", "stored_events");
  ASSERT_TRUE(plans.ok()) << plans.status().message();
  std::unique_ptr<Projector> p = MakeDeclaredProjector((*plans)[0]);
  EventCatalog catalog;
  p->Bind(catalog);
  ASSERT_EQ(p->table().columns.size(), 3u);  // account, balance, moves
  const uint16_t dep = catalog.ClassIndex("Bank\\Deposited"), wd = catalog.ClassIndex("Bank\\Withdrawn"),
                 fee = catalog.ClassIndex("Bank\\Fee");
  const size_t width = catalog.fields().size();
  auto slot = [&](const char* path) { return catalog.Slot(FieldSource{false, path}); };
  std::vector<EventRecord> events;
  std::vector<FieldValue> values;
  auto field = [](ValueKind kind, std::string_view text) {
    FieldValue v;
    v.kind = kind;
    v.set_text(text);
    return v;
  };
  // The texts are literals: they outlive the records.
  auto add = [&](EventId id, uint16_t cls, const char* account, std::string_view amount, std::string_view fee_text) {
    events.push_back({id, cls, true, 0, static_cast<uint32_t>(values.size())});
    values.resize(values.size() + width);
    FieldValue* v = &values[events.back().first_value];
    v[slot("account")] = field(ValueKind::kString, account);
    if (!amount.empty()) v[slot("amount")] = field(ValueKind::kNumber, amount);
    if (!fee_text.empty()) v[slot("fee")] = field(ValueKind::kNumber, fee_text);
  };
  add(1, dep, "a", "100.50", "");
  add(2, wd, "a", "30.25", "0.50");   // -30.75
  add(3, fee, "a", "", "1.00");       // -1
  add(4, wd, "b", "20.00", "");       // b goes below zero: fine
  add(5, dep, "b", "9999.99", "");    // b: 9979.99 fits decimal(6,2)
  add(6, dep, "b", "20.01", "");      // 10000.00 leaves decimal(6,2): a failure, b unchanged
  add(7, wd, "c", "9999.99", "0.01"); // -10000.00 leaves it below: a failure, no row for c
  std::vector<EventFailure> failures;
  p->Apply(EventRecords{events, values, width}, failures);
  ASSERT_EQ(failures.size(), 2u);
  EXPECT_EQ(failures[0].id, 6);
  EXPECT_NE(failures[0].reason.find("the sum leaves decimal(6,2)"), std::string::npos) << failures[0].reason;
  EXPECT_EQ(failures[1].id, 7);
  TextSink sink(/*quote_text=*/true);
  p->Flush(sink);
  std::sort(sink.rows.begin(), sink.rows.end());
  EXPECT_EQ(sink.rows, (std::vector<std::string>{"'a'|68.75|3", "'b'|9979.99|2"}));
}

}  // namespace
}  // namespace rw
