// The replay graph: source -> decoder (parallel) -> sequencer -> broadcast -> one serial
// branch per consumer (each projector runner, the failure recorder). The source is any
// EventSource (stages/flow/event_source.h): the Reader of the event table, for replay; an
// in-memory one in the tests.
//
// Threads: the reader runs on the calling thread and puts each batch into the graph, so the
// server's stream is drained while the graph decodes and applies; the graph runs on TBB's
// threads and one thread of its own, all ten nice levels below the process's main thread
// (at most 19), so below the reading thread and the server: the server's sending thread is
// the critical path when it shares the machine. Flushes, swaps and everything else keep the
// caller's priority.
//
// Backpressure lives in one place: the batches alive (read and not yet freed, the one
// being read included) are at most max_in_flight + 1. The reader takes a place before it
// reads, and a batch's deleter gives it back when its last holder lets it go, so memory is
// bounded by (max_in_flight + 1) x batch size whatever the slowest consumer does. No node
// of the graph blocks or rejects: each branch is a queueing serial node (its own buffer),
// so the broadcast never drops a batch.
//
// Lifecycle: Run() returns when the reader is exhausted, when `stop` becomes true (the
// reader stops; batches already admitted are finished), or when a branch fails (the
// reader stops; the remaining in-flight batches drain without work). It returns the
// first error. This is the only file that includes TBB's flow graph.
//
// Thread safety: RunGraph is called from one thread at a time; each branch's consume runs
// serially (one batch at a time, in order) while different branches run concurrently;
// `stop` may be set from any thread.
#pragma once

#include <atomic>
#include <functional>
#include <string>
#include <vector>

#include "stages/flow/batch.h"
#include "stages/flow/event_source.h"
#include "stages/flow/decoder.h"
#include "stages/control/progress.h"

namespace rw {

struct Branch {
  std::string name;
  std::function<Status(const Batch&)> consume;
  bool reports_position = true;  // shown as a projector in the progress line
};

struct GraphOptions {
  // Batches in the graph at once (one more is being read): ReadingPart::max_in_flight
  // (config/options.h), where its default is chosen.
  size_t max_in_flight = 0;
};

struct GraphResult {
  Status status;
  // Most batches alive (read and not yet freed) at once: at most max_in_flight + 1.
  int64_t peak_in_flight = 0;
};

GraphResult RunGraph(EventSource& source, const Decoder& decoder, std::vector<Branch>& branches,
                     Progress& progress, const GraphOptions& options,
                     const std::atomic<bool>& stop);

}  // namespace rw
