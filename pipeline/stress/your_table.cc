#include "pipeline/stress/your_table.h"

#include <fmt/core.h>

#include <algorithm>
#include <map>

#include "config/models.h"
#include "pipeline/stress/questions.h"
#include "projectors/declared.h"
#include "stages/db/row_writer.h"
#include "stages/db/table_admin.h"
#include "stages/flow/reader.h"

namespace rw {
namespace {

// Above this many rows (information_schema's estimate) the user's table is not COUNT(*)ed:
// the estimate stands (a full count of a large table is a long scan).
constexpr double kExactCountUpTo = 2'000'000;

// A number a query returned (0 when NULL).
double NumberOf(const std::optional<std::string>& v) { return v ? std::stod(*v) : 0.0; }

// With --events-table: the user's own event table, read only.
class YourTable : public Question {
 public:
  using Question::Question;

  // The user's table: its size, a sample of its first events copied into stress's database,
  // the rebuild measured on it (rewind's pipeline; by hand, one save per event and batches of
  // 50), the full table's time estimated, and the checks.
  Status Run() override {
    const std::string table = h_.options().events.table;
    const std::string shown = h_.options().connection.database + "." + table;
    your_.table = shown;
    h_.Progress(fmt::format("your table {}: read only", shown));
    double rows = 0;
    if (Status s = YourTableSize(table, shown, rows); !s.ok()) return s;
    uint64_t copied = 0;
    std::string last;
    if (Status s = YourSample(table, rows, copied, last); !s.ok()) return s;
    if (Status s = YourSampleTypes(shown, copied); !s.ok()) return s;
    std::string single_last;
    if (Status s = MeasureYourRebuilds(h_, their_time_, your_models_, rows, copied, single_last);
        !s.ok())
      return s;
    // The checks: each read model's events per type equal a GROUP BY over the user's table
    // restricted to the sampled ids; the copy equals those rows; the user's rows and
    // database are as they were.
    if (Status s = CheckYourTypeCounts(table, shown, last, single_last); !s.ok()) return s;
    if (Status s = CheckYourRowsAndTables(table, shown, last, copied); !s.ok()) return s;
    your_.checked = h_.context().consistent;
    return Status::Ok();
  }

  // The user's event table, checked before stress creates anything: it is read through a
  // connection of its own whose transactions are READ ONLY (the server refuses any write
  // there), by plain consistent SELECTs (no locking read, no DDL, nothing written there).
  Status Check() override {
    if (!h_.options().events.type_path.empty()) {
      return Status::InvalidInput(
          "--type-path: rewind stress measures tables whose event type is a column; give it "
          "with --type-column");
    }
    Result<std::unique_ptr<Connection>> c = Connection::Open(h_.options().connection);
    if (!c.ok())
      return c.status().With(
          fmt::format("your database '{}' (--database)", h_.options().connection.database));
    theirs_ = std::move(*c);
    if (Status s = theirs_->Execute("SET SESSION TRANSACTION READ ONLY"); !s.ok()) return s;
    EventTableOptions events = h_.options().events;
    if (Status s = CheckEventTable(*theirs_, events, false); !s.ok()) return s.With("--events-table");
    if (!events.id_form.integer()) {
      return Status::InvalidInput(fmt::format(
          "--events-table: the ids of '{}' are {}s, and rewind stress measures tables whose ids are integers "
          "(rewind replay reads it as it is)",
          events.table, IdFormName(events.id_form)));
    }
    Result<Rows> cols = theirs_->Query(fmt::format(
        "SELECT COLUMN_NAME, COLUMN_TYPE FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = "
        "DATABASE() AND TABLE_NAME = {} ORDER BY ORDINAL_POSITION",
        theirs_->Quote(h_.options().events.table)));
    if (!cols.ok()) return cols.status();
    for (const auto& r : cols->rows) {
      their_columns_.emplace_back(r[0].value_or(""), r[1].value_or(""));
      if (their_columns_.back().first == h_.options().events.id_column)
        id_at_ = their_columns_.size() - 1;
      if (their_columns_.back().first == h_.options().events.payload_column)
        payload_at_ = their_columns_.size() - 1;
      if (their_columns_.back().first == h_.options().events.time_column) their_time_ = true;
    }
    if (!h_.options().your_models_file.empty()) {
      Result<std::vector<ModelPlan>> plans =
          LoadModels(h_.options().your_models_file, h_.options().events.table);
      if (!plans.ok()) return plans.status();
      std::vector<std::string> fields;
      for (const ModelPlan& p : *plans) {
        for (const KeyPlan& k : p.keys) {
          if (k.source.column) fields.push_back(k.source.name);
        }
        for (const ValuePlan& v : p.values) {
          if (v.source.column) fields.push_back(v.source.name);
        }
      }
      if (Status s = CheckReadColumns(*theirs_, h_.options().events, fields); !s.ok())
        return s.With("--models");
      your_models_ = std::move(*plans);
    }
    Result<Rows> tables = TheirTables();
    if (!tables.ok()) return tables.status();
    their_tables_ = std::move(tables->rows);
    return Status::Ok();
  }

