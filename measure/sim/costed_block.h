// CostedBlock: what the simulator works out once per block program, before any task
// runs — each instruction's pipe and fixed cost from the target's rates, the SET_FLAG
// each WAIT_FLAG is matched with, and for GM transfers the window and the per-core
// rates. Simulating a task is then a walk over these arrays; isomorphic tasks share
// one CostedBlock just as they share one block program.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "core/program.h"
#include "core/target.h"

namespace pto::sim {

enum class StepKind : uint8_t {
  Local,         // costs a fixed number of cycles on its pipe
  SetFlag,
  WaitFlag,
  GmRead,        // TLOAD: through the L2 and the shared bandwidths
  GmWrite,       // TSTORE
  GmAccumulate,  // TSTORE with atomic add: reads the line in L2, then writes it
  Workspace,     // TMOV to or from a cluster's workspace: the L2 bandwidth, no HBM
};

// A MIX block's instructions run on the pipes of several units: lane = unit * kNumPipes
// + pipe (other blocks use unit 0's lanes alone).
constexpr int kMaxUnits = 4;
constexpr int kMaxLanes = kMaxUnits * kNumPipes;

struct PlannedStep {
  StepKind kind = StepKind::Local;
  Pipe pipe = Pipe::S;
  int lane = 0;
  double cycles = 0;       // Local, SetFlag, WaitFlag
  int matched_set = -1;    // WaitFlag: index of its SET_FLAG in the block
  // GM transfers: the window (binding slot, offset, extent) and the per-core costs.
  int gm_operand = -1;     // index into CostedBlock::gm_operands
  double latency = 0;       // ... and a WaitFlag's: how long its SET takes to arrive
  double hit_bytes_per_cycle = 0;   // data the L2 holds (for writes: the path's rate)
  double miss_bytes_per_cycle = 0;  // data fetched from HBM
  double bytes = 0;                 // Workspace: what it moves
};

struct CostedBlock {
  int block = -1;
  CoreType core = CoreType::AIV;
  // How many tasks of this block a core may hold at once. A vector block holds one more
  // than its n-slot UB input buffers ("x.ub[0]".."x.ub[n-1]", consecutive tasks
  // alternating slots): whatever a newer task may not yet touch is guarded step by step
  // by `reuse`, as queue buffers are on the hardware, so with one slot the next task's
  // loads still run while the previous one stores (docs/compiler.md).
  int tasks_in_flight = 1;
  std::vector<PlannedStep> steps;               // program order
  // Per step that writes a UB buffer: the task `distance` runs older on the core (same
  // block) must have run `after`, its steps touching those bytes, before this one starts.
  struct Reuse {
    int distance = 1;
    std::vector<int> after;
  };
  std::vector<Reuse> reuse;                     // per step; `after` empty: no wait
  std::array<std::vector<int>, kMaxLanes> pipe_steps;  // per lane, in issue order
  int units = 1;                                 // lanes in use: units * kNumPipes
  std::vector<Operand> gm_operands;
};

// The block must be verified (core/program_verify.h): operands name its buffers,
// every TMOV has a data path, every WAIT_FLAG its SET_FLAG.
CostedBlock cost_block(const BlockProgram& block, const Target& target);

}  // namespace pto::sim
