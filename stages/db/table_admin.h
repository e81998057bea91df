// TableAdmin: the tables a rebuild writes beside the live ones, the locks that make one
// rewind at a time per read model (and one ingest at a time per log file), and the
// cut-over's two lock steps.
//
// rewind destroys only what it made. Replacing a read model's live table is its job (the
// swap); beyond that it creates, replaces and drops only the tables it recorded creating
// (checkpoint_store's rewind_tables), never the event table or its own bookkeeping tables.
// A name's shape proves nothing: a user's table called `<t>__rewind_new` is not rewind's.
//
// Lock names are server-wide (GET_LOCK works across machines) and at most 64 bytes: a
// longer name is hashed rather than cut, so two databases sharing a long prefix never
// block each other. Every wait here is bounded by a short lock_wait_timeout (about a
// second): a wait that times out comes back as kRetryable, and the caller retries with
// backoff until its own deadline, so no application query queues behind rewind for long.
//
// A lock held by a connection whose run has stopped beating (stages/heartbeat) is a dead
// run's: the server has not noticed yet that its client is gone (the connection was inside
// a statement, or its machine vanished). TakeLock stops that connection (KILL, which a user
// may do to its own connections) and takes the lock once the server lets it go.
//
// Thread safety: stateless functions; each call uses the connection it is given.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "projectors/projector.h"
#include "stages/db/checkpoint_store.h"
#include "stages/db/connection.h"

