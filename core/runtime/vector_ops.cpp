// Vector instructions over strided windows: fp32 row loops, and an exact per-element
// path for int32 lanes.
#include "core/runtime/vector_ops.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "core/error.h"
#include "core/runtime/convert.h"
#include "core/runtime/copy.h"
#include "core/runtime/vec_math.h"

namespace pto::runtime {
namespace {

constexpr int64_t kOpsChunk = 256;
constexpr float kNegInf = -std::numeric_limits<float>::infinity();

bool is_copy_kind(OpKind op) {
  return op == OpKind::Cast || op == OpKind::Broadcast || op == OpKind::Slice || op == OpKind::Reshape;
}

// ---- fp32 binary -------------------------------------------------------------------

struct AddOp { float operator()(float a, float b) const { return a + b; } };
struct SubOp { float operator()(float a, float b) const { return a - b; } };
struct MulOp { float operator()(float a, float b) const { return a * b; } };
struct DivOp { float operator()(float a, float b) const { return a / b; } };
struct MaxOp { float operator()(float a, float b) const { return a < b ? b : a; } };
struct MinOp { float operator()(float a, float b) const { return b < a ? b : a; } };

template <typename Op>
void binary_row(float* d, int64_t sd, const float* a, int64_t sa, const float* b, int64_t sb,
                int64_t n, Op op) {
  if (sd == 1 && sa == 1 && sb == 1) {
    for (int64_t i = 0; i < n; ++i) d[i] = op(a[i], b[i]);
  } else if (sd == 1 && sa == 1 && sb == 0) {
    const float bv = *b;
    for (int64_t i = 0; i < n; ++i) d[i] = op(a[i], bv);
  } else if (sd == 1 && sa == 0 && sb == 1) {
    const float av = *a;
    for (int64_t i = 0; i < n; ++i) d[i] = op(av, b[i]);
  } else {
    for (int64_t i = 0; i < n; ++i) d[i * sd] = op(a[i * sa], b[i * sb]);
  }
}

template <typename Op>
void binary_f32(const View& dst, const Dims& extent, const View& a, const View& b, Op op) {
  for_each_row<3>(extent, {&dst, &a, &b}, [&](const std::array<char*, 3>& p, int64_t n,
                                                const std::array<int64_t, 3>& s) {
    binary_row(reinterpret_cast<float*>(p[0]), s[0], reinterpret_cast<const float*>(p[1]), s[1],
               reinterpret_cast<const float*>(p[2]), s[2], n, op);
  });
}

void binary_f32(OpKind op, const View& dst, const Dims& extent, const View& a, const View& b) {
  switch (op) {
    case OpKind::Add: return binary_f32(dst, extent, a, b, AddOp{});
    case OpKind::Sub: return binary_f32(dst, extent, a, b, SubOp{});
    case OpKind::Mul: return binary_f32(dst, extent, a, b, MulOp{});
    case OpKind::Div: return binary_f32(dst, extent, a, b, DivOp{});
    case OpKind::Max: return binary_f32(dst, extent, a, b, MaxOp{});
    case OpKind::Min: return binary_f32(dst, extent, a, b, MinOp{});
    default: internal_error(std::string("runtime: '") + op_kind_name(op) + "' is not a binary vector op");
  }
}

// ---- fp32 unary --------------------------------------------------------------------

// Applies a contiguous-row function to strided rows: in place when both rows are
// contiguous, once when the source broadcasts, through a chunk otherwise.
template <typename RowFn>
void unary_f32(const View& dst, const Dims& extent, const View& a, RowFn fn) {
  for_each_row<2>(extent, {&dst, &a}, [&](const std::array<char*, 2>& p, int64_t n,
                                           const std::array<int64_t, 2>& s) {
    auto* d = reinterpret_cast<float*>(p[0]);
    const auto* x = reinterpret_cast<const float*>(p[1]);
    if (s[0] == 1 && s[1] == 1) return fn(d, x, n);
    if (s[1] == 0) {
      float v;
      fn(&v, x, 1);
      for (int64_t i = 0; i < n; ++i) d[i * s[0]] = v;
      return;
    }
    float tmp[kOpsChunk];
    for (int64_t start = 0; start < n; start += kOpsChunk) {
      const int64_t len = std::min(kOpsChunk, n - start);
      for (int64_t i = 0; i < len; ++i) tmp[i] = x[(start + i) * s[1]];
      fn(tmp, tmp, len);
      for (int64_t i = 0; i < len; ++i) d[(start + i) * s[0]] = tmp[i];
    }
  });
}

bool math_fn_of(OpKind op, MathFn* fn) {
  switch (op) {
    case OpKind::Exp: *fn = MathFn::Exp; return true;
    case OpKind::Log: *fn = MathFn::Log; return true;
    case OpKind::Sqrt: *fn = MathFn::Sqrt; return true;
    case OpKind::Rsqrt: *fn = MathFn::Rsqrt; return true;
    case OpKind::Erf: *fn = MathFn::Erf; return true;
    case OpKind::Erfc: *fn = MathFn::Erfc; return true;
    case OpKind::Tanh: *fn = MathFn::Tanh; return true;
    default: return false;
  }
}

void unary_f32(OpKind op, const View& dst, const Dims& extent, const View& a, DType dst_dtype) {
  MathFn fn;
  if (math_fn_of(op, &fn))
    return unary_f32(dst, extent, a, [fn](float* d, const float* x, int64_t n) { apply_math(fn, d, x, n); });
  switch (op) {
    case OpKind::Neg:
      return unary_f32(dst, extent, a, [](float* d, const float* x, int64_t n) {
        for (int64_t i = 0; i < n; ++i) d[i] = -x[i];
      });
    case OpKind::Abs:
      return unary_f32(dst, extent, a, [](float* d, const float* x, int64_t n) {
        for (int64_t i = 0; i < n; ++i) d[i] = std::fabs(x[i]);
      });
    case OpKind::Cast:
    case OpKind::Broadcast:
    case OpKind::Slice:
    case OpKind::Reshape:
      return unary_f32(dst, extent, a, [op, dst_dtype](float* d, const float* x, int64_t n) {
        if (d != x) std::memmove(d, x, static_cast<size_t>(n) * sizeof(float));
        if (op == OpKind::Cast) round_to_dtype(d, n, dst_dtype);
      });
    default:
      internal_error(std::string("runtime: '") + op_kind_name(op) + "' is not a unary vector op");
  }
}

// ---- exact path for int32 lanes ----------------------------------------------------

double read_lane(const char* p, DType lane) {
  if (lane == DType::I32) {
    int32_t v;
    std::memcpy(&v, p, 4);
    return v;
  }
  float v;
  std::memcpy(&v, p, 4);
  return v;
}

// Integer semantics of the declared dtype: int8 and bool saturate, int32 wraps.
int32_t narrow_int(int64_t v, DType declared) {
  if (declared == DType::Bool) return v != 0;
  if (declared == DType::I8) return static_cast<int32_t>(std::clamp<int64_t>(v, -128, 127));
  return static_cast<int32_t>(static_cast<uint32_t>(v));
}

void write_lane(char* p, DType lane, double v, DType declared) {
  if (lane == DType::F32) {
    const float f = static_cast<float>(v);
    std::memcpy(p, &f, 4);
    return;
  }
  const int32_t i = declared == DType::Bool ? (v != 0) : float_to_int_saturating(v, declared == DType::I8 ? DType::I8 : DType::I32);
  std::memcpy(p, &i, 4);
}

// An operand as an integer: fp32 lanes round to nearest even (as a Cast does).
int64_t as_int(double v) {
  if (std::isnan(v)) return 0;
  return static_cast<int64_t>(std::nearbyint(std::clamp(v, -9.0e18, 9.0e18)));
}

bool exact_in_integers(OpKind op) {
  switch (op) {
    case OpKind::Add: case OpKind::Sub: case OpKind::Mul: case OpKind::Max: case OpKind::Min:
    case OpKind::Neg: case OpKind::Abs: case OpKind::Cast: case OpKind::Broadcast:
    case OpKind::Slice: case OpKind::Reshape:
      return true;
    default:
      return false;
  }
}

int64_t int_op(OpKind op, int64_t a, int64_t b) {
  switch (op) {
    case OpKind::Add: return a + b;
    case OpKind::Sub: return a - b;
    case OpKind::Mul: return a * b;
    case OpKind::Max: return std::max(a, b);
    case OpKind::Min: return std::min(a, b);
    case OpKind::Neg: return -a;
    case OpKind::Abs: return a < 0 ? -a : a;
    default: return a;  // the copy kinds
  }
}

double real_op(OpKind op, double a, double b) {
  switch (op) {
    case OpKind::Add: return a + b;
    case OpKind::Sub: return a - b;
    case OpKind::Mul: return a * b;
    case OpKind::Div: return a / b;
    case OpKind::Max: return std::max(a, b);
    case OpKind::Min: return std::min(a, b);
    case OpKind::Exp: return std::exp(a);
    case OpKind::Log: return std::log(a);
    case OpKind::Sqrt: return std::sqrt(a);
    case OpKind::Rsqrt: return 1.0 / std::sqrt(a);
    case OpKind::Erf: return std::erf(a);
    case OpKind::Erfc: return std::erfc(a);
    case OpKind::Tanh: return std::tanh(a);
    case OpKind::Neg: return -a;
    case OpKind::Abs: return std::fabs(a);
    case OpKind::Cast: case OpKind::Broadcast: case OpKind::Slice: case OpKind::Reshape: return a;
    default: internal_error(std::string("runtime: '") + op_kind_name(op) + "' is not a vector op");
  }
}

void elementwise_exact(const View& dst, const Dims& extent, OpKind op, const View& a, const View& b,
                       DType declared) {
  const bool integer = dst.dtype == DType::I32 && exact_in_integers(op);
  for_each_row<3>(extent, {&dst, &a, &b}, [&](const std::array<char*, 3>& p, int64_t n,
                                               const std::array<int64_t, 3>& s) {
    for (int64_t i = 0; i < n; ++i) {
      const double x = read_lane(p[1] + i * s[1] * 4, a.dtype);
      const double y = read_lane(p[2] + i * s[2] * 4, b.dtype);
      char* out = p[0] + i * s[0] * 4;
      if (integer) {
        const int32_t v = narrow_int(int_op(op, as_int(x), as_int(y)), declared);
        std::memcpy(out, &v, 4);
      } else {
        write_lane(out, dst.dtype, real_op(op, x, y), declared);
      }
    }
  });
}

// ---- reductions --------------------------------------------------------------------

float reduce_identity(OpKind op) {
  if (op == OpKind::Amax) return kNegInf;
  if (op == OpKind::Amin) return -kNegInf;
  return 0.0f;
}

template <typename Op>
float reduce_row(const float* x, int64_t stride, int64_t n, float init, Op op) {
  if (stride != 1) {
    float acc = init;
    for (int64_t i = 0; i < n; ++i) acc = op(acc, x[i * stride]);
    return acc;
  }
  // Sixteen independent partials: vectorisable without reassociating one chain.
  constexpr int kLanes = 16;
  float part[kLanes];
  std::fill(part, part + kLanes, init);
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int j = 0; j < kLanes; ++j) part[j] = op(part[j], x[i + j]);
  float acc = init;
  for (; i < n; ++i) acc = op(acc, x[i]);
  for (int j = 0; j < kLanes; ++j) acc = op(acc, part[j]);
  return acc;
}

template <typename Op>
void reduce_f32(const View& dst, const View& rest, const Dims& extent, OpKind kind, Op op) {
  for_each_row<2>(extent, {&dst, &rest}, [&](const std::array<char*, 2>& p, int64_t n,
                                              const std::array<int64_t, 2>& s) {
    auto* d = reinterpret_cast<float*>(p[0]);
    const auto* x = reinterpret_cast<const float*>(p[1]);
    if (s[0] == 0) {
      *d = op(*d, reduce_row(x, s[1], n, reduce_identity(kind), op));
    } else {
      binary_row(d, s[0], d, s[0], x, s[1], n, op);
    }
  });
}

void reduce_exact(OpKind op, const View& dst, const View& rest, const Dims& extent) {
  for_each_row<2>(extent, {&dst, &rest}, [&](const std::array<char*, 2>& p, int64_t n,
                                              const std::array<int64_t, 2>& s) {
    for (int64_t i = 0; i < n; ++i) {
      char* out = p[0] + i * s[0] * 4;
      const double acc = read_lane(out, dst.dtype);
      const double x = read_lane(p[1] + i * s[1] * 4, rest.dtype);
      const OpKind combine = op == OpKind::Sum ? OpKind::Add : (op == OpKind::Amax ? OpKind::Max : OpKind::Min);
      if (dst.dtype == DType::I32) {
        const int32_t v = narrow_int(int_op(combine, as_int(acc), as_int(x)), DType::I32);
        std::memcpy(out, &v, 4);
      } else {
        write_lane(out, dst.dtype, real_op(combine, acc, x), DType::F32);
      }
    }
  });
}

View scalar_view(const void* value, DType lane) {
  View v;
  v.ptr = static_cast<char*>(const_cast<void*>(value));
  v.dtype = lane;
  v.strides.rank = kMaxRank;  // all zero: every index reads the one value
  return v;
}

}  // namespace

