#include "cost_model/ranking.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>
#include <vector>

#include "core/error.h"

namespace pto {

namespace {

void check_lengths(std::span<const double> predicted, std::span<const double> measured,
                   const char* what) {
  if (predicted.size() != measured.size()) {
    usage_error(std::string(what) + ": " + std::to_string(predicted.size()) + " predictions but " +
                std::to_string(measured.size()) + " measurements");
  }
}

int sign(double x) { return (x > 0) - (x < 0); }

}  // namespace

double kendall_tau(std::span<const double> predicted, std::span<const double> measured) {
  check_lengths(predicted, measured, "kendall_tau");
  if (predicted.size() < 2) usage_error("kendall_tau: needs at least two items");
  // O(n^2) pairs: rankings are scored on hundreds to a few thousand candidates.
  double concordant = 0, discordant = 0, tied_p = 0, tied_m = 0, pairs = 0;
  for (size_t i = 0; i < predicted.size(); ++i) {
    for (size_t j = i + 1; j < predicted.size(); ++j) {
      const int sp = sign(predicted[j] - predicted[i]), sm = sign(measured[j] - measured[i]);
      pairs += 1;
      if (sp == 0) tied_p += 1;
      if (sm == 0) tied_m += 1;
      if (sp * sm > 0) concordant += 1;
      if (sp * sm < 0) discordant += 1;
    }
  }
  const double denominator = std::sqrt((pairs - tied_p) * (pairs - tied_m));
  return denominator > 0 ? (concordant - discordant) / denominator : 0.0;
}

double top_k_regret(std::span<const double> predicted, std::span<const double> measured, size_t k) {
  check_lengths(predicted, measured, "top_k_regret");
  if (predicted.empty() || k == 0) usage_error("top_k_regret: needs candidates and k >= 1");
  std::vector<size_t> order(predicted.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return predicted[a] < predicted[b]; });
  double picked = INFINITY;
  for (size_t i = 0; i < std::min(k, order.size()) && std::isfinite(predicted[order[i]]); ++i) {
    picked = std::min(picked, measured[order[i]]);
  }
  const double best = *std::min_element(measured.begin(), measured.end());
  return picked / best - 1;
}

}  // namespace pto
