#include <fmt/core.h>

#include <algorithm>
#include <functional>

#include "pipeline/stress/your_table.h"
#include "projectors/declared.h"

namespace rw {
namespace {

// `text` as a TOML basic string.
std::string TomlString(std::string_view text) {
  std::string out = "\"";
  for (unsigned char ch : text) {
    if (ch == '\\' || ch == '"') {
      out += '\\';
      out += static_cast<char>(ch);
    } else if (ch < 0x20 || ch == 0x7f) {
      out += fmt::format("\\u{:04X}", ch);
    } else {
      out += static_cast<char>(ch);
    }
  }
  return out + "\"";
}

// The rebuilds measured on the user's sample (see your_table.h).
class SampleRebuilds {
 public:
  SampleRebuilds(Harness& h, bool their_time, const std::vector<ModelPlan>& your_models)
      : h_(h), their_time_(their_time), your_models_(your_models) {}

  Status Run(double rows, uint64_t copied, std::string& single_last) {
    Result<std::vector<ModelPlan>> builtin = YourBuiltinModel();
    if (!builtin.ok()) return builtin.status();
    // rewind's pipeline is timed on the first quarter of the sample as well as on all of it
    // (YourPipelineTimed).
    const uint64_t part = copied / 4;
    if (Status s = CreateYourPart(part); !s.ok()) return s;
    return YourRebuilds(*builtin, rows, copied, part, single_last);
  }

 private:
  // The built-in read model of the user's table: events per type (per day with a time
  // column), over the sample's types.
  Result<std::vector<ModelPlan>> YourBuiltinModel() {
    std::string toml = "[[read_model]]\nname = \"your_events_per_type\"\nevents = [";
    for (size_t i = 0; i < your_.types.size(); ++i)
      toml += (i ? ", " : "") + TomlString(your_.types[i].first);
    toml += "]\nkey = [{ column = \"event_type\", field = " +
            TomlString(h_.options().events.type_column) + " }";
    if (their_time_) {
      toml += ", { column = \"day\", field = " + TomlString(h_.options().events.time_column) +
              ", bucket = \"day\" }";
    }
    toml += "]\nvalues = [{ column = \"events\", op = \"count\" }]\n";
    Result<std::vector<ModelPlan>> builtin =
        ParseModels(toml, "your_events_per_type (built in)", kYourSample);
    if (!builtin.ok()) return builtin.status();
    your_.model =
        their_time_ ? fmt::format("events per type per day (the day of `{}`)",
                                  h_.options().events.time_column)
                    : "events per type (no time column `" + h_.options().events.time_column + "`)";
    return builtin;
  }

  // kYourPart, recorded as stress's own and created (again) like kYourSample, holding its
  // first `part` events.
  Status CreateYourPart(uint64_t part) {
    const std::string id = QuoteIdentifier(h_.options().events.id_column);
    if (Status s = h_.Recreate(kYourPart,
                               fmt::format("CREATE TABLE {} LIKE {}", QuoteIdentifier(kYourPart),
                                           QuoteIdentifier(kYourSample)));
        !s.ok()) {
      return s;
    }
    return h_.db().Execute(fmt::format("INSERT INTO {} SELECT * FROM {} ORDER BY {} LIMIT {}",
                                       QuoteIdentifier(kYourPart), QuoteIdentifier(kYourSample), id,
                                       part));
  }

  // The methods on the user's sample (`copied` events; its first quarter `part`), timed;
  // each estimated for the whole table (`rows`) by its time per event: rewind's pipeline with
  // the built-in read model (`builtin`) and with the user's, by hand in batches of 50, and one
  // save per event on the first events only (`single_last` gets the last id it saved).
  Status YourRebuilds(const std::vector<ModelPlan>& builtin, double rows, uint64_t copied,
                      uint64_t part, std::string& single_last) {
    const std::string q = kYourQuestion;
    uint64_t failures = 0;
    if (Status s = YourPipelineTimed("rewind", builtin, rows, copied, part, failures); !s.ok())
      return s;
    if (failures) {
      h_.Problem(fmt::format("your table: the built-in read model recorded {} failures", failures));
    }
    if (!your_models_.empty()) {
      uint64_t theirs_failed = 0;
      if (Status s = YourPipelineTimed("rewind_your_models", your_models_, rows, copied, part,
                                       theirs_failed);
          !s.ok())
        return s;
      h_.Add(q, "rewind_your_models", "failures", static_cast<double>(theirs_failed), "count");
      for (const ModelPlan& p : your_models_) your_.your_models.push_back(p.name);
    }
    if (Status s = YourByHandTimed("batched_50", h_.repeat(), copied, rows,
                                   [&] { return YourByHand("your_by_hand_batched", 50, copied); });
        !s.ok()) {
      return s;
    }
    // One save per event is a commit per event: on the first events only, once.
    const uint64_t single = std::min<uint64_t>(copied, h_.quick() ? 2000 : 10000);
    if (Status s = YourByHandTimed(
            "single", 1, single, rows,
            [&] { return YourByHand("your_by_hand_single", 1, single, &single_last); });
        !s.ok()) {
      return s;
    }
    if (auto sec = h_.Get(q, "single", "seconds"))
      h_.Add(q, "single", "estimated_sample_seconds",
             *sec / static_cast<double>(single) * static_cast<double>(copied), "s");
    return Status::Ok();
  }

