// The longest-first order of a batch (batch/tune_cost.h): the predicted cost of a tune
// grows with the workload and with its measurements, and the order puts the largest
// cost first, keeping the given order among equals.
#include "batch/tune_cost.h"

#include <gtest/gtest.h>

#include "core/workload.h"
#include "tests/builtin_targets.h"

namespace pto::batch {
namespace {

Workload matmul(int64_t m) { return Workload{"matmul", {m, 4096, 4096}, DType::F16, {}}; }

TEST(TuneCost, GrowsWithTheWorkloadAndItsMeasurements) {
  const Target& npu = pto::testing::npu();
  const double small = predicted_tune_cost(matmul(16), npu, 16);
  const double large = predicted_tune_cost(matmul(8192), npu, 16);
  EXPECT_GT(small, 0);
  EXPECT_GT(large, 10 * small) << "an 8192-row matmul must rank far above a 16-row one";
  EXPECT_DOUBLE_EQ(predicted_tune_cost(matmul(16), npu, 32), 2 * small);
  EXPECT_DOUBLE_EQ(predicted_tune_cost(matmul(16), npu, 0), small / 16 * kStrategyBudget);
}

TEST(TuneCost, LongestFirstKeepsTheOrderOfEquals) {
  EXPECT_EQ(longest_first({1, 5, 3, 5, 0}), (std::vector<size_t>{1, 3, 2, 0, 4}));
  EXPECT_TRUE(longest_first({}).empty());
}

TEST(TuneCost, AWorkloadTheModelCannotPredictGoesLast) {
  const Workload bad{"matmul", {0, 64, 64}, DType::F16, {}};
  EXPECT_EQ(predicted_tune_cost(bad, pto::testing::npu(), 16), 0);
}

}  // namespace
}  // namespace pto::batch
