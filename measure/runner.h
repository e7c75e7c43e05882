// Runner: the one interface through which the tuner measures candidates.
//
// A runner takes a batch of candidate configs for one workload and returns one
// Measurement per candidate, in order. It never throws for a misbehaving candidate:
// an infeasible config, a compile error, a crash, a hang or a wrong result becomes
// that candidate's status, and the batch goes on. Backends: `sim` (NPU simulator,
// Ascend targets), `cpu` (real time on this host, isolated in a child process),
// `model` (the cost model alone), `npu` (real hardware through CANN — not built here).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/target.h"
#include "core/tile_config.h"
#include "core/workload.h"
#include "measure/measurement.h"

namespace pto::measure {

// Test only: a fault the cpu backend injects into one candidate, to show that a crash,
// a hang or a wrong output costs that candidate its result and nothing more.
enum class Fault { Crash, Hang, CorruptOutput };

// How the cpu backend starts an isolated candidate's process (measure/isolation.h).
// Fork: a copy of this process, sharing the inputs and reference copy-on-write (the
// CLI). Spawn: a fresh pto-tune-worker that rebuilds them from the seed, for a process
// that must not be forked (a Python interpreter).
enum class ChildStart { Fork, Spawn };

struct RunnerOptions {
  double min_time_ms = 50;     // cpu: repeat until this much total time ...
  int min_repetitions = 5;     // ... and at least this many runs
  int warmup = 1;
  bool flush_cache = false;    // cpu: evict caches between runs
  double timeout_s = 30;       // cpu: per-candidate limit in the child process
  bool isolate = true;         // cpu: run each candidate in a child process
  ChildStart child_start = ChildStart::Fork;  // cpu, with isolate: how the child starts
  int threads = 0;             // cpu: OpenMP threads, 0 = all
  uint64_t seed = 1;           // input data
  // Test only, empty in normal use: candidate index in a measure() batch -> the fault
  // injected into it (Crash and Hang need `isolate`).
  std::map<size_t, Fault> faults;
};

class Runner {
 public:
  virtual ~Runner() = default;
  virtual std::string name() const = 0;
  virtual std::vector<Measurement> measure(const Workload& w,
                                           const std::vector<TileConfig>& candidates) = 0;
  // Re-measures a few finalists interleaved (A B C A B C ...), so that the winner is
  // chosen under one machine state; relative_spread(m.stats) (measure/stats.h) says
  // how noisy each was. Deterministic backends have no noise to spread: by default
  // this is measure().
  virtual std::vector<Measurement> measure_interleaved(const Workload& w,
                                                       const std::vector<TileConfig>& finalists) {
    return measure(w, finalists);
  }
};

std::vector<std::string> backend_names();  // "sim", "cpu", "model", "npu"
// Usage Error for an unknown backend or one that does not fit the target (cpu needs
// the host target, sim an NPU target); `npu` explains what it needs and that it is
// not built on this machine.
std::unique_ptr<Runner> make_runner(const std::string& backend, const Target& target,
                                    const RunnerOptions& options = {});

}  // namespace pto::measure
