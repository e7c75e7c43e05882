// Pass 5, codegen of a vector task: the PTO instructions of one tile of a VectorBody.
//
// TLOAD every input window into UB (MTE2), one MTE2 -> V flag, the TVEC / TREDUCE /
// TFILL steps in graph order (V), one V -> MTE3 flag, TSTORE every result that leaves
// the kernel (MTE3). Windows are relative to the task's bindings, so every task with
// the same tile extents runs the same block program; GM slot i is access i in the
// order loads, positions (CausalMask), stores — vector_bindings() binds them.
#pragma once

#include "core/passes/pipeline_ir.h"

namespace pto::passes {

// A value's UB extent in a tile of extents `ext`: the spanned dims, 1 elsewhere.
Shape ub_extent(DimMask mask, const Shape& ext);

// The GM window of `a` for a tile of extents `ext` whose origin sits `offset` (iteration
// dims) past the task's binding origin, through binding slot `slot`.
Operand gm_window(const GmAccess& a, int slot, const Shape& ext, const Shape& offset);

// Buffers and instructions for a tile of extents `ext` (iteration rank).
void emit_vector_block(const VectorBody& body, const VecTiling& layout, const Shape& ext, BlockProgram& block);

// The task's GM bindings for a tile whose origin in the iteration space is `origin`.
std::vector<TensorBinding> vector_bindings(const VectorBody& body, const Shape& origin,
                                           const std::vector<GmTensor>& tensors);

}  // namespace pto::passes
