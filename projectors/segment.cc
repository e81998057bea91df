#include "projectors/segment.h"

#include <fmt/core.h>

#include <charconv>

namespace rw {

namespace {

// A whole number with no sign, no leading '+' or spaces, and no trailing text.
bool Whole(std::string_view text, uint32_t& out) {
  if (text.empty() || text.size() > 9) return false;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc() && ptr == text.data() + text.size();
}

}  // namespace

std::string ParseSegment(std::string_view text, Segment& out) {
  const size_t slash = text.find('/');
  Segment s;
  if (slash == std::string_view::npos || !Whole(text.substr(0, slash), s.index) ||
      !Whole(text.substr(slash + 1), s.count)) {
    return fmt::format("--segment expects I/N (segment I of N, 0 <= I < N), got '{}'", text);
  }
  if (s.count < 1 || s.count > kMaxSegments) {
    return fmt::format("--segment {}: N must be between 1 and {}", text, kMaxSegments);
  }
  if (s.index >= s.count) {
    return fmt::format("--segment {}: segments are numbered from 0, so I must be below N (0 to {})",
                       text, s.count - 1);
  }
  out = s;
  return "";
}

std::string SegmentText(const Segment& s) { return fmt::format("{}/{}", s.index, s.count); }

std::string SegmentSuffix(const Segment& s) {
  return fmt::format("__rewind_seg{}of{}", s.index, s.count);
}

std::optional<Segment> SegmentOfTable(std::string_view live, std::string_view table) {
  constexpr std::string_view kStem = "__rewind_seg";
  if (table.size() <= live.size() + kStem.size() || table.substr(0, live.size()) != live ||
      table.substr(live.size(), kStem.size()) != kStem) {
    return std::nullopt;
  }
  const std::string_view rest = table.substr(live.size() + kStem.size());
  const size_t of = rest.find("of");
  Segment s;
  if (of == std::string_view::npos || !Whole(rest.substr(0, of), s.index) ||
      !Whole(rest.substr(of + 2), s.count) || s.count < 1 || s.index >= s.count ||
      SegmentSuffix(s) != table.substr(live.size())) {
    return std::nullopt;
  }
  return s;
}

}  // namespace rw
