#include "stages/interner.h"

namespace rw {

void Interner::Resolve(const TextTable& local, std::vector<uint32_t>& ids) {
  ids.resize(local.size());
  std::lock_guard<std::mutex> lock(mu_);
  for (uint32_t id = 0; id < local.size(); ++id) {
    const TextTable::Entry& e = local.entry(id);
    ids[id] = table_.Intern(e.a, e.b, e.hash, &copies_);  // new to the run: copied out of the batch
  }
}

}  // namespace rw
