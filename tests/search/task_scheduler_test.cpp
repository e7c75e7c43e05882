// The shared budget: for random gains and totals the budgets sum to the total, every
// workload gets its first share, and a larger expected gain never gets less; the
// headroom the gains come from is >= 1 and is 1 where the default is the model's best.
#include "search/task_scheduler.h"

#include <gtest/gtest.h>

#include <numeric>
#include <random>

#include "core/target.h"
#include "tests/core/error_testing.h"

namespace pto::search {
namespace {

TEST(TaskScheduler, BudgetsSumToTheTotalAndFollowTheGain) {
  std::mt19937_64 rng(11);
  for (int trial = 0; trial < 300; ++trial) {
    const size_t n = std::uniform_int_distribution<size_t>(1, 40)(rng);
    std::vector<double> gains(n);
    for (double& g : gains) g = rng() % 4 == 0 ? 0 : std::uniform_real_distribution<double>(0, 3)(rng);
    const int64_t total = std::uniform_int_distribution<int64_t>(2 * n, 60 * n)(rng);
    const int64_t initial = std::uniform_int_distribution<int64_t>(2, 10)(rng);
    const std::vector<int64_t> b = share_budget(gains, total, initial);
    ASSERT_EQ(b.size(), n);
    EXPECT_EQ(std::accumulate(b.begin(), b.end(), int64_t{0}), total);
    const int64_t first = std::max<int64_t>(2, std::min<int64_t>(initial, total / static_cast<int64_t>(n)));
    for (size_t i = 0; i < n; ++i) {
      EXPECT_GE(b[i], first);
      for (size_t j = 0; j < n; ++j) {
        if (gains[i] > gains[j]) EXPECT_GE(b[i] + 1, b[j]) << "a larger gain got less (rounding aside)";
      }
    }
  }
}

TEST(TaskScheduler, NoGainAnywhereSplitsEvenly) {
  const std::vector<int64_t> b = share_budget({0, 0, 0, 0}, 40, 4);
  for (int64_t x : b) EXPECT_EQ(x, 10);
  testing::expect_error([] { share_budget({1, 1, 1}, 5, 2); }, ErrorCategory::Usage, {"5", "3 workloads"});
}

TEST(TaskScheduler, HeadroomIsAtLeastOne) {
  const Target t = load_target("ascend910b1");
  for (const char* key : {"matmul|512,512,512|fp16", "matmul|64,4096,256|fp16", "softmax|32,1024|fp16"}) {
    const double h = predicted_headroom(Workload::parse_key(key), t, std::nullopt, 64);
    EXPECT_GE(h, 1.0) << key;
    EXPECT_TRUE(std::isfinite(h)) << key;
  }
  EXPECT_DOUBLE_EQ(expected_gain(3, 1), 0);
  EXPECT_GT(expected_gain(2, 4), expected_gain(1, 4));
}

}  // namespace
}  // namespace pto::search
