#include "pipeline/stress/report.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <functional>
#include <set>
#include <thread>

namespace rw {

void StressResults::Add(const std::string& q, const std::string& c, const std::string& m, double v,
                        const std::string& unit) {
  rows_.push_back({q, c, m, v, unit});
}

std::optional<double> StressResults::Get(const std::string& q, const std::string& c,
                                         const std::string& m) const {
  for (const StressRow& r : rows_) {
    if (r.question == q && r.case_name == c && r.metric == m) return r.value;
  }
  return std::nullopt;
}

const char* const kArticle = "How Fast Can You Replay 100,000 Events? I Measured It.";

std::string ReadableNumber(double v) {
  if (std::fabs(v) < 100) return fmt::format("{:.3g}", v);
  std::string digits = fmt::format("{:.0f}", std::fabs(v)), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return (v < 0 ? "-" : "") + out;
}

namespace {

std::string Number(double v) { return ReadableNumber(v); }

// `v` rounded down to two significant digits (an advice's round figure).
double RoundDown2(double v) {
  if (v <= 0) return 0;
  const double scale = std::pow(10.0, std::floor(std::log10(v)) - 1);
  return std::floor(v / scale) * scale;
}

// "ours / article = r (2.3x faster)" for a time (lower is better) or a rate (higher is).
std::string Ratio(double ours, double article, bool lower_is_better) {
  if (article <= 0 || ours <= 0) return "ratio n/a";
  const double r = ours / article;
  const bool better = lower_is_better ? r < 1 : r > 1;
  const double factor = r >= 1 ? r : 1 / r;
  return fmt::format(
      "ours / article = {:.3g} ({:.3g}x {})", r, factor,
      lower_is_better ? (better ? "faster" : "slower") : (better ? "higher" : "lower"));
}

class Report {
 public:
  Report(std::string out_dir, const StressResults& results, const StressContext& ctx)
      : out_dir_(std::move(out_dir)), results_(results), ctx_(ctx), rows_(results.rows()) {}

  static std::string Machine() {
    std::string model = "?", mem = "?";
    std::ifstream cpu("/proc/cpuinfo");
    for (std::string line; std::getline(cpu, line);) {
      if (line.rfind("model name", 0) == 0) {
        model = line.substr(line.find(':') + 2);
        break;
      }
    }
    std::ifstream meminfo("/proc/meminfo");
    for (std::string line; std::getline(meminfo, line);) {
      if (line.rfind("MemTotal", 0) == 0) {
        mem = fmt::format("{:.0f} GiB", std::stod(line.substr(9)) / 1024 / 1024);
        break;
      }
    }
    return fmt::format("{} CPU(s) ({}), {} RAM", std::thread::hardware_concurrency(), model, mem);
  }

  // Writes report.md, results.csv and the PNGs; prints the summary. False when the files
  // could not be written.
  bool Write(std::FILE* out, const Status& status) {
    namespace fs = std::filesystem;
    std::error_code ec;
    const fs::path dir(out_dir_);
    fs::create_directories(dir, ec);
    if (ec) {
      fmt::print(stderr, "rewind stress: cannot create {}: {}\n", dir.string(), ec.message());
      return false;
    }
    if (!WriteCsv(dir)) return false;
    std::string md;
    const std::time_t now = std::time(nullptr);
    char date[32];
    std::strftime(date, sizeof date, "%Y-%m-%d %H:%M UTC", std::gmtime(&now));
    md += fmt::format("# rewind stress ({})\n\n", ctx_.quick ? "--quick" : "full run");
    const std::vector<std::string> summary = Summary();
    md += "## Summary\n\n";
    for (const std::string& line : summary) md += line + "\n";
    const std::string yours = YourLine();
    if (!yours.empty()) md += "\n" + yours + "\n";
    md += RunFacts(date);
    md += Sections(status);
    const std::vector<std::string> pngs = Plots(dir);
    if (!pngs.empty()) {
      md += "\n## Plots\n\n";
      for (const std::string& p : pngs) md += fmt::format("![{}]({})\n\n", p, p);
    }
    {
      std::ofstream f(dir / "report.md");
      f << md;
      if (!f) {
        fmt::print(stderr, "rewind stress: cannot write {}\n", (dir / "report.md").string());
        return false;
      }
    }
    PrintSummary(out, summary, yours, (dir / "report.md").string(), pngs.size());
    return true;
  }

 private:
  // results.csv in `dir`: every measurement, one a line. False when it could not be written.
  bool WriteCsv(const std::filesystem::path& dir) const {
    std::ofstream csv(dir / "results.csv");
    csv << "question,case,metric,value,unit\n";
    for (const StressRow& r : rows_) {
      csv << fmt::format("{},{},{},{:.6g},{}\n", r.question, r.case_name, r.metric, r.value,
                         r.unit);
    }
    if (!csv) {
      fmt::print(stderr, "rewind stress: cannot write {}\n", (dir / "results.csv").string());
      return false;
    }
    return true;
  }

