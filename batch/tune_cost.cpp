#include "batch/tune_cost.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/error.h"
#include "core/op_library.h"
#include "cost_model/estimate.h"

namespace pto::batch {

double predicted_tune_cost(const Workload& w, const Target& t, int64_t budget) {
  double ns = 0;
  try {
    const TensorGraph graph = build_graph(w);
    ns = CostModel(graph, t).predict_ns(default_config(w, graph, t));
  } catch (const Error&) {
    return 0;  // the tune reports why; the order only needs a rank
  }
  if (!std::isfinite(ns)) return 0;
  return ns * static_cast<double>(budget > 0 ? budget : kStrategyBudget);
}

std::vector<size_t> longest_first(const std::vector<double>& costs) {
  std::vector<size_t> order(costs.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return costs[a] > costs[b]; });
  return order;
}

}  // namespace pto::batch
