#include "pipeline/engine/graph.h"

#include <fmt/core.h>
#include <oneapi/tbb/flow_graph.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <thread>

namespace rw {

namespace flow = oneapi::tbb::flow;

namespace {

// ThreadSanitizer and oneTBB (scripts/sanitize thread). Debian's libtbb is not instrumented,
// so TSan does not see TBB hand a task from the thread that spawns it to the one that runs
// it, and takes every access of a node body to what it was handed, or to its serial node's
// state, for a race with the thread that produced it. These tell TSan what TBB guarantees
// and nothing more: what a thread did before it put a message in is visible to the body
// that receives it (a release where a message is put or a decode ends, an acquire where a
// body starts), and a serial node's bodies run one after the other (a release where each
// ends, an acquire where the next starts and where the caller reads the branches after the
// graph). The sync objects: the batch, the branch, and one static object for what the
// calling thread hands in (a body reaches it without reading memory the hand-off wrote).
// Nothing in other builds. The races inside TBB's own task objects are suppressed by name
// in scripts/sanitize.d/tsan.supp.
#if defined(__SANITIZE_THREAD__)
#define REWIND_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define REWIND_TSAN 1
#endif
#endif
#ifdef REWIND_TSAN
extern "C" void __tsan_acquire(void* addr);
extern "C" void __tsan_release(void* addr);
void HandOff(const void* p) { __tsan_release(const_cast<void*>(p)); }
void TakeOver(const void* p) { __tsan_acquire(const_cast<void*>(p)); }
// Every task of the graph ends by releasing its hold on the graph's wait count, an atomic in
// TBB's headers that TSan sees; one more hold taken and given back after wait_for_all()
// acquires them all, so TSan knows the tasks are over before the caller destroys the graph
// and builds the next one on the same stack (follow and the cut-over run several).
void SeeTheTasksEnd(flow::graph& g) {
  g.reserve_wait();
  g.release_wait();
}
#else
void HandOff(const void*) {}
void TakeOver(const void*) {}
void SeeTheTasksEnd(flow::graph&) {}
#endif
// What the calling thread did before it put a batch in (built the graph, read the batch).
char from_the_caller;

// The first error of the run; later ones are consequences.
class FirstError {
 public:
  void Set(Status s) {
    std::lock_guard<std::mutex> lock(mu_);
    if (status_.ok()) status_ = std::move(s);
    failed_.store(true);
  }
  bool failed() const { return failed_.load(std::memory_order_relaxed); }
  Status Get() {
    std::lock_guard<std::mutex> lock(mu_);
    return status_;
  }

 private:
  std::mutex mu_;
  Status status_;
  std::atomic<bool> failed_{false};
};

// "after 100 up to 2000", or "late commits" for a batch of late events: for messages.
std::string Describe(const Batch& b) {
  if (b.late) return "found late in earlier gaps";
  return fmt::format("after id {} up to {}", b.after_id == kBeforeFirstId ? "(start)" : IdText(b.after_id),
                     IdText(b.last_id));
}

// The backpressure: places for the batches alive (read and not yet freed). The reader
// takes one before it reads a batch, and the batch's deleter gives it back when its memory
// is freed, so the bound holds for the memory itself, whatever the slowest consumer does.
class Places {
 public:
  explicit Places(size_t n) : max_(n) {}
  void Take() {
    std::unique_lock<std::mutex> lock(mu_);
    room_.wait(lock, [&] { return used_ < max_; });
    peak_ = std::max(peak_, ++used_);
  }
  void Give() {
    std::lock_guard<std::mutex> lock(mu_);
    --used_;
    room_.notify_one();
  }
  size_t peak() {
    std::lock_guard<std::mutex> lock(mu_);
    return peak_;
  }

