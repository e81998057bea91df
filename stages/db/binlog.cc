#include "stages/db/binlog.h"

#include <fmt/core.h>
#include <mysql.h>
#include <mariadb_rpl.h>

#include <algorithm>
#include <cctype>

namespace rw {
namespace {

constexpr unsigned kPurgedOrUnknown = 1236;  // ER_MASTER_FATAL_ERROR_READING_BINLOG

std::string Lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char ch) { return std::tolower(ch); });
  return s;
}

std::string_view View(const MARIADB_STRING& s) { return {s.str == nullptr ? "" : s.str, s.length}; }

// Whether a global grant line gives `what` (ALL PRIVILEGES ON *.* gives everything).
bool Grants(const Rows& grants, std::string_view what) {
  for (const auto& row : grants.rows) {
    if (row.empty() || !row[0]) continue;
    const std::string& g = *row[0];
    if (g.find(" ON *.* ") == std::string::npos) continue;
    if (g.find("ALL PRIVILEGES") != std::string::npos || g.find(what) != std::string::npos) return true;
  }
  return false;
}

// The id's value in a decoded row, when it is an integer.
std::optional<EventId> IdOf(const MARIADB_RPL_VALUE& v) {
  if (v.is_null) return std::nullopt;
  switch (v.field_type) {
    case MYSQL_TYPE_TINY:
    case MYSQL_TYPE_SHORT:
    case MYSQL_TYPE_INT24:
    case MYSQL_TYPE_LONG:
    case MYSQL_TYPE_LONGLONG:
      return v.is_signed && v.val.ll < 0 ? std::nullopt : std::optional<EventId>(static_cast<EventId>(v.val.ull));
    default:
      return std::nullopt;
  }
}

// The GTIDs of a position ("0-1-100,1-2-7", as @@gtid_binlog_pos writes it), each trimmed.
std::vector<std::string> Gtids(const std::string& position) {
  std::vector<std::string> out;
  size_t from = 0;
  while (from < position.size()) {
    size_t comma = position.find(',', from);
    if (comma == std::string::npos) comma = position.size();
    const std::string piece = position.substr(from, comma - from);
    const size_t first = piece.find_first_of("0123456789");
    const size_t last = piece.find_last_of("0123456789");
    if (first != std::string::npos) out.push_back(piece.substr(first, last - first + 1));
    from = comma + 1;
  }
  return out;
}

}  // namespace

Result<BinlogAccess> CheckBinlog(Connection& c, const std::string& table, const std::string& id_column) {
  Result<Rows> vars = c.Query(
      "SELECT @@global.log_bin, @@global.binlog_format, @@global.binlog_row_image, "
      "(SELECT DATA_TYPE FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = " +
      c.Quote(table) + " AND COLUMN_NAME = " + c.Quote(id_column) + ")");
  if (!vars.ok()) return vars.status();
  const auto& row = vars->rows.at(0);
  auto value = [&](size_t i) { return row[i].value_or(""); };
  BinlogAccess access;
  if (value(0) != "1") {
    access.why = "the server writes no binary log (log_bin is OFF: start it with --log-bin)";
    return access;
  }
  if (Lower(value(1)) != "row") {
    access.why = fmt::format("binlog_format is {}, not ROW (SET GLOBAL binlog_format = 'ROW')", value(1));
    return access;
  }
  if (Lower(value(2)) != "full") {
    access.why = fmt::format("binlog_row_image is {}, not FULL (SET GLOBAL binlog_row_image = 'FULL')", value(2));
    return access;
  }
  const std::string type = Lower(value(3));
  if (type.find("int") == std::string::npos) {
    access.why = fmt::format("the id column {} is {}, not an integer: its ids are not read from the binlog",
                             id_column, type.empty() ? "unknown" : type);
    return access;
  }
  Result<Rows> grants = c.Query("SHOW GRANTS");
  if (!grants.ok()) return grants.status();
  if (!Grants(*grants, "REPLICATION SLAVE") && !Grants(*grants, "REPLICATION REPLICA")) {
    access.why = "this user lacks the REPLICATION SLAVE grant (GRANT REPLICATION SLAVE ON *.* TO ...)";
    return access;
  }
  access.usable = true;
  access.why = "log_bin ON, binlog_format ROW, binlog_row_image FULL, REPLICATION SLAVE granted";
  return access;
}

