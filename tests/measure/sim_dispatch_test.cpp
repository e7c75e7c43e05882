// The simulator across cores: dependency-driven dispatch (MPMD, not lockstep), kernel
// barriers, AIC/AIV pools, idle cores, vector tasks overlapping on one core with
// n-buffering, determinism and the errors a malformed program gets.
#include <gtest/gtest.h>

#include <random>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/target.h"
#include "measure/sim/simulator.h"
#include "tests/measure/sim_programs.h"

namespace pto::sim {
namespace {

using testing::BlockBuilder;
using testing::gm;
using testing::local;
using testing::make_task;
using testing::one_kernel;
using testing::row_tasks;
using testing::vector_block;
using testing::xy;

using testing::b1;

Target with_cores(int aic, int aiv) {
  Target t = b1();
  t.aic_cores = aic;
  t.aiv_cores = aiv;
  return t;
}

TEST(SimDispatch, FewerTilesThanCoresLeavesCoresIdle) {
  testing::MatmulSpec s;
  s.M = 256, s.N = 512, s.K = 1024;  // 2 x 2 tiles for 24 AIC cores
  const SimResult four = simulate(testing::tiled_matmul(s), b1());
  s.M = 128, s.N = 256;
  const SimResult one = simulate(testing::tiled_matmul(s), b1());
  EXPECT_EQ(four.cores_used.at(CoreType::AIC), 4);
  EXPECT_LE(four.pipe_utilisation.at(CoreType::AIC)[static_cast<int>(Pipe::M)], 4.0 / 24);
  // The four tiles run side by side: about one tile's time, far from four.
  EXPECT_LT(four.cycles, 1.3 * one.cycles);
  EXPECT_EQ(four.kernels.at(0).tasks, 4);
}

TEST(SimDispatch, TasksRunAsCoresFreeUpNotInLockstepWaves) {
  const Target two = with_cores(2, 2);
  // Task 0 is long; tasks 1..3 are short. Lockstep waves of two would cost
  // long + short; as dispatched, the three short ones run beside the long one.
  const int64_t rows = 16;
  std::vector<BlockProgram> blocks = {vector_block(0, rows, 60), vector_block(1, rows, 1)};
  std::vector<Task> tasks = row_tasks(4, rows, {0, 1, 1, 1});
  const double long_one = simulate(one_kernel(xy(4 * rows), {blocks[0]}, {tasks[0]}), two).cycles;
  const double short_one = simulate(one_kernel(xy(4 * rows), {blocks[0], blocks[1]}, {make_task(0, 1, CoreType::AIV, tasks[1].bindings)}), two).cycles;
  ASSERT_GT(long_one, 3.5 * short_one);
  const SimResult all = simulate(one_kernel(xy(4 * rows), blocks, tasks), two);
  EXPECT_NEAR(all.cycles, long_one, 0.02 * long_one);
}

TEST(SimDispatch, TaskDepsAndKernelBarriersOrderWork) {
  const Target t = with_cores(4, 4);
  const int64_t rows = 16;
  const std::vector<BlockProgram> blocks = {vector_block(0, rows, 20)};
  const double alone = simulate(one_kernel(xy(2 * rows), blocks, row_tasks(1, rows, {0})), t).cycles;

  const double side_by_side = simulate(one_kernel(xy(2 * rows), blocks, row_tasks(2, rows, {0})), t).cycles;
  EXPECT_LT(side_by_side, 1.2 * alone);

  std::vector<Task> chained = row_tasks(2, rows, {0});
  chained[1].deps = {0};
  EXPECT_GT(simulate(one_kernel(xy(2 * rows), blocks, chained), t).cycles, 1.8 * alone);

  Target launch = t;
  launch.kernel_launch_cycles = 1000;
  Program two_kernels = one_kernel(xy(2 * rows), blocks, row_tasks(2, rows, {0}));
  two_kernels.kernels[0].tasks = {0};
  Kernel second;
  second.id = 1;
  second.name = "k1";
  second.after = {0};
  second.tasks = {1};
  two_kernels.tasks[1].kernel = 1;
  two_kernels.kernels.push_back(second);
  const SimResult r = simulate(two_kernels, launch);
  ASSERT_EQ(r.kernels.size(), 2u);
  EXPECT_DOUBLE_EQ(r.kernels[0].start_cycle, 1000);
  EXPECT_DOUBLE_EQ(r.kernels[1].start_cycle, r.kernels[0].end_cycle + 1000);
  EXPECT_DOUBLE_EQ(r.cycles, r.kernels[1].end_cycle);
}

TEST(SimDispatch, TaskDispatchCyclesDelayEveryTask) {
  Target t = with_cores(1, 1);
  const std::vector<BlockProgram> blocks = {vector_block(0, 16, 3)};
  std::vector<Task> chain = row_tasks(3, 16, {0});  // each task starts after the one before
  chain[1].deps = {0};
  chain[2].deps = {1};
  const double base = simulate(one_kernel(xy(48), blocks, chain), t).cycles;
  t.task_dispatch_cycles = 500;
  EXPECT_NEAR(simulate(one_kernel(xy(48), blocks, chain), t).cycles, base + 3 * 500, 1e-6);
}

TEST(SimDispatch, WithoutSplitCoresVectorTasksShareTheOnePool) {
  Target pooled = with_cores(1, 8);
  pooled.split_cores = false;
  const std::vector<BlockProgram> blocks = {vector_block(0, 16, 20)};
  const SimResult one = simulate(one_kernel(xy(32), blocks, row_tasks(1, 16, {0})), pooled);
  const SimResult two = simulate(one_kernel(xy(32), blocks, row_tasks(2, 16, {0})), pooled);
  EXPECT_EQ(two.pipe_utilisation.count(CoreType::AIV), 0u);
  EXPECT_EQ(two.cores_used.at(CoreType::AIC), 1);
  EXPECT_GT(two.cycles, 1.8 * one.cycles);  // one core: the tasks take turns
}

double busy(const SimResult& r, Pipe p) {
  return r.pipe_utilisation.at(CoreType::AIV)[static_cast<int>(p)] * r.cycles;
}

TEST(SimDispatch, VectorTasksWithTwoSlotsOverlapLoadsWithComputeOnOneCore) {
  const Target t = with_cores(1, 1);
  const int64_t rows = 64;
  // Loads and adds of about equal length, 8 tasks on one core.
  const SimResult single = simulate(one_kernel(xy(8 * rows), {vector_block(0, rows, 4, 1)}, row_tasks(8, rows, {0})), t);
  const SimResult doubled = simulate(one_kernel(xy(8 * rows), {vector_block(0, rows, 4, 2)}, row_tasks(8, rows, {0})), t);
  EXPECT_LT(doubled.cycles, 0.8 * single.cycles);
  // Loads run while the previous task computes and stores (its one output buffer keeps
  // the next compute waiting for its store): well under the pipes' sum.
  EXPECT_LT(doubled.cycles,
            0.8 * (busy(doubled, Pipe::MTE2) + busy(doubled, Pipe::V) + busy(doubled, Pipe::MTE3)));
}

// One slot per buffer, as Ascend C's depth-1 queues: the next task's load waits until the
// vector unit is done with the input buffer, so loads and compute take turns, but the
// store of one task runs beside the load of the next (separate output buffer).
TEST(SimDispatch, SingleSlotVectorTasksOverlapTheStoreWithTheNextLoadButNotTheCompute) {
  const Target t = with_cores(1, 1);
  std::mt19937 rng(5);
  for (int trial = 0; trial < 8; ++trial) {
    const int64_t rows = 16 * std::uniform_int_distribution<int64_t>(1, 6)(rng);
    const int adds = std::uniform_int_distribution<int>(1, 6)(rng);
    const int tasks = std::uniform_int_distribution<int>(3, 9)(rng);
    const SimResult r = simulate(one_kernel(xy(tasks * rows), {vector_block(0, rows, adds)}, row_tasks(tasks, rows, {0})), t);
    const double load = busy(r, Pipe::MTE2), compute = busy(r, Pipe::V), store = busy(r, Pipe::MTE3);
    EXPECT_GE(r.cycles, load + compute - 1e-6) << rows << " rows, " << adds << " adds";
    // Every store but the last hides behind a load or a compute of the next task.
    EXPECT_LT(r.cycles, load + compute + 1.5 * store / tasks) << rows << " rows, " << adds << " adds";
  }
}

// A task that loads, computes and stores in one buffer leaves nothing for the next one
// to overlap with: the tasks run back to back.
TEST(SimDispatch, ATaskWorkingInPlaceHoldsItsBufferUntilItsStoreEnds) {
  const Target t = with_cores(1, 1);
  const int64_t rows = 32;
  BlockBuilder b(0, "in_place", CoreType::AIV);
  const int x = b.buffer(MemLevel::UB, DType::F16, {rows, 512});
  b.load(local(MemLevel::UB, x, {rows, 512}), gm(0, {0, 0}, {rows, 512}));
  b.sync(Pipe::MTE2, Pipe::V, 0);
  b.vec(OpKind::Add, local(MemLevel::UB, x, {rows, 512}), {local(MemLevel::UB, x, {rows, 512}), local(MemLevel::UB, x, {rows, 512})});
  b.sync(Pipe::V, Pipe::MTE3, 0);
  b.store(gm(1, {0, 0}, {rows, 512}), local(MemLevel::UB, x, {rows, 512}));
  const BlockProgram in_place = b.build();
  const SimResult one = simulate(one_kernel(xy(rows), {in_place}, row_tasks(1, rows, {0})), t);
  const SimResult four = simulate(one_kernel(xy(4 * rows), {in_place}, row_tasks(4, rows, {0})), t);
  EXPECT_GE(four.cycles, 4 * one.cycles - 1e-6);
  EXPECT_GE(four.cycles, busy(four, Pipe::MTE2) + busy(four, Pipe::V) + busy(four, Pipe::MTE3) - 1e-6);
}

// Random matmul shapes, tiles, buffering and orders: two runs agree exactly.
TEST(SimDispatch, IsDeterministic) {
  std::mt19937 rng(11);
  auto pick = [&](std::vector<int64_t> v) { return v[std::uniform_int_distribution<size_t>(0, v.size() - 1)(rng)]; };
  for (int trial = 0; trial < 12; ++trial) {
    testing::MatmulSpec s;
    s.M = pick({100, 256, 300, 513}), s.K = pick({64, 200, 512}), s.N = pick({96, 256, 700});
    s.mL1 = pick({64, 128}), s.nL1 = pick({128, 256}), s.kL1 = 128, s.kL0 = pick({32, 64});
    s.nbuffer = static_cast<int>(pick({1, 2}));
    s.l2_group = {pick({0, 2, 3}), pick({0, 2})};
    const Program p = testing::tiled_matmul(s);
    Target t = b1();
    t.l2_bytes = pick({0, 1 << 16, 1 << 22});
    EXPECT_EQ(simulate(p, t).to_json(), simulate(p, t).to_json()) << "trial " << trial;
  }
}

void expect_usage_error(const Program& p, const Target& t, const std::string& fragment) {
  try {
    simulate(p, t);
    FAIL() << "expected an error mentioning " << fragment;
  } catch (const Error& e) {
    EXPECT_EQ(e.category(), ErrorCategory::Usage);
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

TEST(SimErrors, ProgramsForAnotherTargetAndUnfitTargetsAreNamed) {
  const std::vector<BlockProgram> blocks = {vector_block(0, 16, 1)};
  const Program good = one_kernel(xy(32), blocks, row_tasks(2, 16, {0}));

  Program other = good;
  other.target = "ascend910b4";
  expect_usage_error(other, b1(), "ascend910b4");
  expect_usage_error(good, detect_host_target(), "host");

  // Malformed programs are the verifier's: tests/measure/program_verify_test.cpp.
  expect_usage_error(good, with_cores(24, 0), "no AIV cores");

  try {
    simulate(good, b1(), SimOptions{.l2_line_bytes = 0});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("l2_line_bytes"), std::string::npos) << e.what();
  }
}

TEST(SimDispatch, AnEmptyProgramTakesNoTimeAndIsBoundByNothing) {
  Program empty;
  empty.target = "ascend910b1";
  const SimResult r = simulate(empty, b1());
  EXPECT_EQ(r.cycles, 0);
  EXPECT_EQ(r.bound, "none");
  EXPECT_TRUE(r.pipe_utilisation.empty());
}

}  // namespace
}  // namespace pto::sim
