// Ingest: `rewind ingest FILE...` reads web-server access logs (combined format) and
// appends every visit the blog's rules keep (stages/access_log.h) to the event table as a
// PageVisited event, in batches, one transaction each. Each batch's transaction also
// records where the file stands (its identity, the byte offset after the batch's last
// line, a hash of its first line) and the per-IP throttle's state, so a restart after a
// crash continues exactly there and keeps exactly the lines an uninterrupted run keeps
// (uuids aside). A file whose identity or first line changed (rotated, truncated) is read
// from its start. --from-start ignores the saved position; --dry-run counts and writes
// nothing. Malformed lines are counted by reason and never stop the run (exit 0).
//
// Not built yet (issue 11 stays open): --follow (tailing, rotation), .gz input, the
// benchmark.
#pragma once

#include <cstdio>
#include <string>
#include <vector>

#include "config/options.h"

namespace rw {

int IngestCommand(const ReplayOptions& options, const std::vector<std::string>& files, std::FILE* out);

}  // namespace rw
