#include "stages/db/row_writer.h"

#include <fmt/core.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <iterator>
#include <utility>

#include "base/civil_time.h"

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

void AppendDateTime(std::string& out, int64_t epoch_micros, bool quoted) {
  char buf[28];
  const int n = FormatDateTimeMicros(epoch_micros, buf + 1);
  buf[0] = buf[n + 1] = '\'';
  out.append(quoted ? buf : buf + 1, static_cast<size_t>(quoted ? n + 2 : n));
}

void AppendInt(std::string& out, int64_t value) {
  const fmt::format_int digits(value);
  out.append(digits.data(), digits.size());
}

}  // namespace

UpsertBuilder::UpsertBuilder(Connection& connection, const TableSpec& spec,
                             std::string target_table, size_t statement_bytes, Statement statement,
                             std::string_view select)
    : connection_(connection), statement_bytes_(statement_bytes), hash_(spec) {
  if (statement == Statement::kDelete || statement == Statement::kSelect) {
    prefix_ = fmt::format("{} FROM {} WHERE ({}) IN (",
                          statement == Statement::kDelete ? std::string("DELETE") : fmt::format("SELECT {}", select),
                          QuoteIdentifier(target_table), table_schema::StoredColumnList(spec));
    suffix_ = ")";
    return;
  }
  prefix_ = fmt::format("INSERT INTO {} ({}) VALUES ", QuoteIdentifier(target_table),
                        table_schema::StoredColumnList(spec));
  suffix_ = table_schema::MergeClause(spec);
}

