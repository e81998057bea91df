#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <optional>
#include <span>

#include "pipeline/stress/questions.h"
#include "pipeline/stress/cases.h"

namespace rw {
namespace {

class Snapshots : public Question {
 public:
  using Question::Question;

  // Question 2: snapshot vs full replay, the crossover, the snapshot write cost. The
  // snapshot sits 50 events before the end of every stream (4,950 of 5,000, as published),
  // so the snapshot side is one set-up at every length.
  Status Run() override {
    const auto& lengths = stress_cases::kSnapshotLengths;
    constexpr int64_t kTail = 50;
    const int loads = h_.quick() ? 15 : 100;
    h_.Progress(
        fmt::format("question 2: snapshot + {} events vs full replay ({} rounds of {} loads each)",
                    kTail, h_.repeat(), loads));
    OrderStreams streams;
    for (int64_t n : lengths) streams.emplace_back(fmt::format("q2-{}", n), n, n / 2);
    if (Status s = h_.LoadStreams(h_.store().tables().events, streams); !s.ok()) return s;
    std::vector<std::vector<double>> full_p50, snap_p50;  // per length, each round's p50
    for (int64_t n : lengths) {
      full_p50.emplace_back(), snap_p50.emplace_back();
      if (Status s = SnapshotAgainstReplay(n, kTail, loads, full_p50.back(), snap_p50.back());
          !s.ok())
        return s;
    }
    Crossover(lengths, full_p50, snap_p50);
    return SnapshotWriteCost();
  }

 private:
  // Question 2 at one stream length `n`: a snapshot saved `tail` events before its end, then
  // `loads` loads (after a warm-up) by full replay and by snapshot + tail, checked equal, in
  // each of --repeat rounds. Each round's p50 of either goes onto `full_p50` and `snap_p50`.
  Status SnapshotAgainstReplay(int64_t n, int64_t tail, int loads, std::vector<double>& full_p50,
                               std::vector<double>& snap_p50) {
    const std::string stream = fmt::format("q2-{}", n);
    const int64_t at = n - tail;
    if (Status s = h_.store().SaveSnapshot(stream, at,
                                           order::SnapshotJson(order::Folded(stream, at, n / 2)));
        !s.ok())
      return s;
    std::vector<double> full_runs, snap_runs, fetch_runs;
    for (int r = 0; r < h_.repeat() && !h_.stopped(); ++r) {
      std::vector<double> full, snap, snap_fetch;
      for (int i = 0; i <= loads && !h_.stopped(); ++i) {
        LoadTimes a, b;
        Result<order::State> x = LoadOrder(h_.store(), stream, false, &a);
        if (!x.ok()) return x.status();
        Result<order::State> y = LoadOrder(h_.store(), stream, true, &b);
        if (!y.ok()) return y.status();
        if (!(*x == *y)) {
          return Status::Internal(
              fmt::format("stream {}: snapshot + tail differs from a full replay", stream));
        }
        if (i == 0) continue;
        full.push_back(a.total);
        snap.push_back(b.total);
        snap_fetch.push_back(b.snapshot_fetch);
      }
      full_runs.push_back(Percentile(full, 50));
      snap_runs.push_back(Percentile(snap, 50));
      fetch_runs.push_back(Percentile(snap_fetch, 50));
    }
    const std::string c = std::to_string(n);
    h_.AddSpread("snapshot", c, "full_p50", full_runs, "ms");
    h_.AddSpread("snapshot", c, "snapshot_p50", snap_runs, "ms");
    h_.AddSpread("snapshot", c, "snapshot_fetch_p50", fetch_runs, "ms");
    full_p50 = full_runs;
    snap_p50 = snap_runs;
    h_.Progress(
        fmt::format("  {:>5} events: full {:.2f} ms, snapshot at {} + {} events {:.2f} ms (the "
                    "snapshot's read "
                    "{:.3f} ms)",
                    n, Median(full_runs), at, tail, Median(snap_runs), Median(fetch_runs)));
    return Status::Ok();
  }

