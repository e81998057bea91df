// The report of `rewind stress`: its measurements (results.csv's rows), and report.md: a
// five-line summary (the four answers for this server, the article's figure beside each, and
// the ratio), the decisions they support (the snapshot advice for --budget-ms, the write cost
// of each snapshot frequency, the rebuild as a recovery window), the article's figures beside
// ours with a reason for each that is slower, every measurement, and one PNG per question
// (gnuplot).
//
// Thread safety: StressResults is filled by one thread; the report reads it after.
#pragma once

#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"

namespace rw {

struct StressRow {
  std::string question, case_name, metric;
  double value;
  std::string unit;
};

class StressResults {
 public:
  void Add(const std::string& question, const std::string& case_name, const std::string& metric,
           double value, const std::string& unit);
  std::optional<double> Get(const std::string& question, const std::string& case_name,
                            const std::string& metric) const;
  const std::vector<StressRow>& rows() const { return rows_; }

 private:
  std::vector<StressRow> rows_;
};

// With --events-table: what the report says of the user's table besides its figures
// (results rows of question "your_table").
struct YourTableContext {
  std::string table;                                  // "database.table"; empty: not measured
  std::string rows_how;                               // how its row count was had
  std::string min_id, max_id, last_id;                // its ids, and the sample's last
  std::string model;                                  // the built-in read model, in words
  std::vector<std::string> your_models;               // --models: the user's read models
  std::vector<std::pair<std::string, double>> types;  // the sample's types, most first
  bool checked = false;                               // every check of the section held
};

// What the report says besides the measurements.
struct StressContext {
  bool quick = false;
  int repeat = 1;                     // runs of each point
  int budget_ms = 50;                 // the load budget of the snapshot advice
  std::string server_settings;        // version and the settings that decide the figures
  std::string durability;             // how appends are made durable (question 4)
  std::string crossover_note;         // where the crossover was found (question 2)
  std::vector<std::string> problems;  // failed checks, in words
  bool consistent = true;             // no lost or duplicated append; the rebuilds agree
  YourTableContext your;              // --events-table
};

// A figure as a person reads it: whole above 100 (with thousands separators), three
// significant digits below.
std::string ReadableNumber(double v);

// Writes report.md, results.csv and the plots into `out_dir` (created) and prints ours beside
// the published figures to `out`. False when the files could not be written.
// The article the report answers, by its title.
extern const char* const kArticle;

bool WriteStressReport(const std::string& out_dir, const StressResults& results,
                       const StressContext& ctx, const Status& status, std::FILE* out);

}  // namespace rw
