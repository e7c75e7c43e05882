#include "search/task_scheduler.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/error.h"
#include "core/op_library.h"
#include "cost_model/estimate.h"
#include "search/space_generator.h"

namespace pto::search {

double predicted_headroom(const Workload& w, const Target& target, const std::optional<Coefficients>& coefficients,
                          size_t sample, uint64_t seed) {
  const TensorGraph graph = build_graph(w);
  const SpaceGenerator space(graph, target, default_config(w, graph, target));
  const CostModel model = coefficients ? CostModel(graph, target, *coefficients) : CostModel(graph, target);
  const double baseline = model.predict_ns(space.baseline());
  double best = baseline;
  for (const TileConfig& c : space.sample(sample, seed)) best = std::min(best, model.predict_ns(c));
  if (!std::isfinite(baseline) || !(best > 0)) return 1;
  return std::max(1.0, baseline / best);
}

double expected_gain(double weight, double headroom) { return weight * std::log(std::max(1.0, headroom)); }

std::vector<int64_t> share_budget(const std::vector<double>& gains, int64_t total, int64_t initial) {
  const auto n = static_cast<int64_t>(gains.size());
  if (n == 0) return {};
  if (total < 2 * n)
    usage_error("--total-budget " + std::to_string(total) + " is below 2 measurements for each of " +
                std::to_string(n) + " workloads");
  const int64_t first = std::max<int64_t>(2, std::min(initial, total / n));
  std::vector<int64_t> budgets(gains.size(), first);
  const int64_t rest = total - first * n;
  double sum = std::accumulate(gains.begin(), gains.end(), 0.0);
  std::vector<double> share(gains.size());
  for (size_t i = 0; i < gains.size(); ++i)
    share[i] = rest * (sum > 0 ? std::max(0.0, gains[i]) / sum : 1.0 / n);
  int64_t given = 0;
  for (size_t i = 0; i < gains.size(); ++i) {
    budgets[i] += static_cast<int64_t>(std::floor(share[i]));
    given += static_cast<int64_t>(std::floor(share[i]));
  }
  std::vector<size_t> order(gains.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return share[a] - std::floor(share[a]) > share[b] - std::floor(share[b]);
  });
  for (size_t k = 0; given < rest; ++k, ++given) ++budgets[order[k % order.size()]];
  return budgets;
}

}  // namespace pto::search
