#include "stages/db/row_writer.h"

#include <fmt/core.h>
#include <fmt/format.h>

#include <cstring>
#include <iterator>
#include <utility>

#include "projectors/civil_time.h"

namespace rw {

std::string LoadDataInto(std::string_view table, std::string_view column_list) {
  return fmt::format("INTO TABLE {} CHARACTER SET utf8mb4 FIELDS TERMINATED BY '\\t' ESCAPED BY '\\\\' "
                     "LINES TERMINATED BY '\\n' ({})",
                     QuoteIdentifier(table), column_list);
}

namespace {

// 'YYYY-MM-DD' / 'YYYY-MM-DD HH:MM:SS', quoted as SQL literals or bare (LOAD DATA).
void AppendDate(std::string& out, int32_t days, bool quoted) {
  char buf[12];
  buf[0] = buf[11] = '\'';
  FormatDate(days, buf + 1);
  out.append(quoted ? buf : buf + 1, quoted ? 12 : 10);
}

void AppendDateTime(std::string& out, int64_t epoch_seconds, bool quoted) {
  char buf[21];
  buf[0] = buf[20] = '\'';
  FormatDateTime(epoch_seconds, buf + 1);
  out.append(quoted ? buf : buf + 1, quoted ? 21 : 19);
}

void AppendInt(std::string& out, int64_t value) {
  const fmt::format_int digits(value);
  out.append(digits.data(), digits.size());
}

}  // namespace

UpsertBuilder::UpsertBuilder(Connection& connection, const TableSpec& spec,
                             std::string target_table, size_t statement_bytes)
    : connection_(connection), statement_bytes_(statement_bytes), hash_(spec) {
  prefix_ = fmt::format("INSERT INTO {} ({}) VALUES ", QuoteIdentifier(target_table),
                        table_schema::StoredColumnList(spec));
  suffix_ = table_schema::MergeClause(spec);
}

void UpsertBuilder::Separator() {
  if (!row_open_) {
    if (current_.empty()) {
      current_.reserve(statement_bytes_ + 4096);
      current_ = prefix_;
    } else {
      current_ += ',';
    }
    current_ += '(';
    row_open_ = true;
  } else {
    current_ += ',';
  }
}

void UpsertBuilder::Hash(std::string_view text) {
  if (!hash_.Next(text)) return;
  current_ += ",X'";
  static constexpr char kHex[] = "0123456789ABCDEF";
  for (unsigned char c : hash_.digest()) {
    current_ += kHex[c >> 4];
    current_ += kHex[c & 15];
  }
  current_ += '\'';
}

void UpsertBuilder::Int(int64_t value) {
  Separator();
  AppendInt(current_, value);
  Hash();
}

void UpsertBuilder::Date(int32_t days) {
  Separator();
  AppendDate(current_, days, /*quoted=*/true);
  Hash();
}

void UpsertBuilder::DateTime(int64_t epoch_seconds) {
  Separator();
  AppendDateTime(current_, epoch_seconds, /*quoted=*/true);
  Hash();
}

void UpsertBuilder::Text(std::string_view bytes) {
  Separator();
  connection_.AppendQuoted(current_, bytes);
  Hash(bytes);
}

void UpsertBuilder::Number(std::string_view literal) {
  Separator();
  current_.append(literal);
  Hash();
}

void UpsertBuilder::Double(double value) {
  Separator();
  fmt::format_to(std::back_inserter(current_), "{}", value);
  Hash();
}

void UpsertBuilder::Null() {
  Separator();
  current_ += "NULL";
  Hash();
}

void UpsertBuilder::EndRow() {
  current_ += ')';
  row_open_ = false;
  hash_.EndRow();
  ++rows_;
  if (current_.size() >= statement_bytes_) Close();
}

void UpsertBuilder::Close() {
  if (current_.empty()) return;
  current_ += suffix_;
  done_.push_back(std::move(current_));
  current_.clear();
}

std::vector<std::string> UpsertBuilder::Take() {
  Close();
  return std::move(done_);
}

void TsvBuilder::Separator() {
  if (row_open_) data_ += '\t';
  row_open_ = true;
}

void TsvBuilder::Hash(std::string_view text) {
  if (hash_.Next(text)) {
    data_ += '\t';
    Escaped(hash_.digest());
  }
}

void TsvBuilder::Int(int64_t value) {
  Separator();
  AppendInt(data_, value);
  Hash();
}

void TsvBuilder::Date(int32_t days) {
  Separator();
  AppendDate(data_, days, /*quoted=*/false);
  Hash();
}

void TsvBuilder::DateTime(int64_t epoch_seconds) {
  Separator();
  AppendDateTime(data_, epoch_seconds, /*quoted=*/false);
  Hash();
}

void TsvBuilder::Number(std::string_view literal) {
  Separator();
  data_.append(literal);
  Hash();
}

void TsvBuilder::Double(double value) {
  Separator();
  fmt::format_to(std::back_inserter(data_), "{}", value);
  Hash();
}

void TsvBuilder::Null() {
  Separator();
  data_ += "\\N";
  Hash();
}

void TsvBuilder::Text(std::string_view bytes) {
  Separator();
  Escaped(bytes);
  Hash(bytes);
}

namespace {
// Whether any of 8 bytes is one LOAD DATA must escape ('\\', '\t', '\n', NUL): the
// classic test for a zero byte, on the word XORed with each special byte repeated.
bool HasSpecial(uint64_t w) {
  constexpr uint64_t kOnes = 0x0101010101010101ull, kHighs = 0x8080808080808080ull;
  auto has_zero = [](uint64_t v) { return ((v - kOnes) & ~v & kHighs) != 0; };
  return has_zero(w) || has_zero(w ^ (kOnes * '\\')) || has_zero(w ^ (kOnes * '\t')) ||
         has_zero(w ^ (kOnes * '\n'));
}
}  // namespace

void TsvBuilder::Escaped(std::string_view bytes) {
  // Runs without a special byte are appended whole; only the specials are escaped. Words of
  // 8 bytes without one are passed over at once.
  size_t i = 0;
  while (i + 8 <= bytes.size()) {
    uint64_t w;
    std::memcpy(&w, bytes.data() + i, 8);
    if (HasSpecial(w)) break;
    i += 8;
  }
  if (i == bytes.size()) {
    data_.append(bytes);
    return;
  }
  size_t run = 0;
  for (; i < bytes.size(); ++i) {
    char escaped;
    switch (bytes[i]) {
      case '\\': escaped = '\\'; break;
      case '\t': escaped = 't'; break;
      case '\n': escaped = 'n'; break;
      case '\0': escaped = '0'; break;
      default: continue;
    }
    data_.append(bytes.data() + run, i - run);
    data_ += '\\';
    data_ += escaped;
    run = i + 1;
  }
  data_.append(bytes.data() + run, bytes.size() - run);
}

void TsvBuilder::EndRow() {
  data_ += '\n';
  row_open_ = false;
  hash_.EndRow();
  ++rows_;
  if (data_.size() >= kChunkBytes) {
    done_bytes_ += data_.size();
    done_.push_back(std::move(data_));
    data_ = std::string();
    data_.reserve(kChunkBytes + kChunkBytes / 8);
  }
}

std::vector<std::string> TsvBuilder::Take() {
  if (!data_.empty()) done_.push_back(std::exchange(data_, std::string()));
  done_bytes_ = 0;
  return std::exchange(done_, {});
}

}  // namespace rw
