#include <fmt/core.h>

#include <functional>
#include <latch>
#include <map>
#include <mutex>
#include <random>
#include <thread>

#include "base/fault.h"
#include "pipeline/stress/questions.h"
#include "pipeline/stress/rebuild.h"
#include "projectors/declared.h"
#include "stages/control/sleep.h"

namespace rw {
namespace {

class Appends : public Question {
 public:
  using Question::Question;

  // Question 4: appends by concurrent writers, then a check of every acknowledged append.
  // Writer counts 1 to 100 on distinct streams (each command places a new order) and on
  // one stream (each command reloads the order and adds a line; a conflict is retried).
  Status Run() override {
    Result<std::optional<std::string>> flush =
        h_.db().QueryValue("SELECT @@innodb_flush_log_at_trx_commit");
    Result<std::optional<std::string>> binlog = h_.db().QueryValue("SELECT @@log_bin");
    h_.context().durability =
        fmt::format("innodb_flush_log_at_trx_commit = {}, log_bin = {}",
                    flush.ok() && *flush ? **flush : "?", binlog.ok() && *binlog ? **binlog : "?");
    h_.Progress("question 4: appends by concurrent writers (" + h_.context().durability + ")");
    const std::vector<int> counts =
        h_.quick() ? std::vector<int>{1, 10, 100} : std::vector<int>{1, 2, 5, 10, 20, 50, 100};
    const int orders = h_.quick() ? 500 : 2000;  // distinct streams: commands of 11 events in a run
    const int hot_commands = h_.quick() ? 100 : 600;  // one stream: commands of 2 events in a run
    for (bool one_stream : {false, true}) {
      for (int writers : counts) {
        const std::string name =
            fmt::format("{}_{}", one_stream ? "one_stream" : "distinct", writers);
        const int per_writer = std::max(1, (one_stream ? hot_commands : orders) / writers);
        std::vector<double> rates, p50, p99;
        AppendRun sum;
        for (int r = 0; r < h_.repeat() && !h_.stopped(); ++r) {
          AppendRun run;
          if (Status s =
                  Appenders(fmt::format("{}-r{}", name, r), writers, one_stream, per_writer, run);
              !s.ok()) {
            return s.With(name);
          }
          rates.push_back(static_cast<double>(run.events) / run.seconds);
          p50.push_back(Percentile(run.latencies, 50));
          p99.push_back(Percentile(run.latencies, 99));
          for (auto [to, from] : std::initializer_list<std::pair<uint64_t*, uint64_t>>{
                   {&sum.commands, run.commands},
                   {&sum.successes, run.successes},
                   {&sum.give_ups, run.give_ups},
                   {&sum.attempts, run.attempts},
                   {&sum.conflicts, run.conflicts},
                   {&sum.deadlocks, run.deadlocks},
                   {&sum.retries, run.retries},
                   {&sum.events, run.events},
                   {&sum.lost, run.lost},
                   {&sum.duplicated, run.duplicated}}) {
            *to += from;
          }
        }
        if (sum.lost || sum.duplicated) h_.context().consistent = false;
        const std::string q = "concurrent_append";
        h_.Add(q, name, "writers", writers, "count");
        h_.AddSpread(q, name, "events_per_s", rates, "events/s");
        h_.AddSpread(q, name, "p50", p50, "ms");
        h_.AddSpread(q, name, "p99", p99, "ms");
        for (auto [metric, v] : std::initializer_list<std::pair<const char*, uint64_t>>{
                 {"commands", sum.commands},
                 {"successes", sum.successes},
                 {"give_ups", sum.give_ups},
                 {"attempts", sum.attempts},
                 {"conflicts", sum.conflicts},
                 {"deadlocks", sum.deadlocks},
                 {"retries", sum.retries},
                 {"events", sum.events},
                 {"lost", sum.lost},
                 {"duplicated", sum.duplicated}}) {
          h_.Add(q, name, metric, static_cast<double>(v), "count");
        }
        h_.Progress(fmt::format(
            "  {:<14} {:>3} writers: {:>8.0f} events/s, command p50 {:.2f} ms, p99 {:.2f} ms; {} "
            "commands, {} conflicts, {} deadlocks, {} retries, {} given up; {} lost, {} duplicated",
            name, writers, Median(rates), Median(p50), Median(p99), sum.commands, sum.conflicts,
            sum.deadlocks, sum.retries, sum.give_ups, sum.lost, sum.duplicated));
      }
    }
    return AppendsDuringRebuild(orders);
  }

 private:
  struct Acknowledged {
    std::string stream;
    int64_t version;
    std::string eid;
  };

