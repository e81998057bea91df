// Read model `sessions_per_day`: sessions started per day. Order-dependent.
//
// A visitor is (ip, userAgent). Walking events in id order, an event starts a new session
// when its visitor has no earlier event, or when its visitedAt is more than 30 minutes
// after the latest visitedAt seen so far for that visitor. The session counts on the day
// of the event that starts it. Because "latest seen so far" depends on the order of the
// events, this read model proves the pipeline keeps id order.
#include <algorithm>
#include <climits>
#include <string>
#include <vector>
#include <unordered_map>

#include "projectors/counters.h"

namespace rw {
namespace {

constexpr int64_t kSessionGapSeconds = 30 * 60;

class SessionsPerDay final : public PageVisitModel<SessionsPerDay>, public OrderDependent {
 public:
  SessionsPerDay()
      : PageVisitModel(kFieldVisitedAt | kFieldIp | kFieldUserAgent),
        table_{"sessions_per_day",
               {{"date", ColumnType::kDate}, {"count", ColumnType::kUInt64, Merge::kAdd}}} {}

  std::string_view name() const override { return table_.name; }
  const TableSpec& table() const override { return table_; }
  const OrderDependent* order_dependent() const override { return this; }

  void Fold(const EventRecords& records, const EventRecord& e) {
    // The visitor is (ip, userAgent) compared byte for byte: the decoder's run-wide id of
    // the pair (PageFields::visitor), so no two pairs share one whatever bytes they hold.
    const uint32_t visitor = records.value(e, page().visitor()).text_id - 1;
    if (visitor >= last_seen_.size()) {
      last_seen_.resize(std::max<size_t>(size_t{visitor} + 1, last_seen_.size() * 2), kNever);
    }
    const CivilTime& at = records.value(e, page().at()).time;
    const int64_t t = at.epoch_seconds();
    int64_t& last = last_seen_[visitor];
    if (last == kNever || t - last > kSessionGapSeconds) ++started_per_day_[at.days];
    if (last == kNever || t > last) last = t;
  }

  size_t pending_rows() const override { return started_per_day_.size(); }
  // A day's count: a node of the map (its pair, a hash and a link, a bucket).
  size_t state_bytes() const override { return started_per_day_.size() * 48 + started_per_day_.bucket_count() * 8; }
  // What its order needs across flushes: every visitor's last visit.
  size_t kept_bytes() const override { return last_seen_.capacity() * sizeof(int64_t); }

  void Flush(RowSink& sink) override {
    std::vector<std::pair<int32_t, int64_t>> rows(started_per_day_.begin(),
                                                  started_per_day_.end());
    std::sort(rows.begin(), rows.end());
    for (const auto& [day, count] : rows) {
      sink.Date(day);
      sink.Int(count);
      sink.EndRow();
    }
    started_per_day_.clear();
  }

 private:
  const TableSpec table_;
  static constexpr int64_t kNever = INT64_MIN;
  std::vector<int64_t> last_seen_;  // by visitor id: the latest visitedAt seen, or kNever
  std::unordered_map<int32_t, int64_t> started_per_day_;
};

}  // namespace

std::unique_ptr<Projector> MakeSessionsPerDay() { return std::make_unique<SessionsPerDay>(); }

}  // namespace rw