namespace rw::table_admin {

// The tables rewind makes beside a live table `<t>`, named `<t>` + suffix: a rebuild's
// shadow, verify's scratch, and the old live table a swap moves away (dropped after it).
// Spelled here only; a declared read model's name may not end like them.
inline constexpr const char* kShadowSuffix = "__rewind_new";
inline constexpr const char* kVerifySuffix = "__rewind_verify";
inline constexpr const char* kOldSuffix = "__rewind_old";
// Where --reshape keeps the application's table it replaced: not recorded, never dropped.
inline constexpr const char* kKeptSuffix = "__rewind_kept";
inline constexpr const char* kOwnSuffixes[] = {kShadowSuffix, kVerifySuffix, kOldSuffix, kKeptSuffix};
// The suffix of kOwnSuffixes that `name` ends with (case-blind), or nullptr.
const char* OwnSuffixOf(std::string_view name);

// Refuses a `table` that is the event table or one of rewind's bookkeeping tables: rewind
// never creates, replaces or drops those. `what` says what the table would have been ("the
// --into target of visits_per_day"). By name only: no query.
Status CheckNotReserved(const std::string& table, const std::string& events_table,
                        const std::string& what);
// CheckNotReserved, then: OK when `table` does not exist or rewind recorded creating it;
// otherwise an error naming it and what to do. Changes nothing.
Status CheckMayReplace(Connection& c, const std::string& table, const std::string& events_table,
                       const std::string& what);
// Records `name` as rewind's (beside `live`, for `kind`), drops it if it exists, and creates
// it empty of the shape `spec`. Refuses (changing nothing) what CheckMayReplace refuses.
Status CreateOwned(Connection& c, const TableSpec& spec, const std::string& name,
                   const std::string& live, const std::string& kind,
                   const std::string& events_table);
// The same, of the shape of the table `live` (CREATE TABLE ... LIKE): the application's
// table kept (stages/db/live_shape.h).
Status CreateOwnedLike(Connection& c, const std::string& name, const std::string& live,
                       const std::string& kind, const std::string& events_table);
// Drops `name` and forgets it when rewind recorded creating it (OK when it does not exist);
// a table rewind did not make is left alone, with an error naming it.
Status DropOwned(Connection& c, const std::string& name);
// Copies every row of the build table `from` into the build table `into` (INSERT ... SELECT,
// in the caller's transaction when one is open): the swap's merge of a read model's
// segments. A key already in `into` fails it (the server's duplicate-key error).
// REQUIRES: both made by rewind for one read model (the same columns, in one order).
Status CopyRows(Connection& c, const std::string& from, const std::string& into);

// The server-wide lock name of one table under `prefix` ("rewind", "rewind-verify").
std::string LockName(const std::string& prefix, const std::string& database,
                     const std::string& table);
// `prefix:key`, or `prefix:#<hash of it>` when that is longer than 64 bytes.
std::string FitLockName(const std::string& prefix, const std::string& key);
// Takes the server-wide lock `name` (at most 64 bytes) on `c` without waiting; held until
// `c` closes. nullopt when it is taken (or already held by `c`), else the connection id of
// the session holding it ("?" when it let go meanwhile).
Result<std::optional<std::string>> TryLock(Connection& c, const std::string& name);
// Lets go of the lock `name` that `c` holds (one GET_LOCK's worth); nothing when it does not.
Status ReleaseLock(Connection& c, const std::string& name);
// Who holds a lock TakeLock could not take.
struct LockHolder {
  std::string connection;         // its connection id
  std::optional<RunRecord> run;   // its run, beating; nullopt: it keeps no heartbeat here
};
// How long TakeLock waits, after stopping a dead holder, for the server to let its lock go.
inline constexpr double kKilledHolderWaitSeconds = 30;
// Takes the lock `name` on `c` (held until `c` closes). When another connection holds it,
// judges the holder by its run's heartbeat (checkpoint_store::RunHoldingLocks):
//  - none (an older rewind, another program): not judged; returned at once;
//  - beating again while watched: alive; returned (within about kBeatIntervalSeconds);
//  - silent for kStaleSeconds: dead; its connection is stopped (KILL) and the lock taken
//    once the server lets it go (at most kKilledHolderWaitSeconds);
// meanwhile the lock is taken as soon as the holder lets go. What it waits for is printed on
// stderr, `what` naming the lock ("the lock on rebuilding visits_per_day"). Bounded: about
// kStaleSeconds + kKilledHolderWaitSeconds at most.
Result<std::optional<LockHolder>> TakeLock(Connection& c, const std::string& name,
                                           const std::string& what);
// Takes the lock of each table on `c` (TakeLock); held until `c` closes. kBusy naming the
// holder's connection when another rewind has one and is alive (or keeps no heartbeat).
Status Lock(Connection& c, const std::vector<std::string>& tables, const std::string& prefix);
// True when nobody holds that lock.
Result<bool> IsFree(Connection& c, const std::string& prefix, const std::string& table);

// Whether `table` exists in the connection's database, or in `schema` when given: the one
// test (checkpoint_store asks it of its own tables too).
Result<bool> Exists(Connection& c, const std::string& table, const std::string& schema = "");

// Holds inserts into the event table off: LOCK TABLES <events> READ on `lock`, waiting at
// most about a second for the application's open transactions on it. Once it is held no
// insert is open, so every gap below the head is final. kRetryable when the wait timed out.
Status HoldWriters(Connection& lock, const std::string& events_table);
Status ReleaseWriters(Connection& lock);
// Whether the hold taken by HoldWriters on `lock` (then the server's connection `holder`)
// still holds: the same connection answers, with the same id. A connection that was killed
// (a DBA's KILL, a proxy's idle timeout) released the lock, and inserts may have committed
// since: kRetryable, naming it. A LOCK TABLES is released only with its connection, so a
// hold alive now was held all along.
Status CheckHold(Connection& lock, unsigned long holder, const std::string& events_table);

// One live table of a swap: whether its rebuild is of rewind's shape (the live table is then
// recorded as rewind's, kind "live"; otherwise the application's, and not recorded), and
// whether the table it replaces is kept aside (--reshape: `live + kKeptSuffix`, not recorded).
struct Swapped {
  std::string live;
  bool rewinds_shape = true;
  bool keep_aside = false;
};
// Swaps every `live + suffix` in for `live` with one RENAME TABLE (the old live tables go to
// `live + kOldSuffix`, recorded, and are dropped after; or aside), waiting at most about a
// second for open transactions on them. kRetryable when the wait timed out; nothing was
// renamed then. An unrecorded `live + kOldSuffix` in the way is refused (Prepare refuses it
// first), and so is anything at `live + kKeptSuffix`.
Status SwapIn(Connection& c, const std::vector<Swapped>& tables, const std::string& suffix);

}  // namespace rw::table_admin
