// `pto-tune run --trace FILE`: the simulated timeline, written as Chrome Trace Event
// JSON, labelled simulated; a usage error (exit 2, no file) off the sim backend.
#include <gtest/gtest.h>

#include <fstream>

#include <nlohmann/json.hpp>

#include "tests/cli/cli_driver.h"
#include "tests/temp_dir.h"

namespace pto::cli {
namespace {

using testing::pto_tune;

nlohmann::json read_json(const std::filesystem::path& p) { return nlohmann::json::parse(std::ifstream(p)); }

int64_t slices(const nlohmann::json& trace) {
  int64_t n = 0;
  for (const nlohmann::json& e : trace["traceEvents"]) n += e["ph"] == "X";
  return n;
}

// The cap itself is tested on the simulator (tests/measure/sim_trace_test.cpp): a
// program past the default cap takes a minute to trace in full.
TEST(RunTrace, WritesTheSimulatedTimelineOfEveryInstruction) {
  const pto::testing::TempDir dir("run_trace");
  const auto file = dir.path() / "t.json";
  const testing::Result r = pto_tune("run --op matmul --shapes 512,300,700 --target ascend910b1 --json --trace " +
                                         testing::quoted(file.string()));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json trace = read_json(file);
  EXPECT_FALSE(trace["metadata"]["capped"].get<bool>());
  EXPECT_EQ(trace["metadata"]["label"], "simulated");
  // Every executed instruction that took time has its slice (a transfer hidden wholly
  // behind the one before it has none).
  const int64_t instructions = nlohmann::json::parse(r.out)["detail"]["instructions"];
  EXPECT_GT(slices(trace), instructions / 2);
  EXPECT_LE(slices(trace), instructions);
  EXPECT_NE(r.err.find("perfetto"), std::string::npos) << r.err;
}

TEST(RunTrace, OffTheSimBackendIsAUsageErrorAndWritesNothing) {
  const pto::testing::TempDir dir("run_trace_bad");
  const auto file = dir.path() / "t.json";
  testing::expect_usage_error("run --op matmul --shapes 256,256,256 --target ascend910b1 --backend model --trace " +
                                      testing::quoted(file.string()),
                                  {"--trace", "model"});
  EXPECT_FALSE(std::filesystem::exists(file));
}

}  // namespace
}  // namespace pto::cli
