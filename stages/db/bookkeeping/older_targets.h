// The build targets older rewinds' checkpoint rows name: what the layout-3 migration records
// as owned, and what Recorded() answers from on a layout before it. Private to the
// bookkeeping files (stages/db/checkpoint_store.h is their one public header).
//
// Thread safety: a constant.
#pragma once

namespace rw::checkpoint_store {

// The build targets older rewinds' checkpoint rows name, that exist: the tables an older
// rewind made and kept no other record of (layouts 1 and 2). `{}` is the target column.
inline constexpr const char* kOlderBuildTargets =
    "FROM rewind_checkpoints k JOIN information_schema.TABLES t ON t.TABLE_SCHEMA = DATABASE() "
    "AND BINARY t.TABLE_NAME = BINARY k.{0} WHERE k.{0} IS NOT NULL AND k.{0} <> k.live_table";

}  // namespace rw::checkpoint_store
