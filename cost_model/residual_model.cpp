#include "cost_model/residual_model.h"

#include <cmath>
#include <limits>
#include <string>

#include "core/error.h"

namespace pto {

namespace {

// Ridge penalties tried per fit, in units of the (standardised) sample count.
constexpr double kPenalties[] = {0.001, 0.003, 0.01, 0.03, 0.1, 0.3, 1, 3, 10, 30};

using Matrix = std::vector<std::vector<double>>;

// Cholesky factor L (lower) of a symmetric positive definite matrix, in place.
void cholesky(Matrix& a) {
  const size_t n = a.size();
  for (size_t j = 0; j < n; ++j) {
    double d = a[j][j];
    for (size_t k = 0; k < j; ++k) d -= a[j][k] * a[j][k];
    a[j][j] = std::sqrt(std::max(d, 1e-12));
    for (size_t i = j + 1; i < n; ++i) {
      double s = a[i][j];
      for (size_t k = 0; k < j; ++k) s -= a[i][k] * a[j][k];
      a[i][j] = s / a[j][j];
    }
  }
}

// Solves L L^T x = b with the factor from cholesky().
std::vector<double> solve(const Matrix& l, std::vector<double> b) {
  const size_t n = l.size();
  for (size_t i = 0; i < n; ++i) {
    for (size_t k = 0; k < i; ++k) b[i] -= l[i][k] * b[k];
    b[i] /= l[i][i];
  }
  for (size_t i = n; i-- > 0;) {
    for (size_t k = i + 1; k < n; ++k) b[i] -= l[k][i] * b[k];
    b[i] /= l[i][i];
  }
  return b;
}

double dot(std::span<const double> a, std::span<const double> b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

struct RidgeFit {
  std::vector<double> weights;
  double loo_error = 0;  // mean squared leave-one-out residual
  std::vector<double> loo_residuals;
};

// Ridge on centred targets `y` and standardised rows `x` of weights `w` (summing to
// `total`) with penalty `lambda`. With unit weights every product by a weight is exact:
// the fit is the unweighted one to the last bit.
RidgeFit ridge(const Matrix& x, const std::vector<double>& y, const std::vector<double>& w, double total,
               double lambda) {
  const size_t n = x.size(), d = x.front().size();
  Matrix a(d, std::vector<double>(d, 0));
  std::vector<double> b(d, 0);
  for (size_t r = 0; r < n; ++r) {
    for (size_t i = 0; i < d; ++i) {
      b[i] += w[r] * x[r][i] * y[r];
      for (size_t j = 0; j <= i; ++j) a[i][j] += w[r] * x[r][i] * x[r][j];
    }
  }
  for (size_t i = 0; i < d; ++i) {
    for (size_t j = 0; j < i; ++j) a[j][i] = a[i][j];
    a[i][i] += lambda;
  }
  cholesky(a);
  RidgeFit fit;
  fit.weights = solve(a, b);
  // Leave-one-out residual of row r: e_r / (1 - h_rr), h_rr = w_r x_r^T A^-1 x_r, plus
  // the centring's own w_r / total.
  for (size_t r = 0; r < n; ++r) {
    const std::vector<double> z = solve(a, x[r]);
    const double h = w[r] * dot(x[r], z) + w[r] / total;
    const double e = (y[r] - dot(x[r], fit.weights)) / std::max(1 - h, 1e-6);
    fit.loo_error += w[r] * e * e / total;
    fit.loo_residuals.push_back(e);
  }
  return fit;
}

}  // namespace

void ResidualModel::fit(const std::vector<std::vector<double>>& features, std::span<const double> targets,
                        std::span<const double> weights) {
  if (features.size() != targets.size())
    usage_error("residual model: " + std::to_string(features.size()) + " feature rows for " +
                std::to_string(targets.size()) + " targets");
  if (!weights.empty() && weights.size() != targets.size())
    usage_error("residual model: " + std::to_string(weights.size()) + " weights for " +
                std::to_string(targets.size()) + " targets");
  const size_t n = features.size();
  const std::vector<double> w = weights.empty() ? std::vector<double>(n, 1.0) : std::vector<double>(weights.begin(), weights.end());
  double total = 0;
  for (double v : w) {
    if (!(v > 0) || !std::isfinite(v)) usage_error("residual model: weight " + std::to_string(v) + " is not positive");
    total += v;
  }
  const size_t d = n ? features.front().size() : 0;
  for (const auto& row : features)
    if (row.size() != d)
      usage_error("residual model: feature rows of widths " + std::to_string(d) + " and " +
                  std::to_string(row.size()));
  samples_ = n;
  intercept_ = 0;
  for (size_t r = 0; r < n; ++r) intercept_ += w[r] * targets[r] / total;
  mean_.clear(), scale_.clear(), weights_.clear();
  penalty_ = 0;
  loo_rms_ = 0;
  loo_residuals_.clear();
  if (n < 2 || d == 0) return;

  mean_.assign(d, 0);
  scale_.assign(d, 0);
  for (size_t r = 0; r < n; ++r)
    for (size_t i = 0; i < d; ++i) mean_[i] += w[r] * features[r][i] / total;
  for (size_t r = 0; r < n; ++r)
    for (size_t i = 0; i < d; ++i)
      scale_[i] += w[r] * (features[r][i] - mean_[i]) * (features[r][i] - mean_[i]) / total;
  for (double& s : scale_) s = s > 1e-18 ? std::sqrt(s) : 0;  // a constant feature gets weight 0

  Matrix x(n, std::vector<double>(d, 0));
  std::vector<double> y(n);
  for (size_t r = 0; r < n; ++r) {
    for (size_t i = 0; i < d; ++i) x[r][i] = scale_[i] > 0 ? (features[r][i] - mean_[i]) / scale_[i] : 0;
    y[r] = targets[r] - intercept_;
  }
  double best = std::numeric_limits<double>::infinity();
  for (double p : kPenalties) {
    RidgeFit f = ridge(x, y, w, total, p * total);
    if (f.loo_error < best) {
      best = f.loo_error;
      penalty_ = p;
      weights_ = std::move(f.weights);
      loo_residuals_ = std::move(f.loo_residuals);
    }
  }
  loo_rms_ = std::sqrt(best);
}

double ResidualModel::predict(std::span<const double> features) const {
  double y = intercept_;
  if (weights_.empty()) return y;
  if (features.size() != weights_.size())
    usage_error("residual model: " + std::to_string(features.size()) + " features, fitted on " +
                std::to_string(weights_.size()));
  for (size_t i = 0; i < weights_.size(); ++i)
    if (scale_[i] > 0) y += weights_[i] * (features[i] - mean_[i]) / scale_[i];
  return y;
}

}  // namespace pto