Result<std::string> ReadBinlogPosition(Connection& c) {
  Result<std::optional<std::string>> pos = c.QueryValue("SELECT @@global.gtid_binlog_pos");
  if (!pos.ok()) return pos.status();
  return pos->value_or("");
}

Result<std::unique_ptr<BinlogStream>> BinlogStream::Open(const ConnectionOptions& options,
                                                         const std::string& position, const std::string& table,
                                                         const std::string& id_column) {
  std::unique_ptr<BinlogStream> s(new BinlogStream());
  // The server sends a heartbeat every second: a dump silent for 10 s is a dead connection.
  ConnectionOptions dump = options;
  dump.read_timeout_seconds = 10;
  Result<std::unique_ptr<Connection>> c = Connection::Open(dump);
  if (!c.ok()) return c.status();
  s->connection_ = std::move(*c);
  Connection& conn = *s->connection_;
  // The names as the server stores them (and writes them in its table maps), whatever case
  // the options spelled them in (lower_case_table_names); the id column's place in a row.
  Result<Rows> place = conn.Query(
      "SELECT TABLE_SCHEMA, TABLE_NAME, ORDINAL_POSITION FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = "
      "DATABASE() AND TABLE_NAME = " +
      conn.Quote(table) + " AND COLUMN_NAME = " + conn.Quote(id_column));
  if (!place.ok()) return place.status();
  if (place->rows.empty() || !place->rows[0][0] || !place->rows[0][1] || !place->rows[0][2]) {
    return Status::NotFound(fmt::format("the event table {} has no column {}", table, id_column));
  }
  s->database_ = *place->rows[0][0];
  s->table_ = *place->rows[0][1];
  s->id_index_ = static_cast<unsigned>(std::stoul(*place->rows[0][2])) - 1;
  // A GTID position, the checksums the server writes, a heartbeat every second.
  if (Status st = conn.Execute(
          "SET @slave_connect_state = " + conn.Quote(position) +
          ", @slave_gtid_strict_mode = 0, @slave_gtid_ignore_duplicates = 0, @mariadb_slave_capability = 4, "
          "@master_binlog_checksum = @@global.binlog_checksum, @master_heartbeat_period = 1000000000");
      !st.ok()) {
    return st;
  }
  for (const std::string& gtid : Gtids(position)) s->gtids_[static_cast<uint32_t>(std::stoul(gtid))] = gtid;
  s->server_id_ = static_cast<uint32_t>(3'000'000'000u + conn.thread_id() % 1'000'000'000u);
  s->rpl_ = mariadb_rpl_init(conn.raw());
  if (s->rpl_ == nullptr) return Status::Internal("cannot start a binlog dump: out of memory");
  mariadb_rpl_optionsv(s->rpl_, MARIADB_RPL_SERVER_ID, s->server_id_);
  mariadb_rpl_optionsv(s->rpl_, MARIADB_RPL_START, 4);
  mariadb_rpl_optionsv(s->rpl_, MARIADB_RPL_FILENAME, "", 0);
  if (mariadb_rpl_open(s->rpl_) != 0) {
    return Status::Error(Status::Code::kDatabase, fmt::format("cannot read the binlog of {} from position '{}': {}",
                                     options.Describe(), position, mysql_error(conn.raw())));
  }
  return s;
}

BinlogStream::~BinlogStream() {
  if (table_map_ != nullptr) mariadb_free_rpl_event(table_map_);
  if (rpl_ != nullptr) mariadb_rpl_close(rpl_);
}

std::string BinlogStream::position() const {
  std::string out;
  for (const auto& [domain, gtid] : gtids_) out += (out.empty() ? "" : ",") + gtid;
  return out;
}

Result<std::optional<Committed>> BinlogStream::Next() {
  for (;;) {
    MARIADB_RPL_EVENT* ev = mariadb_rpl_fetch(rpl_, nullptr);
    if (ev == nullptr) {
      MYSQL* m = connection_->raw();
      const unsigned err = mysql_errno(m);
      if (err == kPurgedOrUnknown) {
        return Status::Error(Status::Code::kDatabase, fmt::format(
            "the binlog from position '{}' is not on the server (its logs purged, or another server's position): {}; rebuild the read models "
            "(rewind replay without --resume) to follow from the server's position now",
            position(), mysql_error(m)));
      }
      return Status::Error(Status::Code::kConnection,
                           fmt::format("reading the binlog: {} (error {})", mysql_error(m), err));
    }
    if (ev->event_type == HEARTBEAT_LOG_EVENT) {
      mariadb_free_rpl_event(ev);
      return std::optional<Committed>();
    }
    bool done = false;
    Status s = Take(ev, done);
    if (ev != table_map_) mariadb_free_rpl_event(ev);  // the event table's map is kept
    if (!s.ok()) return s;
    if (done) {
      Committed out = std::move(pending_);
      pending_ = Committed{};
      return std::optional<Committed>(std::move(out));
    }
  }
}

