// The model's formula on hand-built summaries, where every number can be worked out on
// paper: per-pipe work, overlap with and without n-buffering, waves and tails, the
// shared-bandwidth roofline, the fused AIC/AIV pipeline, soft-capacity spills. These pin
// the arithmetic of cost_model/estimate.cpp independently of core's analyze().
#include <cmath>
#include <limits>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/analyze.h"
#include "core/error.h"
#include "core/op_library.h"
#include "core/target.h"
#include "cost_model/estimate.h"

namespace pto {
namespace {

// One cycle per ns, round rates, no overheads, rooflines out of the way.
Target paper_target() {
  Target t = load_target("ascend910b1");
  t.aic_cores = 4;
  t.aiv_cores = 8;
  t.clock_mhz = 1000;
  t.gm_read_bpc = 10;
  t.l2_read_bpc = 20;
  t.l2_write_bpc = 20;
  t.l1_to_l0a_bpc = 100;
  t.l1_to_l0b_bpc = 50;
  t.l0c_to_ub_bpc = 40;
  t.ub_to_gm_bpc = 10;
  t.hbm_gbps = 1e12;
  t.l2_gbps = 1e12;
  t.gm_read_latency = 0;
  t.gm_write_latency = 0;
  t.kernel_launch_cycles = 0;
  t.task_dispatch_cycles = 0;
  return t;
}

Coefficients paper_coefficients(const Target& t) {
  Coefficients c = Coefficients::defaults(t);
  c[Coef::Instr] = 0;
  return c;
}

TensorGraph matmul_graph() {
  Workload w;
  w.op = "matmul";
  w.shape = {64, 64, 64};
  w.dtype = DType::F16;
  return build_graph(w);
}

NodeId matmul_node(const TensorGraph& g) {
  for (const Node& n : g.nodes()) {
    if (n.kind == OpKind::Matmul) return n.id;
  }
  return -1;
}

// A 2x2 grid of 32x32 Cube tiles, two K steps each. Per task: 8000 operand bytes, half
// of them A (cold: one wave, so every load waits on its fill) and half B (left in L2 by
// an earlier kernel: hits), so MTE2 =
// 4000/10 + 4000/20 = 600; MTE1 = 20000/100 + 10000/50 = 400; M = 1000 fractals; FIX =
// 4000 / min(40, 20) = 200.
KernelSummary cube_kernel(const TensorGraph& g, int64_t tasks = 4) {
  KernelSummary k;
  k.kernel = 0;
  k.nodes = {matmul_node(g)};
  k.uses_cube = true;
  k.iteration = {64, 64};
  k.tile = {32, 32};
  k.tile_counts = {2, 2};
  k.tail = {32, 32};
  k.aic_tasks = tasks;
  k.k_steps = 2;
  k.fractals = 1000 * tasks;
  k.useful_flops = 2.0 * 64 * 64 * 64;
  k.gm_read_bytes = 8000.0 * tasks;
  k.gm_write_bytes = 4000.0 * tasks;
  k.l1_to_l0a_bytes = 20000.0 * tasks;
  k.l1_to_l0b_bytes = 10000.0 * tasks;
  k.l0c_out_bytes = 4000.0 * tasks;
  k.cube_a = 0;
  k.cube_b = 1;
  k.cube_out = 2;
  k.reads = {{0, 4000.0 * tasks, 4000.0 * tasks, false}, {1, 4000.0 * tasks, 4000.0 * tasks, true}};
  return k;
}

TilingSummary summary_of(std::vector<KernelSummary> kernels) {
  TilingSummary s;
  s.kernels = std::move(kernels);
  return s;
}

constexpr double kInfinityForTests = std::numeric_limits<double>::infinity();

// Every kernel at n-buffer depth n, its L0A / L0B too (analyze puts the depths in the
// summary).
TilingSummary at_depth(TilingSummary s, int n) {
  for (KernelSummary& k : s.kernels) k.nbuffer = k.l0_slots = n;
  return s;
}

TEST(EstimateFormula, PipesAddUpWithoutNBuffering) {
  const Target t = paper_target();
  const TensorGraph g = matmul_graph();
  const CostModel model(g, t, paper_coefficients(t));
  const Estimate e = model.estimate(at_depth(summary_of({cube_kernel(g)}), 1), {});
  ASSERT_TRUE(e.feasible);
  EXPECT_NEAR(e.predicted_ns, 600 + 400 + 1000 + 200, 1e-9);
  EXPECT_NEAR(e.breakdown.mte2_hbm, 400, 1e-9);
  EXPECT_NEAR(e.breakdown.mte2_l2, 200, 1e-9);
  EXPECT_NEAR(e.breakdown.mte1, 400, 1e-9);
  EXPECT_NEAR(e.breakdown.cube, 1000, 1e-9);
  EXPECT_NEAR(e.breakdown.fix, 200, 1e-9);
  EXPECT_NEAR(e.kernels.at(0).l2_hit_ratio, 0.5, 1e-12);
  EXPECT_EQ(e.bound, Bound::Cube);
}

TEST(EstimateFormula, NBufferingOverlapsToTheSlowestPipePlusFillAndDrain) {
  const Target t = paper_target();
  const TensorGraph g = matmul_graph();
  const CostModel model(g, t, paper_coefficients(t));
  // Slowest pipe M = 1000; the others (1200) add their share of one of the 2 steps.
  EXPECT_NEAR(model.estimate(at_depth(summary_of({cube_kernel(g)}), 2), {}).predicted_ns,
              1000 + 1200 / 2.0, 1e-9);
}

// L0 operands that fit once only (kL0 x nL0 too large for two L0B slots): a TMATMUL's
// operands load after the previous TMATMUL is done with the slot, so MTE1 and M run in
// turn while MTE2 and FIX still overlap them. The simulator runs the program's flags
// the same way (tests/cost_model/model_vs_sim_test.cpp checks the two agree).
TEST(EstimateFormula, OneL0SlotMakesMte1AndTheCubeOneStage) {
  const Target t = paper_target();
  const TensorGraph g = matmul_graph();
  const CostModel model(g, t, paper_coefficients(t));
  TilingSummary s = at_depth(summary_of({cube_kernel(g)}), 2);
  s.kernels[0].l0_slots = 1;
  // Slowest stage MTE1 + M = 1400; MTE2 600 and FIX 200 add their share of one of 2 steps.
  const Estimate e = model.estimate(s, {});
  EXPECT_NEAR(e.predicted_ns, 1400 + 800 / 2.0, 1e-9);
  // explain says why.
  EXPECT_EQ(e.to_json()["kernels"][0]["l0_slots"], 1);
  EXPECT_NE(e.to_table().find("kernel 0: one L0A/L0B slot"), std::string::npos) << e.to_table();
  EXPECT_EQ(model.estimate(at_depth(summary_of({cube_kernel(g)}), 2), {}).to_table().find("L0A/L0B slot"),
            std::string::npos);
}

// A Cube task's loads wait a GM latency per group a flag hands on (a K step's A and B),
// not per load; stores one each.
TEST(EstimateFormula, EachGroupOfLoadsAndEachStoreHoldsItsPipeForTheGmLatency) {
  Target t = paper_target();
  t.gm_read_latency = 100;
  t.gm_write_latency = 50;
  const TensorGraph g = matmul_graph();
  const CostModel model(g, t, paper_coefficients(t));
  KernelSummary k = cube_kernel(g);
  k.aic_gm_loads = 4 * 6;
  k.aic_load_groups = 4 * 3;  // per task: MTE2 600 + 3 * 100, FIX 200 + 50
  k.aic_gm_stores = 4;
  const TilingSummary s = summary_of({k});
  EXPECT_NEAR(model.estimate(at_depth(s, 1), {}).predicted_ns, 2200 + 300 + 50, 1e-9);
  // Overlapped: M (1000) bounds; MTE2 900, MTE1 400 and FIX 250 add half their work.
  const Estimate e = model.estimate(at_depth(s, 2), {});
  EXPECT_NEAR(e.predicted_ns, 1000 + (900 + 400 + 250) / 2.0, 1e-9);
  EXPECT_NEAR(e.breakdown.read_latency, 300, 1e-9);
  EXPECT_NEAR(e.breakdown.write_latency, 50, 1e-9);
}

TEST(EstimateFormula, AKernelWaitingOnGmLatencyIsLatencyBound) {
  Target t = paper_target();
  t.gm_read_latency = 1000;
  const TensorGraph g = matmul_graph();
  const CostModel model(g, t, paper_coefficients(t));
  KernelSummary k = cube_kernel(g);
  k.aic_gm_loads = k.aic_load_groups = 4 * 2;
  EXPECT_EQ(model.estimate(at_depth(summary_of({k}), 2), {}).bound, Bound::LaunchLatency);
}

// The pipe is named for what it mostly does. Per task MTE2 moves bytes for 600 cycles
// (400 from HBM, 200 from L2) and waits 2 x 250 on latency: the latency is the largest
// single part but under half of the pipe's time, so the bytes name it — HBM.
TEST(EstimateFormula, AKernelMovingBytesMoreThanWaitingIsNamedForItsBandwidth) {
  Target t = paper_target();
  t.gm_read_latency = 250;
  const TensorGraph g = matmul_graph();
  const CostModel model(g, t, paper_coefficients(t));
  KernelSummary k = cube_kernel(g);
  k.aic_gm_loads = k.aic_load_groups = 4 * 2;
  const Estimate e = model.estimate(at_depth(summary_of({k}), 2), {});
  ASSERT_GT(e.breakdown.read_latency, e.breakdown.mte2_hbm);
  ASSERT_LT(e.breakdown.read_latency, e.breakdown.mte2_hbm + e.breakdown.mte2_l2);
  EXPECT_EQ(e.bound, Bound::Hbm);
}

TEST(EstimateFormula, TailWaveCountsWholeAndLeavesCoresIdle) {
  const Target t = paper_target();
  const TensorGraph g = matmul_graph();
  const CostModel model(g, t, paper_coefficients(t));
  // 5 equal tasks on 4 cores: the busiest core runs two.
  const Estimate e = model.estimate(at_depth(summary_of({cube_kernel(g, 5)}), 1), {});
  EXPECT_EQ(e.kernels.at(0).waves, 2);
  EXPECT_EQ(e.kernels.at(0).wave_width, 4);
  EXPECT_EQ(e.kernels.at(0).last_wave_tasks, 1) << "the fifth task alone";
  EXPECT_NEAR(e.kernels.at(0).idle_fraction, 1 - 5.0 / 8.0, 1e-12);
  EXPECT_NEAR(e.predicted_ns, 2 * 2200, 1e-9);
}

TEST(EstimateFormula, FewerTilesThanCoresIsImbalanced) {
  const Target t = paper_target();
  const TensorGraph g = matmul_graph();
  const CostModel model(g, t, paper_coefficients(t));
  KernelSummary k = cube_kernel(g, 1);
  k.tile_counts = {1, 1};
  const Estimate e = model.estimate(at_depth(summary_of({k}), 1), {});
  EXPECT_NEAR(e.kernels.at(0).idle_fraction, 0.75, 1e-12);
  EXPECT_EQ(e.kernels.at(0).last_wave_tasks, 1);
  EXPECT_EQ(e.bound, Bound::Imbalance);
}

TEST(EstimateFormula, OverheadsArePerTaskPerInstructionAndPerLaunch) {
  const Target t = paper_target();
  const TensorGraph g = matmul_graph();
  Coefficients c = paper_coefficients(t);
  c[Coef::Task] = 30;
  c[Coef::Instr] = 2;
  c[Coef::Launch] = 1000;
  const CostModel model(g, t, c);
  KernelSummary k = cube_kernel(g, 8);  // two waves on four cores
  k.instructions = 8 * 50;
  const Estimate e = model.estimate(at_depth(summary_of({k}), 1), {});
  EXPECT_NEAR(e.predicted_ns, 2 * 2200 + 2 * 30 + 2 * 50 * 2 + 1000, 1e-9);
  EXPECT_NEAR(e.breakdown.task, 60, 1e-9);
  EXPECT_NEAR(e.breakdown.instr, 200, 1e-9);
  EXPECT_NEAR(e.breakdown.launch, 1000, 1e-9);
}

TEST(EstimateFormula, SharedHbmBandwidthIsARoofline) {
  Target t = paper_target();
  t.hbm_gbps = 1;  // one byte per ns for the whole chip
  t.l2_bytes = 6000;
  const TensorGraph g = matmul_graph();
  const CostModel model(g, t, paper_coefficients(t));
  const Estimate e = model.estimate(at_depth(summary_of({cube_kernel(g)}), 1), {});
  // HBM bytes: the misses (half of 32000 operand bytes) plus what the L2 cannot absorb
  // of the 16000 written.
  EXPECT_NEAR(e.hbm_bytes, 16000 + (16000 - 6000), 1e-9);
  EXPECT_NEAR(e.predicted_ns, 26000, 1e-6);
  EXPECT_EQ(e.bound, Bound::Hbm);
}

// A 48x24 grid of [128, 256] tiles on 24 cores whose operands (both cold) do not fit in
// L2: after a cold first wave, the guide's steady state for the wave's mDim x nDim tiles.
KernelSummary many_wave_kernel(const TensorGraph& g, bool fits_l2) {
  KernelSummary k = cube_kernel(g, 48 * 24);
  k.tile = {128, 256};
  k.tile_counts = {48, 24};
  k.reads = {{0, 4000.0 * 48 * 24, 4000.0 * 48, false}, {1, 4000.0 * 48 * 24, 4000.0 * 24, false}};
  k.touched_bytes = fits_l2 ? 1.0 : 1e18;
  return k;
}

double guide_hit(double m_dim, double n_dim) {
  return 1 - (1 / (n_dim * 256) + 1 / (m_dim * 128)) / (1.0 / 256 + 1.0 / 128);
}

TEST(EstimateFormula, L2GroupingChangesTheHitRatioAsTheGuideSays) {
  Target t = paper_target();
  t.aic_cores = 24;
  const TensorGraph g = matmul_graph();
  const CostModel model(g, t, paper_coefficients(t));
  const KernelSummary k = many_wave_kernel(g, false);
  const TileConfig row_major;
  TileConfig grouped;
  grouped.l2_group = std::make_pair(int64_t{6}, int64_t{4});
  // 48 waves: the cold first one costs at most 1/48 of the steady-state hits.
  for (const auto& [config, hit] : {std::pair{row_major, guide_hit(1, 24)}, std::pair{grouped, guide_hit(6, 4)}}) {
    const double predicted = model.estimate(at_depth(summary_of({k}), 2), config).kernels.at(0).l2_hit_ratio;
    EXPECT_LT(predicted, hit);
    EXPECT_GT(predicted, hit - 1.0 / 48);
  }
}

TEST(EstimateFormula, OperandsThatFitInL2HitAcrossWaves) {
  Target t = paper_target();
  t.aic_cores = 24;
  const TensorGraph g = matmul_graph();
  const CostModel model(g, t, paper_coefficients(t));
  // Row-major: each row's A panel is cold in the wave that first reaches it (its 24 tiles),
  // B's panels only in the first wave; every later re-read finds them in L2.
  const Estimate fits = model.estimate(at_depth(summary_of({many_wave_kernel(g, true)}), 2), {});
  const Estimate spills = model.estimate(at_depth(summary_of({many_wave_kernel(g, false)}), 2), {});
  EXPECT_GT(fits.kernels.at(0).l2_hit_ratio, spills.kernels.at(0).l2_hit_ratio);
  EXPECT_GT(fits.kernels.at(0).l2_hit_ratio, 0.4);
  // HBM reads: each operand's distinct bytes once.
  EXPECT_NEAR(fits.hbm_bytes, 4000.0 * (48 + 24), 1e-6);
  EXPECT_GT(spills.hbm_bytes, fits.hbm_bytes);
}

TEST(EstimateFormula, AOneWaveGridWaitsOnItsColdFills) {
  Target t = paper_target();
  t.aic_cores = 24;
  const TensorGraph g = matmul_graph();
  const CostModel model(g, t, paper_coefficients(t));
  KernelSummary k = many_wave_kernel(g, true);
  k.tile_counts = {4, 6};  // 24 tiles, one wave
  k.aic_tasks = 24;
  k.gm_read_bytes = 8000.0 * 24;
  k.reads = {{0, 4000.0 * 24, 4000.0 * 4, false}, {1, 4000.0 * 24, 4000.0 * 6, false}};
  TileConfig config;
  config.l2_group = std::make_pair(int64_t{4}, int64_t{6});
  const Estimate e = model.estimate(at_depth(summary_of({k}), 2), config);
  EXPECT_LT(e.kernels.at(0).l2_hit_ratio, guide_hit(4, 6));
  EXPECT_NEAR(e.kernels.at(0).l2_hit_ratio, 0, 1e-12);
  EXPECT_NEAR(e.hbm_bytes, 4000.0 * 10, 1e-6);
}

TEST(EstimateFormula, VectorCyclesFollowTheLatencyParallelismTable) {
  const Target t = paper_target();
  const TensorGraph g = matmul_graph();
  const CostModel model(g, t, paper_coefficients(t));
  KernelSummary k;
  k.kernel = 0;
  k.iteration = {64, 64};
  k.tile = {64, 64};
  k.tile_counts = {1, 1};
  k.tail = {64, 64};
  k.aiv_tasks = 1;
  // fp16 add: latency 6, 128 elements per 256 B at 128 per cycle -> 1 cycle per repeat.
  // fp32 exp: latency 12, 64 elements per 256 B at 32 per cycle -> 2 cycles per repeat.
  k.vector_work = {{OpKind::Add, false, DType::F16, 10, 30, 0}, {OpKind::Exp, false, DType::F32, 5, 25, 0}};
  const Estimate e = model.estimate(at_depth(summary_of({k}), 1), {});
  EXPECT_NEAR(e.breakdown.vector, (10 * 6 + 20 * 1) + (5 * 12 + 20 * 2), 1e-9);
  EXPECT_EQ(e.bound, Bound::Imbalance);  // one task on eight AIV cores
}

// `waves` vector tasks on each of the 8 AIV cores. Per task: 3 loads of 1000 B that hit
// L2 (MTE2 3000 / 20 = 150), V 500 (fp16 add: 1 instr x latency 6 + 494 repeats x 1), one
// store of 1000 B (MTE3 1000 / 10 = 100).
KernelSummary vector_kernel(int64_t waves) {
  const int64_t tasks = 8 * waves;
  KernelSummary k;
  k.kernel = 0;
  k.iteration = {tasks, 64};
  k.tile = {1, 64};
  k.tile_counts = {tasks, 1};
  k.tail = {1, 64};
  k.aiv_tasks = tasks;
  k.vector_work = {{OpKind::Add, false, DType::F16, tasks, 495 * tasks, 0}};
  k.gm_read_bytes = 3000.0 * tasks;
  k.gm_write_bytes = 1000.0 * tasks;
  k.reads = {{0, 3000.0 * tasks, 3000.0 * tasks, true}};
  k.aiv_gm_loads = 3 * tasks;
  k.aiv_gm_stores = tasks;
  k.loads_clear_of_stores = true;  // an add's output is its own buffer
  return k;
}

Target latency_target(int read_latency) {
  Target t = paper_target();
  t.gm_read_latency = read_latency;
  t.gm_write_latency = 50;
  return t;
}

// A vector task's loads issue back to back, each latency hiding behind the load before
// it: one read latency per task (not three), one write latency per store burst.
TEST(EstimateFormula, AVectorTaskWaitsOnceOnEachGmLatency) {
  const Target t = latency_target(100);
  const TensorGraph g = matmul_graph();
  const CostModel model(g, t, paper_coefficients(t));
  const Estimate e = model.estimate(at_depth(summary_of({vector_kernel(4)}), 1), {});
  EXPECT_NEAR(e.breakdown.read_latency, 4 * 100, 1e-9);
  EXPECT_NEAR(e.breakdown.write_latency, 4 * 50, 1e-9);
  // One slot: loads (150 + 100 latency) take turns with V (500); each store (100 + 50)
  // runs beside the next task's load, and only the last one shows.
  EXPECT_NEAR(e.predicted_ns, 4 * (150 + 100 + 500) + (100 + 50), 1e-9);
  // A task that stores from the bytes it loaded into holds them until its store ends.
  KernelSummary in_place = vector_kernel(4);
  in_place.loads_clear_of_stores = false;
  EXPECT_NEAR(model.estimate(at_depth(summary_of({in_place}), 1), {}).predicted_ns, 4 * (150 + 100 + 500 + 100 + 50),
              1e-9);
}

// nbuffer 2: the core overlaps consecutive tasks, so the busiest stage bounds the time
// plus one fill and drain. With one output buffer a task's V (500) waits for the store
// before it (100), so V and the store are one stage (600 per task); the fill and drain
// are one task's loads (150) and one read and one write latency (150). Each task's
// chain (900) runs two at a time, 450 per task, below that stage.
TEST(EstimateFormula, DoubleBufferedVectorTasksApproachTheirSlowestPipe) {
  const Target t = latency_target(100);
  const TensorGraph g = matmul_graph();
  const CostModel model(g, t, paper_coefficients(t));
  double previous_ratio = kInfinityForTests;
  for (int64_t waves : {1, 2, 8, 64, 512}) {
    const Estimate e = model.estimate(at_depth(summary_of({vector_kernel(waves)}), 2), {});
    const double slowest_pipe = 600.0 * waves;
    EXPECT_NEAR(e.predicted_ns, slowest_pipe + 150 + 150, 1e-9) << waves << " waves";
    const double ratio = e.predicted_ns / slowest_pipe;
    EXPECT_LT(ratio, previous_ratio);
    previous_ratio = ratio;
  }
  EXPECT_LT(previous_ratio, 1.002);
}

// With a long read latency the chain of one task (load latency 1000, loads 150, V 500,
// store latency 50, store 100: 1800) bounds: two chains side by side, 900 per task.
TEST(EstimateFormula, DoubleBufferedVectorTasksWaitOnTheirLatencyChainsTwoAtATime) {
  const Target t = latency_target(1000);
  const TensorGraph g = matmul_graph();
  const CostModel model(g, t, paper_coefficients(t));
  const TilingSummary s = summary_of({vector_kernel(16)});
  EXPECT_NEAR(model.estimate(at_depth(s, 2), {}).predicted_ns, 16 * 1800 / 2.0, 1e-9);
  EXPECT_NEAR(model.estimate(at_depth(s, 4), {}).predicted_ns, 600 * 16 + 150 + 1050, 1e-9);
  EXPECT_NEAR(model.estimate(at_depth(s, 1), {}).predicted_ns, 16 * (1150 + 500) + 150, 1e-9);  // stores hide
}

// One task per core has nothing to overlap: every nbuffer prices the task's sum, which
// for one load and one store is also what the model charged before tasks overlapped.
TEST(EstimateFormula, ASingleVectorTaskIsTheSumOfItsPipes) {
  const Target t = latency_target(100);
  const TensorGraph g = matmul_graph();
  const CostModel model(g, t, paper_coefficients(t));
  KernelSummary k = vector_kernel(1);
  k.aiv_tasks = 1;
  k.tile_counts = {1, 1};
  k.vector_work = {{OpKind::Add, false, DType::F16, 1, 495, 0}};
  k.gm_read_bytes = 3000;
  k.gm_write_bytes = 1000;
  k.reads = {{0, 3000, 3000, true}};
  k.aiv_gm_loads = 1;
  k.aiv_gm_stores = 1;
  const TilingSummary s = summary_of({k});
  for (int nbuffer : {1, 2, 4}) {
    EXPECT_NEAR(model.estimate(at_depth(s, nbuffer), {}).predicted_ns, 150 + 100 + 500 + 100 + 50, 1e-9)
        << "nbuffer " << nbuffer;
  }
}

TEST(EstimateFormula, FusedEpilogueRunsAsATwoStagePipelineOnSplitCores) {
  const Target t = paper_target();
  const TensorGraph g = matmul_graph();
  const CostModel model(g, t, paper_coefficients(t));
  KernelSummary k = cube_kernel(g, 8);  // AIC: two waves of 2200
  k.workspace_bytes = 2 * 8 * 4000.0;   // the AIC's tiles, written and read back
  k.gm_read_bytes += 8 * 4000.0;
  k.gm_write_bytes += 8 * 1000.0;       // the epilogue's output
  k.aiv_tasks = 8;                      // one wave on eight AIV cores
  k.vector_work = {{OpKind::Add, false, DType::F16, 1, 101, 0}};  // 6 + 100 cycles over all tasks
  const Estimate e = model.estimate(at_depth(summary_of({k}), 1), {});
  const double aic = 2 * 2200;
  // AIV per task: MTE2 4000/20 from L2, V 106/8 of the whole, MTE3 1000/10.
  const double aiv = 4000 / 20.0 + 106 / 8.0 + 1000 / 10.0;
  EXPECT_NEAR(e.predicted_ns, aic + aiv / 2, 1e-9);  // the AIV adds its share of one of 2 waves
}

TEST(EstimateFormula, SoftCapacityOverflowSlowsComputeOnTheHost) {
  Target t = paper_target();
  t.hard_capacity = false;
  const TensorGraph g = matmul_graph();
  const CostModel model(g, t, paper_coefficients(t));
  KernelSummary k = cube_kernel(g);
  k.footprint[MemLevel::L1] = t.l1 * 2;  // half of it spills
  EXPECT_NEAR(model.estimate(at_depth(summary_of({k}), 1), {}).breakdown.cube, 1000 * 1.5, 1e-9);
  k.footprint[MemLevel::L1] = t.l1;  // fits
  EXPECT_NEAR(model.estimate(at_depth(summary_of({k}), 1), {}).breakdown.cube, 1000, 1e-9);
}

TEST(EstimateFormula, TermsAreLinearInTheCoefficients) {
  Target t = paper_target();
  t.gm_read_latency = 70;
  const TensorGraph g = matmul_graph();
  Coefficients c = paper_coefficients(t);
  c[Coef::Task] = 11;
  c[Coef::Launch] = 500;
  const CostModel model(g, t, c);
  const TilingSummary s = summary_of({cube_kernel(g, 7)});
  for (int nbuffer : {1, 2}) {
    const TimeTerms terms = model.terms(at_depth(s, nbuffer), {}, c);
    double sum = 0;
    for (int j = 0; j < kNumCoefs; ++j) sum += c.value[j] * terms.amount(coef_at(j));
    EXPECT_NEAR(sum, terms.value(), 1e-9 * terms.value());
    EXPECT_NEAR(terms.value(), model.estimate(at_depth(s, nbuffer), {}).predicted_ns, 1e-9 * terms.value());
  }
}

TEST(EstimateFormula, InfeasibleSummariesGetNoTimeOnlyTheirViolations) {
  const Target t = paper_target();
  const TensorGraph g = matmul_graph();
  const CostModel model(g, t, paper_coefficients(t));
  TilingSummary s;
  s.feasible = false;
  s.violations = {{"L0C capacity", "mL0=256 x nL0=256 x 4 B = 262144 B > L0C 131072 B"}};
  const Estimate e = model.estimate(s, TileConfig{});
  EXPECT_FALSE(e.feasible);
  EXPECT_TRUE(std::isinf(e.predicted_ns));
  const nlohmann::json j = e.to_json();
  EXPECT_EQ(j["feasible"], false);
  EXPECT_TRUE(j["predicted_ns"].is_null());
  EXPECT_EQ(j["violations"][0]["rule"], "L0C capacity");
  EXPECT_NE(e.to_table().find("L0C capacity"), std::string::npos);
  EXPECT_THROW(model.terms(s, TileConfig{}, model.coefficients()), Error);
}

TEST(EstimateFormula, ReportsCarryTheFieldsExplainPrints) {
  const Target t = paper_target();
  const TensorGraph g = matmul_graph();
  const CostModel model(g, t, paper_coefficients(t));
  const Estimate e = model.estimate(at_depth(summary_of({cube_kernel(g)}), 2), {});
  const nlohmann::json j = e.to_json();
  for (const char* key : {"feasible", "violations", "predicted_ns", "breakdown", "bound",
                          "arithmetic_intensity", "kernels"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
  EXPECT_EQ(j["bound"], "cube");
  EXPECT_NEAR(j["breakdown"]["cube_ns"].get<double>(), 1000, 1e-9);
  EXPECT_NEAR(j["arithmetic_intensity"].get<double>(), 2.0 * 64 * 64 * 64 / 32000, 1e-9);
  const std::string table = e.to_table();
  EXPECT_NE(table.find("predicted 1.60 us"), std::string::npos) << table;
  EXPECT_NE(table.find("bound: cube"), std::string::npos) << table;
  EXPECT_NE(table.find("Cube (M)"), std::string::npos) << table;
}

}  // namespace
}  // namespace pto
