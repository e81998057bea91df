#include "stages/flow/flush_builder.h"

#include "stages/db/table_schema.h"

namespace rw {

FlushBuilder::FlushBuilder(Connection& connection, const TableSpec& table, const FlushBuilderOptions& options)
    : connection_(connection), options_(options), spec_(table), target_empty_(options.target_starts_empty) {
  spec_.bare = options.application_table;
  if (!options.bulk_load) {
    bulk_load_ok_ = false;
  } else if (target_empty_) {
    auto allowed = connection_.QueryValue("SELECT @@local_infile");
    bulk_load_ok_ = allowed.ok() && *allowed && **allowed == "1";
  }
  keys_known_ = target_empty_ && bulk_load_ok_ && options.keep_keys;
}

void FlushBuilder::AddRows(Projector& projector, FlushJob& job) {
  if (RunsStatements* statements = projector.runs_statements()) {
    // The handlers' statements, in id order, into the table written now.
    const std::string table = QuoteIdentifier(options_.target_table);
    for (BoundStatements& group : statements->TakeStatements()) {
      const std::string sql = WithTable(group.sql, table);
      job.rows += group.ids.size();
      // One bulk execution is one packet: at most statement_bytes of values each.
      auto shared = std::make_shared<const BoundStatements>(std::move(group));
      const BoundStatements& b = *shared;
      for (size_t first = 0; first < b.ids.size();) {
        size_t count = 0, bytes = 0;
        while (first + count < b.ids.size()) {
          size_t row = 0;
          for (size_t p = 0; p < b.width; ++p) row += b.values[(first + count) * b.width + p].size + 10;
          if (count > 0 && bytes + row > options_.statement_bytes) break;
          bytes += row;
          ++count;
        }
        job.steps.push_back(FlushJob::Step{sql, {}, false, shared, first, count});
        first += count;
      }
    }
    target_empty_ = false;
    return;
  }
  if (RemovesRows* removes = projector.removes_rows()) AddRemovals(*removes, job);
  if (!spec_.bare) {
    AddRowSteps(spec_, [&](RowSink& sink) { projector.Flush(sink); }, job);
  } else {
    // The application's table: without the ids it has no column for, and each group of
    // rows naming only the columns it writes (row_writer.h).
    ByWrittenColumns groups(spec_);
    WithoutEventIds bare(spec_, groups);
    projector.Flush(bare);
    for (const ByWrittenColumns::Group& group : groups.Take()) {
      AddRowSteps(group.spec, [&](RowSink& sink) { group.Replay(sink); }, job);
    }
  }
  target_empty_ = false;
}

void FlushBuilder::AddRemovals(RemovesRows& removes, FlushJob& job) {
  UpsertBuilder deletes(connection_, table_schema::KeysOnly(spec_), options_.target_table, options_.statement_bytes,
                        UpsertBuilder::Statement::kDelete);
  removes.FlushRemoved(deletes);
  job.rows += deletes.rows();
  for (std::string& sql : deletes.Take()) job.steps.push_back(FlushJob::Step{std::move(sql), {}, false});
}

void FlushBuilder::AddRowSteps(const TableSpec& spec, const std::function<void(RowSink&)>& rows, FlushJob& job) {
  std::vector<FlushJob::Step>& steps = job.steps;
  auto load_step = [&](TsvBuilder& tsv) {
    return FlushJob::Step{LoadDataInto(options_.target_table, table_schema::StoredColumnList(spec)), tsv.Take(), true};
  };
  if (keys_known_) {
    // Every row of the target is the run's: the keys it never wrote go by LOAD DATA (all of
    // them in the first flush), the others as upserts.
    TsvBuilder tsv(spec);
    UpsertBuilder upserts(connection_, spec, options_.target_table, options_.statement_bytes);
    SplitByKey split(table_schema::KeyColumns(spec).size(), written_keys_, tsv, upserts);
    rows(split);
    job.rows += tsv.rows() + upserts.rows();
    if (tsv.rows() > 0) steps.push_back(load_step(tsv));
    for (std::string& sql : upserts.Take()) steps.push_back(FlushJob::Step{std::move(sql), {}, false});
    written_keys_.Add(split.fresh_keys());
    if (written_keys_.bytes() > options_.keys_bytes) {  // upserts from now on: memory stays bounded
      keys_known_ = false;
      written_keys_.Clear();
    }
  } else if (target_empty_ && bulk_load_ok_) {
    TsvBuilder tsv(spec);
    rows(tsv);
    job.rows += tsv.rows();
    if (tsv.rows() > 0) steps.push_back(load_step(tsv));
  } else {
    UpsertBuilder builder(connection_, spec, options_.target_table, options_.statement_bytes);
    rows(builder);
    job.rows += builder.rows();
    for (std::string& sql : builder.Take()) steps.push_back(FlushJob::Step{std::move(sql), {}, false});
  }
}

}  // namespace rw
