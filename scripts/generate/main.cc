// rewind-gen: fills an event table with sample PageVisited events built from the real
// access log in tests/data/apache-combined/. Its usage: scripts/generate/usage.h.
#include <fmt/core.h>

#include <cstdlib>
#include <string>

#include "config/options.h"
#include "pipeline/version.h"
#include "scripts/generate/event_generator.h"
#include "scripts/generate/usage.h"
#include "stages/db/checkpoint_store.h"
#include "stages/db/table_admin.h"

int main(int argc, char** argv) {
  using namespace rw;
  GeneratorOptions g;
  std::vector<std::string> rest;
  bool append = false;
  int shop_orders = 0;
  std::string delete_ranges;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (a == "--help") {
      fmt::print("{}", gen_usage::UsageText());
      return 0;
    }
    if (a == "--version" || a == "-V") {
      fmt::print("rewind-gen {}\n", BuildVersion());
      return 0;
    }
    if (a == "--events") g.events = std::stoull(next());
    else if (a == "--shop") shop_orders = std::stoi(next());
    else if (a == "--bad-every") g.bad_every = std::stoull(next());
    else if (a == "--seed") g.seed = std::stoull(next());
    else if (a == "--append") append = true;
    else if (a == "--id-step") g.id_step = std::stoull(next());
    else if (a == "--holes") g.holes = std::stod(next());
    else if (a == "--delete-ranges") delete_ranges = next();
    else rest.push_back(a);
  }
  rest.insert(rest.begin(), "replay");
  Result<CommandLine> cl = ParseCommandLine(rest, SystemEnvironment());
  if (!cl.ok()) {
    // The connection options are rewind's; the rest of the help is rewind-gen's own.
    std::string message = cl.status().message();
    if (const auto at = message.find("rewind --help"); at != std::string::npos) {
      message.replace(at, 13, "rewind-gen --help");
    }
    fmt::print(stderr, "rewind-gen: {}\n", message);
    return 2;
  }
  const std::string log_path = FindAccessLog();
  Result<std::vector<AccessLogLine>> log = ReadAccessLog(log_path);
  if (!log.ok()) {
    fmt::print(stderr, "rewind-gen: {}\n", log.status().message());
    return 1;
  }
  Result<std::unique_ptr<Connection>> c = Connection::Open(cl->options.connection);
  if (!c.ok()) {
    fmt::print(stderr, "rewind-gen: {}\n", c.status().message());
    return 1;
  }
  const std::string table = cl->options.events.table;
  const auto fail = [](const Status& s) {
    fmt::print(stderr, "rewind-gen: {}\n", s.message());
    return 1;
  };
  // Sample events go only into an event table rewind-gen made itself, as rewind's bookkeeping
  // records it (kind "sample", recorded before the table is created; read-only until then):
  // an existing table
  // without that record may be an application's own (`stored_events` is spatie's name too),
  // and it is neither dropped nor filled with sample events.
  Result<bool> exists = table_admin::Exists(**c, table);
  if (!exists.ok()) return fail(exists.status());
  if (*exists) {
    Result<std::optional<std::string>> kind = checkpoint_store::RecordedKind(**c, table);
    if (!kind.ok()) return fail(kind.status());
    if (!*kind || **kind != "sample") {
      fmt::print(stderr,
                 "rewind-gen: the table {}.{} exists and rewind-gen did not create it (rewind's "
                 "bookkeeping has no record of it as sample events{}): it may be your "
                 "application's, so rewind-gen neither drops it nor appends to it; nothing was "
                 "done. Give another --events-table or --database (rewind-gen creates the table "
                 "there), or drop the table yourself if it is an old sample\n",
                 cl->options.connection.database, table,
                 *kind ? fmt::format("; it is rewind's {} table", **kind) : "");
      return 1;
    }
  }
  // The bookkeeping (created when missing) only once nothing is refused.
  if (Status s = checkpoint_store::Ensure(**c); !s.ok()) return fail(s);
  if (append) {
    if (*exists) {
      auto count = (*c)->QueryValue("SELECT COUNT(*) FROM " + QuoteIdentifier(table));
      if (count.ok() && *count) g.first_index = std::stoull(**count);
    }
  } else if (Status s = (*c)->Execute("DROP TABLE IF EXISTS " + QuoteIdentifier(table)); !s.ok()) {
    return fail(s);
  }
  if (Status s = checkpoint_store::RecordTable(**c, table, table, "sample"); !s.ok()) return fail(s);
  if (shop_orders > 0) {
    if (Status s = (*c)->Execute(EventTableDdl(table)); !s.ok()) {
      fmt::print(stderr, "rewind-gen: {}\n", s.message());
      return 1;
    }
    const std::vector<shop::Event> events = shop::Events(shop_orders);
    if (Status s = InsertShopEvents(**c, table, events); !s.ok()) {
      fmt::print(stderr, "rewind-gen: {}\n", s.message());
      return 1;
    }
    fmt::print("rewind-gen: {} shop events ({} orders) in {}.{}\n", events.size(), shop_orders,
               cl->options.connection.database, table);
    return 0;
  }
  if (g.holes < 0 || g.holes >= 1) {
    fmt::print(stderr, "rewind-gen: --holes takes a fraction in [0, 1)\n");
    return 2;
  }
  if (Status s = LoadEvents(**c, table, g, *log); !s.ok()) {
    fmt::print(stderr, "rewind-gen: {}\n", s.message());
    return 1;
  }
  if (Status s = DeleteIdRanges(**c, table, delete_ranges); !s.ok()) {
    fmt::print(stderr, "rewind-gen: {}\n", s.message());
    return 1;
  }
  fmt::print("rewind-gen: {} events in {}.{} (from {})\n", g.events, cl->options.connection.database,
             table, log_path);
  return 0;
}