 private:
  // The tables of the user's database (to show stress created none there).
  Result<Rows> TheirTables() {
    return theirs_->Query(
        "SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() ORDER "
        "BY TABLE_NAME");
  }

  // The columns of the user's table as a select list.
  std::string TheirColumnList() const {
    std::string list;
    for (const auto& [name, type] : their_columns_)
      list += (list.empty() ? "" : ", ") + QuoteIdentifier(name);
    return list;
  }

  // The rows of `table` (on `c`) with id <= `last`: their count and the sum of a 60-bit hash
  // of each row's columns, as one text. The user's table and its copy give the same.
  Result<std::string> Fingerprint(Connection& c, const std::string& table,
                                  const std::string& last) {
    std::string row = "CONCAT_WS(0x1f";
    for (const auto& [name, type] : their_columns_) {
      row += fmt::format(", IFNULL(CAST({} AS BINARY), 0x00)", QuoteIdentifier(name));
    }
    row += ")";
    Result<std::optional<std::string>> v = c.QueryValue(fmt::format(
        "SELECT CONCAT(COUNT(*), '/', IFNULL(SUM(CAST(CONV(SUBSTRING(MD5({}), 1, 15), 16, 10) AS "
        "UNSIGNED)), 0)) FROM {} WHERE {} <= {}",
        row, QuoteIdentifier(table), QuoteIdentifier(h_.options().events.id_column), last));
    if (!v.ok()) return v.status();
    return v->value_or("");
  }

  // Events per type (exact bytes) of `table` on `c` with id <= `last`, from SQL.
  Result<std::map<std::string, int64_t>> TypeCounts(Connection& c, const std::string& table,
                                                    const std::string& last) {
    Result<Rows> r = c.Query(fmt::format(
        "SELECT CAST({0} AS BINARY), COUNT(*) FROM {1} WHERE {2} <= {3} AND {0} IS NOT NULL "
        "GROUP BY 1",
        QuoteIdentifier(h_.options().events.type_column), QuoteIdentifier(table),
        QuoteIdentifier(h_.options().events.id_column), last));
    if (!r.ok()) return r.status();
    std::map<std::string, int64_t> out;
    for (const auto& row : r->rows) out[row[0].value_or("")] = std::stoll(row[1].value_or("0"));
    return out;
  }

  // Events per type as a read model holds them: its (event_type, events) rows summed by
  // exact bytes.
  Result<std::map<std::string, int64_t>> ModelTypeCounts(const std::string& table) {
    std::map<std::string, int64_t> out;
    Status s = h_.db().Stream(
        fmt::format("SELECT CAST(event_type AS BINARY), events FROM {}", QuoteIdentifier(table)),
        [&](char** v, unsigned long* len) {
          out[std::string(v[0] ? v[0] : "", v[0] ? len[0] : 0)] += std::strtoll(v[1], nullptr, 10);
        });
    if (!s.ok()) return s;
    return out;
  }

