// BatchSource: where the replay graph (pipeline/engine/graph.h) takes its batches from, in
// sequence order. The Reader (stages/flow/reader.h, the event table in MariaDB) is the one
// source today; another event source implements these two calls and runs the same graph.
//
// Thread safety: used by one thread at a time (the graph's calling thread reads from it).
#pragma once

#include <cstdint>
#include <memory>

#include "base/status.h"
#include "stages/flow/batch.h"

namespace rw {

class BatchSource {
 public:
  virtual ~BatchSource() = default;
  // The next batch, or nullptr when the source has nothing more to give this graph.
  virtual Result<std::unique_ptr<Batch>> Next() = 0;
  // The sequence number the next batch will carry: sequences grow across graphs (a follow
  // run builds one graph per poll), and each graph counts its batches from this one.
  virtual uint64_t next_sequence() const = 0;
};

}  // namespace rw