  // A method by hand on the user's sample, `c`, run `runs` times over `events` events: its
  // seconds, and its time per event times the table's `rows` as the estimate.
  Status YourByHandTimed(const std::string& c, int runs, uint64_t events, double rows,
                         const std::function<Status()>& run) {
    const std::string q = kYourQuestion;
    std::vector<double> seconds;
    for (int r = 0; r < runs && !h_.stopped(); ++r) {
      const auto t0 = Clock::now();
      if (Status s = run(); !s.ok()) return s.With("your table, " + c);
      seconds.push_back(Ms(t0, Clock::now()) / 1000);
    }
    if (seconds.empty()) return Status::Ok();
    h_.AddSpread(q, c, "seconds", seconds, "s");
    h_.Add(q, c, "events", static_cast<double>(events), "count");
    // Estimated for the whole table by its time per event.
    const double median = Median(seconds), n = static_cast<double>(events);
    h_.Add(q, c, "seconds_per_event", median / n, "s");
    h_.Add(q, c, "estimated_full_seconds", median / n * rows, "s");
    h_.Progress(
        fmt::format("  {:<20} {:>9} events {:8.2f} s; your {} rows: about {:.1f} s (estimate)", c,
                    events, Median(seconds), ReadableNumber(rows),
                    Median(seconds) / static_cast<double>(events) * rows));
    return Status::Ok();
  }

  // rewind's pipeline on the user's sample, `c`, with `plans`: timed on the first quarter
  // (`part` events) as well as on all of it (`copied` events), in each of --repeat rounds;
  // `failed` gets the events the models could not apply on the whole. Its cost per run
  // whatever the events (connections, tables, the swap) makes its time fixed + per event x
  // events (from the median run of each, as every other estimate), and the
  // estimate for the table fixed + per event x `rows`. When the two do not tell the cost per
  // event apart from the noise (a small sample), the whole sample's time per event times the
  // rows stands: an upper bound, as it carries the cost per run.
  Status YourPipelineTimed(const std::string& c, const std::vector<ModelPlan>& plans, double rows,
                           uint64_t copied, uint64_t part, uint64_t& failed) {
    const std::string q = kYourQuestion;
    std::vector<double> whole_s, part_s;
    for (int r = 0; r < h_.repeat() && !h_.stopped(); ++r) {
      for (bool whole : {false, true}) {  // the whole sample last: its tables stay
        uint64_t f = 0;
        const auto t0 = Clock::now();
        if (Status s = YourPipeline(whole ? kYourSample : kYourPart, plans, f); !s.ok())
          return s.With("your table, " + c);
        (whole ? whole_s : part_s).push_back(Ms(t0, Clock::now()) / 1000);
        if (whole) failed = f;
      }
    }
    if (whole_s.empty()) return Status::Ok();
    h_.AddSpread(q, c, "seconds", whole_s, "s");
    h_.Add(q, c, "events", static_cast<double>(copied), "count");
    h_.AddSpread(q, c + "_quarter", "seconds", part_s, "s");
    h_.Add(q, c + "_quarter", "events", static_cast<double>(part), "count");
    // The medians, the statistic every estimate of the report uses (the by-hand ones too).
    const double tw = Median(whole_s), tp = Median(part_s);
    double per = (tw - tp) / static_cast<double>(copied - part),
           fixed = tw - per * static_cast<double>(copied);
    const bool fitted = per > 0;
    if (!fitted) {  // no growth told apart from the noise: the whole's time per event
      per = tw / static_cast<double>(copied), fixed = 0;
    } else if (fixed < 0) {  // faster than linear growth: the marginal cost alone
      fixed = 0;
    }
    h_.Add(q, c, "fitted", fitted ? 1 : 0, "count");
    h_.Add(q, c, "fixed_seconds", fixed, "s");
    h_.Add(q, c, "seconds_per_event", per, "s");
    h_.Add(q, c, "estimated_full_seconds", fixed + per * rows, "s");
    h_.Progress(fmt::format(
        "  {:<20} {:>9} events {:8.2f} s (median; {} events {:.2f} s: {}); your {} rows: about "
        "{:.1f} s (estimate)",
        c, copied, tw, part, tp,
        fitted ? fmt::format("{:.2f} s per run + {:.2f} us per event", fixed, per * 1e6)
               : fmt::format("not told apart from the noise: {:.2f} us per event of the whole, "
                             "an upper bound",
                             per * 1e6),
        ReadableNumber(rows), fixed + per * rows));
    return Status::Ok();
  }

