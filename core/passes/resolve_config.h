// Pass 1, validate: the config as the later passes see it.
//
// A config may leave out what the tuner did not choose: the Cube tile of a graph with a
// matmul, the vector tile of a graph with vector work. The pipeline never guesses per
// pass; it resolves the config once here, with the op-agnostic fallbacks below (the
// op library's default_config is the better source, and the JIT uses it; these keep a
// bare compile() working). Fusion is validated by the fusion partition, which knows
// the graph's structure.
#pragma once

#include <vector>

#include "core/passes/pipeline_ir.h"

namespace pto::passes {

ResolvedConfig resolve_config(const TensorGraph& g, const TileConfig& config);

// The fp16 matmul guide's default [128,128],[64,256],[256,256].
CubeTile fallback_cube();

// min(dim, [.., 1, 64, 512]) over the iteration space, with the reduced dims whole.
Shape fallback_vec(const Shape& iteration, const std::vector<int>& reduce_dims);

// The tile of the compiler's own kernels (view copies, split-K zeroing): min(dim,
// [.., 1, 16, 512]), small enough for any UB with room for n-buffering.
Shape internal_vec(const Shape& iteration);

}  // namespace pto::passes
