// decode_bench: the decoder's CPU alone. Reads the first N events of the event table once
// (rewind's reader, batches of 20,000), then decodes every batch R times on one thread and
// prints the thread's CPU nanoseconds per event, the median and the fastest round. No
// server runs while it measures, so a change to decoding shows in a few percent that a
// whole replay on a shared two-core machine would hide.
//
//   decode_bench [--events N] [--rounds R] [--fields day|all] [connection options]
//
// --fields day: visitedAt alone (`visits_per_day`); all: url, ip and user agent too (the
// eight compiled read models), interned to run-wide ids as in a replay.
#include <fmt/core.h>

#include <algorithm>
#include <ctime>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "perf/tool.h"
#include "projectors/page_visit.h"
#include "stages/flow/decoder.h"
#include "stages/flow/reader.h"

namespace {

double ThreadCpuSeconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

// Forgets what a decode added to the batch, keeping what the reader read.
void Undecode(rw::Batch& b) {
  b.failures.clear();
  b.records.clear();
  b.values.clear();
  b.strings.Clear();
}

}  // namespace

int main(int argc, char** argv) {
  using namespace rw;
  size_t events = 200'000, rounds = 10;
  std::string fields = "all";
  std::vector<std::string> rest = {"replay"};
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--events" && i + 1 < argc) events = std::strtoull(argv[++i], nullptr, 10);
    else if (a == "--rounds" && i + 1 < argc) rounds = std::strtoull(argv[++i], nullptr, 10);
    else if (a == "--fields" && i + 1 < argc) fields = argv[++i];
    else rest.push_back(a);
  }
  if (fields != "day" && fields != "all") {
    fmt::print(stderr, "decode_bench: --fields is day or all, got '{}'\n", fields);
    return 2;
  }
  int exit_code = 0;
  std::optional<PerfTool> tool = OpenPerfTool("decode_bench", rest, exit_code);
  if (!tool) return exit_code;
  const EventTableOptions& table = tool->command_line.options.events;
  auto head = tool->connection->QueryValue(fmt::format("SELECT MAX({}) FROM {}", QuoteIdentifier(table.id_column),
                                              QuoteIdentifier(table.table)));
  if (!head.ok() || !*head) {
    fmt::print(stderr, "decode_bench: no events to read\n");
    return 1;
  }
  ReaderOptions ro;
  ro.events = table;
  ro.head_id = std::stoll(**head);
  auto reader = Reader::Make(std::move(tool->connection), ro);
  if (!reader.ok()) {
    fmt::print(stderr, "decode_bench: {}\n", reader.status().message());
    return 1;
  }
  std::vector<std::unique_ptr<Batch>> batches;
  size_t read = 0;
  while (read < events) {
    auto b = (*reader)->Next();
    if (!b.ok()) {
      fmt::print(stderr, "decode_bench: {}\n", b.status().message());
      return 1;
    }
    if (*b == nullptr) break;
    read += (*b)->raw.size();
    batches.push_back(std::move(*b));
  }
  const uint32_t wanted = fields == "day" ? kFieldVisitedAt : kFieldVisitedAt | kFieldUrl | kFieldIp | kFieldUserAgent;
  EventCatalog catalog;
  PageFields page;
  page.Bind(catalog, wanted);
  const Decoder decoder(catalog);
  std::vector<double> ns;
  size_t visits = 0;
  for (size_t r = 0; r < rounds; ++r) {
    for (auto& b : batches) Undecode(*b);
    const double start = ThreadCpuSeconds();
    for (auto& b : batches) decoder.Decode(*b);
    ns.push_back((ThreadCpuSeconds() - start) * 1e9 / static_cast<double>(read));
    visits = 0;
    for (auto& b : batches) {
      for (const EventRecord& e : b->records) visits += page.Usable(e) ? 1 : 0;
    }
  }
  std::sort(ns.begin(), ns.end());
  fmt::print("events {} visits {} fields {} rounds {} ns_per_event median {:.1f} fastest {:.1f}\n", read, visits,
             fields, rounds, ns[ns.size() / 2], ns.front());
  return 0;
}