  // What the figures were measured on, after the summary: the article's set-up, the date
  // (`date`), the machine, the server and its commit latency at the start and at the end.
  std::string RunFacts(const char* date) const {
    std::string md = fmt::format(
        "\nThe article: \"{}\" (EventStoreDB + PostgreSQL; 4 cores, 8 GB, SSD, Docker). Each point "
        "here ran {} "
        "time(s): the median is shown, [min-max] beside it.\n\n",
        kArticle, ctx_.repeat);
    md += fmt::format("- date: {}\n- machine: {}\n- server: {}\n", date, Machine(),
                      ctx_.server_settings);
    if (auto c = Get("commit", "autocommit_insert", "p50")) {
      md += fmt::format(
          "- commit (flush) latency, measured first: one autocommitted insert takes {} ms at p50 "
          "(p99 {} ms); a round trip without a write {} ms. Every write figure below is bounded by "
          "it.\n",
          Spread("commit", "autocommit_insert", "p50"),
          Number(Get("commit", "autocommit_insert", "p99").value_or(0)),
          Spread("commit", "round_trip", "p50"));
      if (auto end = Get("commit", "autocommit_insert_end", "p50")) {
        md += fmt::format(
            "- measured again at the end: {} ms at p50. {}\n",
            Spread("commit", "autocommit_insert_end", "p50"),
            *end > 2 * *c || *c > 2 * *end
                ? "The disk's flush latency changed during the run (other work on this machine "
                  "shares it): figures that commit are only as steady as it."
                : "Steady through the run.");
      }
    }
    return md;
  }

  // The body of report.md after the run's facts: how the run ended, its problems, the
  // sections that have figures, and every measurement.
  std::string Sections(const Status& status) const {
    std::string md;
    if (!status.ok()) md += fmt::format("\n**The run stopped early: {}**\n", status.message());
    for (const std::string& p : ctx_.problems) md += fmt::format("\n**{}**\n", p);
    if (!ctx_.your.table.empty()) md += "\n## Your table\n\n" + YourSection();
    // Sections with nothing measured (--only) are left out.
    if (const std::string d = Decisions(); !d.empty()) md += "\n## Decisions\n\n" + d;
    if (const std::string b = Beside(); !b.empty()) md += "\n## Beside the article\n\n" + b;
    md +=
        "\n## Every measurement\n\n| question | case | metric | value | unit "
        "|\n|---|---|---|---|---|\n";
    for (const StressRow& r : rows_) {
      md += fmt::format("| {} | {} | {} | {} | {} |\n", r.question, r.case_name, r.metric,
                        Number(r.value), r.unit);
    }
    return md;
  }

  // The summary printed to `out`: the five lines, the user's table, what was checked and
  // where the report is (`report`, with `plots` PNGs beside it).
  void PrintSummary(std::FILE* out, const std::vector<std::string>& summary,
                    const std::string& yours, const std::string& report, size_t plots) const {
    fmt::print(out, "rewind stress: this server beside the article \"{}\"\n", kArticle);
    for (const std::string& line : summary) fmt::print(out, "{}\n", line);
    if (!yours.empty()) fmt::print(out, "{}\n", yours);
    // What was checked, as far as this run went (--only).
    std::string checked;
    const auto also = [&](const char* what) { checked += (checked.empty() ? "" : "; ") + std::string(what); };
    if (!Writers("distinct").empty()) also("no acknowledged append lost or duplicated");
    if (!Volumes().empty() || !ctx_.your.table.empty()) also("the rebuilds agree");
    if (!ctx_.your.table.empty()) also("your table unchanged");
    if (checked.empty()) checked = "nothing to check in this run";
    fmt::print(out, "check: {}\n", ctx_.consistent ? checked : "PROBLEMS (see report.md)");
    fmt::print(out, "report: {} (results.csv, {} plot(s))\n", report, plots);
  }

  std::optional<double> Get(const std::string& q, const std::string& c,
                            const std::string& m) const {
    return results_.Get(q, c, m);
  }
  // "median [min-max]" of a repeated point (the median alone when it ran once).
  std::string Spread(const std::string& q, const std::string& c, const std::string& m) const {
    const std::optional<double> v = Get(q, c, m), lo = Get(q, c, m + "_min"),
                                hi = Get(q, c, m + "_max");
    if (!v) return "?";
    if (!lo || !hi || *lo == *hi) return Number(*v);
    return fmt::format("{} [{}-{}]", Number(*v), Number(*lo), Number(*hi));
  }

  // The measured volumes of question 3, in order.
  std::vector<int64_t> Volumes() const {
    std::set<int64_t> v;
    for (const StressRow& r : rows_) {
      if (r.question == "projection_rebuild")
        v.insert(std::stoll(r.case_name.substr(0, r.case_name.find('/'))));
    }
    return {v.begin(), v.end()};
  }
  // Writer counts measured in question 4 for `kind` (distinct, one_stream).
  std::vector<int> Writers(const std::string& kind) const {
    std::set<int> w;
    for (const StressRow& r : rows_) {
      if (r.question == "concurrent_append" && r.metric == "writers" &&
          r.case_name.rfind(kind + "_", 0) == 0) {
        w.insert(static_cast<int>(r.value));
      }
    }
    return {w.begin(), w.end()};
  }
  // The writer count with the most events/s of `kind`.
  std::optional<int> BestWriters(const std::string& kind) const {
    std::optional<int> best;
    double rate = -1;
    for (int w : Writers(kind)) {
      const double r =
          Get("concurrent_append", fmt::format("{}_{}", kind, w), "events_per_s").value_or(0);
      if (r > rate) rate = r, best = w;
    }
    return best;
  }

  // The longest stream whose p99 load fits in `budget` ms, from question 1's curve:
  // interpolated between the measured lengths around it, or beyond the longest measured at
  // that length's p99 per event (load time grows linearly). `extrapolated` says which.
  double LengthWithin(double budget, bool& extrapolated) const {
    std::vector<std::pair<double, double>> points;  // (events, p99 ms)
    for (int64_t n : {10, 50, 100, 500, 1000, 5000, 10000}) {
      if (auto v = Get("aggregate_load", std::to_string(n), "p99")) {
        points.emplace_back(static_cast<double>(n), *v);
      }
    }
    extrapolated = false;
    if (points.empty() || budget <= 0) return 0;
    for (size_t i = 0; i < points.size(); ++i) {
      if (points[i].second <= budget) continue;
      if (i == 0) return points[0].first * budget / points[0].second;
      const auto [n0, t0] = points[i - 1];
      const auto [n1, t1] = points[i];
      return n0 + (budget - t0) * (n1 - n0) / (t1 - t0);
    }
    extrapolated = true;
    return points.back().first * budget / points.back().second;
  }

