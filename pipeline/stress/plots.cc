#include <fmt/core.h>
#include <unistd.h>

#include <cstdlib>
#include <ctime>
#include <fstream>
#include <optional>

#include "pipeline/stress/report_parts.h"
#include "pipeline/stress/cases.h"

namespace rw {
namespace {

class Plotter : public Figures {
 public:
  explicit Plotter(const Figures& f) : Figures(f) {}

  // One PNG per question with gnuplot (Debian package gnuplot-nox). Returns the file names.
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

  // Every plot's subtitle: quick or full run, the date and the machine.
  std::string Subtitle() const;

  const std::string out_dir_;
};

std::string Plotter::Subtitle() const {
  char host[256] = "?";
  gethostname(host, sizeof host - 1);
  char date[64];
  const std::time_t now = std::time(nullptr);
  std::strftime(date, sizeof date, "%Y-%m-%d %H:%M UTC", std::gmtime(&now));
  return fmt::format("{} run ({} repeat(s)), {}, host {}", ctx_.quick ? "--quick" : "full",
                     ctx_.repeat, date, host);
}

std::vector<std::string> Plotter::Plots(const std::filesystem::path& dir) const {
  std::vector<std::string> made;
  if (std::system("command -v gnuplot >/dev/null 2>&1") != 0) {
    fmt::print(stderr,
               "rewind stress: gnuplot is not installed (the Debian package gnuplot-nox, or "
               "gnuplot): no plots\n");
    return made;
  }
  const std::string out = dir.string();
  // The key below the frame, in a margin of its own (up to seven entries): it never covers
  // a curve, the frame or the axis label. The subtitle (quick or full, date, machine) under every
  // title.
  std::string script = fmt::format(
      "set terminal pngcairo size 1000,760 noenhanced font ',11'\nset grid\n"
      "set key at screen 0.5, screen 0.01 center bottom maxcols 1 box\nset bmargin 11\n"
      "set format y '%.10g'\nset format x '%.10g'\n"
      "subtitle = \"{}\"\n",
      Subtitle());
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

void Plotter::PlotData(const std::filesystem::path& dir, const std::string& name,
                       const std::string& text) {
  std::ofstream(dir / name) << text;
}

std::string Plotter::PlotSpread(const std::string& q, const std::string& c,
                                const std::string& m) const {
  const double v = Get(q, c, m).value_or(0);
  return fmt::format("{} {} {}", v, Get(q, c, m + "_min").value_or(v),
                     Get(q, c, m + "_max").value_or(v));
}

std::string Plotter::PlotQuestion1(const std::filesystem::path& dir,
                                   std::vector<std::string>& made) const {
  const std::string out = dir.string();
  std::string script;
  std::string q1;
  for (int64_t length : stress_cases::kStreamLengths) {
    const std::string n = std::to_string(length);
    if (Get("aggregate_load", n, "p50")) {
      const std::optional<double> p99 = Get("aggregate_load", n, "p99");  // from >= 100 loads
      q1 += fmt::format("{} {} {}\n", n, PlotSpread("aggregate_load", n, "p50"),
                        p99 ? fmt::format("{}", *p99) : std::string("NaN"));
    }
  }
  if (!q1.empty()) {
    PlotData(dir, "q1.dat", q1);
    script = fmt::format(
        "set output '{0}/q1_aggregate_load.png'\nset title 'Q1: how long does an aggregate take to "
        "load as its stream "
        "grows?' . \"\\n\" . subtitle\nset logscale xy\nset xrange [5:20000]\nset yrange "
        "[0.01:5000]\nset xlabel "
        "'events in the stream (log)'\n"
        "set ylabel 'load time, ms (log)'\n"
        "set label 1 'article: 1.2 ms at 50' at 50,1.2 offset 1,0.8\nset label 2 'article: 847 ms "
        "at 10,000' at "
        "10000,847 right offset -1,0.8\n"
        "plot '{0}/q1.dat' u 1:2:3:4 w yerrorlines lw 2 t 'p50 (min-max of runs)', {2}"
        "'-' u 1:2 w p pt 7 ps 2 lc rgb 'red' t 'the article (EventStoreDB)', {1} w l dt 3 lc rgb "
        "'gray40' t "
        "'budget {1} ms'\n50 1.2\n10000 847\ne\nunset label 1\nunset label 2\nunset logscale\nset "
        "xrange [*:*]\nset "
        "yrange [*:*]\n",
        out, ctx_.budget_ms,
        Get("aggregate_load", "10000", "p99")
            ? fmt::format("'' u 1:5 w lp dt 2 t 'p99 (of {} loads)', ",
                          Number(Get("aggregate_load", "10000", "loads").value_or(0)))
            : std::string());
    made.push_back("q1_aggregate_load.png");
  }
  return script;
}

std::string Plotter::PlotQuestion2(const std::filesystem::path& dir,
                                   std::vector<std::string>& made) const {
  const std::string out = dir.string();
  std::string script;
  std::string q2;
  for (int64_t length : stress_cases::kSnapshotLengths) {
    const std::string n = std::to_string(length);
    if (Get("snapshot", n, "full_p50")) {
      q2 += fmt::format("{} {} {} {}\n", n, PlotSpread("snapshot", n, "full_p50"),
                        PlotSpread("snapshot", n, "snapshot_p50"),
                        Get("snapshot", n, "snapshot_fetch_p50").value_or(0));
    }
  }
  if (!q2.empty()) {
    PlotData(dir, "q2.dat", q2);
    const std::optional<double> x = Get("snapshot", "crossover", "events");
    script = fmt::format(
        "set output '{0}/q2_snapshot.png'\nset title 'Q2: from what length does a snapshot beat a "
        "full replay?' . \"\\n\" . subtitle\n"
        "set logscale xy\nset xrange [40:8000]\nset xlabel 'events in the stream (log)'\nset "
        "ylabel 'load time, ms "
        "(p50, log)'\n"
        "{1}"
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
        out,
        x ? fmt::format("set arrow 1 from {0:.0f}, graph 0 to {0:.0f}, graph 1 nohead dt 2 lc rgb "
                        "'black'\nset label 1 'pays from: {0:.0f}' at {0:.0f}, graph "
                        "0.93 left offset 0.5,0\n",
                        *x)
          : std::string(
                "set label 1 'does not pay at any measured length' at graph 0.05, graph 0.93\n"));
    made.push_back("q2_snapshot.png");
  }
  return script;
}

std::string Plotter::PlotQuestion3(const std::filesystem::path& dir,
                                   std::vector<std::string>& made) const {
  const std::string out = dir.string();
  std::string script;
  std::string q3;
  bool any_estimated = false;
  for (int64_t v : Volumes()) {
    const std::string c = std::to_string(v);
    q3 += c;
    const bool estimated = Get("projection_rebuild", c + "/single", "estimated").has_value();
    any_estimated = any_estimated || estimated;
    for (const char* m : {"single", "batched", "pipeline", "filtered_server", "filtered_client"}) {
      const bool drawn = !(estimated && std::string(m) == "single") &&
                         Get("projection_rebuild", c + "/" + m, "seconds");
      q3 += " " + (drawn ? PlotSpread("projection_rebuild", c + "/" + m, "seconds")
                         : std::string("NaN NaN NaN"));
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
        "recovery window)?' . \"\\n\" . subtitle\nset logscale xy\nset xrange [{1}:{2}]\nset "
        "yrange [*:*]\nset xlabel "
        "'events rebuilt (log)'\n"
        "set ylabel 'seconds (log)'\n"
        "set label 1 'article: 8.7 s single' at 100000,8.7 right offset -1,0 tc rgb 'red'\n"
        "set label 2 'article: 3.1 s batched' at 100000,3.1 right offset -1,0 tc rgb 'red'\n"
        "plot '{0}/q3.dat' u 1:2:3:4 w yerrorlines lw 2 t 'one save per event', '' u 1:5:6:7 w "
        "yerrorlines lw 2 t "
        "'batches of 50', '' u 1:8:9:10 w yerrorlines lw 2 t 'rewind pipeline', '' u 1:11:12:13 w "
        "yerrorlines t 'one "
        "type (20 %), server filter', '' u 1:14:15:16 w yerrorlines t 'one type (20 %), client "
        "filter', {3}'-' u 1:2 w "
        "p pt 7 ps 2 lc rgb 'red' t 'the article, 100,000 events'\n100000 8.7\n100000 3.1\ne\n"
        "unset label 1\nunset label 2\nunset logscale\nset xrange [*:*]\n",
        out, static_cast<double>(Volumes().front()) / 2,
        static_cast<double>(std::max<int64_t>(Volumes().back(), 100000)) * 2,
        any_estimated ? "'' u 1:17 w lp dt 2 lc 1 t 'one save per event, estimated', " : "");
    made.push_back("q3_projection_rebuild.png");
  }
  return script;
}

std::string Plotter::PlotQuestion4(const std::filesystem::path& dir,
                                   std::vector<std::string>& made) const {
  const std::string out = dir.string();
  std::string script;
  std::string q4;
  for (int w : Writers("distinct")) {
    q4 += fmt::format(
        "{} {} {} {}\n", w,
        PlotSpread("concurrent_append", fmt::format("distinct_{}", w), "events_per_s"),
        Get("concurrent_append", fmt::format("one_stream_{}", w), "events_per_s")
            ? PlotSpread("concurrent_append", fmt::format("one_stream_{}", w), "events_per_s")
            : "NaN NaN NaN",
        Get("concurrent_append", fmt::format("one_stream_reload_{}", w), "events_per_s")
            ? PlotSpread("concurrent_append", fmt::format("one_stream_reload_{}", w),
                         "events_per_s")
            : "NaN NaN NaN");
  }
  if (!q4.empty()) {
    PlotData(dir, "q4.dat", q4);
    script = fmt::format(
        "set output '{0}/q4_concurrent_append.png'\nset title 'Q4: how many events per second can "
        "concurrent writers "
        "append?' . \"\\n\" . subtitle\nset logscale xy\nset xrange [0.8:130]\nset yrange "
        "[10:100000]\nset xlabel "
        "'writers (log)'\n"
        "set ylabel 'events appended per second (log)'\n"
        "set label 1 'article: ceiling about 45,000' at 1,45000 left offset 0.5,0.7 tc rgb 'red'\n"
        "set label 2 'article: one stream, 10 writers, about 1,200' at 10,1200 left offset "
        "1,0.7 tc rgb 'red'\n"
        "plot '{0}/q4.dat' u 1:2:3:4 w yerrorlines lw 2 t 'distinct streams ({1} events per "
        "command)', '' u 1:5:6:7 w yerrorlines lw 2 t 'one stream ({1} events per command; on a "
        "conflict, the newer events read)', '' u 1:8:9:10 w yerrorlines lw 2 dt 4 t 'one stream, "
        "no snapshot: the whole stream reloaded on each attempt', 45000 w l dt 2 lw 2 lc rgb "
        "'red' t 'the article: ceiling, distinct streams', '-' u 1:2 w p pt 7 ps 2 lc rgb 'red' "
        "t 'the article: one stream, 10 writers'\n10 1200\ne\nunset label 1\nunset label "
        "2\nunset logscale\n",
        out,
        Number(Get("concurrent_append", fmt::format("distinct_{}", Writers("distinct").front()),
                   "events_per_command")
                   .value_or(11)));
    made.push_back("q4_concurrent_append.png");
  }
  return script;
}

}  // namespace

std::vector<std::string> Plots(const Figures& f, const std::filesystem::path& dir) {
  return Plotter(f).Plots(dir);
}

}  // namespace rw
