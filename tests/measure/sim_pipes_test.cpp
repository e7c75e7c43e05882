// The simulator inside one core: instruction costs from the target, pipes that overlap
// when nothing orders them, flags that do order them, and n-buffering.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "core/error.h"
#include "core/target.h"
#include "measure/sim/simulator.h"
#include "tests/measure/sim_programs.h"

namespace pto::sim {
namespace {

using testing::BlockBuilder;
using testing::gm;
using testing::gm_tensor;
using testing::local;
using testing::make_task;
using testing::one_kernel;

using testing::b1;

// A single-task program over one fp16 input x [64, 512] and one output y [64, 512].
Program single_task(const BlockProgram& block, CoreType core = CoreType::AIV) {
  return one_kernel({gm_tensor(0, "x", DType::F16, {64, 512}, TensorRole::Input),
                     gm_tensor(1, "y", DType::F16, {64, 512}, TensorRole::Output)},
                    {block}, {make_task(0, 0, core, {{0, {0, 0}}, {1, {0, 0}}})});
}

double cycles_of(const BlockProgram& block, const Target& target = b1()) {
  return simulate(single_task(block), target).cycles;
}

double busy_cycles(const SimResult& r, CoreType core, Pipe pipe, const Target& t) {
  return r.pipe_utilisation.at(core)[static_cast<int>(pipe)] * t.cores(core) * r.cycles;
}

TEST(SimCosts, VectorOpFollowsTheTargetsLatencyAndParallelism) {
  BlockBuilder b(0, "vadd", CoreType::AIV);
  const int u0 = b.buffer(MemLevel::UB, DType::F16, {64, 512}), u1 = b.buffer(MemLevel::UB, DType::F16, {64, 512});
  b.vec(OpKind::Add, local(MemLevel::UB, u1, {64, 512}), {local(MemLevel::UB, u0, {64, 512}), local(MemLevel::UB, u0, {64, 512})});
  const VectorCost add = b1().vector_cost("add", DType::F16);
  const double repeats = 64.0 * 512 * 2 / 256;
  EXPECT_DOUBLE_EQ(cycles_of(b.build()), add.latency + (repeats - 1) * (128.0 / add.parallelism));
}

TEST(SimCosts, MatmulCostsOneCyclePerFractalCountingPartialFractalsWhole) {
  BlockBuilder b(0, "mm", CoreType::AIC);
  const int a = b.buffer(MemLevel::L0A, DType::F16, {128, 64}), w = b.buffer(MemLevel::L0B, DType::F16, {64, 256});
  const int c = b.buffer(MemLevel::L0C, DType::F32, {128, 256});
  b.matmul(local(MemLevel::L0C, c, {120, 250}), local(MemLevel::L0A, a, {120, 50}), local(MemLevel::L0B, w, {50, 250}), false);
  EXPECT_DOUBLE_EQ(cycles_of(b.build()), 8.0 * 4 * 16);  // ceil(120/16) * ceil(50/16) * ceil(250/16)
}

TEST(SimCosts, LoadPaysGmLatencyThenTheMissRateColdAndTheHitRateWarm) {
  const Target& t = b1();
  const double bytes = 64.0 * 512 * 2;
  BlockBuilder once(0, "load", CoreType::AIV);
  const int u = once.buffer(MemLevel::UB, DType::F16, {64, 512});
  once.load(local(MemLevel::UB, u, {64, 512}), gm(0, {0, 0}, {64, 512}));
  const double cold = t.gm_read_latency + bytes / t.gm_read_bpc;
  EXPECT_DOUBLE_EQ(cycles_of(once.build()), cold);

  // A second transfer right behind the first issues while the first is under way, so
  // its latency hides: only its data, at the L2 hit rate, adds.
  BlockBuilder twice = once;
  twice.load(local(MemLevel::UB, u, {64, 512}), gm(0, {0, 0}, {64, 512}));
  EXPECT_DOUBLE_EQ(cycles_of(twice.build()), cold + bytes / t.l2_read_bpc);

  // Behind a flag wait the pipe is empty again and the latency shows.
  BlockBuilder waited = once;
  waited.sync(Pipe::MTE2, Pipe::MTE2, 0);
  waited.load(local(MemLevel::UB, u, {64, 512}), gm(0, {0, 0}, {64, 512}));
  EXPECT_DOUBLE_EQ(cycles_of(waited.build()), cold + 2 * t.sync_latency + t.gm_read_latency + bytes / t.l2_read_bpc);
}

// Each contiguous run of a transfer costs the core at least one DMA burst at the L2-hit
// rate (results/sim_validation.md: short rows served by the L2 are slow, short rows
// streamed from HBM barely). For random row lengths and bursts: a load that hits in L2
// takes max(bytes, rows x max(row, burst)) at the hit rate; a cold load the longer of its
// bytes at the fill rate and that burst floor. The time never falls as the burst grows,
// and a burst of 0 changes nothing. (Before the floor was at the hit rate, cold short
// rows paid their bursts at the fill rate, 3.4x slower; the published data_copy rows
// contradicted that.)
TEST(SimCosts, ShortRowsCostAWholeBurstEachAtTheHitRate) {
  std::mt19937 rng(11);
  for (int trial = 0; trial < 20; ++trial) {
    const int64_t rows = std::uniform_int_distribution<int>(1, 64)(rng);
    const int64_t cols = std::uniform_int_distribution<int>(1, 32)(rng) * 16;  // fp16, < the tensor's 512
    BlockBuilder once(0, "load", CoreType::AIV);
    const int u = once.buffer(MemLevel::UB, DType::F16, {64, 512});
    once.load(local(MemLevel::UB, u, {rows, cols}), gm(0, {0, 0}, {rows, cols}));
    BlockBuilder twice = once;  // the second load finds every line in L2
    twice.load(local(MemLevel::UB, u, {rows, cols}), gm(0, {0, 0}, {rows, cols}));
    const BlockProgram cold_block = once.build(), warm_block = twice.build();

    const double row_bytes = 2.0 * cols, bytes = rows * row_bytes;
    double previous_cold = 0, previous_warm = 0;
    for (int64_t burst : {int64_t{0}, int64_t{64}, int64_t{128}, int64_t{256}, int64_t{384}, int64_t{512}}) {
      Target t = b1();
      t.gm_min_burst_bytes = burst;
      const double floor = burst > 0 ? rows * std::max(row_bytes, static_cast<double>(burst)) / t.l2_read_bpc : 0;
      const double cold = cycles_of(cold_block, t), warm = cycles_of(warm_block, t) - cold;
      EXPECT_DOUBLE_EQ(cold, t.gm_read_latency + std::max(bytes / t.gm_read_bpc, floor))
          << rows << " rows of " << row_bytes << " B, burst " << burst;
      EXPECT_NEAR(warm, std::max(bytes / t.l2_read_bpc, floor), 1e-6)
          << rows << " rows of " << row_bytes << " B, burst " << burst;
      EXPECT_GE(cold, previous_cold);
      EXPECT_GE(warm, previous_warm - 1e-6);
      previous_cold = cold, previous_warm = warm;
    }
  }
}

// A window that spans whole rows is one contiguous run for the DMA: with a burst longer
// than a row, full-width rows pay one burst in all (or their bytes), while the same rows
// cut one element short pay a burst each.
TEST(SimCosts, RowsThatFollowOneAnotherInGmAreOneRun) {
  std::mt19937 rng(12);
  for (int trial = 0; trial < 10; ++trial) {
    const int64_t rows = std::uniform_int_distribution<int>(2, 64)(rng);
    Target t = b1();
    t.gm_min_burst_bytes = 1024 * std::uniform_int_distribution<int>(2, 8)(rng);  // rows are 1 KB
    const auto burst = static_cast<double>(t.gm_min_burst_bytes);
    auto cold_cycles = [&](int64_t cols) {
      BlockBuilder b(0, "load", CoreType::AIV);
      const int u = b.buffer(MemLevel::UB, DType::F16, {64, 512});
      b.load(local(MemLevel::UB, u, {rows, cols}), gm(0, {0, 0}, {rows, cols}));
      return cycles_of(b.build(), t) - t.gm_read_latency;
    };
    const double whole = rows * 1024.0;
    EXPECT_DOUBLE_EQ(cold_cycles(512), std::max(whole / t.gm_read_bpc, std::max(whole, burst) / t.l2_read_bpc));
    EXPECT_DOUBLE_EQ(cold_cycles(496), std::max(rows * 992.0 / t.gm_read_bpc, rows * burst / t.l2_read_bpc));
  }
}

TEST(SimCosts, StoreOfL0CPaysGmWriteLatencyAtTheSlowerOfFixAndL2WriteRates) {
  const Target& t = b1();
  BlockBuilder b(0, "store", CoreType::AIC);
  const int c = b.buffer(MemLevel::L0C, DType::F32, {64, 128});
  b.store(gm(1, {0, 0}, {64, 128}), local(MemLevel::L0C, c, {64, 128}));
  const double bytes = 64.0 * 128 * 2;  // written as the fp16 GM tensor
  EXPECT_DOUBLE_EQ(cycles_of(b.build()), t.gm_write_latency + bytes / std::min(t.l0c_to_ub_bpc, t.l2_write_bpc));
}

// Random instructions on the pipes of one core with no flags between them: each pipe
// runs back to back from the start, so the task takes exactly as long as its busiest
// pipe, and less than the pipes one after another.
TEST(SimPipes, PipesWithoutFlagsOverlapFully) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 40; ++trial) {
    const bool cube = trial % 2;
    BlockBuilder b(0, "mix", cube ? CoreType::AIC : CoreType::AIV);
    const int ub = b.buffer(MemLevel::UB, DType::F16, {64, 512}), l1 = b.buffer(MemLevel::L1, DType::F16, {64, 512});
    const int l0a = b.buffer(MemLevel::L0A, DType::F16, {64, 256}), l0b = b.buffer(MemLevel::L0B, DType::F16, {256, 128});
    const int l0c = b.buffer(MemLevel::L0C, DType::F32, {64, 128});
    auto rows = [&] { return std::uniform_int_distribution<int64_t>(1, 64)(rng); };
    const int count = std::uniform_int_distribution<int>(2, 12)(rng);
    for (int i = 0; i < count; ++i) {
      const int64_t r = rows();
      switch (std::uniform_int_distribution<int>(0, 3)(rng)) {
        case 0: b.load(local(cube ? MemLevel::L1 : MemLevel::UB, cube ? l1 : ub, {r, 512}), gm(0, {64 - r, 0}, {r, 512})); break;
        case 1:
          if (cube) b.move(Pipe::MTE1, local(MemLevel::L0A, l0a, {r, 256}), local(MemLevel::L1, l1, {r, 256}));
          else b.vec(OpKind::Exp, local(MemLevel::UB, ub, {r, 512}), {local(MemLevel::UB, ub, {r, 512})});
          break;
        case 2:
          if (cube) b.matmul(local(MemLevel::L0C, l0c, {r, 128}), local(MemLevel::L0A, l0a, {r, 256}), local(MemLevel::L0B, l0b, {256, 128}), i > 0);
          else b.vec(OpKind::Add, local(MemLevel::UB, ub, {r, 512}), {local(MemLevel::UB, ub, {r, 512}), local(MemLevel::UB, ub, {r, 512})});
          break;
        default: b.store(gm(1, {0, 0}, {r, cube ? 128 : 512}), cube ? local(MemLevel::L0C, l0c, {r, 128}) : local(MemLevel::UB, ub, {r, 512}));
      }
    }
    const CoreType core = cube ? CoreType::AIC : CoreType::AIV;
    const SimResult r = simulate(single_task(b.build(), core), b1());
    double longest = 0, total = 0;
    int busy_pipes = 0;
    for (int p = 0; p < kNumPipes; ++p) {
      const double busy = busy_cycles(r, core, static_cast<Pipe>(p), b1());
      longest = std::max(longest, busy);
      total += busy;
      busy_pipes += busy > 0;
    }
    EXPECT_NEAR(r.cycles, longest, 1e-6 * r.cycles) << "trial " << trial;
    if (busy_pipes > 1) {
      EXPECT_LT(r.cycles, total) << "trial " << trial;
    }
  }
}