  // The size of the user's `table` (`shown` as database.table): information_schema's
  // estimate, MIN/MAX of the id, and an exact count when the estimate is small enough for
  // COUNT(*) to be quick. `rows` gets the count, or the estimate.
  Status YourTableSize(const std::string& table, const std::string& shown, double& rows) {
    const std::string q = kYourQuestion;
    Result<Rows> info = theirs_->Query(fmt::format(
        "SELECT TABLE_ROWS, DATA_LENGTH, INDEX_LENGTH FROM information_schema.TABLES WHERE "
        "TABLE_SCHEMA = DATABASE() AND TABLE_NAME = {}",
        theirs_->Quote(table)));
    if (!info.ok()) return info.status();
    const double estimate = info->rows.empty() ? 0 : NumberOf(info->rows[0][0]);
    h_.Add(q, "table", "rows_information_schema_estimate", estimate, "count");
    h_.Add(q, "table", "data_bytes", info->rows.empty() ? 0 : NumberOf(info->rows[0][1]), "bytes");
    h_.Add(q, "table", "index_bytes", info->rows.empty() ? 0 : NumberOf(info->rows[0][2]), "bytes");
    const std::string id = QuoteIdentifier(h_.options().events.id_column);
    Result<Rows> span = theirs_->Query(
        fmt::format("SELECT MIN({0}), MAX({0}) FROM {1}", id, QuoteIdentifier(table)));
    if (!span.ok()) return span.status();
    if (span->rows.empty() || !span->rows[0][0])
      return Status::InvalidInput(
          fmt::format("your event table {} is empty: nothing to measure", shown));
    your_.min_id = *span->rows[0][0];
    your_.max_id = span->rows[0][1].value_or("");
    rows = estimate;
    if (estimate <= kExactCountUpTo) {
      Result<std::optional<std::string>> n =
          theirs_->QueryValue(fmt::format("SELECT COUNT(*) FROM {}", QuoteIdentifier(table)));
      if (!n.ok()) return n.status();
      rows = NumberOf(*n);
      h_.Add(q, "table", "rows_exact", rows, "count");
      your_.rows_how = "exact COUNT(*)";
    } else {
      your_.rows_how = fmt::format(
          "information_schema's estimate (InnoDB's sampled statistics: often 10-50 % off; not "
          "COUNT(*)ed above {} rows)",
          ReadableNumber(kExactCountUpTo));
    }
    return Status::Ok();
  }

  // The sample: the first N events of the user's `table` by id, copied into kYourSample, and
  // their figures. `copied` gets how many, `last` the last id copied; `rows` (the table's)
  // becomes at least `copied`.
  Status YourSample(const std::string& table, double& rows, uint64_t& copied, std::string& last) {
    const std::string q = kYourQuestion;
    const uint64_t want = h_.options().sample ? h_.options().sample : (h_.quick() ? 20000 : 200000);
    if (Status s = CreateYourSample(); !s.ok()) return s;
    const std::string list = TheirColumnList();
    std::vector<double> payload_bytes;
    const auto c0 = Clock::now();
    if (Status s = CopyYourSample(table, list, want, copied, last, payload_bytes); !s.ok())
      return s;
    if (h_.stopped()) return Status::Error(Status::Code::kCancelled, "stopped");
    const double copy_s = Ms(c0, Clock::now()) / 1000;
    your_.last_id = last;
    h_.Add(q, "sample", "events", static_cast<double>(copied), "count");
    h_.Add(q, "sample", "copy_seconds", copy_s, "s");
    double sum = 0;
    for (double b : payload_bytes) sum += b;
    h_.Add(q, "sample", "payload_avg_bytes", sum / static_cast<double>(copied), "bytes");
    h_.Add(q, "sample", "payload_p95_bytes", Percentile(payload_bytes, 95), "bytes");
    h_.Add(q, "sample", "payload_max_bytes", Percentile(payload_bytes, 100), "bytes");
    rows = std::max(rows, static_cast<double>(copied));
    h_.Add(q, "table", "rows_used_for_estimates", rows, "count");
    h_.Progress(fmt::format("  {} rows ({}); copied the first {} events (ids {} to {}) in {:.2f} s",
                            ReadableNumber(rows), your_.rows_how, copied, your_.min_id, last,
                            copy_s));
    (void)h_.db().Execute("ANALYZE TABLE " + QuoteIdentifier(kYourSample));
    return Status::Ok();
  }

