// Whether a workload's tensors fit the target's global memory (HBM).
//
// Each input and output of the graph lives in GM for the whole kernel, whatever the
// tiling: where they take more bytes than the target's HBM holds, no config can run the
// workload, and the search would analyze its whole space to find that out (a batch of
// M = 1..2^62 spent seconds per such shape). Refused up front instead. Targets whose HBM
// size is not known (hbm_bytes 0: the host, targets without a published figure) are
// not checked; the graph's own per-tensor bound (core/size_limits.h) still holds.
#pragma once

#include <cstdint>

#include "core/target.h"
#include "core/tensor_graph.h"

namespace pto {

// The bytes of the graph's inputs and outputs (each counted once).
int64_t global_memory_bytes(const TensorGraph& graph);

// An Infeasible error, naming both sizes, when they exceed target.hbm_bytes.
void check_fits_global_memory(const TensorGraph& graph, const Target& target);

}  // namespace pto
