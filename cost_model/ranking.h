// Ranking quality: how well predicted times order candidates compared with measured
// ones. A tuner only needs the model to rank (it measures the finalists), so these are
// the scores that matter: Kendall's tau over all pairs, and the regret of trusting the
// model's top k — how much slower the best of its k picks is than the true best.
#pragma once

#include <cstddef>
#include <span>

namespace pto {

// Kendall's tau-b of two equally long score lists, in [-1, 1]; 1 = same order. Ties
// count as neither concordant nor discordant. Usage Error for lengths that differ or
// fewer than two items.
double kendall_tau(std::span<const double> predicted, std::span<const double> measured);

// min(measured over the k best-predicted) / min(measured) - 1: 0 when the model's top k
// contains the true best. Infinite predictions (infeasible) are never picked.
double top_k_regret(std::span<const double> predicted, std::span<const double> measured, size_t k);

}  // namespace pto