struct LoadThenAdd {
  BlockBuilder b{0, "flags", CoreType::AIV};
  int in = b.buffer(MemLevel::UB, DType::F16, {64, 512});
  int out = b.buffer(MemLevel::UB, DType::F16, {64, 512});
  void load() { b.load(local(MemLevel::UB, in, {64, 512}), gm(0, {0, 0}, {64, 512})); }
  void add() { b.vec(OpKind::Add, local(MemLevel::UB, out, {64, 512}), {local(MemLevel::UB, in, {64, 512}), local(MemLevel::UB, in, {64, 512})}); }
};

double load_cycles() {
  LoadThenAdd x;
  x.load();
  return cycles_of(x.b.build());
}
double add_cycles() {
  LoadThenAdd x;
  x.add();
  return cycles_of(x.b.build());
}

TEST(SimFlags, WaitFlagDelaysItsPipeUntilTheSetFlagsPipeIsDone) {
  const double sync = b1().sync_latency;
  LoadThenAdd free_running;
  free_running.load();
  free_running.add();
  EXPECT_DOUBLE_EQ(cycles_of(free_running.b.build()), std::max(load_cycles(), add_cycles()));

  LoadThenAdd ordered;
  ordered.load();
  ordered.b.sync(Pipe::MTE2, Pipe::V, 0);
  ordered.add();
  EXPECT_DOUBLE_EQ(cycles_of(ordered.b.build()), load_cycles() + 2 * sync + add_cycles());
}

