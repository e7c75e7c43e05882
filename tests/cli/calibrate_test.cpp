// `pto-tune calibrate`: on simulated measurements of a small matmul it saves a fit whose
// error is no worse than before, where `explain` then finds it — named by --out, or in
// the default folder both commands share; several workloads fit together; bad
// arguments (any of the --shapes, too few samples) exit 2 naming the value before
// anything is measured; a backend that cannot calibrate the target is refused with
// advice that names one that can; a target's calibration is keyed by its fingerprint
// and stays in the folder whatever the target's name; a fit on fewer samples does not
// replace one on more unless --replace; a saved file that cannot be read blocks neither
// explain, run nor tune (a warning, the datasheet figures), stops a calibration before it
// measures, and is replaced with --replace.
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/target.h"
#include "cost_model/calibration_store.h"
#include "cost_model/host_prices.h"
#include "measure/runner.h"
#include "tests/cli/cli_driver.h"
#include "tests/temp_dir.h"

namespace pto {
namespace {

using nlohmann::json;
using namespace cli::testing;
namespace fs = std::filesystem;

const std::string kSmallMatmul = "calibrate --op matmul --shapes 128,64,256 --target ascend910b1 --backend sim ";

using testing::TempDir;

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

  const std::string path = calibration_path(dir.path().string(), load_target("ascend910b1"), "sim");
  EXPECT_EQ(j["path"], path);
  ASSERT_TRUE(fs::exists(path));
  const Coefficients saved = Coefficients::load(path);
  EXPECT_EQ(saved.samples, used);
  EXPECT_EQ(saved.fingerprint, load_target("ascend910b1").fingerprint());

