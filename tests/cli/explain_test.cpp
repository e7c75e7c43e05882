// `pto-tune explain`: the cost model's verdict as a person and a machine read it —
// the JSON fields the issue names, the infeasible case with its rule and exit code 2,
// a ranking a person can check (L2 grouping helps the 6144^3 matmul), and calibrated
// coefficients picked up from --calibration.
#include <filesystem>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/target.h"
#include "cost_model/calibration_store.h"
#include "tests/cli/cli_driver.h"
#include "tests/temp_dir.h"

namespace pto {
namespace {

using nlohmann::json;
using namespace cli::testing;

const std::string kMatmul6144 =
    "explain --op matmul --shapes 6144,6144,6144 --dtype fp16 --target ascend910b1 --json ";
// The datasheet coefficients, whatever fits the user's default folder holds.
const std::string kUncalibrated = "--calibration '' ";

json explain_json(const std::string& args) {
  const Result r = pto_tune(args);
  EXPECT_TRUE(r.exit_code == 0 || r.exit_code == 2) << args << "\n" << r.err;
  return json::parse(r.out);
}

TEST(Explain, JsonHasTheFieldsAToolNeeds) {
  const json j = explain_json(kMatmul6144 + kUncalibrated);
  for (const char* field : {"feasible", "violations", "predicted_ns", "breakdown", "bound",
                            "arithmetic_intensity", "workload", "target", "config"}) {
    EXPECT_TRUE(j.contains(field)) << field;
  }
  EXPECT_TRUE(j["feasible"].get<bool>());
  EXPECT_GT(j["predicted_ns"].get<double>(), 0);
  EXPECT_GT(j["arithmetic_intensity"].get<double>(), 0);
  EXPECT_TRUE(j["violations"].empty());
}

TEST(Explain, GroupingTheCoreGridForL2IsPredictedFaster) {
  const std::string tiles = R"("cube":{"m":[128,128],"k":[64,256],"n":[256,256]},"nbuffer":2)";
  const json plain = explain_json(kMatmul6144 + kUncalibrated + "--config " + quoted("{" + tiles + "}"));
  const json grouped = explain_json(kMatmul6144 + kUncalibrated + "--config " +
                                     quoted("{" + tiles + R"(,"l2_group":[6,4]})"));
  EXPECT_LT(grouped["predicted_ns"].get<double>(), plain["predicted_ns"].get<double>());
}

TEST(Explain, InfeasibleConfigNamesTheRuleAndExitsTwo) {
  const std::string config = R"({"cube":{"m":[256,256],"k":[64,256],"n":[256,256]}})";
  const Result text = pto_tune("explain --op matmul --shapes 512,512,512 --config " + quoted(config));
  EXPECT_EQ(text.exit_code, 2);
  EXPECT_NE(text.out.find("L0C capacity"), std::string::npos) << text.out;

  const json j = explain_json("explain --op matmul --shapes 512,512,512 --json --config " + quoted(config));
  EXPECT_FALSE(j["feasible"].get<bool>());
  EXPECT_TRUE(j["predicted_ns"].is_null());
  ASSERT_FALSE(j["violations"].empty());
  EXPECT_EQ(j["violations"][0]["rule"], "L0C capacity");
}

TEST(Explain, TextFormSaysItIsAPredictionAndWhatBoundsIt) {
  const Result r = pto_tune("explain --op softmax --shapes 1024,1024 --dtype fp16 --target ascend910b1");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("predicted"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("bound"), std::string::npos) << r.out;
}

TEST(Explain, UsesCalibratedCoefficientsWhenGiven) {
  const testing::TempDir dir("explain");
  const Target target = load_target("ascend910b1");
  Coefficients slow = Coefficients::defaults(target);
  slow[Coef::Cube] *= 3;  // a Cube three times slower than the datasheet
  slow[Coef::Hbm] *= 3;
  slow[Coef::L2] *= 3;
  slow.target = target.name;
  slow.fingerprint = target.fingerprint();
  slow.backend = "sim";
  slow.samples = 12;
  save_calibration(dir.str(), target, "sim", slow);

  const json plain = explain_json(kMatmul6144 + kUncalibrated);
  const json calibrated = explain_json(kMatmul6144 + "--calibration " + dir.str());
  EXPECT_NE(calibrated["coefficients"].get<std::string>().find("calibrated on 12"), std::string::npos);
  EXPECT_GT(calibrated["predicted_ns"].get<double>(), 2 * plain["predicted_ns"].get<double>());
}

TEST(Explain, BadInputIsAUsageError) {
  expect_usage_error("explain --op matmul --shapes 64,64", {"matmul"});
  expect_usage_error("explain --op matmul --shapes 64,64,64 --config '{\"cube\":3}'", {"cube"});
  expect_usage_error("explain --op nosuchop --shapes 1", {"nosuchop"});
}

}  // namespace
}  // namespace pto
