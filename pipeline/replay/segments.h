// Segments: one declared read model built by N builders, each the share of its keys that
// hash to its segment (`replay NAME --build-only --segment I/N`, 0 <= I < N; the hash:
// projectors/segment.h), merged into one shadow table by the one swap (`replay NAME...
// --resume`).
//
// A segment's build is a --build-only build of its own: its table `<table>__rewind_seg<I>of<N>`,
// its checkpoint row (the id it was built to), its named lock on that table (one builder
// per segment; a segment's builder never waits on the live table's lock). Every event of
// a key falls in one segment, read there in id order, so count, sum, min, max, first and
// last stay exact; a compiled read model (its rows depend on the order of events across
// keys) is refused. An event a segment leaves to another is neither applied nor failed
// for it; an event whose key cannot be known (its key missing, or its payload not
// decoded) is counted, as failed, by segment 0 alone: the segments' counts add up to the
// whole build's.
//
// The swap merges, in two steps:
//  1. CatchUp (before the swap's build takes its locks): refuses an incomplete set of
//     segments (naming what is missing and what to run), then brings each segment up to
//     the head it reads, each as a `--build-only --resume --segment I/N` run of its own:
//     all N then stand at one event id.
//  2. Merge (in the swap's build, holding the live table's lock, before its read models are
//     prepared): takes the segments' locks, checks them again (complete, one count, one id,
//     the declaration's version), copies the N tables into the shadow table (INSERT ...
//     SELECT; keys are disjoint by construction, so a duplicate key fails the merge, a bug),
//     and in the same transaction writes the shadow's checkpoint as a complete build at
//     that id (applied and failed: the segments' sums; the holes watched: their union) and
//     deletes the segments' rows; then drops the segment tables. The swap then continues
//     that build as any complete --build-only build: catch-up and cut-over, one RENAME.
//
// Thread safety: stateless functions, each on the connection it is given.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "pipeline/engine/run_spec.h"
#include "projectors/projector.h"
#include "projectors/segment.h"
#include "stages/db/checkpoint_store.h"
#include "stages/db/connection.h"

namespace rw::segments {

// Splits each read model of a segment's build by `segment`; refuses (naming it) a read
// model that cannot be split, before any work.
Status Split(std::vector<std::unique_ptr<Projector>>& projectors, const Segment& segment);

// A segment's build, once its locks are held: refuses a read model that has segments of
// another count (a build in 3 segments does not mix with one in 4).
Status CheckOneCount(Connection& c, const std::vector<std::string>& names,
                     const std::vector<std::string>& live_tables, const Segment& segment);

// The segment builds of one read model, as its checkpoint rows say.
struct Found {
  std::string name, live;
  std::vector<std::pair<Segment, Checkpoint>> segments;  // by target table
  std::optional<Checkpoint> whole;                       // a complete whole build beside them
};
// nullopt when the read model has no segment build.
Result<std::optional<Found>> Find(Connection& c, const std::string& name, const std::string& live);
// Refuses a set of segments the swap cannot merge: of several counts, missing or unfinished
// ones (named, with the commands that build them), or beside a complete whole build.
Status CheckComplete(const Found& f);

// A rebuild without --resume starts afresh: the segment builds of the read model `name`
// (whose live table is `live`) are dropped, with their checkpoints, once their locks are
// taken (a live builder's refuses the run). Nothing when it has none.
Status Discard(Connection& c, const std::string& name, const std::string& live, const std::string& lock_prefix);

// Step 1 of the merge (above), for the read models of a --resume swap; nothing for a read
// model without segments. Returns the first refusal or error.
Status CatchUp(const RunSpec& o, const std::vector<std::unique_ptr<Projector>>& projectors,
               const std::atomic<bool>& stop);

// Step 2 of the merge (above) for `p` into `shadow` (made LIKE the live table when
// `like_live`, else from p's table), when it has segments; nothing otherwise. `mismatch`
// says why a build fingerprinted so is not one this run may continue ("" when it is).
// REQUIRES: the live table's lock is held on `c`.
struct MergeTarget {
  std::string shadow;
  bool like_live = false;
  std::string fingerprint;
  std::function<std::string(const std::string&)> mismatch;
};
Status Merge(Connection& c, const RunSpec& o, const Projector& p, const MergeTarget& target,
             const std::string& lock_prefix);

}  // namespace rw::segments
