// bulk_bench (issue 53, part 6): one statement per round trip against bulk execution (array
// binding), the way rewind runs a read model of handlers. The same N bound executions of
// the blog's per-day statement (`INSERT ... VALUES (STR_TO_DATE(LEFT(?, 10), ...), 1) ON
// DUPLICATE KEY UPDATE count = count + 1`, dates spread over two years) into a fresh table,
// in one transaction: once one execution per round trip, once in bulk executions of B rows,
// alternating, R rounds each. Prints wall seconds and this process's CPU per execution, and
// checks both tables hold the same rows.
//
//   bulk_bench [--rows N] [--bulk B] [--rounds R] [connection options]
#include <fmt/core.h>

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <string>
#include <vector>

#include "perf/tool.h"

namespace {

double ProcessCpuSeconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace rw;
  size_t rows = 200'000, bulk = 20'000, rounds = 3;
  std::vector<std::string> rest = {"replay"};
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--rows" && i + 1 < argc) rows = std::strtoull(argv[++i], nullptr, 10);
    else if (a == "--bulk" && i + 1 < argc) bulk = std::max<size_t>(1, std::strtoull(argv[++i], nullptr, 10));
    else if (a == "--rounds" && i + 1 < argc) rounds = std::strtoull(argv[++i], nullptr, 10);
    else rest.push_back(a);
  }
  int exit_code = 0;
  std::optional<PerfTool> tool = OpenPerfTool("bulk_bench", rest, exit_code);
  if (!tool) return exit_code;
  Connection& c = *tool->connection;
  BoundStatements b;
  b.width = 1;
  b.types = {BoundStatements::Type::kText};
  for (size_t r = 0; r < rows; ++r) {
    const int day = static_cast<int>((r * 7919) % 730);
    const std::string v = fmt::format("20{:02d}-{:02d}-{:02d}T10:00:00+00:00", 23 + day / 365, 1 + day % 365 / 31,
                                      1 + day % 28);
    b.values.push_back({BoundStatements::Type::kText, static_cast<uint32_t>(b.bytes.size()), static_cast<uint32_t>(v.size())});
    b.bytes += v;
    b.ids.push_back(r + 1);
  }
  const char* kSql = "INSERT INTO {} (date, count) VALUES (STR_TO_DATE(LEFT(?, 10), '%Y-%m-%d'), 1) "
                     "ON DUPLICATE KEY UPDATE count = count + 1";
  fmt::print("{:<22} {:>6} {:>10} {:>12} {:>14}\n", "method", "round", "wall s", "CPU s", "CPU us/stmt");
  std::vector<double> wall[2], cpu[2];
  for (size_t round = 0; round < rounds; ++round) {
    for (int method = 0; method < 2; ++method) {
      const std::string table = method == 0 ? "bulk_bench_single" : "bulk_bench_bulk";
      if (!c.Execute("DROP TABLE IF EXISTS " + table).ok() ||
          !c.Execute("CREATE TABLE " + table + " (date DATE NOT NULL PRIMARY KEY, count BIGINT UNSIGNED NOT NULL)").ok()) {
        fmt::print(stderr, "bulk_bench: cannot create {}\n", table);
        return 1;
      }
      const std::string sql = fmt::format(fmt::runtime(kSql), table);
      const size_t step = method == 0 ? 1 : bulk;
      const auto start = std::chrono::steady_clock::now();
      const double cpu_start = ProcessCpuSeconds();
      Status s = c.Execute("START TRANSACTION");
      unsigned error = 0;
      for (size_t first = 0; s.ok() && first < rows; first += step) {
        s = c.ExecuteBound(sql, b, first, std::min(step, rows - first), &error);
      }
      if (s.ok()) s = c.Execute("COMMIT");
      if (!s.ok()) {
        fmt::print(stderr, "bulk_bench: {}\n", s.message());
        return 1;
      }
      const double w = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      const double u = ProcessCpuSeconds() - cpu_start;
      wall[method].push_back(w);
      cpu[method].push_back(u);
      fmt::print("{:<22} {:>6} {:>10.3f} {:>12.3f} {:>14.3f}\n",
                 method == 0 ? "one per round trip" : fmt::format("bulk of {}", bulk), round + 1, w, u,
                 u / static_cast<double>(rows) * 1e6);
    }
  }
  auto same = c.QueryValue(
      "SELECT COUNT(*) FROM bulk_bench_single s JOIN bulk_bench_bulk b ON b.date = s.date AND b.count = s.count");
  auto all = c.QueryValue("SELECT COUNT(*) FROM bulk_bench_single");
  const bool identical = same.ok() && all.ok() && *same && *all && **same == **all;
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  fmt::print("medians: wall {:.3f} s vs {:.3f} s ({:.1f}x), rewind-side CPU {:.3f} s vs {:.3f} s; rows {}\n",
             median(wall[0]), median(wall[1]), median(wall[0]) / median(wall[1]), median(cpu[0]), median(cpu[1]),
             identical ? "identical" : "DIFFER");
  (void)c.Execute("DROP TABLE IF EXISTS bulk_bench_single");
  (void)c.Execute("DROP TABLE IF EXISTS bulk_bench_bulk");
  return identical ? 0 : 1;
}
