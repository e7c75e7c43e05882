// Row conversions between GM dtypes and the fp32 / int32 compute lanes.
#include "core/runtime/convert.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

#if defined(__F16C__) || defined(__AVX512F__)
#include <immintrin.h>
#endif

#include "core/error.h"

namespace pto::runtime {
namespace {

// Chunk for conversions that go through a temporary lane row.
constexpr int64_t kChunk = 256;

float bf16_bits_to_float(uint16_t h) { return std::bit_cast<float>(static_cast<uint32_t>(h) << 16); }

// Round to nearest even; NaN stays a quiet NaN. Branch-free so loops vectorise.
uint16_t float_to_bf16_bits(float f) {
  const uint32_t u = std::bit_cast<uint32_t>(f);
  const uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
  const uint32_t quiet_nan = (u >> 16) | 0x40u;
  return static_cast<uint16_t>((u & 0x7fffffffu) > 0x7f800000u ? quiet_nan : rounded);
}

#if defined(__AVX512F__)
// The maskz forms: the unmasked intrinsics trip GCC 12's -Wmaybe-uninitialized.
constexpr __mmask16 kAllLanes = 0xffff;
#endif

void fp16_to_f32_contiguous(float* dst, const uint16_t* src, int64_t n) {
  int64_t i = 0;
#if defined(__AVX512F__)
  for (; i + 16 <= n; i += 16)
    _mm512_storeu_ps(dst + i, _mm512_maskz_cvtph_ps(kAllLanes, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i))));
#elif defined(__F16C__)
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i))));
#endif
  for (; i < n; ++i) dst[i] = fp16_to_float(src[i]);
}

void f32_to_fp16_contiguous(uint16_t* dst, const float* src, int64_t n) {
  int64_t i = 0;
#if defined(__AVX512F__)
  for (; i + 16 <= n; i += 16)
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + i),
                        _mm512_maskz_cvtps_ph(kAllLanes, _mm512_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
#elif defined(__F16C__)
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i),
                     _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
#endif
  for (; i < n; ++i) dst[i] = float_to_fp16(src[i]);
}

template <typename T>
T raw_load(const void* base, int64_t i) {
  T v;
  std::memcpy(&v, static_cast<const char*>(base) + i * static_cast<int64_t>(sizeof(T)), sizeof(T));
  return v;
}

template <typename T>
void raw_store(void* base, int64_t i, T v) {
  std::memcpy(static_cast<char*>(base) + i * static_cast<int64_t>(sizeof(T)), &v, sizeof(T));
}

// One element of any dtype, as a double (exact for every dtype we hold).
double element(const void* base, DType t, int64_t i) {
  switch (t) {
    case DType::F32: return raw_load<float>(base, i);
    case DType::F16: return fp16_to_float(raw_load<uint16_t>(base, i));
    case DType::BF16: return bf16_bits_to_float(raw_load<uint16_t>(base, i));
    case DType::I32: return raw_load<int32_t>(base, i);
    case DType::I8: return raw_load<int8_t>(base, i);
    case DType::Bool: return raw_load<uint8_t>(base, i) ? 1.0 : 0.0;
  }
  internal_error("runtime: unknown dtype in a GM row");
}

void set_element(void* base, DType t, int64_t i, double v) {
  switch (t) {
    case DType::F32: return raw_store<float>(base, i, static_cast<float>(v));
    case DType::F16: return raw_store<uint16_t>(base, i, double_to_fp16(v));
    case DType::BF16: return raw_store<uint16_t>(base, i, double_to_bf16(v));
    case DType::I32: return raw_store<int32_t>(base, i, float_to_int_saturating(v, t));
    case DType::I8: return raw_store<int8_t>(base, i, static_cast<int8_t>(float_to_int_saturating(v, t)));
    case DType::Bool: return raw_store<uint8_t>(base, i, v != 0 ? 1 : 0);
  }
  internal_error("runtime: unknown dtype in a GM row");
}

void load_f32_contiguous(float* dst, const void* src, DType from, int64_t n) {
  switch (from) {
    case DType::F32:
      std::memcpy(dst, src, static_cast<size_t>(n) * 4);
      return;
    case DType::F16:
      return fp16_to_f32_contiguous(dst, static_cast<const uint16_t*>(src), n);
    case DType::BF16: {
      const auto* s = static_cast<const uint16_t*>(src);
      for (int64_t i = 0; i < n; ++i) dst[i] = bf16_bits_to_float(s[i]);
      return;
    }
    default:
      for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<float>(element(src, from, i));
  }
}