  // The one-stream case the summary quotes: 10 writers contending (or the most measured).
  std::optional<int> OneStreamWriters() const {
    const std::vector<int> w = Writers("one_stream");
    if (w.empty()) return std::nullopt;
    if (std::find(w.begin(), w.end(), 10) != w.end()) return 10;
    return w.back();
  }

  // The five lines: the four answers for this server, the article's figure beside each,
  // and the ratio.
  std::vector<std::string> Summary() const {
    std::vector<std::string> s;
    if (auto p50 = Get("aggregate_load", "10000", "p50")) {
      s.push_back(fmt::format(
          "1. Aggregate load: a 10,000-event aggregate loads in {} ms (p50) on this server; the "
          "article: 847 ms; {}.",
          Number(*p50), Ratio(*p50, 847, true)));
    } else {
      s.push_back("1. Aggregate load: not measured in this run (--only).");
    }
    if (auto x = Get("snapshot", "crossover", "events")) {
      s.push_back(fmt::format(
          "2. Snapshots: snapshot + 50 events beats a full replay from about {} events here; the "
          "article: about 300 events; ours / article = {:.3g}.",
          Number(*x), *x / 300));
    } else {
      s.push_back("2. Snapshots: not measured in this run (--only).");
    }
    const std::vector<int64_t> volumes = Volumes();
    if (!volumes.empty()) {
      const int64_t v = std::find(volumes.begin(), volumes.end(), 100000) != volumes.end()
                            ? 100000
                            : volumes.back();
      const std::string c = std::to_string(v);
      const double single = Get("projection_rebuild", c + "/single", "seconds").value_or(0);
      const double batched = Get("projection_rebuild", c + "/batched", "seconds").value_or(0);
      const double pipeline = Get("projection_rebuild", c + "/pipeline", "seconds").value_or(0);
      if (v == 100000) {
        s.push_back(fmt::format(
            "3. Rebuild: 100,000 events take {} s with one save per event, {} s in batches of 50, "
            "{} s with rewind; the article: 8.7 s single, 3.1 s batched; single {}, batched {}, "
            "rewind vs the article's batched {}.",
            Number(single), Number(batched), Number(pipeline), Ratio(single, 8.7, true),
            Ratio(batched, 3.1, true), Ratio(pipeline, 3.1, true)));
      } else {  // --quick: rates, as the volumes differ
        const double vd = static_cast<double>(v);
        s.push_back(fmt::format(
            "3. Rebuild: {} events (--quick; the article measured 100,000) take {} s with one save "
            "per event, {} s in batches of 50, {} s with rewind; the article: 8.7 s single, 3.1 s "
            "batched per 100,000; per event, single {}, batched {}, rewind vs batched {}.",
            Number(vd), Number(single), Number(batched), Number(pipeline),
            Ratio(single / vd, 8.7 / 1e5, true), Ratio(batched / vd, 3.1 / 1e5, true),
            Ratio(pipeline / vd, 3.1 / 1e5, true)));
      }
    } else {
      s.push_back("3. Rebuild: not measured in this run (--only).");
    }
    if (auto best = BestWriters("distinct")) {
      const double rate =
          Get("concurrent_append", fmt::format("distinct_{}", *best), "events_per_s").value_or(0);
      s.push_back(fmt::format(
          "4. Appends, distinct streams: at most {} events/s (with {} writer(s), commands of 11 "
          "events in one transaction); the article: about 45,000 events/s; {}.",
          Number(rate), *best, Ratio(rate, 45000, false)));
    } else {
      s.push_back("4. Appends, distinct streams: not measured in this run (--only).");
    }
    if (std::optional<int> w = OneStreamWriters()) {
      const std::string c = fmt::format("one_stream_{}", *w);
      const double rate = Get("concurrent_append", c, "events_per_s").value_or(0);
      s.push_back(fmt::format(
          "5. Appends, one stream: {} events/s with {} writers ({} conflicts retried, {} of {} "
          "commands given up); the article: about 1,200 events/s; {}.",
          Number(rate), *w, Number(Get("concurrent_append", c, "conflicts").value_or(0)),
          Number(Get("concurrent_append", c, "give_ups").value_or(0)),
          Number(Get("concurrent_append", c, "commands").value_or(0)), Ratio(rate, 1200, false)));
    } else {
      s.push_back("5. Appends, one stream: not measured in this run (--only).");
    }
    return s;
  }

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

  // The commit latency of this run, in words: "X ms (measured first; Y at the end)".
  std::string CommitWords() const {
    const double start = Get("commit", "autocommit_insert", "p50").value_or(0);
    if (auto end = Get("commit", "autocommit_insert_end", "p50")) {
      return fmt::format("{} to {} ms (the commit latency measured first and at the end)",
                         Number(start), Number(*end));
    }
    return fmt::format("{} ms (the commit latency measured first)", Number(start));
  }

  // Why `statements` autocommitted statements per 100,000 events take what they take: how
  // much of it the commits account for at the measured latency, and what the rest is.
  std::string StatementWords(double statements, const std::string& what) const {
    const double commit = Get("commit", "autocommit_insert", "p50").value_or(0);
    return fmt::format(
        "{} is {} statements and durable commits per 100,000 events (notes are skipped): at {}, "
        "the commits "
        "alone are about {} s; the rest is each statement's round trip, parse and upsert on the "
        "two cores the "
        "server shares with this client.",
        what, Number(statements), CommitWords(), Number(statements * commit / 1000));
  }

