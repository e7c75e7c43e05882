#include "measure/stats.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "core/error.h"

namespace pto::measure {

double percentile(std::vector<double> samples, double q) {
  if (samples.empty()) usage_error("percentile of an empty sample list");
  if (!(q >= 0 && q <= 1)) usage_error("percentile: q must lie in [0, 1], got " + std::to_string(q));
  std::sort(samples.begin(), samples.end());
  double rank = q * static_cast<double>(samples.size() - 1);
  size_t below = static_cast<size_t>(std::floor(rank));
  size_t above = std::min(below + 1, samples.size() - 1);
  double fraction = rank - static_cast<double>(below);
  return samples[below] + fraction * (samples[above] - samples[below]);
}

Stats summarize(const std::vector<double>& samples_ns) {
  if (samples_ns.empty()) usage_error("no timing samples to summarize");
  Stats s;
  s.median_ns = percentile(samples_ns, 0.5);
  s.p10_ns = percentile(samples_ns, 0.1);
  s.p90_ns = percentile(samples_ns, 0.9);
  s.repetitions = static_cast<int>(samples_ns.size());
  return s;
}

double relative_spread(const Stats& s) {
  return s.median_ns > 0 ? (s.p90_ns - s.p10_ns) / s.median_ns : 0.0;
}

}  // namespace pto::measure
