// The calibration job: every workload is checked before the first measurement (and
// before a host's probe), too few samples are refused before measuring and too few
// successes after, progress counts every measurement, and a fit on simulated samples
// is no worse than the start.
#include "calibration/calibration_job.h"

#include <gtest/gtest.h>

#include "core/error.h"
#include "core/op_library.h"
#include "tests/builtin_targets.h"
#include "tests/temp_dir.h"

namespace pto::calibration {
namespace {

using pto::testing::npu;

// The sim backend, counting what it is asked to measure and optionally failing some.
class CountingRunner : public measure::Runner {
 public:
  explicit CountingRunner(bool fail_all = false)
      : sim_(measure::make_runner("sim", npu(), options())), fail_all_(fail_all) {}
  std::string name() const override { return "sim"; }
  std::vector<measure::Measurement> measure(const Workload& w, const std::vector<TileConfig>& candidates,
                                            const measure::OnResult& on_result) override {
    measured += candidates.size();
    if (!fail_all_) return sim_->measure(w, candidates, on_result);
    std::vector<measure::Measurement> out(candidates.size());
    for (size_t i = 0; i < out.size(); ++i) {
      out[i].status = measure::Status::RUNTIME_ERROR;
      out[i].error = "injected";
      if (on_result) on_result(i, out[i]);
    }
    return out;
  }
  size_t measured = 0;

 private:
  static measure::RunnerOptions options() {
    measure::RunnerOptions o;
    o.coefficients = Coefficients::defaults(npu());  // hermetic: no saved calibration
    return o;
  }
  std::unique_ptr<measure::Runner> sim_;
  bool fail_all_;
};

Workload matmul(int64_t m, int64_t k, int64_t n) { return Workload::parse_key("matmul|" + std::to_string(m) + "," + std::to_string(k) + "," + std::to_string(n) + "|fp16"); }

TEST(CalibrationJob, FitsSimulatedSamplesNoWorseThanTheStart) {
  CountingRunner runner;
  CalibrationJobOptions options;
  options.samples = 12;
  size_t calls = 0, last_done = 0, last_planned = 0;
  options.progress = [&](size_t done, size_t planned) {
    ++calls;
    EXPECT_EQ(done, last_done + 1);
    last_done = done;
    last_planned = planned;
  };
  const CalibrationJobResult r = run_calibration({matmul(128, 64, 256), matmul(96, 160, 64)}, npu(), runner, options);
  ASSERT_EQ(r.workloads.size(), 2u);
  EXPECT_EQ(calls, runner.measured);
  EXPECT_EQ(last_planned, runner.measured);
  size_t used = 0;
  for (const WorkloadSamples& w : r.workloads) used += w.samples.size();
  EXPECT_EQ(static_cast<size_t>(r.report.samples_used), used);
  EXPECT_GT(r.report.samples_used, r.report.unknowns);
  EXPECT_LE(r.report.rms_log_error_after, r.report.rms_log_error_before);
  EXPECT_EQ(r.report.after.backend, "sim");
}

TEST(CalibrationJob, ABadWorkloadFailsBeforeAnyMeasurement) {
  CountingRunner runner;
  CalibrationJobOptions options;
  options.samples = 12;
  Workload bad = matmul(64, 64, 64);
  bad.shape = {64, 64};  // matmul takes three sizes
  EXPECT_THROW(run_calibration({matmul(128, 64, 256), bad}, npu(), runner, options), Error);
  EXPECT_EQ(runner.measured, 0u);
}

TEST(CalibrationJob, TooFewSamplesAreRefusedBeforeMeasuring) {
  CountingRunner runner;
  for (size_t samples : {size_t{1}, min_calibration_samples() - 1}) {
    CalibrationJobOptions options;
    options.samples = samples;
    try {
      run_calibration({matmul(128, 64, 256)}, npu(), runner, options);
      ADD_FAILURE() << samples << " samples must be refused";
    } catch (const Error& e) {
      EXPECT_EQ(e.category(), ErrorCategory::Usage);
      EXPECT_NE(std::string(e.what()).find(std::to_string(min_calibration_samples())), std::string::npos) << e.what();
    }
  }
  EXPECT_EQ(runner.measured, 0u);
  EXPECT_THROW(run_calibration({}, npu(), runner, {}), Error);
}

TEST(CalibrationJob, TheHostProbeRunsOnlyForAHostAndOnlyOnceTheRequestIsGood) {
  // The probe takes seconds: a request that is refused anyway must not pay for it.
  CountingRunner runner;
  size_t probed = 0;
  CalibrationJobOptions options;
  options.probe_host = true;
  options.probe_progress = [&](size_t, size_t) { ++probed; };
  const Target host = load_target("host");
  const Workload host_matmul = Workload::parse_key("matmul|64,64,64|fp32");
  Workload bad = host_matmul;
  bad.shape = {64, 64};
  options.samples = 12;
  EXPECT_THROW(run_calibration({matmul(128, 64, 256)}, npu(), runner, options), Error);  // not a host
  EXPECT_THROW(run_calibration({host_matmul, bad}, host, runner, options), Error);
  options.samples = 1;
  EXPECT_THROW(run_calibration({host_matmul}, host, runner, options), Error);
  EXPECT_EQ(probed, 0u);
  EXPECT_EQ(runner.measured, 0u);
}

TEST(CalibrationJob, TooFewSuccessfulMeasurementsAreNotAFit) {
  CountingRunner failing(/*fail_all=*/true);
  CalibrationJobOptions options;
  options.samples = 12;
  try {
    run_calibration({matmul(128, 64, 256)}, npu(), failing, options);
    ADD_FAILURE() << "no successful measurement cannot be a fit";
  } catch (const Error& e) {
    EXPECT_EQ(e.category(), ErrorCategory::Internal) << e.what();
  }
  EXPECT_GT(failing.measured, 0u);
}

}  // namespace
}  // namespace pto::calibration
