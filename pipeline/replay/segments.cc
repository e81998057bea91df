#include "pipeline/replay/segments.h"

#include <fmt/core.h>

#include <algorithm>
#include <set>

#include "pipeline/engine/read_models.h"
#include "pipeline/replay/replay.h"
#include "stages/db/table_admin.h"
#include "stages/flow/page_query.h"

namespace rw::segments {

namespace {

std::string Texts(const std::vector<Segment>& ss) {
  std::string out;
  for (const Segment& s : ss) out += (out.empty() ? "" : ", ") + SegmentText(s);
  return out;
}

// The commands that build `missing` of `name`.
std::string Commands(const std::string& name, const std::vector<Segment>& missing) {
  std::string out;
  for (const Segment& s : missing) {
    out += fmt::format("{}`rewind replay {} --build-only --segment {}`", out.empty() ? "" : ", ", name, SegmentText(s));
  }
  return out;
}

// The holes the merged build watches: every segment's. A hole only some segments watch
// is exact only while it is empty: an event there now was applied by the segments that
// read it after it committed, and not by those that watch it.
Status UnionOfGaps(Connection& c, const RunSpec& o, const Found& f, GapSet& out) {
  for (const auto& [s, cp] : f.segments) {
    for (const IdRange& r : cp.gaps.ranges()) out.Add(r);
  }
  for (const IdRange& r : out.ranges()) {
    const bool by_all = std::all_of(f.segments.begin(), f.segments.end(), [&](const auto& sc) {
      GapSet unwatched;  // what of r this segment does not watch
      unwatched.Add(r);
      for (const IdRange& g : sc.second.gaps.ranges()) unwatched.Subtract(g);
      return unwatched.empty();
    });
    if (by_all) continue;
    Result<uint64_t> n = CountEvents(c, o.events, r.lo - 1, r.hi);
    if (!n.ok()) return n.status();
    if (*n > 0) {
      return Status::InvalidInput(fmt::format(
          "the segments of {} cannot be merged exactly: {} event(s) with ids {} to {} committed after some "
          "segments read past them and while others watched them as holes; rebuild the segments "
          "(`--build-only --segment I/N` without --resume), then swap; nothing was changed",
          f.name, *n, IdText(r.lo), IdText(r.hi)));
    }
  }
  return Status::Ok();
}

// Copies the segments into `shadow` and writes its checkpoint, deleting theirs, in one
// transaction. A key in two segments fails the copy: keys are disjoint by construction.
Status CopyIn(Connection& c, const Found& f, const std::string& shadow, const Checkpoint& merged,
              uint64_t applied, uint64_t failed, const std::string& mark) {
  if (Status s = c.Execute("START TRANSACTION"); !s.ok()) return s;
  Status s = Status::Ok();
  for (const auto& [seg, cp] : f.segments) {
    s = table_admin::CopyRows(c, cp.target_table, shadow);
    if (!s.ok()) {
      const bool duplicate = s.message().find("(error 1062)") != std::string::npos;
      s = s.With(fmt::format(
          "copying segment {} of {} into {}{}", SegmentText(seg), f.name, shadow,
          duplicate ? ": two segments hold keys the table's unique key holds equal (its collation folds case, "
                      "accents or trailing spaces, and segments split keys by their bytes): build this read model "
                      "whole, without --segment; nothing was swapped in"
                    : ""));
      break;
    }
  }
  if (s.ok()) s = checkpoint_store::Start(c, merged);
  if (s.ok()) {
    s = c.Execute(checkpoint_store::AdvanceSql(c, merged.projector, shadow, merged.last_event_id, merged.gaps,
                                               applied, 0, 0, failed, 0, 0));
  }
  if (s.ok()) {
    s = c.Execute(checkpoint_store::SetReadMarkSql(c, merged.projector, shadow, mark));
  }
  for (const auto& [seg, cp] : f.segments) {
    if (s.ok()) s = checkpoint_store::Delete(c, cp.projector, cp.target_table);
    if (s.ok()) s = checkpoint_store::MergeFailures(c, cp.run_id, merged.run_id, f.name);
  }
  if (s.ok()) s = c.Execute("COMMIT");
  if (!s.ok()) (void)c.Execute("ROLLBACK");
  return s;
}

// The checks of Merge once the segments' locks are held: complete, the same declaration,
// their tables there, and one id; the merged checkpoint (without its counts) in `merged`.
Status CheckMergeable(Connection& c, const Found& f, const MergeTarget& t, Checkpoint& merged) {
  if (Status s = CheckComplete(f); !s.ok()) return s;
  const EventId at = f.segments.front().second.last_event_id;
  for (const auto& [seg, cp] : f.segments) {
    if (std::string why = t.mismatch(cp.source); !why.empty()) {
      return Status::InvalidInput(fmt::format("the swap refuses to merge segment {} of {}: {}; rebuild it "
                                              "(`--build-only --segment {}` without --resume); nothing was changed",
                                              SegmentText(seg), f.name, why, SegmentText(seg)));
    }
    Result<bool> exists = table_admin::Exists(c, cp.target_table);
    if (!exists.ok()) return exists.status();
    if (!*exists) {
      return Status::InvalidInput(fmt::format("segment {} of {} has a checkpoint but no table {}: rebuild it "
                                              "(`--build-only --segment {}` without --resume); nothing was changed",
                                              SegmentText(seg), f.name, cp.target_table, SegmentText(seg)));
    }
    if (cp.last_event_id != at) {
      return Status::InvalidInput(fmt::format(
          "the segments of {} stand at different events ({} at {}, {} at {}): a builder moved one since the "
          "swap caught them up; run the swap again; nothing was changed",
          f.name, SegmentText(f.segments.front().first), IdText(at), SegmentText(seg), IdText(cp.last_event_id)));
    }
  }
  const Checkpoint& first = f.segments.front().second;
  merged.projector = f.name;
  merged.live_table = f.live;
  merged.status = CheckpointStatus::kBuilt;
  merged.run_id = first.run_id;  // its failures join it (MergeFailures)
  merged.source = t.fingerprint;
  merged.rewind_version = first.rewind_version;
  merged.last_event_id = at;
  merged.head_event_id = at;
  return Status::Ok();
}

}  // namespace

Status Split(std::vector<std::unique_ptr<Projector>>& projectors, const Segment& segment) {
  for (auto& p : projectors) {
    if (p->segmentable() == nullptr) {
      return Status::InvalidInput(fmt::format(
          "--segment {}: {} is {}, and its rows depend on the order of events across keys: it cannot be split by "
          "key; build it whole (without --segment, in a run of its own). Only declared read models of keys and "
          "values (--models) are built in segments",
          SegmentText(segment), p->name(),
          p->runs_statements() != nullptr ? "a read model of handlers (the application's statements)"
                                          : "a compiled read model"));
    }
  }
  for (auto& p : projectors) p->segmentable()->SetSegment(segment);  // every one can: none before
  return Status::Ok();
}

Status CheckOneCount(Connection& c, const std::vector<std::string>& names,
                     const std::vector<std::string>& live_tables, const Segment& segment) {
  for (size_t i = 0; i < names.size(); ++i) {
    // A whole build of the same read model (under way, interrupted or built) is the first
    // claim: a segment beside it would never merge with it.
    Result<std::vector<Checkpoint>> rows = checkpoint_store::ForLiveTable(c, live_tables[i]);
    if (!rows.ok()) return rows.status();
    for (const Checkpoint& cp : *rows) {
      if (cp.projector != names[i] || cp.target_table != live_tables[i] + table_admin::kShadowSuffix) continue;
      return Status::InvalidInput(fmt::format(
          "--segment {}: {} is already being built whole in {} ({}, run {}): segments beside it would not merge "
          "with it; finish that build (rewind replay --resume), or start afresh with a rebuild without --resume; "
          "nothing was done",
          SegmentText(segment), names[i], cp.target_table,
          cp.status ? std::string(CheckpointStatusText(*cp.status)) : std::string("unknown"), cp.run_id));
    }
    Result<std::optional<Found>> f = Find(c, names[i], live_tables[i]);
    if (!f.ok()) return f.status();
    if (!*f) continue;
    std::vector<Segment> other;
    for (const auto& [s, cp] : (*f)->segments) {
      if (s.count != segment.count) other.push_back(s);
    }
    if (other.empty()) continue;
    return Status::InvalidInput(fmt::format(
        "--segment {}: {} is being built in {} segments ({} found), not {}: segments of different counts do not "
        "merge; build the missing ones of those (--segment I/{}), or drop them with a rebuild of it without "
        "--resume (whole, or --build-only whole)",
        SegmentText(segment), names[i], other.front().count, Texts(other), segment.count, other.front().count));
  }
  return Status::Ok();
}

Result<std::optional<Found>> Find(Connection& c, const std::string& name, const std::string& live) {
  Result<std::vector<Checkpoint>> rows = checkpoint_store::ForLiveTable(c, live);
  if (!rows.ok()) return rows.status();
  Found f{name, live, {}, std::nullopt};
  for (Checkpoint& cp : *rows) {
    if (cp.projector != name) continue;
    if (std::optional<Segment> s = SegmentOfTable(live, cp.target_table)) {
      f.segments.emplace_back(*s, std::move(cp));
    } else if (cp.target_table == live + table_admin::kShadowSuffix && cp.status == CheckpointStatus::kBuilt) {
      f.whole = std::move(cp);
    }
  }
  if (f.segments.empty()) return std::optional<Found>();
  std::sort(f.segments.begin(), f.segments.end(), [](const auto& a, const auto& b) {
    return a.first.count != b.first.count ? a.first.count < b.first.count : a.first.index < b.first.index;
  });
  return std::optional<Found>(std::move(f));
}

Status CheckComplete(const Found& f) {
  std::set<uint32_t> counts;
  for (const auto& [s, cp] : f.segments) counts.insert(s.count);
  if (counts.size() > 1) {
    std::vector<Segment> all;
    for (const auto& [s, cp] : f.segments) all.push_back(s);
    return Status::InvalidInput(fmt::format(
        "the swap refuses to merge {}: its segments are of different counts ({}), which do not merge; nothing "
        "was changed", f.name, Texts(all)));
  }
  if (f.whole) {
    return Status::InvalidInput(fmt::format(
        "the swap refuses {}: it has both a complete whole build ({}) and segments; a rebuild of it without "
        "--resume (whole, or --build-only whole) drops the segments; nothing was changed",
        f.name, f.whole->target_table));
  }
  const uint32_t n = *counts.begin();
  std::vector<Segment> missing, unfinished;
  for (uint32_t i = 0; i < n; ++i) {
    const auto it = std::find_if(f.segments.begin(), f.segments.end(), [&](const auto& sc) { return sc.first.index == i; });
    if (it == f.segments.end()) {
      missing.push_back({i, n});
    } else if (it->second.status != CheckpointStatus::kBuilt) {
      unfinished.push_back({i, n});
    }
  }
  if (missing.empty() && unfinished.empty()) return Status::Ok();
  std::string what;
  if (!missing.empty()) what = fmt::format("segment(s) {} missing", Texts(missing));
  if (!unfinished.empty()) {
    what += fmt::format("{}segment(s) {} not complete (being built, or interrupted: continue with --resume)",
                        what.empty() ? "" : "; ", Texts(unfinished));
  }
  std::vector<Segment> to_run = missing;
  to_run.insert(to_run.end(), unfinished.begin(), unfinished.end());
  return Status::InvalidInput(fmt::format(
      "the swap refuses to merge {}: it is built in {} segments, with {}; run {} first, then the swap again; "
      "nothing was changed", f.name, n, what, Commands(f.name, to_run)));
}

Status Merge(Connection& c, const RunSpec& o, const Projector& p, const MergeTarget& t,
             const std::string& lock_prefix) {
  Result<std::optional<Found>> found = Find(c, std::string(p.name()), p.table().name);
  if (!found.ok()) return found.status();
  if (!*found) return Status::Ok();
  const Found& f = **found;
  std::vector<std::string> tables;
  for (const auto& [s, cp] : f.segments) tables.push_back(cp.target_table);
  // One builder per segment: none may be building one while it is merged.
  if (Status s = table_admin::Lock(c, tables, lock_prefix); !s.ok()) return s.With("merging the segments of " + f.name);
  Checkpoint merged;
  if (Status s = CheckMergeable(c, f, t, merged); !s.ok()) return s;
  if (Status s = UnionOfGaps(c, o, f, merged.gaps); !s.ok()) return s;
  merged.target_table = t.shadow;
  uint64_t applied = 0, failed = 0;
  for (const auto& [s, cp] : f.segments) {
    applied += cp.events_applied;
    failed += cp.failed_events;
  }
  const std::string& live = p.table().name;
  if (Status s = t.like_live ? table_admin::CreateOwnedLike(c, t.shadow, live, "shadow", o.events.table)
                             : table_admin::CreateOwned(c, p.table(), t.shadow, live, "shadow", o.events.table);
      !s.ok()) {
    return s;
  }
  Result<std::optional<std::string>> mark = EventHash(c, o.events, merged.last_event_id);
  if (!mark.ok()) return mark.status();
  if (Status s = CopyIn(c, f, t.shadow, merged, applied, failed, mark->value_or("")); !s.ok()) return s;
  for (const std::string& table : tables) (void)table_admin::DropOwned(c, table);
  fmt::print(stderr, "rewind: {}: merged its {} segments into {} at event {} ({} events applied, {} failed)\n",
             f.name, f.segments.size(), t.shadow, IdText(merged.last_event_id), applied, failed);
  return Status::Ok();
}

Status Discard(Connection& c, const std::string& name, const std::string& live, const std::string& lock_prefix) {
  Result<std::optional<Found>> found = Find(c, name, live);
  if (!found.ok()) return found.status();
  if (!*found) return Status::Ok();
  std::vector<std::string> tables;
  std::vector<Segment> segments;
  for (const auto& [s, cp] : (*found)->segments) {
    tables.push_back(cp.target_table);
    segments.push_back(s);
  }
  if (Status s = table_admin::Lock(c, tables, lock_prefix); !s.ok()) {
    return s.With(fmt::format("dropping the segment builds of {} (a rebuild without --resume starts afresh)", name));
  }
  for (const auto& [s, cp] : (*found)->segments) {
    if (Status d = table_admin::DropOwned(c, cp.target_table); !d.ok()) return d;
    if (Status d = checkpoint_store::Delete(c, cp.projector, cp.target_table); !d.ok()) return d;
  }
  fmt::print(stderr, "rewind: {}: a rebuild without --resume starts afresh: its segment builds ({}) are dropped\n",
             name, Texts(segments));
  return Status::Ok();
}

Status CatchUp(const RunSpec& o, const std::vector<std::unique_ptr<Projector>>& projectors,
               const std::atomic<bool>& stop) {
  if (o.connection.database.empty()) return Status::Ok();  // the build says so
  Result<std::unique_ptr<Connection>> conn = Connection::Open(o.connection);
  if (!conn.ok()) return conn.status();
  Connection& c = **conn;
  Result<int> layout = checkpoint_store::Version(c);
  if (!layout.ok()) return layout.status();
  if (*layout != kSchemaVersion) return Status::Ok();  // no segment was built on it
  std::vector<Found> all;
  for (const auto& p : projectors) {  // every refusal before any work
    Result<std::optional<Found>> f = Find(c, std::string(p->name()), p->table().name);
    if (!f.ok()) return f.status();
    if (!*f) continue;
    if (Status s = CheckComplete(**f); !s.ok()) return s;
    for (const auto& [seg, cp] : (*f)->segments) {
      Result<std::string> changed = ChangedSinceRead(c, o.events, cp.last_event_id, cp.read_mark);
      if (!changed.ok()) return changed.status();
      if (!changed->empty()) {
        return Status::InvalidInput(fmt::format(
            "segment {} of {} was built on other events: {}; segments read from different tables do not merge. "
            "Rebuild it without --resume (whole, or every segment again); nothing was swapped in",
            SegmentText(seg), (*f)->name, *changed));
      }
    }
    all.push_back(std::move(**f));
  }
  if (all.empty()) return Status::Ok();
  Result<EventId> head = ReadHeadId(c, o.events);
  if (!head.ok()) return head.status();
  for (const Found& f : all) {
    for (const auto& [seg, cp] : f.segments) {
      if (cp.last_event_id == *head) continue;
      const RunSpec one = o.ForSegment(f.name, seg, *head);
      ReplaySummary sum = RunRebuild(one, one.MakeSelected(), stop, PlanFor(one));
      if (!sum.status.ok()) {
        return sum.status.With(fmt::format("catching up segment {} of {} to event {}", SegmentText(seg), f.name,
                                           IdText(*head)));
      }
      // The catch-up's counts are the segment's (added to its checkpoint, so to the merged one's).
      const ProjectorSummary done = sum.projectors.empty() ? ProjectorSummary{} : sum.projectors.front();
      fmt::print(stderr, "rewind: {}: segment {} caught up to event {} ({} events applied, {} failed)\n", f.name,
                 SegmentText(seg), IdText(*head), done.events_applied, done.failed_events);
    }
  }
  return Status::Ok();
}

}  // namespace rw::segments
