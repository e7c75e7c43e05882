// ModelPickProvider alone: a feasible pick the model ranks no slower than any config of
// its sample nor the op's default, the same pick every time, nothing where the model
// cannot describe the target, and the same answers from many threads at once; with a
// calibration, the pick the calibrated model ranks best (another pick than the
// datasheet's where the calibration says so); with a stored correction, a pick that
// follows what the measurements behind it said.
#include <algorithm>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "core/analyze.h"
#include "core/op_library.h"
#include "cost_model/estimate.h"
#include "search/model_pick.h"
#include "search/space_generator.h"
#include "tests/builtin_targets.h"
#include "tests/cost_model/predictor_sources.h"
#include "tests/temp_dir.h"

namespace pto::search {
namespace {

using testing::npu;
using testing::uncalibrated;

const std::vector<Workload> kAsks = {Workload::parse_key("matmul|384,768,256|fp16"),
                                     Workload::parse_key("matmul|77,4096,11008|fp16"),
                                     Workload::parse_key("softmax|100,300|fp16"),
                                     Workload::parse_key("layernorm|48,1000|fp32")};

TEST(ModelPick, IsAFeasibleConfigTheModelRanksAtLeastAsFastAsItsSampleAndTheDefault) {
  ModelPickProvider pick(uncalibrated());
  for (const Workload& w : kAsks) {
    const std::optional<ConfigChoice> c = pick.lookup(w, npu());
    ASSERT_TRUE(c) << w.key();
    EXPECT_EQ(c->source, ConfigSource::Model);
    EXPECT_EQ(c->describe(), "model");
    const TensorGraph graph = build_graph(w);
    EXPECT_TRUE(analyze(graph, c->config, npu()).feasible) << w.key();
    const CostModel model(graph, npu());
    const double picked = model.predict_ns(c->config);
    EXPECT_LE(picked, model.predict_ns(default_config(w, graph, npu()))) << w.key();
    const SpaceGenerator space = SpaceGenerator::for_workload(w, npu());
    for (const TileConfig& other : space.sample(ModelPickProvider::kDefaultCandidates, /*seed=*/1))
      EXPECT_LE(picked, model.predict_ns(other)) << w.key() << ": " << other.to_string();
  }
}

TEST(ModelPick, TheSamePickEveryTimeAndFromEveryProvider) {
  ModelPickProvider first, second;
  for (const Workload& w : kAsks) {
    const TileConfig c = first.lookup(w, npu())->config;
    EXPECT_EQ(first.lookup(w, npu())->config, c) << w.key();
    EXPECT_EQ(second.lookup(w, npu())->config, c) << w.key();
  }
}

// A target the model cannot describe: nothing, so that the chain's default serves.
TEST(ModelPick, NothingWhereTheModelCannotDescribeTheTarget) {
  Target broken = npu();
  broken.name = "no_l2_bandwidth";
  broken.l2_read_bpc = 0;
  EXPECT_FALSE(ModelPickProvider().lookup(kAsks.front(), broken));
}

TEST(ModelPick, ManyThreadsGetTheSameAnswersAsOne) {
  std::vector<TileConfig> expected;
  for (const Workload& w : kAsks) expected.push_back(ModelPickProvider({}, 32).lookup(w, npu())->config);
  ModelPickProvider shared({}, 32);
  std::vector<int> mismatches(4, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (size_t i = 0; i < kAsks.size(); ++i) {
        const size_t k = (i + t) % kAsks.size();
        if (shared.lookup(kAsks[k], npu())->config != expected[k]) ++mismatches[t];
      }
    });
  }
  for (std::thread& th : threads) th.join();
  for (int m : mismatches) EXPECT_EQ(m, 0);
}

// The best the model `model` ranks among what the provider ranks: its sample and the
// default.
double best_predicted(const CostModel& model, const Workload& w) {
  const SpaceGenerator space = SpaceGenerator::for_workload(w, npu());
  double best = model.predict_ns(space.baseline());
  for (const TileConfig& c : space.sample(ModelPickProvider::kDefaultCandidates, /*seed=*/1))
    best = std::min(best, model.predict_ns(c));
  return best;
}

// A calibration of sim that says the HBM is 20x slower than the datasheet's: the pick is
// the calibrated model's best, and for some workloads not the datasheet model's.
TEST(ModelPick, WithACalibrationPicksWhatTheCalibratedModelRanksBest) {
  const pto::testing::TempDir dir("model_pick_calibrated");
  Coefficients slow_hbm = Coefficients::defaults(npu());
  slow_hbm[Coef::Hbm] = 20;
  ModelPickProvider calibrated(testing::calibrated(dir.str(), npu(), "sim", slow_hbm)), datasheet(uncalibrated());
  int differ = 0;
  for (const Workload& w : kAsks) {
    const TensorGraph graph = build_graph(w);
    const CostModel model(graph, npu(), slow_hbm);
    const TileConfig pick = calibrated.lookup(w, npu())->config;
    EXPECT_EQ(model.predict_ns(pick), best_predicted(model, w)) << w.key();
    differ += pick != datasheet.lookup(w, npu())->config;
  }
  EXPECT_GT(differ, 0) << "a 20x slower HBM changed no pick";
}

// A correction stored for matmul on sim, from "measurements" that penalise large N tiles
// (times nL0 / 16) on another shape: the picks for untuned shapes have N tiles no larger
// than the picks without it, and some smaller.
TEST(ModelPick, WithAStoredCorrectionFollowsTheMeasurementsBehindIt) {
  const Workload measured = Workload::parse_key("matmul|512,512,512|fp16");
  const TensorGraph graph = build_graph(measured);
  Predictor learner{CostModel(graph, npu())};
  const std::vector<TileConfig> configs = SpaceGenerator::for_workload(measured, npu()).sample(60, /*seed=*/3);
  std::vector<double> times;
  for (const TileConfig& c : configs) times.push_back(learner.model().predict_ns(c) * c.cube->nL0 / 16.0);
  learner.update(configs, times);
  PredictorSources sources = uncalibrated();
  sources.corrections[{"matmul", npu().fingerprint(), "sim"}] = learner.save();
  ModelPickProvider corrected(sources), plain(uncalibrated());
  int smaller = 0;
  for (const char* key : {"matmul|384,768,256|fp16", "matmul|1024,1024,1024|fp16", "matmul|77,4096,11008|fp16"}) {
    const Workload w = Workload::parse_key(key);
    const TileConfig with = corrected.lookup(w, npu())->config, without = plain.lookup(w, npu())->config;
    EXPECT_LE(with.cube->nL0, without.cube->nL0) << key << ": " << with.to_string() << " vs " << without.to_string();
    smaller += with.cube->nL0 < without.cube->nL0;
  }
  EXPECT_GT(smaller, 0) << "the correction changed no pick";
}

}  // namespace
}  // namespace pto::search
