#include <fmt/core.h>

#include "pipeline/stress/questions.h"
#include "pipeline/stress/cases.h"

namespace rw {
namespace {

class AggregateLoad : public Question {
 public:
  using Question::Question;

  // Question 1: aggregate load time vs stream length. Each length loaded `loads` times in
  // each of --repeat rounds: a round's p50 gives the spread; p95/p99 pool every load, and
  // are given only from at least 100 loads.
  Status Run() override {
    const auto& lengths = stress_cases::kStreamLengths;
    const int loads = h_.quick() ? 15 : 100;
    h_.Progress(
        fmt::format("question 1: aggregate load time vs stream length ({} rounds of {} loads each)",
                    h_.repeat(), loads));
    OrderStreams streams;
    for (int64_t n : lengths) streams.emplace_back(fmt::format("q1-{}", n), n, n / 2);
    if (Status s = h_.LoadStreams(h_.store().tables().events, streams); !s.ok()) return s;
    for (int64_t n : lengths) {
      const std::string stream = fmt::format("q1-{}", n);
      std::vector<double> total, fetch, decode, fold, round_p50;
      for (int r = 0; r < h_.repeat() && !h_.stopped(); ++r) {
        std::vector<double> round;
        for (int i = 0; i <= loads && !h_.stopped(); ++i) {
          LoadTimes t;
          Result<order::State> st = LoadOrder(h_.store(), stream, false, &t);
          if (!st.ok()) return st.status();
          if (i == 0) {  // a warm-up load, and a check of what it folds to
            if (!(*st == order::Folded(stream, n, n / 2))) {
              return Status::Internal(fmt::format("stream {} folded wrong", stream));
            }
            continue;
          }
          round.push_back(t.total);
          total.push_back(t.total);
          fetch.push_back(t.fetch);
          decode.push_back(t.decode);
          fold.push_back(t.fold);
        }
        round_p50.push_back(Percentile(round, 50));
      }
      const std::string c = std::to_string(n);
      h_.AddSpread("aggregate_load", c, "p50", round_p50, "ms");
      if (total.size() >= 100) {  // fewer: the p99 is the slowest load or next to it
        h_.Add("aggregate_load", c, "p95", Percentile(total, 95), "ms");
        h_.Add("aggregate_load", c, "p99", Percentile(total, 99), "ms");
      }
      h_.Add("aggregate_load", c, "loads", static_cast<double>(total.size()), "count");
      h_.Add("aggregate_load", c, "fetch_p50", Percentile(fetch, 50), "ms");
      h_.Add("aggregate_load", c, "decode_p50", Percentile(decode, 50), "ms");
      h_.Add("aggregate_load", c, "fold_p50", Percentile(fold, 50), "ms");
      h_.Progress(fmt::format(
          "  {:>6} events: p50 {:.2f} ms (fetch {:.2f}, decode {:.2f}, fold {:.3f}){}", n,
          Median(round_p50), Percentile(fetch, 50), Percentile(decode, 50), Percentile(fold, 50),
          total.size() >= 100
              ? fmt::format(", p99 {:.2f} ms of {} loads", Percentile(total, 99), total.size())
              : ""));
    }
    return Status::Ok();
  }

 private:
};

}  // namespace

std::unique_ptr<Question> MakeAggregateLoad(Harness& h) {
  return std::make_unique<AggregateLoad>(h);
}

}  // namespace rw
