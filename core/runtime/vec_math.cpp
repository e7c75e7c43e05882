// Branch-free fp64 kernels behind the fp32 transcendental rows.
//
// Each row is converted to fp64 in small chunks, the kernel runs over the chunk as a
// plain loop of arithmetic and selects (which GCC vectorises; mixing float and double
// in one loop with selects defeats it, hence the chunks), and the result is rounded
// back to fp32 once.
#include "core/runtime/vec_math.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <limits>

#if defined(__AVX512F__) || defined(__AVX__)
#include <immintrin.h>
#endif

#include "core/error.h"

namespace pto::runtime {
namespace {

constexpr int64_t kMathChunk = 64;
constexpr double kLn2 = 0.6931471805599453094;
constexpr double kLog2e = 1.4426950408889634074;
constexpr double kTwoOverSqrtPi = 1.1283791670955125739;
constexpr double kOneOverSqrtPi = 0.5641895835477562869;

// c[0] + c[1] x + ... + c[N-1] x^(N-1), fully unrolled.
template <size_t N>
inline double horner(double x, const std::array<double, N>& c) {
  double p = c[N - 1];
#pragma GCC unroll 16
  for (int k = static_cast<int>(N) - 2; k >= 0; --k) p = p * x + c[k];
  return p;
}

// 1/k!: e^r = sum r^k / k!.
constexpr std::array<double, 12> kExpTaylor = [] {
  std::array<double, 12> c{};
  double factorial = 1;
  for (size_t k = 0; k < c.size(); ++k) {
    c[k] = 1.0 / factorial;
    factorial *= static_cast<double>(k + 1);
  }
  return c;
}();

// 1/(2j+1): atanh(s) = s * sum (s^2)^j / (2j+1).
constexpr std::array<double, 8> kAtanhSeries = [] {
  std::array<double, 8> c{};
  for (size_t j = 0; j < c.size(); ++j) c[j] = 1.0 / static_cast<double>(2 * j + 1);
  return c;
}();

// exp for |x| up to ~700: 2^n * e^r with |r| <= ln2/2 and a degree-11 Taylor
// polynomial (relative error ~1e-15). Callers clamp x to a range whose result in fp32
// is already 0 or inf, so the exponent field never overflows.
inline double exp_core(double x) {
  const double n = __builtin_nearbyint(x * kLog2e);
  const double r = x - n * kLn2;
  const double p = horner(r, kExpTaylor);
  const double scale = std::bit_cast<double>(static_cast<uint64_t>(static_cast<int64_t>(n) + 1023) << 52);
  return p * scale;
}

inline double clamp_exp_arg(double x) {
  x = x < -200.0 ? -200.0 : x;  // fp32 results: 0 below ~-104, inf above ~89
  return x > 200.0 ? 200.0 : x;
}

inline double exp_d(double x) { return exp_core(clamp_exp_arg(x)); }

// log x = e*ln2 + log m with m in [sqrt(1/2), sqrt(2)), log m = 2 atanh(s), s = (m-1)/(m+1).
// Positive finite x only; log_specials patches the rest in fp32 (a select on the
// input inside this fp64 loop stops GCC from vectorising it).
inline double log_d(double x) {
  const uint64_t bits = std::bit_cast<uint64_t>(x);
  const int64_t e_raw = static_cast<int64_t>((bits >> 52) & 0x7ff) - 1023;
  const double m_raw = std::bit_cast<double>((bits & 0x000fffffffffffffull) | 0x3ff0000000000000ull);
  const bool high = m_raw > 1.4142135623730951;
  const double m = high ? m_raw * 0.5 : m_raw;
  const double e = static_cast<double>(e_raw) + (high ? 1.0 : 0.0);
  const double s = (m - 1.0) / (m + 1.0);
  const double p = horner(s * s, kAtanhSeries);
  return e * kLn2 + 2.0 * s * p;
}

inline float log_specials(float x, float r) {
  constexpr float inf = std::numeric_limits<float>::infinity();
  r = x == 0.0f ? -inf : r;
  r = x < 0.0f ? std::numeric_limits<float>::quiet_NaN() : r;
  r = x == inf ? inf : r;
  return x != x ? x : r;
}

// Below this |x|, erf comes from its series and erfc = 1 - erf loses nothing that
// matters; above it, erfc comes from its continued fraction.
constexpr double kErfSplit = 2.0;

// erf(x) = 2/sqrt(pi) e^{-x^2} sum_n 2^n x^{2n+1} / (1*3*...*(2n+1)): all terms
// positive, so no cancellation; 26 terms reach ~1e-10 for |x| <= 2.
inline double erf_series(double x) {
  const double xc = x > kErfSplit ? kErfSplit : (x < -kErfSplit ? -kErfSplit : x);
  const double x2 = xc * xc;
  double term = xc, sum = xc;
#pragma GCC unroll 26
  for (int n = 1; n < 26; ++n) {
    term *= x2 * (2.0 / (2 * n + 1));
    sum += term;
  }
  return kTwoOverSqrtPi * exp_core(-x2) * sum;
}

// erfc(z) for z >= 2: e^{-z^2}/sqrt(pi) / (z + (1/2)/(z + 1/(z + (3/2)/(z + ...)))),
// 20 levels evaluated forwards (Wallis) so there is one division; ~1e-9 at z = 2.
inline double erfc_fraction(double z) {
  const double zc = z < kErfSplit ? kErfSplit : (z > 12.0 ? 12.0 : z);  // erfc(12) underflows fp32
  double a_prev = 1.0, a = zc;  // numerators A_{k-1}, A_k
  double b_prev = 0.0, b = 1.0;  // denominators
#pragma GCC unroll 20
  for (int k = 1; k <= 20; ++k) {
    const double coef = 0.5 * k;
    const double a_next = zc * a + coef * a_prev;
    const double b_next = zc * b + coef * b_prev;
    a_prev = a;
    a = a_next;
    b_prev = b;
    b = b_next;
  }
  return exp_core(-zc * zc) * kOneOverSqrtPi * b / a;
}

inline double erfc_d(double x) {
  const double z = x < 0 ? -x : x;
  const double tail = erfc_fraction(z);  // erfc(|x|) for |x| >= split
  double r = z < kErfSplit ? 1.0 - erf_series(x) : (x < 0 ? 2.0 - tail : tail);
  r = z > 12.0 ? (x < 0 ? 2.0 : 0.0) : r;
  return x != x ? x : r;
}

inline double erf_d(double x) {
  const double z = x < 0 ? -x : x;
  const double tail = 1.0 - erfc_fraction(z);
  double r = z < kErfSplit ? erf_series(x) : (x < 0 ? -tail : tail);
  r = z > 12.0 ? (x < 0 ? -1.0 : 1.0) : r;
  return x != x ? x : r;
}

// tanh = (e^{2x} - 1) / (e^{2x} + 1); near 0 the cubic avoids the cancellation.
inline double tanh_d(double x) {
  const double xc = x < -20.0 ? -20.0 : (x > 20.0 ? 20.0 : x);  // tanh(20) rounds to 1
  const double e = exp_core(2.0 * xc);
  const double r = (e - 1.0) / (e + 1.0);
  const double z = x < 0 ? -x : x;
  return z < 1e-4 ? x - x * x * x / 3.0 : r;
}

inline float no_specials(float, float r) { return r; }

template <double (*Fn)(double), float (*Specials)(float, float) = no_specials>
void rows_through_f64(float* dst, const float* src, int64_t n) {
  float in[kMathChunk], out[kMathChunk];  // dst may alias src
  double buf[kMathChunk];
  for (int64_t start = 0; start < n; start += kMathChunk) {
    const int64_t len = std::min(kMathChunk, n - start);
    std::copy(src + start, src + start + len, in);
    for (int64_t i = 0; i < len; ++i) buf[i] = in[i];
    for (int64_t i = 0; i < len; ++i) buf[i] = Fn(buf[i]);
    for (int64_t i = 0; i < len; ++i) out[i] = static_cast<float>(buf[i]);
    for (int64_t i = 0; i < len; ++i) dst[start + i] = Specials(in[i], out[i]);
  }
}

void sqrt_row(float* dst, const float* src, int64_t n, bool reciprocal) {
  int64_t i = 0;
#if defined(__AVX512F__)
  const __m512 one = _mm512_set1_ps(1.0f);
  for (; i + 16 <= n; i += 16) {
    const __m512 s = _mm512_maskz_sqrt_ps(0xffff, _mm512_loadu_ps(src + i));  // maskz: see convert.cpp
    _mm512_storeu_ps(dst + i, reciprocal ? _mm512_div_ps(one, s) : s);
  }
#elif defined(__AVX__)
  const __m256 one = _mm256_set1_ps(1.0f);
  for (; i + 8 <= n; i += 8) {
    const __m256 s = _mm256_sqrt_ps(_mm256_loadu_ps(src + i));
    _mm256_storeu_ps(dst + i, reciprocal ? _mm256_div_ps(one, s) : s);
  }
#endif
  for (; i < n; ++i) {
    const float s = std::sqrt(src[i]);
    dst[i] = reciprocal ? 1.0f / s : s;
  }
}

}  // namespace

void apply_math(MathFn fn, float* dst, const float* src, int64_t n) {
  switch (fn) {
    case MathFn::Exp: return rows_through_f64<exp_d>(dst, src, n);
    case MathFn::Log: return rows_through_f64<log_d, log_specials>(dst, src, n);
    case MathFn::Erf: return rows_through_f64<erf_d>(dst, src, n);
    case MathFn::Erfc: return rows_through_f64<erfc_d>(dst, src, n);
    case MathFn::Tanh: return rows_through_f64<tanh_d>(dst, src, n);
    case MathFn::Sqrt: return sqrt_row(dst, src, n, false);
    case MathFn::Rsqrt: return sqrt_row(dst, src, n, true);
  }
  internal_error("runtime: unknown math function");
}

float apply_math(MathFn fn, float x) {
  float out;
  apply_math(fn, &out, &x, 1);
  return out;
}

}  // namespace pto::runtime
