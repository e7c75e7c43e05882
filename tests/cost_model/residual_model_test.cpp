// ResidualModel: ridge regression on standardised features, as properties over random
// linear problems — it recovers a linear target from enough samples, it can reverse an
// order the prior has backwards (the host cost model's case), it falls back to a
// constant with too few samples, its leave-one-out residuals are consistent, and bad
// shapes are usage errors.
#include "cost_model/residual_model.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "tests/core/error_testing.h"

namespace pto {
namespace {

struct Problem {
  std::vector<std::vector<double>> x;
  std::vector<double> y;
};

// y = w . x + b (+ noise), with x of width `d` on scales that differ by orders of magnitude.
Problem linear_problem(size_t n, size_t d, double noise, std::mt19937_64& rng) {
  std::normal_distribution<double> normal(0, 1);
  std::vector<double> w(d), scale(d);
  for (size_t i = 0; i < d; ++i) {
    w[i] = normal(rng);
    scale[i] = std::pow(10.0, static_cast<double>(i % 4) - 1);
  }
  const double b = normal(rng);
  Problem p;
  for (size_t r = 0; r < n; ++r) {
    std::vector<double> row(d);
    double y = b;
    for (size_t i = 0; i < d; ++i) {
      row[i] = scale[i] * normal(rng);
      y += w[i] * row[i] / scale[i];
    }
    p.x.push_back(row);
    p.y.push_back(y + noise * normal(rng));
  }
  return p;
}

TEST(ResidualModel, RecoversLinearTargetsFromEnoughSamples) {
  std::mt19937_64 rng(7);
  for (int trial = 0; trial < 20; ++trial) {
    const size_t d = 3 + trial % 8;
    const Problem all = linear_problem(300, d, 0.01, rng);
    const std::vector<std::vector<double>> x(all.x.begin(), all.x.begin() + 200);
    const std::vector<double> y(all.y.begin(), all.y.begin() + 200);
    ResidualModel m;
    m.fit(x, y);
    EXPECT_EQ(m.samples(), 200u);
    double worst = 0;  // on the 100 held-out rows
    for (size_t r = 200; r < 300; ++r) worst = std::max(worst, std::abs(m.predict(all.x[r]) - all.y[r]));
    EXPECT_LT(worst, 0.25) << "trial " << trial << " width " << d << " penalty " << m.penalty();
  }
}

// The per-row leave-one-out residuals a strategy weighs near the optimum: one per row,
// their rms is loo_rms(), and each is at least the row's in-sample residual (leaving a
// row out can only make its prediction worse: e / (1 - h) with 0 <= h < 1).
TEST(ResidualModel, LeaveOneOutResidualsBoundTheInSampleOnes) {
  std::mt19937_64 rng(11);
  for (int trial = 0; trial < 10; ++trial) {
    const size_t n = 6 + static_cast<size_t>(trial) * 5, d = 2 + trial % 5;
    const Problem p = linear_problem(n, d, 0.3, rng);
    ResidualModel m;
    m.fit(p.x, p.y);
    ASSERT_EQ(m.loo_residuals().size(), n) << "trial " << trial;
    double sum = 0;
    for (size_t r = 0; r < n; ++r) {
      const double loo = m.loo_residuals()[r];
      sum += loo * loo;
      EXPECT_GE(std::abs(loo) + 1e-9, std::abs(p.y[r] - m.predict(p.x[r]))) << "trial " << trial << " row " << r;
    }
    EXPECT_NEAR(std::sqrt(sum / static_cast<double>(n)), m.loo_rms(), 1e-9) << "trial " << trial;
  }
  ResidualModel constant;
  constant.fit({{1, 2}}, std::vector<double>{0.7});
  EXPECT_TRUE(constant.loo_residuals().empty());
}

// The prior ranks backwards: measured = -prior (in logs), so the residual to learn is
// -2 x prior. After a fit on a few samples the corrected order of unseen candidates
// (prior + residual) must follow the truth, not the prior.
TEST(ResidualModel, ReversesABackwardsPrior) {
  std::mt19937_64 rng(3);
  std::uniform_real_distribution<double> u(0, 5);
  std::normal_distribution<double> other(0, 1);
  for (int trial = 0; trial < 10; ++trial) {
    auto row = [&] { return std::vector<double>{u(rng), other(rng), other(rng)}; };
    std::vector<std::vector<double>> x;
    std::vector<double> y;
    for (int i = 0; i < 12; ++i) {
      x.push_back(row());
      y.push_back(-2 * x.back()[0]);
    }
    ResidualModel m;
    m.fit(x, y);
    int agree = 0, pairs = 0;
    for (int i = 0; i < 50; ++i) {
      const std::vector<double> a = row(), b = row();
      const double truth = -a[0] + b[0];  // > 0: a is slower
      const double corrected = (a[0] + m.predict(a)) - (b[0] + m.predict(b));
      ++pairs;
      agree += (truth > 0) == (corrected > 0);
    }
    EXPECT_GE(agree, pairs * 9 / 10) << "trial " << trial;
  }
}

TEST(ResidualModel, FewSamplesFitAConstant) {
  ResidualModel none;
  none.fit({}, std::vector<double>{});
  EXPECT_EQ(none.predict(std::vector<double>{1, 2}), 0);
  ResidualModel one;
  one.fit({{1, 2}}, std::vector<double>{0.7});
  EXPECT_DOUBLE_EQ(one.predict(std::vector<double>{5, -3}), 0.7);
  // Constant features carry nothing: the fit is the mean target.
  ResidualModel flat;
  flat.fit({{1, 1}, {1, 1}, {1, 1}}, std::vector<double>{1, 2, 3});
  EXPECT_NEAR(flat.predict(std::vector<double>{1, 1}), 2, 1e-12);
}

TEST(ResidualModel, BadShapesAreUsageErrors) {
  ResidualModel m;
  testing::expect_error([&] { m.fit({{1}, {2}}, std::vector<double>{1}); }, ErrorCategory::Usage,
                        {"2 feature rows", "1 targets"});
  testing::expect_error([&] { m.fit({{1, 2}, {2}}, std::vector<double>{1, 2}); }, ErrorCategory::Usage,
                        {"widths 2 and 1"});
  m.fit({{1, 2}, {2, 5}, {3, 1}}, std::vector<double>{1, 2, 3});
  testing::expect_error([&] { m.predict(std::vector<double>{1}); }, ErrorCategory::Usage, {"1 features"});
}

}  // namespace
}  // namespace pto
