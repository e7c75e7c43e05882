// `pto-tune run --backend sim|cpu|model --target T`: the default backend follows the
// target (cpu for the host, sim for an NPU), simulated results say so in text and JSON,
// and a backend that does not fit the target, or one this build lacks, is a usage error.
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/cli/cli_driver.h"

namespace pto {
namespace {

using nlohmann::json;

using namespace cli::testing;

json run_json(const std::string& args) {
  const Result r = pto_tune("run " + args + " --json");
  EXPECT_EQ(r.exit_code, 0) << args << "\n" << r.err;
  return json::parse(r.out);
}

const std::string kNpuMatmul = "--op matmul --shapes 128,96,160 --dtype fp16 --target ascend910b1";

TEST(RunBackend, NpuTargetIsSimulatedByDefault) {
  const json j = run_json(kNpuMatmul);
  EXPECT_EQ(j["backend"], "sim");
  EXPECT_EQ(j["simulated"], true);
  EXPECT_EQ(j["status"], "OK");
  EXPECT_EQ(j["verified"], false);  // nothing was computed
  EXPECT_GT(j["time_ns"].get<double>(), 0);
  EXPECT_FALSE(j["detail"]["bound"].get<std::string>().empty());
  EXPECT_TRUE(j["detail"]["pipe_utilisation"]["AIC"].contains("MTE2"));
}

TEST(RunBackend, SimulatedTextShowsTimeBoundAndPipesLabelled) {
  const Result r = pto_tune("run " + kNpuMatmul);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  for (const char* part : {"sim (simulated)", "simulated (", "cycles", "bound", "pipes AIC", "MTE2 "})
    EXPECT_NE(r.out.find(part), std::string::npos) << part << "\n" << r.out;
  EXPECT_EQ(r.out.find("verified"), std::string::npos) << r.out;
}

TEST(RunBackend, ModelBackendGivesThePredictionOnAnyTarget) {
  const json npu = run_json(kNpuMatmul + " --backend model");
  EXPECT_EQ(npu["backend"], "model");
  EXPECT_EQ(npu["simulated"], true);
  EXPECT_EQ(npu["predicted"], true);
  EXPECT_EQ(npu["time_ns"], npu["predicted_ns"]);
  const json host = run_json("--op add --shapes 40,72 --backend model");
  EXPECT_EQ(host["backend"], "model");
  EXPECT_EQ(host["target"], "host");
  EXPECT_GT(host["time_ns"].get<double>(), 0);
}

TEST(RunBackend, HostIsMeasuredAndVerifiedByDefault) {
  const json j = run_json("--op add --shapes 40,72 --repeats 2");
  EXPECT_EQ(j["backend"], "cpu");
  EXPECT_EQ(j["simulated"], false);
  EXPECT_EQ(j["verified"], true);
  EXPECT_GT(j["time_ns"].get<double>(), 0);
}

TEST(RunBackend, InfeasibleOnTheNpuExitsTwoWithTheRule) {
  // 256 x 256 fp32 accumulators are 256 KiB, twice the 910B's L0C.
  const Result r = pto_tune("run --op matmul --shapes 512,128,512 --dtype fp16 --target ascend910b1 --json "
                            R"(--config '{"cube":{"m":[256,256],"k":[64,128],"n":[256,256]}}')");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("\"INFEASIBLE\""), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("L0C capacity"), std::string::npos) << r.out;
}

TEST(RunBackend, BackendsThatDoNotFitAreUsageErrors) {
  expect_usage_error("run --op add --shapes 8,8 --backend gpu", {"'gpu'", "sim, cpu, model, npu"});
  expect_usage_error("run " + kNpuMatmul + " --backend cpu", {"'host'", "ascend910b1"});
  expect_usage_error("run --op add --shapes 8,8 --backend sim", {"NPU target"});
  expect_usage_error("run " + kNpuMatmul + " --backend npu", {"CANN", "ASCEND_HOME_PATH", "no NPU backend"});
}

}  // namespace
}  // namespace pto
