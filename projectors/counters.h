// Building blocks for counting read models: a count per time bucket, and a count per
// (url, day bucket). The per-read-model files supply only the name, the table and the
// bucket function.
//
// Thread safety: none (see projector.h).
#pragma once

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "projectors/bucket_counts.h"
#include "base/flat_map.h"
#include "projectors/projector.h"

namespace rw {

enum class BucketType { kDate, kDateTime };

// The distance between neighbouring buckets of `Bucket`: its kStride when it has one.
template <typename Bucket>
constexpr int64_t BucketStride() {
  if constexpr (requires { Bucket::kStride; }) {
    return Bucket::kStride;
  } else {
    return 1;
  }
}

// Counts events per time bucket. `Bucket` maps a CivilTime to an int64 key: days since
// 1970-01-01 for kDate, epoch seconds for kDateTime; its kStride, when it has one, is the
// distance between neighbouring buckets (60 for minutes), which keeps their counts dense.
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
    // is kept at hand, and the map is searched only when the bucket changes (a new key may
    // move the map's slots, and it only ever comes with a new bucket).
    // A DATE bucket is a function of the day alone: on the same day as the last event,
    // not even the bucket is computed (a month's or a year's costs calendar arithmetic).
    const bool by_day = type_ == BucketType::kDate;
    for (const PageVisit& v : visits) {
      if (by_day && last_ != nullptr && v.visited_at.days == last_days_) {
        ++*last_;
        continue;
      }
      const int64_t bucket = Bucket{}(v.visited_at);
      if (last_ == nullptr || bucket != last_bucket_) {
        last_bucket_ = bucket;
        last_ = &counts_[bucket];
      }
      last_days_ = v.visited_at.days;
      ++*last_;
    }
  }
  size_t pending_rows() const override { return counts_.size(); }
  void Flush(RowSink& sink) override {
    for (const auto& [bucket, count] : counts_.TakeSorted()) {  // key order: cheapest for a clustered index
      if (type_ == BucketType::kDate) {
        sink.Date(static_cast<int32_t>(bucket));
      } else {
        sink.DateTimeMicros(bucket * 1'000'000);
      }
      sink.Int(count);
      sink.EndRow();
    }
    last_ = nullptr;
  }

 private:
  const std::string name_;
  const BucketType type_;
  int64_t last_bucket_ = 0;
  int32_t last_days_ = 0;    // the day of the last event counted in *last_
  int64_t* last_ = nullptr;  // counts_[last_bucket_], or null
  TableSpec table_;
  BucketCounts counts_{BucketStride<Bucket>()};
};

// Counts events per (url, day bucket). URLs are compared byte for byte (by the decoder's
// dense ids, PageVisit::url_id) and stored byte for byte.
template <typename DayBucket>
class UrlDayCounter final : public Projector {
 public:
  explicit UrlDayCounter(std::string name) : name_(std::move(name)) {
    // The key (uri, date): URLs can be thousands of bytes, so the writer stores the key
    // as (date, SHA-256 of uri) (stages/db/table_schema.h), as the blog's own table does.
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
      const uint32_t id = v.url_id;
      if (id >= known_.size()) {
        known_.resize(std::max<size_t>(id + 1, known_.size() * 2), 0);
        urls_.resize(known_.size());
      }
      if (!known_[id]) {  // the first visit of this URL: its text is kept for the writes
        urls_[id] = std::string(v.url);
        known_[id] = 1;
      }
      ++counts_[(uint64_t{ToOrdered(int32_t{DayBucket{}(v.visited_at)})} << 32) | id];  // day, then URL
    }
  }
  size_t pending_rows() const override { return counts_.size(); }
  void Flush(RowSink& sink) override {
    // Day order: the stored key starts with the date.
    for (const auto& [key, count] : counts_.TakeSorted()) {
      sink.Text(urls_[static_cast<uint32_t>(key)]);
      sink.Date(FromOrdered<int32_t>(static_cast<uint32_t>(key >> 32)));
      sink.Int(count);
      sink.EndRow();
    }
  }

 private:
  const std::string name_;
  TableSpec table_;
  FlatMap<int64_t> counts_;        // (day, url id) -> visits
  std::vector<std::string> urls_;  // by url id: the URLs seen (bounded by distinct URLs)
  std::vector<uint8_t> known_;     // by url id: whether urls_ holds it
};

}  // namespace rw
