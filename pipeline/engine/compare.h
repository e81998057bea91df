// Compare two tables of one read model's shape, on its key and value columns: what verify
// reports and what stress checks its rebuilds with. Stateless; thread-compatible (each call
// uses the connection it is given).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "projectors/projector.h"
#include "stages/db/connection.h"

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

}  // namespace rw
