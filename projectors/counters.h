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
#include "projectors/page_visit.h"
#include "projectors/projector.h"

namespace rw {

// A compiled read model of the blog: it reads the page class's fields it names (PageFields)
// and folds each usable record with Fold(); a record it cannot use counts as failed (the
// decoder recorded why, once for the event).
template <typename Derived>
class PageVisitModel : public Projector {
 public:
  explicit PageVisitModel(uint32_t fields) : wanted_(fields) {}
  void Bind(EventCatalog& catalog) override { page_.Bind(catalog, wanted_); }
  bool reads_class(uint16_t c) const override { return page_.reads_class(c); }
  bool Usable(const EventRecord& e) const override { return page_.Usable(e); }
  Folded Apply(const EventRecords& records, std::vector<EventFailure>& /*failures*/) override {
    Folded folded;
    auto& self = static_cast<Derived&>(*this);
    for (const EventRecord& e : records.events) {
      if (e.event_class != page_.page_class()) continue;
      ++folded.events;
      if (!page_.Usable(e)) {
        ++folded.unusable;
        continue;
      }
      self.Fold(records, e);
    }
    return folded;
  }

 protected:
  const PageFields& page() const { return page_; }

 private:
  const uint32_t wanted_;
  PageFields page_;
};

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
class TimeBucketCounter final : public PageVisitModel<TimeBucketCounter<Bucket>> {
 public:
  TimeBucketCounter(std::string name, std::string column, BucketType type)
      : PageVisitModel<TimeBucketCounter<Bucket>>(kFieldVisitedAt), name_(std::move(name)), type_(type) {
    table_ = TableSpec{name_,
                       {{column, type == BucketType::kDate ? ColumnType::kDate : ColumnType::kDateTime},
                        {"count", ColumnType::kUInt64, Merge::kAdd}}};
  }

  std::string_view name() const override { return name_; }
  const TableSpec& table() const override { return table_; }

  // Neighbouring events mostly share a bucket (a month, a day): the last bucket's counter
  // is kept at hand, and the map is searched only when the bucket changes (a new key may
  // move the map's slots, and it only ever comes with a new bucket).
  // A DATE bucket is a function of the day alone: on the same day as the last event,
  // not even the bucket is computed (a month's or a year's costs calendar arithmetic).
  void Fold(const EventRecords& records, const EventRecord& e) {
    const CivilTime& t = records.value(e, this->page().at()).time;
    if (type_ == BucketType::kDate && last_ != nullptr && t.days == last_days_) {
      ++*last_;
      return;
    }
    const int64_t bucket = Bucket{}(t);
    if (last_ == nullptr || bucket != last_bucket_) {
      last_bucket_ = bucket;
      last_ = &counts_[bucket];
    }
    last_days_ = t.days;
    ++*last_;
  }
  size_t pending_rows() const override { return counts_.size(); }
  size_t state_bytes() const override { return counts_.bytes(); }
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
// run-wide dense ids, PageFields::url) and stored byte for byte.
template <typename DayBucket>
class UrlDayCounter final : public PageVisitModel<UrlDayCounter<DayBucket>> {
 public:
  explicit UrlDayCounter(std::string name)
      : PageVisitModel<UrlDayCounter<DayBucket>>(kFieldVisitedAt | kFieldUrl), name_(std::move(name)) {
    // The key (uri, date): URLs can be thousands of bytes, so the writer stores the key
    // as (date, SHA-256 of uri) (stages/db/table_schema.h), as the blog's own table does.
    table_ = TableSpec{name_,
                       {{"uri", ColumnType::kText},
                        {"date", ColumnType::kDate},
                        {"count", ColumnType::kUInt64, Merge::kAdd}}};
  }

  std::string_view name() const override { return name_; }
  const TableSpec& table() const override { return table_; }

  void Fold(const EventRecords& records, const EventRecord& e) {
    const FieldValue& url = records.value(e, this->page().url());
    const uint32_t id = url.text_id - 1;
    if (id >= known_.size()) {
      known_.resize(std::max<size_t>(size_t{id} + 1, known_.size() * 2), 0);
      urls_.resize(known_.size());
    }
    if (!known_[id]) {  // the first visit of this URL: its text is kept for the writes
      urls_[id] = std::string(url.text());
      url_bytes_ += urls_[id].capacity();
      known_[id] = 1;
    }
    const CivilTime& t = records.value(e, this->page().at()).time;
    ++counts_[(uint64_t{ToOrdered(int32_t{DayBucket{}(t)})} << 32) | id];  // day, then URL
  }
  size_t pending_rows() const override { return counts_.size(); }
  size_t state_bytes() const override { return counts_.bytes(); }
  // The URLs seen, kept for the writes (bounded by distinct URLs).
  size_t kept_bytes() const override {
    return url_bytes_ + urls_.capacity() * sizeof(std::string) + known_.capacity();
  }
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
  size_t url_bytes_ = 0;           // their bytes
};

}  // namespace rw
