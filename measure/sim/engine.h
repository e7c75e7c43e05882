// The simulator's engine: runs every task of a program on the target's cores and
// returns raw totals (simulator.cpp turns them into a SimResult).
//
// Map: a Core holds its tasks in flight (TaskRuns: usually one; n for a vector block
// with n-slot buffers) and, per pipe, when it can issue next and when all it issued
// has ended; each run keeps, per pipe, its next step. A pipe serves the runs in order. Pipes run ahead eagerly through
// local steps and flags (their timing depends only on the core itself); a pipe parks
// at a GM transfer, and GM transfers, task ends and kernel starts go through one event
// queue ordered by (time, kind, core, pipe), so shared state — the L2, the bandwidth
// queues, free cores — always changes in time order.
// Task dispatch follows docs/compiler.md: a task is ready once its kernel's `after`
// kernels and its own deps are done, and ready tasks go, in Kernel.tasks order, to
// the free core of their type with the fewest tasks in flight, lowest number first. A
// MIX task takes a whole cluster (AIC i and its AIVs) once all its cores are free, and
// its units' pipes are lanes of those cores: flags between them cross cores.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "core/program.h"
#include "core/target.h"
#include "measure/sim/memory_system.h"
#include "measure/sim/simulator.h"

namespace pto::sim {

// Cores come in pools: AIC and AIV on split-core targets, one pool otherwise.
constexpr int kPools = 2;

struct EngineTotals {
  double makespan = 0;
  std::array<int64_t, kPools> pool_cores{};
  std::array<int64_t, kPools> cores_used{};  // cores that ran at least one task
  std::array<std::array<double, kNumPipes>, kPools> busy_cycles{};  // per pool and pipe
  std::vector<KernelTiming> kernels;
  int64_t instructions = 0;
  int64_t tasks = 0;
  MemoryTotals memory;
};

EngineTotals run_engine(const Program& program, const Target& target, const SimOptions& options);

inline CoreType pool_core_type(int pool) { return pool == 0 ? CoreType::AIC : CoreType::AIV; }

}  // namespace pto::sim
