// Fusion candidates: which partitions of the graph into kernels a search tries.
//
// Fusing keeps intermediates on chip but makes one kernel's UB hold every value at
// once, which forces smaller tiles; splitting frees UB at the price of HBM round trips
// and kernel barriers. So besides the compiler's default partition the space holds the
// opposite extreme, every compute node alone, and the partitions in between that are
// cheap to list: each default group cut once, at any point of its topological order.
// Whether a partition is valid (convex, one matmul first in its group, one iteration
// space) is the compiler's call: a candidate that core's analyze rejects is left out.
#pragma once

#include <optional>
#include <vector>

#include "core/analyze.h"
#include "core/tensor_graph.h"
#include "core/tile_config.h"

namespace pto::search {

using FusionGroups = std::vector<std::vector<int>>;

// nullopt (the default partition) first, then the valid alternatives, without repeats.
// `base` is any config of the graph (its tiles do not matter, only its fusion is
// replaced); `analyzer` must be built on `graph`.
std::vector<std::optional<FusionGroups>> fusion_candidates(const TensorGraph& graph, const Analyzer& analyzer,
                                                           const TileConfig& base);

}  // namespace pto::search
