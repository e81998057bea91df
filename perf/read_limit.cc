// read_limit: how fast the client library can stream the event table, touching every
// byte. The ceiling for any replay that reads the same columns.
//
//   read_limit [--mode stream|pages|streamed-pages|ranges] [--page N] [--connections N]
//              [--select SQL] [--pad N] [connection options]
//
// stream: one `SELECT id, eventClass, payload` read with mysql_use_result.
// pages:  keyset pages (`WHERE id > ? ORDER BY id LIMIT N`), each mysql_store_result'ed,
//         as a naive client would.
// streamed-pages: the same keyset pages, each read with mysql_use_result (rewind's reader).
// ranges: pages as id ranges (`WHERE id > a AND id <= a + N ORDER BY id`), streamed, read by
//         --connections connections at once, page k by connection k mod N: what reading
//         on several connections could give (page k+1 need not wait for page k's last id).
// --pad N pads every query with a comment to N bytes, as rewind's --result-buffer does
// (PadQuery): the server reads a query longer than net_buffer_length into a buffer grown to
// its length and writes that query's result through the same buffer, so the result leaves
// in writes of about N bytes instead of 16 KB ones.
// --select replaces `SELECT id, eventClass, payload FROM stored_events` (the first column
// must be the id), to see what a select list costs the server, e.g. rewind's class filter.
// Prints: rows, bytes, seconds, rows/s.
#include <fmt/core.h>
#include <mysql.h>

#include <chrono>
#include <cstdlib>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "perf/tool.h"
#include "stages/flow/reader.h"

namespace {

// What was read, every byte touched.
struct Tally {
  uint64_t rows = 0, bytes = 0, checksum = 0;
  void Add(const Tally& o) {
    rows += o.rows;
    bytes += o.bytes;
    checksum += o.checksum;
  }
};

size_t pad = 0;  // --pad: what every query is padded to (0: not padded)

// Runs `sql` and reads its whole result (mysql_store_result if `store`, else
// mysql_use_result) into `tally`; `last` gets the last row's first column. "" or the error.
std::string ReadResult(MYSQL* m, std::string sql, bool store, Tally& tally, std::string* last = nullptr) {
  sql = rw::PadQuery(std::move(sql), pad);
  if (mysql_real_query(m, sql.data(), sql.size()) != 0) return mysql_error(m);
  MYSQL_RES* res = store ? mysql_store_result(m) : mysql_use_result(m);
  if (res == nullptr) return mysql_error(m);
  const unsigned columns = mysql_num_fields(res);
  while (MYSQL_ROW row = mysql_fetch_row(res)) {
    const unsigned long* len = mysql_fetch_lengths(res);
    ++tally.rows;
    for (unsigned c = 0; c < columns; ++c) {
      if (row[c] == nullptr) continue;
      tally.bytes += len[c];
      for (unsigned long i = 0; i < len[c]; ++i) tally.checksum += static_cast<unsigned char>(row[c][i]);
    }
    if (last != nullptr) *last = row[0];
  }
  mysql_free_result(res);
  return "";
}

}  // namespace

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
    else if (a == "--pad" && i + 1 < argc) pad = std::strtoull(argv[++i], nullptr, 10);
    else rest.push_back(a);
  }
  int exit_code = 0;
  std::optional<PerfTool> tool = OpenPerfTool("read_limit", rest, exit_code);
  if (!tool) return exit_code;
  const CommandLine* cl = &tool->command_line;
  MYSQL* m = tool->connection->raw();
  const auto start = std::chrono::steady_clock::now();
  Tally total;
  std::string error;
  if (mode == "ranges") {
    auto max = tool->connection->QueryValue("SELECT MAX(id) FROM stored_events");
    const long long head = max.ok() && *max ? std::atoll((*max)->c_str()) : 0;
    std::vector<std::thread> threads;
    std::vector<Tally> tallies(connections);
    std::vector<std::string> errors(connections);
    for (int t = 0; t < connections; ++t) {
      threads.emplace_back([&, t] {
        auto own = Connection::Open(cl->options.connection);
        if (!own.ok()) {
          errors[t] = own.status().message();
          return;
        }
        for (long long a = static_cast<long long>(t) * page; a < head && errors[t].empty();
             a += static_cast<long long>(connections) * page) {
          errors[t] = ReadResult((*own)->raw(),
                                 fmt::format("{} WHERE id > {} AND id <= {} ORDER BY id", select, a, a + page),
                                 false, tallies[t]);
        }
      });
    }
    for (auto& th : threads) th.join();
    for (int t = 0; t < connections; ++t) {
      total.Add(tallies[t]);
      if (error.empty()) error = errors[t];
    }
  } else if (mode == "stream") {
    error = ReadResult(m, select, false, total);
  } else {
    std::string last = "0";
    for (uint64_t before = ~0ULL; error.empty() && total.rows != before;) {
      before = total.rows;
      error = ReadResult(m, fmt::format("{} WHERE id > {} ORDER BY id LIMIT {}", select, last, page),
                         mode == "pages", total, &last);
    }
  }
  if (!error.empty()) {
    fmt::print(stderr, "read_limit: {}\n", error);
    return 1;
  }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  fmt::print("rows {} bytes {} seconds {:.3f} rows_per_second {:.0f} checksum {}\n", total.rows, total.bytes, s,
             total.rows / s, total.checksum % 1000);
  return 0;
}
