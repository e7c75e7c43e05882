#include "measure/cpu/host_memory.h"

#include <unistd.h>

#include <fstream>
#include <string>

#include "core/error.h"
#include "core/format_number.h"
#include "core/size_limits.h"

namespace pto::measure {

int64_t host_bytes_needed(const TensorGraph& graph) {
  // Each tensor is at most kMaxTensorBytes (GraphBuilder), so these sums stay in int64.
  int64_t bytes = 0;
  for (const Node& n : graph.nodes()) {
    if (!is_view(n.kind)) bytes += num_elements(n.shape) * dtype_size(n.dtype);
  }
  for (NodeId id : graph.outputs()) {
    const Node& out = graph.node(id);
    bytes += num_elements(out.shape) * (dtype_size(out.dtype) + static_cast<int64_t>(sizeof(double)));
  }
  return bytes;
}

int64_t host_bytes_available() {
  std::ifstream meminfo("/proc/meminfo");
  std::string key;
  int64_t kib = 0;
  std::string unit;
  while (meminfo >> key >> kib >> unit) {
    if (key == "MemAvailable:") return kib * 1024;
  }
  const long pages = sysconf(_SC_AVPHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? static_cast<int64_t>(pages) * page : 0;
}

void check_fits_host_memory(const TensorGraph& graph) {
  const int64_t needed = host_bytes_needed(graph), available = host_bytes_available();
  if (available <= 0 || needed <= available) return;
  usage_error("the workload needs about " + format_gib(needed) + " (" + std::to_string(needed) +
              " bytes) of host memory for its tensors and reference outputs, more than the " + format_gib(available) +
              " available on this machine; use a smaller shape");
}

}  // namespace pto::measure
