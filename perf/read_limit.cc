// read_limit: how fast the client library can stream the event table, touching every
// byte. The ceiling for any replay that reads the same columns.
//
//   read_limit [--mode stream|pages|streamed-pages|ranges] [--page N] [--connections N]
//              [--select SQL] [connection options]
//
// stream: one `SELECT id, eventClass, payload` read with mysql_use_result.
// pages:  keyset pages (`WHERE id > ? ORDER BY id LIMIT N`), each mysql_store_result'ed,
//         as a naive client would.
// streamed-pages: the same keyset pages, each read with mysql_use_result (rewind's reader).
// ranges: pages as id ranges (`WHERE id > a AND id <= a + N ORDER BY id`), streamed, read by
//         --connections connections at once, page k by connection k mod N: what reading
//         on several connections could give (page k+1 need not wait for page k's last id).
// --select replaces `SELECT id, eventClass, payload FROM stored_events` (the first column
// must be the id), to see what a select list costs the server, e.g. rewind's class filter.
// Prints: rows, bytes, seconds, rows/s.
#include <fmt/core.h>
#include <mysql.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "config/options.h"

int main(int argc, char** argv) {
  using namespace rw;
  std::string mode = "stream";
  long page = 30000;
  std::string select = "SELECT id, eventClass, payload FROM stored_events";
  int connections = 1;
  std::vector<std::string> rest = {"replay"};
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--mode" && i + 1 < argc) mode = argv[++i];
    else if (a == "--page" && i + 1 < argc) page = std::atol(argv[++i]);
    else if (a == "--select" && i + 1 < argc) select = argv[++i];
    else if (a == "--connections" && i + 1 < argc) connections = std::atoi(argv[++i]);
    else rest.push_back(a);
  }
  auto cl = ParseCommandLine(rest, SystemEnvironment());
  if (!cl.ok()) {
    fmt::print(stderr, "read_limit: {}\n", cl.status().message());
    return 2;
  }
  auto conn = Connection::Open(cl->options.connection);
  if (!conn.ok()) {
    fmt::print(stderr, "read_limit: {}\n", conn.status().message());
    return 1;
  }
  MYSQL* m = (*conn)->raw();
  const auto start = std::chrono::steady_clock::now();
  uint64_t rows = 0, bytes = 0, checksum = 0;
  unsigned columns = 0;
  auto touch = [&](MYSQL_ROW row, unsigned long* len) {
    ++rows;
    for (unsigned c = 0; c < columns; ++c) {
      if (row[c] == nullptr) continue;
      bytes += len[c];
      for (unsigned long i = 0; i < len[c]; ++i) checksum += static_cast<unsigned char>(row[c][i]);
    }
  };
  if (mode == "ranges") {
    auto max = (*conn)->QueryValue("SELECT MAX(id) FROM stored_events");
    const long long head = max.ok() && *max ? std::atoll((*max)->c_str()) : 0;
    std::vector<std::thread> threads;
    std::vector<uint64_t> t_rows(connections), t_bytes(connections), t_sum(connections);
    for (int t = 0; t < connections; ++t) {
      threads.emplace_back([&, t] {
        auto own = Connection::Open(cl->options.connection);
        if (!own.ok()) return;
        MYSQL* tm = (*own)->raw();
        for (long long a = static_cast<long long>(t) * page; a < head; a += static_cast<long long>(connections) * page) {
          const std::string sql = fmt::format("{} WHERE id > {} AND id <= {} ORDER BY id", select, a, a + page);
          if (mysql_real_query(tm, sql.data(), sql.size()) != 0) return;
          MYSQL_RES* res = mysql_use_result(tm);
          const unsigned n = mysql_num_fields(res);
          while (MYSQL_ROW row = mysql_fetch_row(res)) {
            unsigned long* len = mysql_fetch_lengths(res);
            ++t_rows[t];
            for (unsigned c = 0; c < n; ++c) {
              if (row[c] == nullptr) continue;
              t_bytes[t] += len[c];
              for (unsigned long i = 0; i < len[c]; ++i) t_sum[t] += static_cast<unsigned char>(row[c][i]);
            }
          }
          mysql_free_result(res);
        }
      });
    }
    for (auto& th : threads) th.join();
    for (int t = 0; t < connections; ++t) {
      rows += t_rows[t];
      bytes += t_bytes[t];
      checksum += t_sum[t];
    }
  } else if (mode == "stream") {
    if (mysql_real_query(m, select.data(), select.size()) != 0) {
      fmt::print(stderr, "read_limit: {}\n", mysql_error(m));
      return 1;
    }
    MYSQL_RES* res = mysql_use_result(m);
    columns = mysql_num_fields(res);
    while (MYSQL_ROW row = mysql_fetch_row(res)) touch(row, mysql_fetch_lengths(res));
    mysql_free_result(res);
  } else {
    std::string last = "0";
    for (;;) {
      const std::string sql = fmt::format("{} WHERE id > {} ORDER BY id LIMIT {}", select, last, page);
      if (mysql_real_query(m, sql.data(), sql.size()) != 0) {
        fmt::print(stderr, "read_limit: {}\n", mysql_error(m));
        return 1;
      }
      MYSQL_RES* res = mode == "pages" ? mysql_store_result(m) : mysql_use_result(m);
      columns = mysql_num_fields(res);
      const uint64_t before = rows;
      while (MYSQL_ROW row = mysql_fetch_row(res)) {
        touch(row, mysql_fetch_lengths(res));
        last = row[0];
      }
      mysql_free_result(res);
      if (rows == before) break;
    }
  }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  fmt::print("rows {} bytes {} seconds {:.3f} rows_per_second {:.0f} checksum {}\n", rows, bytes, s,
             rows / s, checksum % 1000);
  return 0;
}