void UpsertBuilder::Separator() {
  if (!row_open_) {
    if (current_.empty()) {
      current_.reserve(statement_bytes_ + 4096);
      current_ = prefix_;
      row_start_ = current_.size();
    } else {
      row_start_ = current_.size();
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

void UpsertBuilder::DateTimeMicros(int64_t epoch_micros) {
  Separator();
  AppendDateTime(current_, epoch_micros, /*quoted=*/true);
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
  if (current_.size() < statement_bytes_) return;
  // A statement stays under statement_bytes_ (the server's max_allowed_packet, halved): the
  // row that would take it over starts the next one, unless it is the statement's only row.
  if (row_start_ > prefix_.size()) {
    std::string row = current_.substr(row_start_ + 1);  // without its ','
    current_.resize(row_start_);
    Close();
    current_ = prefix_ + row;
  }
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

void TsvBuilder::DateTimeMicros(int64_t epoch_micros) {
  Separator();
  AppendDateTime(data_, epoch_micros, /*quoted=*/false);
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

bool WrittenKeys::MaybeContains(uint64_t hash) const {
  if (slots_.empty()) return false;
  const uint64_t want = Slot(hash), mask = slots_.size() - 1;
  for (uint64_t i = want & mask;; i = (i + 1) & mask) {
    if (slots_[i] == want) return true;
    if (slots_[i] == 0) return false;
  }
}

void WrittenKeys::Insert(uint64_t slot) {
  const uint64_t mask = slots_.size() - 1;
  for (uint64_t i = slot & mask;; i = (i + 1) & mask) {
    if (slots_[i] == slot) return;
    if (slots_[i] == 0) {
      slots_[i] = slot;
      ++size_;
      return;
    }
  }
}

void WrittenKeys::Add(const std::vector<uint64_t>& hashes) {
  if ((size_ + hashes.size()) * 2 > slots_.size()) {
    size_t n = 1024;
    while (n < (size_ + hashes.size()) * 2) n *= 2;
    std::vector<uint64_t> old = std::exchange(slots_, std::vector<uint64_t>(n, 0));
    size_ = 0;
    for (uint64_t s : old) {
      if (s != 0) Insert(s);
    }
  }
  for (uint64_t h : hashes) Insert(Slot(h));
}

bool SplitByKey::Key(Kind kind, std::string_view bytes) {
  if (to_ != nullptr) return false;
  key_ += static_cast<char>(kind);
  const uint32_t n = static_cast<uint32_t>(bytes.size());
  key_.append(reinterpret_cast<const char*>(&n), sizeof n);
  key_.append(bytes);
  if (++column_ == key_columns_) Route();
  return true;
}

void SplitByKey::Route() {
  const uint64_t hash = std::hash<std::string_view>()(key_);
  const bool written = written_.MaybeContains(hash);
  to_ = written ? &existing_ : &fresh_;
  if (!written) fresh_keys_.push_back(hash);
  // The key's values, as they came, to the chosen sink.
  std::string_view rest(key_);
  while (!rest.empty()) {
    const Kind kind = static_cast<Kind>(rest[0]);
    uint32_t n;
    std::memcpy(&n, rest.data() + 1, sizeof n);
    const std::string_view v = rest.substr(1 + sizeof n, n);
    rest.remove_prefix(1 + sizeof n + n);
    int64_t i = 0;
    double d = 0;
    int32_t days = 0;
    switch (kind) {
      case Kind::kInt: std::memcpy(&i, v.data(), sizeof i); to_->Int(i); break;
      case Kind::kDate: std::memcpy(&days, v.data(), sizeof days); to_->Date(days); break;
      case Kind::kDateTime: std::memcpy(&i, v.data(), sizeof i); to_->DateTimeMicros(i); break;
      case Kind::kText: to_->Text(v); break;
      case Kind::kNumber: to_->Number(v); break;
      case Kind::kDouble: std::memcpy(&d, v.data(), sizeof d); to_->Double(d); break;
      case Kind::kNull: to_->Null(); break;
    }
  }
}

namespace {
template <typename T>
std::string_view BytesOf(const T& v) {
  return std::string_view(reinterpret_cast<const char*>(&v), sizeof v);
}
}  // namespace

void SplitByKey::Int(int64_t value) {
  if (!Key(Kind::kInt, BytesOf(value))) to_->Int(value);
}
void SplitByKey::Date(int32_t days) {
  if (!Key(Kind::kDate, BytesOf(days))) to_->Date(days);
}
void SplitByKey::DateTimeMicros(int64_t epoch_micros) {
  if (!Key(Kind::kDateTime, BytesOf(epoch_micros))) to_->DateTimeMicros(epoch_micros);
}
void SplitByKey::Text(std::string_view bytes) {
  if (!Key(Kind::kText, bytes)) to_->Text(bytes);
}
void SplitByKey::Number(std::string_view literal) {
  if (!Key(Kind::kNumber, literal)) to_->Number(literal);
}
void SplitByKey::Double(double value) {
  if (!Key(Kind::kDouble, BytesOf(value))) to_->Double(value);
}
void SplitByKey::Null() {
  if (!Key(Kind::kNull, {})) to_->Null();
}

void SplitByKey::EndRow() {
  if (to_ == nullptr) Route();  // a row of fewer values than the key (none is made so)
  to_->EndRow();
  to_ = nullptr;
  column_ = 0;
  key_.clear();
}

WithoutEventIds::WithoutEventIds(const TableSpec& spec, RowSink& to) : to_(to) {
  for (const Column& c : spec.columns) {
    skip_.push_back(false);
    if (KeepsEventId(c.merge)) skip_.push_back(true);
  }
}

void ByWrittenColumns::EndRow() {
  std::vector<bool> mask(row_.size());
  for (size_t i = 0; i < row_.size(); ++i) {
    mask[i] = (i < spec_.columns.size() && spec_.columns[i].key()) || row_[i].kind != Kind::kNull;
  }
  size_t g = 0;
  while (g < masks_.size() && masks_[g] != mask) ++g;
  if (g == masks_.size()) {
    masks_.push_back(mask);
    Group group;
    group.spec.name = spec_.name;
    group.spec.bare = spec_.bare;
    for (size_t i = 0; i < mask.size() && i < spec_.columns.size(); ++i) {
      if (mask[i]) group.spec.columns.push_back(spec_.columns[i]);
    }
    groups_.push_back(std::move(group));
  }
  Group& group = groups_[g];
  for (size_t i = 0; i < row_.size(); ++i) {
    if (mask[i]) group.values.push_back(std::move(row_[i]));
  }
  ++group.rows;
  row_.clear();
}

std::vector<ByWrittenColumns::Group> ByWrittenColumns::Take() {
  masks_.clear();
  return std::move(groups_);
}

void ByWrittenColumns::Group::Replay(RowSink& to) const {
  const size_t width = spec.columns.size();
  for (size_t i = 0; i < values.size(); ++i) {
    const Value& v = values[i];
    switch (v.kind) {
      case Kind::kInt: to.Int(v.i); break;
      case Kind::kDate: to.Date(static_cast<int32_t>(v.i)); break;
      case Kind::kDateTime: to.DateTimeMicros(v.i); break;
      case Kind::kText: to.Text(v.text); break;
      case Kind::kNumber: to.Number(v.text); break;
      case Kind::kDouble: to.Double(v.d); break;
      case Kind::kNull: to.Null(); break;
    }
    if ((i + 1) % width == 0) to.EndRow();
  }
}

}  // namespace rw
