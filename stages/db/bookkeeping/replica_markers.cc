// rewind_replica_markers: the markers that prove a replica replicates this database.
#include "stages/db/checkpoint_store.h"

#include <fmt/core.h>

namespace rw {
namespace checkpoint_store {

Status WriteReplicaMarker(Connection& c, const std::string& token, const std::string& run_id) {
  if (Status s = c.Execute(
          "DELETE FROM rewind_replica_markers WHERE written_at < NOW(6) - INTERVAL 1 HOUR");
      !s.ok()) {
    return s;
  }
  return c.Execute(fmt::format(
      "INSERT INTO rewind_replica_markers (token, run_id, written_at) VALUES ({}, {}, NOW(6))",
      c.Quote(token), c.Quote(run_id)));
}

Result<bool> ReplicaMarkerSeen(Connection& c, const std::string& token) {
  Result<std::optional<std::string>> v = c.QueryValue(
      fmt::format("SELECT 1 FROM rewind_replica_markers WHERE token = {}", c.Quote(token)));
  if (!v.ok()) {
    if (v.status().code() == Status::Code::kNotFound)
      return false;  // the table has not arrived yet
    return v.status();
  }
  return v->has_value();
}

Status DeleteReplicaMarker(Connection& c, const std::string& token) {
  return c.Execute(
      fmt::format("DELETE FROM rewind_replica_markers WHERE token = {}", c.Quote(token)));
}

}  // namespace checkpoint_store
}  // namespace rw
