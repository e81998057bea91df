// Ingest: `rewind ingest FILE...` reads web-server access logs (combined format) and
// appends every visit the blog's rules keep (pipeline/ingest/access_log.h) to the event table as a
// PageVisited event, in batches, one transaction each. Each batch's transaction also
// records where the file stands (its identity, the byte offset after the batch's last
// line, a hash of its first line) and the per-IP throttle's state, so a restart after a
// crash continues exactly there and keeps exactly the lines an uninterrupted run keeps
// (uuids aside). A file whose identity or first line changed (rotated, truncated) is read
// from its start, unless it is a file ingested before under another name: every file's
// content is remembered (checkpoint_store's rewind_ingest_files, in the same transaction),
// known by the SHA-256 of its first line and of its first min(offset, 4 KiB) bytes, so a
// renamed, gzipped or copied log continues where its lines were stored (a record shorter
// than 4 KiB whose file is still there is another log's that starts alike). One that starts as
// a known file but is shorter than what was stored of it is refused (exit 1). --from-start
// ignores both records; --dry-run counts and writes nothing. Malformed lines are counted by
// reason and never stop the run (exit 0).
//
// Each line is stored exactly once: one ingest at a time per file (server-wide locks on its
// path, on its device and inode, and once its first line is read on its content: its first
// line while its record is chosen, then that record; a second one is refused, exit 1), and each
// batch's transaction first locks the saved position and the content's record and stops (exit 1)
// unless they are the ones this run started from or last wrote. A last line without its newline
// is left for later (the position before it) unless the file is final: a `.gz`, or the old file
// of a rotation. A `.gz` is checked whole before any of it is read: a truncated or corrupt
// one, or a plain file named .gz, stops the run (exit 1) with nothing of it stored.
//
// --follow (one FILE) keeps reading what is appended, until `stop`; a rotation by rename is
// followed (the old file read to its end, then the new one from its start), and so is
// copytruncate (the rest read from <FILE>.1, then the file from its start); after a restart
// the lines a rotation moved away are read first, the saved position the old file's until
// they all are. The old file is found beside FILE by its first line: <FILE>.1, or any name
// starting as FILE's (dateext's <FILE>-20261201, compress's <FILE>.1.gz). `.gz` files are read
// directly.
//
// Thread safety: IngestCommand runs on the calling thread; `stop` may be set from any other
// (the signal handler).
#pragma once

#include <atomic>
#include <cstdio>
#include <string>
#include <vector>

#include "config/options.h"

namespace rw {

int IngestCommand(const IngestOptions& options, const std::vector<std::string>& files,
                  const std::atomic<bool>& stop, std::FILE* out);

}  // namespace rw
