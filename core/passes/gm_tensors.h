// Part of pass 2, fusion partition: the GM tensors of a graph.
//
// Graph node i becomes GM tensor i, so every later dump and binding can name the
// graph's tensors. Views are not kernels: a broadcast, slice or contiguous reshape
// becomes an alias of its root's storage (offset and strides, 0 for broadcast dims).
// Two views cannot be aliases and are copied into tensors of their own (appended after
// the graph's): a reshape of a strided view ("<reshape>.src", which the reshape then
// aliases) and a view marked as a graph output (outputs own their storage; the alias
// is renamed "<view>.view").
#pragma once

#include <vector>

#include "core/program.h"
#include "core/tensor_graph.h"

namespace pto::passes {

// A copy kernel to create: tensor src (a view) into the owning tensor dst.
struct ViewCopy {
  int src = -1, dst = -1;
  NodeId anchor = -1;  // the view node it serves, for ordering
};

struct GmTensors {
  std::vector<GmTensor> tensors;
  std::vector<ViewCopy> copies;
};

GmTensors gm_tensors(const TensorGraph& g);

}  // namespace pto::passes
