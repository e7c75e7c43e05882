// Reference kernels: fp64 loops, one rounding to the output dtype at the end.
#include "core/reference_kernels.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <numbers>
#include <vector>

namespace pto::reference {
namespace {

using Values = std::vector<double>;

Values values(const HostTensor& t) {
  Values v(static_cast<size_t>(t.size()));
  for (int64_t i = 0; i < t.size(); ++i) v[i] = t.get(i);
  return v;
}

HostTensor rounded(const Shape& shape, DType dtype, const Values& v) {
  HostTensor out(shape, dtype);
  for (int64_t i = 0; i < out.size(); ++i) out.set(i, v[i]);
  return out;
}

// The matrices of a batch in their logical (untransposed) row-major layout.
Values logical(const Values& stored, int64_t batch, int64_t rows, int64_t cols, bool transposed) {
  if (!transposed) return stored;
  Values out(stored.size());
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c)
        out[(b * rows + r) * cols + c] = stored[(b * cols + c) * rows + r];
  return out;
}

// c[M,N] = a[M,K] x b[K,N], all row-major.
void matmul_rows(const double* a, const double* b, double* c, int64_t m, int64_t k, int64_t n) {
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < m; ++i) {
    double* row = c + i * n;
    std::fill(row, row + n, 0.0);
    for (int64_t p = 0; p < k; ++p) {
      const double aip = a[i * k + p];
      const double* brow = b + p * n;
      for (int64_t j = 0; j < n; ++j) row[j] += aip * brow[j];
    }
  }
}

struct MatmulDims {
  Shape out_shape;
  int64_t batch = 1, m = 0, k = 0, n = 0;
};

MatmulDims matmul_dims(const HostTensor& a, const HostTensor& b, bool transpose_a, bool transpose_b) {
  const Shape& sa = a.shape();
  const size_t r = sa.size();
  MatmulDims d;
  d.m = transpose_a ? sa[r - 1] : sa[r - 2];
  d.k = transpose_a ? sa[r - 2] : sa[r - 1];
  d.n = transpose_b ? b.shape()[r - 2] : b.shape()[r - 1];
  d.out_shape = Shape(sa.begin(), sa.end() - 2);
  d.batch = num_elements(d.out_shape);
  d.out_shape.push_back(d.m);
  d.out_shape.push_back(d.n);
  return d;
}

Values matmul_values(const HostTensor& a, const HostTensor& b, bool transpose_a, bool transpose_b,
                     const MatmulDims& d) {
  const Values la = logical(values(a), d.batch, d.m, d.k, transpose_a);
  const Values lb = logical(values(b), d.batch, d.k, d.n, transpose_b);
  Values out(static_cast<size_t>(d.batch * d.m * d.n));
  for (int64_t bt = 0; bt < d.batch; ++bt)
    matmul_rows(la.data() + bt * d.m * d.k, lb.data() + bt * d.k * d.n, out.data() + bt * d.m * d.n,
                d.m, d.k, d.n);
  return out;
}

double gelu_of(double x) { return 0.5 * x * (1 + std::erf(x / std::numbers::sqrt2)); }

template <typename F>
HostTensor zip(const HostTensor& x, const HostTensor& y, F f) {
  Values out = values(x);
  const Values other = values(y);
  for (size_t i = 0; i < out.size(); ++i) out[i] = f(out[i], other[i]);
  return rounded(x.shape(), x.dtype(), out);
}

template <typename F>
HostTensor map(const HostTensor& x, F f) {
  Values v = values(x);
  for (double& e : v) e = f(e);
  return rounded(x.shape(), x.dtype(), v);
}

int64_t last_dim(const HostTensor& x) { return x.shape().empty() ? 1 : x.shape().back(); }

// Applies `row_op(in, out, C)` to each row of the last dim.
template <typename F>
HostTensor per_row(const HostTensor& x, const Shape& out_shape, int64_t out_cols, F row_op) {
  const int64_t cols = last_dim(x);
  const int64_t rows = x.size() / cols;
  const Values in = values(x);
  Values out(static_cast<size_t>(rows * out_cols));
  for (int64_t r = 0; r < rows; ++r) row_op(in.data() + r * cols, out.data() + r * out_cols, cols);
  return rounded(out_shape, x.dtype(), out);
}

void softmax_row(const double* in, double* out, int64_t cols) {
  const double peak = *std::max_element(in, in + cols);
  double total = 0;
  for (int64_t c = 0; c < cols; ++c) total += out[c] = std::exp(in[c] - peak);
  for (int64_t c = 0; c < cols; ++c) out[c] /= total;
}

