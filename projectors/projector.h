// The projector interface: one read model, rebuilt from events of any class.
//
// A projector knows its table, the classes and fields it reads, how to fold a batch's
// records into in-memory state, and how to turn that state into rows. It never sees
// threads, connections or transactions: the projector runner (stages/) owns those, calls
// Apply() with records in increasing id order, and calls Flush() inside the transaction
// that also writes the checkpoint. The blog's compiled read models and the declared ones
// are the same kind: they differ in what they bind and how they fold.
//
// Thread safety: none. A projector instance is used by one runner, serially.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "projectors/event_record.h"
#include "projectors/segment.h"

namespace rw {

// Receives the rows of a flush, one value at a time, column by column in the order
// of TableSpec::columns, then EndRow(). Implemented by the writer stage, which adds
// whatever storage columns it needs (a hash of text keys) on its own.
class RowSink {
 public:
  virtual ~RowSink() = default;
  virtual void Int(int64_t value) = 0;
  virtual void Date(int32_t days) = 0;             // DATE from days since 1970-01-01
  virtual void DateTimeMicros(int64_t epoch_micros) = 0;  // DATETIME(N), wall clock, microseconds
  virtual void Text(std::string_view bytes) = 0;   // stored byte for byte
  // A DECIMAL (or any exact number) as its decimal literal, e.g. "-12.50".
  virtual void Number(std::string_view literal) = 0;
  virtual void Double(double value) = 0;
  virtual void Null() = 0;                         // a value no event touched
  virtual void EndRow() = 0;
};

// What a column holds. The writer stage alone turns these into SQL types.
enum class ColumnType : uint8_t {
  kInt64,    // BIGINT
  kUInt64,   // BIGINT UNSIGNED (the compiled counters)
  kDecimal,  // DECIMAL(precision, scale)
  kDouble,   // DOUBLE
  kText,     // any bytes, any length, compared byte for byte
  kDate,     // DATE
  kDateTime, // DATETIME, or the declared DATETIME(N) (values carry microseconds)
};

// How a flushed value meets the value already in the table (rows are deltas: a flush
// carries only what its events changed). kKey marks the key columns.
//
// kFirst and kLast follow event ids, not the order events arrive in (a transaction holding
// a lower id can commit after a higher one was applied): such a column is stored with a
// hidden `<name>__id` (stages/db/table_schema.h), the id of the event whose value it holds,
// and a row sink receives that id right after the value, as Number(IdText(id)), or Null()
// when the value is untouched.
enum class Merge : uint8_t {
  kKey,
  kAdd,    // table + delta (counts, sums); never NULL, 0 when untouched
  kMin,    // the smaller; NULL (untouched) on either side leaves the other
  kMax,    // the larger; likewise
  kFirst,  // the value of the lower id
  kLast,   // the value of the higher id
};
inline bool KeepsEventId(Merge m) { return m == Merge::kFirst || m == Merge::kLast; }

// A declared SQL type narrower than rewind's own for its ColumnType (a declared read model's
// `type = "varchar(64)"`, "char(2)", "binary(16)", "int unsigned", ...): what a new table's
// column is made as, and what every value must fit (config/models.cc parses it, the declared
// projector refuses an event whose value does not fit). Empty `sql`: rewind's own type.
struct Storage {
  std::string sql;         // e.g. "VARCHAR(64)", "INT UNSIGNED"; "" none
  uint32_t length = 0;     // text: at most this many characters (bytes when `bytes`); 0: any
  bool bytes = false;      // BINARY / VARBINARY: the length counts bytes, no character set
  int64_t min = INT64_MIN, max = INT64_MAX;  // integers
  std::string collation;   // a text column's declared collation; "": the database's
  bool declared() const { return !sql.empty(); }
};

struct Column {
  std::string name;
  ColumnType type = ColumnType::kInt64;
  Merge merge = Merge::kKey;
  uint8_t precision = 0;  // kDecimal only
  uint8_t scale = 0;      // kDecimal only
  Storage storage = {};   // a declared type, if any
  bool key() const { return merge == Merge::kKey; }
};

// The read model's table: its key columns (in key order), then its value columns. The
// key columns form the primary key; a key made of text is stored with a hash (see
// stages/db/table_schema.h). Rows written by Flush() are deltas merged as each column says.
struct TableSpec {
  std::string name;             // live table name, e.g. "visits_per_day"
  std::vector<Column> columns;  // keys first, then values
  // Set by the stage that writes (never by a projector): the rows go into a table of the
  // application's shape (stages/db/live_shape.h), by column name, without rewind's storage
  // columns (no key hash, no `__id`), merged on the table's own unique key.
  bool bare = false;
  // Its rows are written by the read model's own statements (RunsStatements: handlers), not
  // described here (no columns): the table is the application's, rebuilt in its shape.
  bool by_statements = false;
};

// Capabilities a read model may have beyond the core below, each an interface of its own:
// the stages that need one ask the projector for it (Projector::segmentable(), ...), and a
// read model without it answers nullptr.

// Builds the keys of one segment only (projectors/segment.h): it then leaves out every
// event of another segment's key. A compiled read model has not this capability: its rows
// depend on the order of events across keys.
class Segmentable {
 public:
  virtual ~Segmentable() = default;
  virtual void SetSegment(const Segment& segment) = 0;
  // Whether it counts an event whose key cannot be known (a payload that did not decode) as
  // failed: of the N segments of a read model only segment 0 does, so that together they
  // count it once.
  virtual bool CountsUnkeyed() const = 0;
};

// Hands the position back to the application at the swap: its statement (a declared
// `hand_over`, e.g. "UPDATE bookmarks SET position = ? WHERE bookmark = 'balances'"), run in
// one transaction with the others, its `?` bound to the last event id applied. "": none.
class HandsOver {
 public:
  virtual ~HandsOver() = default;
  virtual std::string hand_over() const = 0;
};

// Keeps the committed values of columns bounded by their type that events add to (declared
// sums of decimals and bigints), and refuses, in id order, each event that would take its
// key's value out of the type, counted from the value the key has in the table. It keeps
// those values only for the keys of its last flush and the keys it holds (memory bounded by
// the rows of a flush, not by the read model's keys): before a fold, when the table may
// have rows, the runner asks it for the keys it does not know (KeysToLoad: the key columns,
// one row per key, into a sink), reads their rows in one query per statement's worth of
// keys (the key columns, then committed_columns()) and hands each to LoadCommitted(), which
// returns "" or why the row cannot be read (the run stops then). A key asked for and not
// found has none (0).
class KeepsCommitted {
 public:
  virtual ~KeepsCommitted() = default;
  virtual std::vector<std::string> committed_columns() const = 0;
  // The keys of the events of `records` it would apply whose committed values it does not
  // hold, each once; from then on it counts them as 0 until LoadCommitted() says otherwise.
  virtual void KeysToLoad(const EventRecords& records, RowSink& keys) = 0;
  virtual std::string LoadCommitted(std::span<const std::string_view> row) = 0;
};

// What a fold took of a batch's records: its events (of its classes, passing its filters),
// and of those the ones it could not use (a payload that did not decode, a field that failed
// the decoder's checks): counted as failed, their failure already recorded by the decoder.
struct Folded {
  uint64_t events = 0;
  uint64_t unusable = 0;
};

// Its rows depend on the order of events across keys (sessions_per_day: a visit starts a
// session or not by the visitor's latest earlier visit): Apply must see id order, so the
// runner holds the events above a hole in the ids still open (a transaction not committed
// yet) until the hole is found or final, at most max_held() of them.
class OrderDependent {
 public:
  virtual ~OrderDependent() = default;
  virtual size_t max_held() const { return 200'000; }
  // Whether its table holds all its state, so that --resume continues it from its
  // checkpoint (false: part of its state lives only in memory, and a resume rebuilds it
  // from the first event).
  virtual bool resumes() const { return false; }
};

// Removes rows (a declared `delete`): each flush first removes the table's rows of the keys
// it names, then writes the rows pending (a key removed, then touched again, starts from the
// table's defaults, as the application's projector would have it).
class RemovesRows {
 public:
  virtual ~RemovesRows() = default;
  // Emits the key values (the key columns, one row each) of every key whose row goes before
  // the next Flush() writes its rows. Called just before it.
  virtual void FlushRemoved(RowSink& keys) = 0;
};

// A statement run once per event, its parameters bound (a read model of handlers: the
// application's own projector as SQL). One group holds consecutive events of one statement
// whose values have one type per parameter, so that they go to the server as one bulk
// execution (array binding).
// The placeholder of the read model's table in a handler's statement.
inline constexpr std::string_view kTablePlaceholder = "{table}";
// `sql` with every {table} as `quoted_table` (already quoted as an identifier).
inline std::string WithTable(std::string_view sql, std::string_view quoted_table) {
  std::string out(sql);
  for (size_t at = out.find(kTablePlaceholder); at != std::string::npos; at = out.find(kTablePlaceholder, at)) {
    out.replace(at, kTablePlaceholder.size(), quoted_table);
    at += quoted_table.size();
  }
  return out;
}

struct BoundStatements {
  enum class Type : uint8_t { kNull, kInt, kDecimal, kDouble, kText };
  struct Value {
    Type type = Type::kNull;
    uint32_t offset = 0, size = 0;  // its bytes in `bytes` (kInt: the decimal literal)
  };
  std::string sql;                 // with `?` for each parameter and {table} for the table
  std::string origin;              // "file:line" of its handler, for messages
  size_t width = 0;                // parameters per event
  std::vector<Type> types;         // per parameter: the type of its non-null values
  std::vector<EventId> ids;        // the events, in id order
  std::vector<Value> values;       // ids.size() * width, event by event
  std::string bytes;
  std::string_view text(const Value& v) const { return std::string_view(bytes).substr(v.offset, v.size); }
};

// Runs statements (a read model of handlers) instead of emitting rows: a flush runs them
// in id order, inside its transaction. An event whose statement the server refuses (a
// duplicate key, a value out of range, a warning) is that event's failure.
class RunsStatements {
 public:
  // A queued statement holds its event's values: the runner flushes when this many events
  // are queued (a bulk execution is bounded by the server's packet anyway), which bounds a
  // read model's memory to about this many events' values, twice with a flush in flight.
  static constexpr size_t kMaxQueued = 100'000;
  virtual ~RunsStatements() = default;
  // The statements pending, in id order; forgotten afterwards (Flush() writes no row).
  virtual std::vector<BoundStatements> TakeStatements() = 0;
  // Its handlers' statements as written and with `{table}` in them, with where each is declared.
  struct Handler {
    std::string on, sql, prepared, origin;
    size_t parameters = 0;
    std::vector<std::string> columns;  // the event-table columns its parameters name (:@column)
  };
  virtual std::vector<Handler> handlers() const = 0;
};

class Projector {
 public:
  virtual ~Projector() = default;

