// Runner: the one interface through which the tuner measures candidates.
//
// A runner takes a batch of candidate configs for one workload and returns one
// Measurement per candidate, in order. It never throws for a misbehaving candidate:
// an infeasible config, a compile error, a crash, a hang or a wrong result becomes
// that candidate's status, and the batch goes on. Backends: `sim` (NPU simulator,
// Ascend targets), `cpu` (real time on this host, isolated in a child process),
// `model` (the cost model alone), `command` (the user's own measurement: a shell command
// speaking docs/measure_protocol.md, or a Python function) and `npu` (the same, for a
// real Ascend NPU, e.g. examples/npu/measure_pypto.py; with no command it says what
// it needs).
//
// A runner is called once per batch: the batch shares the workload's set-up (its
// graph, the cost model, and on the cpu backend the inputs and the fp64 reference),
// and a caller that shows progress passes `on_result`, called as each candidate's
// result is known. Every prediction beside a result (predicted_ns, the `model`
// backend) uses the calibrated coefficients of the backend it predicts.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/target.h"
#include "core/tile_config.h"
#include "core/workload.h"
#include "cost_model/coefficients.h"
#include "measure/external_measure.h"
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
  int warmup = 1;              // cpu: untimed runs first, the verified first run included
  bool flush_cache = false;    // cpu: evict caches between runs
  double timeout_s = 30;       // cpu, command, npu: per-candidate limit in the child process
  bool isolate = true;         // cpu: run each candidate in a child process
  ChildStart child_start = ChildStart::Fork;  // cpu, with isolate: how the child starts
  int threads = 0;             // cpu: OpenMP threads, 0 = all
  // cpu: time the process's CPU time instead of wall time. On a machine shared with other
  // jobs a one-thread run's CPU time leaves out the time slices the neighbours took
  // (wall time on a loaded 2-core machine runs several times the CPU time); with more
  // threads it sums them, so it suits threads = 1.
  bool cpu_time = false;
  uint64_t seed = 1;           // input data
  // command, npu: the shell command that measures each batch (docs/measure_protocol.md),
  // or instead a function in this process (pto_tune.tune(measure=fn)).
  std::string measure_command;
  std::optional<ExternalMeasurer> measure_function;
  // The cost model's coefficients for every prediction; absent = the calibration saved
  // for (target, the backend predicted) in the default folder, else the datasheet
  // figures (cost_model/calibration_store.h).
  std::optional<Coefficients> coefficients;
  // Test only, empty in normal use: candidate index in a measure() batch -> the fault
  // injected into it (Crash and Hang need `isolate`).
  std::map<size_t, Fault> faults;
};

// Called with a candidate's index in the batch and its result, once per candidate, in
// index order, as soon as that result is known. It returns whether to go on: false
// ends the batch after this result (a tuner told to stop finishes the measurement in
// flight and no more), and measure() then returns the results so far, a prefix of the
// batch. measure_interleaved() knows its results together and returns them all.
using OnResult = std::function<bool(size_t index, const Measurement& result)>;

class Runner {
 public:
  virtual ~Runner() = default;
  virtual std::string name() const = 0;
  virtual std::vector<Measurement> measure(const Workload& w, const std::vector<TileConfig>& candidates,
                                           const OnResult& on_result = {}) = 0;
  // Re-measures a few finalists interleaved (A B C A B C ...), so that the winner is
  // chosen under one machine state; relative_spread(m.stats) (measure/stats.h) says
  // how noisy each was. Deterministic backends have no noise to spread: by default
  // this is measure().
  virtual std::vector<Measurement> measure_interleaved(const Workload& w, const std::vector<TileConfig>& finalists,
                                                       const OnResult& on_result = {}) {
    return measure(w, finalists, on_result);
  }
};

// The options of a tuner's search runner on a noisy backend, from those its finalists
// are re-measured with (TuneOptions::finalist_runner): the search only ranks
// candidates, so two short repetitions after the verified run do (min_time_ms 1,
// min_repetitions 2), while the winner and its spread come from the finalists' full
// timing: three runs a candidate (the verified one and two timed) instead of six.
RunnerOptions search_options(RunnerOptions finalists);

// The two runners of a tuning job (search::TuneOptions::finalist_runner): the search's,
// with search_options, and the finalists', with `options`. Every caller that tunes
// (pto-tune tune and batch, the Python package, the benches) makes them here, so they
// all time candidates the same way.
struct TuningRunners {
  std::unique_ptr<Runner> search;
  std::unique_ptr<Runner> finalists;
};
TuningRunners make_tuning_runners(const std::string& backend, const Target& target, const RunnerOptions& options);

std::vector<std::string> backend_names();  // "sim", "cpu", "model", "npu", "command"
// The backends that measure `target` in this build, real or simulated time, as
// calibration needs: cpu for the host, sim for an NPU target. Not model (the cost
// model's own prediction), and not npu or command (they measure only through a
// command the user gives, which calibration does not take).
std::vector<std::string> measuring_backends(const Target& target);
// What measures a target when no backend is named: the first of its measuring backends.
std::string default_backend(const Target& target);
// The backend whose times the cost model predicts for `backend`: itself, except that
// `model` predicts the target's default backend (so it uses that calibration).
std::string predicted_backend(const std::string& backend, const Target& target);
// Usage Error for an unknown backend or one that does not fit the target (cpu needs
// the host target, sim an NPU target, npu an NPU target); `command` needs a measure
// command (or function), `npu` too, and without one explains what it needs and that
// this build has no CANN backend. A measure command for another backend is an error
// too. make_runner checks the same before it makes one.
void check_backend(const std::string& backend, const Target& target, const RunnerOptions& options = {});
// Usage Error for a name that is no backend's (listing the known ones).
void check_backend_name(const std::string& backend);
std::unique_ptr<Runner> make_runner(const std::string& backend, const Target& target,
                                    const RunnerOptions& options = {});

}  // namespace pto::measure
