#include "cost_model/nnls.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "core/error.h"

namespace pto {

namespace {

// Unconstrained least squares over the columns `active` of `a` (Householder QR).
// Columns that are linearly dependent on earlier ones get 0.
std::vector<double> least_squares(const DenseMatrix& a, const std::vector<size_t>& active,
                                  std::span<const double> b) {
  const size_t m = a.rows, n = active.size();
  std::vector<std::vector<double>> col(n, std::vector<double>(m));  // R overwrites these
  for (size_t j = 0; j < n; ++j) {
    for (size_t i = 0; i < m; ++i) col[j][i] = a(i, active[j]);
  }
  std::vector<double> y(b.begin(), b.end());
  std::vector<bool> dependent(n, false);
  double largest_diagonal = 0;
  for (size_t j = 0; j < n && j < m; ++j) {
    double norm = 0;
    for (size_t i = j; i < m; ++i) norm += col[j][i] * col[j][i];
    norm = std::sqrt(norm);
    largest_diagonal = std::max(largest_diagonal, norm);
    if (norm <= 1e-12 * largest_diagonal || norm == 0) {
      dependent[j] = true;
      continue;
    }
    const double alpha = col[j][j] > 0 ? -norm : norm;
    std::vector<double> v(col[j].begin() + j, col[j].end());
    v[0] -= alpha;
    double v_norm2 = 0;
    for (double x : v) v_norm2 += x * x;
    auto reflect = [&](std::vector<double>& x) {
      double dot = 0;
      for (size_t i = j; i < m; ++i) dot += v[i - j] * x[i];
      const double f = 2 * dot / v_norm2;
      for (size_t i = j; i < m; ++i) x[i] -= f * v[i - j];
    };
    for (size_t k = j; k < n; ++k) reflect(col[k]);
    reflect(y);
  }
  std::vector<double> z(n, 0.0);
  for (size_t jj = std::min(n, m); jj-- > 0;) {
    if (dependent[jj]) continue;
    double s = y[jj];
    for (size_t k = jj + 1; k < n; ++k) s -= col[k][jj] * z[k];
    z[jj] = s / col[jj][jj];
  }
  return z;
}

// Gradient of -||a x - b||^2 / 2: a^T (b - a x).
std::vector<double> descent_direction(const DenseMatrix& a, std::span<const double> x,
                                      std::span<const double> b) {
  std::vector<double> w(a.cols, 0.0);
  for (size_t i = 0; i < a.rows; ++i) {
    double r = b[i];
    for (size_t j = 0; j < a.cols; ++j) r -= a(i, j) * x[j];
    for (size_t j = 0; j < a.cols; ++j) w[j] += a(i, j) * r;
  }
  return w;
}

}  // namespace

std::vector<double> nnls(const DenseMatrix& a, std::span<const double> b) {
  if (b.size() != a.rows) {
    usage_error("nnls: " + std::to_string(a.rows) + " rows but " + std::to_string(b.size()) +
                " right-hand sides");
  }
  const size_t n = a.cols;
  double a_max = 0, b_max = 0;
  for (double v : a.data) a_max = std::max(a_max, std::abs(v));
  for (double v : b) b_max = std::max(b_max, std::abs(v));
  // Gradient entries below this are rounding noise.
  const double tol = 10 * std::numeric_limits<double>::epsilon() *
                     static_cast<double>(std::max(a.rows, n)) * a_max * std::max(b_max, 1.0);
  std::vector<double> x(n, 0.0);
  std::vector<bool> passive(n, false);
  const int max_outer = static_cast<int>(3 * n + 10);
  for (int outer = 0; outer < max_outer; ++outer) {
    std::vector<double> w = descent_direction(a, x, b);
    // Columns whose entry would not help this round (they just failed to stay positive).
    std::vector<bool> excluded(n, false);
    size_t enter = n;
    while (true) {
      enter = n;
      for (size_t j = 0; j < n; ++j) {
        if (!passive[j] && !excluded[j] && w[j] > tol && (enter == n || w[j] > w[enter])) enter = j;
      }
      if (enter == n) return x;  // Kuhn-Tucker conditions hold
      passive[enter] = true;
      std::vector<size_t> active;
      for (size_t j = 0; j < n; ++j) {
        if (passive[j]) active.push_back(j);
      }
      const std::vector<double> z = least_squares(a, active, b);
      const size_t at = std::find(active.begin(), active.end(), enter) - active.begin();
      if (z[at] > 0) break;
      passive[enter] = false;  // degenerate: entering it cannot lower the residual
      excluded[enter] = true;
    }
    // Inner loop: step toward the unconstrained solution on the passive set, dropping
    // the coefficients that would turn negative.
    while (true) {
      std::vector<size_t> active;
      for (size_t j = 0; j < n; ++j) {
        if (passive[j]) active.push_back(j);
      }
      const std::vector<double> z_active = least_squares(a, active, b);
      std::vector<double> z(n, 0.0);
      for (size_t k = 0; k < active.size(); ++k) z[active[k]] = z_active[k];
      double alpha = 1;
      for (size_t j : active) {
        if (z[j] <= 0) alpha = std::min(alpha, x[j] / (x[j] - z[j]));
      }
      for (size_t j = 0; j < n; ++j) x[j] += alpha * (z[j] - x[j]);
      if (alpha >= 1) break;
      const double x_max = *std::max_element(x.begin(), x.end());
      for (size_t j : active) {
        if (x[j] <= 1e-14 * x_max) {
          x[j] = 0;
          passive[j] = false;
        }
      }
    }
  }
  return x;
}

}  // namespace pto
