#include <fmt/core.h>

#include <cmath>

#include "pipeline/stress/report_parts.h"

namespace rw {
namespace {

// `v` rounded down to two significant digits (an advice's round figure).
double RoundDown2(double v) {
  if (v <= 0) return 0;
  const double scale = std::pow(10.0, std::floor(std::log10(v)) - 1);
  return std::floor(v / scale) * scale;
}

class Advice : public Figures {
 public:
  explicit Advice(const Figures& f) : Figures(f) {}

  // The decisions the figures support, one paragraph each ("" when nothing was measured).
  std::string Decisions() const {
    std::string s = SnapshotAdvice();
    s += LoadCostPerEvent();
    s += SnapshotWriteCosts();
    s += RecoveryWindow();
    s += ParallelProjectionsWords();
    s += AppendsDuringRebuildWords();
    s += QuickPercentiles();
    return s;
  }

 private:
  // The snapshot advice for --budget-ms, from question 1's p99 load times ("" without them).
  std::string SnapshotAdvice() const {
    std::string s;
    const double budget = ctx_.budget_ms;
    if (Get("aggregate_load", "10000", "p99")) {
      bool extrapolated = false, k_extrapolated = false;
      const double n_max = LengthWithin(budget, extrapolated);
      const double fetch = Get("snapshot", "5000", "snapshot_fetch_p50").value_or(0);
      const double k = LengthWithin(budget - fetch, k_extrapolated);
      s += fmt::format(
          "- **Snapshots, with a {0} ms budget** (--budget-ms): aggregates of up to {1} events "
          "load "
          "without a snapshot; above it, snapshot every {2} events (a load then reads one "
          "snapshot, "
          "{3} ms here, and at most {2} events). From this run's p99 load times ({4} ms at 10,000 "
          "events){5}.\n",
          budget, Number(RoundDown2(n_max)), Number(RoundDown2(k)), Number(fetch),
          Number(Get("aggregate_load", "10000", "p99").value_or(0)),
          extrapolated ? "; beyond 10,000 events, the longest measured, extrapolated linearly"
                       : "");
      if (auto per = Get("snapshot", "every_10", "per_snapshot"); per && k >= 1) {
        s += fmt::format(
            "  Snapshotting every {} events costs {} ms per command in writes (one {} ms save "
            "every {} "
            "commands of one event).\n",
            Number(RoundDown2(k)), Number(*per / RoundDown2(k)), Number(*per),
            Number(RoundDown2(k)));
      }
      if (auto x = Get("snapshot", "crossover", "events")) {
        s += fmt::format(
            "  A snapshot pays for itself in load time from about {} events, but that saves less "
            "than the budget notices: a full load of 1,000 events takes {} ms (p50).\n",
            Number(*x), Number(Get("aggregate_load", "1000", "p50").value_or(0)));
      }
    }
    return s;
  }

  // The load cost per event at 1,000 and 10,000 events, beside the article's ("" without them).
  std::string LoadCostPerEvent() const {
    std::string s;
    const auto per_event = [&](const char* n) {
      return Get("aggregate_load", n, "p50").value_or(0) / std::stod(n) * 1000;
    };
    const double a = per_event("1000"), b = per_event("10000");
    if (a > 0 && b > 0) {
      const bool flat = b / a < 1.25 && b / a > 0.8;
      s += fmt::format(
          "- **Load cost per event** (p50): {} µs at 1,000 events, {} µs at 10,000: {}. The "
          "article's two figures "
          "(1.2 ms at 50 events, 847 ms at 10,000) are 24 µs and 85 µs per event.\n",
          Number(a), Number(b),
          flat ? "flat, so load time grows linearly with the stream's length"
               : (b > a ? "growing, so load time grows faster than the stream"
                        : "falling with length"));
    }
    return s;
  }

  // The write cost of each snapshot frequency measured in question 2.
  std::string SnapshotWriteCosts() const {
    std::string s;
    for (int every : {10, 100}) {
      const std::string c = fmt::format("every_{}", every);
      if (auto w = Get("snapshot", c, "write_per_command")) {
        const double cmd = Get("snapshot", c, "command").value_or(0);
        s += fmt::format(
            "- **Snapshot every {} events** costs {} ms per command in writes ({} ms per snapshot "
            "saved; "
            "{:.1f} % of a {} ms command that loads, appends one event and commits).\n",
            every, Spread("snapshot", c, "write_per_command"),
            Spread("snapshot", c, "per_snapshot"), cmd > 0 ? *w / cmd * 100 : 0, Number(cmd));
      }
    }
    return s;
  }

