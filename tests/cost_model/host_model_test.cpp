// Properties of the host cost model (cost_model/host_model.h) on real analyze()
// summaries of a fixed CPU description (not this machine's, so the tests are the same
// everywhere): caches that overflow never make a config faster, more threads never make
// it slower, packing grows with the tiles that re-pack the operands, a narrow register
// block costs more per flop, edge blocks cost at least their share, ragged shapes never
// predict faster than smaller ones, narrow TLOAD runs (cube and vector) and C rows cost
// per run / row, packing slows past L2 and pays DRAM past the LLC share, cube flags cost
// nothing, transcendental rows cost their fp64 expansions, passes pay only the stream
// beyond their compute, of the bytes a task addresses, and beyond the LLC stream no
// faster, row loops over 1-wide rows cost per element, and the prediction is the
// linear form calibration fits.
#include <cmath>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "core/op_library.h"
#include "core/target.h"
#include "cost_model/estimate.h"
#include "cost_model/host_model.h"
#include "tests/cost_model/fixed_host.h"
#include "tests/cost_model/random_configs.h"

namespace pto {
namespace {

using testing::fixed_host;
using testing::matmul_workload;
using testing::random_cube_config;
using testing::random_row_config;
using testing::row_workload;

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

TEST(HostModel, CubeFlagsCostNothing) {
  // The runtime drops SET_FLAG / WAIT_FLAG when it decodes a block: the same cube tile
  // with one or two buffers runs the same steps, and the steps' price is the same though
  // the single-buffered program orders them with more flags.
  const TensorGraph g = build_graph(matmul_workload(333, 777, 555, DType::F32));
  const CostModel model(g, fixed_host());
  int compared = 0;
  for (TileConfig c : feasible_cube_configs(model, 17, 30)) {
    c.nbuffer = 1;
    TileConfig two = c;
    two.nbuffer = 2;
    const TilingSummary s1 = model.analyze(c), s2 = model.analyze(two);
    if (!s1.feasible || !s2.feasible) continue;
    const KernelSummary &k1 = s1.kernels.at(0), &k2 = s2.kernels.at(0);
    ASSERT_EQ(k1.tmatmuls, k2.tmatmuls);
    ASSERT_EQ(k1.aic_gm_loads + k1.aic_gm_stores, k2.aic_gm_loads + k2.aic_gm_stores);
    // The steps are the same, so only flags can differ: none where no buffer is reused.
    if (k1.instructions == k2.instructions) continue;
    EXPECT_DOUBLE_EQ(model.estimate(c).breakdown.instr, model.estimate(two).breakdown.instr) << c.to_string();
    ++compared;
  }
  EXPECT_GT(compared, 5);
}

// The same host with the AVX2 micro-kernel (4 x 16 blocks of two 8-lane vectors).
Target avx2_host() {
  Target t = fixed_host();
  t.simd_bytes = t.align_bytes = 32;
  t.cpu_flops_per_cycle = 32;
  return t;
}

TEST(HostModel, OneWideRowsPayTheRowLoopPerElement) {
  // softmax over rows of one element: every instruction is all row calls. A row call
  // costs 30 cycles on the AVX2 machine the model was set on, about 4 on the AVX-512
  // one (runtime_steps_bench's row family), so the narrow rows cost more on both, and
  // on AVX2 far more than the steps the two share.
  const TensorGraph wide = build_graph(row_workload("softmax", 1024, 64));
  const TensorGraph narrow = build_graph(row_workload("softmax", 65536, 1));
  TileConfig wide_tile, narrow_tile;
  wide_tile.vec = Shape{16, 64};
  narrow_tile.vec = Shape{1024, 1};
  for (const Target& host : {fixed_host(), avx2_host()}) {
    const CostModel a(wide, host), b(narrow, host);
    const Estimate ew = a.estimate(wide_tile), en = b.estimate(narrow_tile);
    ASSERT_TRUE(ew.feasible && en.feasible);
    EXPECT_GT(en.breakdown.instr, ew.breakdown.instr) << host.simd_bytes;
  }
  const CostModel a(wide, avx2_host()), b(narrow, avx2_host());
  EXPECT_GT(b.estimate(narrow_tile).breakdown.instr, 10 * a.estimate(wide_tile).breakdown.instr);  // same elements, 64x the rows
}

double amount(const CostModel& model, const TileConfig& c, Coef which) {
  return model.terms(model.analyze(c), c, model.coefficients()).amount(which);
}

TEST(HostModel, AnAvx512HostPacksAtTheRatesItsMachineMeasured) {
  // Packing ran about twice as fast per cycle on the AVX-512 machine as on the AVX2 one
  // (runtime_steps_bench's pack family): the same tiles of the same matmul cost half the
  // packing there, and the same run starts.
  const TensorGraph g = build_graph(matmul_workload(333, 777, 555, DType::F32));
  const CostModel avx512(g, fixed_host()), avx2(g, avx2_host());
  const std::vector<TileConfig> configs = feasible_cube_configs(avx2, 13, 10);
  ASSERT_GE(configs.size(), 5u);
  for (const TileConfig& c : configs) {
    ASSERT_TRUE(avx512.analyze(c).feasible) << c.to_string();
    EXPECT_NEAR(2 * amount(avx512, c, Coef::L2), amount(avx2, c, Coef::L2), 1e-6 * amount(avx2, c, Coef::L2)) << c.to_string();
    EXPECT_DOUBLE_EQ(amount(avx512, c, Coef::Latency), amount(avx2, c, Coef::Latency)) << c.to_string();
  }
}

TEST(HostModel, EdgeBlocksCostAtLeastTheirShare) {
  // AVX2 and portable blocks run all 16 columns whatever is left; AVX-512 runs only the
  // vectors a 48-column tail needs. Either way a partial block costs at least its share
  // of a full one, and a wider tile never costs less.
  const TensorGraph g = build_graph(matmul_workload(64, 64, 64, DType::F32));
  const Target avx2_target = avx2_host(), avx512_target = fixed_host();  // HostModel keeps a reference
  const HostModel avx2(g, avx2_target), avx512(g, avx512_target);
  std::mt19937 rng(21);
  for (int i = 0; i < 40; ++i) {
    const int64_t m = 1 + rng() % 128, k = 1 + rng() % 96, n = 1 + rng() % 160;
    const int64_t n16 = (n + 15) / 16 * 16;
    EXPECT_DOUBLE_EQ(avx2.tmatmul_fma_cycles(m, n, k), avx2.tmatmul_fma_cycles(m, n16, k)) << m << "x" << n;
    for (const HostModel* h : {&avx2, &avx512}) {
      EXPECT_GE(h->tmatmul_fma_cycles(m, n, k), h->tmatmul_fma_cycles(m, n16, k) * static_cast<double>(n) / n16);
      EXPECT_LE(h->tmatmul_fma_cycles(m, n, k), h->tmatmul_fma_cycles(m, n + 1 + rng() % 32, k));
      EXPECT_LE(h->tmatmul_fma_cycles(m, n, k), h->tmatmul_fma_cycles(m + 1 + rng() % 16, n, k));
      EXPECT_LT(h->tmatmul_fma_cycles(m, n, k), h->tmatmul_fma_cycles(m, n, k + 1));
    }
  }
  // AVX-512: a 16-column tail block is one vector wide, cheaper than a 48-column one,
  // though not by the full 3x: it loads as many A broadcasts per k step (it is
  // load-bound where the full block is FMA-bound).
  EXPECT_LT(avx512.tmatmul_fma_cycles(8, 16, 32), avx512.tmatmul_fma_cycles(8, 48, 32));
  EXPECT_GE(avx512.tmatmul_fma_cycles(8, 16, 32) * 3, avx512.tmatmul_fma_cycles(8, 48, 32));
  EXPECT_DOUBLE_EQ(avx2.tmatmul_fma_cycles(4, 1, 32), avx2.tmatmul_fma_cycles(4, 16, 32));
}

TEST(HostModel, RaggedShapesNeverPredictFasterThanSmallerOnes) {
  // Growing M, N or K by a ragged amount adds edge tiles (or widens them): with the
  // same tile config the prediction never drops.
  std::mt19937 rng(17);
  int checked = 0;
  for (int i = 0; i < 12; ++i) {
    const int64_t m = 64 + rng() % 512, k = 64 + rng() % 512, n = 64 + rng() % 512;
    const int64_t dm = 1 + rng() % 40, dk = 1 + rng() % 40, dn = 1 + rng() % 40;
    for (const Target& t : {fixed_host(), avx2_host()}) {
      const TensorGraph small = build_graph(matmul_workload(m, k, n, DType::F32));
      const TensorGraph large = build_graph(matmul_workload(m + dm, k + dk, n + dn, DType::F32));
      const CostModel a(small, t), b(large, t);
      for (const TileConfig& c : feasible_cube_configs(a, 100 + i, 6)) {
        if (!b.analyze(c).feasible) continue;
        ++checked;
        EXPECT_GE(b.predict_ns(c), a.predict_ns(c)) << m << "x" << k << "x" << n << " + " << dm << "," << dk << ","
                                                    << dn << " " << c.to_string();
      }
    }
  }
  EXPECT_GT(checked, 50);
}

TEST(HostModel, PackingRunsGrowAsTheRunsNarrow) {
  // Each TLOAD row of B is nL1 floats and of A kAL1 floats: halving either doubles the
  // runs (and so their waits) for the same bytes, or more when the operand re-packs too.
  const TensorGraph g = build_graph(matmul_workload(333, 555, 777, DType::F32));
  const CostModel model(g, avx2_host());
  double previous = 0;
  for (int64_t nL1 : {256, 128, 64, 32, 16}) {
    const TileConfig c = cube_config(64, 64, 16, 64, 16, nL1);
    ASSERT_TRUE(model.analyze(c).feasible) << c.to_string();
    const double runs = amount(model, c, Coef::Latency);
    EXPECT_GT(runs, previous) << "nL1 " << nL1;
    previous = runs;
  }
  previous = 0;
  for (int64_t kL1 : {256, 128, 64, 32, 16}) {
    const TileConfig c = cube_config(64, 64, 16, kL1, 64, 64);
    ASSERT_TRUE(model.analyze(c).feasible) << c.to_string();
    const double runs = amount(model, c, Coef::Latency);
    EXPECT_GT(runs, previous) << "kL1 " << kL1;
    previous = runs;
  }
}

TEST(HostModel, PackingSlowsPastL2AndPaysDramPastTheLlcShare) {
  // matmul M x 512 x 64 in 64 x 64 L1 tiles: A is packed once, B once per M tile, the
  // same bytes of each. Packing an operand past the core's L2 (fixed_host's is 1 MiB)
  // costs more per byte than one inside it, the same wherever it lies inside the core's
  // LLC share (4 MiB here), and more again past the share, from DRAM.
  const TileConfig c = cube_config(64, 64, 64, 128, 64, 64);
  auto price_per_byte = [&](int64_t m) {
    const TensorGraph g = build_graph(matmul_workload(m, 512, 64, DType::F32));
    const CostModel model(g, fixed_host());
    const TilingSummary s = model.analyze(c);
    EXPECT_TRUE(s.feasible) << "M " << m;
    double bytes = 0;
    for (const TensorRead& read : s.kernels.at(0).reads) bytes += read.bytes;
    return amount(model, c, Coef::L2) / bytes;
  };
  const double a_256k = price_per_byte(128), a_2m = price_per_byte(1024), a_4m = price_per_byte(2048),
               a_32m = price_per_byte(16384);
  EXPECT_GT(a_2m, a_256k);
  EXPECT_NEAR(a_4m, a_2m, 1e-9 * a_2m);
  EXPECT_GT(a_32m, 1.5 * a_4m);
}

TEST(HostModel, NarrowCTilesPayARowCopyPerRow) {
  // With nL0 fixed the micro-kernel work is the same; a C tile narrower than C's rows is
  // stored one row-copy call per row, so the stores grow as nL1 shrinks below N.
  std::mt19937 rng(33);
  for (int i = 0; i < 6; ++i) {
    const int64_t m = 64 * (1 + rng() % 8), k = 64 * (1 + rng() % 4);
    const TensorGraph g = build_graph(matmul_workload(m, k, 128, DType::F32));
    const CostModel model(g, avx2_host());
    double previous = 0;
    for (int64_t nL1 : {128, 64, 32, 16}) {
      const Estimate e = model.estimate(cube_config(64, 64, 32, 64, 16, nL1));
      ASSERT_TRUE(e.feasible) << format_violations(e.violations);
      EXPECT_GT(e.breakdown.fix, previous) << m << "x" << k << " nL1 " << nL1;
      previous = e.breakdown.fix;
    }
  }
}

TEST(HostModel, VectorTilesNarrowerThanTheirRowsPayARunStartPerRow) {
  // Elementwise gelu, ragged shapes: a tile of whole rows copies each task's window as
  // one run; halving the tile's width below the row doubles the rows copied as runs of
  // their own (each a row pitch from the last), so the run starts grow, and with them
  // the row copies' time; the element work stays the same.
  std::mt19937 rng(41);
  for (int i = 0; i < 6; ++i) {
    const int64_t rows = 64 + rng() % 200, cols = 512 + rng() % 700;
    const TensorGraph g = build_graph(row_workload("gelu", rows, cols));
    const CostModel model(g, fixed_host());
    TileConfig whole;
    whole.vec = Shape{8, cols};
    ASSERT_TRUE(model.analyze(whole).feasible) << rows << "x" << cols;
    EXPECT_EQ(amount(model, whole, Coef::Latency), 0) << rows << "x" << cols;
    double previous = 0, previous_copy = model.estimate(whole).breakdown.mte2_l2;
    for (int64_t width : {256, 128, 64, 32, 16}) {
      TileConfig narrow;
      narrow.vec = Shape{8, width};
      const Estimate e = model.estimate(narrow);
      ASSERT_TRUE(e.feasible) << rows << "x" << cols << " width " << width << format_violations(e.violations);
      const double runs = amount(model, narrow, Coef::Latency);
      EXPECT_GT(runs, previous) << rows << "x" << cols << " width " << width;
      EXPECT_GT(e.breakdown.mte2_l2, previous_copy) << rows << "x" << cols << " width " << width;
      EXPECT_DOUBLE_EQ(amount(model, narrow, Coef::Vector), amount(model, whole, Coef::Vector));
      previous = runs;
      previous_copy = e.breakdown.mte2_l2;
    }
  }
}

TEST(HostModel, TranscendentalRowsCostTheirFp64Expansions) {
  // erfc's rows run two series and two exps in fp64; a plain add streams the row.
  const TensorGraph erfc = build_graph(row_workload("erfc", 256, 1024));
  const TensorGraph add = build_graph(row_workload("add", 256, 1024));
  const CostModel a(erfc, fixed_host()), b(add, fixed_host());
  TileConfig tile;
  tile.vec = Shape{8, 1024};
  const Estimate ea = a.estimate(tile), eb = b.estimate(tile);
  ASSERT_TRUE(ea.feasible && eb.feasible);
  EXPECT_GT(ea.breakdown.vector, 20 * eb.breakdown.vector);
}

TEST(HostModel, PassesPayOnlyForTheStreamBeyondTheirCompute) {
  // Layernorm tiles of 2 .. 1024 whole rows of 2048 floats: the prefetchers stream a
  // tile from L2 while the loop computes, so a pass there costs what it costs in L1d
  // (measured flat up to a 2 MiB footprint, bench/runtime_steps_bench); past the
  // core's LLC share it waits on DRAM, the more the further the working set reaches:
  // never less for a bigger tile, and no cliff.
  const TensorGraph g = build_graph(row_workload("layernorm", 1024, 2048));
  const CostModel model(g, fixed_host());
  std::vector<double> spill;
  for (int64_t rows : {2, 4, 16, 64, 128, 256, 512, 1024}) {
    TileConfig tile;
    tile.vec = Shape{rows, 2048};
    const Estimate e = model.estimate(tile);
    ASSERT_TRUE(e.feasible) << rows;
    if (!spill.empty()) {
      EXPECT_GE(e.breakdown.mte1, spill.back()) << rows << " rows";
    }
    spill.push_back(e.breakdown.mte1);
  }
  EXPECT_EQ(spill[0], 0);  // 2 rows: past L1d, inside L2
  EXPECT_EQ(spill[2], 0);  // 16 rows: 128 KiB a buffer, inside L2
  EXPECT_GT(spill[6], 0);  // 512 rows: 4 MiB a buffer, past the LLC share
  EXPECT_GT(spill[7], spill[6]);
}

TEST(HostModel, PassesStreamTheBytesATaskAddressesNotItsFurtherSlots) {
  // With two slots a loaded value's footprint doubles, but every instruction names its
  // first slot. Layernorm tiles of 256 rows of 2048 floats with two slots and of 512
  // rows with one have about the same UB footprint (8 MiB); the first addresses a
  // quarter less of it, and its passes stream less. (Measured: layernorm tiles of 512
  // rows of 1024 ran 7.32 ms with two slots, 7.34 with one: results/
  // cost_model_ranking_cpu.md.)
  const TensorGraph g = build_graph(row_workload("layernorm", 1024, 2048));
  const Target t = fixed_host();
  const CostModel model(g, t);
  TileConfig two_slots, one_slot;
  two_slots.vec = Shape{256, 2048};
  two_slots.nbuffer = 2;
  one_slot.vec = Shape{512, 2048};
  one_slot.nbuffer = 1;
  const KernelSummary k2 = analyze(g, two_slots, t).kernels.at(0), k1 = analyze(g, one_slot, t).kernels.at(0);
  EXPECT_NEAR(static_cast<double>(k2.footprint.at(MemLevel::UB)), static_cast<double>(k1.footprint.at(MemLevel::UB)),
              0.01 * static_cast<double>(k1.footprint.at(MemLevel::UB)));
  EXPECT_EQ(k1.ub_addressed_bytes, k1.footprint.at(MemLevel::UB));
  EXPECT_LT(k2.ub_addressed_bytes, 0.8 * static_cast<double>(k2.footprint.at(MemLevel::UB)));
  const Estimate e2 = model.estimate(two_slots), e1 = model.estimate(one_slot);
  ASSERT_TRUE(e1.feasible && e2.feasible);
  EXPECT_LT(e2.breakdown.mte1, e1.breakdown.mte1);
}

TEST(HostModel, WorkingSetsBeyondTheLlcStreamNoFaster) {
  // A layernorm tile of whole 2048-float rows: shrinking only the LLC below the task's
  // working set moves its passes to DRAM, which never speeds them up.
  const TensorGraph g = build_graph(row_workload("layernorm", 1024, 2048));
  Target small_llc = fixed_host();
  small_llc.l2_bytes = 2 * 1024 * 1024;
  small_llc.gm_read_bpc = 4;
  const CostModel big(g, fixed_host()), small(g, small_llc);
  TileConfig tile;
  tile.vec = Shape{512, 2048};  // 4 MiB per buffer
  const Estimate eb = big.estimate(tile), es = small.estimate(tile);
  ASSERT_TRUE(eb.feasible && es.feasible);
  EXPECT_GT(es.breakdown.mte1, eb.breakdown.mte1);
  EXPECT_GE(es.predicted_ns, eb.predicted_ns);
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