  // Where a load's time went, as the reason a load is slower.
  std::string LoadParts(const std::string& n) const {
    return fmt::format(
        "of the load, {} ms is the fetch (the server reading and sending the rows), {} ms "
        "the JSON decode and {} ms the fold.",
        Number(Get("aggregate_load", n, "fetch_p50").value_or(0)),
        Number(Get("aggregate_load", n, "decode_p50").value_or(0)),
        Number(Get("aggregate_load", n, "fold_p50").value_or(0)));
  }

  // A figure of the article's, and which of ours stands beside it: ours is (question,
  // case_name, metric) in `unit`; when ours is slower, why_slower() says why.
  struct ArticleFigure {
    std::string question, case_name, metric, unit, article_text;
    double article;
    bool lower_is_better;
    std::function<std::string()> why_slower;
  };

  // The article's figures that questions 1 to 3 answer, in the order of the table.
  std::vector<ArticleFigure> ArticleFigures() const {
    const double commit = Get("commit", "autocommit_insert", "p50").value_or(0);
    return {
        {"aggregate_load", "50", "p50", "ms", "1.2 ms", 1.2, true,
         [this] { return LoadParts("50"); }},
        {"aggregate_load", "10000", "p50", "ms", "847 ms", 847, true,
         [this] { return LoadParts("10000"); }},
        {"snapshot", "5000", "snapshot_fetch_p50", "ms", "2-4 ms", 3, true,
         [this] {
           return fmt::format(
               "a snapshot read is one indexed row over one round trip, and a round trip takes {} "
               "ms here.",
               Number(Get("commit", "round_trip", "p50").value_or(0)));
         }},
        {"snapshot", "every_10", "per_snapshot", "ms", "3.8 ms per snapshot", 3.8, true,
         [commit] {
           return fmt::format(
               "a snapshot save is one durable commit, and a commit takes {} ms here.",
               Number(commit));
         }},
        {"projection_rebuild", "100000/single", "seconds", "s", "8.7 s", 8.7, true,
         [this] { return StatementWords(72000, "one save per event"); }},
        {"projection_rebuild", "100000/batched", "seconds", "s", "3.1 s", 3.1, true,
         [this] { return StatementWords(1440, "batches of 50 (each a 50-row upsert)"); }},
        {"projection_rebuild", "100000/filtered_server", "speedup_vs_client", "x",
         "4.5x faster than client-side", 4.5, false,
         [] {
           return std::string(
               "on a local socket a row the client skips costs little to send, so filtering in the "
               "server saves less than over a network.");
         }},
    };
  }

  // The article's figures beside ours, each "slower" row with its reason.
  std::string Beside() const {
    const std::string head = "| case | ours | the article | ratio | why slower |\n|---|---|---|---|---|\n";
    std::string md = head;
    const std::vector<int64_t> volumes = Volumes();
    for (const ArticleFigure& r : ArticleFigures()) md += FigureRow(r, volumes);
    if (std::optional<int> best = BestWriters("distinct")) {
      md += AppendRow(fmt::format("distinct_{}", *best),
                      fmt::format("distinct streams, best ({} writers)", *best), 45000,
                      fmt::format("every command is a durable commit, at {} each, and the server "
                                  "and all {} writers share two cores.",
                                  CommitWords(), *best));
    }
    if (std::optional<int> best = OneStreamWriters()) md += OneStreamRow(*best);
    if (Writers("distinct").empty()) return md == head ? "" : md;  // question 4 not run
    return md + WritersTable();
  }

  // The row of the table Beside() for figure `r` ("" when ours was not measured); with
  // --quick, a rebuild's seconds per 100,000 events at the largest of `volumes`.
  std::string FigureRow(const ArticleFigure& r, const std::vector<int64_t>& volumes) const {
    std::optional<double> ours = Get(r.question, r.case_name, r.metric);
    std::string shown = Spread(r.question, r.case_name, r.metric), name = r.case_name;
    if (!ours && r.metric == "seconds" && !volumes.empty()) {  // --quick: per 100,000 events
      const std::string method = r.case_name.substr(r.case_name.find('/') + 1);
      const double v = static_cast<double>(volumes.back());
      if (auto at = Get(r.question, fmt::format("{}/{}", volumes.back(), method), r.metric)) {
        ours = *at * 100000 / v;
        shown = Number(*ours);
        name = fmt::format("{} per 100,000 events (measured at {})", method, Number(v));
      }
    }
    if (!ours) return "";
    const double ratio = *ours / r.article;
    const bool slower = r.lower_is_better ? ratio > 1 : ratio < 1;
    return fmt::format("| {} {} {} | {} {} | {} | {:.3g} | {} |\n", r.question, name, r.metric,
                       shown, r.unit, r.article_text, ratio, slower ? r.why_slower() : "");
  }

  // The one-stream row of the table Beside(), for `best` writers.
  std::string OneStreamRow(int best) const {
    // Each command reloads the one stream first, and the stream grows through the run: at
    // question 1's per-event load cost, the average reload is a large part of a command.
    const std::string c = fmt::format("one_stream_{}", best);
    const double grown = Get("concurrent_append", c, "events").value_or(0);
    std::optional<double> load_10k = Get("aggregate_load", "10000", "p50");
    std::string why =
        "every conflict costs a reload of the whole stream and a backoff before the retry.";
    if (load_10k && grown > 0) {
      const double us = *load_10k / 10000 * 1000;
      why = fmt::format(
          "every command first reloads the one stream, which grows by {} events in the run "
          "(about {} ms for the average reload at question 1's {} µs per event), and every "
          "conflict costs another reload and a backoff before the retry.",
          Number(grown), Number(us * grown / 2 / 1000), Number(us));
    }
    return AppendRow(c, fmt::format("one stream ({} writers)", best), 1200, why);
  }