  EXPECT_NE(explain_provenance("--calibration " + dir.path().string()).find("calibrated on " + std::to_string(used)),
            std::string::npos);
}

TEST(Calibrate, AHostCalibrationProbesThisMachinesPricesAndSavesThemWithTheFit) {
  const TempDir dir("pto_calibrate_probe");
  const std::string host_matmul = "calibrate --op matmul --shapes 64,64,64 --target host --samples 11 --out " + dir.str();
  const json probed = run_json(host_matmul + " --json");
  EXPECT_TRUE(probed["host_prices_probed"].get<bool>());
  EXPECT_EQ(probed["host_prices"]["source"], "probed on this machine");
  EXPECT_EQ(probed["host_prices_reference"], default_host_prices(load_target("host")).to_json());
  EXPECT_GE(probed["host_probe_round_spread"].get<double>(), 0);
  const Coefficients saved = Coefficients::load(probed["path"].get<std::string>());
  ASSERT_TRUE(saved.host_prices.has_value());
  EXPECT_EQ(saved.host_prices->to_json(), probed["host_prices"]);

  // explain predicts at them, and says so.
  const json explained = run_json("explain --op matmul --shapes 64,64,64 --target host --json --calibration " + dir.str());
  EXPECT_NE(explained["coefficients"].get<std::string>().find("at prices probed on this machine"), std::string::npos)
      << explained["coefficients"];

  // --no-probe fits over the saved calibration's prices: the same figures, not the
  // reference machine's.
  const json again = run_json(host_matmul + " --json --no-probe --replace --seed 2");
  EXPECT_FALSE(again["host_prices_probed"].get<bool>());
  EXPECT_EQ(again["host_prices"], probed["host_prices"]);
  EXPECT_TRUE(again["host_prices_kept"].empty());
  EXPECT_FALSE(again.contains("host_probe_round_spread"));

  // The text report shows each price against the reference machine's, and how well
  // the probe's rounds agreed when it probed.
  const Result text = pto_tune(host_matmul + " --no-probe --replace");
  ASSERT_EQ(text.exit_code, 0) << text.err;
  for (const char* shown : {"host prices, in cycles of the", "probed on this machine", "REFERENCE MACHINE", "erf", "tmatmul_step"})
    EXPECT_NE(text.out.find(shown), std::string::npos) << shown << "\n" << text.out;
  EXPECT_EQ(text.out.find("the probe's rounds agreed"), std::string::npos) << text.out;
  const Result probing = pto_tune(host_matmul + " --replace");
  ASSERT_EQ(probing.exit_code, 0) << probing.err;
  EXPECT_NE(probing.out.find("the probe's rounds agreed within"), std::string::npos) << probing.out;

  // --no-probe --replace over a saved calibration that does not parse: a warning naming
  // the file, the reference machine's prices, and the file replaced.
  const std::string path = probed["path"].get<std::string>();
  { std::ofstream(path) << "{not json"; }
  const Result corrupt = pto_tune(host_matmul + " --no-probe --replace --json");
  ASSERT_EQ(corrupt.exit_code, 0) << corrupt.err;
  EXPECT_NE(corrupt.err.find("warning: coefficients file '" + path + "'"), std::string::npos) << corrupt.err;
  const json replaced = json::parse(corrupt.out);
  EXPECT_EQ(replaced["host_prices"], replaced["host_prices_reference"]);
  EXPECT_EQ(Coefficients::load(path).samples, replaced["samples_used"].get<int>());

  // An NPU calibration has no host prices to show.
  const json npu = run_json(kSmallMatmul + "--samples 12 --json --out " + dir.str());
  EXPECT_FALSE(npu.contains("host_prices"));
  EXPECT_FALSE(Coefficients::load(npu["path"].get<std::string>()).host_prices.has_value());
}

TEST(Calibrate, TextReportShowsTheErrorBeforeAndAfterAndTheCoefficients) {
  const TempDir dir("pto_calibrate_text");
  const Result r = pto_tune(kSmallMatmul + "--samples 11 --out " + dir.path().string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* part : {"simulated", "log error", "->", "hbm", "cube", "saved to"}) {
    EXPECT_NE(r.out.find(part), std::string::npos) << part << "\n" << r.out;
  }
  EXPECT_TRUE(r.err.empty()) << "no progress when stderr is not a terminal: " << r.err;
}

TEST(Calibrate, DefaultFolderIsWhereExplainLooks) {
  const TempDir home("pto_calibrate_home");
  ::setenv("PTO_TUNE_HOME", home.path().c_str(), 1);
  const json j = run_json(kSmallMatmul + "--samples 11 --json");
  const std::string provenance = explain_provenance("");
  ::unsetenv("PTO_TUNE_HOME");
  EXPECT_EQ(j["path"], calibration_path((home.path() / "calibration").string(), load_target("ascend910b1"), "sim"));
  EXPECT_TRUE(fs::exists(j["path"].get<std::string>()));
  EXPECT_NE(provenance.find("calibrated on " + std::to_string(j["samples_used"].get<int>())), std::string::npos)
      << provenance;
}

TEST(Calibrate, SeveralWorkloadsFitTogether) {
  const TempDir dir("pto_calibrate_many");
  const json j = run_json("calibrate --op matmul --shapes 128,64,256 --shapes 96,160,64 --samples 6 --json --out " +
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
  expect_usage_error(kSmallMatmul + "--samples 1", {"1 samples", "11"});
  expect_usage_error("calibrate --op matmul --shapes 128,64,256 --shapes 96,160,64 --samples 5", {"10 samples", "11"});
}

// Every backend calibrate cannot use for a target — the model, one the target or the
// build rules out, an unknown name — is refused before any work, and the advice names
// only backends that measure that target; the advice, followed, calibrates.
TEST(Calibrate, BackendAdviceNamesOnlyBackendsThatMeasureTheTarget) {
  const TempDir dir("pto_calibrate_advice");
  std::vector<std::string> tried = measure::backend_names();
  tried.push_back("nosuch");
  for (const std::string target : {"host", "ascend910b1"}) {
    const std::vector<std::string> usable = measure::measuring_backends(load_target(target));
    ASSERT_FALSE(usable.empty()) << target;
    for (const std::string& backend : tried) {
      if (std::find(usable.begin(), usable.end(), backend) != usable.end()) continue;
      const Result r = pto_tune("calibrate --op matmul --shapes 128,64,256 --samples 11 --target " + target +
                                " --backend " + backend + " --out " + dir.str());
      EXPECT_EQ(r.exit_code, 2) << target << " " << backend << "\n" << r.err;
      const size_t advice = r.err.find("; calibrate target '" + target + "' with ");
      ASSERT_NE(advice, std::string::npos) << r.err;
      EXPECT_NE(r.err.find("--backend " + usable.front(), advice), std::string::npos) << r.err;
      for (const std::string& other : measure::backend_names()) {
        if (std::find(usable.begin(), usable.end(), other) != usable.end()) continue;
        EXPECT_EQ(r.err.find("--backend " + other, advice), std::string::npos) << r.err;
      }
    }
  }
  EXPECT_TRUE(fs::is_empty(dir.path()));
  const std::vector<std::string> npu_advice = measure::measuring_backends(load_target("ascend910b1"));
  EXPECT_EQ(pto_tune("calibrate --op matmul --shapes 128,64,256 --samples 11 --target ascend910b1 --backend " +
                     npu_advice.front() + " --out " + dir.str())
                .exit_code,
            0);
  EXPECT_FALSE(fs::is_empty(dir.path()));
}

// A bad second workload is reported before the first is measured: nothing is written,
// and the error comes at once (the first workload alone would take its measurements).
TEST(Calibrate, EveryShapeIsCheckedBeforeAnyMeasurement) {
  const TempDir dir("pto_calibrate_validate");
  expect_usage_error("calibrate --op matmul --shapes 128,64,256 --shapes 64,64 --samples 12 --out " + dir.str(),
                     {"matmul"});
  expect_usage_error("calibrate --op matmul --shapes 128,64,256 --shapes 64,x,64 --samples 12 --out " + dir.str(),
                     {"x"});
  EXPECT_TRUE(fs::is_empty(dir.path()));
}

TEST(Calibrate, TargetFilesAreKeyedByFingerprintAndNamesStayInTheFolder) {
  const TempDir dir("pto_calibrate_keys");
  Target impostor = load_target("ascend910b1");
  impostor.hbm_gbps *= 2;  // the built-in's name, other figures
  const std::string impostor_file = dir.write("impostor.json", impostor.to_json().dump());
  Target escaping = load_target("ascend910b1");
  escaping.name = "../../escaped";
  const std::string escaping_file = dir.write("escaping.json", escaping.to_json().dump());
  const std::string out = (dir.path() / "calibration").string();

  const json builtin = run_json(kSmallMatmul + "--samples 11 --json --out " + out);
  const json other = run_json("calibrate --op matmul --shapes 128,64,256 --backend sim --samples 11 --json --target " +
                              impostor_file + " --out " + out);
  EXPECT_NE(builtin["path"], other["path"]);
  EXPECT_TRUE(fs::exists(builtin["path"].get<std::string>()));
  EXPECT_TRUE(fs::exists(other["path"].get<std::string>()));
  EXPECT_EQ(Coefficients::load(builtin["path"]).fingerprint, load_target("ascend910b1").fingerprint());

  const json escaped = run_json("calibrate --op matmul --shapes 128,64,256 --backend sim --samples 11 --json --target " +
                                escaping_file + " --out " + out);
  EXPECT_EQ(fs::path(escaped["path"].get<std::string>()).parent_path(), fs::path(out));
  EXPECT_TRUE(fs::exists(escaped["path"].get<std::string>()));
  size_t files = 0;
  for (const auto& entry : fs::recursive_directory_iterator(dir.path())) files += entry.is_regular_file();
  EXPECT_EQ(files, 5u) << "two target files and three calibrations, nothing outside";
}

TEST(Calibrate, AFitOnFewerSamplesKeepsTheSavedOneUnlessReplace) {
  const TempDir dir("pto_calibrate_keep");
  const json many = run_json(kSmallMatmul + "--samples 16 --json --out " + dir.str());
  ASSERT_TRUE(many["saved"].get<bool>());
  const Coefficients saved = Coefficients::load(many["path"]);

  const Result fewer = pto_tune(kSmallMatmul + "--samples 11 --json --seed 2 --out " + dir.str());
  ASSERT_EQ(fewer.exit_code, 0) << fewer.err;
  EXPECT_FALSE(json::parse(fewer.out)["saved"].get<bool>());
  EXPECT_NE(fewer.err.find("--replace"), std::string::npos) << fewer.err;
  EXPECT_EQ(Coefficients::load(many["path"]).value, saved.value);

  const json replaced = run_json(kSmallMatmul + "--samples 11 --json --seed 2 --replace --out " + dir.str());
  EXPECT_TRUE(replaced["saved"].get<bool>());
  EXPECT_EQ(Coefficients::load(many["path"]).samples, replaced["samples_used"].get<int>());
}

// A saved calibration that does not parse stops nothing that only predicts: explain,
// run and tune warn, naming the file, and use the datasheet figures, leaving the file
// as it is. calibrate names it before measuring and says --replace, which replaces it.
TEST(Calibrate, ACorruptSavedCalibrationBlocksNothingAndReplaceReplacesIt) {
  const TempDir home("pto_calibrate_corrupt");
  const std::string path = calibration_path((home.path() / "calibration").string(), load_target("ascend910b1"), "sim");
  fs::create_directories(home.path() / "calibration");
  { std::ofstream(path) << "{not json"; }
  ::setenv("PTO_TUNE_HOME", home.path().c_str(), 1);
  const std::string workload = " --op matmul --shapes 128,64,256 --target ascend910b1 ";
  const std::string config = R"( --config '{"cube":{"m":[64,64],"k":[32,64],"n":[64,128]}}')";
  std::vector<Result> predicting = {pto_tune("explain" + workload + "--json"), pto_tune("run" + workload + "--backend sim" + config),
                                    pto_tune("tune" + workload + "--backend sim --budget 2 --db " + quoted(home.str() + "/t.db"))};
  const Result refused = pto_tune(kSmallMatmul + "--samples 11");
  const Result replaced = pto_tune(kSmallMatmul + "--samples 11 --replace --json");
  ::unsetenv("PTO_TUNE_HOME");
  for (const Result& r : predicting) {
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.err.find("warning: coefficients file '" + path + "'"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("uncalibrated"), std::string::npos) << r.err;
  }
  EXPECT_EQ(json::parse(predicting[0].out)["coefficients"], "uncalibrated (datasheet figures)");
  EXPECT_EQ(refused.exit_code, 2) << refused.err;
  for (const std::string& part : {path, std::string("--replace")}) EXPECT_NE(refused.err.find(part), std::string::npos) << refused.err;
  EXPECT_TRUE(refused.out.empty()) << "measured before refusing: " << refused.out;
  ASSERT_EQ(replaced.exit_code, 0) << replaced.err;
  EXPECT_EQ(Coefficients::load(path).samples, json::parse(replaced.out)["samples_used"].get<int>());
}

}  // namespace
}  // namespace pto
