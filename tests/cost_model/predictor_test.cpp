// Predictor: without rows it predicts exactly the analytical model; a saved correction
// loads back to identical predictions, through its JSON text; a correction of another
// feature layout is ignored and a malformed one named; rows fitted on one matmul shape,
// where the "measurements" penalise large N tiles that the model does not, reorder the
// candidates of another shape the way the measurements said; this workload's own rows
// outweigh a prior that says the opposite once there are a few; and the store's merge
// keeps a bounded number of rows, the session's fastest and a spread of the rest first.
#include "cost_model/predictor.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/analyze.h"
#include "core/op_library.h"
#include "tests/builtin_targets.h"
#include "tests/core/error_testing.h"
#include "tests/cost_model/random_configs.h"

namespace pto {
namespace {

using testing::npu;

// Feasible cube configs of `w` on the NPU, drawn at random, distinct.
std::vector<TileConfig> candidates(const Workload& w, size_t n, unsigned seed) {
  const TensorGraph graph = build_graph(w);
  std::mt19937 rng(seed);
  std::vector<TileConfig> out;
  for (int tries = 0; out.size() < n && tries < 100000; ++tries) {
    const TileConfig c = testing::random_cube_config(rng);
    if (analyze(graph, c, npu()).feasible && std::find(out.begin(), out.end(), c) == out.end()) out.push_back(c);
  }
  return out;
}

// What the fake hardware measures: the analytical time, times nL0 / 16. The model knows
// nothing of it: a large N tile is as good to the model as the hardware says it is bad.
double penalised_ns(const CostModel& model, const TileConfig& c) { return model.predict_ns(c) * c.cube->nL0 / 16.0; }

Predictor fitted_on(const Workload& w, const std::vector<TileConfig>& configs) {
  const TensorGraph graph = build_graph(w);
  Predictor p{CostModel(graph, npu())};
  std::vector<double> times;
  for (const TileConfig& c : configs) times.push_back(penalised_ns(p.model(), c));
  p.update(configs, times);
  return p;
}

const Workload kShapeA = testing::matmul_workload(512, 512, 512);
const Workload kShapeB = testing::matmul_workload(1024, 256, 768);

// A predictor of shape B whose prior is what `measured` candidates of shape A taught.
Predictor seeded_by_a(size_t measured) {
  Predictor p{CostModel(build_graph(kShapeB), npu())};
  p.seed(fitted_on(kShapeA, candidates(kShapeA, measured, 1)).save());
  return p;
}

TEST(Predictor, WithoutRowsPredictsExactlyTheAnalyticalModel) {
  const TensorGraph graph = build_graph(kShapeB);
  const CostModel model(graph, npu());
  const Predictor p{model.for_graph(graph)};
  const std::vector<TileConfig> configs = candidates(kShapeB, 40, 3);
  std::vector<double> batch(configs.size());
  p.score(configs, batch);
  for (size_t i = 0; i < configs.size(); ++i) {
    EXPECT_EQ(p.predict_ns(configs[i]), model.predict_ns(configs[i])) << configs[i].to_string();
    EXPECT_EQ(batch[i], model.predict_ns(configs[i]));
  }
  EXPECT_EQ(p.rows(), 0u);
  EXPECT_EQ(p.loo_error(), 0);
}

TEST(Predictor, SaveThenLoadGivesIdenticalPredictions) {
  const std::vector<TileConfig> seen = candidates(kShapeA, 30, 1);
  const Predictor prior = fitted_on(kShapeA, seen);
  const TensorGraph graph = build_graph(kShapeB);
  const std::vector<TileConfig> measured = candidates(kShapeB, 12, 2);
  const std::vector<TileConfig> unseen = candidates(kShapeB, 60, 5);
  for (const bool with_prior : {false, true}) {
    Predictor original{CostModel(graph, npu())};
    if (with_prior) original.seed(prior.save());
    std::vector<double> times;
    for (const TileConfig& c : measured) times.push_back(penalised_ns(original.model(), c));
    original.update(measured, times);
    ASSERT_EQ(original.rows(), measured.size());

    const std::string text = original.save().to_json().dump();
    const std::optional<Correction> read = Correction::from_json(nlohmann::json::parse(text));
    ASSERT_TRUE(read);
    EXPECT_EQ(*read, original.save());
    Predictor loaded{CostModel(graph, npu())};
    if (with_prior) loaded.seed(prior.save());
    loaded.load(*read);
    EXPECT_EQ(loaded.loo_error(), original.loo_error());
    for (const TileConfig& c : unseen) EXPECT_EQ(loaded.predict_ns(c), original.predict_ns(c)) << c.to_string();
    // The correction is real: it changes predictions.
    size_t changed = 0;
    for (const TileConfig& c : unseen) changed += original.predict_ns(c) != original.model().predict_ns(c);
    EXPECT_EQ(changed, unseen.size());
  }
}

TEST(Predictor, ACorrectionOfAnotherLayoutIsIgnoredAndAMalformedOneNamed) {
  nlohmann::json j = fitted_on(kShapeA, candidates(kShapeA, 5, 1)).save().to_json();
  ASSERT_TRUE(Correction::from_json(j));
  j["layout"] = kFeatureLayout + 1;  // a newer build's rows: other features in other places
  EXPECT_FALSE(Correction::from_json(j));
  j["layout"] = kFeatureLayout;
  j["rows"][2]["features"].erase(0);  // a row of another width
  testing::expect_error([&] { Correction::from_json(j); }, ErrorCategory::Usage, {"correction.rows[2].features"});
  j = fitted_on(kShapeA, candidates(kShapeA, 5, 1)).save().to_json();
  j["rows"][1]["log_residual"] = "fast";
  testing::expect_error([&] { Correction::from_json(j); }, ErrorCategory::Usage, {"correction.rows[1].log_residual"});
}

// Rows of shape A, as a prior, carry to shape B: ranked by the seeded predictor, B's
// candidates follow the penalised times far better than the model's own ranking does,
// and the best-ranked has a smaller N tile than the model's own best.
TEST(Predictor, ACorrectionFittedOnOneShapeReordersAnotherAsTheMeasurementsSaid) {
  const Predictor seeded = seeded_by_a(40);
  const std::vector<TileConfig> configs = candidates(kShapeB, 80, 7);
  // Pairs ordered as the penalised times order them, by each ranking.
  size_t model_agrees = 0, seeded_agrees = 0, pairs = 0;
  for (size_t i = 0; i < configs.size(); ++i) {
    for (size_t j = i + 1; j < configs.size(); ++j) {
      const bool truth = penalised_ns(seeded.model(), configs[i]) < penalised_ns(seeded.model(), configs[j]);
      model_agrees += (seeded.model().predict_ns(configs[i]) < seeded.model().predict_ns(configs[j])) == truth;
      seeded_agrees += (seeded.predict_ns(configs[i]) < seeded.predict_ns(configs[j])) == truth;
      ++pairs;
    }
  }
  EXPECT_GT(seeded_agrees, model_agrees + pairs / 10) << model_agrees << " and " << seeded_agrees << " of " << pairs;
  const auto best = [&](auto&& time) {
    return *std::min_element(configs.begin(), configs.end(),
                             [&](const TileConfig& x, const TileConfig& y) { return time(x) < time(y); });
  };
  const TileConfig model_best = best([&](const TileConfig& c) { return seeded.model().predict_ns(c); });
  const TileConfig seeded_best = best([&](const TileConfig& c) { return seeded.predict_ns(c); });
  EXPECT_LT(seeded_best.cube->nL0, model_best.cube->nL0) << seeded_best.to_string() << " vs " << model_best.to_string();
}

// A prior that says large N tiles are bad, and this workload's own measurements that
// say they are good: with a dozen of its own, the predictor follows its own.
TEST(Predictor, ThisWorkloadsOwnRowsOutweighThePrior) {
  Predictor p = seeded_by_a(100);
  const std::vector<TileConfig> own = candidates(kShapeB, 12, 11);
  std::vector<double> times;  // here large N tiles are fast: the opposite of the prior
  for (const TileConfig& c : own) times.push_back(p.model().predict_ns(c) * 16.0 / c.cube->nL0);
  p.update(own, times);
  TileConfig small_n = own.front(), large_n = own.front();
  for (const TileConfig& c : candidates(kShapeB, 80, 13)) {
    if (c.cube->nL0 == 16) small_n = c;
    if (c.cube->nL0 == 128) large_n = c;
  }
  ASSERT_EQ(small_n.cube->nL0, 16);
  ASSERT_EQ(large_n.cube->nL0, 128);
  const double log_ratio = [&](const Predictor& q) {
    return std::log(q.predict_ns(large_n) / q.predict_ns(small_n)) -
           std::log(q.model().predict_ns(large_n) / q.model().predict_ns(small_n));
  }(p);
  EXPECT_LT(log_ratio, 0) << "the prior's penalty on large N tiles still wins";
}

// A session of 50 rows measured 50, 49, .., 1 (log time) joins 120 stored ones: its
// fastest 16, then 16 spread over the other 34 down to its slowest, then the stored
// rows up to 128.
TEST(Predictor, TheStoreKeepsTheSessionsFastestAndSpreadRowsFirstAndABoundedTotal) {
  Correction stored;
  for (int i = 0; i < 120; ++i) stored.rows.push_back({std::vector<double>(kFeatureCount, 100.0), 0.5});
  Correction session;
  for (int i = 0; i < 50; ++i) session.rows.push_back({std::vector<double>(kFeatureCount, double(50 - i)), 0});
  const Correction kept = merge_corrections(stored, session);
  ASSERT_EQ(kept.rows.size(), kCorrectionMaxRows);
  for (size_t i = 0; i < kCorrectionSessionRows / 2; ++i) EXPECT_EQ(kept.rows[i].log_measured(), double(i + 1));
  for (size_t i = kCorrectionSessionRows / 2 + 1; i < kCorrectionSessionRows; ++i)
    EXPECT_GT(kept.rows[i].log_measured(), kept.rows[i - 1].log_measured() + 1) << "not spread at " << i;
  EXPECT_EQ(kept.rows[kCorrectionSessionRows - 1].log_measured(), 50) << "the slowest gives the widest contrast";
  EXPECT_EQ(kept.rows[kCorrectionSessionRows], stored.rows.front());
  Correction other_layout = stored;
  other_layout.layout = kFeatureLayout + 1;
  EXPECT_EQ(merge_corrections(other_layout, session).rows.size(), kCorrectionSessionRows);
  EXPECT_EQ(merge_corrections(std::nullopt, session).rows.size(), kCorrectionSessionRows);
  session.rows.resize(5);
  EXPECT_EQ(merge_corrections(std::nullopt, session).rows.size(), 5u) << "a short session is kept whole";
}

TEST(Predictor, UpdateReplacesARemeasuredConfigAndDropsAFailedOne) {
  const std::vector<TileConfig> configs = candidates(kShapeA, 6, 1);
  Predictor p = fitted_on(kShapeA, configs);
  ASSERT_EQ(p.rows(), 6u);
  const double again[] = {p.model().predict_ns(configs[0]) * 2};
  p.update(std::span(configs).first(1), again);
  EXPECT_EQ(p.rows(), 6u);
  EXPECT_NEAR(p.save().rows.front().log_residual, std::log(2.0), 1e-12);
  const double failed[] = {0};
  p.update(std::span(configs).subspan(1, 1), failed);
  EXPECT_EQ(p.rows(), 5u);
}

}  // namespace
}  // namespace pto
