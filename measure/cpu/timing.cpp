#include "measure/cpu/timing.h"

#include <time.h>

#include <chrono>
#include <string>

#include "core/error.h"

namespace pto::measure {

TimingPolicy timing_policy(const RunnerOptions& options) {
  if (options.warmup < 0) usage_error("warm-up runs must be >= 0, got " + std::to_string(options.warmup));
  if (!(options.min_time_ms >= 0))
    usage_error("minimum timing must be >= 0 ms, got " + std::to_string(options.min_time_ms));
  if (options.min_repetitions < 1)
    usage_error("minimum repetitions must be >= 1, got " + std::to_string(options.min_repetitions));
  TimingPolicy policy;
  policy.warmup = options.warmup;
  policy.min_time_ms = options.min_time_ms;
  policy.min_repetitions = options.min_repetitions;
  policy.cpu_time = options.cpu_time;
  return policy;
}

namespace {

double process_cpu_ns() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e9 + static_cast<double>(ts.tv_nsec);
}

}  // namespace

double time_once_ns(const std::function<void()>& run, bool cpu_time) {
  if (cpu_time) {
    const double start = process_cpu_ns();
    run();
    return process_cpu_ns() - start;
  }
  auto start = std::chrono::steady_clock::now();
  run();
  return std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start).count();
}

std::vector<double> time_runs(const std::function<void()>& run, const TimingPolicy& policy,
                              const std::function<void()>& before_each) {
  for (int i = 0; i < policy.warmup; ++i) run();
  std::vector<double> samples;
  double total_ns = 0;
  const double min_total_ns = policy.min_time_ms * 1e6;
  while (static_cast<int>(samples.size()) < policy.max_repetitions &&
         (static_cast<int>(samples.size()) < policy.min_repetitions || total_ns < min_total_ns)) {
    if (before_each) before_each();
    samples.push_back(time_once_ns(run, policy.cpu_time));
    total_ns += samples.back();
  }
  return samples;
}

}  // namespace pto::measure
