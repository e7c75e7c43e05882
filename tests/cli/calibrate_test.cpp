// `pto-tune calibrate`: on simulated measurements of a small matmul it saves a fit whose
// error is no worse than before, where `explain` then finds it — named by --out, or in
// the default folder both commands share; several workloads fit together; bad
// arguments exit 2 naming the value.
#include <cstdlib>
#include <filesystem>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/target.h"
#include "cost_model/coefficients.h"
#include "tests/cli/cli_driver.h"
#include "tests/temp_dir.h"

namespace pto {
namespace {

using nlohmann::json;
using namespace cli_testing;
namespace fs = std::filesystem;

const std::string kSmallMatmul = "calibrate --op matmul --shapes 128,64,256 --target ascend910b1 --backend sim ";

using testing_support::TempDir;

json run_json(const std::string& args) {
  const Result r = pto_tune(args);
  EXPECT_EQ(r.exit_code, 0) << args << "\n" << r.err;
  return json::parse(r.out);
}

std::string explain_provenance(const std::string& extra) {
  const json j = run_json("explain --op matmul --shapes 256,256,256 --target ascend910b1 --json " + extra);
  return j["coefficients"].get<std::string>();
}

TEST(Calibrate, SavesAFitNoWorseThanBeforeThatExplainUses) {
  const TempDir dir("pto_calibrate_out");
  const json j = run_json(kSmallMatmul + "--samples 12 --json --out " + dir.path().string());
  EXPECT_EQ(j["backend"], "sim");
  EXPECT_TRUE(j["simulated"].get<bool>());
  const int used = j["samples_used"].get<int>();
  EXPECT_GT(used, 0);
  EXPECT_LE(used, 12);
  EXPECT_LE(j["rms_log_error_after"].get<double>(), j["rms_log_error_before"].get<double>());
  EXPECT_LE(j["max_log_error_after"].get<double>(), j["max_log_error_before"].get<double>() + 1e-9);

  const std::string path = coefficients_path(dir.path().string(), "ascend910b1", "sim");
  EXPECT_EQ(j["path"], path);
  ASSERT_TRUE(fs::exists(path));
  const Coefficients saved = Coefficients::load(path);
  EXPECT_EQ(saved.samples, used);
  EXPECT_EQ(saved.fingerprint, load_target("ascend910b1").fingerprint());

  EXPECT_NE(explain_provenance("--calibration " + dir.path().string()).find("calibrated on " + std::to_string(used)),
            std::string::npos);
}

TEST(Calibrate, TextReportShowsTheErrorBeforeAndAfterAndTheCoefficients) {
  const TempDir dir("pto_calibrate_text");
  const Result r = pto_tune(kSmallMatmul + "--samples 8 --out " + dir.path().string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* part : {"simulated", "log error", "->", "hbm", "cube", "saved to"}) {
    EXPECT_NE(r.out.find(part), std::string::npos) << part << "\n" << r.out;
  }
  EXPECT_TRUE(r.err.empty()) << "no progress when stderr is not a terminal: " << r.err;
}

TEST(Calibrate, DefaultFolderIsWhereExplainLooks) {
  const TempDir home("pto_calibrate_home");
  ::setenv("PTO_TUNE_HOME", home.path().c_str(), 1);
  const json j = run_json(kSmallMatmul + "--samples 6 --json");
  const std::string provenance = explain_provenance("");
  ::unsetenv("PTO_TUNE_HOME");
  EXPECT_EQ(j["path"], coefficients_path((home.path() / "calibration").string(), "ascend910b1", "sim"));
  EXPECT_TRUE(fs::exists(j["path"].get<std::string>()));
  EXPECT_NE(provenance.find("calibrated on " + std::to_string(j["samples_used"].get<int>())), std::string::npos)
      << provenance;
}

TEST(Calibrate, SeveralWorkloadsFitTogether) {
  const TempDir dir("pto_calibrate_many");
  const json j = run_json("calibrate --op matmul --shapes 128,64,256 --shapes 96,160,64 --samples 5 --json --out " +
                          dir.path().string());
  ASSERT_EQ(j["workloads"].size(), 2u);
  EXPECT_EQ(j["workloads"][1]["workload"], "matmul|96,160,64|fp16");
  int measured = 0;
  for (const json& w : j["workloads"]) measured += w["measured"].get<int>();
  EXPECT_EQ(j["samples_used"].get<int>(), measured);
}

TEST(Calibrate, BadArgumentsExitTwoNamingTheValue) {
  expect_usage_error(kSmallMatmul + "--samples 0", {"--samples", "0"});
  const std::string small = "calibrate --op matmul --shapes 128,64,256 ";
  expect_usage_error(small + "--backend model", {"model"});
  expect_usage_error(small + "--backend nosuch", {"nosuch"});
  expect_usage_error("calibrate --op matmul --shapes 64,64,64 --backend cpu --target ascend910b1",
                     {"cpu", "ascend910b1"});
  expect_usage_error("calibrate --op matmul --shapes 64,x,64", {"x"});
  expect_usage_error("calibrate --op matmul --shapes 64,64", {"matmul"});
  expect_usage_error("calibrate --op nosuchop --shapes 1", {"nosuchop"});
  expect_usage_error("calibrate --op matmul", {"shapes"});
  expect_usage_error(small + "--target nosuchtarget", {"nosuchtarget"});
}

}  // namespace
}  // namespace pto