  virtual std::string_view name() const = 0;
  virtual const TableSpec& table() const = 0;
  // What it reads: registers its classes and fields in the run's catalog, once, before the
  // run (the decoder decodes what the catalog holds).
  virtual void Bind(EventCatalog& catalog) = 0;
  // The classes it reads (after Bind), for the runner's filter.
  virtual bool reads_class(uint16_t event_class) const = 0;
  // Folds the records of its classes into the in-memory state, in id order, adding to
  // `failures` the events it cannot apply (counted nowhere in the read model).
  // REQUIRES: ids increase across calls.
  virtual Folded Apply(const EventRecords& records, std::vector<EventFailure>& failures) = 0;
  // Rows that the next Flush() would write.
  virtual size_t pending_rows() const = 0;
  // The bytes its in-memory state holds now (what a flush gives back, and what it keeps
  // across flushes): the runner weighs it against the run's memory budget (--memory).
  virtual size_t state_bytes() const = 0;
  // The bytes of state it keeps across flushes (an order-dependent read model's memory of
  // earlier events: sessions_per_day's last visit per visitor); counted in the budget too.
  virtual size_t kept_bytes() const { return 0; }
  // Emits the pending deltas (in key order where cheap) and forgets them. The runner
  // keeps what they became until its transaction commits, and redoes that on retries.
  virtual void Flush(RowSink& sink) = 0;

