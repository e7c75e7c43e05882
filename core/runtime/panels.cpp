// Packing into A/B panels. Three paths by the source's strides: lanes contiguous
// (row copies), depth contiguous (8x8 transposes), anything else (strided gathers).
#include "core/runtime/panels.h"

#include <algorithm>

#if defined(__AVX__)
#include <immintrin.h>
#endif

#include "core/error.h"
#include "core/runtime/convert.h"

namespace pto::runtime {
namespace {

constexpr int64_t kBlock = 64;                    // depth (or lanes) converted at a time
alignas(64) constexpr float kZeros[kBlock] = {};  // stands in for lanes past the matrix

// out[p * out_stride + r] = rows[r][p] for r, p < 8.
inline void transpose8x8(const float* const* rows, int64_t p0, float* out, int64_t out_stride) {
#if defined(__AVX__)
  __m256 r[8];
  for (int i = 0; i < 8; ++i) r[i] = _mm256_loadu_ps(rows[i] + p0);
  __m256 t[8];
  for (int i = 0; i < 4; ++i) {
    t[2 * i] = _mm256_unpacklo_ps(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm256_unpackhi_ps(r[2 * i], r[2 * i + 1]);
  }
  __m256 u[8];
  for (int i = 0; i < 2; ++i) {
    u[4 * i + 0] = _mm256_shuffle_ps(t[4 * i], t[4 * i + 2], _MM_SHUFFLE(1, 0, 1, 0));
    u[4 * i + 1] = _mm256_shuffle_ps(t[4 * i], t[4 * i + 2], _MM_SHUFFLE(3, 2, 3, 2));
    u[4 * i + 2] = _mm256_shuffle_ps(t[4 * i + 1], t[4 * i + 3], _MM_SHUFFLE(1, 0, 1, 0));
    u[4 * i + 3] = _mm256_shuffle_ps(t[4 * i + 1], t[4 * i + 3], _MM_SHUFFLE(3, 2, 3, 2));
  }
  for (int i = 0; i < 4; ++i) {
    _mm256_storeu_ps(out + i * out_stride, _mm256_permute2f128_ps(u[i], u[4 + i], 0x20));
    _mm256_storeu_ps(out + (4 + i) * out_stride, _mm256_permute2f128_ps(u[i], u[4 + i], 0x31));
  }
#else
  for (int p = 0; p < 8; ++p)
    for (int i = 0; i < 8; ++i) out[p * out_stride + i] = rows[i][p0 + p];
#endif
}

// Lanes contiguous in the source (B from a row-major [k, n], A from a transposed GM A).
// The panel width is a template parameter so each lane group copies inline.
template <int W>
void pack_lanes_contiguous(const Panels& dst, int64_t lanes, int64_t depth, const char* src, DType dtype,
                           int64_t depth_stride) {
  const int64_t esize = dtype_size(dtype);
  constexpr int64_t kLaneBlock = kBlock * 4;  // a multiple of both panel widths
  float tmp[kLaneBlock];
  for (int64_t p = 0; p < depth; ++p) {
    const char* line = src + p * depth_stride * esize;
    for (int64_t l0 = 0; l0 < lanes; l0 += kLaneBlock) {
      const int64_t len = std::min(kLaneBlock, lanes - l0);
      const float* vals = reinterpret_cast<const float*>(line) + l0;
      if (dtype != DType::F32) {
        load_row(tmp, line + l0 * esize, dtype, 1, len);
        vals = tmp;
      }
      float* out = dst.base + (l0 / W) * dst.panel_stride + p * W;
      int64_t j = 0;
      for (; j + W <= len; j += W, out += dst.panel_stride)
        for (int c = 0; c < W; ++c) out[c] = vals[j + c];
      if (j == len) continue;
      for (int c = 0; c < W; ++c) out[c] = j + c < len ? vals[j + c] : 0.0f;
    }
  }
}

// Depth contiguous in the source (A from a row-major [m, k], B from a transposed GM B).
void pack_depth_contiguous(const Panels& dst, int64_t lanes, int64_t depth, const char* src,
                           DType dtype, int64_t lane_stride) {
  const int64_t esize = dtype_size(dtype);
  const int width = dst.width;
  float tmp[kPanelColsB][kBlock];
  const float* rows[kPanelColsB];
  for (int64_t j = 0; j * width < lanes; ++j) {
    const int64_t w = std::min<int64_t>(width, lanes - j * width);
    float* panel = dst.base + j * dst.panel_stride;
    for (int64_t pb = 0; pb < depth; pb += kBlock) {
      const int64_t len = std::min(kBlock, depth - pb);
      for (int r = 0; r < width; ++r) {
        if (r >= w) {
          rows[r] = kZeros;
          continue;
        }
        const char* row = src + ((j * width + r) * lane_stride + pb) * esize;
        if (dtype == DType::F32) {
          rows[r] = reinterpret_cast<const float*>(row);
        } else {
          load_row(tmp[r], row, dtype, 1, len);
          rows[r] = tmp[r];
        }
      }
      float* out = panel + pb * width;
      int64_t p = 0;
      for (; p + 8 <= len; p += 8)
        for (int h = 0; h < width; h += 8) transpose8x8(rows + h, p, out + p * width + h, width);
      for (; p < len; ++p)
        for (int r = 0; r < width; ++r) out[p * width + r] = rows[r][p];
    }
  }
}

void pack_strided(const Panels& dst, int64_t lanes, int64_t depth, const char* src, DType dtype,
                  int64_t lane_stride, int64_t depth_stride) {
  const int64_t esize = dtype_size(dtype);
  const int width = dst.width;
  for (int64_t j = 0; j * width < lanes; ++j) {
    const int64_t w = std::min<int64_t>(width, lanes - j * width);
    for (int64_t p = 0; p < depth; ++p) {
      float* out = dst.base + j * dst.panel_stride + p * width;
      load_row(out, src + (j * width * lane_stride + p * depth_stride) * esize, dtype, lane_stride, w);
      std::fill(out + w, out + width, 0.0f);
    }
  }
}

}  // namespace

void pack_panels(const Panels& dst, int64_t lanes, int64_t depth, const void* src, DType dtype,
                 int64_t lane_stride, int64_t depth_stride) {
  if (dst.width != kPanelRowsA && dst.width != kPanelColsB)
    internal_error("runtime: panel width " + std::to_string(dst.width) + " is neither A's nor B's");
  if (lanes <= 0 || depth <= 0) return;
  const auto* bytes = static_cast<const char*>(src);
  if (lane_stride == 1 && dst.width == kPanelRowsA)
    return pack_lanes_contiguous<kPanelRowsA>(dst, lanes, depth, bytes, dtype, depth_stride);
  if (lane_stride == 1)
    return pack_lanes_contiguous<kPanelColsB>(dst, lanes, depth, bytes, dtype, depth_stride);
  if (depth_stride == 1 && lane_stride > 0)
    return pack_depth_contiguous(dst, lanes, depth, bytes, dtype, lane_stride);
  pack_strided(dst, lanes, depth, bytes, dtype, lane_stride, depth_stride);
}

void repack_panels(const Panels& dst, const Panels& src, int64_t lane0, int64_t depth0,
                   int64_t lanes, int64_t depth) {
  const int width = dst.width;
  if (lane0 % width == 0 && src.width == width) {
    // Panel-aligned: each panel's depth range is one contiguous run.
    for (int64_t j = 0; j * width < lanes; ++j) {
      const float* from = src.base + (lane0 / width + j) * src.panel_stride + depth0 * width;
      std::copy(from, from + depth * width, dst.base + j * dst.panel_stride);
    }
  } else {
    for (int64_t l = 0; l < lanes; ++l)
      for (int64_t p = 0; p < depth; ++p) dst.at(l, p) = src.at(lane0 + l, depth0 + p);
  }
  for (int64_t l = lanes; l < align_up(lanes, width); ++l)  // lanes past the window are zero
    for (int64_t p = 0; p < depth; ++p) dst.at(l, p) = 0.0f;
}

}  // namespace pto::runtime