  // Question 4 writer by writer, distinct streams beside one stream, and how it was measured.
  std::string WritersTable() const {
    std::string md;
    md +=
        "\n| writers | distinct: events/s | command p50 / p99 ms | one stream: events/s | command "
        "p50 / p99 ms | "
        "commands | conflicts | retries | given up |\n|---|---|---|---|---|---|---|---|---|\n";
    for (int w : Writers("distinct")) {
      const std::string d = fmt::format("distinct_{}", w), o = fmt::format("one_stream_{}", w);
      md += fmt::format("| {} | {} | {} / {} | {} | {} / {} | {} | {} | {} | {} |\n", w,
                        Spread("concurrent_append", d, "events_per_s"),
                        Number(Get("concurrent_append", d, "p50").value_or(0)),
                        Number(Get("concurrent_append", d, "p99").value_or(0)),
                        Spread("concurrent_append", o, "events_per_s"),
                        Number(Get("concurrent_append", o, "p50").value_or(0)),
                        Number(Get("concurrent_append", o, "p99").value_or(0)),
                        Number(Get("concurrent_append", o, "commands").value_or(0)),
                        Number(Get("concurrent_append", o, "conflicts").value_or(0)),
                        Number(Get("concurrent_append", o, "retries").value_or(0)),
                        Number(Get("concurrent_append", o, "give_ups").value_or(0)));
    }
    md +=
        "\nWriters connect, then wait at a barrier; the clock starts when all are there. A command "
        "appends its "
        "events in one transaction (distinct streams: a new order of 11 events; one stream: the "
        "order reloaded and a "
        "line of 2 events added, a conflict reloading the order and re-running the command after a "
        "jittered "
        "backoff, up to 10 attempts). Latencies are per command, retries included.\n";
    return md;
  }

  // A row of question 4 beside the article: case `c`'s events/s against the article's
  // `article` events/s, with `why` when ours is lower.
  std::string AppendRow(const std::string& c, const std::string& label, double article,
                        const std::string& why) const {
    const double rate = Get("concurrent_append", c, "events_per_s").value_or(0);
    return fmt::format("| concurrent_append {} | {} events/s | about {} events/s | {:.3g} | {} |\n",
                       label, Spread("concurrent_append", c, "events_per_s"), Number(article),
                       rate / article, rate < article ? why : "");
  }

  // The user's table in one line, after the summary ("" when not measured).
  std::string YourLine() const {
    if (ctx_.your.table.empty()) return "";
    const std::string q = "your_table";
    const auto est = [&](const char* c) {
      auto v = Get(q, c, "estimated_full_seconds");
      if (!v) return std::string("?");
      // rewind's runs that could not tell its cost per event from the noise: an upper bound
      const bool bound = Get(q, c, "fitted").value_or(1) == 0;
      return (bound ? "at most about " : "about ") + Seconds(*v);
    };
    std::string models;
    if (Get(q, "rewind_your_models", "estimated_full_seconds")) {
      models = fmt::format(" ({} with your read models)", est("rewind_your_models"));
    }
    return fmt::format(
        "Your table `{}` ({} events): rebuilding it takes {} with rewind{}, {} in batches of 50, "
        "{} with one save per event (estimates from the first {} events).",
        ctx_.your.table, Number(Get(q, "table", "rows_used_for_estimates").value_or(0)),
        est("rewind"), models, est("batched_50"), est("single"),
        Number(Get(q, "sample", "events").value_or(0)));
  }

  // Seconds, and minutes or hours when long.
  static std::string Seconds(double s) {
    if (s >= 7200) return fmt::format("{} s ({:.1f} h)", Number(s), s / 3600);
    if (s >= 120) return fmt::format("{} s ({:.0f} min)", Number(s), s / 60);
    return Number(s) + " s";
  }

  // The section "Your table": its size, its payloads, the sample, the rebuild measured on the
  // sample by each method, the full table's time estimated, and the checks.
  std::string YourSection() const {
    const YourTableContext& y = ctx_.your;
    const std::string q = "your_table";
    const double rows = YourFigure("table", "rows_used_for_estimates"),
                 sample = YourFigure("sample", "events");
    std::string md = fmt::format(
        "`{}`, read only: plain SELECTs on a session whose transactions are READ ONLY, in keyset "
        "pages of 10,000 (each one statement: no transaction held on your table, no locking read); "
        "nothing is written to its database.\n\n",
        y.table);
    md += YourFacts(rows, sample);
    md += YourMethods(rows);
    md += YourEstimates(rows, sample);
    if (auto f = Get(q, "rewind_your_models", "failures"); f && *f > 0) {
      md += fmt::format(
          "\nYour read models could not apply {} events of the sample (rewind_failures in the "
          "stress database; keep it with --keep to look).\n",
          Number(*f));
    }
    md += fmt::format(
        "\nChecks: {}.\n",
        y.checked
            ? "the built-in read model's events per type (rewind's and by hand) equal a GROUP "
              "BY over your table restricted to the sampled ids; the sample equals those rows "
              "(a fingerprint of every column); your database holds the same tables as at the "
              "start"
            : "FAILED (see the problems above)");
    return md;
  }

  // A figure of the user's table (question your_table), 0 when not measured.
  double YourFigure(const char* c, const char* m) const {
    return Get("your_table", c, m).value_or(0);
  }

