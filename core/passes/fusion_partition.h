// Pass 2, fusion partition: which graph nodes run together as one kernel.
//
// A fused kernel keeps its intermediates in UB (or, for a matmul's epilogue, in the L2
// round trip between AIC and AIV) instead of writing them to HBM behind a kernel
// barrier, so the partition decides much of the memory traffic. The config may give
// it (`fusion`), validated here; otherwise the default of docs/compiler.md applies:
// each matmul with its elementwise epilogue (where the target can fuse Cube and Vector
// work), and maximal convex runs of vector nodes
// sharing one iteration space. Views become GM tensor aliases; a view that cannot be
// an alias (a reshape of a strided view, or a view marked as a graph output) is
// materialised by a copy kernel.
#pragma once

#include <optional>
#include <vector>

#include "core/passes/pipeline_ir.h"

namespace pto::passes {

// Usage Error naming the group and node when `fusion` is malformed. `cv_fusion`: the
// target lets a kernel hold a matmul and vector ops together (Target::cv_fusion); where
// it does not, the default partition gives each matmul a kernel of its own and a
// `fusion` group that mixes them is an error.
Partition partition_graph(const TensorGraph& g, const std::optional<std::vector<std::vector<int>>>& fusion,
                          bool cv_fusion);

}  // namespace pto::passes
