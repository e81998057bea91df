// Dense ids for the texts the read models key on (issue #12): the decoder gives every
// visit's URL, and its visitor (ip, user agent), a small integer, the same for the same
// bytes during the whole run, so that read models key their state on integers and touch the
// strings only to write them.
//
// TextTable maps a text, or a pair of texts, to dense ids 0, 1, 2... in the order they are
// first seen; it keeps views, not copies. Each decoding thread interns a batch into its own
// TextTable (one hash per event), then Interner turns the batch's distinct texts into
// run-wide ids under one lock per batch, copying each text the first time the run sees it.
//
// Thread safety: TextTable none; Interner::Resolve may be called from any thread.
#pragma once

#include <cstdint>
#include <mutex>
#include <string_view>
#include <vector>

#include "stages/batch.h"

namespace rw {

class TextTable {
 public:
  // A pair's hash (b is empty for a single text).
  static uint64_t HashOf(std::string_view a, std::string_view b);

  // The id of (a, b), added as the next id when new: as views (the caller keeps the bytes),
  // or as copies into `copies`.
  uint32_t Intern(std::string_view a, std::string_view b, uint64_t hash, StringArena* copies = nullptr);
  // Forgets every text, keeping the memory for the next batch.
  void Clear();

  size_t size() const { return entries_.size(); }
  struct Entry {
    std::string_view a, b;
    uint64_t hash;
  };
  const Entry& entry(uint32_t id) const { return entries_[id]; }

 private:
  void Grow();
  std::vector<uint32_t> slots_;  // id + 1; 0 is empty
  std::vector<Entry> entries_;
};

class Interner {
 public:
  // Run-wide ids for the texts of `local` (a batch's table), in its id order.
  void Resolve(const TextTable& local, std::vector<uint32_t>& ids);
  size_t size() const;

 private:
  mutable std::mutex mu_;
  TextTable table_;
  StringArena copies_;  // the table's views point here
};

}  // namespace rw
