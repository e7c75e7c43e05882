// Host memory a cpu measurement needs, checked before anything is allocated: a workload
// too large for this machine is a usage Error saying how many bytes it needs and how
// many are available, not a bare std::bad_alloc after seconds of work (or the OOM
// killer).
#pragma once

#include <cstdint>

#include "core/tensor_graph.h"

namespace pto::measure {

// About the peak bytes of one cpu measurement: every graph tensor once (inputs,
// intermediates, outputs as the runtime holds them), the reference outputs in their
// dtype, and the reference's fp64 working copy of each output.
int64_t host_bytes_needed(const TensorGraph& graph);

// MemAvailable of /proc/meminfo, else free pages from sysconf; 0 when unknown.
int64_t host_bytes_available();

// Usage Error when the graph needs more than is available (nothing when unknown).
void check_fits_host_memory(const TensorGraph& graph);

}  // namespace pto::measure
