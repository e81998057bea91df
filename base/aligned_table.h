// AlignedTable: the text tables rewind prints (`status`, `list`, a run's summary, verify's
// report), each column as wide as its longest cell or its heading, so that a long read-model
// name keeps its row in line. Cells are separated by one space; no line ends in spaces.
//
// Thread safety: none (a value built and printed by one thread).
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace rw {

class AlignedTable {
 public:
  enum class Align { kLeft, kRight };
  struct Column {
    std::string heading;
    Align align = Align::kLeft;
  };
  explicit AlignedTable(std::vector<Column> columns) : columns_(std::move(columns)) {}

  // One row: a cell per column (missing cells are empty, extra ones are dropped).
  void Row(std::vector<std::string> cells);
  // A line printed as it is, under the row added last (a description, an example).
  void Note(std::string line);
  // The heading line, then the rows and notes in the order added.
  std::string Text() const;

 private:
  struct Line {
    bool note = false;
    std::vector<std::string> cells;  // a note: its text alone
  };
  std::string Format(const std::vector<std::string>& cells, const std::vector<size_t>& widths) const;

  std::vector<Column> columns_;
  std::vector<Line> lines_;
};

}  // namespace rw
