#include "search/tuning_store.h"

#include <algorithm>

namespace pto::search {

void MemoryStore::commit(std::span<const TuningRecord> records) {
  std::lock_guard lock(mutex_);
  records_.insert(records_.end(), records.begin(), records.end());
}

std::vector<TuningRecord> TuningStore::top_k(const RecordKey& key, size_t k) {
  std::vector<TuningRecord> matching = records_of(key);
  std::erase_if(matching, [](const TuningRecord& r) { return !r.usable(); });
  std::stable_sort(matching.begin(), matching.end(), better);
  if (matching.size() > k) matching.resize(k);
  return matching;
}

std::optional<TuningRecord> TuningStore::best(const RecordKey& key) {
  std::vector<TuningRecord> top = top_k(key, 1);
  if (top.empty()) return std::nullopt;
  return std::move(top.front());
}

bool is_tuned(TuningStore& store, const RecordKey& key) {
  const std::optional<TuningRecord> best = store.best(key);
  return best && best->fresh();
}

std::vector<TuningRecord> MemoryStore::records_of(const RecordKey& key) {
  std::lock_guard lock(mutex_);
  std::vector<TuningRecord> matching;
  for (const TuningRecord& r : records_)
    if (r.key() == key) matching.push_back(r);
  return matching;
}

std::optional<Correction> MemoryStore::correction(const CorrectionKey& key) {
  std::lock_guard lock(mutex_);
  const auto it = corrections_.find(key);
  if (it == corrections_.end()) return std::nullopt;
  return it->second;
}

void MemoryStore::add_correction(const CorrectionKey& key, const Correction& session) {
  std::lock_guard lock(mutex_);
  const auto it = corrections_.find(key);
  Correction kept = merge_corrections(it == corrections_.end() ? std::nullopt : std::optional(it->second), session);
  corrections_.insert_or_assign(key, std::move(kept));
}

std::vector<TuningRecord> MemoryStore::all() const {
  std::lock_guard lock(mutex_);
  return records_;
}

}  // namespace pto::search