  // kYourSample, recorded as stress's own and created (again) with the columns of the user's
  // table, its id the primary key.
  Status CreateYourSample() {
    std::string create = "CREATE TABLE " + QuoteIdentifier(kYourSample) + " (";
    for (const auto& [name, type] : their_columns_) {
      create +=
          fmt::format("{} {} {},", QuoteIdentifier(name), type,
                      name == h_.options().events.id_column ? "NOT NULL PRIMARY KEY" : "NULL");
    }
    create.back() = ')';
    create += " ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin";
    return h_.Recreate(kYourSample, create);
  }

  // Copies up to `want` first events of the user's `table` (its columns `list`) into
  // kYourSample in keyset pages (ids may have holes and steps), each page one plain SELECT on
  // its own (no transaction held open on the user's table). `copied` and `last` get how many
  // and the last id; `payload_bytes` each payload's size.
  Status CopyYourSample(const std::string& table, const std::string& list, uint64_t want,
                        uint64_t& copied, std::string& last, std::vector<double>& payload_bytes) {
    const std::string id = QuoteIdentifier(h_.options().events.id_column);
    while (copied < want && !h_.stopped()) {
      const uint64_t page = std::min<uint64_t>(10000, want - copied);
      TsvBuilder tsv;
      uint64_t got = 0;
      Status s = theirs_->Stream(
          fmt::format("SELECT {} FROM {}{} ORDER BY {} LIMIT {}", list, QuoteIdentifier(table),
                      last.empty() ? "" : fmt::format(" WHERE {} > {}", id, last), id, page),
          [&](char** v, unsigned long* len) {
            for (size_t i = 0; i < their_columns_.size(); ++i) {
              if (v[i] == nullptr) {
                tsv.Null();
              } else {
                tsv.Text(std::string_view(v[i], len[i]));
              }
            }
            tsv.EndRow();
            last.assign(v[id_at_], len[id_at_]);
            payload_bytes.push_back(v[payload_at_] ? static_cast<double>(len[payload_at_]) : 0);
            ++got;
          });
      if (!s.ok()) return s.With("reading your table");
      if (got == 0) break;
      if (Status s = h_.db().LoadData(LoadDataInto(kYourSample, list), tsv.Take()); !s.ok())
        return s.With("copying the sample");
      copied += got;
      if (got < page) break;
    }
    return Status::Ok();
  }

  // The sample's event types (from the copy, in stress's database), most first, of the
  // `copied` events; none is refused (`shown`: the user's table).
  Status YourSampleTypes(const std::string& shown, uint64_t copied) {
    const std::string q = kYourQuestion;
    Result<Rows> types = h_.db().Query(fmt::format(
        "SELECT CAST({0} AS BINARY), COUNT(*) FROM {1} WHERE {0} IS NOT NULL GROUP BY 1 ORDER "
        "BY 2 DESC, 1",
        QuoteIdentifier(h_.options().events.type_column), QuoteIdentifier(kYourSample)));
    if (!types.ok()) return types.status();
    for (const auto& r : types->rows) {
      your_.types.emplace_back(r[0].value_or(""), NumberOf(r[1]));
      std::string c = r[0].value_or("");
      std::replace(c.begin(), c.end(), ',', ';');
      if (your_.types.size() <= 10)
        h_.Add(q, "type:" + c, "share", NumberOf(r[1]) / static_cast<double>(copied) * 100, "%");
    }
    if (your_.types.empty())
      return Status::InvalidInput(fmt::format(
          "the first events of {} have no type (column '{}' is NULL): nothing to rebuild", shown,
          h_.options().events.type_column));
    return Status::Ok();
  }

