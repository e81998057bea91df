// PageQuery: the event table's SQL, the one place that spells its columns for what reads
// it (the reader, the replica check, `status`, the dry run; ingest writes it, and stress's
// reference counts stay its own, independent of this file): the checks of the table before
// any work, its head and first id, counts, per-chunk sums, how the event classes are
// compared in the server, and the statements a reader sends: a page of ids (keyset paging on the id
// column, `WHERE id > ? AND id <= <head> ORDER BY id LIMIT n`, never OFFSET) and a list of
// id ranges read again (the holes). Each row's payload comes only for the wanted classes
// (NULL otherwise: skipped, counted), with its class index when several are wanted, the
// columns declared read models read, and last the time column when holes are judged by it.
//
// Thread safety: a PageQuery is immutable after construction (any thread may build its
// statements and add rows to batches of its own); the functions use the connection given.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/gaps.h"
#include "base/id_form.h"
#include "projectors/event_record.h"
#include "stages/db/connection.h"
#include "stages/flow/batch.h"
#include "stages/flow/event_source.h"

namespace rw {

struct EventTableOptions {
  std::string table = "stored_events";
  std::string id_column = "id";
  // How the id column writes its ids: found from the column by CheckEventTable (FindIdForm
  // at a command's start), integer until then.
  IdForm id_form;
  std::string type_column = "eventClass";
  // Non-empty: the class is not a column but this dotted path into the JSON payload (e.g.
  // "headers.__event_type", EventSauce's), read and compared in the server with JSON_VALUE;
  // an event without it (or whose payload is not JSON) is of no class, skipped.
  std::string type_path;
  std::string payload_column = "payload";
  std::string time_column = "createdAt";  // read with --until-time; written by ingest
  std::string uuid_column = "uuid";       // written by ingest
  // The event class the blog's compiled read models read (compared byte for byte).
  std::string page_visited_class = "App\\Analytics\\PageVisited";
};

// What a run reads of each event: the classes whose payloads it wants (each event comes
// with its index in this list) and the event-table columns declared read models read.
struct ReadScope {
  std::vector<std::string> classes;  // empty: the page-visited class alone
  std::vector<std::string> columns;
  // Per class (aligned with `classes`, or empty): the read models' filters on the event
  // table's columns under which its payload is wanted, any one of them (each all of its
  // equalities). No filter for a class: wanted whatever its columns hold. Sent to the
  // server with the type filter; the read models still apply their own, byte for byte.
  std::vector<std::vector<std::vector<ColumnIn>>> filters;
};

// `sql` padded with a comment to `bytes` long (unchanged when it is as long already): a
// server reads a longer query into a buffer grown to its length and writes that query's
// result through it (ReaderOptions::result_buffer).
std::string PadQuery(std::string sql, size_t bytes);

// How the type column is compared with the wanted classes in the server: exactly (another
// case, a trailing space, an accent is another class) and cheaply. A column in utf8mb4 (or
// utf8mb3, for classes it can hold) is compared in its `_nopad_bin` collation, characters
// that are the bytes sent; a binary column as it is; any other column (or a server without
// the collation) cast to bytes on both sides, which costs the server a copy per row. With a
// type path the compared value is `JSON_VALUE(payload, path)`, in the payload column's
// character set, compared by the same rules.
struct ClassComparison {
  std::string column;          // the type column as compared, e.g. "`eventClass` COLLATE utf8mb4_nopad_bin"
  std::string literal_prefix;  // put before each quoted class ("BINARY " or "")
};
Result<ClassComparison> ExactClassComparison(Connection& connection, const EventTableOptions& events,
                                             const std::vector<std::string>& classes);

// A time column's value as seconds ('YYYY-MM-DD HH:MM:SS[.f]', 'T' or a zone suffix
// accepted, the zone ignored), or nullopt.
std::optional<int64_t> EventTimeSeconds(std::string_view text);

// The server's clock when the statement began, in microseconds since the epoch: read in no
// time zone (UNIX_TIMESTAMP() and NOW(6) are the same instant), so no change of hour folds it.
inline constexpr const char* kServerMicros = "UNIX_TIMESTAMP() * 1000000 + MICROSECOND(NOW(6))";

// The head: the highest id and (with_time) its time column, in one indexed look, with the
// server's clock when it was read.
Result<Head> HeadOf(Connection& connection, const EventTableOptions& events, bool with_time);

// What page queries are padded to (PadQuery): `wanted`, at most half the server's
// max_allowed_packet (the rest is the query's own text), and 0 when that is no more than
// the server's net_buffer_length (nothing to gain).
Result<size_t> PageQueryBytes(Connection& connection, size_t wanted);

// The classes a run wants, in the order of ReadScope::classes (the page-visited one alone
// when that is empty).
std::vector<std::string> WantedClasses(const EventTableOptions& events, const ReadScope& scope);

// How the fallback rule judges holes on this table (see "Gaps"): "" when by the time column,
// else why by ids alone ("--settle-ids"; the table has no time column; its head's time does
// not parse). The reader and the dry run ask this one function.
Result<std::string> WhyJudgedByIds(Connection& connection, const EventTableOptions& events, uint64_t settle_ids);

// The highest event id in the table (kBeforeFirstId when it is empty).
Result<EventId> ReadHeadId(Connection& connection, const EventTableOptions& events);

// The lowest event id in the table (nullopt when it is empty).
Result<std::optional<EventId>> ReadFirstId(Connection& connection, const EventTableOptions& events);

// The events with ids in (after, upto] (after nullopt: from the first). With `max_seconds`
// above 0 the server gives up after that long (its max_statement_time): an error then.
Result<uint64_t> CountEvents(Connection& connection, const EventTableOptions& events,
                             std::optional<EventId> after, EventId upto, unsigned max_seconds = 0);

// The time columns of the events `a` and `b`, as stored (nullopt where either is missing).
Result<std::pair<std::optional<std::string>, std::optional<std::string>>> TimesOf(
    Connection& connection, const EventTableOptions& events, EventId a, EventId b);

// The MD5 of the event with id `id` (its class and payload), or nullopt when there is none:
// the same event on two servers has the same hash.
Result<std::optional<std::string>> EventHash(Connection& connection, const EventTableOptions& events, EventId id);
// The same as a scalar subquery (NULL when there is none), for a statement of bookkeeping
// that records which event a checkpoint stands on (the build's read mark).
std::string EventHashSql(const EventTableOptions& events, EventId id);
// "" when the event at `id` still has the hash `mark` recorded with a checkpoint (or no mark
// was recorded); else what differs, for a refusal: the event table is not the one read.
Result<std::string> ChangedSinceRead(Connection& connection, const EventTableOptions& events, EventId id,
                                     const std::string& mark);

// Per chunk of ids in (lo, hi] (chunk k holds ids with FLOOR(id / chunk) = k; `only`, when
// given, the chunks read): "count sum-of-ids[ checksum of classes and payloads, `full`]",
// keyed by the chunk's number as the server prints it. Two servers holding the same events
// in a chunk give it the same text.
Result<std::map<std::string, std::string>> ChunkSums(Connection& connection, const EventTableOptions& events,
                                                     EventId lo, EventId hi, EventId chunk, bool full,
                                                     const std::vector<std::string>* only);

// The commonest classes among the first `first` events: (class, count) rows, at most
// `top`, most frequent first (the class from the type path when there is one).
Result<Rows> CommonClasses(Connection& connection, const EventTableOptions& events, size_t first, size_t top);

// Checks the event table before any work: it exists; the type and payload columns (and,
// `with_time_column`, the time column) exist; the id column is an integer type, NOT NULL
// and unique (the primary key or a one-column unique index). A clear message naming the
// problem otherwise. Sets events.id_form: integers, or time-sortable ULIDs and UUIDv7s as text
// or bytes (base/id_form.h).
Status CheckEventTable(Connection& connection, EventTableOptions& events,
                       bool with_time_column = false);

// A value of the id column for a message: its text when printable (at most 40 bytes, then
// "..."), else its first 20 bytes in hex.
std::string Printable(std::string_view value);

// Sets events.id_form from the event table on `server` (one connection, closed again) when the
// table is there and passes CheckEventTable; leaves it as it was otherwise (the command's own
// check then says why). Every command that reads the event table starts with it.
void FindIdForm(const ConnectionOptions& server, EventTableOptions& events);

// Checks that the event table has each of `columns` (the fields declared read models read).
Status CheckReadColumns(Connection& connection, const EventTableOptions& events,
                        const std::vector<std::string>& columns);

// The statements a reader sends for one run's scope, made once (quoted for `connection`'s
// server, with `compare` from ExactClassComparison there).
class PageQuery {
 public:
  PageQuery(Connection& connection, const EventTableOptions& events, const ReadScope& scope,
            const std::string& until_time, const ClassComparison& compare, bool with_time);
  // The events in (lo, hi], at most `limit` of them, in id order (lo kBeforeFirstId: from the first).
  std::string Range(EventId lo, EventId hi, size_t limit) const;
  // The events in `ranges` (sorted by lo), in id order.
  std::string Ids(std::span<const IdRange> ranges) const;
  // One row of either statement into `batch`: counted, and kept when its payload came.
  void AddRow(Batch& batch, EventId id, char** values, unsigned long* lengths) const;
  // The time column's place in a row (-1: not read).
  int time_index() const { return time_index_; }
  // The class comparison the statements were made with.
  const std::string& compare_column() const { return compare_column_; }

 private:
  std::string select_;  // SELECT id, payload-or-NULL[, class index][, columns][, time] FROM table
  std::string id_;      // the id column, quoted
  IdForm form_;         // how it writes its ids
  std::string compare_column_;
  bool with_class_ = false;  // a row holds the class index
  size_t columns_ = 0;       // the declared read models' columns in a row
  int time_index_ = -1;
};

}  // namespace rw
