#include <fmt/core.h>

#include <algorithm>

#include "pipeline/stress/report_parts.h"

namespace rw {
namespace {

class YourTableWords : public Figures {
 public:
  explicit YourTableWords(const Figures& f) : Figures(f) {}

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

 private:
  // Seconds, and minutes or hours when long.
  static std::string Seconds(double s) {
    if (s >= 7200) return fmt::format("{} s ({:.1f} h)", Number(s), s / 3600);
    if (s >= 120) return fmt::format("{} s ({:.0f} min)", Number(s), s / 60);
    return Number(s) + " s";
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
            ? fmt::format(
                  "rewind's estimate is its cost per run ({} s: connections, tables, the "
                  "swap) plus its time per event ({} µs) times the rows, both from the "
                  "median runs on the whole sample and on its first quarter (every estimate here "
                  "is from medians).",
                  Number(v("rewind", "fixed_seconds")),
                  Number(v("rewind", "seconds_per_event") * 1e6))
            : fmt::format("rewind's runs on the whole sample and on its first quarter did not "
                          "tell its time per event apart from the noise (a larger --sample "
                          "would): its estimate is the whole sample's time per event ({} µs, "
                          "its cost per run included) times the rows, an upper bound.",
                          Number(v("rewind", "seconds_per_event") * 1e6)));
    return md;
  }
};

}  // namespace

std::string YourLine(const Figures& f) { return YourTableWords(f).YourLine(); }
std::string YourSection(const Figures& f) { return YourTableWords(f).YourSection(); }

}  // namespace rw
