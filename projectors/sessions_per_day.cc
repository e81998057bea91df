// Read model `sessions_per_day`: sessions started per day. Order-dependent.
//
// A visitor is (ip, userAgent). Walking events in id order, an event starts a new session
// when its visitor has no earlier event, or when its visitedAt is more than 30 minutes
// after the latest visitedAt seen so far for that visitor. The session counts on the day
// of the event that starts it. Because "latest seen so far" depends on the order of the
// events, this read model proves the pipeline keeps id order.
#include <algorithm>
#include <string>
#include <unordered_map>

#include "projectors/projector.h"

namespace rw {
namespace {

constexpr int64_t kSessionGapSeconds = 30 * 60;

struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

class SessionsPerDay final : public Projector {
 public:
  SessionsPerDay()
      : table_{"sessions_per_day",
               {{"date", ColumnType::kDate}, {"count", ColumnType::kUInt64, Merge::kAdd}}} {}

  std::string_view name() const override { return table_.name; }
  const TableSpec& table() const override { return table_; }
  uint32_t fields() const override { return kFieldVisitedAt | kFieldIp | kFieldUserAgent; }
  bool order_dependent() const override { return true; }

  void Apply(std::span<const PageVisit> visits) override {
    for (const PageVisit& v : visits) {
      // The visitor key is length-prefixed so that no (ip, userAgent) pair can collide
      // with another, whatever bytes they contain.
      key_.clear();
      const uint32_t ip_len = static_cast<uint32_t>(v.ip.size());
      key_.append(reinterpret_cast<const char*>(&ip_len), sizeof ip_len);
      key_.append(v.ip);
      key_.append(v.user_agent);
      const int64_t t = v.visited_at.epoch_seconds();
      auto it = last_seen_.find(std::string_view(key_));
      if (it == last_seen_.end()) {
        last_seen_.emplace(key_, t);
        ++started_per_day_[v.visited_at.days];
      } else {
        if (t - it->second > kSessionGapSeconds) ++started_per_day_[v.visited_at.days];
        it->second = std::max(it->second, t);
      }
    }
  }

  size_t pending_rows() const override { return started_per_day_.size(); }

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
  std::string key_;  // scratch, reused to avoid an allocation per event
  std::unordered_map<std::string, int64_t, StringHash, std::equal_to<>> last_seen_;
  std::unordered_map<int32_t, int64_t> started_per_day_;
};

}  // namespace

std::unique_ptr<Projector> MakeSessionsPerDay() { return std::make_unique<SessionsPerDay>(); }

}  // namespace rw