TEST(SimFlags, WaitMayPrecedeItsSetInProgramOrder) {
  LoadThenAdd x;
  x.b.wait_flag(Pipe::MTE2, Pipe::V, 3);
  x.add();
  x.load();
  x.b.set_flag(Pipe::MTE2, Pipe::V, 3);
  EXPECT_DOUBLE_EQ(cycles_of(x.b.build()), load_cycles() + 2 * b1().sync_latency + add_cycles());
}

TEST(SimFlags, SetFlagCoversEverythingItsPipeIssuedBefore) {
  LoadThenAdd x;
  x.load();
  x.load();  // a warm second load
  x.b.sync(Pipe::MTE2, Pipe::V, 0);
  x.add();
  LoadThenAdd loads;
  loads.load();
  loads.load();
  EXPECT_DOUBLE_EQ(cycles_of(x.b.build()), cycles_of(loads.b.build()) + 2 * b1().sync_latency + add_cycles());
}

TEST(SimFlags, TheKthWaitMatchesTheKthSetOfTheSameEvent) {
  LoadThenAdd x;
  x.load();
  x.b.set_flag(Pipe::MTE2, Pipe::V, 0);
  x.load();
  x.b.set_flag(Pipe::MTE2, Pipe::V, 0);
  x.b.wait_flag(Pipe::MTE2, Pipe::V, 0);
  x.add();
  x.b.wait_flag(Pipe::MTE2, Pipe::V, 0);
  x.add();
  // The second add waits for the second load, not for the first.
  LoadThenAdd loads;
  loads.load();
  loads.b.set_flag(Pipe::MTE2, Pipe::V, 0);
  loads.load();
  loads.b.set_flag(Pipe::MTE2, Pipe::V, 0);
  EXPECT_DOUBLE_EQ(cycles_of(x.b.build()), cycles_of(loads.b.build()) + b1().sync_latency + add_cycles());
}

