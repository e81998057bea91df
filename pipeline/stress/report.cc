#include "pipeline/stress/report.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <set>

#include "pipeline/stress/report_parts.h"

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

Figures::Figures(const StressResults& results, const StressContext& ctx)
    : results_(results), ctx_(ctx), rows_(results.rows()) {}

std::optional<double> Figures::Get(const std::string& q, const std::string& c,
                                   const std::string& m) const {
  return results_.Get(q, c, m);
}

std::string Figures::Spread(const std::string& q, const std::string& c,
                            const std::string& m) const {
  const std::optional<double> v = Get(q, c, m), lo = Get(q, c, m + "_min"),
                              hi = Get(q, c, m + "_max");
  if (!v) return "?";
  if (!lo || !hi || *lo == *hi) return Number(*v);
  return fmt::format("{} [{}-{}]", Number(*v), Number(*lo), Number(*hi));
}

std::vector<int64_t> Figures::Volumes() const {
  std::set<int64_t> v;
  for (const StressRow& r : rows_) {
    if (r.question == "projection_rebuild")
      v.insert(std::stoll(r.case_name.substr(0, r.case_name.find('/'))));
  }
  return {v.begin(), v.end()};
}

std::vector<int> Figures::Writers(const std::string& kind) const {
  std::set<int> w;
  for (const StressRow& r : rows_) {
    // "<kind>_<writers>" exactly: one_stream_10 is not one_stream_reload_10's kind.
    if (r.question == "concurrent_append" && r.metric == "writers" &&
        r.case_name.rfind(kind + "_", 0) == 0 &&
        r.case_name.find_first_not_of("0123456789", kind.size() + 1) == std::string::npos) {
      w.insert(static_cast<int>(r.value));
    }
  }
  return {w.begin(), w.end()};
}

std::optional<int> Figures::BestWriters(const std::string& kind) const {
  std::optional<int> best;
  double rate = -1;
  for (int w : Writers(kind)) {
    const double r =
        Get("concurrent_append", fmt::format("{}_{}", kind, w), "events_per_s").value_or(0);
    if (r > rate) rate = r, best = w;
  }
  return best;
}

std::optional<int> Figures::OneStreamWriters() const {
  const std::vector<int> w = Writers("one_stream");
  if (w.empty()) return std::nullopt;
  if (std::find(w.begin(), w.end(), 10) != w.end()) return 10;
  return w.back();
}

std::string Figures::CommitWords() const {
  const double start = Get("commit", "autocommit_insert", "p50").value_or(0);
  if (auto end = Get("commit", "autocommit_insert_end", "p50")) {
    return fmt::format("{} to {} ms (the commit latency measured first and at the end)",
                       Number(start), Number(*end));
  }
  return fmt::format("{} ms (the commit latency measured first)", Number(start));
}

namespace {

class Report : public Figures {
 public:
  Report(std::string out_dir, const StressResults& results, const StressContext& ctx)
      : Figures(results, ctx), out_dir_(std::move(out_dir)) {}

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
    // `--only table` answers none of the four questions: its report is the user's table's,
    // without the five-line summary or the run's quick/full label.
    const bool only_yours = !ctx_.your.table.empty() && !AnyQuestion();
    md += only_yours ? std::string("# rewind stress: your table\n\n")
                     : fmt::format("# rewind stress ({})\n\n", ctx_.quick ? "--quick" : "full run");
    const std::vector<std::string> summary =
        only_yours ? std::vector<std::string>{} : SummaryLines(*this);
    if (!summary.empty()) md += "## Summary\n\n";
    for (const std::string& line : summary) md += line + "\n";
    const std::string yours = YourLine(*this);
    if (!yours.empty()) md += (summary.empty() ? "" : "\n") + yours + "\n";
    md += RunFacts(*this, date);
    md += Sections(*this, status);
    const std::vector<std::string> pngs = Plots(*this, dir);
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
  // Whether any of the four questions has a figure in this run.
  bool AnyQuestion() const {
    for (const StressRow& r : rows_) {
      if (r.question != "commit" && r.question != "your_table") return true;
    }
    return false;
  }

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

  // The summary printed to `out`: the five lines, the user's table, what was checked and
  // where the report is (`report`, with `plots` PNGs beside it).
  void PrintSummary(std::FILE* out, const std::vector<std::string>& summary,
                    const std::string& yours, const std::string& report, size_t plots) const {
    if (!summary.empty())
      fmt::print(out, "rewind stress: this server beside the article \"{}\"\n", kArticle);
    for (const std::string& line : summary) fmt::print(out, "{}\n", line);
    if (!yours.empty()) fmt::print(out, "{}\n", yours);
    // What was checked, as far as this run went (--only).
    std::string checked;
    const auto also = [&](const char* what) {
      checked += (checked.empty() ? "" : "; ") + std::string(what);
    };
    if (!Writers("distinct").empty()) also("no acknowledged append lost or duplicated");
    if (!Volumes().empty() || !ctx_.your.table.empty()) also("the rebuilds agree");
    if (!ctx_.your.table.empty()) also("your table unchanged");
    if (checked.empty()) checked = "nothing to check in this run";
    fmt::print(out, "check: {}\n", ctx_.consistent ? checked : "PROBLEMS (see report.md)");
    fmt::print(out, "report: {} (results.csv, {} plot(s))\n", report, plots);
  }

  const std::string out_dir_;
};

}  // namespace

bool WriteStressReport(const std::string& out_dir, const StressResults& results,
                       const StressContext& ctx, const Status& status, std::FILE* out) {
  return Report(out_dir, results, ctx).Write(out, status);
}

}  // namespace rw
