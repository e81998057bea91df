// ReadReplica: reading the events from a replica (--read-host/--read-port/--read-socket)
// while the read models, checkpoints, locks, catch-up and cut-over stay on the primary.
//
// The bulk read of a rebuild goes to the replica, up to the head read on the primary at the
// start; whatever was appended after it (and the holes still watched) is read from the
// primary: the catch-up and the cut-over's final read, under the primary's lock. So a lagging
// replica loses nothing, as long as it holds every event up to that head: which
// CheckReplica proves before the first read, without any grant beyond the run's own (SHOW
// REPLICA STATUS needs one a read-only user lacks):
//  1. the read server is not the primary itself: it must not see this run's named lock
//     (locks are per server, never replicated), nor have the primary's server_id (a replica
//     skips the events that carry its own id);
//  2. it has the event table, with the primary's columns (names, types, collations);
//  3. a marker row written into rewind's own table on the primary (checkpoint_store) after
//     the head was read shows up there within --read-wait seconds: replication runs, in
//     commit order, so every event committed before the marker is there too. The time it
//     took is the lag reported;
//  4. the event at that head is there, the same (its payload's hash): the event table
//     itself is replicated, not filtered out.
// The same user and password reach both servers: a replica holds the primary's users.
//
// Thread safety: stateless functions; each uses the connections it is given.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "pipeline/engine/run_spec.h"
#include "base/status.h"
#include "base/event_id.h"
#include "stages/db/connection.h"
#include "stages/flow/reader.h"

namespace rw {

// Whether the events are read from servers other than the primary.
bool ReadsFromReplica(const RunSpec& spec);
// The read servers' connection options (spec.read_servers, in order): the primary's
// (user, password, database, timeouts) with each read server's address.
std::vector<ConnectionOptions> ReadServers(const RunSpec& spec);

// Connects to a read server; a server without the database is refused with what to do.
Result<std::unique_ptr<Connection>> ConnectToReadServer(const ConnectionOptions& where);

struct ReplicaCheck {
  double lag_seconds = 0;  // from the marker's write on the primary to its sight on the replica
  // The primary's head just before the marker: the replica holds every event up to it that
  // was committed then.
  EventId head = kBeforeFirstId;
};

// The checks above. `locked_table` is a table whose named lock (`lock_prefix`) the primary's
// connection holds for this run. A clear message naming what to do when one fails; kCancelled
// when `stop` is set while it waits.
Result<ReplicaCheck> CheckReplica(Connection& primary, Connection& replica,
                                  const EventTableOptions& events, const std::string& run_id,
                                  const std::string& lock_prefix, const std::string& locked_table,
                                  double wait_seconds, const std::atomic<bool>& stop);

// What the replica holds of the ids up to `head` compared with the primary, per chunk of ids
// (about 256 chunks), as pt-table-checksum compares chunks: each chunk's COUNT(*) and
// SUM(id) (`full`: also BIT_XOR of CRC32 of each event's class and payload) on both servers.
// A chunk that differs is compared again after the replica shows a new marker (a commit
// late on the primary reaches it by then); one that still differs has diverged. On the
// primary this costs one scan of the id range per comparison: index-only for the counts
// (the smallest index that holds the ids), every row for `full`.
struct ReplicaComparison {
  uint64_t chunks = 0;
  std::vector<IdRange> diverged;  // the id ranges of the chunks that differ
  std::string first_difference;   // e.g. "primary 1000 events, replica 902"
  double primary_seconds = 0;     // the primary's share of the time taken
};
Result<ReplicaComparison> CompareWithPrimary(Connection& primary, Connection& replica,
                                             const EventTableOptions& events, EventId head, bool full,
                                             const std::string& run_id, const std::string& lock_prefix,
                                             const std::string& locked_table, double wait_seconds,
                                             const std::atomic<bool>& stop);

}  // namespace rw
