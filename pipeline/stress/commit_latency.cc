#include <fmt/core.h>

#include "pipeline/stress/questions.h"
#include "stages/db/table_admin.h"

namespace rw {

// Question 0, measured first because it decides every write figure: how long this
// server takes to commit (flush) one small transaction, and one round trip without a write.
Status CommitLatency(Harness& h, const std::string& when) {
  const std::string table = "es_commit_probe";
  if (Status s = h.Recreate(
          table,
          fmt::format("CREATE TABLE {} (id BIGINT AUTO_INCREMENT PRIMARY KEY, v INT NOT NULL) "
                      "ENGINE=InnoDB",
                      QuoteIdentifier(table)));
      !s.ok()) {
    return s;
  }
  const int n = h.quick() ? 200 : 1000;
  std::vector<double> commit_p50, commit_p99, commit_mean, trip_p50;
  for (int r = 0; r < h.repeat() && !h.stopped(); ++r) {
    std::vector<double> commits, trips;
    for (int i = 0; i < n && !h.stopped(); ++i) {
      const auto t0 = Clock::now();
      if (Status s = h.db().Execute(
              fmt::format("INSERT INTO {} (v) VALUES ({})", QuoteIdentifier(table), i));
          !s.ok()) {
        return s;
      }
      const auto t1 = Clock::now();
      if (Result<std::optional<std::string>> v = h.db().QueryValue("SELECT 1"); !v.ok())
        return v.status();
      commits.push_back(Ms(t0, t1));
      trips.push_back(Ms(t1, Clock::now()));
    }
    commit_p50.push_back(Percentile(commits, 50));
    commit_p99.push_back(Percentile(commits, 99));
    // The mean besides the percentiles: a run of n commits takes n times the mean, and a
    // disk whose flushes are sometimes slow has a mean far above its p50.
    double sum = 0;
    for (double c : commits) sum += c;
    commit_mean.push_back(commits.empty() ? 0 : sum / static_cast<double>(commits.size()));
    trip_p50.push_back(Percentile(trips, 50));
  }
  h.AddSpread("commit", "autocommit_insert" + when, "p50", commit_p50, "ms");
  h.AddSpread("commit", "autocommit_insert" + when, "p99", commit_p99, "ms");
  h.AddSpread("commit", "autocommit_insert" + when, "mean", commit_mean, "ms");
  h.AddSpread("commit", "round_trip" + when, "p50", trip_p50, "ms");
  h.Progress(fmt::format(
      "commit latency{}: one autocommitted insert {:.3f} ms at p50 (p99 {:.3f}, mean {:.3f}); a "
      "round trip without a write {:.3f} ms",
      when.empty() ? "" : " at the end", Median(commit_p50), Median(commit_p99),
      Median(commit_mean), Median(trip_p50)));
  return Status::Ok();
}

}  // namespace rw
