// Building blocks for counting read models: a count per time bucket, and a count per
// (url, day bucket). The per-read-model files supply only the name, the table and the
// bucket function.
//
// Thread safety: none (see projector.h).
#pragma once

#include <algorithm>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "projectors/projector.h"

namespace rw {

enum class BucketType { kDate, kDateTime };

// Counts events per time bucket. `Bucket` maps a CivilTime to an int64 key: days since
// 1970-01-01 for kDate, epoch seconds for kDateTime.
template <typename Bucket>
class TimeBucketCounter final : public Projector {
 public:
  TimeBucketCounter(std::string name, std::string column, BucketType type)
      : name_(std::move(name)), type_(type) {
    table_ = TableSpec{name_,
                       {{column, type == BucketType::kDate ? ColumnType::kDate : ColumnType::kDateTime},
                        {"count", ColumnType::kUInt64, Merge::kAdd}}};
  }

  std::string_view name() const override { return name_; }
  const TableSpec& table() const override { return table_; }
  uint32_t fields() const override { return kFieldVisitedAt; }

  void Apply(std::span<const PageVisit> visits) override {
    // Neighbouring events mostly share a bucket (a month, a day): the last bucket's counter
    // is kept at hand, and the map is searched only when the bucket changes (node
    // addresses are stable in std::unordered_map).
    for (const PageVisit& v : visits) {
      const int64_t key = Bucket{}(v.visited_at);
      if (last_ == nullptr || key != last_key_) {
        last_key_ = key;
        last_ = &counts_[key];
      }
      ++*last_;
    }
  }
  size_t pending_rows() const override { return counts_.size(); }
  void Flush(RowSink& sink) override {
    std::vector<std::pair<int64_t, int64_t>> rows(counts_.begin(), counts_.end());
    std::sort(rows.begin(), rows.end());  // key order: cheapest for a clustered index
    for (const auto& [key, count] : rows) {
      if (type_ == BucketType::kDate) {
        sink.Date(static_cast<int32_t>(key));
      } else {
        sink.DateTime(key);
      }
      sink.Int(count);
      sink.EndRow();
    }
    counts_.clear();
    last_ = nullptr;
  }

 private:
  const std::string name_;
  const BucketType type_;
  int64_t last_key_ = 0;
  int64_t* last_ = nullptr;  // counts_[last_key_], or null
  TableSpec table_;
  std::unordered_map<int64_t, int64_t> counts_;
};

// Counts events per (url, day bucket). URLs are compared and stored byte for byte.
template <typename DayBucket>
class UrlDayCounter final : public Projector {
 public:
  explicit UrlDayCounter(std::string name) : name_(std::move(name)) {
    // The key (uri, date): URLs can be thousands of bytes, so the writer stores the key
    // as (date, SHA-256 of uri) (stages/table_schema.h), as the blog's own table does.
    table_ = TableSpec{name_,
                       {{"uri", ColumnType::kText},
                        {"date", ColumnType::kDate},
                        {"count", ColumnType::kUInt64, Merge::kAdd}}};
  }

  std::string_view name() const override { return name_; }
  const TableSpec& table() const override { return table_; }
  uint32_t fields() const override { return kFieldVisitedAt | kFieldUrl; }

  void Apply(std::span<const PageVisit> visits) override {
    for (const PageVisit& v : visits) {
      const int32_t day = DayBucket{}(v.visited_at);
      auto it = counts_.find(KeyView{v.url, day});
      if (it == counts_.end()) {
        counts_.emplace(Key{std::string(v.url), day}, 1);
      } else {
        ++it->second;
      }
    }
  }
  size_t pending_rows() const override { return counts_.size(); }
  void Flush(RowSink& sink) override {
    std::vector<std::pair<const Key*, int64_t>> rows;
    rows.reserve(counts_.size());
    for (const auto& [key, count] : counts_) rows.emplace_back(&key, count);
    // Day order: the stored key starts with the date.
    std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.first->day < b.first->day; });
    for (const auto& [key, count] : rows) {
      sink.Text(key->url);
      sink.Date(key->day);
      sink.Int(count);
      sink.EndRow();
    }
    counts_.clear();
  }

 private:
  struct Key {
    std::string url;
    int32_t day;
  };
  struct KeyView {
    std::string_view url;
    int32_t day;
  };
  struct Hash {
    using is_transparent = void;
    size_t operator()(const KeyView& k) const {
      return std::hash<std::string_view>{}(k.url) ^ (static_cast<size_t>(k.day) * 0x9E3779B97F4A7C15ull);
    }
    size_t operator()(const Key& k) const { return (*this)(KeyView{k.url, k.day}); }
  };
  struct Equal {
    using is_transparent = void;
    static KeyView View(const Key& k) { return {k.url, k.day}; }
    static KeyView View(const KeyView& k) { return k; }
    template <typename A, typename B>
    bool operator()(const A& a, const B& b) const {
      const KeyView x = View(a), y = View(b);
      return x.day == y.day && x.url == y.url;
    }
  };

  const std::string name_;
  TableSpec table_;
  std::unordered_map<Key, int64_t, Hash, Equal> counts_;
};

}  // namespace rw
