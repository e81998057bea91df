// Connection: one MariaDB connection (MariaDB Connector/C), owned RAII-style.
//
// Errors come back as Status values classified for the caller's retry policy:
// kConnection (lost or unreachable: reconnect may help), kRetryable (deadlock, lock-wait
// timeout: rerun the transaction), kNotFound (missing table/column/database), kDatabase.
//
// Every connection (and every reconnect) runs in UTC (`SET time_zone = '+00:00'`), so a
// TIMESTAMP column reads the same whatever the server's or the user's zone.
//
// Thread safety: a Connection is used by one thread at a time. Open() may be called from
// any thread (the client library is initialised once, first).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/status.h"
#include "projectors/projector.h"

struct st_mysql;
struct st_mysql_stmt;

namespace rw {

struct ConnectionOptions {
  std::string host;      // empty: localhost (Unix socket)
  unsigned port = 0;     // 0: the client default (3306)
  std::string socket;    // Unix socket path; wins over host when set
  std::string user;      // empty: the OS user name, as the mariadb client does
  std::string password;
  std::string database;  // REQUIRES: non-empty for every command that reads events
  unsigned connect_timeout_seconds = 10;
  // Read/write timeouts bound how long a dead server can stall a stage.
  unsigned read_timeout_seconds = 600;

  // "user@socket/database" or "user@host:port/database", for messages.
  std::string Describe() const;
};

// A fully read result set: rows of nullable strings.
struct Rows {
  std::vector<std::string> columns;
  std::vector<std::vector<std::optional<std::string>>> rows;
};

// What a connection's LOCAL INFILE handler may serve: armed by LoadData() alone.
struct InfileSource {
  bool armed = false;
  std::string name;       // the file name LoadData() sent
  std::span<const std::string_view> data;  // served one after the other
  size_t chunk = 0;       // where the next read starts: data[chunk], at offset
  size_t offset = 0;
  std::string refused;    // the name of the last refused request
};

class Connection {
 public:
  static Result<std::unique_ptr<Connection>> Open(const ConnectionOptions& options);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  Status Execute(std::string_view sql);
  Result<Rows> Query(std::string_view sql);
  // First column of the first row, or nullopt for no row / NULL.
  Result<std::optional<std::string>> QueryValue(std::string_view sql);

  // Runs `sql` and streams its rows (mysql_use_result) to `on_row`, which receives the
  // column values (nullptr for NULL) and their lengths. The result is fully consumed
  // before this returns, so no stream stays open between calls.
  Status Stream(std::string_view sql,
                const std::function<void(char** values, unsigned long* lengths)>& on_row);

  // Runs `LOAD DATA LOCAL INFILE '<name>' <load_tail>` (the tail: `INTO TABLE ...`) with
  // `data` as the file's contents, served from memory: no temporary file, and no other
  // file. Every connection's LOCAL INFILE handler serves only this buffer, once, for the
  // name this call sent; it refuses any other request a server makes.
  Status LoadData(std::string_view load_tail, std::string_view data);
  // The same, with the data in pieces served one after the other (no copy into one buffer).
  Status LoadData(std::string_view load_tail, const std::vector<std::string>& data);

  // After a statement: an error naming `what` and the server's first warnings when the
  // statement left any, else Ok. A write the server changed silently (a value clamped or
  // truncated) is an error: LOAD DATA LOCAL turns strict mode's errors into warnings, and a
  // server's sql_mode cannot be trusted anyway.
  // Warnings that name one of `computed` ("... for column 'c' ...": the table's generated
  // columns, which the server computes as it does for the application's own writes) are not
  // rewind's values and are let through.
  Status RefuseWarnings(std::string_view what, const std::vector<std::string>& computed = {});

  // Runs the prepared statement `sql` once for each of `count` events of `b` from `first`
  // (BoundStatements, projectors/projector.h), their values bound by type, as one bulk
  // execution (array binding: one round trip). Statements are prepared once per connection.
  // `server_error`: the server's error number when it refused (0 otherwise).
  Status ExecuteBound(const std::string& sql, const BoundStatements& b, size_t first, size_t count,
                      unsigned* server_error);

  // Appends `bytes` as a quoted, escaped SQL string literal ('...') to `out`.
  void AppendQuoted(std::string& out, std::string_view bytes);
  std::string Quote(std::string_view bytes);

  // Re-establishes a lost connection with the same options (stages/db/retry.h decides when).
  Status Reconnect();
  // Connects to another server instead (`to`: its address and the rest), e.g. another
  // replica after this one's was lost (stages/flow/reader.h).
  Status ReconnectTo(const ConnectionOptions& to);
  const ConnectionOptions& options() const { return options_; }
  st_mysql* raw() { return mysql_; }
  // The server's id of this connection (0 before it connects).
  unsigned long thread_id() const { return thread_id_.load(); }
  // The server ids of every connection this process holds open: rewind's own.
  static std::vector<unsigned long> OwnThreadIds();

 private:
  explicit Connection(const ConnectionOptions& options) : options_(options) {}
  Status Connect();
  Status LastError(std::string_view what);
  // Both LoadData()s: the pieces served one after the other.
  Status LoadPieces(std::string_view load_tail, std::span<const std::string_view> data);

  void ClosePrepared();

  ConnectionOptions options_;
  st_mysql* mysql_ = nullptr;
  std::unordered_map<std::string, st_mysql_stmt*> prepared_;  // ExecuteBound's, by statement
  std::atomic<unsigned long> thread_id_{0};
  InfileSource infile_;
};

// `name` quoted as an SQL identifier: `name` with backticks doubled.
std::string QuoteIdentifier(std::string_view name);

// The longest table, column or database name MariaDB takes, in bytes.
inline constexpr size_t kMaxIdentifierBytes = 64;
// Whether `name` is a plain identifier: 1 to `max_bytes` ASCII letters, digits and '_' (it
// needs no quoting, and names the same thing on any server and in any file name), not
// starting with a digit unless `leading_digit` (a suffix, a database name). The one check of
// the names rewind is given (read models, columns, --into suffixes, the stress database).
bool IsPlainIdentifier(std::string_view name, size_t max_bytes = kMaxIdentifierBytes,
                       bool leading_digit = false);

}  // namespace rw