void elementwise(const View& dst, const Dims& extent, const ElementwiseArgs& args) {
  if (!args.a) internal_error(std::string("runtime: '") + op_kind_name(args.op) + "' without a source");
  const bool binary = is_binary(args.op);
  if (binary && !args.b && !args.scalar)
    internal_error(std::string("runtime: binary '") + op_kind_name(args.op) + "' without a second operand");

  // The scalar operand becomes a broadcast view of one value in the lane of `a`.
  const float scalar_f = static_cast<float>(args.scalar.value_or(0.0));
  const int32_t scalar_i = static_cast<int32_t>(args.scalar.value_or(0.0));
  const View scalar = scalar_view(args.a->dtype == DType::I32 ? static_cast<const void*>(&scalar_i)
                                                              : static_cast<const void*>(&scalar_f),
                                  args.a->dtype);
  const View* x = args.a;
  const View* y = binary ? (args.scalar ? &scalar : args.b) : args.a;
  if (binary && args.scalar && args.scalar_first) std::swap(x, y);

  const bool all_f32 = dst.dtype == DType::F32 && x->dtype == DType::F32 && y->dtype == DType::F32;
  if (!all_f32) {
    const bool saturates = args.dst_dtype == DType::I8 || args.dst_dtype == DType::Bool;
    if (!is_copy_kind(args.op) || saturates) return elementwise_exact(dst, extent, args.op, *x, *y, args.dst_dtype);
    copy_window(dst, *x, extent, false);  // converts between the lanes
    if (args.op == OpKind::Cast && dst.dtype == DType::F32) unary_f32(OpKind::Cast, dst, extent, dst, args.dst_dtype);
    return;
  }
  if (binary) return binary_f32(args.op, dst, extent, *x, *y);
  unary_f32(args.op, dst, extent, *x, args.dst_dtype);
}