  // What one run of appenders did. Every command ends as a success or a give-up; every
  // attempt as a success, a conflict or a deadlock; every conflict or deadlock is retried
  // unless it was the command's last attempt.
  struct AppendRun {
    double seconds = 0;
    std::vector<double> latencies;  // per command acknowledged, ms, retries included
    uint64_t commands = 0, successes = 0, give_ups = 0, attempts = 0, conflicts = 0, deadlocks = 0,
             retries = 0;
    uint64_t events = 0, lost = 0, duplicated = 0;
  };

  // A command's events, each payload marked with `eid`-N so the check can find it: placing
  // an order (created, nine lines, confirmed: 11 events on a new stream) or, on an order
  // loaded as `state`, adding a line (an item and a discount).
  static std::vector<NewEvent> CommandEvents(const std::string& stream, bool place,
                                             const order::State& state, const std::string& eid) {
    std::vector<NewEvent> out;
    const int64_t first = place ? 1 : state.version + 1, count = place ? 11 : 2;
    for (int64_t i = 0; i < count; ++i) {
      order::Event e;
      if (place) {
        e = order::Generate(stream, first + i, 11);
      } else if (i == 0) {
        e.kind = order::Kind::kItemAdded, e.sku = "SKU-0001", e.quantity = 1, e.cents = 999;
      } else {
        e.kind = order::Kind::kDiscountApplied, e.cents = 100;
      }
      std::string payload = order::Payload(stream, e);
      payload.insert(1, fmt::format("\"eid\":\"{}-{}\",", eid, i));
      out.push_back({order::TypeName(e.kind), std::move(payload)});
    }
    return out;
  }

  // Appends while rewind rebuilds a read model: 10 writers on distinct streams without and
  // with the pipeline rebuilding OrderSummary over its own event table again and again for as
  // long as they write, the two interleaved in each of --repeat rounds.
  Status AppendsDuringRebuild(int orders) {
    constexpr int kWriters = 10;
    const int64_t volume = h_.quick() ? 10000 : 100000;
    const std::string table = "es_rebuild_alongside";
    if (Status s = LoadRebuildEvents(h_, table, volume); !s.ok()) return s;
    Result<std::vector<ModelPlan>> plans = OrderSummaryModels();
    if (!plans.ok()) return plans.status();
    const ModelPlan& plan = (*plans)[0];
    if (Status s = Pipeline(h_, table, plan); !s.ok()) return s;  // records its tables; warms up
    const ReplayOptions po = PipelineOptions(h_, table, plan);
    int rebuilds = 0;
    const auto rebuild = [&](const std::atomic<bool>& done) -> Status {
      do {  // at least one rebuild, then more for as long as the writers write
        std::vector<std::unique_ptr<Projector>> projectors;
        projectors.push_back(MakeDeclaredProjector(plan));
        if (Status s = h_.RunPipeline(po, std::move(projectors)); !s.ok()) return s;
        ++rebuilds;
      } while (!done.load() && !h_.stopped());
      return Status::Ok();
    };
    std::map<bool, std::vector<double>> p50, p99, rates;
    uint64_t lost = 0, duplicated = 0;
    for (int r = 0; r < h_.repeat() && !h_.stopped(); ++r) {
      for (bool during : {false, true}) {
        AppendRun run;
        const std::string name = fmt::format("{}-r{}", during ? "during_rebuild" : "no_rebuild", r);
        Status s = during ? Appenders(name, kWriters, false, orders / kWriters, run, rebuild)
                          : Appenders(name, kWriters, false, orders / kWriters, run);
        if (!s.ok()) return s.With(name);
        p50[during].push_back(Percentile(run.latencies, 50));
        p99[during].push_back(Percentile(run.latencies, 99));
        rates[during].push_back(static_cast<double>(run.events) / run.seconds);
        lost += run.lost, duplicated += run.duplicated;
      }
    }
    if (lost || duplicated) h_.context().consistent = false;
    for (bool during : {false, true}) {
      const std::string c =
          fmt::format("{}_{}", during ? "during_rebuild" : "no_rebuild", kWriters);
      h_.AddSpread("append_during_rebuild", c, "p50", p50[during], "ms");
      h_.AddSpread("append_during_rebuild", c, "p99", p99[during], "ms");
      h_.AddSpread("append_during_rebuild", c, "events_per_s", rates[during], "events/s");
    }
    h_.Add("append_during_rebuild", "during_rebuild_10", "rebuilds", rebuilds, "count");
    h_.Add("append_during_rebuild", "during_rebuild_10", "rebuild_events",
           static_cast<double>(volume), "count");
    h_.Add("append_during_rebuild", "all", "lost", static_cast<double>(lost), "count");
    h_.Add("append_during_rebuild", "all", "duplicated", static_cast<double>(duplicated), "count");
    h_.Progress(
        fmt::format("  {} writers, command p50 / p99: {:.2f} / {:.2f} ms alone, {:.2f} / {:.2f} ms "
                    "while rewind "
                    "rebuilt {} events {} times",
                    kWriters, Median(p50[false]), Median(p99[false]), Median(p50[true]),
                    Median(p99[true]), volume, rebuilds));
    return h_.db().Execute("DROP TABLE IF EXISTS " + QuoteIdentifier(table));
  }