Shape without_last(const Shape& s) { return Shape(s.begin(), s.end() - 1); }

}  // namespace

HostTensor matmul(const HostTensor& a, const HostTensor& b, bool transpose_a, bool transpose_b, DType out) {
  const MatmulDims d = matmul_dims(a, b, transpose_a, transpose_b);
  return rounded(d.out_shape, out, matmul_values(a, b, transpose_a, transpose_b, d));
}

HostTensor matmul_bias_gelu(const HostTensor& a, const HostTensor& b, const HostTensor& bias) {
  const MatmulDims d = matmul_dims(a, b, false, false);
  Values y = matmul_values(a, b, false, false, d);
  const Values beta = values(bias);
  for (size_t i = 0; i < y.size(); ++i) y[i] = gelu_of(y[i] + beta[i % d.n]);
  return rounded(d.out_shape, a.dtype(), y);
}

HostTensor elementwise(const Expression& e, const std::vector<HostTensor>& inputs) {
  std::vector<Values> in;
  for (const HostTensor& t : inputs) in.push_back(values(t));
  Values out(in.at(0).size());
  const int64_t size = static_cast<int64_t>(out.size());
#pragma omp parallel
  {
    std::vector<double> point(in.size());  // the inputs at one element
#pragma omp for schedule(static)
    for (int64_t i = 0; i < size; ++i) {
      for (size_t t = 0; t < in.size(); ++t) point[t] = in[t][i];
      out[i] = evaluate_expression(e.root, point.data());
    }
  }
  return rounded(inputs[0].shape(), inputs[0].dtype(), out);
}

HostTensor add(const HostTensor& x, const HostTensor& y) { return zip(x, y, std::plus<>()); }
HostTensor mul(const HostTensor& x, const HostTensor& y) { return zip(x, y, std::multiplies<>()); }
HostTensor exp(const HostTensor& x) { return map(x, [](double v) { return std::exp(v); }); }
HostTensor log(const HostTensor& x) { return map(x, [](double v) { return std::log(v); }); }
HostTensor sqrt(const HostTensor& x) { return map(x, [](double v) { return std::sqrt(v); }); }
HostTensor erfc(const HostTensor& x) { return map(x, [](double v) { return std::erfc(v); }); }
HostTensor gelu(const HostTensor& x) { return map(x, gelu_of); }

HostTensor sum_last(const HostTensor& x) {
  return per_row(x, without_last(x.shape()), 1, [](const double* in, double* out, int64_t cols) {
    *out = 0;
    for (int64_t c = 0; c < cols; ++c) *out += in[c];
  });
}

HostTensor amax_last(const HostTensor& x) {
  return per_row(x, without_last(x.shape()), 1, [](const double* in, double* out, int64_t cols) {
    *out = *std::max_element(in, in + cols);
  });
}

HostTensor amin_last(const HostTensor& x) {
  return per_row(x, without_last(x.shape()), 1, [](const double* in, double* out, int64_t cols) {
    *out = *std::min_element(in, in + cols);
  });
}

HostTensor softmax(const HostTensor& x) { return per_row(x, x.shape(), last_dim(x), softmax_row); }

HostTensor layernorm(const HostTensor& x, const HostTensor& gamma, const HostTensor& beta, double eps) {
  const Values g = values(gamma), bt = values(beta);
  return per_row(x, x.shape(), last_dim(x), [&](const double* in, double* out, int64_t cols) {
    double mean = 0, var = 0;
    for (int64_t c = 0; c < cols; ++c) mean += in[c];
    mean /= static_cast<double>(cols);
    for (int64_t c = 0; c < cols; ++c) var += (in[c] - mean) * (in[c] - mean);
    const double inv_std = 1 / std::sqrt(var / static_cast<double>(cols) + eps);
    for (int64_t c = 0; c < cols; ++c) out[c] = (in[c] - mean) * inv_std * g[c] + bt[c];
  });
}

HostTensor rmsnorm(const HostTensor& x, const HostTensor& gamma, double eps) {
  const Values g = values(gamma);
  return per_row(x, x.shape(), last_dim(x), [&](const double* in, double* out, int64_t cols) {
    double squares = 0;
    for (int64_t c = 0; c < cols; ++c) squares += in[c] * in[c];
    const double inv_rms = 1 / std::sqrt(squares / static_cast<double>(cols) + eps);
    for (int64_t c = 0; c < cols; ++c) out[c] = in[c] * inv_rms * g[c];
  });
}

