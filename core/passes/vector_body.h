// The UB dataflow of a fused group of vector nodes, in iteration-space terms.
//
// Part of the fusion partition (pass 2): a group of elementwise / cast / mask /
// reduction nodes is one kernel only if all its tensors share one iteration space —
// every value broadcasts into the widest one or is a reduction of it
// (docs/compiler.md, "Kernels"). Building the body answers that question and, when the
// answer is yes, yields what codegen instantiates per tile: the UB values (which
// iteration dims each spans), the TLOADs, the TVEC/TREDUCE steps in graph order and
// the TSTOREs. The fusion partition tries candidate groups with it; the error says why
// a group does not fit.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/passes/pipeline_ir.h"

namespace pto::passes {

struct BodyRequest {
  std::vector<NodeId> nodes;           // the group's vector nodes, topological order
  std::optional<Shape> iteration;      // forced (a Cube epilogue: the matmul output)
  const std::vector<bool>* stored = nullptr;  // per node: its value must reach GM
};

// The body, or nullopt with `why` saying which node breaks the iteration space.
std::optional<VectorBody> build_vector_body(const TensorGraph& g, const std::vector<GmTensor>& tensors,
                                            const BodyRequest& request, std::string& why);

// src -> dst element by element (a TVEC Cast to the same dtype): materialises a view.
VectorBody build_copy_body(const GmTensor& src, const GmTensor& dst);

// dst = 0 everywhere (TFILL): the zeroing that precedes split-K's atomic adds.
VectorBody build_zero_body(const GmTensor& dst);

}  // namespace pto::passes