void reduce(OpKind op, const View& dst, const View& src, const Dims& src_extent, int dim) {
  if (op != OpKind::Sum && op != OpKind::Amax && op != OpKind::Amin)
    internal_error(std::string("runtime: '") + op_kind_name(op) + "' is not a reduction");
  if (dim < 0 || dim >= src_extent.rank)
    internal_error("runtime: reduce dim " + std::to_string(dim) + " outside a rank-" +
                   std::to_string(src_extent.rank) + " window");
  // dst starts as the first slice; the rest folds into it, so dst may alias that slice.
  Dims first = src_extent;
  first[dim] = 1;
  copy_window(dst, src, first, false);
  if (src_extent[dim] <= 1) return;
  View rest = src;
  rest.ptr += src.strides[dim] * 4;
  Dims rest_extent = src_extent;
  rest_extent[dim] -= 1;
  if (dst.dtype != DType::F32 || src.dtype != DType::F32) return reduce_exact(op, dst, rest, rest_extent);
  if (op == OpKind::Sum) return reduce_f32(dst, rest, rest_extent, op, AddOp{});
  if (op == OpKind::Amax) return reduce_f32(dst, rest, rest_extent, op, MaxOp{});
  reduce_f32(dst, rest, rest_extent, op, MinOp{});
}

