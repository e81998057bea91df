#include "pipeline/graph.h"

#include <fmt/core.h>
#include <oneapi/tbb/flow_graph.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>

namespace rw {

namespace flow = oneapi::tbb::flow;

namespace {

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

// The batches the reading thread has read and the graph has not taken yet, at most
// `depth`, and every batch alive (read and not yet freed) at most `alive`: the reader
// reserves a place before it reads, and the batch's deleter frees it. Closed
// by either side: the reader at the end, the graph when it stops early (then Reserve fails
// and the reader stops reading).
class ReadAhead {
 public:
  ReadAhead(size_t depth, size_t alive) : depth_(depth), max_alive_(alive) {}
  // Waits for a place for one more batch; false when the graph has stopped taking them.
  bool Reserve() {
    std::unique_lock<std::mutex> lock(mu_);
    room_.wait(lock, [&] { return closed_ || (queue_.size() < depth_ && alive_ < max_alive_); });
    if (closed_) return false;
    ++alive_;
    return true;
  }
  void Push(std::shared_ptr<Batch> batch) {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(std::move(batch));
    ready_.notify_one();
  }
  // A batch's memory is freed (or it was never read): its place is free.
  void Release() {
    std::lock_guard<std::mutex> lock(mu_);
    --alive_;
    room_.notify_one();
  }
  // The next batch; nullptr once closed and empty.
  std::shared_ptr<Batch> Pop() {
    std::unique_lock<std::mutex> lock(mu_);
    ready_.wait(lock, [&] { return closed_ || !queue_.empty(); });
    if (queue_.empty()) return nullptr;
    std::shared_ptr<Batch> batch = std::move(queue_.front());
    queue_.pop_front();
    room_.notify_one();
    return batch;
  }
  // Frees the batches still queued (read ahead of a stop), outside the lock: each one's
  // deleter calls Release.
  void Drop() {
    std::deque<std::shared_ptr<Batch>> dropped;
    {
      std::lock_guard<std::mutex> lock(mu_);
      dropped.swap(queue_);
    }
  }
  void Close() {
    std::lock_guard<std::mutex> lock(mu_);
    closed_ = true;
    ready_.notify_all();
    room_.notify_all();
  }

 private:
  const size_t depth_, max_alive_;
  std::mutex mu_;
  std::condition_variable ready_, room_;
  std::deque<std::shared_ptr<Batch>> queue_;
  size_t alive_ = 0;
  bool closed_ = false;
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

GraphResult RunGraph(Reader& reader, const Decoder& decoder, std::vector<Branch>& branches,
                     Progress& progress, const GraphOptions& options,
                     const std::atomic<bool>& stop) {
  using MutableBatch = std::shared_ptr<Batch>;
  // Tokens come back as integers: a continue_msg decrementer is a continue_receiver, which
  // would wait for a message from every one of its predecessors before it fires once.
  using Sink = flow::multifunction_node<BatchPtr, std::tuple<int>>;
  FirstError error;
  std::atomic<int64_t> in_flight{0}, peak{0};
  const int consumers = static_cast<int>(branches.size());

  flow::graph g;
  // The reader runs on the calling thread, ahead of the graph by a batch or two, so the
  // server's stream is drained while the graph's threads decode and apply; the batches
  // alive stay max_in_flight + 1 at most, as when the graph read them itself.
  ReadAhead ahead(2, options.max_in_flight + 1);
  flow::input_node<MutableBatch> source(g, [&](oneapi::tbb::flow_control& fc) -> MutableBatch {
    YieldToTheServer();
    MutableBatch batch = ahead.Pop();
    if (batch == nullptr || stop.load() || error.failed()) {
      ahead.Close();  // the reader stops at its next batch
      fc.stop();
      return nullptr;
    }
    return batch;
  });
  flow::limiter_node<MutableBatch, int> limiter(g, options.max_in_flight);
  flow::function_node<MutableBatch, BatchPtr> decode(
      g, flow::unlimited, [&](const MutableBatch& batch) -> BatchPtr {
        YieldToTheServer();
        if (!error.failed()) {
          try {
            decoder.Decode(*batch);
          } catch (const std::exception& e) {
            error.Set(Status::Internal(fmt::format("decoder failed on events {}: {}",
                                                   Describe(*batch), e.what())));
          }
        }
        return batch;
      });
  // Sequence numbers grow across graphs (a follow run builds one graph per poll); each
  // sequencer counts from the first batch of its own graph.
  const uint64_t first_sequence = reader.next_sequence();
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
    sinks.push_back(std::make_unique<Sink>(
        g, flow::serial, [&, slot](const BatchPtr& batch, Sink::output_ports_type& ports) {
          YieldToTheServer();
          if (!error.failed()) {
            Status s;
            try {
              s = branch.consume(*batch);
            } catch (const std::exception& e) {
              s = Status::Internal(fmt::format("{} threw while applying events {}: {}",
                                               branch.name, Describe(*batch), e.what()));
            }
            if (!s.ok()) error.Set(s);
            if (branch.reports_position && !batch->late) {
              progress.Position(slot, ProgressPosition(batch->last_id));
            }
          }
          if (batch->consumers_left.fetch_sub(1) == 1) {  // the last consumer of this batch
            if (!error.failed()) {
              progress.Done(batch->rows_read, batch->late ? INT64_MIN : ProgressPosition(batch->last_id));
            }
            in_flight.fetch_sub(1);
            std::get<0>(ports).try_put(1);
          }
        }));
  }

  // Every edge of the graph, in one place.
  flow::make_edge(source, limiter);
  flow::make_edge(limiter, decode);
  flow::make_edge(decode, sequencer);
  flow::make_edge(sequencer, fanout);
  for (auto& sink : sinks) {
    flow::make_edge(fanout, *sink);
    flow::make_edge(flow::output_port<0>(*sink), limiter.decrementer());
  }

  std::thread graph_thread([&] {
    YieldToTheServer();
    source.activate();
    g.wait_for_all();
  });
  try {
    while (!stop.load() && !error.failed() && ahead.Reserve()) {
      Result<std::unique_ptr<Batch>> next = reader.Next();
      if (!next.ok() || *next == nullptr) {
        ahead.Release();
        if (!next.ok()) error.Set(next.status());
        break;
      }
      (*next)->consumers_left.store(consumers);
      const int64_t now = in_flight.fetch_add(1) + 1;
      for (int64_t p = peak.load(); p < now && !peak.compare_exchange_weak(p, now);) {
      }
      // The place is freed with the batch's memory, not when its last consumer is done.
      ahead.Push(MutableBatch(next->release(), [&ahead](Batch* b) {
        delete b;
        ahead.Release();
      }));
    }
  } catch (const std::exception& e) {
    error.Set(Status::Internal(fmt::format("the reader threw: {}", e.what())));
  }
  ahead.Close();
  graph_thread.join();
  ahead.Drop();  // batches read ahead of a stop, freed while `ahead` is whole
  return GraphResult{error.Get(), peak.load()};
}

}  // namespace rw