  // The attempts of a command on one stream before it gives up (question 4).
  static constexpr int kMaxAttempts = 10;

  // `writers` threads, each on its own connection, opened before the clock starts: every
  // writer connects, then waits at a start barrier; the clock starts when all are there and
  // stops at the last writer's last acknowledgement (before any connection closes). Each
  // runs `per_writer` commands: on streams of its own, or on one shared stream (created
  // before the clock) with optimistic concurrency: a conflict or deadlock reloads the
  // aggregate and runs the command again after a jittered backoff (up to kMaxAttempts).
  // Then every acknowledged event is looked for.
  // `alongside` (optional) runs on a thread of its own from the clock's start, told when the
  // writers are done; the check waits for it.
  Status Appenders(const std::string& name, int writers, bool one_stream, int per_writer,
                   AppendRun& run,
                   const std::function<Status(const std::atomic<bool>&)>& alongside = {}) {
    std::mutex mu;
    std::vector<Acknowledged> acked;
    Status failed;
    std::atomic<bool> abandon{false};
    const std::string prefix = fmt::format("q4-{}-", name);
    const std::string hot = prefix + "hot";
    if (one_stream) {  // the order the writers add lines to, created before the clock
      const order::Event e = order::Generate(hot, 1, 0);
      Result<AppendOutcome> r =
          h_.store().Append(hot, 0, {{order::TypeName(e.kind), order::Payload(hot, e)}});
      if (!r.ok()) return r.status();
    }
    std::latch connected(writers), go(1);
    std::vector<Clock::time_point> finished(static_cast<size_t>(writers));
    std::vector<std::thread> threads;
    for (int w = 0; w < writers; ++w) {
      threads.emplace_back([&, w] {
        AppendRun mine;
        std::vector<Acknowledged> my_acks;
        Status s;
        Result<std::unique_ptr<Connection>> c = Connection::Open(h_.connection());
        connected.count_down();
        if (!c.ok()) {
          abandon = true;
          std::lock_guard<std::mutex> lock(mu);
          failed = c.status();
          return;
        }
        go.wait();
        if (abandon.load()) return;
        EventStore es(**c, EventStoreTables{});
        std::mt19937 rng(static_cast<uint32_t>(w) * 7919u + 17u);
        for (int i = 0; i < per_writer && s.ok() && !h_.stopped(); ++i) {
          s = AppendCommand(es, one_stream ? hot : fmt::format("{}w{}-o{}", prefix, w, i),
                            one_stream, w, i, rng, mine, my_acks);
        }
        finished[static_cast<size_t>(w)] = Clock::now();
        std::lock_guard<std::mutex> lock(mu);
        if (!s.ok()) failed = s;
        run.latencies.insert(run.latencies.end(), mine.latencies.begin(), mine.latencies.end());
        acked.insert(acked.end(), my_acks.begin(), my_acks.end());
        run.commands += mine.commands, run.successes += mine.successes,
            run.give_ups += mine.give_ups;
        run.attempts += mine.attempts, run.conflicts += mine.conflicts,
            run.deadlocks += mine.deadlocks;
        run.retries += mine.retries, run.events += mine.events;
      });
    }
    connected.wait();  // every writer has its connection (or failed to open it)
    FaultPoint("stress-writers-ready");
    const auto start = Clock::now();
    go.count_down();
    std::atomic<bool> writers_done{false};
    Status side_status;
    std::thread side;
    if (alongside) side = std::thread([&] { side_status = alongside(writers_done); });
    for (auto& t : threads) t.join();
    writers_done = true;
    if (side.joinable()) side.join();
    if (!failed.ok()) return failed;
    if (!side_status.ok()) return side_status;
    run.seconds = Ms(start, *std::max_element(finished.begin(), finished.end())) / 1000;
    return CheckAppends(prefix, one_stream, acked, run);
  }

