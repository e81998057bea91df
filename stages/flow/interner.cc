#include "stages/flow/interner.h"

namespace rw {

void Interner::Resolve(const std::vector<TextTable::Entry>& local, std::vector<uint32_t>& ids) {
  ids.resize(local.size());
  std::lock_guard<std::mutex> lock(mu_);
  for (size_t i = 0; i < local.size(); ++i) {
    const TextTable::Entry& e = local[i];
    ids[i] = table_.Intern(e.a, e.b, e.hash, &copies_);  // new to the run: copied out of the batch
  }
}

}  // namespace rw
