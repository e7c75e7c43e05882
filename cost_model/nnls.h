// Non-negative least squares: minimise ||A x - b|| subject to x >= 0 (Lawson-Hanson).
//
// Calibration fits a handful of cost-model coefficients that must never go negative (a
// negative bandwidth scale or overhead means nothing). Problems are small — a few
// thousand rows, about ten columns — so a dense active-set method with a Householder
// least-squares solve per step is exact and fast enough, without a numerics library.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

namespace pto {

// Row-major dense matrix, just enough for NNLS.
struct DenseMatrix {
  size_t rows = 0, cols = 0;
  std::vector<double> data;

  DenseMatrix(size_t r, size_t c) : rows(r), cols(c), data(r * c, 0.0) {}
  double& operator()(size_t r, size_t c) { return data[r * cols + c]; }
  double operator()(size_t r, size_t c) const { return data[r * cols + c]; }
};

// The x >= 0 minimising ||a x - b||; usage Error when b's length is not a.rows.
std::vector<double> nnls(const DenseMatrix& a, std::span<const double> b);

}  // namespace pto
