// A RowSink for tests: renders a flush as text rows, "v1|v2|...", NULL as "NULL".
#pragma once

#include <fmt/core.h>

#include <string>
#include <vector>

#include "base/civil_time.h"
#include "projectors/projector.h"

namespace rw::testing {

class TextSink final : public RowSink {
 public:
  // `quote_text`: text values as 'text', told apart from numbers and NULL.
  explicit TextSink(bool quote_text = false) : quote_text_(quote_text) {}
  void Int(int64_t v) override { Add(std::to_string(v)); }
  void Date(int32_t days) override {
    char buf[10];
    Add(std::string(buf, FormatDate(days, buf)));
  }
  void DateTimeMicros(int64_t us) override {
    char buf[26];
    Add(std::string(buf, FormatDateTimeMicros(us, buf)));
  }
  void Text(std::string_view b) override { Add(quote_text_ ? "'" + std::string(b) + "'" : std::string(b)); }
  void Number(std::string_view literal) override { Add(std::string(literal)); }
  void Double(double v) override { Add(fmt::format("{}", v)); }
  void Null() override { Add("NULL"); }
  void EndRow() override {
    rows.push_back(current_);
    current_.clear();
  }
  std::vector<std::string> rows;

 private:
  void Add(const std::string& v) { current_ += (current_.empty() ? "" : "|") + v; }
  const bool quote_text_;
  std::string current_;
};

}  // namespace rw::testing
