// The cost model's DMA-burst term (cost_model/dma_bursts.h): a factor of max(run, burst)
// / run on the bytes a short-row transfer moves, as the simulator charges it. Properties
// on random tiles: no effect when the burst is off or no longer than every row, never
// faster as the burst grows, and the factor follows the rows the tiles cut.
#include <cmath>
#include <random>

#include <gtest/gtest.h>

#include "core/analyze.h"
#include "core/op_library.h"
#include "core/target.h"
#include "cost_model/dma_bursts.h"
#include "cost_model/estimate.h"
#include "tests/cost_model/random_configs.h"

namespace pto {
namespace {

using testing::matmul_workload;
using testing::pick;
using testing::random_cube_config;

Target with_burst(int64_t burst) {
  Target t = load_target("ascend910b1");
  t.gm_min_burst_bytes = burst;
  return t;
}

TEST(BurstFactor, IsBurstOverRunForShortRunsAndOneOtherwise) {
  std::mt19937 rng(3);
  for (int trial = 0; trial < 200; ++trial) {
    const double run = static_cast<double>(1 + rng() % 4096), burst = static_cast<double>(rng() % 1024);
    const double f = burst_factor(run, burst);
    if (burst <= run) {
      EXPECT_EQ(f, 1) << run << " " << burst;
    } else {
      EXPECT_DOUBLE_EQ(f, burst / run);
    }
    EXPECT_GE(burst_factor(run, burst + 64), f);  // monotone in the burst
  }
  EXPECT_EQ(burst_factor(128, 0), 1);
}

// A matmul's factors come from its tiles' rows: A rows of kAL1 elements, B rows of nL1,
// stores of nL1; with a burst no longer than the shortest row, nothing changes.
TEST(BurstFactors, MatmulFactorsFollowTheTileRows) {
  std::mt19937 rng(5);
  int checked = 0;
  for (int trial = 0; trial < 200; ++trial) {
    const TensorGraph g = build_graph(matmul_workload(pick(rng, {256, 512, 1000}), pick(rng, {512, 1024}),
                                              pick(rng, {512, 768})));
    const TileConfig c = random_cube_config(rng);
    const Target t = with_burst(pick(rng, {128, 256, 384, 512}));
    const TilingSummary s = analyze(g, c, t);
    if (!s.feasible) continue;
    const KernelSummary& k = s.kernels.front();
    const BurstFactors f = burst_factors(k, g, c, t);
    const double burst = static_cast<double>(t.gm_min_burst_bytes);
    EXPECT_DOUBLE_EQ(f.write, burst_factor(2.0 * c.cube->nL1, burst));
    const double fa = burst_factor(2.0 * c.cube->kAL1, burst), fb = burst_factor(2.0 * c.cube->nL1, burst);
    EXPECT_GE(f.read, std::min(fa, fb) - 1e-12);
    EXPECT_LE(f.read, std::max(fa, fb) + 1e-12);
    // HBM fills at the fill rate outlast their bursts unless the rows are shorter still.
    EXPECT_DOUBLE_EQ(f.read_miss, std::max(1.0, f.read * t.gm_read_bpc / t.l2_read_bpc));
    EXPECT_EQ(burst_factors(k, g, c, with_burst(0)).read, 1);
    const double shortest = 2.0 * std::min(c.cube->kAL1, c.cube->nL1);
    const BurstFactors none = burst_factors(k, g, c, with_burst(static_cast<int64_t>(shortest)));
    EXPECT_EQ(none.read, 1);
    EXPECT_EQ(none.write, 1);
    ++checked;
  }
  EXPECT_GT(checked, 50);
}

// A vector tile's rows are runs; a tile spanning whole rows is one run of all of them.
TEST(BurstFactors, VectorRowsAreRunsAndWholeRowTilesOneRun) {
  const TensorGraph g = build_graph(testing::row_workload("add", 256, 64));  // fp32 rows of 256 B
  const Target t = with_burst(1024);
  auto factors = [&](int64_t rows, int64_t cols) {
    TileConfig c;
    c.vec = Shape{rows, cols};
    const TilingSummary s = analyze(g, c, t);
    EXPECT_TRUE(s.feasible) << c.to_string();
    return burst_factors(s.kernels.front(), g, c, t);
  };
  EXPECT_DOUBLE_EQ(factors(1, 64).read, 4);    // one 256 B row per run
  EXPECT_DOUBLE_EQ(factors(1, 64).write, 4);
  EXPECT_DOUBLE_EQ(factors(8, 32).read, 8);    // 128 B rows
  EXPECT_DOUBLE_EQ(factors(8, 64).read, 1);    // 8 whole rows: one 2 KB run
  EXPECT_DOUBLE_EQ(factors(2, 64).read, 2);    // 2 whole rows: one 512 B run
}

// The prediction never falls as the burst grows (matmuls and row-wise vector ops), and a
// burst of 0 predicts what a burst no longer than any row predicts.
TEST(BurstFactors, PredictionIsMonotoneInTheBurstAndUnchangedWhenOff) {
  std::mt19937 rng(9);
  int checked = 0;
  for (int trial = 0; trial < 120; ++trial) {
    const bool cube = trial % 2;
    const int64_t cols = pick(rng, {64, 256, 1024});
    const TensorGraph g = cube ? build_graph(matmul_workload(512, pick(rng, {512, 2048}), 512))
                               : build_graph(testing::row_workload(trial % 4 == 1 ? "softmax" : "add", 256, cols));
    TileConfig c = cube ? random_cube_config(rng) : testing::random_row_config(rng, cols);
    if (!cube && trial % 4 != 1) c.vec->back() = pick(rng, {16, 32, 64});  // short rows: add only
    double previous = 0;
    bool feasible = true;
    for (int64_t burst : {0, 64, 128, 256, 512, 1024}) {
      const CostModel model(g, with_burst(burst));
      const double ns = model.predict_ns(c);
      if (!std::isfinite(ns)) { feasible = false; break; }
      EXPECT_GE(ns, previous * (1 - 1e-12)) << c.to_string() << " burst " << burst;
      previous = ns;
    }
    if (!feasible) continue;
    const CostModel off(g, with_burst(0)), tiny(g, with_burst(2));  // no row is shorter than 2 bytes
    EXPECT_DOUBLE_EQ(off.predict_ns(c), tiny.predict_ns(c)) << c.to_string();
    ++checked;
  }
  EXPECT_GT(checked, 40);
}

}  // namespace
}  // namespace pto
