// core/global_memory.h: a workload's input and output tensors against the target's HBM.
// Random shapes on every built-in target: the check refuses exactly those whose tensors
// take more bytes than the target's HBM (counted by hand here), naming both sizes and the
// target; a target without an HBM figure (the host, 910B2/B3) refuses none; the HBM
// figure leaves the fingerprint alone. (compile needs no such check: a program over
// such tensors is past its task and instruction limits, core/size_limits.h.)
#include "core/global_memory.h"

#include <random>
#include <string>

#include <gtest/gtest.h>

#include "core/op_library.h"
#include "tests/builtin_targets.h"
#include "tests/core/error_testing.h"

namespace pto {
namespace {

int64_t matmul_bytes(int64_t m, int64_t k, int64_t n, int64_t element) { return (m * k + k * n + m * n) * element; }

TEST(GlobalMemory, WorkloadsLargerThanTheHbmAreRefusedOnEveryTargetThatKnowsItsHbm) {
  std::mt19937_64 rng(11);
  int refused = 0, passed = 0;
  for (const std::string& name : builtin_target_names()) {
    const Target target = load_target(name);
    for (int trial = 0; trial < 20; ++trial) {
      const int64_t m = int64_t{1} << (10 + rng() % 16), k = 1024 + static_cast<int64_t>(rng() % 8192);
      const int64_t n = 1024 + static_cast<int64_t>(rng() % 8192);
      const Workload w = Workload::parse_key("matmul|" + std::to_string(m) + "," + std::to_string(k) + "," +
                                             std::to_string(n) + "|fp16");
      const TensorGraph graph = build_graph(w);
      const int64_t bytes = matmul_bytes(m, k, n, 2);
      ASSERT_EQ(global_memory_bytes(graph), bytes) << w.key();
      SCOPED_TRACE(name + " " + w.key());
      if (target.hbm_bytes > 0 && bytes > target.hbm_bytes) {
        ++refused;
        testing::expect_error([&] { check_fits_global_memory(graph, target); }, ErrorCategory::Infeasible,
                              {"of HBM of " + name, "GiB of global memory"});
      } else {
        ++passed;
        EXPECT_NO_THROW(check_fits_global_memory(graph, target));
      }
    }
  }
  EXPECT_GT(refused, 10);
  EXPECT_GT(passed, 10);
}

TEST(GlobalMemory, TheBuiltinHbmFiguresAreThePublishedOnes) {
  // ../shared/ascend-facts.md, "Platform parameters": 64 GiB (910B1), 32 GiB (910B4,
  // 910_93), 128 GiB (950PR); none published for the 910B2 and 910B3.
  constexpr int64_t kGiB = int64_t{1} << 30;
  EXPECT_EQ(load_target("ascend910b1").hbm_bytes, 64 * kGiB);
  EXPECT_EQ(load_target("ascend910b4").hbm_bytes, 32 * kGiB);
  EXPECT_EQ(load_target("ascend910_93").hbm_bytes, 32 * kGiB);
  EXPECT_EQ(load_target("ascend950pr").hbm_bytes, 128 * kGiB);
  EXPECT_EQ(load_target("ascend910b2").hbm_bytes, 0);
  EXPECT_EQ(load_target("ascend910b3").hbm_bytes, 0);
  EXPECT_EQ(testing::host().hbm_bytes, 0);
}

TEST(GlobalMemory, TheHbmFigureLeavesTheFingerprintAlone) {
  Target t = load_target("ascend910b1");
  const std::string fp = t.fingerprint();
  t.hbm_bytes = 0;
  EXPECT_EQ(t.fingerprint(), fp) << "records of a target stay fresh when its HBM size is filled in";
  const TensorGraph huge = build_graph(Workload::parse_key("softmax|8388608,8192|fp16"));  // 128 GiB in and out
  EXPECT_NO_THROW(check_fits_global_memory(huge, t));
}

}  // namespace
}  // namespace pto
