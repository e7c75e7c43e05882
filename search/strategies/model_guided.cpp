#include "search/strategies/model_guided.h"

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

}  // namespace pto::search
