#include "base/aligned_table.h"

#include <algorithm>

namespace rw {
namespace {

// Display width: UTF-8 code points (a name may hold any character), not bytes.
size_t Width(const std::string& s) {
  return static_cast<size_t>(
      std::count_if(s.begin(), s.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; }));
}

}  // namespace

void AlignedTable::Row(std::vector<std::string> cells) {
  cells.resize(columns_.size());
  lines_.push_back(Line{false, std::move(cells)});
}

void AlignedTable::Note(std::string line) { lines_.push_back(Line{true, {std::move(line)}}); }

std::string AlignedTable::Format(const std::vector<std::string>& cells,
                                 const std::vector<size_t>& widths) const {
  std::string out;
  for (size_t i = 0; i < columns_.size(); ++i) {
    if (i > 0) out += ' ';
    const std::string pad(widths[i] - Width(cells[i]), ' ');
    out += columns_[i].align == Align::kRight ? pad + cells[i] : cells[i] + pad;
  }
  out.erase(out.find_last_not_of(' ') + 1);
  return out + "\n";
}

std::string AlignedTable::Text() const {
  std::vector<size_t> widths;
  std::vector<std::string> headings;
  for (const Column& c : columns_) {
    widths.push_back(Width(c.heading));
    headings.push_back(c.heading);
  }
  for (const Line& l : lines_) {
    if (l.note) continue;
    for (size_t i = 0; i < widths.size(); ++i) widths[i] = std::max(widths[i], Width(l.cells[i]));
  }
  std::string out = Format(headings, widths);
  for (const Line& l : lines_) out += l.note ? l.cells[0] + "\n" : Format(l.cells, widths);
  return out;
}

}  // namespace rw
