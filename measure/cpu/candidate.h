// Measuring candidates on the CPU in this process: compile, run once and verify against
// the reference, then time repetitions. The cpu runner calls these inside an isolated
// child (measure/isolation.h); they are also what runs without isolation.
//
// A WorkloadFixture holds what every candidate of a workload shares — the graph, the
// random inputs, the reference outputs — built once in the parent, so forked children
// see it copy-on-write instead of recomputing the (fp64, slow) reference each.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "core/host_tensor.h"
#include "core/target.h"
#include "core/tensor_graph.h"
#include "core/tile_config.h"
#include "core/workload.h"
#include "measure/measurement.h"
#include "measure/runner.h"

namespace pto::measure {

struct WorkloadFixture {
  Workload workload;
  TensorGraph graph;
  std::vector<HostTensor> inputs;
  std::vector<HostTensor> expected;   // the op library's reference on `inputs`
  int64_t accumulation = 1;           // for the verification tolerance
};

// Usage Error, before allocating, when the workload does not fit in host memory.
WorkloadFixture make_fixture(const Workload& w, const TensorGraph& graph, uint64_t seed);

// One candidate: status, verification and timing statistics (backend "cpu"; host and
// timestamp are left to the caller). `fault` is the test-only injected fault.
Measurement measure_candidate(const WorkloadFixture& fixture, const TileConfig& config,
                              const Target& host, const RunnerOptions& options,
                              std::optional<Fault> fault = std::nullopt);

// Finalists timed in interleaved rounds (measure/interleave.h), each verified first;
// one Measurement per finalist, in order.
std::vector<Measurement> measure_interleaved_candidates(const WorkloadFixture& fixture,
                                                        const std::vector<TileConfig>& finalists,
                                                        const Target& host,
                                                        const RunnerOptions& options);

}  // namespace pto::measure
