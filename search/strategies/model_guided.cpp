#include "search/strategies/model_guided.h"

#include <cmath>

namespace pto::search {

std::vector<TileConfig> ModelGuided::propose(size_t max) {
  grow();
  std::vector<TileConfig> batch;
  for (size_t i : pool_.pick(max, kMinMeasured, rng_)) {
    pool_.mark_proposed(i);
    batch.push_back(pool_.config(i));
  }
  return batch;
}

std::optional<double> ModelGuided::best_unproposed_ns() const {
  const std::vector<size_t> best = pool_.best_fresh(1);
  if (best.empty()) return std::nullopt;
  return std::exp(pool_.log_time(best.front()));
}

}  // namespace pto::search
