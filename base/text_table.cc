#include "base/text_table.h"

#include <algorithm>
#include <functional>

namespace rw {

uint64_t TextTable::HashOf(std::string_view a, std::string_view b) {
  const std::hash<std::string_view> hash;
  return HashOfPair(hash(a), a.size(), b, b.empty() ? 0 : hash(b));
}

uint64_t TextTable::HashOfPair(uint64_t hash_a, size_t size_a, std::string_view b, uint64_t hash_b) {
  if (b.empty()) return hash_a;
  // Mixed with the length of `a`, so that ("1.1", "1.1A") and ("1.11", ".1A") differ
  // (equality compares both parts anyway; this only keeps their hashes apart).
  return hash_a ^ ((hash_b + 0x9E3779B97F4A7C15ull + (hash_a << 6) + (hash_a >> 2)) ^ size_a);
}

size_t TextTable::Probe(std::string_view a, std::string_view b, uint64_t hash) const {
  const size_t mask = slots_.size() - 1;
  for (size_t i = hash & mask;; i = (i + 1) & mask) {
    const uint32_t slot = slots_[i];
    if (slot == 0) return i;
    const Entry& e = entry(slot - 1);
    if (e.hash == hash && e.a == a && e.b == b) return i;
  }
}

uint32_t TextTable::Intern(std::string_view a, std::string_view b, uint64_t hash, StringArena* copies) {
  if ((size_ + 1) * 2 > slots_.size()) Grow();  // load factor at most 1/2
  const size_t i = Probe(a, b, hash);
  if (slots_[i] == 0) {
    if (copies != nullptr) {
      a = copies->Copy(a);
      b = copies->Copy(b);
    }
    if (size_ == pages_.size() * kPageEntries) pages_.emplace_back(new Entry[kPageEntries]);
    pages_[size_ / kPageEntries][size_ % kPageEntries] = {a, b, hash};
    slots_[i] = static_cast<uint32_t>(++size_);
  }
  return slots_[i] - 1;
}

int64_t TextTable::Find(std::string_view a, std::string_view b, uint64_t hash) const {
  if (slots_.empty()) return -1;
  return int64_t{slots_[Probe(a, b, hash)]} - 1;
}

void TextTable::Clear() {
  std::fill(slots_.begin(), slots_.end(), 0);
  size_ = 0;  // the pages stay, to be filled again
}

void TextTable::Grow() {
  slots_.assign(slots_.empty() ? 1024 : slots_.size() * 2, 0);
  const size_t mask = slots_.size() - 1;
  for (uint32_t id = 0; id < size_; ++id) {
    size_t i = entry(id).hash & mask;
    while (slots_[i] != 0) i = (i + 1) & mask;
    slots_[i] = id + 1;
  }
}

}  // namespace rw
