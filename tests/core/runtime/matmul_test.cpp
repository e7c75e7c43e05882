// Tiled matmul programs on the runtime against fp64 references: tails, transposes,
// batches, dtypes, split-K, both TMOV forms, repeated runs.

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

HostTensor matmul_reference(const CubeCase& c, const HostTensor& a, const HostTensor& b) {
  const int64_t B = std::max<int64_t>(c.batch, 1);
  HostTensor out(batched(c, {c.m, c.n}, c.batch), c.out);
  for (int64_t bi = 0; bi < B; ++bi)
    for (int64_t i = 0; i < c.m; ++i)
      for (int64_t j = 0; j < c.n; ++j) {
        double acc = 0;
        for (int64_t p = 0; p < c.k; ++p) {
          const double x = a.get(bi * c.m * c.k + (c.ta ? p * c.m + i : i * c.k + p));
          const double y = b.get(bi * c.k * c.n + (c.tb ? j * c.k + p : p * c.n + j));
          acc += x * y;
        }
        out.set((bi * c.m + i) * c.n + j, acc);
      }
  return out;
}

void check_matmul(const CubeCase& c, uint64_t seed) {
  SCOPED_TRACE(c.str());
  const Program p = matmul_program(c);
  const HostTensor a = random_tensor(p.tensors[0].shape, c.in, seed);
  const HostTensor b = random_tensor(p.tensors[1].shape, c.in, seed + 1);
  const std::vector<HostTensor> got = run_program(p, {a, b}, c.threads);
  ASSERT_EQ(got.size(), 1u);
  const HostTensor want = matmul_reference(c, a, b);
  EXPECT_TRUE(all_close(got[0], want, c.k)) << "max diff " << max_abs_diff(got[0], want);
}

TEST(RuntimeMatmul, OneTile) {
  CubeCase c;
  c.m = 16, c.n = 16, c.k = 16;
  check_matmul(c, 1);
}

TEST(RuntimeMatmul, RandomTilesWithTailsTransposesAndDtypes) {
  std::mt19937 rng(2024);
  auto pick = [&](std::initializer_list<int64_t> v) { return *(v.begin() + rng() % v.size()); };
  for (int trial = 0; trial < 40; ++trial) {
    CubeCase c;
    c.batch = pick({0, 0, 2});
    c.m = 1 + rng() % 90, c.n = 1 + rng() % 110, c.k = 1 + rng() % 130;
    c.mL0 = pick({16, 32, 48}), c.mL1 = c.mL0 * pick({1, 2, 3});
    c.nL0 = pick({16, 32, 48}), c.nL1 = c.nL0 * pick({1, 2});
    c.kL0 = pick({16, 32}), c.kL1 = c.kL0 * pick({1, 2, 4});
    c.ta = rng() % 2, c.tb = rng() % 2;
    c.in = std::vector<DType>{DType::F32, DType::F16, DType::BF16}[rng() % 3];
    c.out = rng() % 2 ? DType::F32 : c.in;
    c.shared_l0c = rng() % 2;
    c.threads = 1 + rng() % 2;
    check_matmul(c, trial);
  }
}

TEST(RuntimeMatmul, SplitKAccumulatesAtomicallyAfterTheZeroKernel) {
  std::mt19937 rng(77);
  for (int trial = 0; trial < 10; ++trial) {
    CubeCase c;
    c.m = 1 + rng() % 70, c.n = 1 + rng() % 70, c.k = 40 + rng() % 200;
    c.mL0 = c.mL1 = 32, c.nL0 = c.nL1 = 32, c.kL0 = 16, c.kL1 = 32;
    c.chunks = 2 + static_cast<int>(rng() % 4);
    c.in = trial % 2 ? DType::F16 : DType::F32;
    c.threads = 2;
    check_matmul(c, 500 + trial);
  }
}

TEST(RuntimeMatmul, EarlyLoadForcesTmovCopiesAndStaysCorrect) {
  for (bool early : {false, true}) {
    CubeCase c;
    c.m = 40, c.n = 33, c.k = 100;
    c.mL0 = c.mL1 = 48, c.nL0 = c.nL1 = 48, c.kL0 = c.kL1 = 32;
    c.early_load = early;
    c.ta = early;
    const Program p = matmul_program(c);
    // The L0 buffers are views into L1 unless a TLOAD into the same L1 slot comes
    // between a TMOV and its TMATMUL.
    const runtime::DecodedBlock plan = runtime::decode_block(p.blocks.back());
    for (const runtime::DecodedBuffer& b : plan.buffers) {
      if (b.level != MemLevel::L0A && b.level != MemLevel::L0B) continue;
      EXPECT_EQ(b.l0_view, !early) << b.name;
    }
    check_matmul(c, 9);
  }
}

TEST(RuntimeMatmul, RepeatedRunsReuseScratchAndSeeNewInputs) {
  CubeCase c;
  c.m = 50, c.n = 70, c.k = 90;
  c.mL0 = 32, c.mL1 = 64, c.nL0 = 32, c.nL1 = 64, c.kL0 = 32, c.kL1 = 64;
  c.chunks = 2;
  const Program p = matmul_program(c);
  CpuExecutor exec(p, ExecOptions{2});
  for (uint64_t seed : {1, 2, 1}) {
    const HostTensor a = random_tensor(p.tensors[0].shape, c.in, seed), b = random_tensor(p.tensors[1].shape, c.in, seed + 7);
    const std::vector<HostTensor> got = exec.run({a, b});
    EXPECT_TRUE(all_close(got[0], matmul_reference(c, a, b), c.k)) << "seed " << seed;
  }
}

}  // namespace
}  // namespace pto
