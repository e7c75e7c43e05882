// The CPU Cube: C (+)= A x B on packed panels (core/runtime/panels.h), with C row-major.
//
// Register-blocked FMA micro-kernels: AVX-512 (8 rows x 48 cols, 24 accumulators),
// AVX2 (4 x 16) and a portable one (8 x 16) that the compiler vectorises. The build
// uses -march=native, so the best compiled one runs; tests run every compiled one
// against the portable one. Integer Cube work (int8 x int8 -> int32) has its own exact
// loop.
#pragma once

#include <cstdint>
#include <vector>

namespace pto::runtime {

enum class GemmIsa { Avx512, Avx2, Portable };
const char* gemm_isa_name(GemmIsa isa);
std::vector<GemmIsa> compiled_gemm_isas();  // best first
GemmIsa best_gemm_isa();

// C[m, n] (+)= A[m, k] x B[k, n]. `a` points at the A panel holding row 0 (depth 0),
// panels `a_panel_stride` floats apart; likewise `b` for column 0. C rows are `ldc`
// floats apart. Only C[0..m, 0..n] is written.
void gemm_panels(GemmIsa isa, int64_t m, int64_t n, int64_t k, const float* a, int64_t a_panel_stride,
                 const float* b, int64_t b_panel_stride, float* c, int64_t ldc, bool accumulate);
inline void gemm_panels(int64_t m, int64_t n, int64_t k, const float* a, int64_t a_panel_stride,
                        const float* b, int64_t b_panel_stride, float* c, int64_t ldc, bool accumulate) {
  gemm_panels(best_gemm_isa(), m, n, k, a, a_panel_stride, b, b_panel_stride, c, ldc, accumulate);
}

// Same shapes with integer-valued panels and an int32 C, exact (wrapping) arithmetic.
void gemm_panels_int32(int64_t m, int64_t n, int64_t k, const float* a, int64_t a_panel_stride,
                       const float* b, int64_t b_panel_stride, int32_t* c, int64_t ldc, bool accumulate);

}  // namespace pto::runtime