  // Whether it can apply `record` (of its classes): decoded, or read without its payload.
  virtual bool Usable(const EventRecord& record) const { return record.decoded || !reads_payload(); }
  // Whether it applies `record` (of `records`): its class, and any filter of its own on the
  // event table's columns (a declared `where`).
  virtual bool Selects(const EventRecords& /*records*/, const EventRecord& record) const {
    return reads_class(record.event_class);
  }
  // Late events below values already written into a table that keeps no event ids: what
  // commutes (counts, sums, min, max) is folded as Apply does; first and last values
  // cannot be placed and are left out. `unplaced`: how many events had such a value.
  virtual Folded ApplyUnordered(const EventRecords& records, std::vector<EventFailure>& failures,
                                uint64_t& unplaced) {
    unplaced = 0;
    return Apply(records, failures);
  }
  // The longest text value a row may hold (the server's max_allowed_packet bounds a
  // statement): a longer one is its event's failure, not a flush the server refuses.
  virtual void LimitValueBytes(size_t /*bytes*/) {}
  // Whether it reads the payload (false: the event table's columns alone); one that does
  // not also applies a record whose payload is no JSON object (EventRecord::decoded).
  virtual bool reads_payload() const { return true; }
  // Its capabilities (above), or nullptr.
  virtual const OrderDependent* order_dependent() const { return nullptr; }
  virtual Segmentable* segmentable() { return nullptr; }
  virtual const HandsOver* hands_over() const { return nullptr; }
  virtual KeepsCommitted* keeps_committed() { return nullptr; }
  virtual RemovesRows* removes_rows() { return nullptr; }
  virtual RunsStatements* runs_statements() { return nullptr; }
  // The same, to read (its handlers()): the usual const overload of a non-const accessor.
  const RunsStatements* runs_statements() const { return const_cast<Projector*>(this)->runs_statements(); }
  // That filter, all of which must hold (empty: none), for the reader to send to the server.
  virtual std::vector<ColumnIn> where() const { return {}; }
  // What, besides its table, makes one build of it differ from another (a declaration's
  // hash); "" for compiled read models, whose version is their table.
  virtual std::string version() const { return {}; }
  // Where it was declared ("" when compiled).
  virtual std::string origin() const { return {}; }
};

// What `rewind list` shows and the factory that builds a fresh instance.
struct ProjectorInfo {
  std::string name;
  std::string description;
  std::function<std::unique_ptr<Projector>()> make;
  std::string origin;  // "" for compiled ones; "FILE:LINE" for declared ones
};

// Every known projector, in a stable order.
const std::vector<ProjectorInfo>& AllProjectors();

}  // namespace rw
