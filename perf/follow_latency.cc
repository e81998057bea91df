// Issue 54, item 8: the latency from an application's commit to the read model's commit, and
// the CPU per followed event, of `rewind replay --follow` by one follow source, at one append
// rate. perf/follow_latency (the script) runs it for both sources at 1,000 and 10,000
// appends per second on the pair's primary (binary log in row format) and makes the table.
//
//   follow_latency REWIND_BINARY SOURCE RATE SECONDS SERVER_PID [replay's connection options]
//
// A fresh database rewind_bench_follow with 10,000 events; rewind follows a count per account
// (a declared read model) by SOURCE (binlog | poll, --poll 0.2 for polling, a fifth of the
// default). One writer connection appends RATE events a second for SECONDS, in transactions of
// RATE / 1,000 events (1,000 commits a second), each commit's time taken when it returns. A
// watcher polls the read model's checkpoint (committed with its rows) every millisecond: an
// event's latency is from its commit to the first look that shows the checkpoint at or past
// it (one writer: ids commit in id order, no hole). CPU from /proc: rewind's, and the
// server's (SERVER_PID) over the same window. Prints one JSON line.
#include <fmt/core.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>
#include <vector>

#include "perf/tool.h"

extern char** environ;

namespace rw {
namespace {

using Clock = std::chrono::steady_clock;

double CpuSeconds(pid_t pid) {
  std::ifstream in(fmt::format("/proc/{}/stat", pid));
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::istringstream rest(stat.substr(stat.rfind(')') + 2));
  std::string field;
  double ticks = 0;
  for (int i = 3; i <= 15 && rest >> field; ++i) {
    if (i == 14 || i == 15) ticks += std::stod(field);
  }
  return ticks / static_cast<double>(sysconf(_SC_CLK_TCK));
}

int64_t Value(Connection& c, const std::string& sql) {
  Result<std::optional<std::string>> v = c.QueryValue(sql);
  return v.ok() && *v ? std::stoll(**v) : -1;
}

struct Commit {
  int64_t last_id;
  Clock::time_point at;
};

int Run(int argc, char** argv) {
  if (argc < 6) {
    fmt::print(stderr, "usage: follow_latency REWIND_BINARY SOURCE RATE SECONDS SERVER_PID [replay's options]\n");
    return 2;
  }
  const std::string binary = argv[1], source = argv[2];
  const int rate = std::stoi(argv[3]);
  const double seconds = std::stod(argv[4]);
  const pid_t server = static_cast<pid_t>(std::stoi(argv[5]));
  std::vector<std::string> rest = {"replay"};
  for (int i = 6; i < argc; ++i) rest.emplace_back(argv[i]);
  int code = 0;
  std::optional<PerfTool> tool = OpenPerfTool("follow_latency", rest, code);
  if (!tool) return code;
  Connection& admin = *tool->connection;
  const std::string db = "rewind_bench_follow";
  for (const std::string& sql : {"DROP DATABASE IF EXISTS " + db, "CREATE DATABASE " + db, "USE " + db,
                                 std::string("CREATE TABLE stored_events (id BIGINT UNSIGNED AUTO_INCREMENT PRIMARY KEY, "
                                             "eventClass VARCHAR(255) NOT NULL, payload JSON NOT NULL, createdAt "
                                             "DATETIME(6) NOT NULL)")}) {
    if (Status s = admin.Execute(sql); !s.ok()) {
      fmt::print(stderr, "follow_latency: {}\n", s.message());
      return 1;
    }
  }
  auto insert = [](int n, int64_t from) {
    std::string sql = "INSERT INTO stored_events (eventClass, payload, createdAt) VALUES ";
    for (int i = 0; i < n; ++i) {
      sql += fmt::format("{}('Deposit', '{{\"account\": \"a{}\", \"amount\": 1}}', NOW(6))", i ? "," : "",
                         (from + i) % 1000);
    }
    return sql;
  };
  for (int i = 0; i < 10; ++i) (void)admin.Execute(insert(1000, i * 1000));
  const std::string models = "/tmp/rewind_follow_latency.toml";
  std::ofstream(models) << "[[read_model]]\nname = \"deposits\"\nevents = ['Deposit']\n"
                           "key = [{ column = \"account\", path = \"account\" }]\n"
                           "values = [{ column = \"n\", op = \"count\" }, { column = \"total\", op = \"sum\", "
                           "path = \"amount\", type = \"bigint\" }]\n";
  std::vector<std::string> args = {binary, "replay", "deposits", "-D", db, "--models", models, "--follow",
                                   "--follow-source", source, "--poll", "0.2", "--progress", "none"};
  std::vector<char*> argv_c;
  for (auto& a : args) argv_c.push_back(a.data());
  argv_c.push_back(nullptr);
  pid_t rewind = 0;
  if (posix_spawn(&rewind, binary.c_str(), nullptr, nullptr, argv_c.data(), environ) != 0) return 1;
  for (int i = 0; i < 12000 && Value(admin, "SELECT COUNT(*) FROM rewind_checkpoints WHERE status = 'following'") != 1;
       ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  std::vector<Commit> commits;
  std::mutex mu;
  std::atomic<bool> written{false};
  const double rewind_cpu0 = CpuSeconds(rewind), server_cpu0 = CpuSeconds(server);
  const auto t0 = Clock::now();
  std::thread writer([&] {
    auto c = Connection::Open(tool->command_line.options.connection);
    if (!c.ok() || !(*c)->Execute("USE " + db).ok()) return;
    const int per = std::max(1, rate / 1000);
    const auto step = std::chrono::duration<double>(static_cast<double>(per) / rate);
    auto due = Clock::now();
    int64_t n = 0;
    while (Clock::now() - t0 < std::chrono::duration<double>(seconds)) {
      if (!(*c)->Execute(insert(per, n)).ok()) break;
      const auto at = Clock::now();
      const int64_t last = Value(**c, "SELECT LAST_INSERT_ID()") + per - 1;
      {
        std::lock_guard<std::mutex> lock(mu);
        commits.push_back({last, at});
      }
      n += per;
      due += std::chrono::duration_cast<Clock::duration>(step);
      std::this_thread::sleep_until(due);
    }
    written = true;
  });
  std::vector<double> latency_ms;
  size_t matched = 0;
  int64_t seen = 0;
  auto watcher = Connection::Open(tool->command_line.options.connection);
  if (!watcher.ok() || !(*watcher)->Execute("USE " + db).ok()) return 1;
  for (;;) {
    const int64_t at = Value(**watcher, "SELECT last_event_id FROM rewind_checkpoints WHERE projector = 'deposits'");
    const auto now = Clock::now();
    std::lock_guard<std::mutex> lock(mu);
    if (at > seen) {
      seen = at;
      for (; matched < commits.size() && commits[matched].last_id <= at; ++matched) {
        latency_ms.push_back(std::chrono::duration<double, std::milli>(now - commits[matched].at).count());
      }
    }
    if (written && matched == commits.size()) break;
    if (Clock::now() - t0 > std::chrono::duration<double>(seconds + 120)) break;
    mu.unlock();
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    mu.lock();
  }
  const double wall = std::chrono::duration<double>(Clock::now() - t0).count();
  const double rewind_cpu = CpuSeconds(rewind) - rewind_cpu0, server_cpu = CpuSeconds(server) - server_cpu0;
  writer.join();
  kill(rewind, SIGTERM);
  int status = 0;
  waitpid(rewind, &status, 0);
  std::sort(latency_ms.begin(), latency_ms.end());
  auto pct = [&](double p) {
    return latency_ms.empty() ? -1.0 : latency_ms[std::min(latency_ms.size() - 1, static_cast<size_t>(p * latency_ms.size()))];
  };
  const int64_t events = static_cast<int64_t>(commits.size()) * std::max(1, rate / 1000);
  fmt::print(
      "{{\"source\": \"{}\", \"rate\": {}, \"events\": {}, \"appended_per_s\": {:.0f}, \"commits\": {}, "
      "\"applied\": {}, \"p50_ms\": {:.1f}, \"p99_ms\": {:.1f}, \"max_ms\": {:.1f}, \"rewind_cpu_us_per_event\": "
      "{:.1f}, \"server_cpu_s\": {:.2f}, \"server_cpu_us_per_event\": {:.1f}, \"wall_s\": {:.1f}}}\n",
      source, rate, events, events / seconds, commits.size(), matched, pct(0.5), pct(0.99),
      latency_ms.empty() ? -1.0 : latency_ms.back(), 1e6 * rewind_cpu / std::max<int64_t>(1, events), server_cpu,
      1e6 * server_cpu / std::max<int64_t>(1, events), wall);
  return matched == commits.size() ? 0 : 1;
}

}  // namespace
}  // namespace rw

int main(int argc, char** argv) { return rw::Run(argc, argv); }