  // The bullets of "Your table": its size (`rows`), its payloads, the sample (`sample`
  // events), its event types and the read models.
  std::string YourFacts(double rows, double sample) const {
    const YourTableContext& y = ctx_.your;
    const auto v = [&](const char* c, const char* m) { return YourFigure(c, m); };
    std::string md;
    md += fmt::format(
        "- **Size**: {} rows ({}); information_schema's estimate {} rows; ids {} to {}; data {} "
        "MiB + indexes {} MiB (information_schema).\n",
        Number(rows), y.rows_how, Number(v("table", "rows_information_schema_estimate")), y.min_id,
        y.max_id, Number(v("table", "data_bytes") / 1048576),
        Number(v("table", "index_bytes") / 1048576));
    md += fmt::format(
        "- **Payloads** (over the sample): {} bytes on average, {} at p95, {} at most.\n",
        Number(v("sample", "payload_avg_bytes")), Number(v("sample", "payload_p95_bytes")),
        Number(v("sample", "payload_max_bytes")));
    md += fmt::format(
        "- **The sample**: the first {} events by id (ids {} to {}), copied into the stress "
        "database's `your_events_sample` in {} s.\n",
        Number(sample), y.min_id, y.last_id, Number(v("sample", "copy_seconds")));
    std::string types;
    for (size_t i = 0; i < y.types.size() && i < 10; ++i) {
      types += fmt::format("{}`{}` {:.1f} %", i ? ", " : "", y.types[i].first,
                           y.types[i].second / std::max(1.0, sample) * 100);
    }
    if (y.types.size() > 10) types += fmt::format(" and {} other types", y.types.size() - 10);
    md += fmt::format("- **Event types** of the sample ({}): {}.\n", y.types.size(), types);
    md += fmt::format("- **Read model**: built in, {}{}.\n", y.model,
                      y.your_models.empty() ? " (give yours with --models)"
                                            : fmt::format("; and yours (--models): {}", [&] {
                                                std::string n;
                                                for (const std::string& m : y.your_models)
                                                  n += (n.empty() ? "" : ", ") + m;
                                                return n;
                                              }()));
    return md;
  }

  // The table of the methods measured on the sample, each with its estimate for the `rows`.
  std::string YourMethods(double rows) const {
    const std::string q = "your_table";
    const auto v = [&](const char* c, const char* m) { return YourFigure(c, m); };
    std::string md;
    md += fmt::format(
        "\n| method | events measured | seconds | events/s | your {} rows: estimate "
        "|\n|---|---|---|---|---|\n",
        Number(rows));
    struct Method {
      const char* c;
      const char* what;
    };
    for (const Method& m :
         {Method{"rewind", "rewind's pipeline, the built-in read model"},
          Method{"rewind_quarter", "rewind's pipeline, the built-in read model, the first quarter"},
          Method{"rewind_your_models", "rewind's pipeline, your read models"},
          Method{"rewind_your_models_quarter",
                 "rewind's pipeline, your read models, the first quarter"},
          Method{"batched_50", "by hand, batches of 50 (one multi-row upsert and commit each)"},
          Method{"single", "by hand, one autocommitted save per event (first events, once)"}}) {
      if (!Get(q, m.c, "seconds")) continue;
      const double events = v(m.c, "events"), seconds = v(m.c, "seconds");
      const auto est = Get(q, m.c, "estimated_full_seconds");
      md += fmt::format(
          "| {} | {} | {} | {} | {} |\n", m.what, Number(events), Spread(q, m.c, "seconds"),
          Number(seconds > 0 ? events / seconds : 0),
          est ? "about " + Seconds(*est) + " (estimate)" : std::string("(fits the line)"));
    }
    return md;
  }

  // The estimates for the whole table (`rows`) in words, and how rewind's was made from the
  // `sample`.
  std::string YourEstimates(double rows, double sample) const {
    const std::string q = "your_table";
    const auto v = [&](const char* c, const char* m) { return YourFigure(c, m); };
    std::string md;
    md += fmt::format(
        "\nRebuilding your {} events: {}about {} with rewind (estimate from {} events){}, about {} "
        "in batches of 50, about {} with one save per event (estimate from {} events). {} The "
        "others' are their time per event times the rows. Each assumes the rest of the table is "
        "like its first events (payload sizes, types) and that the rebuild stays linear once the "
        "read model outgrows the buffer pool.\n",
        Number(rows), v("rewind", "fitted") > 0 ? "" : "at most ",
        Seconds(v("rewind", "estimated_full_seconds")), Number(sample),
        Get(q, "rewind_your_models", "estimated_full_seconds")
            ? fmt::format(" ({} with your read models)",
                          Seconds(v("rewind_your_models", "estimated_full_seconds")))
            : "",
        Seconds(v("batched_50", "estimated_full_seconds")),
        Seconds(v("single", "estimated_full_seconds")), Number(v("single", "events")),
        v("rewind", "fitted") > 0
            ? fmt::format("rewind's estimate is its cost per run ({} s: connections, tables, the "
                          "swap) plus its time per event ({} µs) times the rows, both from the "
                          "fastest runs on the whole sample and on its first quarter.",
                          Number(v("rewind", "fixed_seconds")),
                          Number(v("rewind", "seconds_per_event") * 1e6))
            : fmt::format("rewind's runs on the whole sample and on its first quarter did not "
                          "tell its time per event apart from the noise (a larger --sample "
                          "would): its estimate is the whole sample's time per event ({} µs, "
                          "its cost per run included) times the rows, an upper bound.",
                          Number(v("rewind", "seconds_per_event") * 1e6)));
    return md;
  }

