// Two building blocks for keeping many texts cheaply: StringArena (append-only storage
// whose views stay valid) and TextTable (a text, or a pair of texts, to dense ids 0, 1,
// 2... in the order first seen: open addressing in one array, no node per text). The
// decoder interns URLs and visitors with them (stages/flow/interner.h); a declared read model
// keys its rows with them.
//
// Thread safety: none.
#pragma once

#include <cstdint>
#include <cstring>
#include <memory>
#include <string_view>
#include <vector>

namespace rw {

// Append-only storage for strings that must outlive a parse (unescaped JSON strings).
// Pointers handed out stay valid until the arena is cleared or destroyed.
class StringArena {
 public:
  void Clear() {
    blocks_.clear();
    large_.clear();
    large_bytes_ = 0;
    current_ = used_ = 0;
  }
  // Forgets every string but keeps the blocks, to be filled again (views handed out before
  // are invalid after it).
  void Reuse() {
    large_.clear();
    large_bytes_ = 0;
    current_ = used_ = 0;
  }
  // The bytes it holds.
  size_t bytes() const { return blocks_.size() * kBlockSize + large_bytes_; }
  std::string_view Copy(std::string_view s) {
    // Nothing to copy; and an empty view may have no data, which memcpy must not be given.
    if (s.empty()) return s;
    if (s.size() > kBlockSize / 4) {
      large_.emplace_back(new char[s.size()]);
      large_bytes_ += s.size();
      std::memcpy(large_.back().get(), s.data(), s.size());
      return {large_.back().get(), s.size()};
    }
    if (blocks_.empty()) {
      blocks_.emplace_back(new char[kBlockSize]);
    } else if (used_ + s.size() > kBlockSize) {
      if (++current_ == blocks_.size()) blocks_.emplace_back(new char[kBlockSize]);
      used_ = 0;
    }
    char* p = blocks_[current_].get() + used_;
    std::memcpy(p, s.data(), s.size());
    used_ += s.size();
    return {p, s.size()};
  }

 private:
  static constexpr size_t kBlockSize = 64 * 1024;
  std::vector<std::unique_ptr<char[]>> blocks_;
  std::vector<std::unique_ptr<char[]>> large_;
  size_t large_bytes_ = 0;
  size_t current_ = 0;  // the block being filled
  size_t used_ = 0;     // bytes of it
};

class TextTable {
 public:
  // A pair's hash (b is empty for a single text).
  static uint64_t HashOf(std::string_view a, std::string_view b);
  // The same from the hashes of its texts (HashOf(a, {}) and HashOf(b, {})), for a caller
  // that already has them: HashOfPair(HashOf(a, {}), a.size(), b, HashOf(b, {})) == HashOf(a, b).
  static uint64_t HashOfPair(uint64_t hash_a, size_t size_a, std::string_view b, uint64_t hash_b);

  // The id of (a, b), added as the next id when new: as views (the caller keeps the bytes),
  // or as copies into `copies`.
  uint32_t Intern(std::string_view a, std::string_view b, uint64_t hash, StringArena* copies = nullptr);
  // The id of (a, b), or -1 when it has none.
  int64_t Find(std::string_view a, std::string_view b, uint64_t hash) const;
  // Forgets every text, keeping the memory for the next batch.
  void Clear();

  size_t size() const { return size_; }
  struct Entry {
    std::string_view a, b;
    uint64_t hash;
  };
  // The bytes it holds (not the texts: their owner's).
  size_t bytes() const {
    return slots_.capacity() * sizeof(uint32_t) + pages_.size() * kPageEntries * sizeof(Entry) +
           pages_.capacity() * sizeof(void*);
  }
  const Entry& entry(uint32_t id) const { return pages_[id / kPageEntries][id % kPageEntries]; }

 private:
  // The slot holding (a, b), or the empty slot where it would go. REQUIRES: slots_ not empty.
  size_t Probe(std::string_view a, std::string_view b, uint64_t hash) const;
  void Grow();
  // The entries by id, in pages allocated as they fill: what it holds grows by a page at a
  // time (no doubling, no copy), which a memory budget can follow.
  static constexpr size_t kPageEntries = 4096;
  std::vector<uint32_t> slots_;  // id + 1; 0 is empty
  std::vector<std::unique_ptr<Entry[]>> pages_;
  size_t size_ = 0;
};

}  // namespace rw
