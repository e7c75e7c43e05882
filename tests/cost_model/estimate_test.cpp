// Properties of the cost model on core's real analyze() summaries: infeasible configs
// carry the verifier's rules, Cube time scales with K, more cores never hurt a divisible
// shape, MTE2 bytes follow the PyPTO guide's formula, n-buffering (Cube and vector) and
// fusion pay off, and the batch score agrees with the single estimate.
#include <cmath>
#include <random>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/analyze.h"
#include "core/error.h"
#include "core/op_library.h"
#include "core/target.h"
#include "cost_model/estimate.h"
#include "tests/cost_model/random_configs.h"
#include "tests/random_attention_config.h"
#include "tests/random_attrs.h"

namespace pto {
namespace {

using testing::matmul_workload;
using testing::random_cube_config;

TileConfig cube_config(int64_t mL0, int64_t mL1, int64_t kL0, int64_t kL1, int64_t nL0,
                       int64_t nL1, int nbuffer = 2) {
  TileConfig t;
  t.cube = CubeTile{mL0, mL1, kL0, kL1, kL1, nL0, nL1, false, true};
  t.nbuffer = nbuffer;
  return t;
}

Target with_cores(Target t, int aic) {
  t.aic_cores = aic;
  t.aiv_cores = 2 * aic;
  return t;
}

TEST(CostModel, L0cOverflowIsInfeasibleWithTheVerifiersRules) {
  const Target t = load_target("ascend910b1");
  const TensorGraph g = build_graph(matmul_workload(512, 512, 512));
  const CostModel model(g, t);
  const TileConfig too_big = cube_config(256, 256, 64, 256, 256, 256);  // 256*256*4 B > 128 KiB
  const Estimate e = model.estimate(too_big);
  ASSERT_FALSE(e.feasible);
  EXPECT_TRUE(std::isinf(e.predicted_ns));
  bool named = false;
  for (const Violation& v : e.violations) named = named || v.rule.find("L0C") != std::string::npos;
  EXPECT_TRUE(named) << format_violations(e.violations);
  const TilingSummary s = analyze(g, too_big, t);
  ASSERT_EQ(e.violations.size(), s.violations.size());
  for (size_t i = 0; i < s.violations.size(); ++i) {
    EXPECT_EQ(e.violations[i].rule, s.violations[i].rule);
    EXPECT_EQ(e.violations[i].detail, s.violations[i].detail);
  }
  EXPECT_TRUE(std::isinf(model.predict_ns(too_big)));
}

TEST(CostModel, DoublingKRoughlyDoublesCubeTime) {
  const Target t = load_target("ascend910b1");
  std::mt19937 rng(21);
  int checked = 0;
  for (int trial = 0; trial < 300 && checked < 60; ++trial) {
    const int64_t m = 16 + rng() % 300, k = 64 + rng() % 300, n = 16 + rng() % 300;
    const TileConfig config = random_cube_config(rng);
    const Estimate once = CostModel(build_graph(matmul_workload(m, k, n)), t).estimate(config);
    const Estimate twice = CostModel(build_graph(matmul_workload(m, 2 * k, n)), t).estimate(config);
    if (!once.feasible || !twice.feasible) continue;
    ++checked;
    const double ratio = twice.breakdown.cube / once.breakdown.cube;
    // Ragged K costs partial fractals: the worst case here is ceil(130/16) / ceil(65/16).
    EXPECT_GE(ratio, 1.8 - 1e-9) << m << "x" << k << "x" << n << " " << config.to_string();
    EXPECT_LE(ratio, 2.0 + 1e-9) << m << "x" << k << "x" << n << " " << config.to_string();
  }
  EXPECT_GE(checked, 30);
}

TEST(CostModel, MoreCoresAreNeverPredictedSlowerForADivisibleShape) {
  const Target base = load_target("ascend910b1");
  std::mt19937 rng(5);
  int checked = 0;
  for (int trial = 0; trial < 200 && checked < 40; ++trial) {
    const TileConfig config = random_cube_config(rng);
    const CubeTile& c = *config.cube;
    const int64_t m = c.mL1 * testing::pick(rng, {1, 3, 8}), n = c.nL1 * testing::pick(rng, {1, 2, 5});
    const int64_t k = c.kAL1 * testing::pick(rng, {1, 2, 4});
    const TensorGraph g = build_graph(matmul_workload(m, k, n));
    double previous = INFINITY;
    bool feasible = true;
    for (int cores = 1; cores <= 40 && feasible; ++cores) {
      const Estimate e = CostModel(g, with_cores(base, cores)).estimate(config);
      feasible = e.feasible;
      if (!feasible) break;
      EXPECT_LE(e.predicted_ns, previous * (1 + 1e-12))
          << cores << " cores, " << m << "x" << k << "x" << n << " " << config.to_string();
      previous = e.predicted_ns;
    }
    checked += feasible;
  }
  EXPECT_GE(checked, 20);
}

TEST(CostModel, Mte2BytesEqualTheGuidesFormulaForAPureInnerProduct) {
  const Target t = load_target("ascend910b1");
  std::mt19937 rng(9);
  int checked = 0;
  for (int trial = 0; trial < 200 && checked < 40; ++trial) {
    TileConfig config = random_cube_config(rng);
    config.l2_group.reset();
    const CubeTile& c = *config.cube;
    const int64_t m = c.mL1 * testing::pick(rng, {1, 2, 7}), n = c.nL1 * testing::pick(rng, {1, 3, 4});
    const int64_t k = c.kAL1 * testing::pick(rng, {1, 3});
    for (DType dtype : {DType::F16, DType::F32}) {
      const Estimate e = CostModel(build_graph(matmul_workload(m, k, n, dtype)), t).estimate(config);
      if (!e.feasible) continue;
      ++checked;
      const double size = dtype_size(dtype);
      const double guide = double(m) * k * (n / c.nL1) * size + double(k) * n * (m / c.mL1) * size;
      EXPECT_DOUBLE_EQ(e.mte2_bytes, guide) << m << "x" << k << "x" << n << " " << config.to_string();
    }
  }
  EXPECT_GE(checked, 20);
}

TEST(CostModel, NBufferingIsNeverPredictedSlower) {
  const Target t = load_target("ascend910b1");
  std::mt19937 rng(13);
  int checked = 0;
  for (int trial = 0; trial < 200; ++trial) {
    TileConfig single = random_cube_config(rng);
    single.nbuffer = 1;
    TileConfig doubled = single;
    doubled.nbuffer = 2;
    const CostModel model(build_graph(matmul_workload(16 + rng() % 400, 16 + rng() % 400, 16 + rng() % 400)), t);
    const double a = model.predict_ns(single), b = model.predict_ns(doubled);
    if (std::isinf(a) || std::isinf(b)) continue;
    ++checked;
    EXPECT_LE(b, a) << single.to_string();
  }
  EXPECT_GE(checked, 30);
}

// Vector kernels too: a core that holds two tasks at once overlaps their loads with
// compute, never slower than one task at a time, on ragged row counts and random tiles.
TEST(CostModel, NBufferingIsNeverPredictedSlowerForVectorOps) {
  const Target t = load_target("ascend910b1");
  std::mt19937 rng(17);
  int checked = 0;
  for (int trial = 0; trial < 60; ++trial) {
    const std::string op = trial % 3 == 0 ? "softmax" : trial % 3 == 1 ? "layernorm" : "rmsnorm";
    const int64_t cols = testing::pick(rng, {64, 256, 1024});
    const CostModel model(build_graph(testing::row_workload(op, 1 + rng() % 400, cols, DType::F16)), t);
    TileConfig single = testing::random_row_config(rng, cols);
    single.nbuffer = 1;
    TileConfig doubled = single;
    doubled.nbuffer = 2;
    const double a = model.predict_ns(single), b = model.predict_ns(doubled);
    if (std::isinf(a) || std::isinf(b)) continue;
    ++checked;
    EXPECT_LE(b, a * (1 + 1e-12)) << op << " " << single.to_string();  // equal for one task per core
  }
  EXPECT_GE(checked, 30);
}

// The PyPTO guide's measurement: 6144^3 fp16 with [128,128],[64,256],[256,256] takes about
// 2.1 ms in row-major order and 1.6 ms with the core grid grouped 6x4 per wave.
TEST(CostModel, L2GroupingOfThePublishedExampleIsPredictedFaster) {
  const Target t = load_target("ascend910b1");
  const CostModel model(build_graph(matmul_workload(6144, 6144, 6144)), t);
  TileConfig row_major = cube_config(128, 128, 64, 256, 256, 256);
  TileConfig grouped = row_major;
  grouped.l2_group = std::make_pair(int64_t{6}, int64_t{4});
  const Estimate a = model.estimate(row_major), b = model.estimate(grouped);
  ASSERT_TRUE(a.feasible && b.feasible);
  EXPECT_GT(b.kernels.at(0).l2_hit_ratio, a.kernels.at(0).l2_hit_ratio);
  EXPECT_LT(b.predicted_ns, a.predicted_ns);
  // Uncalibrated, the model is within a factor of two of both measurements.
  EXPECT_GT(a.predicted_ns, 2.1e6 / 2);
  EXPECT_LT(a.predicted_ns, 2.1e6 * 2);
  EXPECT_GT(b.predicted_ns, 1.6e6 / 2);
  EXPECT_LT(b.predicted_ns, 1.6e6 * 2);
  EXPECT_EQ(a.bound, Bound::Hbm);
  ASSERT_TRUE(a.arithmetic_intensity.has_value());
  EXPECT_GT(*a.arithmetic_intensity, 0);
}

// `config` with the fusion partition that gives every compute node its own kernel.
TileConfig every_node_alone(TileConfig config, const TensorGraph& g) {
  config.fusion.emplace();
  for (NodeId n : g.compute_nodes()) config.fusion->push_back({n});
  return config;
}

TEST(CostModel, AnUnfusedPartitionPaysTheRoundTripAndTheLaunches) {
  Target t = load_target("ascend910b1");
  t.kernel_launch_cycles = 5000;
  const Workload w = testing::row_workload("softmax", 512, 1024);
  const TensorGraph g = build_graph(w);
  const CostModel model(g, t);
  TileConfig fused;
  fused.vec = Shape{8, 1024};
  const TileConfig unfused = every_node_alone(fused, g);
  const Estimate a = model.estimate(fused), b = model.estimate(unfused);
  ASSERT_TRUE(a.feasible) << format_violations(a.violations);
  ASSERT_TRUE(b.feasible) << format_violations(b.violations);
  EXPECT_LT(a.kernels.size(), b.kernels.size());
  // The 2 MiB intermediates stay in the 192 MB L2: no HBM round trip, but L2 traffic,
  // launches and a barrier per kernel.
  EXPECT_DOUBLE_EQ(a.hbm_bytes, b.hbm_bytes);
  EXPECT_LT(a.breakdown.launch, b.breakdown.launch);
  EXPECT_LT(a.predicted_ns, b.predicted_ns);
  // In an L2 too small to hold them, the round trip goes through HBM.
  t.l2_bytes = 1 << 20;
  const CostModel small_l2(g, t);
  const Estimate c = small_l2.estimate(fused), d = small_l2.estimate(unfused);
  EXPECT_LT(c.hbm_bytes, d.hbm_bytes);
  EXPECT_LT(c.predicted_ns, d.predicted_ns);
}

TEST(CostModel, FusingAMatmulEpilogueKeepsItsIntermediateOnChip) {
  Target t = load_target("ascend910b1");
  t.l2_bytes = 256 << 10;  // unfused, the 1 MiB intermediates leave L2 before they are read
  Workload w = matmul_workload(512, 256, 512);
  w.op = "matmul_bias_gelu";
  const TensorGraph g = build_graph(w);
  const CostModel model(g, t);
  TileConfig fused = find_op("matmul_bias_gelu").hand_picked(w);  // default partition
  fused.vec = Shape{32, 128};  // the hand-picked [64,256] epilogue tile overflows UB in fp32
  const TileConfig unfused = every_node_alone(fused, g);
  const Estimate a = model.estimate(fused), b = model.estimate(unfused);
  ASSERT_TRUE(a.feasible) << format_violations(a.violations);
  ASSERT_TRUE(b.feasible) << format_violations(b.violations);
  EXPECT_LT(a.kernels.size(), b.kernels.size());
  EXPECT_LT(a.hbm_bytes, b.hbm_bytes);
  EXPECT_LT(a.predicted_ns, b.predicted_ns);
}

TEST(CostModel, BroadcastRowsEveryTileReReadsHitL2) {
  // Layernorm over 4096 x 1024 fp16 in row tiles: gamma and beta (2 KB each) are loaded
  // by every task, but only their first loads go to HBM; after the first wave (48 AIV
  // cores waiting on the same fill) they hit.
  const Target t = load_target("ascend910b1");
  const Workload w = testing::row_workload("layernorm", 4096, 1024, DType::F16);
  const CostModel model(build_graph(w), t);
  for (const int64_t rows : {1, 4, 16}) {
    TileConfig c;
    c.vec = Shape{rows, 1024};
    const TilingSummary s = model.analyze(c);
    ASSERT_TRUE(s.feasible) << format_violations(s.violations);
    ASSERT_EQ(s.kernels.size(), 1u);
    double distinct = 0;
    for (const TensorRead& r : s.kernels[0].reads) distinct += r.distinct_bytes;
    EXPECT_DOUBLE_EQ(distinct, (4096.0 * 1024 + 2 * 1024) * 2);
    EXPECT_GT(s.kernels[0].gm_read_bytes, distinct);  // the re-reads of gamma and beta
    const Estimate e = model.estimate(s, c);
    EXPECT_DOUBLE_EQ(e.hbm_bytes, distinct + std::max(0.0, s.kernels[0].gm_write_bytes - t.l2_bytes));
    EXPECT_GT(e.kernels.at(0).l2_hit_ratio, 0) << rows << " rows";
    EXPECT_GT(e.breakdown.mte2_l2, 0);
  }
}

TEST(CostModel, FewWaveMatmulHitsL2LessThanTheSteadyStateAndManyWavesApproachIt) {
  const Target t = load_target("ascend910b1");  // 24 AIC cores
  // One wave: 16 x 2 = 32 tiles of [64, 512] on 24 cores (two waves), row-major; the
  // guide's steady state for a wave of 12 x 2 tiles would hit 1 - (64/2 + 512/12) / 576.
  const TileConfig c = TileConfig::parse(R"({"cube":{"m":[64,64],"k":[64,1024,64],"n":[256,512]},"nbuffer":2})");
  const double steady = 1 - (64.0 / 2 + 512.0 / 12) / (64 + 512);
  const Estimate few = CostModel(build_graph(matmul_workload(1024, 1024, 1024)), t).estimate(c);
  ASSERT_TRUE(few.feasible) << format_violations(few.violations);
  EXPECT_EQ(few.kernels.at(0).waves, 2);
  EXPECT_LT(few.kernels.at(0).l2_hit_ratio, steady - 0.3);
  // 64 x 2 tiles over 6 waves: the cold first wave weighs less, later waves re-read the
  // panels the first touched (both operands fit in L2).
  const Estimate many = CostModel(build_graph(matmul_workload(4096, 1024, 1024)), t).estimate(c);
  ASSERT_TRUE(many.feasible);
  EXPECT_GT(many.kernels.at(0).l2_hit_ratio, few.kernels.at(0).l2_hit_ratio);
  EXPECT_GT(many.kernels.at(0).l2_hit_ratio, steady - 0.2);
}

TEST(CostModel, ScoreAgreesWithEstimateOnFeasibleAndInfeasibleConfigs) {
  const Target t = load_target("ascend910b1");
  const CostModel model(build_graph(matmul_workload(300, 200, 260)), t);
  std::mt19937 rng(17);
  std::vector<TileConfig> configs;
  for (int i = 0; i < 100; ++i) configs.push_back(random_cube_config(rng));
  configs.push_back(cube_config(256, 256, 64, 256, 256, 256));  // infeasible
  std::vector<double> scores(configs.size());
  model.score(configs, scores);
  int feasible = 0;
  for (size_t i = 0; i < configs.size(); ++i) {
    const Estimate e = model.estimate(configs[i]);
    EXPECT_EQ(scores[i], e.predicted_ns) << configs[i].to_string();
    feasible += e.feasible;
    if (e.feasible) {
      EXPECT_GT(e.predicted_ns, 0);
      EXPECT_TRUE(std::isfinite(e.predicted_ns));
    }
  }
  EXPECT_GT(feasible, 10);
  EXPECT_TRUE(std::isinf(scores.back()));
  std::vector<double> too_few(3);
  EXPECT_THROW(model.score(configs, too_few), Error);
}

// Trial `trial`'s workload and config: a random matmul, softmax or layernorm, or a
// causal flash_attention, in turn, each with a random config of its kind.
std::pair<Workload, TileConfig> random_case(std::mt19937& rng, int trial) {
  const int64_t cols = 16 + static_cast<int64_t>(rng() % 3000);
  Workload w = trial % 3 == 0   ? matmul_workload(1 + rng() % 700, 1 + rng() % 700, 1 + rng() % 700)
               : trial % 3 == 1 ? testing::row_workload(trial % 2 ? "softmax" : "layernorm", 1 + rng() % 300, cols)
                                : Workload::parse_key("flash_attention|1,2,100,300,64|fp16|causal=1");
  TileConfig c = trial % 3 == 0   ? random_cube_config(rng)
                 : trial % 3 == 1 ? testing::random_row_config(rng, cols)
                                  : testing::random_attention_config(rng, w);
  return {std::move(w), std::move(c)};
}

// The time alone (TimeValue, what a search ranks by) is exactly the value of the linear
// form calibration fits (TimeTerms): the formulas are written once for both. Random
// configs of matmuls, row ops and flash_attention on every kind of target.
TEST(CostModel, TheTimeAloneIsTheLinearFormsValue) {
  std::mt19937 rng(29);
  int compared = 0;
  for (const char* target : {"ascend910b1", "ascend950pr", "host"}) {
    const Target t = load_target(target);
    for (int trial = 0; trial < 60; ++trial) {
      const auto [w, c] = random_case(rng, trial);
      const CostModel model(build_graph(w), t);
      const TilingSummary s = model.analyze(c);
      if (!s.feasible) continue;
      ++compared;
      EXPECT_EQ(model.predict_ns(s, c), model.terms(s, c, model.coefficients()).value()) << w.key() << " " << c.to_string();
      EXPECT_EQ(model.predict_ns(s, c), model.estimate(s, c).predicted_ns);
    }
  }
  EXPECT_GT(compared, 60);
}

// A flash_attention task's first block waits for every hand-off's flag in turn (Q in,
// then S, P and O_j across, then the output out), and without a QK preload every block
// waits for two (S's and P's); with a preload of P blocks, the two flags of a block's
// round trip are spread over P blocks: on a target whose Cube and vector units hand data
// through GM, each flag's latency (cross_core_sync_latency) adds three times per task and
// twice per block (2 / P with a preload) on the busiest cluster, never more, and never to
// a row op.
TEST(CostModel, EachTaskOfAFlashAttentionKernelPaysItsHandOffFlagsOnce) {
  std::mt19937 rng(31);
  Target base = load_target("ascend910b1");
  base.cross_core_sync_latency = 0;
  Target slow = base;
  slow.cross_core_sync_latency = 4000;
  const double ns_per_cycle = 1000.0 / base.clock_mhz;
  int compared = 0;
  for (int trial = 0; trial < 40; ++trial) {
    const int64_t sq = 16 + rng() % 1000, skv = sq + rng() % 2000;  // causal needs SKV >= SQ
    const Workload w = Workload::parse_key("flash_attention|1," + std::to_string(1 + rng() % 8) + "," +
                                           std::to_string(sq) + "," + std::to_string(skv) +
                                           ",64|fp16|causal=" + std::to_string(trial % 2));
    const TileConfig c = testing::random_attention_config(rng, w);
    const TensorGraph graph = build_graph(w);
    const CostModel fast_model(graph, base), slow_model(graph, slow);
    const TilingSummary s = fast_model.analyze(c);
    if (!s.feasible) continue;
    ++compared;
    const KernelSummary& k = s.kernels.front();
    const bool preloads = k.attention->preload >= 1;
    const double per_block = preloads ? 2.0 / static_cast<double>(k.attention->preload) : 2.0;
    const double flags = 3.0 * static_cast<double>(k.busiest_cluster_tasks) +
                         per_block * static_cast<double>(k.busiest_cluster_steps);
    const double fast_ns = fast_model.predict_ns(s, c), slow_ns = slow_model.predict_ns(s, c);
    EXPECT_GT(slow_ns, fast_ns) << w.key() << " " << c.to_string();
    EXPECT_LE(slow_ns, fast_ns + 4000 * flags * ns_per_cycle * (1 + 1e-9)) << w.key() << " " << c.to_string();
  }
  EXPECT_GT(compared, 10);
  const Workload softmax = testing::row_workload("softmax", 64, 1024);
  const TileConfig row = testing::random_row_config(rng, 1024);
  EXPECT_EQ(CostModel(build_graph(softmax), base).estimate(row).predicted_ns,
            CostModel(build_graph(softmax), slow).estimate(row).predicted_ns);
}

// A model made for one graph and moved to another (for_graph: the lookup prices many
// shapes of an op so) predicts exactly what a model built for that graph does: random
// shapes and configs of matmuls, row ops and flash_attention on every kind of target,
// calibrated coefficients included.
TEST(CostModel, AModelForAnotherGraphPredictsWhatANewOneDoes) {
  std::mt19937 rng(43);
  int compared = 0;
  for (const char* target : {"ascend910b1", "ascend950pr", "host"}) {
    const Target t = load_target(target);
    Coefficients fitted = Coefficients::defaults(t);
    for (int i = 0; i < kNumCoefs; ++i) fitted.value[i] *= 0.5 + double(rng() % 100) / 100;
    const CostModel first(build_graph(matmul_workload(64, 64, 64)), t, fitted);
    for (int trial = 0; trial < 60; ++trial) {
      const auto [w, c] = random_case(rng, trial);
      const TensorGraph graph = build_graph(w);
      const CostModel fresh(graph, t, fitted);
      const CostModel moved = first.for_graph(graph);
      const double want = fresh.predict_ns(c);
      EXPECT_EQ(moved.predict_ns(c), want) << target << " " << w.key() << " " << c.to_string();
      EXPECT_EQ(moved.estimate(c).to_json(), fresh.estimate(c).to_json()) << target << " " << w.key();
      compared += std::isfinite(want);
    }
  }
  EXPECT_GT(compared, 60);
}

TEST(CostModel, RanksVectorTilesOnTheHostWithSoftCapacities) {
  const Target host = detect_host_target();
  const Workload w = testing::row_workload("softmax", 256, 4096);
  const CostModel model(build_graph(w), host);
  std::mt19937 rng(2);
  for (int i = 0; i < 20; ++i) {
    const TileConfig config = testing::random_row_config(rng, 4096);
    const Estimate e = model.estimate(config);
    ASSERT_TRUE(e.feasible) << config.to_string() << "\n" << format_violations(e.violations);
    EXPECT_GT(e.predicted_ns, 0);
    EXPECT_TRUE(std::isfinite(e.predicted_ns));
  }
  // A tile far larger than L1d spills: raising the spill penalty slows it.
  TileConfig huge;
  huge.vec = Shape{256, 4096};
  Coefficients penal = model.coefficients();
  penal[Coef::Spill] *= 10;
  const CostModel harsh(build_graph(w), host, penal);
  EXPECT_GT(harsh.predict_ns(huge), model.predict_ns(huge));
}

// Every op of the library, at random ragged shapes, with its default config on every
// built-in target: a feasible config gets a finite positive time and a complete report.
TEST(CostModel, PricesEveryOpOnEveryTarget) {
  std::mt19937 rng(31);
  for (const std::string& name : builtin_target_names()) {
    const Target t = load_target(name);
    for (const OpDef& op : op_library()) {
      Workload w;
      w.op = op.name;
      w.dtype = op.dtypes.front();
      for (size_t d = 0; d < op.dims.size(); ++d) w.shape.push_back(1 + rng() % 200);
      pto::testing::set_example_expr(w);
      const TensorGraph g = build_graph(w);
      const TileConfig config = default_config(w, g, t);
      const Estimate e = CostModel(g, t).estimate(config);
      ASSERT_TRUE(e.feasible) << name << " " << w.key() << "\n" << format_violations(e.violations);
      EXPECT_TRUE(std::isfinite(e.predicted_ns) && e.predicted_ns > 0) << name << " " << w.key();
      EXPECT_FALSE(e.kernels.empty());
      double kernel_sum = 0;
      for (const KernelEstimate& k : e.kernels) kernel_sum += k.time_ns;
      EXPECT_NEAR(kernel_sum, e.predicted_ns, 1e-9 * e.predicted_ns) << name << " " << w.key();
      const nlohmann::json j = e.to_json();
      EXPECT_EQ(j["bound"], bound_name(e.bound));
      EXPECT_EQ(j["kernels"].size(), e.kernels.size());
      EXPECT_NE(e.to_table().find("predicted"), std::string::npos);
    }
  }
}

TEST(CostModel, TargetsWithoutTheRatesItDividesByAreRejected) {
  Target t = load_target("ascend910b1");
  t.gm_read_bpc = 0;
  try {
    CostModel(build_graph(matmul_workload(64, 64, 64)), t);
    FAIL() << "expected a usage error";
  } catch (const Error& e) {
    EXPECT_EQ(e.category(), ErrorCategory::Usage);
    EXPECT_NE(std::string(e.what()).find("gm_read_bpc"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace pto
