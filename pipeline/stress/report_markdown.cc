#include <fmt/core.h>

#include <algorithm>
#include <fstream>
#include <functional>
#include <thread>

#include "pipeline/stress/report_parts.h"

namespace rw {
namespace {

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

class Markdown : public Figures {
 public:
  explicit Markdown(const Figures& f) : Figures(f) {}

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
          "2. Snapshots: snapshot + 50 events pays (at least 10 % faster than a full replay at the "
          "median of the rounds) from {} events here ({}); the article: about 300 events; "
          "ours / article "
          "= {:.3g}.",
          Number(*x), ctx_.crossover_note, *x / 300));
    } else if (Get("snapshot", "crossover", "not_measurable")) {
      s.push_back(fmt::format(
          "2. Snapshots: snapshot + 50 events does not pay at any measured length here ({}); the "
          "article: about 300 events; ours / article = n/a.",
          ctx_.crossover_note));
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
          "(p99 {} ms, mean {} ms); a round trip without a write {} ms. Every write figure below "
          "is bounded by it.\n",
          Spread("commit", "autocommit_insert", "p50"),
          Number(Get("commit", "autocommit_insert", "p99").value_or(0)),
          Spread("commit", "autocommit_insert", "mean"), Spread("commit", "round_trip", "p50"));
      if (auto end = Get("commit", "autocommit_insert_end", "p50")) {
        // "Steady" only when the two p50s are within 20 % of each other.
        const double change = *end > *c ? *end / *c : *c / *end;
        md += fmt::format(
            "- measured again at the end: {} ms at p50 (mean {} ms). {}\n",
            Spread("commit", "autocommit_insert_end", "p50"),
            Number(Get("commit", "autocommit_insert_end", "mean").value_or(0)),
            change <= 1.2
                ? fmt::format("Steady through the run (the two p50s within {:.0f} %).",
                              (change - 1) * 100)
                : fmt::format(
                      "The disk's flush latency changed {:.1f}x during the run (other work on this "
                      "machine shares it): figures that commit are only as steady as it.",
                      change));
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
    if (!ctx_.your.table.empty()) md += "\n## Your table\n\n" + YourSection(*this);
    // Sections with nothing measured (--only) are left out.
    if (const std::string d = Decisions(*this); !d.empty()) md += "\n## Decisions\n\n" + d;
    if (const std::string b = Beside(); !b.empty()) md += "\n## Beside the article\n\n" + b;
    md +=
        "\n## Every measurement\n\n| question | case | metric | value | unit "
        "|\n|---|---|---|---|---|\n";
    for (const StressRow& r : rows_) {
      if (r.metric.find("_run") != std::string::npos) continue;  // each repeat's: results.csv
      md += fmt::format("| {} | {} | {} | {} | {} |\n", r.question, r.case_name, r.metric,
                        Number(r.value), r.unit);
    }
    return md;
  }

 private:
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

  // Why a rebuild by hand (`method`: single, batched) is slower than the article's
  // `article` s per 100,000 events, from its measured parts at 100,000 events (or, with
  // --quick, at the largest volume, scaled per 100,000): its statements, reads and client
  // work, and of the statements the durable commits, which the same statements committed
  // once per page (<method>_in_txn) leave out. Says what is unexplained when the commits
  // explain less than 80 % of the gap.
  std::string ByHandParts(const std::string& method, double article) const {
    std::optional<int64_t> at;
    for (int64_t v : Volumes()) {
      if (Get("projection_rebuild", fmt::format("{}/{}_in_txn", v, method), "statement_s")) at = v;
    }
    if (!at) return "";
    const std::string c = fmt::format("{}/{}", *at, method), ctl = c + "_in_txn";
    const auto g = [&](const std::string& cs, const char* m) {
      return Get("projection_rebuild", cs, m).value_or(0) * 100000 / static_cast<double>(*at);
    };
    const double total = g(c, "seconds"), statements = g(c, "statement_s"), read = g(c, "read_s"),
                 client = g(c, "client_s"), n = g(c, "statements"), control = g(ctl, "statement_s"),
                 commits = statements - control, gap = total - article;
    std::string why = fmt::format(
        "measured parts{} of our {} s: {} statements {} s, reads {} s, client work {} s ({:.0f} % "
        "of the total). The same statements committed once per page of 10,000 events take {} s, "
        "so the durable commit of each statement costs {} s ({} ms per commit; the commit probe: "
        "{} ms p50, {} ms mean), {:.0f} % of the {} s gap to the article. The flush is the "
        "server's and its disk's (innodb_flush_log_at_trx_commit = 1), not the client's.",
        *at == 100000
            ? ""
            : fmt::format(" (at {} events, per 100,000)", Number(static_cast<double>(*at))),
        Number(total), Number(n), Number(statements), Number(read), Number(client),
        total > 0 ? (statements + read + client) / total * 100 : 0, Number(control),
        Number(commits), Number(n > 0 ? commits / n * 1000 : 0),
        Number(Get("commit", "autocommit_insert", "p50").value_or(0)),
        Number(Get("commit", "autocommit_insert", "mean").value_or(0)),
        gap > 0 ? commits / gap * 100 : 0, Number(gap));
    if (gap > 0 && commits < 0.8 * gap) {
      why += fmt::format(" {} s of the gap ({:.0f} %) is not explained by the commits.",
                         Number(gap - commits), (gap - commits) / gap * 100);
    }
    return why;
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
         [this] { return ByHandParts("single", 8.7); }},
        {"projection_rebuild", "100000/batched", "seconds", "s", "3.1 s", 3.1, true,
         [this] { return ByHandParts("batched", 3.1); }},
        {"projection_rebuild", "100000/filtered_server", "speedup_vs_client", "x",
         "4.5x faster than client-side", 4.5, false,
         [] {
           return std::string(
               "unexplained: not broken into measured parts (the rows the client reads and skips "
               "are not timed apart). A likely reason, not measured here: on a local socket a row "
               "costs little to send, so filtering in the server saves less than over a network.");
         }},
    };
  }

  // The article's figures beside ours, each "slower" row with its reason.
  std::string Beside() const {
    const std::string head =
        "| case | ours | the article | ratio | why slower |\n|---|---|---|---|---|\n";
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

  // The one-stream row of the table Beside(), for `best` writers, and the whole-stream
  // reload's beside it.
  std::string OneStreamRow(int best) const {
    const std::string c = fmt::format("one_stream_{}", best);
    const auto v = [&](const std::string& cs, const char* m) {
      return Get("concurrent_append", cs, m).value_or(0);
    };
    // Not broken into measured parts: the conflicts, retries and backoffs are counted, not
    // timed, so what the gap is made of is said unexplained.
    const std::string why = fmt::format(
        "not broken into measured parts: {} conflicts and {} retries in {} commands (each retry "
        "a read of the newer events, the command re-run and a jittered backoff), and every "
        "command a durable commit at {}; how much of the gap each makes is unexplained.",
        Number(v(c, "conflicts")), Number(v(c, "retries")), Number(v(c, "commands")),
        CommitWords());
    std::string md = AppendRow(c, fmt::format("one stream ({} writers)", best), 1200, why);
    const std::string r = fmt::format("one_stream_reload_{}", best);
    if (Get("concurrent_append", r, "events_per_s")) {
      md += AppendRow(r, fmt::format("one stream, whole stream reloaded ({} writers)", best), 1200,
                      "unexplained: not broken into measured parts. An aggregate without "
                      "snapshots: each attempt reloads the whole stream, which grows through the "
                      "run; the reloads are not timed apart.");
    }
    return md;
  }

  // Question 4 writer by writer, distinct streams beside one stream (read as the article:
  // newer events only; and the whole-stream reload), and how it was measured.
  std::string WritersTable() const {
    std::string md =
        "\n| writers | distinct: events/s | p50 / p99 ms | one stream: events/s | p50 / p99 ms | "
        "commands | conflicts | retries | given up | whole reload: events/s | p50 / p99 ms | given "
        "up |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n";
    const auto v = [&](const std::string& c, const char* m) {
      return Number(Get("concurrent_append", c, m).value_or(0));
    };
    for (int w : Writers("distinct")) {
      const std::string d = fmt::format("distinct_{}", w), o = fmt::format("one_stream_{}", w),
                        r = fmt::format("one_stream_reload_{}", w);
      md += fmt::format(
          "| {} | {} | {} / {} | {} | {} / {} | {} | {} | {} | {} | {} | {} / {} | {} |\n", w,
          Spread("concurrent_append", d, "events_per_s"), v(d, "p50"), v(d, "p99"),
          Spread("concurrent_append", o, "events_per_s"), v(o, "p50"), v(o, "p99"),
          v(o, "commands"), v(o, "conflicts"), v(o, "retries"), v(o, "give_ups"),
          Spread("concurrent_append", r, "events_per_s"), v(r, "p50"), v(r, "p99"),
          v(r, "give_ups"));
    }
    const std::string o = fmt::format("one_stream_{}", Writers("distinct").front());
    md += fmt::format(
        "\nWriters connect, then wait at a barrier; the clock starts when all are there. A command "
        "appends {} events in one transaction, with its expected version. Distinct streams: a new "
        "order. One stream, as the article: each writer keeps the order it loaded and, on a "
        "conflict, reads only the events after the version it knows, re-runs the command and "
        "retries after a jittered backoff, giving up after {} attempts. Whole reload: the same, "
        "but every attempt reloads the whole stream (an aggregate without snapshots). Latencies "
        "are per command, retries included.\n",
        v(fmt::format("distinct_{}", Writers("distinct").front()), "events_per_command"),
        Get("concurrent_append", o, "max_attempts") ? v(o, "max_attempts") : std::string("10"));
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
};

}  // namespace

std::vector<std::string> SummaryLines(const Figures& f) { return Markdown(f).Summary(); }
std::string RunFacts(const Figures& f, const char* date) { return Markdown(f).RunFacts(date); }
std::string Sections(const Figures& f, const Status& status) {
  return Markdown(f).Sections(status);
}

}  // namespace rw
