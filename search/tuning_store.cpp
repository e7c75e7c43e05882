#include "search/tuning_store.h"

#include <algorithm>

namespace pto::search {

void MemoryStore::commit(std::span<const TuningRecord> records) {
  std::lock_guard lock(mutex_);
  records_.insert(records_.end(), records.begin(), records.end());
}

std::optional<TuningRecord> MemoryStore::best(const RecordKey& key) {
  std::vector<TuningRecord> top = top_k(key, 1);
  if (top.empty()) return std::nullopt;
  return std::move(top.front());
}

std::vector<TuningRecord> MemoryStore::top_k(const RecordKey& key, size_t k) {
  std::vector<TuningRecord> matching;
  {
    std::lock_guard lock(mutex_);
    for (const TuningRecord& r : records_)
      if (r.usable() && r.key() == key) matching.push_back(r);
  }
  std::stable_sort(matching.begin(), matching.end(), better);
  if (matching.size() > k) matching.resize(k);
  return matching;
}

std::vector<TuningRecord> MemoryStore::all() const {
  std::lock_guard lock(mutex_);
  return records_;
}

}  // namespace pto::search
