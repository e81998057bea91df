// The first phase of a build (replay_build.h): Prepare and its steps, in order, and the dry
// run's Inspect; the checks of the tables in the way that every run and the dry run make.
#include "pipeline/replay/replay_build.h"

#include <fmt/core.h>

#include <algorithm>
#include <set>
#include <thread>

#include "base/fault.h"
#include "base/sha256.h"
#include "config/models.h"
#include "pipeline/replay/handlers_check.h"
#include "pipeline/replay/read_replica.h"
#include "pipeline/replay/segments.h"
#include "pipeline/version.h"
#include "projectors/declared.h"
#include "stages/control/console.h"
#include "stages/db/retry.h"
#include "stages/db/table_admin.h"
#include "stages/db/table_schema.h"
#include "stages/flow/page_query.h"
#include "stages/flow/reader.h"

namespace rw {
namespace {

std::string ShortHash(const std::string& text) { return Sha256Hex(text, 6); }

// What a build is a build of, as three short hashes "source-set-version": the event source
// (database, table, columns, class), the set of read models rebuilt together, and the read
// model's version (the shape of its table). A resume continues only an equal build.
std::string Fingerprint(const RunSpec& o, const std::vector<std::string>& names,
                        const Projector& p) {
  const EventTableOptions& e = o.events;
  std::string set;
  for (const std::string& n : names) set += n + "\x1f";
  // (A type path is appended only when given: builds that read a type column keep their source.)
  return ShortHash(fmt::format("{}\x1f{}\x1f{}\x1f{}\x1f{}\x1f{}{}", o.connection.database, e.table, e.id_column,
                               e.type_column, e.payload_column, e.page_visited_class,
                               e.type_path.empty() ? "" : "\x1fpath:" + e.type_path)) +
         "-" + ShortHash(set) + "-" + ReadModelVersion(p);
}

// Why a build fingerprinted `was` is not one a run fingerprinted `now` may continue, or ""
// when it is. A complete build (--build-only's, "built") stands on its own: builders on
// several hosts each build another set of read models, so only its set may differ.
std::string FingerprintMismatch(const std::string& was, const std::string& now, bool complete) {
  if (was == now) return "";
  if (was.size() != now.size()) return "it was made by an older rewind";
  if (was.substr(0, 12) != now.substr(0, 12)) {
    return "it read another event source (database, table, columns or event class)";
  }
  if (was.substr(26) != now.substr(26)) {
    return "it was built by another version of the read model (for a declared one: another declaration)";
  }
  return complete ? ""
                  : "it rebuilt another set of read models (an interrupted --build-only? finish it "
                    "first with its own command and --resume)";
}

struct Prepared {
  EventId resume_after = kBeforeFirstId;
  GapSet gaps;
  bool created = false;  // the target table was just created, empty
  bool fresh_under_resume = false;  // --resume, but nothing of it was interrupted
  uint64_t prior_applied = 0, prior_failed = 0, prior_missed = 0;  // by the interrupted part of the run
};

// What a plan's build table is, in messages and in rewind_tables.
std::string TableKind(const RunPlan& plan) {
  switch (plan.finish) {
    case RunPlan::Finish::kSwap: return "shadow";
    case RunPlan::Finish::kInto: return "--into";
    case RunPlan::Finish::kBuildOnly: return "shadow";
    case RunPlan::Finish::kScratch: return "scratch";
  }
  return "";
}

// Creates (or, resuming, finds) the target table and the checkpoint row of a projector.
// With `takes_built` (a shadow build), --resume also continues a complete build ("built").
// The run ids of the builds continued are added to `resumed_runs`.
// REQUIRES: CheckTablesInTheWay passed for it.
Result<Prepared> PrepareProjector(Connection& c, const Projector& p, const std::string& target,
                                  const live_shape::Judgement& shape,
                                  const std::string& kind, const EventTableOptions& events,
                                  const std::string& fingerprint, bool resume, bool takes_built,
                                  const std::string& run_id, EventId head,
                                  std::set<std::string>* resumed_runs, std::FILE* log) {
  const std::string name(p.name());
  bool fresh_under_resume = false;
  if (resume) {
    Result<std::optional<Checkpoint>> cp = checkpoint_store::Load(c, name, target);
    if (!cp.ok()) return cp.status();
    Result<bool> exists = table_admin::Exists(c, target);
    if (!exists.ok()) return exists.status();
    const bool built = *cp && (*cp)->status == CheckpointStatus::kBuilt;
    if (*cp && *exists && ((*cp)->status == CheckpointStatus::kBuilding || (built && takes_built))) {
      if (std::string why = FingerprintMismatch((*cp)->source, fingerprint, built); !why.empty()) {
        return Status::InvalidInput(fmt::format(
            "--resume refuses to continue the {} of {}: {}; run without --resume to rebuild it "
            "from the start",
            built ? "complete build (--build-only)" : "interrupted build", name, why));
      }
      Result<std::string> changed = ChangedSinceRead(c, events, (*cp)->last_event_id, (*cp)->read_mark);
      if (!changed.ok()) return changed.status();
      if (!changed->empty()) {
        return Status::InvalidInput(fmt::format(
            "--resume refuses to continue the {} of {}: {}; run without --resume to rebuild it from the start",
            built ? "complete build (--build-only)" : "interrupted build", name, *changed));
      }
      if (p.order_dependent() == nullptr || p.order_dependent()->resumes()) {
        resumed_runs->insert((*cp)->run_id);
        if (Status s = checkpoint_store::SetHead(c, name, target, head); !s.ok()) return s;
        fmt::print(log, "rewind: {} resumes after event {}\n", name,
                   (*cp)->last_event_id == kBeforeFirstId ? "(none)" : IdShown(events.id_form, (*cp)->last_event_id));
        return Prepared{(*cp)->last_event_id, (*cp)->gaps, false, false, (*cp)->events_applied,
                        (*cp)->failed_events, (*cp)->missed_events};
      }
      // Its per-visitor state lives only in memory, so a partial table cannot be
      // continued exactly: rebuild this one read model from the first event.
      fmt::print(log, "rewind: {} is order-dependent and restarts from the first event\n", name);
    } else {
      fresh_under_resume = true;  // said once for all of them (Build::Prepare)
    }
  }
  const std::string& live = p.table().name;
  if (Status s = shape.kind == live_shape::Kind::kApplications
                     ? table_admin::CreateOwnedLike(c, target, live, kind, events.table)
                     : table_admin::CreateOwned(c, p.table(), target, live, kind, events.table);
      !s.ok()) {
    return s;
  }
  Checkpoint cp;
  cp.projector = name;
  cp.target_table = target;
  cp.live_table = p.table().name;
  cp.status = CheckpointStatus::kBuilding;
  cp.run_id = run_id;
  cp.source = fingerprint;
  cp.rewind_version = BuildVersion();
  cp.head_event_id = head;
  if (Status s = checkpoint_store::Start(c, cp); !s.ok()) return s;
  return Prepared{kBeforeFirstId, {}, true, fresh_under_resume, 0, 0, 0};
}


// A read model that continues its live table (Build::FindTheLiveBuilds) from `cp`, the
// checkpoint of that table: from its last event, its watched holes and its counts.
Result<Prepared> ContinueLive(Connection& c, const Checkpoint& cp, EventId head) {
  if (Status s = checkpoint_store::SetHead(c, cp.projector, cp.target_table, head); !s.ok()) return s;
  return Prepared{cp.last_event_id, cp.gaps, false, false, cp.events_applied, cp.failed_events, cp.missed_events};
}

// Drops what killed scratch runs (verify) left behind: their tables and checkpoint rows,
// for every read model whose scratch lock nobody holds.
void CleanAbandonedScratch(Connection& c, const RunPlan& plan) {
  Result<std::vector<Checkpoint>> rows = checkpoint_store::WithTargetSuffix(c, plan.table_suffix);
  if (!rows.ok()) return;
  for (const Checkpoint& cp : *rows) {
    Result<bool> free = table_admin::IsFree(c, plan.lock_prefix, cp.live_table);
    if (!free.ok() || !*free) continue;
    // Only a table rewind recorded making; another is reported by CheckTablesInTheWay.
    if (!table_admin::DropOwned(c, cp.target_table).ok()) continue;
    (void)checkpoint_store::Delete(c, cp.projector, cp.target_table);
  }
}

}  // namespace

Result<LiveBuild> FindLiveBuild(Connection& c, const RunSpec& o, const RunPlan& plan,
                                const std::vector<std::string>& names, const Projector& p,
                                const std::vector<hand_over::Step>& hand_overs) {
  if (!o.resume || !o.follow || !plan.swap() || plan.segment) return LiveBuild{};
  const std::string name(p.name()), live = p.table().name;
  Result<bool> bookkeeping = table_admin::Exists(c, kCheckpointTable);
  if (!bookkeeping.ok()) return bookkeeping.status();
  if (!*bookkeeping) return LiveBuild{};
  Result<std::optional<Checkpoint>> building = checkpoint_store::Load(c, name, live + plan.table_suffix);
  if (!building.ok()) return building.status();
  if (*building) return LiveBuild{};  // an interrupted build: --resume continues it (PrepareProjector)
  Result<std::optional<Checkpoint>> cp = checkpoint_store::Load(c, name, live);
  if (!cp.ok()) return cp.status();
  if (!*cp || ((*cp)->status != CheckpointStatus::kLive && (*cp)->status != CheckpointStatus::kFollowing)) {
    return LiveBuild{};  // never built here: built, as any read model --resume finds nothing of
  }
  Result<bool> exists = table_admin::Exists(c, live);
  if (!exists.ok()) return exists.status();
  LiveBuild out;
  out.why_rebuilt = *exists ? FingerprintMismatch((*cp)->source, Fingerprint(o, names, p), true) : "its live table is gone";
  if (out.why_rebuilt.empty() && p.order_dependent() != nullptr && !p.order_dependent()->resumes()) {
    out.why_rebuilt = "it keeps part of its state in memory (its rows depend on the order of events across keys)";
  }
  if (out.why_rebuilt.empty() &&
      std::any_of(hand_overs.begin(), hand_overs.end(), [&](const hand_over::Step& h) { return h.read_model == name; })) {
    out.why_rebuilt = "its hand_over gave the table back to the application at the swap";
  }
  if (out.why_rebuilt.empty()) {
    Result<std::string> changed = ChangedSinceRead(c, o.events, (*cp)->last_event_id, (*cp)->read_mark);
    if (!changed.ok()) return changed.status();
    out.why_rebuilt = *changed;
  }
  if (out.why_rebuilt.empty()) out.checkpoint = std::move(**cp);
  return out;
}

Status Build::Prepare(std::vector<std::unique_ptr<Projector>> projectors) {
  GapSet watched;  // the holes the interrupted builds were watching
  // No database is said before no read model; Inspect (the dry run) asks for none.
  Status s = projectors.empty() && !o_.connection.database.empty() ? Status::InvalidInput("no read model selected")
                                                                   : Status::Ok();
  if (s.ok() && plan_.segment) s = segments::Split(projectors, *plan_.segment);
  if (s.ok()) s = ConnectToSource();
  if (s.ok()) s = PlanTheReads(projectors);
  if (s.ok()) s = NameTheTables(projectors);
  if (s.ok()) s = JudgeTheLiveTables(projectors);
  if (s.ok()) s = PrepareTheHandOvers(projectors);
  // Every table in the way is refused before any work (read-only, whatever the layout of
  // the bookkeeping), and again once the locks are held: the authoritative check.
  if (s.ok()) s = CheckTablesInTheWay();
  if (s.ok()) s = TakeOwnership();
  if (s.ok()) s = WatchTheApplicationsTables(projectors);
  if (s.ok()) s = ReadTheHead();
  if (s.ok()) s = CheckTheReadServer();
  if (s.ok()) s = ChooseTheFollowSource(projectors);
  if (s.ok()) s = PrepareRunners(std::move(projectors), &watched);
  if (s.ok()) s = StartReader(watched);
  if (s.ok()) s = StartRecorder();
  return s;
}

Status Build::ChooseTheFollowSource(const std::vector<std::unique_ptr<Projector>>& projectors) {
  if (!o_.follow) return Status::Ok();
  std::vector<std::string> in_order;
  for (const auto& p : projectors) {
    if (p->order_dependent() != nullptr) in_order.emplace_back(p->name());
  }
  Result<FollowChoice> choice = ChooseFollowSource(*admin_, o_, in_order, CanSeeOpenTransactions(*admin_));
  if (!choice.ok()) return choice.status();
  follow_choice_ = *choice;
  return Status::Ok();
}

Status Build::Inspect(std::vector<std::unique_ptr<Projector>>& projectors) {
  Status s = ConnectToSource();
  if (s.ok()) s = PlanTheReads(projectors);
  if (s.ok()) s = ReadTheHead();
  return s;
}

Result<std::unique_ptr<EventSource>> Build::SampleSource(size_t max_batch) const {
  Result<std::unique_ptr<Connection>> conn = Connection::Open(o_.connection);
  if (!conn.ok()) return conn.status();
  ReaderOptions ro = ReaderOptionsFor(o_, read_plan_.scope);
  ro.batch_size = std::min<size_t>(o_.batch_size, max_batch);
  ro.head_id = sum_.head_id;
  ro.connections = 1;
  ro.result_buffer = 0;
  Result<std::unique_ptr<Reader>> reader = Reader::Make(std::move(*conn), ro);
  if (!reader.ok()) return reader.status();
  return std::unique_ptr<EventSource>(std::move(*reader));
}

// Connects, and checks the event source: the event table, its id column, --until-id.
Status Build::ConnectToSource() {
  if (o_.connection.database.empty()) {
    return Status::InvalidInput("no database given: pass --database NAME or set REWIND_DATABASE");
  }
  Result<std::unique_ptr<Connection>> admin = Connection::Open(o_.connection);
  if (!admin.ok()) return admin.status();
  admin_ = std::move(*admin);
  EventTableOptions events = o_.events;
  if (Status s = CheckEventTable(*admin_, events, !o_.until_time.empty()); !s.ok()) return s;
  sum_.id_form = o_.events.id_form;
  if (events.id_form != o_.events.id_form) {  // the table was changed under this run's feet
    return Status::InvalidInput(fmt::format("the id column of '{}' changed its form (now {}) since this run began",
                                            events.table, IdFormName(events.id_form)));
  }
  return CheckUntilId(*admin_, o_);
}

// What to read and decode (binds the declared read models), checked before any work: the
// statements of read models of handlers too, each prepared by the server (handlers_check.h).
Status Build::PlanTheReads(std::vector<std::unique_ptr<Projector>>& projectors) {
  read_plan_ = PlanReads(o_.events, projectors);
  std::vector<const Projector*> ps;
  for (const auto& p : projectors) ps.push_back(p.get());
  Result<std::vector<std::string>> handlers = handlers_check::Prepare(*admin_, ps, o_.events.table);
  if (!handlers.ok()) return handlers.status();
  return CheckReadColumns(*admin_, o_.events, read_plan_.scope.columns);
}

// Each read model's live table, its build table (checked as a name) and the table locked.
Status Build::NameTheTables(const std::vector<std::unique_ptr<Projector>>& projectors) {
  for (const auto& p : projectors) {
    live_tables_.push_back(p->table().name);
    names_.emplace_back(p->name());
    lock_tables_.push_back(LockedTable(plan_, p->table().name));
  }
  return Status::Ok();
}

// Whether each live table is rewind's or the application's (kept in its shape), before any work.
Status Build::JudgeTheLiveTables(const std::vector<std::unique_ptr<Projector>>& projectors) {
  for (const auto& p : projectors) {
    Result<live_shape::Judgement> j = JudgeLiveTable(*admin_, *p, o_.reshape);
    if (!j.ok()) return j.status();
    if (plan_.segment && !j->bulk_load) {
      // Segments split keys by their bytes; keys the table's collation holds equal ('c1',
      // 'C1', 'c1 ') would land in two segments and collide at the merge.
      return Status::InvalidInput(fmt::format(
          "{} ({}): its table compares the key's text by a collation that folds case, accents or trailing spaces, "
          "and --segment splits keys by their bytes, so keys the table holds equal would fall into two segments; "
          "build it whole (without --segment); nothing was done",
          p->name(), p->table().name));
    }
    if (j->kind == live_shape::Kind::kApplications && p->table().by_statements) {
      fmt::print(stderr, "rewind: {} is the application's table: the rebuild keeps its shape (a copy LIKE it, "
                         "written by {}'s handlers' statements)\n",
                 p->table().name, p->name());
    } else if (j->kind == live_shape::Kind::kApplications) {
      fmt::print(stderr, "rewind: {} is the application's table: the rebuild keeps its shape (a copy LIKE it, "
                         "the read model's columns written by name){}\n",
                 p->table().name, j->bulk_load ? "" : ", by upserts: its key compares text by a collation");
    } else if (j->kind == live_shape::Kind::kReshaped) {
      fmt::print(stderr, "rewind: {} is the application's table: --reshape replaces it with rewind's shape and "
                         "keeps it aside as {}{}\n",
                 p->table().name, p->table().name, table_admin::kKeptSuffix);
    }
    shapes_.push_back(std::move(*j));
  }
  return Status::Ok();
}

Status Build::PrepareTheHandOvers(const std::vector<std::unique_ptr<Projector>>& projectors) {
  std::vector<const Projector*> ps;
  for (const auto& p : projectors) ps.push_back(p.get());
  Result<std::vector<hand_over::Step>> steps = hand_over::Prepare(*admin_, ps, o_.follow, plan_.swap(), o_.events.table);
  if (!steps.ok()) return steps.status();
  hand_overs_ = std::move(*steps);
  return Status::Ok();
}

// Once the locks are held (the bookkeeping at its layout): the read models a follower started
// again continues, then every live table the application may write (its own, or one handed
// back) is watched: its writes during the rebuild would be lost at the RENAME.
Status Build::WatchTheApplicationsTables(const std::vector<std::unique_ptr<Projector>>& projectors) {
  if (!plan_.swap()) return Status::Ok();
  if (Status s = FindTheLiveBuilds(projectors); !s.ok()) return s;
  Result<std::vector<hand_over::Watched>> watched = hand_over::Watch(*admin_, ApplicationsTables());
  if (!watched.ok()) return watched.status();
  watched_tables_ = std::move(*watched);
  return Status::Ok();
}

Status Build::FindTheLiveBuilds(const std::vector<std::unique_ptr<Projector>>& projectors) {
  continues_.assign(projectors.size(), std::nullopt);
  for (size_t i = 0; i < projectors.size(); ++i) {
    Result<LiveBuild> found = FindLiveBuild(*admin_, o_, plan_, names_, *projectors[i], hand_overs_);
    if (!found.ok()) return found.status();
    if (!found->why_rebuilt.empty()) {
      fmt::print(stderr, "rewind: {} is rebuilt from the first event: {}\n", names_[i], found->why_rebuilt);
      rebuilt_said_.insert(names_[i]);
    }
    continues_[i] = std::move(found->checkpoint);
  }
  return Status::Ok();
}

std::vector<std::pair<std::string, std::string>> Build::ApplicationsTables() const {
  std::vector<std::pair<std::string, std::string>> tables;
  for (size_t i = 0; i < live_tables_.size() && i < shapes_.size(); ++i) {
    if (continues(i)) continue;  // rewind's to write: it continues it
    if (hand_over::ApplicationMayWrite(shapes_[i].kind, live_tables_[i], hand_overs_)) {
      tables.emplace_back(names_[i], live_tables_[i]);
    }
  }
  return tables;
}

Status Build::CheckTablesInTheWay() {
  for (const std::string& live : live_tables_) {
    if (Status s = rw::CheckTablesInTheWay(*admin_, plan_, o_.events.table, live); !s.ok()) return s;
  }
  return Status::Ok();
}

// The bookkeeping at the current layout, the heartbeat, the named locks; then (for a
// scratch run) what killed runs of its kind left, and the tables in the way once more.
Status Build::TakeOwnership() {
  Connection& c = *admin_;
  if (Status s = checkpoint_store::Ensure(c); !s.ok()) return s;
  // The heartbeat names the admin connection before it takes the locks: a holder of them
  // without a beating run is a dead run's (table_admin::TakeLock).
  Result<std::unique_ptr<Heartbeat>> beat =
      Heartbeat::Start(o_.connection, c, sum_.run_id, plan_.scratch() ? "verify" : "replay");
  if (!beat.ok()) return beat.status();
  heartbeat_ = std::move(*beat);
  if (Status s = table_admin::Lock(c, lock_tables_, plan_.lock_prefix); !s.ok()) return s;
  locked_ = true;
  if (plan_.scratch()) CleanAbandonedScratch(c, plan_);
  return CheckTablesInTheWay();
}

// The head the rebuild reads to (--until-id caps it).
Status Build::ReadTheHead() {
  Result<EventId> head = ReadHeadId(*admin_, o_.events);
  if (!head.ok()) return head.status();
  sum_.head_id = o_.until_id ? std::min(*head, *o_.until_id) : *head;
  return Status::Ok();
}

// With --read-host/--read-socket: connects to each read server and checks it is a replica
// holding every event up to the head (read_replica.h), before any build table is made. With
// several, one that fails its check is left out, said on the console; the run is refused
// only when none passes.
Status Build::CheckTheReadServer() {
  if (!ReadsFromReplica(o_)) return Status::Ok();
  const std::vector<ConnectionOptions> servers = ReadServers(o_);
  Status first_failure;
  for (const ConnectionOptions& where : servers) {
    Result<std::unique_ptr<Connection>> c = CheckOneReadServer(where);
    if (!c.ok()) {
      if (c.status().code() == Status::Code::kCancelled) return c.status();
      if (servers.size() > 1) {
        fmt::print(stderr, "rewind: the replica {} is left out: {}\n", where.Describe(), c.status().message());
      }
      if (first_failure.ok()) first_failure = c.status();
      continue;
    }
    if (!read_server_) {
      read_server_ = std::move(*c);
    } else {
      more_read_servers_.push_back(where);
    }
  }
  if (!read_server_) {
    if (servers.size() == 1) return first_failure;
    return first_failure.With(fmt::format("none of the {} read servers passed its check; the first", servers.size()));
  }
  return Status::Ok();
}

// One read server's checks (CheckTheReadServer): its connection when it passes them.
Result<std::unique_ptr<Connection>> Build::CheckOneReadServer(const ConnectionOptions& where) {
  Result<std::unique_ptr<Connection>> c = ConnectToReadServer(where);
  if (!c.ok()) return c.status();
  Result<ReplicaCheck> check = CheckReplica(*admin_, **c, o_.events, sum_.run_id, plan_.lock_prefix,
                                            lock_tables_.front(), o_.read_wait_seconds, stop_);
  if (!check.ok()) return check.status();
  // Checked, not trusted: what it holds of the ids to read, chunk by chunk, against the primary.
  Result<ReplicaComparison> compared =
      CompareWithPrimary(*admin_, **c, o_.events, sum_.head_id, o_.read_check_full, sum_.run_id, plan_.lock_prefix,
                         lock_tables_.front(), o_.read_wait_seconds, stop_);
  if (!compared.ok()) return compared.status();
  if (!compared->diverged.empty()) {
    const IdRange& first = compared->diverged.front();
    return Status::InvalidInput(fmt::format(
        "the read server {} differs from the primary in {} of {} chunks of ids, the first ids {} to {} ({}), "
        "also after it showed a new marker: it has diverged (rows changed on it outside replication?). Nothing "
        "was created; rebuild reading from the primary (without --read-host/--read-socket), or repair the "
        "replica (pt-table-sync) and run again",
        (*c)->options().Describe(), compared->diverged.size(), compared->chunks, IdText(first.lo),
        IdText(first.hi), compared->first_difference));
  }
  fmt::print(
      stderr,
      "rewind: reading the events up to id {} from the replica {}: it lags {:.3f} s behind the "
      "primary (a marker written there was seen after that) and matches it in {} chunks of ids ({}; "
      "{:.2f} s on the primary); the catch-up and the cut-over read the primary\n",
      IdText(sum_.head_id), (*c)->options().Describe(), check->lag_seconds, compared->chunks,
      o_.read_check_full ? "counts, sums of ids and checksums of every event" : "counts and sums of ids",
      compared->primary_seconds);
  sum_.replica_lag_seconds = std::max(sum_.replica_lag_seconds.value_or(0), check->lag_seconds);
  return c;
}

// Prepares every projector (its build table and checkpoint), then gives it a runner on a
// connection of its own. A resumed run continues the interrupted run's id and failures.
Status Build::PrepareRunners(std::vector<std::unique_ptr<Projector>> projectors, GapSet* watched) {
  Connection& c = *admin_;
  EventId start_after = sum_.head_id;
  std::set<std::string> resumed_runs;
  size_t fresh_under_resume = 0;  // read models --resume found nothing of
  if (Status s = PrepareSegments(projectors); !s.ok()) return s;
  // Multi-row statements sized to the server's max_allowed_packet (1 MiB on some servers,
  // MySQL 5.7's 4 MiB): half of it, so that the row that closes a statement fits too.
  Result<std::optional<std::string>> packet = c.QueryValue("SELECT @@max_allowed_packet");
  if (!packet.ok()) return packet.status();
  const size_t statement_bytes =
      std::clamp<size_t>(*packet ? std::stoull(**packet) / 2 : size_t{8} << 20, 4096, RunnerOptions{}.statement_bytes);
  memory_ = std::make_shared<MemoryBudget>(o_.memory_bytes, projectors.size());
  for (auto& p : projectors) {
    const size_t i = runners_.size();
    const std::string target = continues(i) ? live_tables_[i] : p->table().name + plan_.table_suffix;
    const live_shape::Judgement& shape = shapes_[i];
    Result<Prepared> prep = continues(i) ? ContinueLive(c, *continues_[i], sum_.head_id)
                                         : PrepareProjector(c, *p, target, shape, TableKind(plan_), o_.events,
                                                            Fingerprint(o_, names_, *p), o_.resume, plan_.shadow(),
                                                            sum_.run_id, sum_.head_id, &resumed_runs, stderr);
    if (!prep.ok()) return prep.status().With(fmt::format("preparing {}", p->name()));
    if (rebuilt_said_.count(names_[i]) > 0) prep->fresh_under_resume = false;  // said with why
    // A live table continued continues its build's run: its failures stay with it, and the
    // decoder's past the lowest checkpoint are recorded again once (ContinueRuns).
    if (continues(i)) resumed_runs.insert(continues_[i]->run_id);
    start_after = std::min(start_after, prep->resume_after);
    for (const IdRange& r : prep->gaps.ranges()) watched->Add(r);
    fresh_under_resume += prep->fresh_under_resume ? 1 : 0;
    Result<std::unique_ptr<Connection>> conn = Connection::Open(o_.connection);
    if (!conn.ok()) return conn.status();
    RunnerOptions ro;
    ro.target_table = target;
    ro.resume_after_id = prep->resume_after;
    ro.gaps = prep->gaps;
    ro.target_starts_empty = prep->created;
    ro.flush_every_events = o_.flush_every_events;
    ro.flush_max_rows = o_.flush_max_rows;
    ro.write_every_events = o_.write_every_events;
    ro.statement_bytes = statement_bytes;
    ro.memory = memory_;
    ro.memory_slot = runners_.size();
    // A row must fit a statement: its text escaped (twice its bytes at most), and the rest.
    p->LimitValueBytes(statement_bytes / 2 - 1024);
    ro.mark_sql = [events = o_.events](EventId id) { return EventHashSql(events, id); };
    ro.run_id = continues(i) ? continues_[i]->run_id : sum_.run_id;  // its failures stay with its build
    ro.id_form = o_.events.id_form;
    ro.stop_on_failure = o_.stop_on_failure;
    ro.application_table = shape.kind == live_shape::Kind::kApplications;
    if (ro.application_table) ro.generated_columns = shape.generated;
    ro.bulk_load = shape.bulk_load;
    sum_.projectors.push_back(ProjectorSummary{std::string(p->name()), target, prep->resume_after});
    if (continues(i)) sum_.continued.push_back(names_[i]);
    prior_applied_.push_back(prep->prior_applied);
    prior_failed_.push_back(prep->prior_failed);
    prior_missed_.push_back(prep->prior_missed);
    Result<std::unique_ptr<ProjectorRunner>> r =
        ProjectorRunner::Make(std::move(p), std::move(*conn), ro);
    if (!r.ok()) return r.status();
    runners_.push_back(std::move(*r));
  }
  start_after_ = start_after;
  SayWhatResumes(fresh_under_resume);
  ContinueRuns(resumed_runs);
  return Status::Ok();
}

// What --resume found, in a line or two, not one per read model (a service starts so daily):
// the read models that continue their live tables, and those it found nothing of.
void Build::SayWhatResumes(size_t fresh_under_resume) const {
  if (!sum_.continued.empty()) {
    std::string which;
    for (size_t i = 0; i < runners_.size(); ++i) {
      if (!continues(i)) continue;
      const EventId after = continues_[i]->last_event_id;
      which += fmt::format("{}{} (after event {})", which.empty() ? "" : ", ", names_[i],
                           after == kBeforeFirstId ? "(none)" : IdShown(o_.events.id_form, after));
    }
    fmt::print(stderr, "rewind: --resume: {} read model(s) continue their live tables from their checkpoints: {}\n",
               sum_.continued.size(), which);
  }
  if (fresh_under_resume == 0) return;
  if (fresh_under_resume == runners_.size()) {
    fmt::print(stderr, "rewind: --resume: no interrupted rebuild; every read model is built from the first event\n");
  } else {
    fmt::print(stderr, "rewind: --resume: {} read model(s) had no interrupted rebuild and are built from the first event\n",
               fresh_under_resume);
  }
}

// The segment builds of the read models (segments.h), before their build tables are prepared,
// the locks held: a segment's build refuses segments of another count beside it; a whole
// rebuild without --resume starts afresh, dropping them; a swap with --resume merges them
// into one complete build, which it then continues as any other.
Status Build::PrepareSegments(const std::vector<std::unique_ptr<Projector>>& projectors) {
  Connection& c = *admin_;
  if (plan_.segment) return segments::CheckOneCount(c, names_, live_tables_, *plan_.segment);
  const bool whole = plan_.swap() || plan_.finish == RunPlan::Finish::kBuildOnly;
  for (size_t i = 0; whole && !o_.resume && i < projectors.size(); ++i) {
    if (Status s = segments::Discard(c, names_[i], live_tables_[i], plan_.lock_prefix); !s.ok()) return s;
  }
  for (size_t i = 0; plan_.swap() && o_.resume && i < projectors.size(); ++i) {
    if (continues(i)) continue;
    const Projector& p = *projectors[i];
    const std::string fingerprint = Fingerprint(o_, names_, p);
    const segments::MergeTarget t{p.table().name + plan_.table_suffix,
                                  shapes_[i].kind == live_shape::Kind::kApplications, fingerprint,
                                  [&](const std::string& was) { return FingerprintMismatch(was, fingerprint, true); }};
    if (Status s = segments::Merge(c, o_, p, t, plan_.lock_prefix); !s.ok()) return s;
  }
  return Status::Ok();
}

// The runs whose builds a resume continues. One: this run is that run, continued, so its
// failures stay together. Several (builds by --build-only runs on several hosts): this run
// keeps its own id. Either way the decoder's failures past the lowest checkpoint go (the
// events are read again and their failures recorded again), and the others are counted.
void Build::ContinueRuns(const std::set<std::string>& runs) {
  if (runs.size() == 1) {
    sum_.run_id = *runs.begin();
    for (auto& r : runners_) r->SetRunId(sum_.run_id);
  }
  for (const std::string& run : runs) {
    (void)checkpoint_store::DeleteFailuresAfter(*admin_, run, start_after_);
    Result<uint64_t> n = checkpoint_store::CountFailures(*admin_, run);
    if (n.ok()) prior_failures_ += *n;
  }
}

// The reader, from the lowest checkpoint to the head, and its throttle (if any).
Status Build::StartReader(const GapSet& watched) {
  Result<std::unique_ptr<Connection>> reader_conn =
      read_server_ ? Result<std::unique_ptr<Connection>>(std::move(read_server_))
                   : Connection::Open(o_.connection);
  if (!reader_conn.ok()) return reader_conn.status();
  reads_replica_ = ReadsFromReplica(o_);
  ReaderOptions ro = ReaderOptionsFor(o_, read_plan_.scope);
  ro.start_after_id = start_after_;
  ro.head_id = sum_.head_id;
  ro.watched = watched;
  ro.prove_with_server = !reads_replica_;  // a replica's transactions are not the primary's
  ro.replicas = reads_replica_;
  ro.more_servers = more_read_servers_;
  Result<std::unique_ptr<Reader>> reader = Reader::Make(std::move(*reader_conn), ro);
  if (!reader.ok()) return reader.status();
  Reader& r = **reader;
  // A run that will follow the binlog, where the server proves holes final: holes are judged by
  // the proof alone from the start, never by the fallback rule or the wall clock (a transaction
  // open past --settle keeps its hole watched; it is read under the cut-over's lock at the
  // latest), as following will judge them (follow.cc).
  if (o_.follow && follow_choice_.binlog && r.gap_counts().proves_with_server) r.FollowCommitLog();
  source_ = std::move(*reader);
  if (o_.max_events_per_second > 0 || o_.throttle_threads_running > 0) {
    std::unique_ptr<Connection> probe;
    if (o_.throttle_threads_running > 0) {
      Result<std::unique_ptr<Connection>> pc = Connection::Open(o_.connection);
      if (!pc.ok()) return pc.status();
      probe = std::move(*pc);
    }
    throttle_ = std::make_unique<Throttle>(
        ThrottleOptions{.max_events_per_second = o_.max_events_per_second, .max_threads_running = o_.throttle_threads_running}, std::move(probe),
        &stop_, [this](const std::string& state) {
          PrintLine(state.empty() ? "reading resumes" : state + "; reading pauses");
          SetNote(state);
        });
    r.SetThrottle(throttle_.get());
  }
  return Status::Ok();
}

// The failure recorder, the decoder, and the graph's branches: one per runner, and the
// recorder (which also counts what was read).
Status Build::StartRecorder() {
  Result<std::unique_ptr<Connection>> recorder_conn = Connection::Open(o_.connection);
  if (!recorder_conn.ok()) return recorder_conn.status();
  recorder_ = std::make_unique<FailureRecorder>(std::move(*recorder_conn), sum_.run_id, o_.stop_on_failure,
                                                o_.events.id_form);
  decoder_ = std::make_unique<Decoder>(read_plan_.catalog);
  for (size_t i = 0; i < runners_.size(); ++i) {
    ProjectorRunner* runner = runners_[i].get();
    branches_.push_back(Branch{names_[i], [runner](const Batch& b) { return runner->Consume(b); }, true});
  }
  branches_.push_back(Branch{"failure recorder",
                             [this](const Batch& b) {
                               sum_.events_read += b.rows_read;
                               sum_.skipped += b.skipped;
                               return recorder_->Consume(b);
                             },
                             false});
  return Status::Ok();
}

Status CheckTablesInTheWay(Connection& c, const RunPlan& plan, const std::string& events_table,
                           const std::string& live) {
  // The build table's name first: one the server cannot hold, or one of rewind's own.
  const std::string target = live + plan.table_suffix;
  if (target.size() > kMaxIdentifierBytes) {
    return Status::InvalidInput(fmt::format("the table name {} is longer than {} characters; "
                                            "choose a shorter suffix", target, kMaxIdentifierBytes));
  }
  if (Status s = table_admin::CheckNotReserved(target, events_table,
                                               fmt::format("the {} table of {}", TableKind(plan), live));
      !s.ok()) {
    return s;
  }
  if (plan.shadow()) {  // the swap replaces the live table, and drops the old copy
    if (Status s = table_admin::CheckNotReserved(live, events_table,
                                                 fmt::format("the live table of the read model {}", live));
        !s.ok()) {
      return s;
    }
    if (Status s = table_admin::CheckMayReplace(c, live + table_admin::kOldSuffix, events_table,
                                                fmt::format("the old copy of {} that the swap drops", live));
        !s.ok()) {
      return s;
    }
  }
  return table_admin::CheckMayReplace(c, live + plan.table_suffix, events_table,
                                      fmt::format("the {} table of {}", TableKind(plan), live));
}


}  // namespace rw
