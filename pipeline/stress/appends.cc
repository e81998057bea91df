#include <fmt/core.h>

#include <functional>
#include <latch>
#include <map>
#include <optional>
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
  // Writer counts 1 to 100 in three series, each command 11 events in one transaction: on
  // distinct streams (each command places a new order); on one stream as the article
  // measures it (each writer keeps the order and the version it knows, reads only the events
  // after that version on a conflict, and retries); and on one stream reloaded whole at every
  // attempt (an aggregate without snapshots), so that the two one-stream series compare.
  Status Run() override {
    Result<std::optional<std::string>> flush =
        h_.db().QueryValue("SELECT @@innodb_flush_log_at_trx_commit");
    Result<std::optional<std::string>> binlog = h_.db().QueryValue("SELECT @@log_bin");
    h_.context().durability =
        fmt::format("innodb_flush_log_at_trx_commit = {}, log_bin = {}",
                    flush.ok() && *flush ? **flush : "?", binlog.ok() && *binlog ? **binlog : "?");
    h_.Progress("question 4: appends by concurrent writers (" + h_.context().durability + ")");
    const std::vector<int> counts = h_.quick() ? std::vector<int>{1, 2, 5, 10, 100}
                                               : std::vector<int>{1, 2, 5, 10, 20, 50, 100};
    for (Mode mode : {Mode::kDistinct, Mode::kOneStream, Mode::kOneStreamReload}) {
      h_.Progress(SeriesWords(mode));
      for (int writers : counts) {
        if (Status s = Case(mode, writers); !s.ok()) return s;
      }
    }
    return AppendsDuringRebuild(Commands(Mode::kDistinct));
  }

 private:
  // The three series of question 4, named in the results' cases `<series>_<writers>`.
  enum class Mode {
    kDistinct,         // distinct: each command places a new order (a stream of its own)
    kOneStream,        // one_stream: one shared order, as the article measures it
    kOneStreamReload,  // one_stream_reload: the shared order reloaded whole at each attempt
  };

  // The events of every command, in every series: the size of a placed order.
  static constexpr int64_t kEventsPerCommand = 11;
  // The attempts of a command on one stream (either series) before it gives up: the row
  // max_attempts of their cases.
  static constexpr int kMaxAttempts = 10;

  static const char* SeriesName(Mode mode) {
    switch (mode) {
      case Mode::kDistinct:
        return "distinct";
      case Mode::kOneStream:
        return "one_stream";
      case Mode::kOneStreamReload:
        break;
    }
    return "one_stream_reload";
  }

  // The series' progress heading: what its commands do.
  static std::string SeriesWords(Mode mode) {
    switch (mode) {
      case Mode::kDistinct:
        return "  distinct streams: each command places a new order (11 events)";
      case Mode::kOneStream:
        return fmt::format(
            "  one stream, as the article: each writer keeps the order and the version it knows "
            "(loaded once, before the clock), appends 11 events with that version expected, and "
            "on a conflict reads only the events after it (up to {} attempts)",
            kMaxAttempts);
      case Mode::kOneStreamReload:
        break;
    }
    return fmt::format(
        "  one stream, reloaded (an aggregate without snapshots): each attempt reloads the whole "
        "stream, then appends 11 events (up to {} attempts)",
        kMaxAttempts);
  }

  // The commands of a run of a series, shared out among its writers. Both one-stream series
  // have as many as the one stream had when its commands were 2 events (100 --quick, 600),
  // now of 11 events each, but the full run's reload series half as many (300): its stream
  // would grow to 6,601 events, every attempt reloading it, and the series took 76 s of
  // each repeat here (1-100 writers; the article series 8-10 s); at 300, 21 s. Its stream
  // then ends half as long as the article series' (its reloads cheaper than at equal
  // length): the gap between the two is understated, not overstated. --quick keeps the
  // reload series at 100 (about 5 s of a --quick run here, its three repeats) and the
  // article series at 600, as the full run: the decision of one stream per aggregate
  // (its give-ups, which grow with the commands contending) is made on the same measure.
  int Commands(Mode mode) const {
    switch (mode) {
      case Mode::kDistinct:
        return h_.quick() ? 500 : 2000;
      case Mode::kOneStream:
        return 600;  // as many with --quick: one stream per aggregate is decided on it
      case Mode::kOneStreamReload:
        break;
    }
    return h_.quick() ? 100 : 300;
  }

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

    // The counters by their results' metric names.
    std::vector<std::pair<const char*, uint64_t*>> Counters() {
      return {{"commands", &commands},    {"successes", &successes}, {"give_ups", &give_ups},
              {"attempts", &attempts},    {"conflicts", &conflicts}, {"deadlocks", &deadlocks},
              {"retries", &retries},      {"events", &events},       {"lost", &lost},
              {"duplicated", &duplicated}};
    }
    // Adds `other`'s counters and latencies to these.
    void Add(AppendRun& other) {
      const auto mine = Counters(), theirs = other.Counters();
      for (size_t i = 0; i < mine.size(); ++i) *mine[i].second += *theirs[i].second;
      latencies.insert(latencies.end(), other.latencies.begin(), other.latencies.end());
    }
  };

  // What one writer of a run did: its counts, the events it had acknowledged, the order as it
  // knows it (one stream as the article), when it finished, and how.
  struct WriterRun {
    AppendRun counts;
    std::vector<Acknowledged> acks;
    order::State state;
    Clock::time_point finished;
    Status status;
  };

  // One point of question 4: `writers` writers of `mode`'s series, --repeat runs, its rows
  // (case `<series>_<writers>`) and its progress line.
  Status Case(Mode mode, int writers) {
    const std::string name = fmt::format("{}_{}", SeriesName(mode), writers);
    const int per_writer = std::max(1, Commands(mode) / writers);
    std::vector<double> rates, command_rates, p50, p99;
    AppendRun sum;
    for (int r = 0; r < h_.repeat() && !h_.stopped(); ++r) {
      AppendRun run;
      if (Status s = Appenders(fmt::format("{}-r{}", name, r), writers, mode, per_writer, run);
          !s.ok()) {
        return s.With(name);
      }
      rates.push_back(static_cast<double>(run.events) / run.seconds);
      command_rates.push_back(static_cast<double>(run.successes) / run.seconds);
      p50.push_back(Percentile(run.latencies, 50));
      p99.push_back(Percentile(run.latencies, 99));
      sum.Add(run);
    }
    if (sum.lost || sum.duplicated) h_.context().consistent = false;
    const std::string q = "concurrent_append";
    h_.Add(q, name, "writers", writers, "count");
    h_.Add(q, name, "events_per_command", static_cast<double>(kEventsPerCommand), "count");
    if (mode != Mode::kDistinct) h_.Add(q, name, "max_attempts", kMaxAttempts, "count");
    h_.AddSpread(q, name, "events_per_s", rates, "events/s");
    h_.AddSpread(q, name, "commands_per_s", command_rates, "commands/s");
    h_.AddSpread(q, name, "p50", p50, "ms");
    h_.AddSpread(q, name, "p99", p99, "ms");
    for (auto [metric, v] : sum.Counters())
      h_.Add(q, name, metric, static_cast<double>(*v), "count");
    h_.Progress(fmt::format(
        "    {:<21} {:>3} writers: {:>8.0f} events/s ({:.0f} commands/s), command p50 {:.2f} ms, "
        "p99 {:.2f} ms; {} commands, {} conflicts, {} deadlocks, {} retries, {} given up; {} "
        "lost, {} duplicated",
        name, writers, Median(rates), Median(command_rates), Median(p50), Median(p99), sum.commands,
        sum.conflicts, sum.deadlocks, sum.retries, sum.give_ups, sum.lost, sum.duplicated));
    return Status::Ok();
  }

  // The command's decision on the order as `state` knows it, 11 events either way: placing
  // it (distinct streams: created, nine lines, confirmed) or, on the one stream's order,
  // which must still be open ("created"), adding lines numbered after those it knows (an
  // item and a discount in turn).
  static Result<std::vector<order::Event>> Decide(const std::string& stream, Mode mode,
                                                  const order::State& state) {
    std::vector<order::Event> out;
    if (mode == Mode::kDistinct) {
      for (int64_t n = 1; n <= kEventsPerCommand; ++n)
        out.push_back(order::Generate(stream, n, kEventsPerCommand));
      return out;
    }
    if (state.status != "created")
      return Status::Internal(fmt::format("stream {} is not an open order", stream));
    for (int64_t i = 0; i < kEventsPerCommand; ++i) {
      order::Event e;
      if (i % 2 == 0) {
        e.kind = order::Kind::kItemAdded, e.quantity = 1, e.cents = 999;
        e.sku = fmt::format("SKU-{:04d}", (state.items + i / 2) % 9999 + 1);
      } else {
        e.kind = order::Kind::kDiscountApplied, e.cents = 100;
      }
      out.push_back(std::move(e));
    }
    return out;
  }

  // A command's events as appended, each payload marked with `eid`-N so the check can find it.
  static std::vector<NewEvent> Encode(const std::string& stream,
                                      const std::vector<order::Event>& events,
                                      const std::string& eid) {
    std::vector<NewEvent> out;
    for (size_t i = 0; i < events.size(); ++i) {
      std::string payload = order::Payload(stream, events[i]);
      payload.insert(1, fmt::format("\"eid\":\"{}-{}\",", eid, i));
      out.push_back({order::TypeName(events[i].kind), std::move(payload)});
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
    const RunSpec po = PipelineSpec(h_, table);
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
        Status s = during
                       ? Appenders(name, kWriters, Mode::kDistinct, orders / kWriters, run, rebuild)
                       : Appenders(name, kWriters, Mode::kDistinct, orders / kWriters, run);
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

  // `writers` threads, each on its own connection, opened before the clock starts: every
  // writer connects, then waits at a start barrier; the clock starts when all are there and
  // stops at the last writer's last acknowledgement (before any connection closes). Each
  // runs `per_writer` commands of `mode`'s series: on streams of its own, or on one shared
  // stream (its order created before the clock, version 1) with optimistic concurrency.
  // Then every acknowledged event is looked for, and on one stream as the article the order
  // each writer knows is compared with the stream's.
  // `alongside` (optional) runs on a thread of its own from the clock's start, told when the
  // writers are done; the check waits for it.
  Status Appenders(const std::string& name, int writers, Mode mode, int per_writer, AppendRun& run,
                   const std::function<Status(const std::atomic<bool>&)>& alongside = {}) {
    const std::string prefix = fmt::format("q4-{}-", name);
    if (mode != Mode::kDistinct) {  // the order the writers add lines to, created before the clock
      const std::string hot = StreamOf(prefix, mode, 0, 0);
      const order::Event e = order::Generate(hot, 1, 0);
      Result<AppendOutcome> r =
          h_.store().Append(hot, 0, {{order::TypeName(e.kind), order::Payload(hot, e)}});
      if (!r.ok()) return r.status();
    }
    std::atomic<bool> abandon{false};
    std::latch connected(writers), go(1);
    std::vector<WriterRun> slots(static_cast<size_t>(writers));
    std::vector<std::thread> threads;
    for (int w = 0; w < writers; ++w) {
      threads.emplace_back([&, w] {
        Writer(prefix, mode, w, per_writer, connected, go, abandon, slots[static_cast<size_t>(w)]);
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
    std::vector<Acknowledged> acked;
    Clock::time_point last = start;
    for (WriterRun& me : slots) {
      if (!me.status.ok()) return me.status;
      run.Add(me.counts);
      acked.insert(acked.end(), me.acks.begin(), me.acks.end());
      last = std::max(last, me.finished);
    }
    if (!side_status.ok()) return side_status;
    run.seconds = Ms(start, last) / 1000;
    if (Status s = CheckAppends(prefix, mode, acked, run); !s.ok()) return s;
    return mode == Mode::kOneStream ? CheckStates(StreamOf(prefix, mode, 0, 0), slots)
                                    : Status::Ok();
  }

  // The stream of writer `w`'s `seq`th command in a run whose streams begin with `prefix`.
  static std::string StreamOf(const std::string& prefix, Mode mode, int w, int seq) {
    return mode == Mode::kDistinct ? fmt::format("{}w{}-o{}", prefix, w, seq) : prefix + "hot";
  }

  // Writer `w` of a run, into `me`: opens its connection and, on one stream as the article,
  // loads the order once, before the clock (the state and version it then keeps: the order
  // as created, version 1); waits at the barrier; runs its commands. A writer that fails
  // before the barrier makes every writer give up at it.
  void Writer(const std::string& prefix, Mode mode, int w, int per_writer, std::latch& connected,
              std::latch& go, std::atomic<bool>& abandon, WriterRun& me) {
    Result<std::unique_ptr<Connection>> c = Connection::Open(h_.connection());
    std::optional<EventStore> es;
    if (c.ok()) {
      es.emplace(**c, EventStoreTables{});
    } else {
      me.status = c.status();
    }
    if (es && mode == Mode::kOneStream) {
      Result<order::State> st = LoadOrder(*es, StreamOf(prefix, mode, w, 0), false);
      if (st.ok()) {
        me.state = *st;
      } else {
        me.status = st.status();
      }
    }
    if (!me.status.ok()) abandon = true;
    connected.count_down();
    go.wait();
    if (abandon.load()) return;
    std::mt19937 rng(static_cast<uint32_t>(w) * 7919u + 17u);
    for (int i = 0; i < per_writer && me.status.ok() && !h_.stopped(); ++i) {
      me.status = AppendCommand(*es, StreamOf(prefix, mode, w, i), mode, w, i, rng, me);
    }
    me.finished = Clock::now();
  }

  // One command of writer `w` (its `seq`th) on `stream` through `es`, counted in `me`, its
  // events added to `me.acks` once acknowledged. Each attempt sees the order as Refresh
  // gives it, decides, and appends with the version it knows as the expected one; a
  // conflict or deadlock runs it again after a jittered backoff drawn from `rng`, up to
  // kMaxAttempts, then gives up. Once appended, the command's own events advance the order
  // it knows (folded, not read back): on one stream as the article, the writer's next
  // command starts from there.
  Status AppendCommand(EventStore& es, const std::string& stream, Mode mode, int w, int seq,
                       std::mt19937& rng, WriterRun& me) {
    const auto t0 = Clock::now();
    AppendRun& mine = me.counts;
    ++mine.commands;
    const std::string eid = fmt::format("{}-{}", w, seq);
    order::State placed;  // distinct streams: each command a new order (version 0)
    order::State& state = mode == Mode::kOneStream ? me.state : placed;
    for (int attempt = 1;; ++attempt) {
      if (Status s = Refresh(es, stream, mode, attempt, state); !s.ok()) return s;
      Result<std::vector<order::Event>> decided = Decide(stream, mode, state);
      if (!decided.ok()) return decided.status();
      ++mine.attempts;
      Result<AppendOutcome> r = es.Append(stream, state.version, Encode(stream, *decided, eid));
      if (!r.ok()) return r.status();
      if (*r == AppendOutcome::kAppended) {
        ++mine.successes;
        mine.events += decided->size();
        mine.latencies.push_back(Ms(t0, Clock::now()));
        for (size_t i = 0; i < decided->size(); ++i) {
          me.acks.push_back(
              {stream, state.version + 1 + static_cast<int64_t>(i), fmt::format("{}-{}", eid, i)});
        }
        for (const order::Event& e : *decided) order::Fold(state, e);
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

  // The order as attempt `attempt` of a command sees it, in `state`: on one stream
  // reloaded, the whole stream read and folded at every attempt; on one stream as the
  // article, a retry first reads the events after the version it knows (after the backoff,
  // so those appended during the wait come too) and folds them in; on distinct streams the
  // new order as it is.
  static Status Refresh(EventStore& es, const std::string& stream, Mode mode, int attempt,
                        order::State& state) {
    if (mode == Mode::kOneStreamReload) {
      Result<order::State> st = LoadOrder(es, stream, false);
      if (!st.ok()) return st.status();
      state = *st;
    } else if (mode == Mode::kOneStream && attempt > 1) {
      return CatchUp(es, stream, state);
    }
    return Status::Ok();
  }

  // Folds into `state` the events of `stream` after the version it knows, decoded as
  // LoadOrder decodes them. They follow it one by one: a gap would fold a wrong order.
  static Status CatchUp(EventStore& es, const std::string& stream, order::State& state) {
    std::vector<StreamEvent> events;
    if (Status s = es.ReadStream(stream, state.version + 1, events); !s.ok()) return s;
    for (const StreamEvent& e : events) {
      if (e.version != state.version + 1) {
        return Status::Internal(fmt::format("stream {} read version {} after version {}", stream,
                                            e.version, state.version));
      }
      Result<order::Event> d = DecodeOrderEvent(e.type, e.payload);
      if (!d.ok()) return d.status().With(fmt::format("stream {} version {}", stream, e.version));
      order::Fold(state, *d);
    }
    return Status::Ok();
  }

  // The check of a run of appenders, on the streams whose names begin with `prefix`: every
  // stream's versions are exactly 1..n, a placed order has its 11 events and the one
  // stream its created event and 11 per command (a command's events all or none), every
  // event `acked` is there with its own payload, and no payload is there twice. What is not
  // is counted in `run` (lost, duplicated).
  Status CheckAppends(const std::string& prefix, Mode mode, const std::vector<Acknowledged>& acked,
                      AppendRun& run) {
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
    const auto size = static_cast<size_t>(kEventsPerCommand);
    for (const auto& [stream, vs] : versions) {
      for (size_t i = 0; i < vs.size(); ++i) {
        if (vs[i] != static_cast<int64_t>(i) + 1) ++run.lost;  // a gap or a repeat in 1..n
      }
      // A command half there.
      if (mode == Mode::kDistinct ? vs.size() != size : (vs.size() - 1) % size != 0) ++run.lost;
    }
    for (const Acknowledged& a : acked) {
      auto it = stored.find({a.stream, a.version});
      if (it == stored.end() || it->second != a.eid) ++run.lost;
    }
    for (const auto& [eid, n] : eids) run.duplicated += n > 1 ? static_cast<uint64_t>(n - 1) : 0;
    return Status::Ok();
  }

  // On one stream as the article: the order each writer knows at the end is the stream
  // folded up to the version it knows, whether it folded events read after a conflict or
  // its own (never read back). A writer that knows it otherwise is a problem of the run.
  Status CheckStates(const std::string& stream, const std::vector<WriterRun>& writers) {
    std::vector<StreamEvent> events;
    if (Status s = h_.store().ReadStream(stream, 1, events); !s.ok()) return s;
    std::multimap<int64_t, const order::State*> known;  // by the version each writer knows
    for (const WriterRun& me : writers) known.emplace(me.state.version, &me.state);
    order::State folded;
    size_t agree = 0;
    for (const StreamEvent& e : events) {
      Result<order::Event> d = DecodeOrderEvent(e.type, e.payload);
      if (!d.ok()) return d.status().With(fmt::format("stream {} version {}", stream, e.version));
      order::Fold(folded, *d);
      const auto [from, to] = known.equal_range(folded.version);
      for (auto it = from; it != to; ++it) agree += *it->second == folded ? 1 : 0;
    }
    if (agree != writers.size()) {
      h_.Problem(
          fmt::format("{} of {} writers on stream {} knew its order otherwise than the "
                      "stream folds to",
                      writers.size() - agree, writers.size(), stream));
    }
    return Status::Ok();
  }
};

}  // namespace

std::unique_ptr<Question> MakeAppends(Harness& h) { return std::make_unique<Appends>(h); }

}  // namespace rw
