#include "search/tune_request.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "core/error.h"
#include "core/join.h"
#include "core/op_library.h"
#include "cost_model/calibration_store.h"
#include "search/strategy.h"

namespace pto::search {

namespace {

// A number as a user typed it: "-1", "0.5", "nan", "inf".
std::string shown(double value) {
  std::ostringstream out;
  out << value;
  return out.str();
}

std::string backend_of(const TuneRequest& request) {
  return request.backend.value_or(measure::default_backend(request.target));
}

// The runners' options: the request's seed for their input data, and the coefficients
// the search predicts with, so that the records' predicted_ns agree with it.
measure::RunnerOptions runner_options(const TuneRequest& request, const Coefficients& coefficients) {
  measure::RunnerOptions options = request.runner;
  options.seed = request.seed;
  if (!options.coefficients) options.coefficients = coefficients;
  return options;
}

}  // namespace

DType default_dtype(const Target& target) { return target.kind == TargetKind::Npu ? DType::F16 : DType::F32; }

void check_strategy(const std::string& strategy, const std::string& field) {
  const std::vector<std::string> names = strategy_names();
  if (std::find(names.begin(), names.end(), strategy) != names.end()) return;
  usage_error(field + " '" + strategy + "': unknown strategy (known: " + join(names) + ")");
}

void check_budget(int64_t budget, const std::string& field) {
  if (budget == 0 || budget >= 2) return;
  usage_error(field + " " + std::to_string(budget) +
              ": expected 0 (the strategy decides) or at least 2 measurements, the default config's included");
}

void check_time_limit(double seconds, const std::string& field) {
  if (seconds >= 0 && std::isfinite(seconds)) return;
  usage_error(field + " " + shown(seconds) + ": expected seconds >= 0 (0 = no limit)");
}

std::string check(const TuneRequest& request, const FieldNames& names) {
  check_strategy(request.strategy, names.strategy);
  check_budget(request.budget, names.budget);
  check_time_limit(request.time_limit_s, names.time_limit);
  build_graph(request.workload);  // a shape that does not fit the op
  const std::string backend = backend_of(request);
  measure::check_backend(backend, request.target, request.runner);
  return backend;
}

ResolvedTune resolve(const TuneRequest& request, const FieldNames& names) {
  ResolvedTune job;
  job.backend = check(request, names);
  const Coefficients coefficients =
      calibrated_coefficients(request.target, measure::predicted_backend(job.backend, request.target));
  job.calibrated = coefficients.fitted();
  job.runners = measure::make_tuning_runners(job.backend, request.target, runner_options(request, coefficients));
  job.options.strategy = request.strategy;
  job.options.budget = request.budget;
  job.options.time_limit_s = request.time_limit_s;
  job.options.seed = request.seed;
  job.options.retune = request.retune;
  job.options.finalist_runner = job.runners.finalists.get();
  job.options.coefficients = coefficients;
  return job;
}

}  // namespace pto::search