  // Question 3's rebuild times as the recovery window, volume by volume.
  std::string RecoveryWindow() const {
    std::string s;
    const std::vector<int64_t> volumes = Volumes();
    if (!volumes.empty()) {
      s += "- **Recovery window** (rebuilding OrderSummary from nothing, 100 events per order; "
           "single saves "
           "ran once per volume):\n";
      for (int64_t v : volumes) {
        const std::string c = std::to_string(v);
        s += fmt::format(
            "  - rebuilding {} events takes {} s with single saves, {} s with batches of 50, {} s "
            "with "
            "rewind{}.\n",
            Number(static_cast<double>(v)), Spread("projection_rebuild", c + "/single", "seconds"),
            Spread("projection_rebuild", c + "/batched", "seconds"),
            Spread("projection_rebuild", c + "/pipeline", "seconds"),
            Get("projection_rebuild", c + "/single", "estimated")
                ? " (single saves estimated from the 100,000-event run: a commit per event)"
                : "");
      }
    }
    return s;
  }

  // Parallel projections: one after the other against at once, for each volume measured.
  std::string ParallelProjectionsWords() const {
    std::string s;
    for (const StressRow& r : rows_) {
      if (r.question != "parallel_projections" || r.metric != "one_by_one_seconds") continue;
      const std::string& c = r.case_name;  // "<volume>/<k>_models"
      const std::string volume = c.substr(0, c.find('/'));
      const std::string k = c.substr(c.find('/') + 1, c.find('_') - c.find('/') - 1);
      const double seq = r.value,
                   par = Get("parallel_projections", c, "at_once_seconds").value_or(0);
      s += fmt::format(
          "- **Parallel projections**: {} read models of {} events (OrderSummary in batches of 50, "
          "each its own "
          "table) take {} s one after the other and {} s at once, each on its own connection: "
          "{:.2f}x{}.\n",
          k, Number(std::stod(volume)), Spread("parallel_projections", c, "one_by_one_seconds"),
          Spread("parallel_projections", c, "at_once_seconds"), par > 0 ? seq / par : 0,
          par > 0 && seq / par < 1.5 ? " (the server and the rebuilders share this machine's cores)"
                                     : "");
    }
    return s;
  }

  // The appenders' latencies without and during a rebuild.
  std::string AppendsDuringRebuildWords() const {
    std::string s;
    if (auto alone = Get("append_during_rebuild", "no_rebuild_10", "p99")) {
      s += fmt::format(
          "- **Appends during a rebuild**: 10 writers' commands take {} ms at p50 and {} ms at p99 "
          "alone, {} and {} "
          "ms while rewind rebuilds OrderSummary over {} events ({} rebuilds while they wrote).\n",
          Spread("append_during_rebuild", "no_rebuild_10", "p50"),
          Spread("append_during_rebuild", "no_rebuild_10", "p99"),
          Spread("append_during_rebuild", "during_rebuild_10", "p50"),
          Spread("append_during_rebuild", "during_rebuild_10", "p99"),
          Number(Get("append_during_rebuild", "during_rebuild_10", "rebuild_events").value_or(0)),
          Number(Get("append_during_rebuild", "during_rebuild_10", "rebuilds").value_or(0)));
    }
    return s;
  }

  // With --quick: which loads the p95 and p99 are, so few were made.
  std::string QuickPercentiles() const {
    std::string s;
    if (ctx_.quick) {
      const double loads = Get("aggregate_load", "10000", "loads").value_or(0);
      if (loads > 0) {
        const auto from_top = [&](double p) {
          const int k = static_cast<int>(loads - std::ceil(p / 100 * loads) + 1);
          if (k == 1) return std::string("slowest");
          return fmt::format("{}{} slowest", k, k == 2 ? "nd" : k == 3 ? "rd" : "th");
        };
        s += fmt::format(
            "- **--quick**: p95 and p99 come from {} loads per length, so p95 is the {} load and "
            "p99 the {}; run without --quick for 100 loads per round.\n",
            Number(loads), from_top(95), from_top(99));
      }
    }
    return s;
  }
};

}  // namespace

std::string Decisions(const Figures& f) { return Advice(f).Decisions(); }

}  // namespace rw
