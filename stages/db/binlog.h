// The server's binary log, read as a replica reads it: what a follower learns from it is
// which ids of the event table each committed transaction inserted, in commit order, each
// transaction once, a rolled-back one never (pipeline/replay/cutover.cc "Following by the
// binlog" says what the follower does with them; docs/replay.md what a server needs).
//
//   CheckBinlog        whether a server can serve it to this user, and if not, why: the
//                      binary log on (log_bin), in row format (binlog_format=ROW), whole
//                      rows (binlog_row_image=FULL), the REPLICATION SLAVE grant (dumping the
//                      log; its position, @@gtid_binlog_pos, anyone may read), an integer id column
//   ReadBinlogPosition the server's GTID position now (@@gtid_binlog_pos)
//   BinlogStream       a dump from a GTID position on a connection of its own, with a
//                      server id of its own (3,000,000,000 + its connection's id: unique on
//                      that server, far above the small ids replicas are given), grouped
//                      into the transactions that touched the event table
//
// The stream decodes the event table's row events (MariaDB writes them as version 1
// events): WRITE_ROWS give the ids inserted (only the id column is read: the payloads are
// read from the table, by id, as every other read is, so the server-side class filter and
// the decoder stay the one road in); UPDATE_ROWS and DELETE_ROWS are edits of immutable
// events, counted. A transaction is handed on at its commit (XID, or a COMMIT query for a
// non-transactional table). A statement-format change of the event table (a session that set
// binlog_format=STATEMENT) carries no ids, nor do rows libmariadb cannot decode (a CHAR in a
// multi-byte character set: "Malformed row data packet stream"): the transaction comes with
// `unreadable` set, and the follower looks at the table instead. The server sends a heartbeat every second
// when it has nothing to send, so Next() returns at least that often.
//
// Thread safety: a BinlogStream is used by one thread at a time.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/event_id.h"
#include "base/status.h"
#include "stages/db/connection.h"

struct st_mariadb_rpl;
struct st_mariadb_rpl_event;

namespace rw {

// Whether the binlog can be followed on a server, and if not the setting or grant missing.
struct BinlogAccess {
  bool usable = false;
  std::string why;  // usable: what was checked; else the first thing missing, and the way out
};

// Checks `c`'s server for following `table`'s (in c's database) id column `id_column`.
Result<BinlogAccess> CheckBinlog(Connection& c, const std::string& table, const std::string& id_column);

// The server's GTID position: every transaction it has written to its binary log so far
// ("" before the first).
Result<std::string> ReadBinlogPosition(Connection& c);

// One committed transaction that touched the event table.
struct Committed {
  std::vector<EventId> inserted;  // the ids it inserted, in the order written
  uint64_t edited = 0;            // event-table rows it updated or deleted
  // Its ids are unknown: it changed the table in statement format, or its rows could not be
  // decoded (`undecodable` says why).
  bool unreadable = false;
  std::string undecodable;
};

class BinlogStream {
 public:
  // Opens a dump of `options`' server from `position` (ReadBinlogPosition's form), following
  // the table `table` (in options.database) whose id column is `id_column`. A position the
  // server no longer has (its logs purged) is refused, naming it.
  static Result<std::unique_ptr<BinlogStream>> Open(const ConnectionOptions& options, const std::string& position,
                                                    const std::string& table, const std::string& id_column);
  ~BinlogStream();
  BinlogStream(const BinlogStream&) = delete;
  BinlogStream& operator=(const BinlogStream&) = delete;

  // The next committed transaction that touched the event table, or nullopt when the server
  // had nothing for it for about a second (a heartbeat). A lost connection is an error
  // (retryable); reopen from position().
  Result<std::optional<Committed>> Next();
  // The GTID position after the last transaction read (whole transactions only).
  std::string position() const;
  // Transactions and row events read (every table's), for the metrics.
  uint64_t transactions() const { return transactions_; }
  uint32_t server_id() const { return server_id_; }


 private:
  BinlogStream() = default;
  // Handles one event of the dump; sets `done` when it ends a transaction that touched the table.
  Status Take(st_mariadb_rpl_event* ev, bool& done);
  Status TakeRows(st_mariadb_rpl_event* ev);
  void EndGroup();

  std::unique_ptr<Connection> connection_;
  st_mariadb_rpl* rpl_ = nullptr;
  std::string database_, table_;
  unsigned id_index_ = 0;          // the id column's place in the row (0-based)
  uint32_t server_id_ = 0;
  std::map<uint32_t, std::string> gtids_;  // domain -> "domain-server-seq" of its last transaction
  uint64_t transactions_ = 0;
  // The group being read: its GTID, whether it is one statement (no XID follows), its table map.
  std::optional<std::pair<uint32_t, std::string>> open_gtid_;
  bool standalone_ = false;
  st_mariadb_rpl_event* table_map_ = nullptr;  // the event table's (owned)
  uint64_t table_id_ = ~0ull;
  Committed pending_;
  bool touched_ = false;
};

}  // namespace rw
