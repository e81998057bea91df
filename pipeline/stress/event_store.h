// EventStore: a stream-shaped event store in MariaDB (the write side `rewind stress`
// measures), and its snapshot store.
//
//   <events>     position BIGINT AUTO_INCREMENT PRIMARY KEY (the global order), stream,
//                version (1, 2, ... within the stream), type, payload (JSON), created_at;
//                UNIQUE (stream, version)
//   <snapshots>  (stream, version) PRIMARY KEY, state (JSON), created_at
//
// Append(stream, expected_version, events) writes versions expected+1.. in one transaction
// (START TRANSACTION, one multi-row INSERT, COMMIT): a command's events all, or none (the
// fault point stress-append-uncommitted sits between the INSERT and the COMMIT).
// Optimistic concurrency comes from the unique key, never from a read-then-write: when
// another writer got a version first, the insert fails with a duplicate key (1062) and
// Append returns kConflict; a deadlock (1213) between writers of one stream is kDeadlock.
// Both roll back and leave nothing; the caller brings its aggregate up to date (the events
// after the version it knew, or a reload) and re-runs its command.
//
// Thread safety: an EventStore uses one connection: one thread at a time. Writers on
// other threads use their own EventStore (and connection).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sample/order.h"
#include "stages/db/connection.h"

namespace rw {

struct EventStoreTables {
  std::string events = "es_events";
  std::string snapshots = "es_snapshots";
};

struct NewEvent {
  std::string type;
  std::string payload;
};

struct StreamEvent {
  int64_t version = 0;
  std::string type;
  std::string payload;
};

struct Snapshot {
  int64_t version = 0;
  std::string state;  // JSON
};

enum class AppendOutcome { kAppended, kConflict, kDeadlock };

class EventStore {
 public:
  EventStore(Connection& connection, EventStoreTables tables)
      : c_(connection), t_(std::move(tables)) {}

  // CREATE TABLE IF NOT EXISTS for both tables.
  Status Create();
  // kAppended (the stream's new version is expected_version + events.size()), or a
  // conflict or deadlock (nothing written). Any other failure is an error.
  Result<AppendOutcome> Append(const std::string& stream, int64_t expected_version,
                               const std::vector<NewEvent>& events);
  // The stream's current version (0 when it has none).
  Result<int64_t> Version(const std::string& stream);
  // Events with version >= from_version, in version order, appended to `out`.
  Status ReadStream(const std::string& stream, int64_t from_version, std::vector<StreamEvent>& out);
  Status SaveSnapshot(const std::string& stream, int64_t version, const std::string& state_json);
  Result<std::optional<Snapshot>> LoadLatestSnapshot(const std::string& stream);

  const EventStoreTables& tables() const { return t_; }

 private:
  Connection& c_;
  const EventStoreTables t_;
};

// Where an Order load's time went, in milliseconds.
struct LoadTimes {
  double fetch = 0, decode = 0, fold = 0, total = 0;
  double snapshot_fetch = 0;  // of `fetch`: the snapshot's read alone (0 without one)
};

// Rehydrates an Order: from its latest snapshot and the events after it (use_snapshot), or
// from its first event. `times` (optional) receives fetch (snapshot and events read),
// decode (JSON, snapshot included) and fold, and of fetch the snapshot's read alone.
Result<order::State> LoadOrder(EventStore& store, const std::string& stream, bool use_snapshot,
                               LoadTimes* times = nullptr);

// Decoding, with simdjson: an Order event's payload, and a snapshot's state. kInvalidInput
// with the reason when the JSON is not what the Order writes.
Result<order::Event> DecodeOrderEvent(const std::string& type, const std::string& payload);
Result<order::State> DecodeOrderSnapshot(const std::string& json);

}  // namespace rw