 private:
  const size_t max_;
  std::mutex mu_;
  std::condition_variable room_;
  size_t used_ = 0, peak_ = 0;
};

// Decoding and applying run below the priority of the server and of rewind's own reading
// (10 nice levels below the process's main thread, at most 19; Linux's per-thread nice):
// on a machine shared with the database, the server's thread that sends the events is the
// run's critical path, and a decoding thread that preempts it slows everything. Once per
// thread, on the graph's threads only (TBB's workers and the one that waits for the
// graph), never on the main thread, which reads, flushes and swaps. A thread may always
// lower its own priority; nothing is done if it is already that low.
void YieldToTheServer() {
  thread_local const bool lowered = [] {
    static const int target = std::min(getpriority(PRIO_PROCESS, static_cast<id_t>(getpid())) + 10, 19);
    const auto tid = static_cast<id_t>(gettid());
    if (getpriority(PRIO_PROCESS, tid) < target) (void)setpriority(PRIO_PROCESS, tid, target);
    return true;
  }();
  (void)lowered;
}

}  // namespace

GraphResult RunGraph(EventSource& source, const Decoder& decoder, std::vector<Branch>& branches,
                     Progress& progress, const GraphOptions& options,
                     const std::atomic<bool>& stop) {
  using MutableBatch = std::shared_ptr<Batch>;
  using Sink = flow::function_node<BatchPtr, flow::continue_msg>;
  FirstError error;
  const int consumers = static_cast<int>(branches.size());
  // The batches alive, the one being read included: max_in_flight + 1. Before the graph, so
  // that it outlives every batch the graph holds.
  Places places(options.max_in_flight + 1);

  flow::graph g;
  flow::function_node<MutableBatch, BatchPtr> decode(
      g, flow::unlimited, [&](const MutableBatch& batch) -> BatchPtr {
        TakeOver(&from_the_caller);
        YieldToTheServer();
        if (!error.failed()) {
          try {
            decoder.Decode(*batch);
          } catch (const std::exception& e) {
            error.Set(Status::Internal(fmt::format("decoder failed on events {}: {}",
                                                   Describe(*batch), e.what())));
          }
        }
        HandOff(batch.get());
        return batch;
      });
  // Sequence numbers grow across graphs (a follow run builds one graph per poll); each
  // sequencer counts from the first batch of its own graph.
  const uint64_t first_sequence = source.next_sequence();
  flow::sequencer_node<BatchPtr> sequencer(
      g, [first_sequence](const BatchPtr& b) { return b->sequence - first_sequence; });
  flow::broadcast_node<BatchPtr> fanout(g);

  std::vector<std::unique_ptr<Sink>> sinks;
  std::vector<size_t> position_slot(branches.size(), 0);
  for (size_t i = 0, slot = 0; i < branches.size(); ++i) {
    if (branches[i].reports_position) position_slot[i] = slot++;
  }
  for (size_t i = 0; i < branches.size(); ++i) {
    Branch& branch = branches[i];
    const size_t slot = position_slot[i];
    sinks.push_back(std::make_unique<Sink>(g, flow::serial, [&, slot](const BatchPtr& batch) {
      TakeOver(&from_the_caller);
      TakeOver(batch.get());
      TakeOver(&branch);
      YieldToTheServer();
      if (!error.failed()) {
        Status s;
        try {
          s = branch.consume(*batch);
        } catch (const std::exception& e) {
          s = Status::Internal(fmt::format("{} threw while applying events {}: {}", branch.name,
                                           Describe(*batch), e.what()));
        }
        if (!s.ok()) error.Set(s);
        if (branch.reports_position && !batch->late) {
          progress.Position(slot, ProgressPosition(batch->last_id));
        }
      }
      // The last consumer of this batch: it is done (its memory goes with the last pointer).
      if (batch->consumers_left.fetch_sub(1) == 1 && !error.failed()) {
        progress.Done(batch->rows_read, batch->late ? INT64_MIN : ProgressPosition(batch->last_id));
      }
      HandOff(&branch);
      return flow::continue_msg();
    }));
  }

  // Every edge of the graph, in one place.
  flow::make_edge(decode, sequencer);
  flow::make_edge(sequencer, fanout);
  for (auto& sink : sinks) flow::make_edge(fanout, *sink);

  // The graph runs on TBB's workers and on one thread of its own, which waits for it (and
  // works in it) until the reader has put its last batch in; the calling thread reads.
  g.reserve_wait();
  std::thread graph_thread([&] {
    YieldToTheServer();
    g.wait_for_all();
    SeeTheTasksEnd(g);
  });
  try {
    while (!stop.load() && !error.failed()) {
      places.Take();
      Result<std::unique_ptr<Batch>> next = source.Next();
      if (!next.ok() || *next == nullptr) {
        places.Give();
        if (!next.ok()) error.Set(next.status());
        break;
      }
      (*next)->consumers_left.store(consumers);
      const MutableBatch batch(next->release(), [&places](Batch* b) {
        delete b;
        places.Give();
      });
      HandOff(&from_the_caller);  // after the batch's last write here, its owner included
      decode.try_put(batch);
    }
  } catch (const std::exception& e) {
    error.Set(Status::Internal(fmt::format("the reader threw: {}", e.what())));
  }
  g.release_wait();
  graph_thread.join();
  for (const Branch& branch : branches) TakeOver(&branch);
  return GraphResult{error.Get(), static_cast<int64_t>(places.peak())};
}

}  // namespace rw
