// Verify: rebuild into scratch tables (<table>__rewind_verify), never swap, compare with
// the live tables on the read model's own columns, drop the scratch tables. The scratch
// tables belong to the run that holds the verify lock of their read model: a second
// verify refuses and touches nothing; one killed leaves them behind, and the next verify
// run drops them (and their checkpoint rows) when their lock is free.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "config/options.h"
#include "pipeline/summary.h"
#include "projectors/projector.h"
#include "stages/connection.h"

namespace rw {

// A query whose one row fingerprints `table` (of the shape `spec`, storage columns left
// out): rows, total count, and two order-independent sums of per-row hashes. Equal rows
// mean equal tables but for a collision in both sums.
std::string FingerprintQuery(const TableSpec& spec, const std::string& table);

// How a rebuilt table differs from the live one.
struct TableDiff {
  std::string table;
  uint64_t live_rows = 0, rebuilt_rows = 0;
  int64_t live_total = 0, rebuilt_total = 0;  // sums of the first count or sum column
  uint64_t only_live = 0;      // keys only in the live table
  uint64_t only_rebuilt = 0;   // keys only in the rebuilt one
  uint64_t count_differs = 0;  // keys in both, with another value
  std::vector<std::string> examples;  // the first few differing keys, readable
  bool identical() const { return only_live == 0 && only_rebuilt == 0 && count_differs == 0; }
};

// Compares two tables of the shape `spec` on its key and value columns (storage columns
// are left out). A missing `live` table counts as empty.
Result<TableDiff> CompareTables(Connection& c, const TableSpec& spec, const std::string& live,
                                const std::string& rebuilt);

struct VerifySummary {
  ReplaySummary replay;  // the scratch rebuild
  std::vector<TableDiff> tables;
  bool identical() const {
    for (const auto& t : tables) {
      if (!t.identical()) return false;
    }
    return replay.status.ok();
  }
};

VerifySummary Verify(const ReplayOptions& options,
                     std::vector<std::unique_ptr<Projector>> projectors,
                     const std::atomic<bool>& stop);

}  // namespace rw
