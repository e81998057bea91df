// rewind-gen's usage, one text for the two places that show it: `rewind-gen --help` prints
// it (UsageText) and rewind-man writes it into the rewind-gen(1) man page, so they never
// disagree.
//
// Thread safety: constants and a pure function.
#pragma once

#include <algorithm>
#include <string>

namespace rw::gen_usage {

inline constexpr const char* kSummary = "fill an event table with sample events for rewind";

// One form of the command line per entry.
inline constexpr const char* kSynopsis[] = {
    "rewind-gen [--events N] [--bad-every N] [--append] [--seed N] [--id-step N] [--holes F] "
    "[--delete-ranges LO:HI[,LO:HI...]] [connection options]",
    "rewind-gen --shop ORDERS [connection options]",
    "rewind-gen --help | --version",
};

// Paragraphs.
inline constexpr const char* kDescription[] = {
    "rewind-gen creates the event table (default stored_events) if it is missing and appends "
    "sample PageVisited events to it, built from a real Apache access log installed with "
    "rewind: the events rewind's compiled read models (the blog's visits per day, per post, "
    "sessions...) read.",
    "Without --append, a table rewind-gen made before is dropped first. A table rewind-gen did "
    "not make (rewind's bookkeeping records the ones it did) is never dropped or appended to: "
    "it may be the application's own.",
    "The connection options are rewind's (-S/--socket, -H/--host, -P/--port, -u/--user, "
    "-p/--password, -D/--database, --events-table, --config ...; see rewind(1)), read from the "
    "same config file and environment.",
};

struct Option {
  const char* flag;
  const char* help;
};
inline constexpr Option kOptions[] = {
    {"--events N", "append N sample PageVisited events (default 1,000,000)"},
    {"--bad-every N", "make every Nth payload malformed, for testing how rewind records failures"},
    {"--append", "append to a table rewind-gen made before instead of making it afresh"},
    {"--seed N", "the seed of the sample's random choices (the same seed, the same events)"},
    {"--id-step N", "ids go up by N, as a Galera node's auto_increment_increment makes them"},
    {"--holes F", "burn each id with probability F in [0, 1), as rolled-back inserts do"},
    {"--delete-ranges LO:HI[,...]", "delete the events with ids in those ranges afterwards"},
    {"--shop ORDERS", "fill the table with a small shop's events instead (config/shop.toml's read "
                      "models read them)"},
    {"--help", "print this text"},
    {"--version", "print the version"},
};

// What `rewind-gen --help` prints.
inline std::string UsageText() {
  std::string out = "usage:\n";
  for (const char* s : kSynopsis) out += std::string("  ") + s + "\n";
  out += "\n";
  for (const char* p : kDescription) out += std::string(p) + "\n\n";
  out += "options:\n";
  for (const Option& o : kOptions) {
    std::string flag = o.flag;
    flag.resize(std::max<size_t>(flag.size() + 2, 30), ' ');
    out += "  " + flag + o.help + "\n";
  }
  return out;
}

}  // namespace rw::gen_usage
