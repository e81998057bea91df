// FlushBuilder: the second part of a read model's runner (stages/flow/projector_runner.h): it
// turns what a read model's projector has pending into the statements of a flush
// (FlushJob, stages/flow/flush_writer.h), which the writer then commits.
//
// Rows go by LOAD DATA LOCAL INFILE (served from memory) where the target cannot hold their
// keys yet: every row of the first flush into a table the run created, and, when writing
// while reading, the rows of keys it never wrote (it keeps the keys it wrote, 8 bytes
// each, up to keys_bytes: past it every later row is an upsert, so that memory stays
// bounded whatever the number of keys). The others go as multi-row upserts (`INSERT ... ON DUPLICATE KEY UPDATE`), each
// statement at most `statement_bytes`. A table of the application's shape gets its rows by
// column name, without rewind's storage columns, each group of rows naming only the columns
// it writes (row_writer.h). Once a table is no longer all the run's (Retarget: the live
// table after the swap), every row is an upsert.
//
// Thread safety: none; the runner's thread calls it, never while the writer runs a flush
// on its connection.
#pragma once

#include <cstdint>
#include <string>

#include "projectors/projector.h"
#include "stages/db/connection.h"
#include "stages/db/row_writer.h"
#include "stages/flow/flush_writer.h"

namespace rw {

struct FlushBuilderOptions {
  std::string target_table;        // the table written
  size_t statement_bytes = 8 << 20;  // the largest multi-row statement
  bool target_starts_empty = false;  // created by this run: its first rows may be loaded
  bool bulk_load = true;             // rows may go by LOAD DATA at all
  bool keep_keys = false;            // writing while reading: remember the keys written
  bool application_table = false;   // TableSpec::bare
  size_t keys_bytes = SIZE_MAX;      // the most the keys written may hold
};

class FlushBuilder {
 public:
  // Asks the server, once, whether it allows LOAD DATA LOCAL INFILE (when it may be used).
  FlushBuilder(Connection& connection, const TableSpec& table, const FlushBuilderOptions& options);

  // Adds to `job` the statements that write every row `projector` has pending (which it
  // then forgets), and counts them in job.rows.
  void AddRows(Projector& projector, FlushJob& job);

  // Writes into `table` from now on, by upserts alone (its rows are no longer all the run's).
  void Retarget(const std::string& table) {
    options_.target_table = table;
    keys_known_ = false;
    written_keys_.Clear();
  }
  const std::string& target_table() const { return options_.target_table; }
  // The projector's table as written (bare in an application's table).
  const TableSpec& spec() const { return spec_; }
  // The bytes it keeps across flushes (the keys written).
  size_t kept_bytes() const { return written_keys_.bytes(); }

 private:
  // Adds the statements that remove the rows of the keys a read model deletes (first in
  // the flush: a key deleted and then touched again is written afresh after them).
  void AddRemovals(RemovesRows& removes, FlushJob& job);
  // Adds the steps that write `rows` (given by calling it with a sink) as `spec`'s columns.
  void AddRowSteps(const TableSpec& spec, const std::function<void(RowSink&)>& rows, FlushJob& job);

  Connection& connection_;
  FlushBuilderOptions options_;
  TableSpec spec_;
  bool target_empty_;         // nothing has been written into the target yet
  bool bulk_load_ok_ = true;  // the server allows LOAD DATA LOCAL INFILE
  // Every row of the target is the run's, and written_keys_ holds their keys.
  bool keys_known_ = false;
  WrittenKeys written_keys_;
};

}  // namespace rw
