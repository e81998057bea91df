// FailureRecorder: writes the events that could not be applied to the failures table.
//
// Each failure is one row (run, event id, stage, reason, the payload's first bytes) in
// rewind_failures (stages/checkpoint_store owns its SQL), written on the recorder's own
// connection as soon as its batch arrives, so the record survives whatever happens to
// the run afterwards. With `stop_on_failure`, the first failure ends the run: Consume()
// returns an error naming the event id and the reason.
//
// Thread safety: one thread at a time (a serial pipeline node).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "base/id_form.h"
#include "stages/flow/batch.h"
#include "stages/db/connection.h"

namespace rw {

class FailureRecorder {
 public:
  // `form`: how the event table writes its ids (recorded and shown as it writes them).
  FailureRecorder(std::unique_ptr<Connection> connection, std::string run_id, bool stop_on_failure,
                  const IdForm& form);
  Status Consume(const Batch& batch);
  // Records failures found outside a batch (e.g. a projector that threw).
  Status Record(const Failure& failure);
  uint64_t failures() const { return failures_; }

 private:
  // Writes the rows; a failure's content can never make this fail (see .cc).
  Status Insert(const std::vector<Failure>& failures);
  std::unique_ptr<Connection> connection_;
  const std::string run_id_;
  const bool stop_on_failure_;
  const IdForm form_;
  uint64_t failures_ = 0;
};

}  // namespace rw
