// Candidate features: what the residual model (search/residual_model.h) learns from —
// the analytical prediction itself, where the model says the time goes (its breakdown
// as fractions of the prediction), the shape of the work (kernels, tasks, waves, idle
// cores, bytes) and the config's own choices (tile sizes, split-K, n-buffering, L2
// grouping), all on log scales where they span orders of magnitude. One fixed-width
// vector per candidate, the same layout for every workload.
#pragma once

#include <vector>

#include "core/tile_config.h"
#include "cost_model/estimate.h"

namespace pto::search {

// The features of a feasible estimate of `config`. The first one is log(predicted_ns).
std::vector<double> candidate_features(const Estimate& estimate, const TileConfig& config);

}  // namespace pto::search
