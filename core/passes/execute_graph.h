// Pass 6, execute graph: the order and dependencies the runtime and simulator follow.
//
// Kernels wait for the kernels whose GM tensors they read (a fused partition has fewer
// such barriers); within a kernel, an epilogue's AIV tasks wait for their AIC task;
// Cube tiles are dispatched row-major or in L2 groups of mDim x nDim tiles, so that a
// wave of cores shares A rows and B columns in L2 (the PyPTO matmul guide's L2 split).
#pragma once

#include <optional>
#include <utility>
#include <vector>

#include "core/passes/pipeline_ir.h"

namespace pto::passes {

// The (m-tile, n-tile) visiting order of one batch entry's Cube tiles.
std::vector<std::pair<int64_t, int64_t>> cube_tile_order(int64_t m_tiles, int64_t n_tiles,
                                                         const std::optional<std::pair<int64_t, int64_t>>& l2_group);

// Fills Kernel::after from the plan and checks that task deps stay inside their kernel
// and point backwards in dispatch order (internal Error otherwise).
void link_execute_graph(const TilePlan& plan, Program& program);

}  // namespace pto::passes
