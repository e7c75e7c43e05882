// The NPU simulator: cycle-approximate, event-driven timing of a PTO program on an
// Ascend target, for the `sim` backend of measure/.
//
// What it models (docs/compiler.md gives the program's semantics):
//   - per core, the pipes S, MTE1, MTE2, MTE3, M, V and FIX each issue their
//     instructions in program order (GM transfers pipelined: a transfer's latency
//     hides behind the one before it on the same pipe); SET_FLAG/WAIT_FLAG order one
//     pipe after another, so n-buffering shows up as overlap between the pipes, and
//     a vector block with n-slot buffers lets a core overlap consecutive tasks;
//   - instruction costs from the target: per-core rates in bytes/cycle, copy and GM
//     latencies, the vector latency/parallelism table, one fractal MAC per cycle;
//   - tasks dispatched as they become ready (Kernel.after, Task.deps) in Kernel.tasks
//     order onto the lowest-numbered free core of their type (AIC or AIV; one pool on
//     targets without split cores), not in lockstep waves;
//   - GM traffic through an L2 of the target's size that tracks the actual lines the
//     tiles touch (so reuse between cores, and hence L2 grouping, matters), an L2
//     bandwidth and an HBM bandwidth shared by all cores.
// It never steps cycle by cycle: pipes run ahead through local instructions, and only
// GM transfers and task boundaries go through one time-ordered event queue, which
// makes the result deterministic. Every figure it reports is simulated, not measured.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/program.h"
#include "core/target.h"

namespace pto::sim {

class TraceSink;  // measure/sim/trace.h

struct SimOptions {
  int64_t l2_line_bytes = 512;  // granularity at which the L2 tracks hits (LRU over lines)
  TraceSink* trace = nullptr;   // when set, told every instruction's simulated start and end
};

struct KernelTiming {
  int kernel = -1;
  std::string name;
  double start_cycle = 0;       // first task starts
  double end_cycle = 0;         // last task ends
  int64_t tasks = 0;
};

struct SimResult {
  static constexpr const char* kLabel = "simulated";

  double cycles = 0;            // makespan at the target clock
  double time_ns = 0;
  // Busy cycles of each pipe / (cores of the type x makespan). Only core types that
  // ran tasks appear; on targets without split cores everything runs on the AIC pool.
  std::map<CoreType, std::array<double, kNumPipes>> pipe_utilisation;
  std::map<CoreType, int64_t> cores_used;  // cores of the type that ran at least one task
  std::vector<KernelTiming> kernels;

  double gm_read_bytes = 0;     // what the cores read from GM (through the L2)
  double gm_write_bytes = 0;
  double l2_hit_rate = 0;       // share of gm_read_bytes already in L2 (no wait on any HBM fill)
  double hbm_read_bytes = 0;
  double hbm_write_bytes = 0;   // write-backs, including dirty lines left at the end
  double hbm_utilisation = 0;   // busy time of the shared HBM bandwidth / makespan
  double l2_utilisation = 0;    // busy time of the shared L2 bandwidth / makespan

  int64_t instructions = 0;     // executed, flags included
  int64_t tasks = 0;
  // The resource closest to saturation: "M@AIC", "MTE2@AIV", "HBM", "L2" ("none"
  // when nothing ran). Pipes are
  // judged over the cores that ran tasks, so a grid smaller than the core count still
  // names the pipe that limits each tile.
  std::string bound;
  double bound_utilisation = 0;

  std::string summary() const;  // a few lines of text, labelled simulated
  nlohmann::json to_json() const;
};

// Usage Error when the program was compiled for another target or the target is not
// an NPU or has no cores of a type a task needs; Internal Error when the program is
// malformed (core/program_verify.h), naming the bad value.
SimResult simulate(const Program& program, const Target& target, const SimOptions& options = {});

}  // namespace pto::sim
