// Pass 5, codegen of a Cube task: the PTO instructions of one [m, n] output tile over
// one K range (the whole K, or one split-K chunk).
//
// Per K step: TLOAD the A tile (every ra steps) and the B tile (every rb steps) into
// L1 slots (MTE2); then for every L0 sub-tile of the output and every kL0 sub-step:
// TMOV the A and B pieces into L0A/L0B slots (MTE1) and TMATMUL into the L0C
// accumulators of the tile (M). At the end one TSTORE L0C -> GM (FIX), an atomic add
// for split-K. Flags follow docs/compiler.md "n-buffering": a TLOAD into slot i waits
// only for the consumer of the load n before it, so loads run ahead of compute.
#pragma once

#include "core/passes/pipeline_ir.h"

namespace pto::passes {

struct CubeTaskShape {
  int64_t m = 0, n = 0;   // output tile extents
  int64_t k = 0;          // K range length (the chunk's)
  bool accumulate = false;  // split-K: atomic add into GM
};

void emit_cube_block(const CubeSpec& spec, const CubeTiling& ct, const CubeTaskShape& task,
                     const std::vector<GmTensor>& tensors, BlockProgram& block);

// Bindings: slot 0 = A, 1 = B, 2 = C, each at the tile's origin in its own coordinates
// (transposed operands store [.., K, M] / [.., N, K]).
std::vector<TensorBinding> cube_bindings(const CubeSpec& spec, const Shape& batch_index, int64_t m0, int64_t n0,
                                         int64_t k0);

}  // namespace pto::passes
