#include "pipeline/graph.h"

#include <fmt/core.h>
#include <oneapi/tbb/flow_graph.h>

#include <exception>
#include <mutex>

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
  flow::input_node<MutableBatch> source(g, [&](oneapi::tbb::flow_control& fc) -> MutableBatch {
    if (stop.load() || error.failed()) {
      fc.stop();
      return nullptr;
    }
    Result<std::unique_ptr<Batch>> next = reader.Next();
    if (!next.ok()) {
      error.Set(next.status());
      fc.stop();
      return nullptr;
    }
    if (*next == nullptr) {
      fc.stop();
      return nullptr;
    }
    (*next)->consumers_left.store(consumers);
    const int64_t now = in_flight.fetch_add(1) + 1;
    for (int64_t p = peak.load(); p < now && !peak.compare_exchange_weak(p, now);) {
    }
    return MutableBatch(std::move(*next));
  });
  flow::limiter_node<MutableBatch, int> limiter(g, options.max_in_flight);
  flow::function_node<MutableBatch, BatchPtr> decode(
      g, flow::unlimited, [&](const MutableBatch& batch) -> BatchPtr {
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

  source.activate();
  g.wait_for_all();
  return GraphResult{error.Get(), peak.load()};
}

}  // namespace rw
