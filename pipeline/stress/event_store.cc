#include "pipeline/stress/event_store.h"

#include <fmt/core.h>
#include <mysql.h>
#include <mysqld_error.h>
#include <simdjson.h>

#include <chrono>

#include "base/fault.h"
#include "projectors/declared.h"

namespace rw {

Status EventStore::Create() {
  if (Status s = c_.Execute(fmt::format(
          "CREATE TABLE IF NOT EXISTS {} (position BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY, "
          "stream VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL, version INT NOT "
          "NULL, "
          "type VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL, payload LONGTEXT NOT "
          "NULL, "
          "created_at DATETIME(6) NOT NULL DEFAULT NOW(6), UNIQUE KEY stream_version (stream, "
          "version)) "
          "ENGINE=InnoDB DEFAULT CHARSET=utf8mb4",
          QuoteIdentifier(t_.events)));
      !s.ok()) {
    return s;
  }
  return c_.Execute(
      fmt::format("CREATE TABLE IF NOT EXISTS {} (stream VARCHAR(64) CHARACTER SET ascii COLLATE "
                  "ascii_bin NOT NULL, "
                  "version INT NOT NULL, state LONGTEXT NOT NULL, created_at DATETIME(6) NOT NULL "
                  "DEFAULT NOW(6), "
                  "PRIMARY KEY (stream, version)) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4",
                  QuoteIdentifier(t_.snapshots)));
}

Result<AppendOutcome> EventStore::Append(const std::string& stream, int64_t expected_version,
                                         const std::vector<NewEvent>& events) {
  if (events.empty()) return AppendOutcome::kAppended;
  std::string sql = fmt::format("INSERT INTO {} (stream, version, type, payload) VALUES ",
                                QuoteIdentifier(t_.events));
  for (size_t i = 0; i < events.size(); ++i) {
    sql += i ? ",(" : "(";
    c_.AppendQuoted(sql, stream);
    sql += fmt::format(",{},", expected_version + 1 + static_cast<int64_t>(i));
    c_.AppendQuoted(sql, events[i].type);
    sql += ',';
    c_.AppendQuoted(sql, events[i].payload);
    sql += ')';
  }
  // One transaction: every event of the command, or none.
  if (Status s = c_.Execute("START TRANSACTION"); !s.ok())
    return s.With(fmt::format("appending to stream {}", stream));
  Status s = c_.Execute(sql);
  if (s.ok()) {
    FaultPoint("stress-append-uncommitted");  // the events written, not yet committed
    s = c_.Execute("COMMIT");
    if (s.ok()) return AppendOutcome::kAppended;
  }
  const unsigned err = mysql_errno(c_.raw());
  (void)c_.Execute("ROLLBACK");
  if (err == ER_DUP_ENTRY) return AppendOutcome::kConflict;
  if (err == ER_LOCK_DEADLOCK) return AppendOutcome::kDeadlock;
  return s.With(fmt::format("appending to stream {}", stream));
}

Result<int64_t> EventStore::Version(const std::string& stream) {
  Result<std::optional<std::string>> v =
      c_.QueryValue(fmt::format("SELECT COALESCE(MAX(version), 0) FROM {} WHERE stream = {}",
                                QuoteIdentifier(t_.events), c_.Quote(stream)));
  if (!v.ok()) return v.status();
  return *v ? std::stoll(**v) : 0;
}

Status EventStore::ReadStream(const std::string& stream, int64_t from_version,
                              std::vector<StreamEvent>& out) {
  return c_.Stream(fmt::format("SELECT version, type, payload FROM {} WHERE stream = {} AND "
                               "version >= {} ORDER BY version",
                               QuoteIdentifier(t_.events), c_.Quote(stream), from_version),
                   [&](char** v, unsigned long* len) {
                     // Room for simdjson's padding: decoding then parses the payload in place.
                     std::string payload;
                     payload.reserve(len[2] + simdjson::SIMDJSON_PADDING);
                     payload.assign(v[2], len[2]);
                     out.push_back(StreamEvent{std::strtoll(v[0], nullptr, 10),
                                               std::string(v[1], len[1]), std::move(payload)});
                   });
}

Status EventStore::SaveSnapshot(const std::string& stream, int64_t version,
                                const std::string& state_json) {
  std::string sql = fmt::format("INSERT INTO {} (stream, version, state) VALUES (",
                                QuoteIdentifier(t_.snapshots));
  c_.AppendQuoted(sql, stream);
  sql += fmt::format(",{},", version);
  c_.AppendQuoted(sql, state_json);
  sql += ") ON DUPLICATE KEY UPDATE state = VALUES(state)";
  return c_.Execute(sql);
}

Result<std::optional<Snapshot>> EventStore::LoadLatestSnapshot(const std::string& stream) {
  Result<Rows> r = c_.Query(
      fmt::format("SELECT version, state FROM {} WHERE stream = {} ORDER BY version DESC LIMIT 1",
                  QuoteIdentifier(t_.snapshots), c_.Quote(stream)));
  if (!r.ok()) return r.status();
  if (r->rows.empty()) return std::optional<Snapshot>();
  return std::optional<Snapshot>(Snapshot{std::stoll(*r->rows[0][0]), *r->rows[0][1]});
}

Result<order::State> LoadOrder(EventStore& es, const std::string& stream, bool use_snapshot,
                               LoadTimes* times) {
  using Clock = std::chrono::steady_clock;
  const auto ms = [](Clock::time_point a, Clock::time_point b) {
    return std::chrono::duration<double, std::milli>(b - a).count();
  };
  const auto t0 = Clock::now();
  order::State state;
  int64_t from = 1;
  std::optional<Snapshot> snapshot;
  if (use_snapshot) {
    Result<std::optional<Snapshot>> snap = es.LoadLatestSnapshot(stream);
    if (!snap.ok()) return snap.status();
    snapshot = *snap;
    if (snapshot) from = snapshot->version + 1;
  }
  const auto t_snapshot = Clock::now();
  std::vector<StreamEvent> events;
  if (Status s = es.ReadStream(stream, from, events); !s.ok()) return s;
  const auto t1 = Clock::now();
  if (snapshot) {
    Result<order::State> st = DecodeOrderSnapshot(snapshot->state);
    if (!st.ok()) return st.status();
    state = *st;
  }
  std::vector<order::Event> decoded;
  decoded.reserve(events.size());
  for (const StreamEvent& e : events) {
    Result<order::Event> d = DecodeOrderEvent(e.type, e.payload);
    if (!d.ok()) return d.status().With(fmt::format("stream {} version {}", stream, e.version));
    decoded.push_back(std::move(*d));
  }
  const auto t2 = Clock::now();
  for (const order::Event& e : decoded) order::Fold(state, e);
  const auto t3 = Clock::now();
  if (times != nullptr)
    *times = LoadTimes{ms(t0, t1), ms(t1, t2), ms(t2, t3), ms(t0, t3), ms(t0, t_snapshot)};
  return state;
}

namespace {

using simdjson::ondemand::object;

// `text` for simdjson: in place when its string has room for the padding, else copied
// into a buffer of this thread's that keeps its capacity.
simdjson::padded_string_view Padded(const std::string& text) {
  if (text.capacity() >= text.size() + simdjson::SIMDJSON_PADDING) {
    return simdjson::padded_string_view(text.data(), text.size(), text.capacity());
  }
  thread_local std::string copy;
  copy.reserve(text.size() + simdjson::SIMDJSON_PADDING);
  copy.assign(text);
  return simdjson::padded_string_view(copy.data(), copy.size(), copy.capacity());
}

std::string_view Trim(std::string_view t) {
  while (!t.empty() && (t.back() == ' ' || t.back() == '\n' || t.back() == ',' || t.back() == '}'))
    t.remove_suffix(1);
  return t;
}

}  // namespace

Result<order::Event> DecodeOrderEvent(const std::string& type, const std::string& payload) {
  thread_local simdjson::ondemand::parser parser;
  order::Event e;
  e.kind = order::KindOf(type);
  if (e.kind == order::Kind::kUnknown)
    return Status::InvalidInput(fmt::format("unknown event type '{}'", type));
  simdjson::ondemand::document doc;
  object obj;
  if (parser.iterate(Padded(payload)).get(doc) || doc.get_object().get(obj)) {
    return Status::InvalidInput("payload is not a JSON object");
  }
  for (auto field : obj) {
    std::string_view key;
    if (field.unescaped_key().get(key)) return Status::InvalidInput("payload is not valid JSON");
    auto value = field.value();
    std::string_view text;
    if (key == "customer") {
      object customer;
      if (value.get_object().get(customer))
        return Status::InvalidInput("customer is not an object");
      for (auto cf : customer) {
        std::string_view ck;
        if (cf.unescaped_key().get(ck)) return Status::InvalidInput("customer is not valid JSON");
        if (ck == "id") {
          if (cf.value().get_string().get(text))
            return Status::InvalidInput("customer.id is not a string");
          e.customer = text;
        }
      }
    } else if (key == "sku" || key == "at" || key == "note") {
      if (value.get_string().get(text))
        return Status::InvalidInput(fmt::format("'{}' is not a string", key));
      (key == "sku" ? e.sku : key == "at" ? e.at : e.note) = text;
    } else if (key == "quantity") {
      if (value.get_int64().get(e.quantity))
        return Status::InvalidInput("quantity is not an integer");
    } else if ((key == "lineTotal" && e.kind == order::Kind::kItemAdded) ||
               (key == "amount" && e.kind == order::Kind::kDiscountApplied)) {
      __int128 cents = 0;  // an exact amount in cents, as declared read models sum decimals
      if (!ParseScaled(Trim(value.raw_json_token()), 18, 2, cents)) {
        return Status::InvalidInput(fmt::format("'{}' is not an amount", key));
      }
      e.cents = static_cast<int64_t>(cents);
    }
  }
  return e;
}

Result<order::State> DecodeOrderSnapshot(const std::string& json_text) {
  thread_local simdjson::ondemand::parser parser;
  simdjson::ondemand::document doc;
  object obj;
  if (parser.iterate(Padded(json_text)).get(doc) || doc.get_object().get(obj)) {
    return Status::InvalidInput("snapshot is not a JSON object");
  }
  order::State s;
  for (auto field : obj) {
    std::string_view key, text;
    if (field.unescaped_key().get(key)) return Status::InvalidInput("snapshot is not valid JSON");
    auto value = field.value();
    bool bad = false;
    if (key == "version")
      bad = value.get_int64().get(s.version);
    else if (key == "items")
      bad = value.get_int64().get(s.items);
    else if (key == "quantity")
      bad = value.get_int64().get(s.quantity);
    else if (key == "totalCents")
      bad = value.get_int64().get(s.total_cents);
    else if (key == "discountCents")
      bad = value.get_int64().get(s.discount_cents);
    else if (key == "status" || key == "customer" || key == "confirmedAt") {
      bad = value.get_string().get(text);
      if (!bad)
        (key == "status" ? s.status : key == "customer" ? s.customer : s.confirmed_at) = text;
    }
    if (bad)
      return Status::InvalidInput(
          fmt::format("snapshot field '{}' is not what a snapshot holds", key));
  }
  return s;
}

}  // namespace rw
