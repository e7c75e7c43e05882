// Micro-kernels and the loop over C blocks. Each kernel keeps its C block in
// registers for the whole k loop and touches C memory once, at the end.
#include "core/runtime/microkernel.h"

#include <algorithm>

#if defined(__AVX2__) || defined(__AVX512F__)
#include <immintrin.h>
#endif

#include "core/error.h"
#include "core/runtime/panels.h"

namespace pto::runtime {
namespace {

constexpr int kA = kPanelRowsA;
constexpr int kB = kPanelColsB;

// Writes a rows x cols block held in `acc` (row stride `acc_ld`) into C.
void store_block(const float* acc, int64_t acc_ld, float* c, int64_t ldc, int rows, int cols,
                 bool accumulate) {
  for (int r = 0; r < rows; ++r) {
    float* crow = c + r * ldc;
    const float* arow = acc + r * acc_ld;
    if (accumulate) {
      for (int j = 0; j < cols; ++j) crow[j] += arow[j];
    } else {
      std::copy(arow, arow + cols, crow);
    }
  }
}

#if defined(__AVX512F__)
// 8 rows x 16*NV cols; NV B panels, `b_panel_stride` apart.
template <int NV>
void block_avx512(int64_t k, const float* a, const float* b, int64_t b_panel_stride, float* c,
                  int64_t ldc, int rows, int cols, bool accumulate) {
  __m512 acc[kA][NV];
#pragma GCC unroll 8
  for (int r = 0; r < kA; ++r)
#pragma GCC unroll 3
    for (int v = 0; v < NV; ++v) acc[r][v] = _mm512_setzero_ps();
#pragma GCC unroll 2
  for (int64_t p = 0; p < k; ++p) {
    __m512 bv[NV];
#pragma GCC unroll 3
    for (int v = 0; v < NV; ++v) bv[v] = _mm512_loadu_ps(b + v * b_panel_stride + p * kB);
#pragma GCC unroll 8
    for (int r = 0; r < kA; ++r) {
      const __m512 av = _mm512_set1_ps(a[p * kA + r]);
#pragma GCC unroll 3
      for (int v = 0; v < NV; ++v) acc[r][v] = _mm512_fmadd_ps(av, bv[v], acc[r][v]);
    }
  }
  __mmask16 mask[NV];
  for (int v = 0; v < NV; ++v) {
    const int valid = std::clamp(cols - v * kB, 0, kB);
    mask[v] = static_cast<__mmask16>((1u << valid) - 1u);
  }
#pragma GCC unroll 8
  for (int r = 0; r < kA; ++r) {
    if (r >= rows) break;
    float* crow = c + r * ldc;
#pragma GCC unroll 3
    for (int v = 0; v < NV; ++v) {
      __m512 out = acc[r][v];
      if (accumulate) out = _mm512_add_ps(out, _mm512_maskz_loadu_ps(mask[v], crow + v * kB));
      _mm512_mask_storeu_ps(crow + v * kB, mask[v], out);
    }
  }
}

void gemm_avx512(int64_t m, int64_t n, int64_t k, const float* a, int64_t aps, const float* b,
                 int64_t bps, float* c, int64_t ldc, bool accumulate) {
  constexpr int64_t kCols = 3 * kB;
  for (int64_t j = 0; j < n; j += kCols) {
    const int cols = static_cast<int>(std::min(kCols, n - j));
    const float* bj = b + (j / kB) * bps;
    for (int64_t i = 0; i < m; i += kA) {
      const int rows = static_cast<int>(std::min<int64_t>(kA, m - i));
      const float* ai = a + (i / kA) * aps;
      float* ci = c + i * ldc + j;
      if (cols > 2 * kB) {
        block_avx512<3>(k, ai, bj, bps, ci, ldc, rows, cols, accumulate);
      } else if (cols > kB) {
        block_avx512<2>(k, ai, bj, bps, ci, ldc, rows, cols, accumulate);
      } else {
        block_avx512<1>(k, ai, bj, bps, ci, ldc, rows, cols, accumulate);
      }
    }
  }
}
#endif

#if defined(__AVX2__) && defined(__FMA__)
// 4 rows (starting at row r0 of the A panel) x 16 cols (one B panel).
void block_avx2(int64_t k, const float* a, int r0, const float* b, float* c, int64_t ldc, int rows,
                int cols, bool accumulate) {
  __m256 acc[4][2];
  for (auto& row : acc) row[0] = row[1] = _mm256_setzero_ps();
  for (int64_t p = 0; p < k; ++p) {
    const __m256 b0 = _mm256_loadu_ps(b + p * kB);
    const __m256 b1 = _mm256_loadu_ps(b + p * kB + 8);
#pragma GCC unroll 4
    for (int r = 0; r < 4; ++r) {
      const __m256 av = _mm256_broadcast_ss(a + p * kA + r0 + r);
      acc[r][0] = _mm256_fmadd_ps(av, b0, acc[r][0]);
      acc[r][1] = _mm256_fmadd_ps(av, b1, acc[r][1]);
    }
  }
  alignas(32) float tmp[4][kB];
  for (int r = 0; r < 4; ++r) {
    _mm256_store_ps(tmp[r], acc[r][0]);
    _mm256_store_ps(tmp[r] + 8, acc[r][1]);
  }
  store_block(&tmp[0][0], kB, c, ldc, rows, cols, accumulate);
}

void gemm_avx2(int64_t m, int64_t n, int64_t k, const float* a, int64_t aps, const float* b,
               int64_t bps, float* c, int64_t ldc, bool accumulate) {
  for (int64_t j = 0; j < n; j += kB) {
    const int cols = static_cast<int>(std::min<int64_t>(kB, n - j));
    for (int64_t i = 0; i < m; i += 4) {
      const int rows = static_cast<int>(std::min<int64_t>(4, m - i));
      block_avx2(k, a + (i / kA) * aps, static_cast<int>(i % kA), b + (j / kB) * bps,
                 c + i * ldc + j, ldc, rows, cols, accumulate);
    }
  }
}
#endif

void block_portable(int64_t k, const float* a, const float* b, float* c, int64_t ldc, int rows,
                    int cols, bool accumulate) {
  float acc[kA][kB] = {};
  for (int64_t p = 0; p < k; ++p) {
    const float* ap = a + p * kA;
    const float* bp = b + p * kB;
    // Fully unrolled so the compiler keeps acc in vector registers.
#pragma GCC unroll 8
    for (int r = 0; r < kA; ++r)
#pragma GCC unroll 16
      for (int j = 0; j < kB; ++j) acc[r][j] += ap[r] * bp[j];
  }
  store_block(&acc[0][0], kB, c, ldc, rows, cols, accumulate);
}

void gemm_portable(int64_t m, int64_t n, int64_t k, const float* a, int64_t aps, const float* b,
                   int64_t bps, float* c, int64_t ldc, bool accumulate) {
  for (int64_t j = 0; j < n; j += kB)
    for (int64_t i = 0; i < m; i += kA)
      block_portable(k, a + (i / kA) * aps, b + (j / kB) * bps, c + i * ldc + j, ldc,
                     static_cast<int>(std::min<int64_t>(kA, m - i)),
                     static_cast<int>(std::min<int64_t>(kB, n - j)), accumulate);
}

}  // namespace

const char* gemm_isa_name(GemmIsa isa) {
  switch (isa) {
    case GemmIsa::Avx512: return "avx512";
    case GemmIsa::Avx2: return "avx2";
    case GemmIsa::Portable: return "portable";
  }
  return "?";
}

std::vector<GemmIsa> compiled_gemm_isas() {
  std::vector<GemmIsa> isas;
#if defined(__AVX512F__)
  isas.push_back(GemmIsa::Avx512);
#endif
#if defined(__AVX2__) && defined(__FMA__)
  isas.push_back(GemmIsa::Avx2);
#endif
  isas.push_back(GemmIsa::Portable);
  return isas;
}

GemmIsa best_gemm_isa() {
  static const GemmIsa best = compiled_gemm_isas().front();
  return best;
}

void gemm_panels(GemmIsa isa, int64_t m, int64_t n, int64_t k, const float* a, int64_t a_panel_stride,
                 const float* b, int64_t b_panel_stride, float* c, int64_t ldc, bool accumulate) {
  if (m <= 0 || n <= 0) return;
  switch (isa) {
#if defined(__AVX512F__)
    case GemmIsa::Avx512:
      return gemm_avx512(m, n, k, a, a_panel_stride, b, b_panel_stride, c, ldc, accumulate);
#endif
#if defined(__AVX2__) && defined(__FMA__)
    case GemmIsa::Avx2:
      return gemm_avx2(m, n, k, a, a_panel_stride, b, b_panel_stride, c, ldc, accumulate);
#endif
    case GemmIsa::Portable:
      return gemm_portable(m, n, k, a, a_panel_stride, b, b_panel_stride, c, ldc, accumulate);
    default:
      internal_error(std::string("runtime: micro-kernel ") + gemm_isa_name(isa) + " is not compiled in");
  }
}

void gemm_panels_int32(int64_t m, int64_t n, int64_t k, const float* a, int64_t a_panel_stride,
                       const float* b, int64_t b_panel_stride, int32_t* c, int64_t ldc, bool accumulate) {
  const Panels pa{const_cast<float*>(a), kA, a_panel_stride};
  const Panels pb{const_cast<float*>(b), kB, b_panel_stride};
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      uint32_t sum = accumulate ? static_cast<uint32_t>(c[i * ldc + j]) : 0u;
      for (int64_t p = 0; p < k; ++p)
        sum += static_cast<uint32_t>(static_cast<int64_t>(pa.at(i, p)) * static_cast<int64_t>(pb.at(j, p)));
      c[i * ldc + j] = static_cast<int32_t>(sum);
    }
}

}  // namespace pto::runtime