void BinlogStream::EndGroup() {
  if (open_gtid_) gtids_[open_gtid_->first] = open_gtid_->second;
  open_gtid_.reset();
  standalone_ = false;
  ++transactions_;
}

Status BinlogStream::Take(MARIADB_RPL_EVENT* ev, bool& done) {
  switch (ev->event_type) {
    case GTID_EVENT:
      open_gtid_ = {ev->event.gtid.domain_id,
                    fmt::format("{}-{}-{}", ev->event.gtid.domain_id, ev->server_id, ev->event.gtid.sequence_nr)};
      standalone_ = (ev->event.gtid.flags & FL_STANDALONE) != 0;
      touched_ = false;
      return Status::Ok();
    case TABLE_MAP_EVENT:
      if (View(ev->event.table_map.database) == database_ && View(ev->event.table_map.table) == table_) {
        if (table_map_ != nullptr && table_map_ != ev) mariadb_free_rpl_event(table_map_);
        table_map_ = ev;
        table_id_ = ev->event.table_map.table_id;
        if (ev->event.table_map.column_count <= id_index_) {
          return Status::Error(Status::Code::kDatabase, fmt::format("the binlog's rows of {} have {} columns: its id column is not among them",
                                           table_, ev->event.table_map.column_count));
        }
      }
      return Status::Ok();
    case WRITE_ROWS_EVENT_V1:
    case UPDATE_ROWS_EVENT_V1:
    case DELETE_ROWS_EVENT_V1:
    case WRITE_ROWS_EVENT:
    case UPDATE_ROWS_EVENT:
    case DELETE_ROWS_EVENT:
      return TakeRows(ev);
    case XID_EVENT:
      done = touched_;
      EndGroup();
      return Status::Ok();
    case QUERY_EVENT: {
      const std::string statement = Lower(std::string(View(ev->event.query.statement)));
      const bool ends = statement == "commit" || standalone_;
      // A statement naming the event table in a database: a statement-format change of it
      // (or DDL): its ids are not in the binlog.
      if (statement != "begin" && statement != "commit" && statement.find(Lower(table_)) != std::string::npos) {
        pending_.unreadable = true;
        touched_ = true;
      }
      if (ends) {
        done = touched_;
        EndGroup();
      }
      return Status::Ok();
    }
    default:
      return Status::Ok();
  }
}

Status BinlogStream::TakeRows(MARIADB_RPL_EVENT* ev) {
  if (table_map_ == nullptr || ev->event.rows.table_id != table_id_) return Status::Ok();
  touched_ = true;
  MARIADB_RPL_ROW* rows = mariadb_rpl_extract_rows(rpl_, table_map_, ev);
  if (rows == nullptr) {
    // libmariadb cannot decode some columns' rows (a CHAR in a multi-byte character set, as
    // Laravel's aggregate_uuid): the commit is known, its ids are not.
    pending_.unreadable = true;
    pending_.undecodable = mysql_error(connection_->raw());
    return Status::Ok();
  }
  const bool insert = ev->event_type == WRITE_ROWS_EVENT_V1 || ev->event_type == WRITE_ROWS_EVENT;
  const bool update = ev->event_type == UPDATE_ROWS_EVENT_V1 || ev->event_type == UPDATE_ROWS_EVENT;
  uint64_t n = 0;
  for (MARIADB_RPL_ROW* r = rows; r != nullptr; r = r->next, ++n) {
    if (!insert || r->column_count <= id_index_) continue;
    if (std::optional<EventId> id = IdOf(r->columns[id_index_])) pending_.inserted.push_back(*id);
  }
  if (!insert) pending_.edited += update ? n / 2 : n;  // an update is a (before, after) pair
  return Status::Ok();
}

}  // namespace rw
