// The parts of the report of `rewind stress` (report.h is its face): the figures as the
// report reads them (a measurement, its spread, the volumes and writer counts measured),
// and the cuts of it: the markdown (summary, facts, sections, the article beside ours),
// the user's table's section, the advice (the decisions the figures support) and the plots
// (gnuplot).
//
// Thread safety: reads the results and context after the run; one thread.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "pipeline/stress/report.h"

namespace rw {

// A figure as the report prints it (ReadableNumber).
inline std::string Number(double v) { return ReadableNumber(v); }

// The measurements and the context, as the report reads them.
class Figures {
 public:
  Figures(const StressResults& results, const StressContext& ctx);

  std::optional<double> Get(const std::string& q, const std::string& c, const std::string& m) const;
  // "median [min-max]" of a repeated point (the median alone when it ran once).
  std::string Spread(const std::string& q, const std::string& c, const std::string& m) const;
  // The measured volumes of question 3, in order.
  std::vector<int64_t> Volumes() const;
  // Writer counts measured in question 4 for `kind` (distinct, one_stream).
  std::vector<int> Writers(const std::string& kind) const;
  // The writer count with the most events/s of `kind`.
  std::optional<int> BestWriters(const std::string& kind) const;
  // The one-stream case the summary quotes: 10 writers contending (or the most measured).
  std::optional<int> OneStreamWriters() const;
  // The commit latency of this run, in words: "X ms (measured first; Y at the end)".
  std::string CommitWords() const;

 protected:
  const StressResults& results_;
  const StressContext& ctx_;
  const std::vector<StressRow>& rows_;
};

// The markdown: the five summary lines (the four answers, the article's figure beside each,
// and the ratio); what the figures were measured on (`date`, the machine, the server, its
// commit latency); and the body after them (how the run ended, its problems, the user's
// table, the decisions, the article beside ours, every measurement).
std::vector<std::string> SummaryLines(const Figures& f);
std::string RunFacts(const Figures& f, const char* date);
std::string Sections(const Figures& f, const Status& status);

// The user's table (--events-table): in one line after the summary ("" when not measured),
// and its section (its size, its payloads, the sample, the rebuild measured on the sample by
// each method, the full table's time estimated, and the checks).
std::string YourLine(const Figures& f);
std::string YourSection(const Figures& f);

// The advice: the decisions the figures support, one paragraph each ("" when nothing was
// measured).
std::string Decisions(const Figures& f);

// The plots: one PNG per question with gnuplot (Debian package gnuplot-nox), written into
// `dir`. Returns the file names (none when gnuplot is missing or failed).
std::vector<std::string> Plots(const Figures& f, const std::filesystem::path& dir);

}  // namespace rw