void store_f32_contiguous(void* dst, DType to, const float* src, int64_t n) {
  switch (to) {
    case DType::F32:
      std::memcpy(dst, src, static_cast<size_t>(n) * 4);
      return;
    case DType::F16:
      return f32_to_fp16_contiguous(static_cast<uint16_t*>(dst), src, n);
    case DType::BF16: {
      auto* d = static_cast<uint16_t*>(dst);
      for (int64_t i = 0; i < n; ++i) d[i] = float_to_bf16_bits(src[i]);
      return;
    }
    default:
      for (int64_t i = 0; i < n; ++i) set_element(dst, to, i, src[i]);
  }
}

void add_rows(float* acc, const float* src, int64_t n) {
  for (int64_t i = 0; i < n; ++i) acc[i] += src[i];
}

void add_rows(int32_t* acc, const int32_t* src, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    acc[i] = static_cast<int32_t>(static_cast<uint32_t>(acc[i]) + static_cast<uint32_t>(src[i]));
}

}  // namespace

int32_t float_to_int_saturating(double v, DType to) {
  if (std::isnan(v)) return 0;
  const double lo = to == DType::I8 ? -128.0 : (to == DType::Bool ? 0.0 : -2147483648.0);
  const double hi = to == DType::I8 ? 127.0 : (to == DType::Bool ? 1.0 : 2147483647.0);
  return static_cast<int32_t>(std::clamp(std::nearbyint(v), lo, hi));
}

void load_row(float* dst, const void* src, DType from, int64_t stride, int64_t n) {
  if (n <= 0) return;
  if (stride == 1) return load_f32_contiguous(dst, src, from, n);
  if (stride == 0) {
    std::fill(dst, dst + n, static_cast<float>(element(src, from, 0)));
    return;
  }
  for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<float>(element(src, from, i * stride));
}

void load_row(int32_t* dst, const void* src, DType from, int64_t stride, int64_t n) {
  if (n <= 0) return;
  if (from == DType::I32 && stride == 1) {
    std::memcpy(dst, src, static_cast<size_t>(n) * 4);
    return;
  }
  for (int64_t i = 0; i < n; ++i) {
    const double v = element(src, from, i * stride);
    dst[i] = is_float(from) ? float_to_int_saturating(v, DType::I32) : static_cast<int32_t>(v);
  }
}

void store_row(void* dst, DType to, int64_t stride, const float* src, int64_t n, bool accumulate) {
  if (n <= 0) return;
  if (to == DType::F32 && stride == 1 && accumulate) return add_rows(static_cast<float*>(dst), src, n);
  if (stride == 1 && !accumulate) return store_f32_contiguous(dst, to, src, n);
  float tmp[kChunk];
  for (int64_t start = 0; start < n; start += kChunk) {
    const int64_t len = std::min(kChunk, n - start);
    void* at = static_cast<char*>(dst) + start * stride * dtype_size(to);
    if (accumulate) {
      load_row(tmp, at, to, stride, len);
      add_rows(tmp, src + start, len);
    } else {
      std::copy(src + start, src + start + len, tmp);
    }
    if (stride == 1) {
      store_f32_contiguous(at, to, tmp, len);
    } else {
      for (int64_t i = 0; i < len; ++i) set_element(at, to, i * stride, tmp[i]);
    }
  }
}

void store_row(void* dst, DType to, int64_t stride, const int32_t* src, int64_t n, bool accumulate) {
  if (n <= 0) return;
  if (to == DType::I32 && stride == 1) {
    auto* d = static_cast<int32_t*>(dst);
    if (accumulate) return add_rows(d, src, n);
    std::memcpy(d, src, static_cast<size_t>(n) * 4);
    return;
  }
  for (int64_t i = 0; i < n; ++i) {
    double v = src[i];
    if (accumulate) v += element(dst, to, i * stride);
    if (!is_float(to)) v = static_cast<int32_t>(static_cast<uint32_t>(static_cast<int64_t>(v)));
    set_element(dst, to, i * stride, v);
  }
}

void round_to_dtype(float* data, int64_t n, DType to) {
  if (to == DType::BF16) {
    for (int64_t i = 0; i < n; ++i) data[i] = bf16_bits_to_float(float_to_bf16_bits(data[i]));
    return;
  }
  if (to != DType::F16) return;
  uint16_t tmp[kChunk];
  for (int64_t start = 0; start < n; start += kChunk) {
    const int64_t len = std::min(kChunk, n - start);
    f32_to_fp16_contiguous(tmp, data + start, len);
    fp16_to_f32_contiguous(data + start, tmp, len);
  }
}

}  // namespace pto::runtime
