// Calibration: recovers known coefficients from synthetic measurements made with them,
// improves the fit under noise, reports the error before and after, and its fitted
// coefficients, saved and loaded, predict what was measured; on a host, drift of the
// machine's speed between workloads moves neither the order within a workload nor a
// held-out workload's ranking, and the fit pulls harder toward the start.
#include "cost_model/calibrate.h"
#include "cost_model/calibration_store.h"

#include <cmath>
#include <filesystem>
#include <random>

#include <gtest/gtest.h>

#include "core/error.h"
#include "core/op_library.h"
#include "core/target.h"
#include "cost_model/ranking.h"
#include "tests/cost_model/random_configs.h"
#include "tests/temp_dir.h"

namespace pto {
namespace {

Coefficients truth_for(const Target& t) {
  Coefficients c = Coefficients::defaults(t);
  c[Coef::Hbm] = 1.3;
  c[Coef::L2] = 0.8;
  c[Coef::Cube] = 1.15;
  c[Coef::Vector] = 1.4;
  c[Coef::OnChip] = 0.9;
  c[Coef::Latency] = 1.2;
  c[Coef::Task] = 500;
  c[Coef::Instr] = 3;
  c[Coef::Launch] = 2000;
  return c;
}

std::vector<Workload> npu_workloads() {
  return {testing::matmul_workload(1024, 1024, 1024), testing::matmul_workload(96, 1536, 3072),
          testing::matmul_workload(200, 64, 120), testing::row_workload("softmax", 2048, 1024),
          testing::row_workload("layernorm", 64, 512)};
}

// Sample sets of several graphs, "measured" by the model itself.
struct Workbench {
  Target target;
  std::vector<CostModel> models;
  std::vector<std::vector<Sample>> samples;

  // Graphs that between them exercise every coefficient the NPU uses: measurements made
  // by the model itself with `truth`, times exp(noise).
  Workbench(const Coefficients& truth, double noise, uint64_t seed)
      : Workbench(load_target("ascend910b1"), npu_workloads(), truth, {}, noise, seed) {}

  // Set i is measured with `truth` times drift[i] (1 where not given): the whole machine
  // running that much slower while that workload was timed.
  Workbench(const Target& t, const std::vector<Workload>& workloads, const Coefficients& truth,
            const std::vector<double>& drift, double noise, uint64_t seed)
      : target(t) {
    std::mt19937 rng(seed);
    std::normal_distribution<double> normal(0, noise);
    models.reserve(workloads.size());
    for (size_t i = 0; i < workloads.size(); ++i) {
      const Workload& w = workloads[i];
      const TensorGraph g = build_graph(w);
      const CostModel measurer(g, target, truth);
      models.emplace_back(g, target);
      std::vector<Sample>& set = samples.emplace_back();
      const double factor = i < drift.size() ? drift[i] : 1.0;
      for (int tries = 0; set.size() < 40 && tries < 4000; ++tries) {
        const TileConfig c = w.op == "matmul" ? testing::random_cube_config(rng)
                                              : testing::random_row_config(rng, w.shape[1]);
        if (!measurer.analyze(c).feasible) continue;
        const double ns = measurer.predict_ns(c);
        if (std::isfinite(ns)) set.push_back({c, factor * ns * std::exp(normal(rng))});
      }
    }
  }

  // Whether any sample's prediction depends on coefficient `c` at all.
  bool measures(Coef c) const {
    for (size_t i = 0; i < models.size(); ++i) {
      for (const Sample& s : samples[i]) {
        const TilingSummary summary = models[i].analyze(s.config);
        if (models[i].terms(summary, s.config, models[i].coefficients()).amount(c) > 0) return true;
      }
    }
    return false;
  }

