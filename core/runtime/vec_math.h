// Vectorised transcendental functions over fp32 rows: exp, log, erf, erfc, tanh,
// sqrt and rsqrt.
//
// std::exp/erf are scalar calls that GCC does not vectorise without -ffast-math, and
// they dominate softmax/gelu tiles. These evaluate branch-free fp64 polynomials (so
// the loops vectorise) and round once to fp32, which keeps the relative error near
// fp32's own rounding (~1e-7; tests compare against std::). Special values follow
// std:: (exp(-inf) = 0, log(0) = -inf, log(<0) = NaN, erfc(-inf) = 2, NaN -> NaN).
#pragma once

#include <cstdint>

namespace pto::runtime {

enum class MathFn : uint8_t { Exp, Log, Erf, Erfc, Tanh, Sqrt, Rsqrt };

// dst[i] = fn(src[i]) for contiguous rows; dst may equal src.
void apply_math(MathFn fn, float* dst, const float* src, int64_t n);
float apply_math(MathFn fn, float x);

}  // namespace pto::runtime
