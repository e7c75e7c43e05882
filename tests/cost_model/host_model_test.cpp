// Properties of the host cost model (cost_model/host_model.h) on real analyze()
// summaries of a fixed CPU description (not this machine's, so the tests are the same
// everywhere): caches that overflow never make a config faster, more threads never make
// it slower, packing grows with the tiles that re-pack the operands, a narrow register
// block costs more per flop, row loops over 1-wide rows cost per element, and the
// prediction is the linear form calibration fits.
#include <cmath>
#include <random>

#include <gtest/gtest.h>

#include "core/op_library.h"
#include "core/target.h"
#include "cost_model/estimate.h"
#include "cost_model/host_model.h"
#include "tests/cost_model/random_configs.h"

namespace pto {
namespace {

using testing::matmul_workload;
using testing::random_cube_config;
using testing::random_row_config;
using testing::row_workload;

// An AVX-512 host with 48 KiB L1d, 1 MiB L2, 32 MiB LLC at 2.6 GHz.
Target fixed_host(int threads = 1) {
  Target t = load_target("host");
  t.aic_cores = t.aiv_cores = threads;
  t.clock_mhz = 2600;
  t.simd_bytes = t.align_bytes = 64;
  t.cpu_flops_per_cycle = 64;
  t.ub = t.l0c = t.bt = t.fixbuf = 48 * 1024;
  t.l0a = t.l0b = 24 * 1024;
  t.l1 = 1024 * 1024;
  t.l2_bytes = 32 * 1024 * 1024;
  return t;
}

// The same host with caches `factor` times smaller.
Target smaller_caches(Target t, int64_t factor) {
  for (int64_t* level : {&t.ub, &t.l1, &t.l0a, &t.l0b, &t.l0c, &t.l2_bytes}) *level /= factor;
  return t;
}

TileConfig cube_config(int64_t mL0, int64_t mL1, int64_t kL0, int64_t kL1, int64_t nL0, int64_t nL1) {
  TileConfig t;
  t.cube = CubeTile{mL0, mL1, kL0, kL1, kL1, nL0, nL1, false, true};
  t.nbuffer = 1;
  return t;
}

// Random feasible cube configs of a ragged fp32 matmul on `t`.
std::vector<TileConfig> feasible_cube_configs(const CostModel& model, uint32_t seed, int count) {
  std::mt19937 rng(seed);
  std::vector<TileConfig> out;
  for (int tries = 0; tries < 50 * count && static_cast<int>(out.size()) < count; ++tries) {
    const TileConfig c = random_cube_config(rng);
    if (model.analyze(c).feasible) out.push_back(c);
  }
  return out;
}

TEST(HostModel, PricesTheHostTargetsOnly) {
  EXPECT_TRUE(is_host_target(fixed_host()));
  EXPECT_FALSE(is_host_target(load_target("ascend910b1")));
}

TEST(HostModel, CacheOverflowNeverPredictsFaster) {
  const TensorGraph g = build_graph(matmul_workload(333, 777, 555, DType::F32));
  const CostModel fits(g, fixed_host());
  const CostModel overflows(g, smaller_caches(fixed_host(), 16));
  const std::vector<TileConfig> configs = feasible_cube_configs(fits, 5, 40);
  ASSERT_GE(configs.size(), 20u);
  int slower = 0;
  for (const TileConfig& c : configs) {
    const double a = fits.predict_ns(c), b = overflows.predict_ns(c);
    EXPECT_GE(b, a) << c.to_string();
    slower += b > a;
  }
  EXPECT_GT(slower, 0);  // some working sets do overflow the smaller caches

  const TensorGraph v = build_graph(row_workload("layernorm", 512, 2048));
  const CostModel vfits(v, fixed_host()), voverflows(v, smaller_caches(fixed_host(), 16));
  std::mt19937 rng(8);
  for (int i = 0; i < 20; ++i) {
    const TileConfig c = random_row_config(rng, 2048);
    EXPECT_GE(voverflows.predict_ns(c), vfits.predict_ns(c)) << c.to_string();
  }
}

TEST(HostModel, MoreThreadsNeverSlower) {
  const TensorGraph g = build_graph(matmul_workload(512, 512, 512, DType::F32));
  const CostModel one(g, fixed_host(1)), two(g, fixed_host(2)), four(g, fixed_host(4));
  for (const TileConfig& c : feasible_cube_configs(one, 9, 30)) {
    const TilingSummary s = one.analyze(c);
    EXPECT_LE(two.predict_ns(c), one.predict_ns(c)) << c.to_string();
    EXPECT_LE(four.predict_ns(c), two.predict_ns(c)) << c.to_string();
    if (s.kernels[0].aic_tasks >= 4) {  // enough tasks to share: strictly faster
      EXPECT_LT(two.predict_ns(c), one.predict_ns(c)) << c.to_string();
    }
  }
}

TEST(HostModel, PackingGrowsWithTheTilesThatRepackAnOperand) {
  const TensorGraph g = build_graph(matmul_workload(512, 512, 1024, DType::F32));
  const CostModel model(g, fixed_host());
  // A is re-packed once per N tile: halving nL1 doubles its packing.
  double previous = 0;
  for (int64_t nL1 : {256, 128, 64}) {
    const Estimate e = model.estimate(cube_config(64, 64, 64, 128, 64, nL1));
    ASSERT_TRUE(e.feasible) << format_violations(e.violations);
    EXPECT_GT(e.breakdown.mte2_l2, previous) << "nL1 " << nL1;
    previous = e.breakdown.mte2_l2;
  }
  // B is re-packed once per M tile.
  previous = 0;
  for (int64_t mL1 : {256, 128, 64}) {
    const Estimate e = model.estimate(cube_config(64, mL1, 64, 128, 64, 64));
    ASSERT_TRUE(e.feasible) << format_violations(e.violations);
    EXPECT_GT(e.breakdown.mte2_l2, previous) << "mL1 " << mL1;
    previous = e.breakdown.mte2_l2;
  }
}

TEST(HostModel, NarrowRegisterBlocksCostMorePerFlop) {
  const Target target = fixed_host();
  const TensorGraph g = build_graph(matmul_workload(64, 64, 64, DType::F32));
  const HostModel host(g, target);
  std::mt19937 rng(4);
  for (int i = 0; i < 20; ++i) {
    const int64_t m = 16 * (1 + rng() % 8), k = 16 * (1 + rng() % 16);
    const double per_col_48 = host.tmatmul_fma_cycles(m, 48, k) / 48;
    EXPECT_LT(per_col_48, host.tmatmul_fma_cycles(m, 16, k) / 16);
    EXPECT_LE(per_col_48, host.tmatmul_fma_cycles(m, 64, k) / 64);  // a 48 + 16 split
    EXPECT_NEAR(host.tmatmul_fma_cycles(m, 96, 2 * k), 4 * host.tmatmul_fma_cycles(m, 48, k), 1e-9);
  }
  EXPECT_EQ(host.tmatmul_blocks(64, 96), 8 * 2);
  EXPECT_EQ(host.tmatmul_blocks(64, 112), 8 * 3);
}

TEST(HostModel, ShortKStepsPayTheAccumulatorsMoreOften) {
  // The same tile, K walked in 16-deep or 128-deep TMATMULs: the first re-reads and
  // re-writes the C blocks eight times as often.
  const TensorGraph g = build_graph(matmul_workload(256, 1024, 256, DType::F32));
  const CostModel model(g, fixed_host());
  const Estimate shallow = model.estimate(cube_config(64, 128, 16, 128, 96, 96));
  const Estimate deep = model.estimate(cube_config(64, 128, 128, 128, 96, 96));
  ASSERT_TRUE(shallow.feasible && deep.feasible);
  EXPECT_GT(shallow.breakdown.fix, deep.breakdown.fix);
  EXPECT_GT(shallow.predicted_ns, deep.predicted_ns);
}

TEST(HostModel, OneWideRowsPayTheRowLoopPerElement) {
  // softmax over rows of one element: every instruction is all row calls.
  const TensorGraph wide = build_graph(row_workload("softmax", 1024, 64));
  const TensorGraph narrow = build_graph(row_workload("softmax", 65536, 1));
  const CostModel a(wide, fixed_host()), b(narrow, fixed_host());
  TileConfig wide_tile, narrow_tile;
  wide_tile.vec = Shape{16, 64};
  narrow_tile.vec = Shape{1024, 1};
  const Estimate ew = a.estimate(wide_tile), en = b.estimate(narrow_tile);
  ASSERT_TRUE(ew.feasible && en.feasible);
  EXPECT_GT(en.breakdown.instr, 10 * ew.breakdown.instr);  // same elements, 64x the rows
}

TEST(HostModel, PredictionIsTheLinearFormCalibrationFits) {
  const TensorGraph g = build_graph(matmul_workload(333, 777, 555, DType::F32));
  const CostModel model(g, fixed_host(2));
  Coefficients other = model.coefficients();
  for (int i = 0; i < kNumCoefs; ++i) other.value[i] *= 1.0 + 0.1 * i;
  const CostModel scaled(g, fixed_host(2), other);
  for (const TileConfig& c : feasible_cube_configs(model, 13, 20)) {
    const TilingSummary s = model.analyze(c);
    const TimeTerms terms = model.terms(s, c, other);
    EXPECT_NEAR(terms.value(), scaled.predict_ns(c), 1e-9 * scaled.predict_ns(c));
    double sum = 0;
    for (int j = 0; j < kNumCoefs; ++j) sum += other.value[j] * terms.amount(coef_at(j));
    EXPECT_NEAR(sum, terms.value(), 1e-9 * terms.value());
  }
}

}  // namespace
}  // namespace pto
