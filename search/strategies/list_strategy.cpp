#include "search/strategies/list_strategy.h"

namespace pto::search {

bool ListStrategy::first_sight(const TileConfig& config) {
  const std::optional<uint64_t> program = context_.space->program_key(config);
  return program && seen_.insert(*program).second;
}

std::vector<TileConfig> ListStrategy::propose(size_t max) {
  std::vector<TileConfig> batch;
  while (batch.size() < max) {
    if (next_ == list_.size() && !extend()) break;
    const TileConfig& c = list_[next_++];
    if (first_sight(c)) batch.push_back(c);
  }
  return batch;
}

void ListStrategy::observe(std::span<const TileConfig> configs, std::span<const measure::Measurement>) {
  for (const TileConfig& c : configs) first_sight(c);
}

}  // namespace pto::search
