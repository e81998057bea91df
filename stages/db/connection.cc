#include "stages/db/connection.h"

#include <errmsg.h>
#include <fmt/core.h>
#include <mysql.h>
#include <mysqld_error.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>

#include "base/fault.h"

namespace rw {
namespace {

// Every open Connection of this process (for OwnThreadIds).
std::mutex& RegistryMutex() {
  static std::mutex mu;
  return mu;
}
std::vector<const Connection*>& Registry() {
  static std::vector<const Connection*> all;
  return all;
}

void InitLibraryOnce() {
  static std::once_flag once;
  std::call_once(once, [] { mysql_library_init(0, nullptr, nullptr); });
}

Status::Code Classify(unsigned err) {
  switch (err) {
    case CR_SERVER_GONE_ERROR:
    case CR_SERVER_LOST:
    case CR_CONNECTION_ERROR:
    case CR_CONN_HOST_ERROR:
    case CR_UNKNOWN_HOST:
    case ER_CONNECTION_KILLED:
    case ER_SERVER_SHUTDOWN:
    case 4031:  // ER_CLIENT_INTERACTION_TIMEOUT: the server closed an idle connection
      return Status::Code::kConnection;
    case ER_LOCK_DEADLOCK:
    case ER_LOCK_WAIT_TIMEOUT:
      return Status::Code::kRetryable;
    case ER_NO_SUCH_TABLE:
    case ER_BAD_FIELD_ERROR:
    case ER_BAD_DB_ERROR:
      return Status::Code::kNotFound;
    default:
      return Status::Code::kDatabase;
  }
}

// The LOCAL INFILE handler of every connection. It serves the buffer that LoadData()
// armed, for the file name LoadData() sent, once; any other request is refused.
int InfileInit(void** ptr, const char* filename, void* userdata) {
  auto* src = static_cast<InfileSource*>(userdata);
  *ptr = src;
  if (!src->armed || filename == nullptr || src->name != filename) {
    src->refused = filename ? filename : "";
    return 1;  // refused: the library sends the server an empty file and reports an error
  }
  src->armed = false;  // one request per LoadData()
  src->chunk = 0;
  src->offset = 0;
  return 0;
}
int InfileRead(void* ptr, char* buf, unsigned int len) {
  auto* src = static_cast<InfileSource*>(ptr);
  // Part of the file is with the server, the statement not done: a test kills rewind here.
  if (src->chunk > 0 || src->offset > 0) FaultPoint("mid-load-data");
  size_t n = 0;
  while (n < len && src->chunk < src->data.size()) {
    const std::string_view piece = src->data[src->chunk];
    const size_t k = std::min<size_t>(len - n, piece.size() - src->offset);
    std::memcpy(buf + n, piece.data() + src->offset, k);
    n += k;
    src->offset += k;
    if (src->offset == piece.size()) {
      ++src->chunk;
      src->offset = 0;
    }
  }
  return static_cast<int>(n);
}
void InfileEnd(void*) {}
int InfileError(void* ptr, char* msg, unsigned int len) {
  auto* src = static_cast<InfileSource*>(ptr);
  if (!src->refused.empty() || !src->armed) {
    std::snprintf(msg, len, "rewind refused the server's request for local file '%.200s': only "
                  "rewind's own in-memory LOAD DATA is served", src->refused.c_str());
    return 2000;  // CR_UNKNOWN_ERROR
  }
  std::snprintf(msg, len, "rewind: in-memory LOAD DATA source failed");
  return 2000;
}

}  // namespace

std::string ConnectionOptions::Describe() const {
  std::string where = !socket.empty() ? socket
                      : host.empty()  ? std::string("localhost")
                                      : fmt::format("{}:{}", host, port ? port : 3306);
  return fmt::format("{}@{}/{}", user.empty() ? "(default user)" : user, where, database);
}

Result<std::unique_ptr<Connection>> Connection::Open(const ConnectionOptions& options) {
  std::unique_ptr<Connection> c(new Connection(options));
  if (Status s = c->Connect(); !s.ok()) return s;
  std::lock_guard<std::mutex> lock(RegistryMutex());
  Registry().push_back(c.get());
  return c;
}

Connection::~Connection() {
  ClosePrepared();
  {
    std::lock_guard<std::mutex> lock(RegistryMutex());
    auto& all = Registry();
    all.erase(std::remove(all.begin(), all.end(), this), all.end());
  }
  if (mysql_ != nullptr) mysql_close(mysql_);
}

std::vector<unsigned long> Connection::OwnThreadIds() {
  std::lock_guard<std::mutex> lock(RegistryMutex());
  std::vector<unsigned long> ids;
  for (const Connection* c : Registry()) {
    if (c->thread_id() != 0) ids.push_back(c->thread_id());
  }
  return ids;
}

void Connection::ClosePrepared() {
  for (auto& [sql, st] : prepared_) mysql_stmt_close(st);
  prepared_.clear();
}

Status Connection::ExecuteBound(const std::string& sql, const BoundStatements& b, size_t first, size_t count,
                                unsigned* server_error) {
  *server_error = 0;
  auto failed = [&](MYSQL_STMT* st, std::string_view what) {
    *server_error = mysql_stmt_errno(st);
    return Status::Error(Classify(*server_error), fmt::format("{} [{}]: {} (error {})", what, sql.substr(0, 160),
                                                              mysql_stmt_error(st), *server_error));
  };
  auto found = prepared_.find(sql);
  if (found == prepared_.end()) {
    MYSQL_STMT* st = mysql_stmt_init(mysql_);
    if (st == nullptr) return Status::Internal("out of memory preparing a statement");
    if (mysql_stmt_prepare(st, sql.data(), sql.size()) != 0) {
      Status s = failed(st, "preparing a statement failed");
      mysql_stmt_close(st);
      return s;
    }
    found = prepared_.emplace(sql, st).first;
  }
  MYSQL_STMT* st = found->second;
  const size_t width = b.width;
  // Column-wise arrays (libmariadb's bulk binding): fixed-size values side by side, texts
  // as arrays of pointers and lengths, and an indicator per value (null or not).
  std::vector<MYSQL_BIND> binds(width);
  std::vector<std::vector<int64_t>> ints(width);
  std::vector<std::vector<double>> doubles(width);
  std::vector<std::vector<const char*>> texts(width);
  std::vector<std::vector<unsigned long>> lengths(width);
  std::vector<std::vector<char>> indicators(width);
  for (size_t p = 0; p < width; ++p) {
    MYSQL_BIND& bind = binds[p];
    std::memset(&bind, 0, sizeof bind);
    indicators[p].assign(count, STMT_INDICATOR_NONE);
    const BoundStatements::Type type = b.types[p];
    if (type == BoundStatements::Type::kInt) {
      ints[p].assign(count, 0);
      bind.buffer_type = MYSQL_TYPE_LONGLONG;
      bind.buffer = ints[p].data();
    } else if (type == BoundStatements::Type::kDouble) {
      doubles[p].assign(count, 0);
      bind.buffer_type = MYSQL_TYPE_DOUBLE;
      bind.buffer = doubles[p].data();
    } else {
      texts[p].assign(count, "");
      lengths[p].assign(count, 0);
      bind.buffer_type = type == BoundStatements::Type::kDecimal ? MYSQL_TYPE_NEWDECIMAL : MYSQL_TYPE_STRING;
      bind.buffer = texts[p].data();
      bind.length = lengths[p].data();
    }
    for (size_t r = 0; r < count; ++r) {
      const BoundStatements::Value& v = b.values[(first + r) * width + p];
      if (v.type == BoundStatements::Type::kNull) {
        indicators[p][r] = STMT_INDICATOR_NULL;
        continue;
      }
      const std::string_view text = b.text(v);
      if (type == BoundStatements::Type::kInt) {
        std::from_chars(text.data(), text.data() + text.size(), ints[p][r]);
      } else if (type == BoundStatements::Type::kDouble) {
        doubles[p][r] = std::strtod(std::string(text).c_str(), nullptr);
      } else {
        texts[p][r] = text.data();
        lengths[p][r] = text.size();
      }
    }
    bind.u.indicator = indicators[p].data();
  }
  unsigned int rows = static_cast<unsigned int>(count);
  if (mysql_stmt_attr_set(st, STMT_ATTR_ARRAY_SIZE, &rows) != 0) return failed(st, "binding a statement failed");
  if (width > 0 && mysql_stmt_bind_param(st, binds.data()) != 0) return failed(st, "binding a statement failed");
  if (mysql_stmt_execute(st) != 0) {
    Status s = failed(st, "a statement failed");
    if (s.code() == Status::Code::kConnection) {
      mysql_stmt_close(st);
      prepared_.erase(found);
    }
    return s;
  }
  return Status::Ok();
}

Status Connection::Connect() {
  InitLibraryOnce();
  ClosePrepared();
  if (mysql_ != nullptr) mysql_close(mysql_);
  thread_id_ = 0;
  mysql_ = mysql_init(nullptr);
  if (mysql_ == nullptr) return Status::Internal("out of memory creating a MariaDB handle");
  const unsigned connect_timeout = options_.connect_timeout_seconds;
  const unsigned rw_timeout = options_.read_timeout_seconds;
  mysql_optionsv(mysql_, MYSQL_OPT_CONNECT_TIMEOUT, &connect_timeout);
  mysql_optionsv(mysql_, MYSQL_OPT_READ_TIMEOUT, &rw_timeout);
  mysql_optionsv(mysql_, MYSQL_OPT_WRITE_TIMEOUT, &rw_timeout);
  mysql_optionsv(mysql_, MYSQL_SET_CHARSET_NAME, "utf8mb4");
  // Times in UTC on every connection, reconnects included: a TIMESTAMP column (an event
  // table's created_at) reads the same whatever the server's zone, and so does NOW().
  mysql_optionsv(mysql_, MYSQL_INIT_COMMAND, "SET time_zone = '+00:00'");
  // LOCAL INFILE is on so that rewind's own LoadData() can serve its buffer, and every
  // request is answered by rewind's handler, which serves nothing but that buffer: a
  // hostile server asking for a client file gets a refusal, never the file. The library's
  // file-reading default handler is never installed. (The option is read as an unsigned
  // int: a bool here leaves three bytes of garbage in it.)
  const unsigned int local_infile = 1;
  mysql_optionsv(mysql_, MYSQL_OPT_LOCAL_INFILE, &local_infile);
  mysql_set_local_infile_handler(mysql_, InfileInit, InfileRead, InfileEnd, InfileError, &infile_);
  const char* host = options_.socket.empty() && !options_.host.empty() ? options_.host.c_str()
                                                                        : nullptr;
  const char* socket = options_.socket.empty() ? nullptr : options_.socket.c_str();
  if (mysql_real_connect(mysql_, host, options_.user.empty() ? nullptr : options_.user.c_str(),
                         options_.password.empty() ? nullptr : options_.password.c_str(),
                         options_.database.empty() ? nullptr : options_.database.c_str(),
                         options_.port, socket, 0) == nullptr) {
    return LastError(fmt::format("cannot connect to MariaDB as {}", options_.Describe()));
  }
  thread_id_ = mysql_thread_id(mysql_);
  return Status::Ok();
}

Status Connection::Reconnect() { return Connect(); }

Status Connection::ReconnectTo(const ConnectionOptions& to) {
  options_ = to;
  return Connect();
}

Status Connection::LastError(std::string_view what) {
  const unsigned err = mysql_errno(mysql_);
  return Status::Error(Classify(err), fmt::format("{}: {} (error {})", what, mysql_error(mysql_), err));
}

Status Connection::Execute(std::string_view sql) {
  if (mysql_real_query(mysql_, sql.data(), sql.size()) != 0) {
    return LastError(fmt::format("query failed [{}]", sql.substr(0, 160)));
  }
  // Drain any result so that the connection is ready for the next statement.
  if (MYSQL_RES* res = mysql_store_result(mysql_)) mysql_free_result(res);
  return Status::Ok();
}

Result<Rows> Connection::Query(std::string_view sql) {
  if (mysql_real_query(mysql_, sql.data(), sql.size()) != 0) {
    return LastError(fmt::format("query failed [{}]", sql.substr(0, 160)));
  }
  MYSQL_RES* res = mysql_store_result(mysql_);
  Rows out;
  if (res == nullptr) {
    if (mysql_field_count(mysql_) != 0) return LastError("reading result");
    return out;
  }
  const unsigned n = mysql_num_fields(res);
  MYSQL_FIELD* fields = mysql_fetch_fields(res);
  for (unsigned i = 0; i < n; ++i) out.columns.emplace_back(fields[i].name);
  while (MYSQL_ROW row = mysql_fetch_row(res)) {
    unsigned long* len = mysql_fetch_lengths(res);
    auto& r = out.rows.emplace_back();
    for (unsigned i = 0; i < n; ++i) {
      if (row[i] == nullptr) {
        r.emplace_back(std::nullopt);
      } else {
        r.emplace_back(std::string(row[i], len[i]));
      }
    }
  }
  mysql_free_result(res);
  return out;
}

Result<std::optional<std::string>> Connection::QueryValue(std::string_view sql) {
  Result<Rows> r = Query(sql);
  if (!r.ok()) return r.status();
  if (r->rows.empty() || r->rows[0].empty()) return std::optional<std::string>();
  return r->rows[0][0];
}

Status Connection::Stream(std::string_view sql,
                          const std::function<void(char**, unsigned long*)>& on_row) {
  if (mysql_real_query(mysql_, sql.data(), sql.size()) != 0) {
    return LastError(fmt::format("query failed [{}]", sql.substr(0, 160)));
  }
  MYSQL_RES* res = mysql_use_result(mysql_);
  if (res == nullptr) return LastError("starting to read result");
  while (MYSQL_ROW row = mysql_fetch_row(res)) on_row(row, mysql_fetch_lengths(res));
  const unsigned err = mysql_errno(mysql_);
  mysql_free_result(res);
  if (err != 0) {
    return Status::Error(Classify(err),
                         fmt::format("reading rows failed: {} (error {})", mysql_error(mysql_), err));
  }
  return Status::Ok();
}


Status Connection::RefuseWarnings(std::string_view what, const std::vector<std::string>& computed) {
  const unsigned count = mysql_warning_count(mysql_);
  if (count == 0) return Status::Ok();
  std::string text;
  unsigned shown = 0, theirs = 0;
  if (Result<Rows> rows = Query(computed.empty() ? "SHOW WARNINGS LIMIT 3" : "SHOW WARNINGS"); rows.ok()) {
    for (const auto& r : rows->rows) {
      if (r.size() < 3) continue;
      const std::string message = r[2].value_or("");
      const bool generated = std::any_of(computed.begin(), computed.end(), [&](const std::string& column) {
        return message.find(fmt::format("column '{}'", column)) != std::string::npos ||
               message.find(fmt::format("column `{}`", column)) != std::string::npos;
      });
      if (generated) {
        ++theirs;
        continue;
      }
      if (++shown > 3) continue;
      text += fmt::format("{}{} {}: {}", text.empty() ? "" : "; ", r[0].value_or(""), r[1].value_or(""), message);
    }
    if (shown == 0 && theirs > 0 && rows->rows.size() >= count) return Status::Ok();
  }
  return Status::Error(Status::Code::kDatabase,
                       fmt::format("{}: the server changed what rewind wrote ({} warning(s): {})", what, count,
                                   text.empty() ? "SHOW WARNINGS gave none" : text));
}

Status Connection::LoadData(std::string_view load_tail, std::string_view data) {
  return LoadPieces(load_tail, std::span<const std::string_view>(&data, 1));
}

Status Connection::LoadData(std::string_view load_tail, const std::vector<std::string>& data) {
  const std::vector<std::string_view> pieces(data.begin(), data.end());
  return LoadPieces(load_tail, pieces);
}

Status Connection::LoadPieces(std::string_view load_tail, std::span<const std::string_view> data) {
  static std::atomic<uint64_t> counter{0};
  infile_.name = fmt::format("rewind-buffer-{}", counter.fetch_add(1));
  infile_.data = data;
  infile_.chunk = 0;
  infile_.offset = 0;
  infile_.refused.clear();
  infile_.armed = true;
  Status s = Execute(fmt::format("LOAD DATA LOCAL INFILE '{}' {}", infile_.name, load_tail));
  infile_.armed = false;
  infile_.data = {};
  return s;
}

void Connection::AppendQuoted(std::string& out, std::string_view bytes) {
  const size_t start = out.size();
  out.resize(start + bytes.size() * 2 + 3);
  out[start] = '\'';
  const unsigned long n =
      mysql_real_escape_string(mysql_, out.data() + start + 1, bytes.data(), bytes.size());
  out[start + 1 + n] = '\'';
  out.resize(start + n + 2);
}

std::string Connection::Quote(std::string_view bytes) {
  std::string out;
  AppendQuoted(out, bytes);
  return out;
}

std::string QuoteIdentifier(std::string_view name) {
  std::string out = "`";
  for (char c : name) {
    if (c == '`') out += '`';
    out += c;
  }
  out += '`';
  return out;
}

bool IsPlainIdentifier(std::string_view name, size_t max_bytes, bool leading_digit) {
  auto digit = [](char c) { return c >= '0' && c <= '9'; };
  auto plain = [&](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || digit(c) || c == '_';
  };
  if (name.empty() || name.size() > max_bytes) return false;
  if (!leading_digit && digit(name.front())) return false;
  return std::all_of(name.begin(), name.end(), plain);
}

}  // namespace rw
