// The task scheduler against simulated searches (no tuning): for random batches every
// workload gets its warm-up share first and the total is never exceeded; a workload
// with no headroom stops getting budget while others expect a gain; a larger weight
// gets more; the same inputs give the same grants; a resumed batch counts what was
// spent and gives finished workloads nothing; caps hold without a total.
#include "batch/task_scheduler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "tests/core/error_testing.h"

namespace pto::batch {
namespace {

// A search as the scheduler sees it: every measurement closes a fixed fraction of the
// log gap between its best and its optimum; its model predicts the optimum times
// `model_bias` (1: exact; >= best: sees no headroom); it finishes after `length`
// measurements.
struct FakeSearch {
  double default_ns = 1000;
  double optimum_ns = 500;
  double rate = 0.3;
  double model_bias = 1;
  int64_t length = 1 << 30;
  int64_t measured = 0;
  double best_ns = 0;

  TaskProgress run(int64_t k) {
    const int64_t n = std::min(k, length - measured);
    for (int64_t i = 0; i < n; ++i) {
      best_ns = measured == 0 ? default_ns : std::exp(std::log(best_ns) - rate * std::log(best_ns / optimum_ns));
      ++measured;
    }
    TaskProgress p;
    p.measured = n;
    p.best_ns = best_ns;
    p.best_unmeasured_ns = optimum_ns * model_bias;
    p.finished = measured >= length;
    return p;
  }
};

// Runs the scheduler over the searches to the end; the grants it made.
std::vector<Grant> drive(TaskScheduler& scheduler, std::vector<FakeSearch>& searches) {
  std::vector<Grant> grants;
  while (const std::optional<Grant> g = scheduler.next()) {
    grants.push_back(*g);
    scheduler.report(*g, searches[g->task].run(g->measurements));
    if (grants.size() > 100000) ADD_FAILURE() << "the scheduler never ends";
    if (grants.size() > 100000) break;
  }
  return grants;
}

std::vector<FakeSearch> random_searches(size_t n, std::mt19937_64& rng) {
  std::vector<FakeSearch> s(n);
  for (FakeSearch& f : s) {
    f.default_ns = std::uniform_real_distribution<double>(100, 10000)(rng);
    f.optimum_ns = f.default_ns / std::uniform_real_distribution<double>(1, 4)(rng);
    f.rate = std::uniform_real_distribution<double>(0.05, 0.6)(rng);
    f.model_bias = std::uniform_real_distribution<double>(0.7, 1.3)(rng);
    f.length = std::uniform_int_distribution<int64_t>(1, 60)(rng);
  }
  return s;
}

TEST(TaskScheduler, EveryWorkloadGetsItsWarmupFirstAndTheTotalIsNeverExceeded) {
  std::mt19937_64 rng(11);
  for (int trial = 0; trial < 200; ++trial) {
    const size_t n = std::uniform_int_distribution<size_t>(1, 30)(rng);
    const int64_t total = std::uniform_int_distribution<int64_t>(2 * n, 40 * n)(rng);
    std::vector<FakeSearch> searches = random_searches(n, rng);
    std::vector<ScheduledTask> specs(n);
    for (ScheduledTask& t : specs) t.weight = std::uniform_real_distribution<double>(0.5, 4)(rng);
    TaskScheduler scheduler(specs, {.total_budget = total});
    const int64_t share = scheduler.round_size();
    EXPECT_EQ(share, std::clamp<int64_t>(total / (2 * static_cast<int64_t>(n)), 2, 8));
    const std::vector<Grant> grants = drive(scheduler, searches);
    ASSERT_GE(grants.size(), n);
    for (size_t i = 0; i < n; ++i) {
      EXPECT_EQ(grants[i].task, i) << "the warm-up round goes through the workloads in order";
      EXPECT_EQ(grants[i].measurements, share);
      EXPECT_GE(searches[i].measured, std::min(share, searches[i].length)) << "workload " << i;
    }
    int64_t spent = 0;
    for (size_t i = 0; i < n; ++i) spent += searches[i].measured;
    EXPECT_EQ(spent, scheduler.spent());
    EXPECT_LE(spent, total);
    for (const Grant& g : grants) EXPECT_GT(g.measurements, 0);
    // It ends only when the total is spent or every search has finished.
    const bool all_finished = std::all_of(searches.begin(), searches.end(), [](const FakeSearch& f) { return f.measured >= f.length; });
    EXPECT_TRUE(spent == total || all_finished) << "spent " << spent << " of " << total;
  }
}

TEST(TaskScheduler, AWorkloadWithNoHeadroomGetsNothingAfterItsWarmup) {
  std::mt19937_64 rng(5);
  for (int trial = 0; trial < 50; ++trial) {
    const size_t n = std::uniform_int_distribution<size_t>(2, 12)(rng);
    std::vector<FakeSearch> searches(n);
    for (FakeSearch& f : searches) f.rate = std::uniform_real_distribution<double>(0.01, 0.2)(rng);
    const size_t flat = rng() % n;
    searches[flat].optimum_ns = searches[flat].default_ns;  // the default is the optimum
    searches[flat].model_bias = std::uniform_real_distribution<double>(1, 2)(rng);  // and the model says so
    TaskScheduler scheduler(std::vector<ScheduledTask>(n), {.total_budget = static_cast<int64_t>(50 * n)});
    drive(scheduler, searches);
    EXPECT_EQ(searches[flat].measured, scheduler.round_size()) << "the flat workload got more than its warm-up";
    EXPECT_EQ(scheduler.expected_gain(flat), 0);
    EXPECT_EQ(scheduler.spent(), static_cast<int64_t>(50 * n));
  }
}

TEST(TaskScheduler, ALargerWeightGetsMore) {
  std::mt19937_64 rng(7);
  for (int trial = 0; trial < 50; ++trial) {
    // A slow search (each measurement closes 2-6% of the gap) with an exact model: the
    // heavy one's lead is never made up by a round of the light one.
    FakeSearch same;
    same.default_ns = std::uniform_real_distribution<double>(100, 10000)(rng);
    same.optimum_ns = same.default_ns / 3;
    same.rate = std::uniform_real_distribution<double>(0.02, 0.06)(rng);
    std::vector<FakeSearch> searches(2, same);
    const double heavy = std::uniform_real_distribution<double>(2, 10)(rng);
    TaskScheduler scheduler({{.weight = 1}, {.weight = heavy}}, {.total_budget = 80});
    drive(scheduler, searches);
    EXPECT_GT(searches[1].measured, searches[0].measured) << "weight " << heavy;
    // ... and an equal weight gets the same, give or take one round.
    std::vector<FakeSearch> twins(2, same);
    TaskScheduler even({{}, {}}, {.total_budget = 80});
    drive(even, twins);
    EXPECT_LE(std::abs(twins[0].measured - twins[1].measured), even.round_size());
  }
}

TEST(TaskScheduler, TheSameInputsGiveTheSameGrants) {
  std::mt19937_64 rng(3);
  for (int trial = 0; trial < 20; ++trial) {
    const size_t n = std::uniform_int_distribution<size_t>(1, 20)(rng);
    const std::vector<FakeSearch> searches = random_searches(n, rng);
    std::vector<ScheduledTask> specs(n);
    for (ScheduledTask& t : specs) t.weight = std::uniform_real_distribution<double>(0.5, 4)(rng);
    const auto run = [&] {
      std::vector<FakeSearch> s = searches;
      TaskScheduler scheduler(specs, {.total_budget = static_cast<int64_t>(20 * n)});
      std::vector<std::pair<size_t, int64_t>> out;
      for (const Grant& g : drive(scheduler, s)) out.emplace_back(g.task, g.measurements);
      return out;
    };
    EXPECT_EQ(run(), run());
  }
}

TEST(TaskScheduler, WithNoGainAnywhereTheLeastMeasuredOpenSearchGoesOn) {
  std::vector<FakeSearch> searches(3);
  for (FakeSearch& f : searches) f.optimum_ns = f.default_ns, f.length = 12;
  TaskScheduler scheduler(std::vector<ScheduledTask>(3), {.total_budget = 100});
  const std::vector<Grant> grants = drive(scheduler, searches);
  for (const FakeSearch& f : searches) EXPECT_EQ(f.measured, 12) << "every search runs to its own end";
  EXPECT_EQ(scheduler.spent(), 36) << "the rest of the budget is left when every search has finished";
  for (size_t k = 3; k < grants.size(); ++k) EXPECT_EQ(grants[k].task, (k - 3) % 3) << "round robin, least measured first";
}

TEST(TaskScheduler, AResumedBatchCountsWhatWasSpentAndSkipsFinishedWorkloads) {
  std::vector<FakeSearch> searches(4);
  searches[1].measured = 3, searches[1].best_ns = 800;  // a killed run's half-measured warm-up
  searches[2].measured = 8, searches[2].best_ns = 700;  // warmed up already
  TaskScheduler scheduler({{.spent = 10, .done = true}, {.spent = 3}, {.spent = 8}, {}}, {.total_budget = 64});
  std::vector<Grant> grants = drive(scheduler, searches);
  ASSERT_GE(grants.size(), 3u);
  EXPECT_EQ(grants[0].task, 1u);
  EXPECT_EQ(grants[0].measurements, 5) << "the warm-up's missing part";
  EXPECT_EQ(grants[1].task, 2u);
  EXPECT_EQ(grants[1].measurements, 0) << "nothing missing: a grant to report its state";
  EXPECT_EQ(grants[2].task, 3u);
  for (const Grant& g : grants) EXPECT_NE(g.task, 0u) << "a finished workload got budget";
  EXPECT_EQ(searches[0].measured, 0);
  EXPECT_EQ(scheduler.spent(), 64) << "the earlier run's spending counts against the total";
}

TEST(TaskScheduler, WithoutATotalEachWorkloadStopsAtItsCap) {
  std::vector<FakeSearch> searches(3);
  searches[2].optimum_ns = 100;  // much headroom
  TaskScheduler scheduler({{.cap = 4}, {.cap = 20}, {.cap = 30}}, {});
  drive(scheduler, searches);
  EXPECT_EQ(searches[0].measured, 4);
  EXPECT_EQ(searches[1].measured, 20);
  EXPECT_EQ(searches[2].measured, 30);
}

TEST(TaskScheduler, BadInputIsAUsageError) {
  testing::expect_error([] { TaskScheduler({{}, {}, {}}, {.total_budget = 5}); }, ErrorCategory::Usage,
                        {"5", "3 workloads"});
  testing::expect_error([] { TaskScheduler({{.weight = 0}}, {}); }, ErrorCategory::Usage, {"weight"});
  testing::expect_error([] { equal_split(5, 3); }, ErrorCategory::Usage, {"5", "3 workloads"});
}

TEST(TaskScheduler, TheEqualSplitSumsToTheTotal) {
  std::mt19937_64 rng(2);
  for (int trial = 0; trial < 200; ++trial) {
    const size_t n = std::uniform_int_distribution<size_t>(1, 50)(rng);
    const int64_t total = std::uniform_int_distribution<int64_t>(2 * n, 100 * n)(rng);
    const std::vector<int64_t> b = equal_split(total, n);
    EXPECT_EQ(std::accumulate(b.begin(), b.end(), int64_t{0}), total);
    const auto [lo, hi] = std::minmax_element(b.begin(), b.end());
    EXPECT_LE(*hi - *lo, 1);
    EXPECT_GE(*lo, 2);
  }
}

}  // namespace
}  // namespace pto::batch