  // One command of writer `w` (its `seq`th) on `stream` through `es`, counted in `mine`, its
  // events added to `acks` once acknowledged. On one stream (`one_stream`) it reloads the
  // aggregate first; a conflict or deadlock runs it again after a jittered backoff drawn
  // from `rng`, up to kMaxAttempts, then gives up.
  Status AppendCommand(EventStore& es, const std::string& stream, bool one_stream, int w, int seq,
                       std::mt19937& rng, AppendRun& mine, std::vector<Acknowledged>& acks) {
    const auto t0 = Clock::now();
    ++mine.commands;
    const std::string eid = fmt::format("{}-{}", w, seq);
    for (int attempt = 1;; ++attempt) {
      order::State state;
      if (one_stream) {  // reload the aggregate, then decide
        Result<order::State> st = LoadOrder(es, stream, false);
        if (!st.ok()) return st.status();
        state = *st;
        if (state.status != "created")
          return Status::Internal(fmt::format("stream {} is not an open order", stream));
      }
      const std::vector<NewEvent> events = CommandEvents(stream, !one_stream, state, eid);
      ++mine.attempts;
      Result<AppendOutcome> r = es.Append(stream, state.version, events);
      if (!r.ok()) return r.status();
      if (*r == AppendOutcome::kAppended) {
        ++mine.successes;
        mine.events += events.size();
        mine.latencies.push_back(Ms(t0, Clock::now()));
        for (size_t i = 0; i < events.size(); ++i) {
          acks.push_back(
              {stream, state.version + 1 + static_cast<int64_t>(i), fmt::format("{}-{}", eid, i)});
        }
        return Status::Ok();
      }
      ++(*r == AppendOutcome::kConflict ? mine.conflicts : mine.deadlocks);
      if (attempt == kMaxAttempts) {
        ++mine.give_ups;
        return Status::Ok();
      }
      ++mine.retries;
      // Full jitter: a wait drawn from [0, min(20 ms, 0.5 ms x 2^attempt)).
      const double cap_ms = std::min(20.0, 0.5 * static_cast<double>(1 << attempt));
      const double wait_ms = std::uniform_real_distribution<double>(0, cap_ms)(rng);
      if (!SleepUnlessStopped(std::chrono::microseconds(static_cast<int64_t>(wait_ms * 1000)),
                              &h_.stop())) {
        return Status::Error(Status::Code::kCancelled, "stopped");
      }
    }
  }

  // The check of a run of appenders, on the streams whose names begin with `prefix`: every
  // stream's versions are exactly 1..n, a placed order has its 11 events (a command's events
  // all or none), every event `acked` is there with its own payload, and no payload is there
  // twice. What is not is counted in `run` (lost, duplicated).
  Status CheckAppends(const std::string& prefix, bool one_stream,
                      const std::vector<Acknowledged>& acked, AppendRun& run) {
    std::map<std::string, std::vector<int64_t>> versions;
    std::map<std::pair<std::string, int64_t>, std::string> stored;
    std::map<std::string, int> eids;
    Status read = h_.db().Stream(fmt::format("SELECT stream, version, JSON_VALUE(payload, '$.eid') "
                                             "FROM es_events WHERE stream LIKE {} ORDER BY "
                                             "stream, version",
                                             h_.db().Quote(prefix + "%")),
                                 [&](char** v, unsigned long* len) {
                                   const std::string stream(v[0], len[0]);
                                   const int64_t version = std::strtoll(v[1], nullptr, 10);
                                   versions[stream].push_back(version);
                                   const std::string eid = v[2] ? std::string(v[2], len[2]) : "";
                                   stored[{stream, version}] = eid;
                                   if (!eid.empty()) ++eids[eid];
                                 });
    if (!read.ok()) return read;
    for (const auto& [stream, vs] : versions) {
      for (size_t i = 0; i < vs.size(); ++i) {
        if (vs[i] != static_cast<int64_t>(i) + 1) ++run.lost;  // a gap or a repeat in 1..n
      }
      if (!one_stream && vs.size() != 11) ++run.lost;  // a command half there
    }
    for (const Acknowledged& a : acked) {
      auto it = stored.find({a.stream, a.version});
      if (it == stored.end() || it->second != a.eid) ++run.lost;
    }
    for (const auto& [eid, n] : eids) run.duplicated += n > 1 ? static_cast<uint64_t>(n - 1) : 0;
    return Status::Ok();
  }
};

}  // namespace

std::unique_ptr<Question> MakeAppends(Harness& h) { return std::make_unique<Appends>(h); }

}  // namespace rw