  // The check of each read model's events per type (the built-in one by rewind and by hand
  // in batches, up to id `last`; one save per event, up to `single_last`) against a GROUP
  // BY over the user's `table` (`shown`): each difference is a problem.
  Status CheckYourTypeCounts(const std::string& table, const std::string& shown,
                             const std::string& last, const std::string& single_last) {
    Result<std::map<std::string, int64_t>> want_types = TypeCounts(*theirs_, table, last);
    if (!want_types.ok()) return want_types.status();
    for (const char* t : {"your_events_per_type", "your_by_hand_batched"}) {
      Result<std::map<std::string, int64_t>> got = ModelTypeCounts(t);
      if (!got.ok()) return got.status();
      if (*got != *want_types) {
        h_.Problem(fmt::format(
            "your table: {}'s events per type differ from a GROUP BY over {} (ids up to {})", t,
            shown, last));
      }
    }
    if (!single_last.empty()) {
      Result<std::map<std::string, int64_t>> want_single = TypeCounts(*theirs_, table, single_last);
      Result<std::map<std::string, int64_t>> got = ModelTypeCounts("your_by_hand_single");
      if (!want_single.ok()) return want_single.status();
      if (!got.ok()) return got.status();
      if (*got != *want_single) {
        h_.Problem(
            fmt::format("your table: your_by_hand_single's events per type differ from a GROUP BY "
                        "over {} (ids up to {})",
                        shown, single_last));
      }
    }
    return Status::Ok();
  }

  // The check that the sample (`copied` rows up to id `last`) equals those rows of the user's
  // `table` (`shown`), and that the user's database holds the tables it held at the start:
  // each difference is a problem.
  Status CheckYourRowsAndTables(const std::string& table, const std::string& shown,
                                const std::string& last, uint64_t copied) {
    Result<std::string> theirs_after = Fingerprint(*theirs_, table, last);
    Result<std::string> copy = Fingerprint(h_.db(), kYourSample, last);
    if (!theirs_after.ok()) return theirs_after.status();
    if (!copy.ok()) return copy.status();
    if (*copy != *theirs_after ||
        *copy != fmt::format("{}/", copied) + copy->substr(copy->find('/') + 1)) {
      h_.Problem(fmt::format(
          "your table: the sample differs from the first {} rows of {} (fingerprints {} and {})",
          copied, shown, *copy, *theirs_after));
    }
    Result<Rows> tables = TheirTables();
    if (!tables.ok()) return tables.status();
    if (tables->rows != their_tables_) {
      h_.Problem(fmt::format("your table: the tables of database {} changed during the run",
                             h_.options().connection.database));
    }
    return Status::Ok();
  }

  // --events-table: the user's database (read only), its table's columns (name, type), where
  // the id and the payload are among them, whether it has the time column, the user's read
  // models (--models), the tables of that database at the start, and what the report says.
  std::unique_ptr<Connection> theirs_;
  std::vector<std::pair<std::string, std::string>> their_columns_;
  size_t id_at_ = 0, payload_at_ = 0;
  bool their_time_ = false;
  std::vector<ModelPlan> your_models_;
  std::vector<std::vector<std::optional<std::string>>> their_tables_;
  YourTableContext& your_ = h_.context().your;
};

}  // namespace

std::unique_ptr<Question> MakeYourTable(Harness& h) { return std::make_unique<YourTable>(h); }

}  // namespace rw