  // The built-in read model by hand, as an application without rewind would: keyset pages of
  // the sample's whole events (id, type, time and the payload, as a framework's replay loads
  // each event whole, though this model reads no payload field), one upsert per event
  // autocommitted (batch 1) or one multi-row upsert per `batch` events, over the first
  // `limit` events; `last` (optional) gets the last id saved.
  Status YourByHand(const std::string& table, int batch, uint64_t limit,
                    std::string* last_id = nullptr) {
    if (Status s = h_.Recreate(
            table, fmt::format("CREATE TABLE {} (event_type VARBINARY(1024) NOT NULL, day "
                               "CHAR(10) NOT NULL, events BIGINT NOT NULL, PRIMARY KEY "
                               "(event_type, day)) ENGINE=InnoDB",
                               QuoteIdentifier(table)));
        !s.ok()) {
      return s;
    }
    const std::string prefix =
        fmt::format("INSERT INTO {} (event_type, day, events) VALUES ", QuoteIdentifier(table));
    const std::string merge = " ON DUPLICATE KEY UPDATE events = events + VALUES(events)";
    const std::string id = QuoteIdentifier(h_.options().events.id_column);
    const std::string select = fmt::format(
        "SELECT {}, {}, {}, {} FROM {}", id, QuoteIdentifier(h_.options().events.type_column),
        their_time_ ? QuoteIdentifier(h_.options().events.time_column) : std::string("NULL"),
        QuoteIdentifier(h_.options().events.payload_column), QuoteIdentifier(kYourSample));
    std::string sql = prefix, after;
    int in_statement = 0;
    uint64_t done = 0;
    const auto save = [&]() -> Status {
      if (in_statement == 0) return Status::Ok();
      sql += merge;
      Status s = h_.db().Execute(sql);
      sql = prefix;
      in_statement = 0;
      return s;
    };
    std::vector<std::pair<std::optional<std::string>, std::string>> rows;  // (type, day)
    while (done < limit && !h_.stopped()) {
      rows.clear();
      const uint64_t page = std::min<uint64_t>(10000, limit - done);
      Status s = h_.db().Stream(
          fmt::format("{}{} ORDER BY {} LIMIT {}", select,
                      after.empty() ? "" : fmt::format(" WHERE {} > {}", id, after), id, page),
          [&](char** v, unsigned long* len) {
            after.assign(v[0], len[0]);
            rows.emplace_back(
                v[1] ? std::optional<std::string>(std::string(v[1], len[1])) : std::nullopt,
                v[2] ? std::string(v[2], std::min<unsigned long>(len[2], 10)) : "");
          });
      if (!s.ok()) return s;
      if (rows.empty()) break;
      done += rows.size();
      for (const auto& [type, day] : rows) {
        if (!type) continue;
        sql += in_statement ? ",(" : "(";
        h_.db().AppendQuoted(sql, *type);
        sql += ", ";
        h_.db().AppendQuoted(sql, day);
        sql += ", 1)";
        if (++in_statement == batch) {
          if (Status st = save(); !st.ok()) return st;
        }
      }
    }
    if (last_id) *last_id = after;
    return save();
  }

  // rewind's pipeline over `table` (the sample or its first quarter), with `plans` (the built-in
  // read model, or the user's
  // --models), into stress's database. An empty build is allowed (a model of the user's may
  // read no event of the sample); `failures` gets the events the models could not apply.
  Status YourPipeline(const std::string& table, const std::vector<ModelPlan>& plans,
                      uint64_t& failures) {
    RunSpec po;
    po.connection = h_.connection();
    po.events = h_.options().events;
    po.events.table = table;
    po.progress = ProgressMode::kQuiet;
    po.allow_empty = true;
    std::vector<std::unique_ptr<Projector>> projectors;
    for (const ModelPlan& plan : plans) {
      projectors.push_back(MakeDeclaredProjector(plan));
      if (Status s = h_.OwnBuildTables(projectors.back()->table().name); !s.ok()) return s;
    }
    ReplaySummary sum = RunRebuild(po, std::move(projectors), h_.stop(), PlanFor(po));
    if (!sum.status.ok()) return sum.status;
    failures = sum.failures;
    return Status::Ok();
  }

  Harness& h_;
  const bool their_time_;
  const std::vector<ModelPlan>& your_models_;
  YourTableContext& your_ = h_.context().your;
};

}  // namespace

Status MeasureYourRebuilds(Harness& h, bool their_time, const std::vector<ModelPlan>& your_models,
                           double rows, uint64_t copied, std::string& single_last) {
  return SampleRebuilds(h, their_time, your_models).Run(rows, copied, single_last);
}

}  // namespace rw
