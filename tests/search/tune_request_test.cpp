// The one tuning-job API (search/tune_request.h): every bad field refused, by a message
// naming the field as the caller spells it and the bad value, before anything is made;
// the backend default picked and the options carried over; the calibrated coefficients
// of (target, predicted backend) used, by the search and the runners alike, when
// `pto-tune calibrate` saved some. Hermetic: PTO_TUNE_HOME is a temporary folder.
#include "search/tune_request.h"

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <limits>

#include <gtest/gtest.h>

#include "core/op_library.h"
#include "cost_model/calibration_store.h"
#include "tests/builtin_targets.h"
#include "tests/core/error_testing.h"
#include "tests/temp_dir.h"

namespace pto::search {
namespace {

using pto::testing::host;
using pto::testing::npu;
using pto::testing::TempDir;

class TuneRequestTest : public ::testing::Test {
 protected:
  TuneRequestTest() : home_("tune_request_home") { ::setenv("PTO_TUNE_HOME", home_.str().c_str(), 1); }
  ~TuneRequestTest() override { ::unsetenv("PTO_TUNE_HOME"); }

  static TuneRequest matmul_on(const Target& target) {
    return TuneRequest(Workload::parse_key("matmul|256,512,384|fp16"), target);
  }
  std::string calibration_dir() const { return home_.str() + "/calibration"; }
  bool home_empty() const { return std::filesystem::is_empty(home_.path()); }

  TempDir home_;
};

TEST_F(TuneRequestTest, EachBadFieldIsRefusedNamingItBeforeAnythingIsMade) {
  struct Case {
    std::function<void(TuneRequest&)> set;
    std::vector<std::string_view> message;
  };
  const std::vector<Case> cases = {
      {[](TuneRequest& r) { r.strategy = "annealing"; }, {"strategy 'annealing'", "known: auto"}},
      {[](TuneRequest& r) { r.budget = -1; }, {"budget -1"}},
      {[](TuneRequest& r) { r.budget = 1; }, {"budget 1", "at least 2"}},
      {[](TuneRequest& r) { r.time_limit_s = -2; }, {"time limit -2"}},
      {[](TuneRequest& r) { r.time_limit_s = std::nan(""); }, {"time limit nan"}},
      {[](TuneRequest& r) { r.time_limit_s = std::numeric_limits<double>::infinity(); }, {"time limit inf"}},
      {[](TuneRequest& r) { r.workload = Workload::parse_key("matmul|64,64|fp16"); }, {"matmul"}},
      {[](TuneRequest& r) { r.backend = "gpu"; }, {"gpu"}},
      {[](TuneRequest& r) { r.backend = "cpu"; }, {"cpu", "ascend910b1"}},
      {[](TuneRequest& r) { r.backend = "command"; }, {"command", "--measure-cmd"}},
      {[](TuneRequest& r) { r.runner.measure_command = "true"; }, {"measure command", "sim"}},
  };
  for (const Case& c : cases) {
    TuneRequest request = matmul_on(npu());
    c.set(request);
    testing::expect_error([&] { resolve(request); }, ErrorCategory::Usage, c.message);
    testing::expect_error([&] { check(request); }, ErrorCategory::Usage, c.message);
  }
  EXPECT_TRUE(home_empty()) << "a refused request created nothing";
}

TEST_F(TuneRequestTest, MessagesNameTheFieldsAsTheCallerSpellsThem) {
  const FieldNames flags{.strategy = "--strategy", .budget = "--budget", .time_limit = "--time-limit"};
  TuneRequest request = matmul_on(npu());
  request.budget = -3;
  testing::expect_error([&] { resolve(request, flags); }, ErrorCategory::Usage, {"--budget -3"});
  request.budget = 0;
  request.time_limit_s = -1;
  testing::expect_error([&] { resolve(request, flags); }, ErrorCategory::Usage, {"--time-limit -1"});
  request.time_limit_s = 0;
  request.strategy = "nosuch";
  testing::expect_error([&] { resolve(request, flags); }, ErrorCategory::Usage, {"--strategy 'nosuch'"});
}

TEST_F(TuneRequestTest, BudgetZeroLetsTheStrategyDecide) {
  for (int64_t budget : {0, 2, 1000}) {
    TuneRequest request = matmul_on(npu());
    request.budget = budget;
    EXPECT_EQ(resolve(request).options.budget, budget);
  }
}

TEST_F(TuneRequestTest, TheTargetsBackendIsTheDefaultAndTheOptionsAreCarriedOver) {
  EXPECT_EQ(check(matmul_on(npu())), "sim");
  EXPECT_EQ(check(matmul_on(host())), "cpu");
  TuneRequest request = matmul_on(npu());
  request.strategy = "evolve";
  request.budget = 24;
  request.time_limit_s = 9.5;
  request.seed = 42;
  request.retune = true;
  const ResolvedTune job = resolve(request);
  EXPECT_EQ(job.backend, "sim");
  EXPECT_EQ(job.runners.search->name(), "sim");
  EXPECT_EQ(job.runners.finalists->name(), "sim");
  EXPECT_EQ(job.options.finalist_runner, job.runners.finalists.get());
  EXPECT_EQ(job.options.strategy, "evolve");
  EXPECT_EQ(job.options.budget, 24);
  EXPECT_EQ(job.options.time_limit_s, 9.5);
  EXPECT_EQ(job.options.seed, 42u);
  EXPECT_TRUE(job.options.retune);
  EXPECT_FALSE(job.calibrated);
  ASSERT_TRUE(job.options.coefficients.has_value());
  EXPECT_EQ(job.options.coefficients->value, Coefficients::defaults(npu()).value);

  request.backend = "model";
  EXPECT_EQ(resolve(request).runners.search->name(), "model");
}

TEST_F(TuneRequestTest, TheSavedCalibrationOfThePredictedBackendIsUsed) {
  Coefficients fit = Coefficients::defaults(npu());
  for (Coef c : {Coef::Hbm, Coef::L2, Coef::Cube, Coef::Vector, Coef::OnChip}) fit[c] = 1.7;
  fit.samples = 30;
  ASSERT_TRUE(save_calibration(calibration_dir(), npu(), "sim", fit).saved);
  for (const char* backend : {"sim", "model"}) {  // the model predicts the sim's times
    SCOPED_TRACE(backend);
    TuneRequest request = matmul_on(npu());
    request.backend = backend;
    const ResolvedTune job = resolve(request);
    EXPECT_TRUE(job.calibrated);
    ASSERT_TRUE(job.options.coefficients.has_value());
    EXPECT_EQ((*job.options.coefficients)[Coef::Hbm], 1.7);
  }
  // The model backend's predictions, the records' times, are the calibrated model's too.
  TuneRequest request = matmul_on(npu());
  request.backend = "model";
  const auto predicted_ns = [&] {
    const Workload& w = request.workload;
    const TileConfig config = default_config(w, build_graph(w), npu());
    return resolve(request).runners.search->measure(w, {config}).at(0).stats.median_ns;
  };
  const double calibrated_ns = predicted_ns();
  std::filesystem::remove_all(calibration_dir());
  EXPECT_GT(calibrated_ns, predicted_ns()) << "every scale 1.7: slower than the datasheet's";
}

}  // namespace
}  // namespace pto::search