  // One PNG per question with gnuplot (scripts/setup installs it). Returns the file names.
  std::vector<std::string> Plots(const std::filesystem::path& dir) const;
  // Writes `text` into the file `name` of `dir` (a plot's data, or the gnuplot script).
  static void PlotData(const std::filesystem::path& dir, const std::string& name,
                       const std::string& text);
  // "median min max" of a repeated point (the median three times when it ran once).
  std::string PlotSpread(const std::string& q, const std::string& c, const std::string& m) const;
  // Question N's plot: its data written into `dir`, its PNG's name added to `made`, and the
  // gnuplot commands that draw it returned ("" and nothing written when it was not measured).
  std::string PlotQuestion1(const std::filesystem::path& dir, std::vector<std::string>& made) const;
  std::string PlotQuestion2(const std::filesystem::path& dir, std::vector<std::string>& made) const;
  std::string PlotQuestion3(const std::filesystem::path& dir, std::vector<std::string>& made) const;
  std::string PlotQuestion4(const std::filesystem::path& dir, std::vector<std::string>& made) const;

  const std::string out_dir_;
  const StressResults& results_;
  const StressContext& ctx_;
  const std::vector<StressRow>& rows_;
};

std::vector<std::string> Report::Plots(const std::filesystem::path& dir) const {
  std::vector<std::string> made;
  if (std::system("command -v gnuplot >/dev/null 2>&1") != 0) {
    fmt::print(stderr,
               "rewind stress: gnuplot is not installed (scripts/setup installs it): no plots\n");
    return made;
  }
  const std::string out = dir.string();
  std::string script =
      "set terminal pngcairo size 1000,620 noenhanced font ',11'\nset grid\nset key outside right "
      "top box\n"
      "set format y '%.10g'\nset format x '%.10g'\nset rmargin 34\n";
  script += PlotQuestion1(dir, made);
  script += PlotQuestion2(dir, made);
  script += PlotQuestion3(dir, made);
  script += PlotQuestion4(dir, made);
  PlotData(dir, "plots.gp", script);
  const std::string cmd = fmt::format("gnuplot '{}/plots.gp' 2>'{}/gnuplot.log'", out, out);
  if (std::system(cmd.c_str()) != 0) {
    fmt::print(stderr, "rewind stress: gnuplot failed (see {}/gnuplot.log): no plots\n", out);
    made.clear();
  }
  return made;
}

void Report::PlotData(const std::filesystem::path& dir, const std::string& name,
                      const std::string& text) {
  std::ofstream(dir / name) << text;
}

std::string Report::PlotSpread(const std::string& q, const std::string& c,
                               const std::string& m) const {
  const double v = Get(q, c, m).value_or(0);
  return fmt::format("{} {} {}", v, Get(q, c, m + "_min").value_or(v),
                     Get(q, c, m + "_max").value_or(v));
}

std::string Report::PlotQuestion1(const std::filesystem::path& dir,
                                  std::vector<std::string>& made) const {
  const std::string out = dir.string();
  std::string script;
  std::string q1;
  for (const char* n : {"10", "50", "100", "500", "1000", "5000", "10000"}) {
    if (Get("aggregate_load", n, "p50")) {
      q1 += fmt::format("{} {} {}\n", n, PlotSpread("aggregate_load", n, "p50"),
                        Get("aggregate_load", n, "p99").value_or(0));
    }
  }
  if (!q1.empty()) {
    PlotData(dir, "q1.dat", q1);
    script = fmt::format(
        "set output '{0}/q1_aggregate_load.png'\nset title 'Q1: how long does an aggregate take to "
        "load as its stream "
        "grows?'\nset logscale xy\nset xrange [5:20000]\nset yrange [0.01:5000]\nset xlabel "
        "'events in the stream (log)'\n"
        "set ylabel 'load time, ms (log)'\n"
        "set label 1 'article: 1.2 ms at 50' at 50,1.2 offset 1,0.8\nset label 2 'article: 847 ms "
        "at 10,000' at "
        "10000,847 right offset -1,0.8\n"
        "plot '{0}/q1.dat' u 1:2:3:4 w yerrorlines lw 2 t 'p50 (min-max of runs)', '' u 1:5 w lp "
        "dt 2 t 'p99', "
        "'-' u 1:2 w p pt 7 ps 2 lc rgb 'red' t 'the article (EventStoreDB)', {1} w l dt 3 lc rgb "
        "'gray40' t "
        "'budget {1} ms'\n50 1.2\n10000 847\ne\nunset label 1\nunset label 2\nunset logscale\nset "
        "xrange [*:*]\nset "
        "yrange [*:*]\n",
        out, ctx_.budget_ms);
    made.push_back("q1_aggregate_load.png");
  }
  return script;
}

std::string Report::PlotQuestion2(const std::filesystem::path& dir,
                                  std::vector<std::string>& made) const {
  const std::string out = dir.string();
  std::string script;
  std::string q2;
  for (const char* n : {"60", "80", "100", "150", "200", "300", "500", "1000", "2000", "5000"}) {
    if (Get("snapshot", n, "full_p50")) {
      q2 += fmt::format("{} {} {} {}\n", n, PlotSpread("snapshot", n, "full_p50"),
                        PlotSpread("snapshot", n, "snapshot_p50"),
                        Get("snapshot", n, "snapshot_fetch_p50").value_or(0));
    }
  }
  if (!q2.empty()) {
    PlotData(dir, "q2.dat", q2);
    const double x = Get("snapshot", "crossover", "events").value_or(1);
    script = fmt::format(
        "set output '{0}/q2_snapshot.png'\nset title 'Q2: from what length does a snapshot beat a "
        "full replay?'\n"
        "set logscale xy\nset xrange [40:8000]\nset xlabel 'events in the stream (log)'\nset "
        "ylabel 'load time, ms "
        "(p50, log)'\n"
        "set arrow 1 from {1:.0f}, graph 0 to {1:.0f}, graph 1 nohead dt 2 lc rgb 'black'\n"
        "set label 1 'crossover here: {1:.0f}' at {1:.0f}, graph 0.93 left offset 0.5,0\n"
        "set arrow 2 from 300, graph 0 to 300, graph 1 nohead dt 3 lc rgb 'red'\n"
        "set label 2 'article: about 300' at 300, graph 0.75 left offset 0.5,0 tc rgb 'red'\n"
        "set label 3 'article: snapshot read 2-4 ms' at 5000,2 right offset -1,-1 tc rgb 'red'\n"
        "plot '{0}/q2.dat' u 1:2:3:4 w yerrorlines lw 2 t 'full replay', '' u 1:5:6:7 w "
        "yerrorlines lw 2 t 'snapshot "
        "+ 50 events', '' u 1:8 w lp dt 2 t 'the snapshot read alone', '-' u 1:2:3:4 w yerrorbars "
        "pt 7 ps 1.5 lc rgb "
        "'red' t 'the article'\n5000 3 2 4\ne\n"
        "unset arrow 1\nunset arrow 2\nunset label 1\nunset label 2\nunset label 3\nunset "
        "logscale\nset xrange [*:*]\n",
        out, x);
    made.push_back("q2_snapshot.png");
  }
  return script;
}

std::string Report::PlotQuestion3(const std::filesystem::path& dir,
                                  std::vector<std::string>& made) const {
  const std::string out = dir.string();
  std::string script;
  std::string q3;
  for (int64_t v : Volumes()) {
    const std::string c = std::to_string(v);
    q3 += c;
    const bool estimated = Get("projection_rebuild", c + "/single", "estimated").has_value();
    for (const char* m : {"single", "batched", "pipeline", "filtered_server", "filtered_client"}) {
      q3 += " " + (estimated && std::string(m) == "single"
                       ? std::string("NaN NaN NaN")
                       : PlotSpread("projection_rebuild", c + "/" + m, "seconds"));
    }
    q3 += estimated ? fmt::format(" {}\n",
                                  Get("projection_rebuild", c + "/single", "seconds").value_or(0))
                    : std::string(" NaN\n");
  }
  if (!q3.empty()) {
    PlotData(dir, "q3.dat", q3);
    script = fmt::format(
        "set output '{0}/q3_projection_rebuild.png'\nset title 'Q3: how long does rebuilding a "
        "projection take (the "
        "recovery window)?'\nset logscale xy\nset xrange [{1}:{2}]\nset yrange [*:*]\nset xlabel "
        "'events rebuilt (log)'\n"
        "set ylabel 'seconds (log)'\n"
        "set label 1 'article: 8.7 s single' at 100000,8.7 right offset -1,0 tc rgb 'red'\n"
        "set label 2 'article: 3.1 s batched' at 100000,3.1 right offset -1,0 tc rgb 'red'\n"
        "plot '{0}/q3.dat' u 1:2:3:4 w yerrorlines lw 2 t 'one save per event', '' u 1:5:6:7 w "
        "yerrorlines lw 2 t "
        "'batches of 50', '' u 1:8:9:10 w yerrorlines lw 2 t 'rewind pipeline', '' u 1:11:12:13 w "
        "yerrorlines t 'one "
        "type (20 %), server filter', '' u 1:14:15:16 w yerrorlines t 'one type (20 %), client "
        "filter', '' u 1:17 w lp dt 2 lc 1 t 'one save per event, estimated', '-' u 1:2 w "
        "p pt 7 ps 2 lc rgb 'red' t 'the article, 100,000 events'\n100000 8.7\n100000 3.1\ne\n"
        "unset label 1\nunset label 2\nunset logscale\nset xrange [*:*]\n",
        out, static_cast<double>(Volumes().front()) / 2,
        static_cast<double>(std::max<int64_t>(Volumes().back(), 100000)) * 2);
    made.push_back("q3_projection_rebuild.png");
  }
  return script;
}

std::string Report::PlotQuestion4(const std::filesystem::path& dir,
                                  std::vector<std::string>& made) const {
  const std::string out = dir.string();
  std::string script;
  std::string q4;
  for (int w : Writers("distinct")) {
    q4 += fmt::format(
        "{} {} {}\n", w,
        PlotSpread("concurrent_append", fmt::format("distinct_{}", w), "events_per_s"),
        Get("concurrent_append", fmt::format("one_stream_{}", w), "events_per_s")
            ? PlotSpread("concurrent_append", fmt::format("one_stream_{}", w), "events_per_s")
            : "NaN NaN NaN");
  }
  if (!q4.empty()) {
    PlotData(dir, "q4.dat", q4);
    script = fmt::format(
        "set output '{0}/q4_concurrent_append.png'\nset title 'Q4: how many events per second can "
        "concurrent writers "
        "append?'\nset logscale xy\nset xrange [0.8:130]\nset yrange [10:100000]\nset xlabel "
        "'writers (log)'\n"
        "set ylabel 'events appended per second (log)'\n"
        "set label 1 'article: ceiling about 45,000' at 1,45000 left offset 0.5,0.7 tc rgb 'red'\n"
        "set label 2 'article: one stream about 1,200' at 1,1200 left offset 0.5,0.7 tc rgb 'red'\n"
        "plot '{0}/q4.dat' u 1:2:3:4 w yerrorlines lw 2 t 'distinct streams', '' u 1:5:6:7 w "
        "yerrorlines lw 2 t 'one "
        "stream (retries)', 45000 w l dt 2 lw 2 lc rgb 'red' t 'the article: distinct', 1200 w l "
        "dt 3 lw 2 lc rgb "
        "'red' t 'the article: one stream'\nunset label 1\nunset label 2\nunset logscale\n",
        out);
    made.push_back("q4_concurrent_append.png");
  }
  return script;
}

}  // namespace

bool WriteStressReport(const std::string& out_dir, const StressResults& results,
                       const StressContext& ctx, const Status& status, std::FILE* out) {
  return Report(out_dir, results, ctx).Write(out, status);
}

}  // namespace rw
