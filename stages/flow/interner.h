// Run-wide dense ids for the texts the read models key on (issue #12): the decoder gives
// every visit's URL, and its visitor (ip, user agent), a small integer, the same for the
// same bytes during the whole run, so that read models key their state on integers and
// touch the strings only to write them.
//
// Each decoding thread gives a batch's distinct texts batch ids first (stages/flow/decoder.cc),
// then Interner turns them into run-wide ids under one lock per batch, copying each text
// the first time the run sees it.
//
// Thread safety: Interner::Resolve may be called from any thread.
#pragma once

#include <cstdint>
#include <mutex>
#include <string_view>
#include <vector>

#include "base/text_table.h"

namespace rw {

class Interner {
 public:
  // Run-wide ids for a batch's distinct texts (their texts and TextTable::HashOf), in order.
  void Resolve(const std::vector<TextTable::Entry>& local, std::vector<uint32_t>& ids);

 private:
  std::mutex mu_;
  TextTable table_;
  StringArena copies_;  // the table's views point here
};

}  // namespace rw
