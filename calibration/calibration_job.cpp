#include "calibration/calibration_job.h"

#include <memory>

#include "core/error.h"
#include "core/op_library.h"

namespace pto::calibration {

namespace {

// One workload, built and sampled, ready to measure.
struct Plan {
  Workload workload;
  std::unique_ptr<CostModel> model;  // the fit's start: the datasheet coefficients at the job's prices
  uint64_t space_size = 0;
  search::SpaceTally tally;
  std::vector<TileConfig> configs;
};

Plan plan_workload(const Workload& w, const Target& target, const CalibrationJobOptions& options) {
  const TensorGraph graph = build_graph(w);
  const search::SpaceGenerator space(graph, target, default_config(w, graph, target));
  Plan plan{w, std::make_unique<CostModel>(graph, target), space.size(), {}, {}};
  plan.configs = space.sample(options.samples, options.seed, &plan.tally);
  return plan;
}

WorkloadSamples measure_plan(const Plan& plan, measure::Runner& runner, size_t& done, size_t planned,
                             const CalibrationJobOptions& options) {
  WorkloadSamples out{plan.workload, plan.space_size, plan.tally, {}, {}};
  const auto results = runner.measure(plan.workload, plan.configs, [&](size_t, const measure::Measurement&) {
    if (options.progress) options.progress(++done, planned);
    return true;
  });
  for (size_t i = 0; i < plan.configs.size(); ++i) {
    const measure::Measurement& m = results.at(i);
    if (m.ok() && m.stats.median_ns > 0) {
      out.samples.push_back({plan.configs[i], m.stats.median_ns});
    } else {
      out.skipped.push_back({plan.configs[i], m});
    }
  }
  return out;
}

}  // namespace

size_t min_calibration_samples() { return kNumCoefs + 1; }

CalibrationJobResult run_calibration(const std::vector<Workload>& workloads, const Target& target,
                                     measure::Runner& runner, const CalibrationJobOptions& options) {
  if (workloads.empty()) usage_error("calibrate: no workload given");
  const size_t asked = options.samples * workloads.size();
  if (asked < min_calibration_samples()) {
    usage_error("calibrate: " + std::to_string(asked) + " samples cannot determine the cost model's " +
                std::to_string(kNumCoefs) + " coefficients; ask for at least " +
                std::to_string(min_calibration_samples()) + " in all (--samples per workload)");
  }
  if (options.probe_host && target.kind != TargetKind::Cpu)
    usage_error("calibrate: only a host's prices can be probed, and " + target.name + " is not a host");
  std::vector<Plan> plans;
  size_t planned = 0;
  for (const Workload& w : workloads) {
    plans.push_back(plan_workload(w, target, options));
    planned += plans.back().configs.size();
  }

  CalibrationJobResult result;
  std::optional<HostPrices> prices = options.host_prices;
  if (options.probe_host) {
    HostProbeOptions probe;
    probe.progress = options.probe_progress;
    result.probe = calibration::probe_host(target, probe);
    prices = result.probe->prices;
  }
  for (Plan& plan : plans) {
    Coefficients start = plan.model->coefficients();
    start.host_prices = prices;
    plan.model->set_coefficients(start);
  }

  size_t done = 0;
  for (const Plan& plan : plans) result.workloads.push_back(measure_plan(plan, runner, done, planned, options));

  std::vector<SampleSet> sets;
  for (size_t i = 0; i < plans.size(); ++i) sets.push_back({plans[i].model.get(), result.workloads[i].samples});
  size_t measured = 0;
  for (const WorkloadSamples& w : result.workloads) measured += w.samples.size();
  if (measured == 0) fail(ErrorCategory::Internal, "calibrate: no candidate was measured successfully");
  CalibrationOptions fit;
  fit.backend = runner.name();
  result.report = calibrate(sets, fit);
  if (result.report.samples_used <= result.report.unknowns) {
    fail(ErrorCategory::Internal,
         "calibrate: " + std::to_string(result.report.samples_used) + " usable samples cannot determine the " +
             std::to_string(result.report.unknowns) + " coefficients they depend on; nothing was saved (measure more: --samples)");
  }
  return result;
}

}  // namespace pto::calibration
