#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <optional>

#include "pipeline/stress/report_parts.h"
#include "pipeline/stress/cases.h"

namespace rw {
namespace {

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
    s += OneStreamPerAggregate();
    s += QuickPercentiles();
    return s;
  }

 private:
  // The longest measured length whose load `metric` (p50, or p50_run<i>) plus `extra` ms
  // fits in the budget (0 when none does), and the next measured length, which does not
  // (0 when every measured length fits).
  std::pair<int64_t, int64_t> MeasuredWithin(double budget, const std::string& metric) const {
    int64_t in = 0, out = 0;
    for (int64_t n : stress_cases::kStreamLengths) {
      const std::optional<double> v = Get("aggregate_load", std::to_string(n), metric);
      if (!v) continue;
      if (*v <= budget && out == 0) in = n;
      if (*v > budget && out == 0) out = n;
    }
    return {in, out};
  }

  // The snapshot advice for --budget-ms, from question 1's p50 load times at the measured
  // lengths (no figure interpolated between them: the decision is a measured length), each
  // round's own beside it; beyond the longest measured, an extrapolation to one significant
  // digit, labelled so. The p99 only from at least 100 loads, with their count.
  std::string SnapshotAdvice() const {
    std::string s;
    const double budget = ctx_.budget_ms;
    if (!Get("aggregate_load", "10000", "p50")) return s;
    const double fetch = Get("snapshot", "5000", "snapshot_fetch_p50").value_or(0);
    const auto [in, out] = MeasuredWithin(budget, "p50");
    const int64_t every = MeasuredWithin(budget - fetch, "p50").first;
    std::string rounds;
    for (int r = 1; Get("aggregate_load", "10000", fmt::format("p50_run{}", r)); ++r) {
      rounds += fmt::format(
          "{}{}", r == 1 ? "" : ", ",
          Number(static_cast<double>(MeasuredWithin(budget, fmt::format("p50_run{}", r)).first)));
    }
    const auto p50 = [&](int64_t n) { return Spread("aggregate_load", std::to_string(n), "p50"); };
    s += fmt::format(
        "- **Snapshots, with a {} ms budget** (--budget-ms, against the p50 load time): ", budget);
    if (in == 0) {
      s += fmt::format("no measured length loads within it (10 events: {} ms); snapshot often.\n",
                       p50(10));
    } else if (out != 0) {
      s += fmt::format(
          "aggregates of up to {} events load without a snapshot ({} ms; each round alone: up to "
          "{}); {} events take {} ms, over the budget: snapshot every {} events (a load then "
          "reads one snapshot, {} ms here, and at most that many events).\n",
          Number(static_cast<double>(in)), p50(in), rounds, Number(static_cast<double>(out)),
          p50(out), Number(static_cast<double>(every)), Number(fetch));
    } else {
      const double per_event = Get("aggregate_load", "10000", "p50").value_or(0) / 10000;
      const double reach = per_event > 0 ? budget / per_event : 0;
      const double one_digit =
          reach > 0 ? std::round(reach / std::pow(10.0, std::floor(std::log10(reach)))) *
                          std::pow(10.0, std::floor(std::log10(reach)))
                    : 0;
      s += fmt::format(
          "every measured length loads without a snapshot, up to {} events, the longest measured "
          "({} ms; each round alone: up to {}); no snapshot is needed there. Longer streams were "
          "not measured: at this run's cost per event the budget would be reached near {} events "
          "(extrapolated, to one significant digit).\n",
          Number(static_cast<double>(in)), p50(in), rounds, Number(one_digit));
    }
    const double loads = Get("aggregate_load", "10000", "loads").value_or(0);
    if (loads >= 100) {
      s += fmt::format(
          "  The tail, for a budget meant for the slowest load in a hundred: p99 {} ms at 10,000 "
          "events, of {} loads.\n",
          Number(Get("aggregate_load", "10000", "p99").value_or(0)), Number(loads));
    }
    if (auto per = Get("snapshot", "every_10", "per_snapshot"); per && out != 0 && every > 0) {
      s += fmt::format(
          "  Snapshotting every {} events costs {} ms per command in writes (one {} ms save every "
          "{} commands of one event).\n",
          Number(static_cast<double>(every)), Number(*per / static_cast<double>(every)),
          Number(*per), Number(static_cast<double>(every)));
    }
    if (auto x = Get("snapshot", "crossover", "events")) {
      s += fmt::format(
          "  A snapshot pays in load time (at least 10 % faster at the median of the rounds) "
          "from {} events "
          "({}), "
          "but that saves less than the budget notices: a full load of 1,000 events takes {} ms "
          "(p50).\n",
          Number(*x), ctx_.crossover_note, p50(1000));
    } else if (Get("snapshot", "crossover", "not_measurable")) {
      s += "  Snapshot + 50 events against a full replay: " + ctx_.crossover_note + ".\n";
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

  // Question 3's rebuild times as the recovery window, volume by volume, with one save
  // per event's cost per event where it was measured.
  std::string RecoveryWindow() const {
    std::string s;
    const std::vector<int64_t> volumes = Volumes();
    if (volumes.empty()) return s;
    s += "- **Recovery window** (rebuilding OrderSummary from nothing, 100 events per order; "
         "single saves ran once per volume, every other method --repeat times):\n";
    for (int64_t v : volumes) {
      const std::string c = std::to_string(v);
      const double vd = static_cast<double>(v);
      std::string single;
      if (!Get("projection_rebuild", c + "/single", "not_measured")) {
        single = fmt::format(
            "{} s with single saves ({} ms per event)",
            Spread("projection_rebuild", c + "/single", "seconds"),
            Number(Get("projection_rebuild", c + "/single", "seconds").value_or(0) / vd * 1000));
      } else if (auto est = Get("projection_rebuild", c + "/single", "seconds")) {
        single = fmt::format(
            "single saves not measured (about {} s estimated: the measured volumes' median cost "
            "per event, flat within 20 %)",
            Number(*est));
      } else {
        single =
            "single saves neither measured nor estimated (their cost per event was not flat "
            "across the measured volumes)";
      }
      s += fmt::format("  - rebuilding {} events: {}, {} s with batches of 50, {} s with rewind.\n",
                       Number(vd), single, Spread("projection_rebuild", c + "/batched", "seconds"),
                       Spread("projection_rebuild", c + "/pipeline", "seconds"));
    }
    return s + BatchSizeWords();
  }

  // The batch size to choose, from every batch size measured (interleaved, at one volume):
  // the medians fitted by least squares to time = a + b / batch (a: the work every event
  // costs whatever the batch; b / batch: what each statement and commit adds), the batch
  // from which the per-statement part is under 10 % of the rest (10 b / a), and the
  // smallest measured size at or above it. A fit over all the sizes moves less between runs
  // than any one size against another (four runs here put it at 211-306 rows).
  std::string BatchSizeWords() const {
    std::optional<int64_t> at;
    for (int64_t v : Volumes()) {
      if (Get("projection_rebuild", fmt::format("{}/batch_10", v), "seconds")) at = v;
    }
    if (!at) return "";
    std::vector<std::pair<int, double>> sizes;  // (batch, median seconds)
    std::string s = fmt::format(
        "- **Batch size** (OrderSummary by hand, {} events, each size once in each round):",
        Number(static_cast<double>(*at)));
    if (auto single = Get("projection_rebuild", fmt::format("{}/single", *at), "seconds")) {
      s += fmt::format(" single saves {} s (once);", Number(*single));
    }
    for (int batch : stress_cases::kBatchSizes) {
      const std::string c = fmt::format("{}/batch_{}", *at, batch);
      if (auto m = Get("projection_rebuild", c, "seconds")) {
        sizes.emplace_back(batch, *m);
        s += fmt::format(" batches of {} {} s;", batch, Spread("projection_rebuild", c, "seconds"));
      }
    }
    if (sizes.size() < 2) return "";
    s.back() = '.';
    double mx = 0, my = 0;
    for (const auto& [batch, t] : sizes) mx += 1.0 / batch, my += t;
    mx /= static_cast<double>(sizes.size()), my /= static_cast<double>(sizes.size());
    double sxy = 0, sxx = 0;
    for (const auto& [batch, t] : sizes) {
      sxy += (1.0 / batch - mx) * (t - my), sxx += (1.0 / batch - mx) * (1.0 / batch - mx);
    }
    const double b = sxx > 0 ? sxy / sxx : 0, a = my - b * mx;
    if (a <= 0 || b <= 0) {
      return s + " The times do not fall with the batch size here: no batch size is chosen.\n";
    }
    const double knee = 10 * b / a;
    int chosen = sizes.back().first;
    for (auto it = sizes.rbegin(); it != sizes.rend(); ++it) {
      if (it->first >= knee) chosen = it->first;
    }
    return s +
           fmt::format(
               " Fitted, time = {} s + {} s / batch: each statement and its commit add what "
               "{} events cost, so from about {} rows per statement they are under 10 % of "
               "the time. **Choose batches of {}**{}. Larger batches only hold more rows in "
               "one statement and one transaction; rewind's pipeline sizes its own.\n",
               Number(a), Number(b), Number(b / a), Number(knee), chosen,
               knee > sizes.back().first ? " (the largest measured; the fit asks for more)" : "");
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

  // One stream per aggregate, decided from question 4's one-stream curve (read as the
  // article): it holds at a writer count whose median command fits in --budget-ms and which
  // gave up fewer than 1 command in 40 (2.5 %), with a margin of the square root of its
  // give-ups (their spread between runs): at 1 %, four runs' 5-writer give-ups, 0.9-1.9 %,
  // straddled the line; at 2.5 % without the margin, the 10-writer ones, 2.4-4.5 %. The decision is
  // the most concurrent writers it held at (every smaller count held too), the highest rate of
  // commands per aggregate measured there, and the writer count that broke it.
  std::string OneStreamPerAggregate() const {
    const std::vector<int> writers = Writers("one_stream");
    if (writers.empty()) return "";
    const double budget = ctx_.budget_ms;
    std::optional<int> held, broke;
    double rate = 0;
    int rate_at = 0;
    for (int w : writers) {
      const std::string c = fmt::format("one_stream_{}", w);
      if (!Get("concurrent_append", c, "commands_per_s") || broke) continue;
      const double commands = Get("concurrent_append", c, "commands").value_or(0);
      // Give-ups counted in a run vary by about their square root between runs: a count holds
      // only when one such step above it is still under the line.
      const double give_ups = Get("concurrent_append", c, "give_ups").value_or(commands);
      const bool ok = give_ups + std::sqrt(give_ups) < 0.025 * commands &&
                      Get("concurrent_append", c, "p50").value_or(budget + 1) <= budget;
      if (!ok) {
        broke = w;
        continue;
      }
      held = w;
      if (const double r = Get("concurrent_append", c, "commands_per_s").value_or(0); r > rate) {
        rate = r, rate_at = w;
      }
    }
    const auto words = [&](int w) {
      const std::string c = fmt::format("one_stream_{}", w);
      return fmt::format(
          "{} writer{}: {} commands/s, command p50 {} ms, {} of {} commands given up", w,
          w == 1 ? "" : "s", Spread("concurrent_append", c, "commands_per_s"),
          Number(Get("concurrent_append", c, "p50").value_or(0)),
          Number(Get("concurrent_append", c, "give_ups").value_or(0)),
          Number(Get("concurrent_append", c, "commands").value_or(0)));
    };
    std::string s = "- **One stream per aggregate**, with a " + Number(budget) +
                    " ms budget per command (--budget-ms; it holds where the median command fits "
                    "in it and fewer than 1 command in 40 is given up, with a margin of the "
                    "square root of the count given up): ";
    if (!held) {
      return s + "does not hold even at " + words(writers.front()) +
             ": split the aggregate, or queue its commands.\n";
    }
    return s + fmt::format(
                   "**holds with up to {} concurrent writers on one aggregate** ({}); the most "
                   "commands per second one aggregate took within it: about {} ({} writer{}){}. "
                   "Above that, split the aggregate or queue its commands.\n",
                   *held, words(*held), Number(rate), rate_at, rate_at == 1 ? "" : "s",
                   broke ? fmt::format("; it breaks at {}", words(*broke))
                         : "; no measured writer count broke it");
  }

  // With fewer than 100 loads per length (--quick): no p95 or p99, and why.
  std::string QuickPercentiles() const {
    const double loads = Get("aggregate_load", "10000", "loads").value_or(0);
    if (loads <= 0 || loads >= 100) return "";
    return fmt::format(
        "- **--quick**: {} loads per length, too few for a p95 or p99 (at least 100 are needed: "
        "the p99 of fewer is the slowest load or next to it), so none is given; the advice uses "
        "the p50. Run without --quick for 100 loads per round.\n",
        Number(loads));
  }
};

}  // namespace

std::string Decisions(const Figures& f) { return Advice(f).Decisions(); }

}  // namespace rw
