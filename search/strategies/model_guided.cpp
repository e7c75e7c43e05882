#include "search/strategies/model_guided.h"

#include <algorithm>
#include <cmath>

#include "search/strategies/knob_steps.h"

namespace pto::search {

namespace {

// How much slower than the measured best the analytical model may predict a step and
// still have it measured: its error between neighbouring tiles is within it (K at L1 of
// 192 against 256, model_guided.h: predicted 10 % slower, simulated 4 % faster), while
// the steps far beyond it cannot win.
constexpr double kStepReach = 1.15;
// Steps measured around one best at most: the best predicted of them.
constexpr size_t kMostSteps = 8;

}  // namespace

std::vector<TileConfig> ModelGuided::propose(size_t max) {
  grow();
  std::vector<size_t> picked = pool_.pick(max, kMinMeasured, rng_);
  if (picked.empty()) picked = polish(max);
  std::vector<TileConfig> batch;
  for (size_t i : picked) {
    pool_.mark_proposed(i);
    batch.push_back(pool_.config(i));
  }
  return batch;
}

std::vector<size_t> ModelGuided::polish(size_t max) {
  const std::optional<size_t> best = pool_.best_measured();
  if (best && polished_.insert(*best).second) steps_ = steps_from(*best);
  std::vector<size_t> picked;
  while (!steps_.empty() && picked.size() < max) {
    if (pool_.fresh(steps_.front())) picked.push_back(steps_.front());
    steps_.erase(steps_.begin());
  }
  return picked;
}

std::vector<size_t> ModelGuided::steps_from(size_t best) {
  // By the analytical model alone, so that the same best lists the same steps whatever
  // was measured before: a rerun on the stored records polishes nothing new.
  const double reach = pool_.log_predicted(best) + std::log(kStepReach);
  std::vector<size_t> steps;
  for (const KnobStep& step : knob_steps(digits_, pool_.config(best))) {
    const std::optional<size_t> i = pool_.find_or_add(step.config);
    if (i && *i != best && pool_.log_predicted(*i) < reach) steps.push_back(*i);
  }
  std::sort(steps.begin(), steps.end(), [&](size_t a, size_t b) {
    return std::pair(pool_.log_predicted(a), a) < std::pair(pool_.log_predicted(b), b);
  });
  steps.erase(std::unique(steps.begin(), steps.end()), steps.end());
  if (steps.size() > kMostSteps) steps.resize(kMostSteps);
  return steps;
}

std::optional<double> ModelGuided::best_unproposed_ns() const {
  const std::vector<size_t> best = pool_.best_fresh(1);
  if (best.empty()) return std::nullopt;
  return std::exp(pool_.log_time(best.front()));
}

}  // namespace pto::search
