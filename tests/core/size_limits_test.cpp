// Runaway sizes are usage errors that name the limit, found before anything is
// allocated: tensors past kMaxTensorBytes (or past int64) at graph construction,
// programs past kMaxTasks / kMaxInstructions before their tasks are built; and each
// compile stage is produced without building the later ones.
#include <random>
#include <string>

#include <gtest/gtest.h>

#include "core/analyze.h"
#include "core/compile.h"
#include "core/op_library.h"
#include "core/size_limits.h"
#include "core/target.h"
#include "tests/builtin_targets.h"
#include "tests/core/error_testing.h"
#include "tests/random_attrs.h"

namespace pto {
namespace {

using testing::expect_error;
using testing::npu;

Workload workload(const std::string& op, Shape shape, DType dtype = DType::F16) {
  Workload w;
  w.op = op;
  w.shape = std::move(shape);
  w.dtype = dtype;
  testing::set_example_expr(w);
  return w;
}

// The examples: an int64-overflowing element count and a 2^64-byte one.
TEST(SizeLimits, TheReportedOverflowsAreUsageErrorsNamingTheLimit) {
  expect_error([] { build_graph(workload("add", {9223372036854775807, 2})); }, ErrorCategory::Usage,
               {"more bytes than a 64-bit count holds", "1 TiB"});
  expect_error([] { build_graph(workload("add", {4294967296, 4294967296})); }, ErrorCategory::Usage,
               {"over the limit of 1099511627776 bytes (1 TiB) per tensor"});
  expect_error([] { build_graph(workload("matmul", {2147483648, 2147483648, 2})); }, ErrorCategory::Usage,
               {"1 TiB"});
}

// Every op, random shapes from tiny to absurd: the graph builds with every tensor
// within the limit, or it is a usage error; never a wrapped count.
TEST(SizeLimits, EveryOpAtRandomHugeShapesBuildsWithinTheLimitOrIsAUsageError) {
  std::mt19937_64 rng(11);
  int rejected = 0, built = 0;
  for (const OpDef& op : op_library()) {
    for (int trial = 0; trial < 60; ++trial) {
      Workload w = workload(op.name, {}, op.dtypes.front());
      for (size_t d = 0; d < op.dims.size(); ++d) {
        const int bits = std::uniform_int_distribution<int>(0, 62)(rng);
        w.shape.push_back(std::max<int64_t>(1, static_cast<int64_t>(rng() >> (64 - bits - 1)) >> 1));
      }
      try {
        const TensorGraph g = build_graph(w);
        for (const Node& n : g.nodes()) {
          const auto elements = checked_num_elements(n.shape);
          ASSERT_TRUE(elements) << w.key();
          EXPECT_LE(*elements * dtype_size(n.dtype), kMaxTensorBytes) << w.key();
        }
        ++built;
      } catch (const Error& e) {
        EXPECT_EQ(e.category(), ErrorCategory::Usage) << w.key() << ": " << e.what();
        ++rejected;
      }
    }
  }
  EXPECT_GT(rejected, 0);
  EXPECT_GT(built, 0);
}

TEST(SizeLimits, CheckedArithmeticSaysWhenItOverflows) {
  EXPECT_EQ(checked_mul(1 << 20, 1 << 20), int64_t{1} << 40);
  EXPECT_FALSE(checked_mul(int64_t{1} << 32, int64_t{1} << 31));
  EXPECT_FALSE(checked_num_elements({9223372036854775807, 2}));
  EXPECT_EQ(checked_num_elements({3, 5, 7}), 105);
  EXPECT_EQ(checked_num_elements({}), 1);
}

// Random vec tiles over an add: past kMaxTasks it is a usage error naming the limit
// (before building), within it the program is built with analyze()'s task count.
TEST(SizeLimits, ProgramsPastTheTaskLimitAreRefusedBeforeTheyAreBuilt) {
  std::mt19937 rng(5);
  int refused = 0;
  for (int trial = 0; trial < 30; ++trial) {
    const bool huge = trial % 2 == 0;
    const int64_t rows = huge ? 8192 : std::uniform_int_distribution<int64_t>(1, 512)(rng);
    const int64_t cols = huge ? 8192 : std::uniform_int_distribution<int64_t>(16, 512)(rng);
    const Workload w = workload("add", {rows, cols});
    const TensorGraph g = build_graph(w);
    TileConfig c;
    c.vec = Shape{huge ? 1 : std::uniform_int_distribution<int64_t>(8, 64)(rng),
                  huge ? std::uniform_int_distribution<int64_t>(1, 3)(rng) * 16 : 512};
    const int64_t tasks = ceil_div(rows, std::min((*c.vec)[0], rows)) * ceil_div(cols, std::min((*c.vec)[1], cols));
    if (tasks > kMaxTasks) {
      expect_error([&] { compile(g, c, npu()); }, ErrorCategory::Usage,
                   {std::to_string(tasks) + " tasks", "over the limit of 1048576"}, c.to_string());
      ++refused;
    } else {
      try {
        const Compiled out = compile(g, c, npu());
        EXPECT_EQ(static_cast<int64_t>(out.program.tasks.size()), tasks) << c.to_string();
      } catch (const Error& e) {
        EXPECT_EQ(e.category(), ErrorCategory::Infeasible) << e.what();  // UB capacity, alignment
      }
    }
  }
  EXPECT_GT(refused, 0);
}

// `compile --emit tensor` of a 2^31-row matmul used to build gigabytes of tasks first.
TEST(SizeLimits, EachStageIsEmittedWithoutBuildingTheLaterOnes) {
  const TensorGraph big = build_graph(workload("matmul", {2147483648, 64, 64}));
  TileConfig c;
  c.cube = CubeTile{16, 16, 16, 16, 16, 16, 16};
  const Compiled tensor = compile(big, c, npu(), CompileOptions{.last = Stage::Tensor});
  EXPECT_FALSE(tensor.dump(Stage::Tensor).empty());
  EXPECT_TRUE(tensor.program.tasks.empty());
  const Compiled tile = compile(big, c, npu(), CompileOptions{.dumps = true, .last = Stage::Tile});
  EXPECT_NE(tile.dump(Stage::Tile).find("matmul"), std::string::npos);
  EXPECT_TRUE(tile.program.tasks.empty());
  expect_error([&] { compile(big, c, npu(), CompileOptions{.last = Stage::Block}); }, ErrorCategory::Usage,
               {"tasks, over the limit of 1048576", "compile --emit tile"});
  // A small workload: the full pipeline agrees with compile().
  const TensorGraph small = build_graph(workload("matmul", {64, 64, 64}));
  EXPECT_EQ(compile(small, c, npu(), CompileOptions{.last = Stage::Exec}).dump(Stage::Exec), compile(small, c, npu()).dump(Stage::Exec));
}

}  // namespace
}  // namespace pto
