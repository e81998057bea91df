// Reader: keyset-paged reads of the event table into Batches.
//
// Each Next() runs one `SELECT id, payload FROM <table> WHERE id > ? AND id <= <head>
// ORDER BY id LIMIT n` on the primary key (never OFFSET, never ORDER BY an unindexed
// column) and streams it completely before returning, so no result stream stays open
// while the pipeline applies backpressure. Events whose type no selected projector
// handles come back with a NULL payload (the filter runs in the server, their payloads
// never cross the wire) and are counted as skipped.
//
// A lost connection (server restart) is retried: reconnect with backoff, reread the page.
//
// Thread safety: one thread at a time (the pipeline's source node).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "stages/batch.h"
#include "stages/connection.h"

namespace rw {

struct EventTableOptions {
  std::string table = "stored_events";
  std::string id_column = "id";
  std::string type_column = "eventClass";
  std::string payload_column = "payload";
  // The event class that PageVisit projectors handle.
  std::string page_visited_class = "App\\Analytics\\PageVisited";
};

struct ReaderOptions {
  EventTableOptions events;
  // Events per batch. Larger batches amortise per-batch work; memory in flight is
  // about batch_size x max_in_flight x payload size.
  size_t batch_size = 20000;
  int64_t start_after_id = 0;  // resume point: read ids > this
  int64_t head_id = 0;         // read ids <= this (the head when the run started)
};

class Reader {
 public:
  // Validates that the table and columns exist. Takes ownership of the connection.
  static Result<std::unique_ptr<Reader>> Make(std::unique_ptr<Connection> connection,
                                              const ReaderOptions& options);

  // The next batch, or nullptr when every id up to head_id has been read.
  Result<std::unique_ptr<Batch>> Next();

  int64_t position() const { return after_id_; }
  uint64_t next_sequence() const { return next_sequence_; }
  // Moves the end of the range (follow mode: new events were appended).
  // REQUIRES: head_id >= the current head.
  void ExtendHead(int64_t head_id) { head_id_ = head_id; }

 private:
  Reader(std::unique_ptr<Connection> c, const ReaderOptions& o);
  Status ReadPage(const std::string& sql, Batch& batch, int64_t& last_id);
  static constexpr int kMaxReconnects = 8;  // ~1 minute of backoff in all

  std::unique_ptr<Connection> connection_;
  const ReaderOptions options_;
  int64_t head_id_;
  std::string query_prefix_;  // everything before the id bound
  int64_t after_id_;
  uint64_t next_sequence_ = 0;
  size_t last_payload_bytes_ = 0;  // to reserve the next batch's buffer in one go
  const std::shared_ptr<BufferPool> pool_ = std::make_shared<BufferPool>();
};

// The highest event id in the table (0 when it is empty): where a run stops reading.
Result<int64_t> ReadHeadId(Connection& connection, const EventTableOptions& events);

// Checks that the event table and its configured columns exist; a clear message if not.
Status CheckEventTable(Connection& connection, const EventTableOptions& events);

}  // namespace rw
