#include "measure/interleave.h"

namespace pto::measure {

std::vector<std::vector<double>> time_interleaved(const std::vector<std::function<void()>>& runs,
                                                  const TimingPolicy& policy,
                                                  const std::function<void()>& before_each) {
  std::vector<std::vector<double>> samples(runs.size());
  if (runs.empty()) return samples;
  for (int round = 0; round < policy.warmup; ++round)
    for (const auto& run : runs) run();

  const double min_total_ns = policy.min_time_ms * 1e6 * static_cast<double>(runs.size());
  double total_ns = 0;
  for (int round = 0; round < policy.max_repetitions &&
                      (round < policy.min_repetitions || total_ns < min_total_ns);
       ++round) {
    for (size_t i = 0; i < runs.size(); ++i) {
      if (before_each) before_each();
      samples[i].push_back(time_once_ns(runs[i], policy.cpu_time));
      total_ns += samples[i].back();
    }
  }
  return samples;
}

}  // namespace pto::measure