TEST(SimFlags, WaitWithoutItsSetIsAMalformedProgramNamingTheBlock) {
  LoadThenAdd x;
  x.b.wait_flag(Pipe::MTE2, Pipe::V, 5);
  x.add();
  try {
    cycles_of(x.b.build());
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.category(), ErrorCategory::Internal);
    EXPECT_NE(std::string(e.what()).find("flags"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("no matching SET_FLAG"), std::string::npos) << e.what();
  }
}

TEST(SimFlags, AWaitOnASetLaterOnTheSamePipeDeadlocksAndSaysSo) {
  LoadThenAdd x;
  x.b.wait_flag(Pipe::V, Pipe::V, 0);
  x.add();
  x.b.set_flag(Pipe::V, Pipe::V, 0);
  try {
    cycles_of(x.b.build());
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.category(), ErrorCategory::Usage);
    EXPECT_NE(std::string(e.what()).find("deadlock"), std::string::npos) << e.what();
  }
}

// One tile with a long K loop: with two L1 slots the loads of step i+1 overlap the
// compute of step i, so the task takes about as long as its slowest pipe.
struct Buffering {
  SimResult single, double_buffered;
  double slowest_pipe = 0;  // busy cycles of the busiest pipe, double-buffered
};

Buffering run_long_k(const Target& t) {
  testing::MatmulSpec s;
  s.M = 128, s.N = 256, s.K = 256 * 24;
  Buffering out;
  s.nbuffer = 1;
  out.single = simulate(testing::tiled_matmul(s), t);
  s.nbuffer = 2;
  out.double_buffered = simulate(testing::tiled_matmul(s), t);
  for (int p = 0; p < kNumPipes; ++p)
    out.slowest_pipe = std::max(out.slowest_pipe, busy_cycles(out.double_buffered, CoreType::AIC, static_cast<Pipe>(p), t));
  return out;
}

TEST(SimPipes, DoubleBufferingApproachesTheSlowestPipeWhenLoadsDominate) {
  const Buffering b = run_long_k(b1());
  EXPECT_EQ(b.double_buffered.bound, "MTE2@AIC");
  EXPECT_LE(b.double_buffered.cycles, 1.05 * b.slowest_pipe);
  // One slot: each load waits until MTE1 has read the previous step out of L1.
  EXPECT_GT(b.single.cycles, 1.1 * b.double_buffered.cycles);
}

TEST(SimPipes, DoubleBufferingApproachesTheSlowestPipeWhenTheCubeDominates) {
  Target fast_memory = b1();
  fast_memory.gm_read_bpc = fast_memory.l2_read_bpc = 4096;
  fast_memory.gm_read_latency = 20;
  fast_memory.hbm_gbps = fast_memory.l2_gbps = 1e6;
  const Buffering b = run_long_k(fast_memory);
  EXPECT_EQ(b.double_buffered.bound, "M@AIC");
  EXPECT_LE(b.double_buffered.cycles, 1.05 * b.slowest_pipe);
  EXPECT_GE(b.single.cycles, b.double_buffered.cycles);
}

}  // namespace
}  // namespace pto::sim