  std::vector<SampleSet> sets() const {
    std::vector<SampleSet> out;
    for (size_t i = 0; i < models.size(); ++i) out.push_back({&models[i], samples[i]});
    return out;
  }
};

std::vector<Coef> npu_coefficients() {
  return {Coef::Hbm, Coef::L2,   Coef::Cube,  Coef::Vector, Coef::OnChip,
          Coef::Latency, Coef::Task, Coef::Instr, Coef::Launch};
}

TEST(Calibrate, RecoversKnownCoefficientsFromSyntheticMeasurements) {
  const Target t = load_target("ascend910b1");
  const Coefficients truth = truth_for(t);
  const Workbench bench(truth, 0.0, 1);
  CalibrationOptions options;
  options.backend = "synthetic";
  options.fit = npu_coefficients();
  options.prior_weight = 1e-6;
  const CalibrationReport r = calibrate(bench.sets(), options);
  EXPECT_EQ(r.samples_used, 200);
  EXPECT_GT(r.rms_log_error_before, 0.05);
  EXPECT_LT(r.rms_log_error_after, 1e-4) << r.to_string();
  for (Coef c : npu_coefficients()) {
    if (bench.measures(c)) {
      EXPECT_NEAR(r.after[c], truth[c], 0.02 * truth[c]) << coef_name(c) << "\n" << r.to_string();
    } else {  // nothing to learn it from: it stays where it started
      EXPECT_EQ(r.after[c], r.before[c]) << coef_name(c) << "\n" << r.to_string();
    }
  }
  EXPECT_EQ(r.after.backend, "synthetic");
  EXPECT_EQ(r.after.samples, 200);
  EXPECT_EQ(r.after.fingerprint, t.fingerprint());
}

TEST(Calibrate, ImprovesTheFitUnderNoise) {
  const Target t = load_target("ascend910b1");
  const Workbench bench(truth_for(t), 0.05, 2);
  CalibrationOptions options;
  options.fit = npu_coefficients();
  const CalibrationReport r = calibrate(bench.sets(), options);
  EXPECT_LT(r.rms_log_error_after, r.rms_log_error_before);
  EXPECT_LT(r.rms_log_error_after, 0.08) << r.to_string();
  EXPECT_LE(r.max_log_error_after, r.max_log_error_before + 1e-12);
  const std::string text = r.to_string();
  EXPECT_NE(text.find("rms"), std::string::npos) << text;
  EXPECT_NE(text.find("hbm"), std::string::npos) << text;
}

TEST(Calibrate, OnlyTheChosenCoefficientsMove) {
  const Target t = load_target("ascend910b1");
  const Workbench bench(truth_for(t), 0.0, 3);
  CalibrationOptions options;
  options.fit = {Coef::Hbm};
  const CalibrationReport r = calibrate(bench.sets(), options);
  for (int j = 0; j < kNumCoefs; ++j) {
    if (coef_at(j) == Coef::Hbm) continue;
    EXPECT_EQ(r.after.value[j], r.before.value[j]) << coef_name(coef_at(j));
  }
  EXPECT_LE(r.rms_log_error_after, r.rms_log_error_before);
}

TEST(Calibrate, SavedCoefficientsPredictWhatWasMeasured) {
  const Target t = load_target("ascend910b1");
  const Workbench bench(truth_for(t), 0.0, 4);
  CalibrationOptions options;
  options.backend = "sim";
  options.fit = npu_coefficients();
  const CalibrationReport r = calibrate(bench.sets(), options);
  const testing::TempDir temp("calibrate");
  const std::string dir = temp.str();
  save_calibration(dir, t, "sim", r.after);
  const auto loaded = load_calibrated(dir, t, "sim");
  ASSERT_TRUE(loaded.has_value());
  const CostModel model(bench.models[0].graph(), t, *loaded);
  for (const Sample& s : bench.samples[0]) {
    EXPECT_NEAR(model.predict_ns(s.config), s.measured_ns, 1e-3 * s.measured_ns);
  }
}

TEST(Calibrate, SkipsInfeasibleConfigsAndNonPositiveTimes) {
  const Target t = load_target("ascend910b1");
  const CostModel model(build_graph(testing::matmul_workload(256, 256, 256)), t);
  TileConfig fine;
  fine.cube = CubeTile{64, 64, 32, 64, 64, 64, 64, false, true};
  TileConfig too_big;
  too_big.cube = CubeTile{256, 256, 64, 256, 256, 256, 256, false, true};
  const std::vector<Sample> samples = {{fine, 1e4}, {fine, 0}, {too_big, 1e4}, {fine, -5}};
  const CalibrationReport r = calibrate(model, samples);
  EXPECT_EQ(r.samples_used, 1);
  EXPECT_EQ(r.samples_skipped, 3);
}

TEST(Calibrate, ErrorsNameWhatIsWrong) {
  const Target a = load_target("ascend910b1"), b = load_target("ascend910b4");
  const TensorGraph g = build_graph(testing::matmul_workload(512, 512, 512));
  const CostModel on_a(g, a), on_b(g, b);
  TileConfig too_big;
  too_big.cube = CubeTile{256, 256, 64, 256, 256, 256, 256, false, true};
  const std::vector<Sample> none_usable = {{too_big, 100}};
  auto message = [](const std::function<void()>& f) {
    try {
      f();
    } catch (const Error& e) {
      EXPECT_EQ(e.category(), ErrorCategory::Usage);
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message([&] { calibrate(std::span<const SampleSet>{}); }).find("no sample sets"), std::string::npos);
  const std::vector<SampleSet> no_model = {{nullptr, none_usable}};
  EXPECT_NE(message([&] { calibrate(no_model); }).find("has no model"), std::string::npos);
  const std::vector<SampleSet> mixed = {{&on_a, none_usable}, {&on_b, none_usable}};
  EXPECT_NE(message([&] { calibrate(mixed); }).find("ascend910b4"), std::string::npos);
  EXPECT_NE(message([&] { calibrate(on_a, none_usable); }).find("none of the 1 samples"), std::string::npos);
  for (const double bad : {-1.0, std::nan(""), HUGE_VAL}) {
    CalibrationOptions options;
    options.prior_weight = bad;
    const std::string m = message([&] { calibrate(on_a, none_usable, options); });
    EXPECT_NE(m.find("prior weight must be a finite number >= 0, got " + std::to_string(bad)), std::string::npos) << m;
  }
}

// One-core host: matmuls of every kind and a norm, measured each at its own machine
// speed (drift), and a held-out softmax.
Target one_core_host() {
  Target t = load_target("host");
  t.aic_cores = t.aiv_cores = 1;
  return t;
}

std::vector<Workload> host_fit_workloads() {
  return {testing::matmul_workload(512, 512, 512, DType::F32), testing::matmul_workload(64, 1024, 1024, DType::F32),
          testing::matmul_workload(1024, 64, 1024, DType::F32), testing::row_workload("layernorm", 2048, 1024)};
}

double tau_of(const CostModel& model, const std::vector<Sample>& samples) {
  std::vector<double> predicted, measured;
  for (const Sample& s : samples) {
    predicted.push_back(model.predict_ns(s.config));
    measured.push_back(s.measured_ns);
  }
  return kendall_tau(predicted, measured);
}

TEST(Calibrate, HostFitIgnoresDriftBetweenWorkloads) {
  // Every set is the model's own prediction times a per-set machine speed: with each
  // set's level its own there is nothing to fit and the order within every set stays
  // what it was; one shared level cannot explain the drift.
  const Target t = one_core_host();
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> speed(0.5, 2.0);
  const std::vector<double> drift = {speed(rng), speed(rng), speed(rng), speed(rng)};
  const Workbench bench(t, host_fit_workloads(), Coefficients::defaults(t), drift, 0.0, 5);
  CalibrationOptions light;  // noiseless: with a light pull the fit is exact
  light.prior_weight = kSimPriorWeight;
  const CalibrationReport own = calibrate(bench.sets(), light);
  EXPECT_TRUE(own.per_set_level);
  EXPECT_LT(own.rms_log_error_after, 1e-3) << own.to_string();
  for (size_t i = 0; i < bench.models.size(); ++i) {
    const CostModel fitted(bench.models[i].graph(), t, own.after);
    // Within 0.01: a fit stops within its tolerance, which may break a tie either way.
    EXPECT_NEAR(tau_of(fitted, bench.samples[i]), tau_of(bench.models[i], bench.samples[i]), 0.01) << i;
  }
  CalibrationOptions shared = light;
  shared.per_set_level = false;
  const CalibrationReport one_level = calibrate(bench.sets(), shared);
  EXPECT_FALSE(one_level.per_set_level);
  EXPECT_GT(one_level.rms_log_error_after, 10 * own.rms_log_error_after) << one_level.to_string();
}

TEST(Calibrate, AHostFitPullsHarderTowardTheStartThanASimulatorFit) {
  // Noisy host samples of a machine whose Cube runs 1.5x the defaults: the host's
  // default pull keeps the fitted Cube nearer the start than the simulator's light one
  // does, and both move it toward the truth. An explicit weight overrides either.
  const Target t = one_core_host();
  Coefficients truth = Coefficients::defaults(t);
  truth[Coef::Cube] = 1.5;
  const Workbench bench(t, host_fit_workloads(), truth, {}, 0.1, 21);
  const CalibrationReport host = calibrate(bench.sets());
  EXPECT_EQ(host.prior_weight, kHostPriorWeight);
  CalibrationOptions light;
  light.prior_weight = kSimPriorWeight;
  const CalibrationReport sim_like = calibrate(bench.sets(), light);
  EXPECT_EQ(sim_like.prior_weight, kSimPriorWeight);
  const double start = host.before[Coef::Cube];
  EXPECT_GT(host.after[Coef::Cube], start) << host.to_string();
  EXPECT_GT(sim_like.after[Coef::Cube], host.after[Coef::Cube]) << host.to_string() << sim_like.to_string();
  EXPECT_NE(host.to_string().find("prior weight 1"), std::string::npos) << host.to_string();

  const Target npu = load_target("ascend910b1");
  const Workbench on_npu(truth_for(npu), 0.0, 5);
  EXPECT_EQ(calibrate(on_npu.sets()).prior_weight, kSimPriorWeight);
}

TEST(Calibrate, HostFitOnOtherWorkloadsNeverWorsensAHeldOutOne) {
  // The truth differs from the defaults in the Cube rate (matmul only) and, for every
  // fitted set, in the machine's speed while it was timed. A held-out softmax, which
  // does no Cube work, must rank its configs as well after the fit as before it: the
  // drift must not leak into the coefficients it shares with the matmuls. (With one
  // shared level the fit explains the drift with those and the softmax's tau drops.)
  const Target t = one_core_host();
  Coefficients truth = Coefficients::defaults(t);
  truth[Coef::Cube] = 1.5;
  const Workload held_out_workload = testing::row_workload("softmax", 2048, 1024);
  for (uint64_t seed : {11, 12, 13, 14}) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<double> speed(0.5, 2.0);
    const Workbench fitted_on(t, host_fit_workloads(), truth, {speed(rng), speed(rng), speed(rng), speed(rng)},
                              0.0, seed);
    CalibrationOptions light;  // noiseless: with a light pull the fit is near exact
    light.prior_weight = kSimPriorWeight;
    const CalibrationReport r = calibrate(fitted_on.sets(), light);
    EXPECT_LT(r.rms_log_error_after, 1e-2) << r.to_string();
    const Workbench held_out(t, {held_out_workload}, truth, {}, 0.0, seed);
    const CostModel& before = held_out.models.back();
    const CostModel after(before.graph(), t, r.after);
    EXPECT_GE(tau_of(after, held_out.samples.back()), tau_of(before, held_out.samples.back()) - 1e-9)
        << "seed " << seed << "\n" << r.to_string();
  }
}

}  // namespace
}  // namespace pto
