// Verification of a candidate's first run against the op's reference: a config that
// computes the wrong thing is WRONG_RESULT and can never win, however fast it is.
//
// Tolerances are core's all_close per dtype, loosened for long accumulations (matmul
// K, reduction lengths), which is why the graph's longest accumulation is needed.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/host_tensor.h"
#include "core/tensor_graph.h"

namespace pto::measure {

// The longest chain of additions any output element goes through: the largest matmul
// K or reduced dim of the graph; 1 for purely elementwise graphs.
int64_t accumulation_length(const TensorGraph& graph);

struct Verification {
  bool passed = true;
  double max_abs_err = 0;   // over all outputs
  std::string mismatch;     // the first output that failed, with its numbers
};

// `actual` and `expected` in graph-output order.
Verification verify_outputs(const TensorGraph& graph, const std::vector<HostTensor>& actual,
                            const std::vector<HostTensor>& expected, int64_t accumulation);

}  // namespace pto::measure