  // Where a snapshot starts to pay: the shortest measured length from which snapshot + tail
  // is at least 10 % faster than a full replay at the median of the rounds' p50s, at that
  // length and every longer one (eight runs here put it at 150 events). Beside it the
  // length from which it is faster in every round (its slowest round below the full
  // replay's fastest); below that, no measurable difference, and no figure is interpolated
  // between measured lengths. Each round's own (its p50s alone) is events_run<i>.
  void Crossover(std::span<const int64_t> lengths,
                 const std::vector<std::vector<double>>& full_p50,
                 const std::vector<std::vector<double>>& snap_p50) {
    constexpr double kPays = 0.9;  // at least 10 % faster at the median
    const auto from = [&](const std::function<bool(size_t)>& faster) -> std::optional<size_t> {
      std::optional<size_t> first;
      for (size_t i = lengths.size(); i-- > 0;) {
        if (!faster(i)) break;
        first = i;
      }
      return first;
    };
    // Margin below 1: the median that much faster; 1: faster in every round.
    const auto faster_from = [&](double margin) {
      return from([&, margin](size_t i) {
        if (full_p50[i].empty() || snap_p50[i].empty()) return false;
        if (margin < 1) return Median(snap_p50[i]) <= margin * Median(full_p50[i]);
        return *std::max_element(snap_p50[i].begin(), snap_p50[i].end()) <
               *std::min_element(full_p50[i].begin(), full_p50[i].end());
      });
    };
    const std::optional<size_t> pays = faster_from(kPays), measurable = faster_from(1.0);
    for (size_t r = 0; r < static_cast<size_t>(h_.repeat()); ++r) {
      const std::optional<size_t> mine = from([&](size_t i) {
        return r < full_p50[i].size() && r < snap_p50[i].size() &&
               snap_p50[i][r] < kPays * full_p50[i][r];
      });
      if (mine) {
        h_.Add("snapshot", "crossover", fmt::format("events_run{}", r + 1),
               static_cast<double>(lengths[*mine]), "count");
      }
    }
    std::string& note = h_.context().crossover_note;
    std::vector<std::string> parts;
    if (pays) {
      h_.Add("snapshot", "crossover", "events", static_cast<double>(lengths[*pays]), "count");
      if (*pays == 0)
        parts.push_back(fmt::format("already at {} events, the shortest measured", lengths[0]));
    } else {
      parts.push_back(
          fmt::format("never 10 % faster at the median, up to {} events", lengths.back()));
      h_.Add("snapshot", "crossover", "not_measurable", 1, "count");
    }
    if (measurable) {
      h_.Add("snapshot", "crossover", "measurable_from", static_cast<double>(lengths[*measurable]),
             "count");
      if (!pays || *measurable != *pays) {
        parts.push_back(
            fmt::format("faster in every round{} from {} events",
                        !pays || *measurable < *pays ? ", by less than 10 % at the median," : "",
                        lengths[*measurable]));
      }
    }
    const std::optional<size_t> first = pays && measurable ? std::min(*pays, *measurable)
                                        : pays             ? pays
                                                           : measurable;
    if (!first || *first > 0) {
      parts.push_back(fmt::format("no measurable difference at {} events and below",
                                  first ? lengths[*first - 1] : lengths.back()));
    }
    note.clear();
    for (const std::string& p : parts) note += (note.empty() ? "" : "; ") + p;
    h_.Progress(fmt::format(
        "  a snapshot pays (10 % faster at the median): {}{}",
        pays ? fmt::format("from {} events on; ", lengths[*pays]) : std::string(), note));
  }

  // Question 2's write cost: commands that load the order (snapshot + tail), append one
  // event, and save a snapshot every k events.
  Status SnapshotWriteCost() {
    const int commands = h_.quick() ? 300 : 2000;
    for (int every : {10, 100}) {
      std::vector<double> per_command, per_snapshot, command_ms;
      for (int r = 0; r < h_.repeat() && !h_.stopped(); ++r) {
        const std::string stream = fmt::format("q2-every-{}-r{}", every, r);
        double snapshot_ms = 0, total_ms = 0;
        int snapshots = 0;
        int64_t version = 0;
        for (int i = 1; i <= commands && !h_.stopped(); ++i) {
          const auto t0 = Clock::now();
          LoadTimes t;
          Result<order::State> st = LoadOrder(h_.store(), stream, true, &t);
          if (!st.ok()) return st.status();
          const order::Event e = order::Generate(stream, version + 1, 0);
          Result<AppendOutcome> a = h_.store().Append(
              stream, version, {{order::TypeName(e.kind), order::Payload(stream, e)}});
          if (!a.ok()) return a.status();
          if (*a != AppendOutcome::kAppended)
            return Status::Internal("a lone writer met a conflict");
          ++version;
          order::Fold(*st, e);
          if (version % every == 0) {
            const auto s0 = Clock::now();
            if (Status s = h_.store().SaveSnapshot(stream, version, order::SnapshotJson(*st));
                !s.ok())
              return s;
            snapshot_ms += Ms(s0, Clock::now());
            ++snapshots;
          }
          total_ms += Ms(t0, Clock::now());
        }
        per_command.push_back(snapshot_ms / commands);
        per_snapshot.push_back(snapshots ? snapshot_ms / snapshots : 0);
        command_ms.push_back(total_ms / commands);
      }
      const std::string c = fmt::format("every_{}", every);
      h_.AddSpread("snapshot", c, "write_per_command", per_command, "ms");
      h_.AddSpread("snapshot", c, "per_snapshot", per_snapshot, "ms");
      h_.AddSpread("snapshot", c, "command", command_ms, "ms");
      h_.Progress(
          fmt::format("  snapshot every {}: {:.3f} ms per command ({:.2f} ms per snapshot; a "
                      "command takes {:.2f} ms)",
                      every, Median(per_command), Median(per_snapshot), Median(command_ms)));
    }
    return Status::Ok();
  }
};

}  // namespace

std::unique_ptr<Question> MakeSnapshots(Harness& h) { return std::make_unique<Snapshots>(h); }

}  // namespace rw
