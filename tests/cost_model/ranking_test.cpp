// Ranking scores: Kendall's tau and top-k regret on orders whose answer is known.
#include "cost_model/ranking.h"

#include <cmath>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "core/error.h"

namespace pto {
namespace {

TEST(KendallTau, SameOrderIsOneReversedIsMinusOne) {
  std::mt19937 rng(5);
  std::uniform_real_distribution<double> u(0, 1);
  std::vector<double> a(50), reversed(50), scaled(50);
  for (size_t i = 0; i < a.size(); ++i) a[i] = u(rng);
  for (size_t i = 0; i < a.size(); ++i) {
    reversed[i] = -a[i];
    scaled[i] = std::exp(3 * a[i]);  // any increasing map keeps the order
  }
  EXPECT_DOUBLE_EQ(kendall_tau(a, scaled), 1.0);
  EXPECT_DOUBLE_EQ(kendall_tau(a, reversed), -1.0);
}

TEST(KendallTau, CountsDiscordantPairs) {
  // One swapped adjacent pair out of 6 pairs: (5 - 1) / 6.
  const std::vector<double> p = {1, 2, 3, 4}, m = {1, 3, 2, 4};
  EXPECT_DOUBLE_EQ(kendall_tau(p, m), 4.0 / 6.0);
}

TEST(KendallTau, TiesUseTauB) {
  const std::vector<double> p = {1, 1, 2}, m = {1, 2, 3};
  // Pairs: (0,1) tied in p; (0,2), (1,2) concordant. tau-b = 2 / sqrt(2 * 3).
  EXPECT_DOUBLE_EQ(kendall_tau(p, m), 2.0 / std::sqrt(6.0));
}

TEST(KendallTau, RejectsBadInput) {
  const std::vector<double> one = {1}, two = {1, 2};
  EXPECT_THROW(kendall_tau(one, one), Error);
  EXPECT_THROW(kendall_tau(one, two), Error);
}

TEST(TopKRegret, ZeroWhenTheBestIsAmongTheTopK) {
  const std::vector<double> predicted = {3, 1, 2, 4}, measured = {10, 12, 8, 9};
  // Model's order: 1, 2, 0, 3. The true best (index 2, 8) is second.
  EXPECT_DOUBLE_EQ(top_k_regret(predicted, measured, 1), 12.0 / 8.0 - 1);
  EXPECT_DOUBLE_EQ(top_k_regret(predicted, measured, 2), 0.0);
  EXPECT_DOUBLE_EQ(top_k_regret(predicted, measured, 10), 0.0);
}

TEST(TopKRegret, NeverPicksInfeasiblePredictions) {
  const std::vector<double> predicted = {INFINITY, 5}, measured = {1, 2};
  EXPECT_DOUBLE_EQ(top_k_regret(predicted, measured, 2), 1.0);
}

TEST(TopKRegret, RejectsBadInput) {
  const std::vector<double> two = {1, 2}, three = {1, 2, 3};
  EXPECT_THROW(top_k_regret(two, three, 1), Error);
  EXPECT_THROW(top_k_regret(two, two, 0), Error);
}

}  // namespace
}  // namespace pto