void fill(const View& dst, const Dims& extent, double value, DType dst_dtype) {
  float f = static_cast<float>(value);
  round_to_dtype(&f, 1, dst_dtype);
  const int32_t i = dst_dtype == DType::Bool ? (value != 0) : float_to_int_saturating(value, dst_dtype == DType::I8 ? DType::I8 : DType::I32);
  for_each_row<1>(extent, {&dst}, [&](const std::array<char*, 1>& p, int64_t n,
                                      const std::array<int64_t, 1>& s) {
    if (dst.dtype == DType::I32) {
      auto* d = reinterpret_cast<int32_t*>(p[0]);
      for (int64_t k = 0; k < n; ++k) d[k * s[0]] = i;
    } else {
      auto* d = reinterpret_cast<float*>(p[0]);
      for (int64_t k = 0; k < n; ++k) d[k * s[0]] = f;
    }
  });
}

void causal_mask(const View& dst, const View& src, const Dims& extent, const MaskPosition& pos) {
  if (dst.dtype != DType::F32 || src.dtype != DType::F32)
    internal_error("runtime: causal mask needs float operands");
  if (extent.rank < 2) internal_error("runtime: causal mask needs a window of rank >= 2");
  const int r = extent.rank;
  const int64_t rows = extent[r - 2], cols = extent[r - 1];
  Dims outer = extent;
  outer.rank = r - 2;
  std::array<int64_t, kMaxRank> idx{};
  const int64_t outer_count = outer.elements();
  for (int64_t o = 0; o < outer_count; ++o) {
    int64_t dst_off = 0, src_off = 0;
    for (int d = 0; d < r - 2; ++d) {
      dst_off += idx[d] * dst.strides[d];
      src_off += idx[d] * src.strides[d];
    }
    for (int64_t i = 0; i < rows; ++i) {
      auto* d = reinterpret_cast<float*>(dst.ptr) + dst_off + i * dst.strides[r - 2];
      const auto* x = reinterpret_cast<const float*>(src.ptr) + src_off + i * src.strides[r - 2];
      const int64_t sd = dst.strides[r - 1], sx = src.strides[r - 1];
      // Columns c > row + (cols - rows) are masked: local j >= first_masked.
      const int64_t first_masked =
          std::clamp<int64_t>(pos.row0 + i + (pos.cols - pos.rows) + 1 - pos.col0, 0, cols);
      for (int64_t j = 0; j < first_masked; ++j) d[j * sd] = x[j * sx];
      for (int64_t j = first_masked; j < cols; ++j) d[j * sd] = kNegInf;
    }
    for (int d = r - 3; d >= 0; --d) {
      if (++idx[d] < outer[d]) break;
      idx[d] = 0;
    }
  }
}

}  // namespace pto::runtime
