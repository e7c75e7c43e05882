// Candidate features: what the residual model (cost_model/residual_model.h) learns from —
// the analytical prediction itself, where the model says the time goes (its breakdown
// as fractions of the prediction), the shape of the work (kernels, tasks, waves, idle
// cores, bytes) and the config's own choices (tile sizes, split-K, n-buffering, L2
// grouping), all on log scales where they span orders of magnitude. One fixed-width
// vector per candidate, the same layout for every workload — which is what lets rows
// measured on one shape correct the predictions for another (cost_model/predictor.h).
#pragma once

#include <cstddef>
#include <vector>

#include "core/tile_config.h"
#include "cost_model/estimate.h"

namespace pto {

// The layout of the vector below: a stored correction (cost_model/correction.h) names the
// layout its rows were made by, and one of another layout is ignored, never misread.
// Bump it whenever a feature is added, removed, reordered or computed differently.
inline constexpr int kFeatureLayout = 1;
inline constexpr size_t kFeatureCount = 37;  // the width of layout kFeatureLayout

// The kFeatureCount features of a feasible estimate of `config`. The first one is
// log(predicted_ns).
std::vector<double> candidate_features(const Estimate& estimate, const TileConfig& config);

}  // namespace pto
