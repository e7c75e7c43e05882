// Every compiled GEMM micro-kernel against fp64, and int32 exactly.

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <functional>
#include <cmath>
#include <limits>
#include <optional>
#include <random>
#include <sstream>

#include "core/cpu_runtime.h"
#include "core/error.h"
#include "core/runtime/decoded_block.h"
#include "core/runtime/convert.h"
#include "core/runtime/microkernel.h"
#include "core/runtime/panels.h"
#include "core/runtime/scheduler.h"
#include "core/runtime/strided.h"
#include "core/runtime/vec_math.h"
#include "tests/core/error_testing.h"
#include "tests/core/graph_eval.h"
#include "tests/core/runtime/runtime_programs.h"

namespace pto {
namespace {

using namespace testing;

TEST(RuntimeMicroKernel, EveryCompiledIsaMatchesFp64) {
  std::mt19937 rng(5);
  for (runtime::GemmIsa isa : runtime::compiled_gemm_isas()) {
    for (int trial = 0; trial < 12; ++trial) {
      const int64_t m = 1 + rng() % 40, n = 1 + rng() % 70, k = 1 + rng() % 50;
      const int64_t ldc = n + rng() % 5;
      HostTensor a = random_tensor({m, k}, DType::F32, trial), b = random_tensor({k, n}, DType::F32, 100 + trial);
      std::vector<float> pa(runtime::panel_elements(runtime::kPanelRowsA, m, k)), pb(runtime::panel_elements(runtime::kPanelColsB, n, k));
      runtime::pack_panels({pa.data(), runtime::kPanelRowsA, runtime::kPanelRowsA * k}, m, k, a.data(), DType::F32, k, 1);
      runtime::pack_panels({pb.data(), runtime::kPanelColsB, runtime::kPanelColsB * k}, n, k, b.data(), DType::F32, 1, n);
      const float guard = 1234.5f;
      std::vector<float> c((m + 1) * ldc, guard);
      const bool accumulate = trial % 2;
      if (accumulate)
        for (int64_t i = 0; i < m; ++i)
          for (int64_t j = 0; j < n; ++j) c[i * ldc + j] = 0.25f;
      runtime::gemm_panels(isa, m, n, k, pa.data(), runtime::kPanelRowsA * k, pb.data(), runtime::kPanelColsB * k, c.data(), ldc,
                      accumulate);
      for (int64_t i = 0; i <= m; ++i)
        for (int64_t j = 0; j < ldc; ++j) {
          if (i == m || j >= n) {
            ASSERT_EQ(c[i * ldc + j], guard) << runtime::gemm_isa_name(isa) << ": wrote outside C at " << i << "," << j;
            continue;
          }
          double want = accumulate ? 0.25 : 0.0;
          for (int64_t p = 0; p < k; ++p) want += a.get(i * k + p) * b.get(p * n + j);
          ASSERT_NEAR(c[i * ldc + j], want, 1e-5 * std::sqrt(static_cast<double>(k)) + 1e-6)
              << runtime::gemm_isa_name(isa) << " m=" << m << " n=" << n << " k=" << k;
        }
    }
  }
}

TEST(RuntimeMicroKernel, Int32IsExact) {
  const int64_t m = 3, n = 17, k = 40;
  std::vector<float> pa(runtime::panel_elements(runtime::kPanelRowsA, m, k)), pb(runtime::panel_elements(runtime::kPanelColsB, n, k));
  const runtime::Panels a{pa.data(), runtime::kPanelRowsA, runtime::kPanelRowsA * k}, b{pb.data(), runtime::kPanelColsB, runtime::kPanelColsB * k};
  for (int64_t p = 0; p < k; ++p) {
    for (int64_t i = 0; i < m; ++i) a.at(i, p) = static_cast<float>((i * 7 + p) % 255 - 127);
    for (int64_t j = 0; j < n; ++j) b.at(j, p) = static_cast<float>((j * 5 + p * 3) % 255 - 128);
  }
  std::vector<int32_t> c(m * n, 1 << 28);
  runtime::gemm_panels_int32(m, n, k, pa.data(), runtime::kPanelRowsA * k, pb.data(), runtime::kPanelColsB * k, c.data(), n, true);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      int64_t want = 1 << 28;
      for (int64_t p = 0; p < k; ++p) want += static_cast<int64_t>(a.at(i, p)) * static_cast<int64_t>(b.at(j, p));
      EXPECT_EQ(c[i * n + j], want);
    }
}

}  // namespace
}  // namespace pto
