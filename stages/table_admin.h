// TableAdmin: the tables a rebuild writes beside the live ones, the locks that make one
// rewind at a time per read model (and one ingest at a time per log file), and the
// cut-over's two lock steps.
//
// Lock names are server-wide (GET_LOCK works across machines) and at most 64 bytes: a
// longer name is hashed rather than cut, so two databases sharing a long prefix never
// block each other. Every wait here is bounded by a short lock_wait_timeout (about a
// second): a wait that times out comes back as kRetryable, and the caller retries with
// backoff until its own deadline, so no application query queues behind rewind for long.
//
// Thread safety: stateless functions; each call uses the connection it is given.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "projectors/projector.h"
#include "stages/connection.h"

namespace rw::table_admin {

// The server-wide lock name of one table under `prefix` ("rewind", "rewind-verify").
std::string LockName(const std::string& prefix, const std::string& database,
                     const std::string& table);
// `prefix:key`, or `prefix:#<hash of it>` when that is longer than 64 bytes.
std::string FitLockName(const std::string& prefix, const std::string& key);
// Takes the server-wide lock `name` (at most 64 bytes) on `c` without waiting; held until
// `c` closes. nullopt when it is taken (or already held by `c`), else the connection id of
// the session holding it ("?" when it let go meanwhile).
Result<std::optional<std::string>> TryLock(Connection& c, const std::string& name);
// Takes the lock of each table on `c` without waiting; held until `c` closes. kBusy with
// the holder's connection id when another rewind has one.
Status Lock(Connection& c, const std::vector<std::string>& tables, const std::string& prefix);
// True when nobody holds that lock.
Result<bool> IsFree(Connection& c, const std::string& prefix, const std::string& table);

Result<bool> Exists(Connection& c, const std::string& table);
// Drops `name` if it exists and creates it empty, of the shape `spec`.
Status Recreate(Connection& c, const TableSpec& spec, const std::string& name);
Status Drop(Connection& c, const std::string& name);

// Holds inserts into the event table off: LOCK TABLES <events> READ on `lock`, waiting at
// most about a second for the application's open transactions on it. Once it is held no
// insert is open, so every gap below the head is final. kRetryable when the wait timed out.
Status HoldWriters(Connection& lock, const std::string& events_table);
Status ReleaseWriters(Connection& lock);

// Swaps every `live + suffix` in for `live` with one RENAME TABLE (the old live tables are
// dropped after), waiting at most about a second for open transactions on them.
// kRetryable when the wait timed out; nothing was renamed then.
Status SwapIn(Connection& c, const std::vector<std::string>& live_tables, const std::string& suffix);

}  // namespace rw::table_admin