HostTensor attention(const HostTensor& q, const HostTensor& k, const HostTensor& v, bool causal) {
  const Shape& s = q.shape();  // [B, H, S, D]
  const int64_t heads = s[0] * s[1], seq = s[2], dim = s[3];
  const Values qv = values(q), vv = values(v);
  const Values kt = logical(values(k), heads, dim, seq, true);  // k^T per head: [D, S]
  const double scale = 1 / std::sqrt(static_cast<double>(dim));
  Values out(static_cast<size_t>(q.size()));
  Values scores(static_cast<size_t>(seq * seq));
  for (int64_t h = 0; h < heads; ++h) {
    const int64_t off = h * seq * dim;
    matmul_rows(qv.data() + off, kt.data() + off, scores.data(), seq, dim, seq);
    for (int64_t i = 0; i < seq; ++i) {
      double* row = scores.data() + i * seq;
      for (int64_t j = 0; j < seq; ++j)
        row[j] = causal && j > i ? -std::numeric_limits<double>::infinity() : row[j] * scale;
      softmax_row(row, row, seq);
    }
    // The op casts its probabilities to the input dtype before the second matmul.
    const Values probs = values(rounded({seq * seq}, q.dtype(), scores));
    matmul_rows(probs.data(), vv.data() + off, out.data() + off, seq, seq, dim);
  }
  return rounded(s, q.dtype(), out);
}

namespace {

double round_to(double x, DType t) {
  if (t == DType::F16) return fp16_to_float(double_to_fp16(x));
  if (t == DType::BF16) return bf16_to_float(double_to_bf16(x));
  return static_cast<float>(x);
}

// K or V of one (batch, KV head) as doubles, dequantized by its per-128-token scales.
Values kv_rows(const HostTensor& t, const HostTensor* scale, int64_t b, int64_t g) {
  const Shape& s = t.shape();  // [B, KVH, SKV, D]
  const int64_t seq = s[2], dim = s[3], base = (b * s[1] + g) * seq * dim;
  const int64_t blocks = ceil_div(seq, 128);
  Values out(static_cast<size_t>(seq * dim));
  for (int64_t j = 0; j < seq; ++j) {
    const double factor = scale ? scale->get((b * s[1] + g) * blocks + j / 128) : 1.0;
    for (int64_t d = 0; d < dim; ++d) out[j * dim + d] = t.get(base + j * dim + d) * factor;
  }
  return out;
}

}  // namespace

HostTensor flash_attention(const HostTensor& q, const HostTensor& k, const HostTensor& v, const HostTensor* k_scale,
                           const HostTensor* v_scale, bool causal) {
  const Shape& s = q.shape();  // [B, H, SQ, D]
  const int64_t batch = s[0], heads = s[1], sq = s[2], dim = s[3];
  const int64_t kv_heads = k.shape()[1], skv = k.shape()[2], group = heads / kv_heads;
  const double scale = 1 / std::sqrt(static_cast<double>(dim));
  Values out(static_cast<size_t>(q.size()));
  const Values qv = values(q);
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t g = 0; g < kv_heads; ++g) {
      const Values kk = kv_rows(k, k_scale, b, g), vv = kv_rows(v, v_scale, b, g);
#pragma omp parallel for schedule(static)
      for (int64_t row = 0; row < group * sq; ++row) {  // the group's heads, each sq rows
        const int64_t h = g * group + row / sq, i = row % sq, at = ((b * heads + h) * sq + i) * dim;
        Values p(static_cast<size_t>(skv));
        for (int64_t j = 0; j < skv; ++j) {
          double dot = 0;
          for (int64_t d = 0; d < dim; ++d) dot += qv[at + d] * kk[j * dim + d];
          p[j] = causal && j > i + (skv - sq) ? -std::numeric_limits<double>::infinity() : dot * scale;
        }
        softmax_row(p.data(), p.data(), skv);
        for (int64_t j = 0; j < skv; ++j) p[j] = round_to(p[j], q.dtype());
        for (int64_t d = 0; d < dim; ++d) {
          double acc = 0;
          for (int64_t j = 0; j < skv; ++j) acc += p[j] * vv[j * dim + d];
          out[at + d] = acc;
        }
      }
    }
  }
  return rounded(s, q.dtype(), out);
}

}  // namespace pto::reference
