// What the two ranking reports share — ranking_bench (the cost model against the
// simulator) and ranking_cpu_bench (against CPU time on this host): the three scores of
// how well a model orders a sample, and the number formats of their Markdown tables.
// One copy, so that the two reports score and print alike. Header-only: every bench
// program is an executable of its own.
#pragma once

#include <cmath>
#include <string>
#include <vector>

#include "bench/report_program.h"
#include "cost_model/ranking.h"

namespace pto::bench {

// How a model's predicted times order a sample against the true (simulated or measured)
// times: Kendall's tau, and the regret of trusting its top 1 and top 5 picks.
struct Scores {
  double tau = 0, top1 = 0, top5 = 0;
};

inline Scores score(const std::vector<double>& predicted, const std::vector<double>& truth) {
  return {kendall_tau(predicted, truth), top_k_regret(predicted, truth, 1), top_k_regret(predicted, truth, 5)};
}

// A fraction as a percentage with one decimal; "-" when it is not finite (no regret to
// speak of: every prediction infinite).
inline std::string pct(double v) { return std::isfinite(v) ? fmt("%.1f%%", 100 * v) : "-"; }

}  // namespace pto::bench
