// NNLS against its definition: the Kuhn-Tucker conditions on random problems, and the
// best feasible least-squares solution found by trying every subset of columns.
#include "cost_model/nnls.h"

#include <cmath>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "core/error.h"

namespace pto {
namespace {

DenseMatrix random_matrix(std::mt19937& rng, size_t rows, size_t cols) {
  std::normal_distribution<double> normal;
  DenseMatrix a(rows, cols);
  for (double& v : a.data) v = normal(rng);
  return a;
}

std::vector<double> residual(const DenseMatrix& a, const std::vector<double>& x,
                             const std::vector<double>& b) {
  std::vector<double> r = b;
  for (size_t i = 0; i < a.rows; ++i) {
    for (size_t j = 0; j < a.cols; ++j) r[i] -= a(i, j) * x[j];
  }
  return r;
}

double norm2(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x * x;
  return s;
}

// Least squares on a subset of columns by the normal equations and Gauss-Jordan
// elimination: a deliberately different method from the one under test.
std::vector<double> subset_least_squares(const DenseMatrix& a, const std::vector<double>& b,
                                         const std::vector<size_t>& cols) {
  const size_t n = cols.size();
  std::vector<std::vector<double>> m(n, std::vector<double>(n + 1, 0.0));
  for (size_t p = 0; p < n; ++p) {
    for (size_t q = 0; q < n; ++q) {
      for (size_t i = 0; i < a.rows; ++i) m[p][q] += a(i, cols[p]) * a(i, cols[q]);
    }
    for (size_t i = 0; i < a.rows; ++i) m[p][n] += a(i, cols[p]) * b[i];
  }
  for (size_t p = 0; p < n; ++p) {
    size_t pivot = p;
    for (size_t r = p + 1; r < n; ++r) {
      if (std::abs(m[r][p]) > std::abs(m[pivot][p])) pivot = r;
    }
    std::swap(m[p], m[pivot]);
    for (size_t r = 0; r < n; ++r) {
      if (r == p) continue;
      const double f = m[r][p] / m[p][p];
      for (size_t q = p; q <= n; ++q) m[r][q] -= f * m[p][q];
    }
  }
  std::vector<double> x(a.cols, 0.0);
  for (size_t p = 0; p < n; ++p) x[cols[p]] = m[p][n] / m[p][p];
  return x;
}

TEST(Nnls, SatisfiesKuhnTuckerOnRandomProblems) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    const size_t cols = 1 + rng() % 10;
    const size_t rows = cols + rng() % 30;
    const DenseMatrix a = random_matrix(rng, rows, cols);
    std::vector<double> b(rows);
    std::normal_distribution<double> normal;
    for (double& v : b) v = normal(rng);
    const std::vector<double> x = nnls(a, b);
    const std::vector<double> r = residual(a, x, b);
    for (size_t j = 0; j < cols; ++j) {
      double w = 0;  // gradient of -|r|^2/2 along column j
      for (size_t i = 0; i < rows; ++i) w += a(i, j) * r[i];
      ASSERT_GE(x[j], 0) << "trial " << trial;
      if (x[j] > 0) {
        EXPECT_NEAR(w, 0, 1e-8) << "trial " << trial << " column " << j;
      } else {
        EXPECT_LE(w, 1e-8) << "trial " << trial << " column " << j;
      }
    }
  }
}

TEST(Nnls, MatchesTheBestFeasibleSubset) {
  std::mt19937 rng(11);
  std::normal_distribution<double> normal;
  for (int trial = 0; trial < 100; ++trial) {
    const size_t cols = 1 + rng() % 5;
    const size_t rows = cols + 2 + rng() % 10;
    const DenseMatrix a = random_matrix(rng, rows, cols);
    std::vector<double> b(rows);
    for (double& v : b) v = normal(rng);
    double best = norm2(b);  // the empty subset: x = 0
    for (unsigned mask = 1; mask < (1u << cols); ++mask) {
      std::vector<size_t> subset;
      for (size_t j = 0; j < cols; ++j) {
        if (mask & (1u << j)) subset.push_back(j);
      }
      const std::vector<double> x = subset_least_squares(a, b, subset);
      bool feasible = true;
      for (double v : x) feasible = feasible && v >= 0;
      if (feasible) best = std::min(best, norm2(residual(a, x, b)));
    }
    EXPECT_NEAR(norm2(residual(a, nnls(a, b), b)), best, 1e-9 * (1 + best)) << "trial " << trial;
  }
}

TEST(Nnls, RecoversAnExactNonNegativeSolution) {
  std::mt19937 rng(3);
  const DenseMatrix a = random_matrix(rng, 40, 8);
  const std::vector<double> truth = {0.5, 0, 3, 1e-3, 0, 7, 2, 0};
  std::vector<double> b(40, 0.0);
  for (size_t i = 0; i < 40; ++i) {
    for (size_t j = 0; j < 8; ++j) b[i] += a(i, j) * truth[j];
  }
  const std::vector<double> x = nnls(a, b);
  for (size_t j = 0; j < 8; ++j) EXPECT_NEAR(x[j], truth[j], 1e-9) << "column " << j;
}

TEST(Nnls, HandlesRepeatedColumns) {
  DenseMatrix a(3, 2);
  a(0, 0) = a(0, 1) = 1;
  a(1, 0) = a(1, 1) = 2;
  a(2, 0) = a(2, 1) = 3;
  const std::vector<double> b = {2, 4, 6};
  const std::vector<double> x = nnls(a, b);
  EXPECT_NEAR(x[0] + x[1], 2, 1e-12);
  EXPECT_GE(x[0], 0);
  EXPECT_GE(x[1], 0);
}

TEST(Nnls, AllNegativeCorrelationGivesZero) {
  DenseMatrix a(2, 1);
  a(0, 0) = 1;
  a(1, 0) = 1;
  const std::vector<double> b = {-1, -2};
  EXPECT_EQ(nnls(a, b), std::vector<double>({0.0}));
}

TEST(Nnls, RejectsMismatchedRightHandSide) {
  const DenseMatrix a(3, 2);
  const std::vector<double> b = {1, 2};
  try {
    nnls(a, b);
    FAIL() << "expected a usage error";
  } catch (const Error& e) {
    EXPECT_EQ(e.category(), ErrorCategory::Usage);
    EXPECT_NE(std::string(e.what()).find("3 rows but 2"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace pto
