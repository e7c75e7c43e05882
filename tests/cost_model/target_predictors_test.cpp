// TargetPredictors: each graph's predictor made from the target's first one predicts
// what a model built afresh with the target's default coefficients does (without a
// calibration or correction); the calibrated coefficients of the first backend that has
// some, and the op's correction, where the sources hold them; nothing for a target the
// model cannot describe.
#include <vector>

#include <gtest/gtest.h>

#include "core/op_library.h"
#include "cost_model/target_predictors.h"
#include "tests/builtin_targets.h"
#include "tests/cost_model/predictor_sources.h"
#include "tests/temp_dir.h"

namespace pto {
namespace {

using testing::calibrated;
using testing::npu;
using testing::uncalibrated;

const std::vector<TileConfig> kCubes = {TileConfig::parse(R"({"cube":{"m":[64,64],"k":[32,64],"n":[64,128]}})"),
                                        TileConfig::parse(R"({"cube":{"m":[128,128],"k":[64,256],"n":[256,256]}})")};

TEST(TargetPredictors, PredictsWhatAModelBuiltAfreshWithTheDefaultCoefficientsDoes) {
  const std::vector<TileConfig> vecs = {TileConfig::parse(R"({"vec":[8,128]})"), TileConfig::parse(R"({"vec":[4,304]})")};
  TargetPredictors predictors(uncalibrated());
  for (const char* key : {"matmul|256,256,256|fp16", "softmax|100,300|fp16", "matmul|77,4096,11008|fp16"}) {
    const Workload w = Workload::parse_key(key);
    const TensorGraph graph = build_graph(w);
    const std::optional<Predictor> kept = predictors.for_graph(graph, npu(), w.op);
    ASSERT_TRUE(kept) << key;
    const CostModel fresh(graph, npu(), Coefficients::defaults(npu()));
    for (const TileConfig& c : w.op == "matmul" ? kCubes : vecs)
      EXPECT_EQ(kept->predict_ns(c), fresh.predict_ns(c)) << key << " " << c.to_string();
  }
}

// A calibration of sim, the first backend of the sources that has one, is what the
// predictions use; npu, listed before it, has none.
TEST(TargetPredictors, TheFirstBackendsCalibrationCounts) {
  const pto::testing::TempDir dir("target_predictors_calibration");
  Coefficients fitted = Coefficients::defaults(npu());
  fitted[Coef::Cube] = 3;  // a calibration that says the Cube and HBM cost 3x the datasheet's
  fitted[Coef::Hbm] = 3;
  TargetPredictors with(calibrated(dir.str(), npu(), "sim", fitted)), plain(uncalibrated());
  const Workload w = Workload::parse_key("matmul|256,256,256|fp16");
  const TensorGraph graph = build_graph(w);
  const CostModel expected(graph, npu(), fitted);
  for (const TileConfig& c : kCubes) {
    EXPECT_EQ(with.for_graph(graph, npu(), w.op)->predict_ns(c), expected.predict_ns(c)) << c.to_string();
    EXPECT_NE(with.for_graph(graph, npu(), w.op)->predict_ns(c), plain.for_graph(graph, npu(), w.op)->predict_ns(c));
  }
}

TEST(TargetPredictors, NothingForATargetTheModelCannotDescribe) {
  Target broken = npu();
  broken.name = "no_l2_bandwidth";
  broken.l2_read_bpc = 0;
  TargetPredictors predictors(uncalibrated());
  EXPECT_FALSE(predictors.for_graph(build_graph(Workload::parse_key("softmax|100,300|fp16")), broken, "softmax"));
  EXPECT_TRUE(predictors.for_graph(build_graph(Workload::parse_key("softmax|100,300|fp16")), npu(), "softmax"));
}

}  // namespace
}  // namespace pto
