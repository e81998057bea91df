// Prefetch: pages of the event table read ahead, at once, on connections of their own.
//
// After the first page, pages are id ranges, `WHERE id > lo AND id <= hi ORDER BY id LIMIT
// n`, read by one background thread per connection at once, and returned in id order: on a
// server that sends each result from one thread, two connections get two. A range's span
// follows the ids' density (it grows over sparse ids); a range that holds more than a batch
// is cut at the batch (its rest is the next page), so a batch never holds more than
// batch_size events. While the caller applies a page's batch, the other connections read
// on. How a page is read, and what it starts with, are the Reader's (stages/flow/reader.h):
// this unit plans the ranges and runs the threads.
//
// Thread safety: Next(), WaitForStarted() and Stop() from one thread (the reading thread);
// the workers touch only the page they were handed, and a page's `done` under the lock.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "base/status.h"
#include "stages/db/connection.h"
#include "stages/flow/batch.h"
#include "stages/flow/gap_watch.h"

namespace rw {

// One page: the ids in (lo, hi], at most `limit` of them, read into `batch`.
struct EventPage {
  EventId lo = 0, hi = 0;
  size_t limit = 0;
  std::unique_ptr<Batch> batch;
  EventId last_id = 0;  // the last id read
  Status status;
  bool started = false, done = false;
  PageHoles holes;  // what the gap watch judges the page's gaps by
};

class Prefetch {
 public:
  // `read` reads a page on a connection (on a worker's thread); `start` readies a page on
  // the reading thread before it is handed to a worker (its batch, what its holes are
  // judged against). `sparse`: the ids are ULIDs or UUIDs (base/id_form.h), 2^80 to a
  // millisecond: the first range is the whole rest (cut at a batch), and spans grow to 2^126.
  Prefetch(size_t batch_size, bool sparse, std::function<void(Connection&, EventPage&)> read,
           std::function<void(EventPage&)> start);
  // Stops the workers (a page being read is finished first).
  ~Prefetch();
  Prefetch(const Prefetch&) = delete;
  Prefetch& operator=(const Prefetch&) = delete;

  // Whether pages are planned (read or being read) beyond the caller's position.
  bool empty() const { return pages_.empty(); }
  // The next page in id order, read, of the ids in (after, head] (`after` is where the
  // caller stands; pages already planned continue from there). Workers are started on
  // `connections` when none run. REQUIRES: after < head, or !empty().
  std::unique_ptr<EventPage> Next(EventId after, EventId head, const std::vector<Connection*>& connections);
  // Waits until no page is being read (every connection is free).
  void WaitForStarted();
  // Waits for the pages being read, then ends the workers; pages already read stay. The
  // next Next() starts them again (on the connections it is given).
  void Stop();

 private:
  struct Worker {
    Connection* connection = nullptr;
    EventPage* page = nullptr;  // being read; null when idle
    std::thread thread;
  };
  void StartWorkers(const std::vector<Connection*>& connections);
  // Starts the first pages not started yet on idle workers. Called with mu_ held.
  void StartPages();
  // Ends `page` at `at` and returns the rest of its range, (at, hi], as a page not started.
  static std::unique_ptr<EventPage> SplitOff(EventPage& page, EventId at);
  // The span of the next range, from what `page` found.
  void Learn(const EventPage& page);

  const size_t batch_size_;
  const std::function<void(Connection&, EventPage&)> read_page_;
  const std::function<void(EventPage&)> start_page_;
  // The pages planned, in id order (the first may be in a worker), the ids planned up
  // to, and the span of the next range.
  std::deque<std::unique_ptr<EventPage>> pages_;
  EventId planned_to_ = 0;
  EventId span_;
  const EventId widest_;  // the widest span: every BIGINT id, or every ULID's and UUID's number
  std::vector<Worker> workers_;
  size_t next_worker_ = 0;  // where the search for an idle worker starts (in turn)
  std::mutex mu_;
  std::condition_variable wake_, read_;
  bool quit_ = false;
};

}  // namespace rw
