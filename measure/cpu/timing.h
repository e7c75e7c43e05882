// Timing one piece of work on the CPU: warm-up runs, then repetitions until both a
// minimum total time and a minimum count are reached. The minimum time keeps short
// kernels from being judged on a handful of timer ticks; the minimum count keeps long
// ones from being judged on a single run.
#pragma once

#include <functional>
#include <vector>

#include "measure/runner.h"

namespace pto::measure {

struct TimingPolicy {
  int warmup = 1;                    // untimed runs first
  double min_time_ms = 50;           // timed runs continue until they add up to this ...
  int min_repetitions = 5;           // ... and there are at least this many
  int max_repetitions = 1'000'000;   // bounds a run that takes (almost) no time
  bool cpu_time = false;             // the process's CPU time instead of the steady clock
};

// The policy RunnerOptions ask for; usage Error for a negative time or count.
TimingPolicy timing_policy(const RunnerOptions& options);

// ns of one call of `run`: wall clock (steady clock), or the process's CPU time.
double time_once_ns(const std::function<void()>& run, bool cpu_time = false);

// ns (as time_once_ns under policy.cpu_time) of each timed run of `run`. `before_each` (e.g. a cache flush) runs
// before every timed run, outside the timed interval.
std::vector<double> time_runs(const std::function<void()>& run, const TimingPolicy& policy,
                              const std::function<void()>& before_each = {});

}  // namespace pto::measure
