// Whether a workload's tensors fit the target's global memory (see global_memory.h).
#include "core/global_memory.h"

#include <set>
#include <string>

#include "core/dtype.h"
#include "core/error.h"
#include "core/format_number.h"
#include "core/size_limits.h"

namespace pto {

int64_t global_memory_bytes(const TensorGraph& graph) {
  std::set<NodeId> tensors(graph.inputs().begin(), graph.inputs().end());
  tensors.insert(graph.outputs().begin(), graph.outputs().end());
  int64_t total = 0;
  for (NodeId id : tensors) {
    const Node& n = graph.node(id);
    // Each tensor is at most kMaxTensorBytes (GraphBuilder): a handful of them cannot
    // overflow int64.
    total += *checked_num_elements(n.shape) * dtype_size(n.dtype);
  }
  return total;
}

void check_fits_global_memory(const TensorGraph& graph, const Target& target) {
  if (target.hbm_bytes <= 0) return;
  const int64_t bytes = global_memory_bytes(graph);
  if (bytes <= target.hbm_bytes) return;
  fail(ErrorCategory::Infeasible, "its input and output tensors take " + format_gib(bytes) +
                                      " of global memory, more than the " + format_gib(target.hbm_bytes) +
                                      " of HBM of " + target.name + ": no config can run it there");
}

}  // namespace pto
