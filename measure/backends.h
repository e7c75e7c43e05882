// Inside measure/: the factory of each Runner backend, which
// make_runner (measure/runner.cpp) picks among after checking the backend fits the
// target, and the steps the backends share — the cost model's verdict, compiling a
// candidate into a status, stamping where and when a result was taken.
// Where a backend lives: a backend with a folder of its own (the CPU runtime's
// measure/cpu/, the simulator's measure/sim/) has its runner there, as
// <backend>_runner.cpp; a backend that is one file (model_runner.cpp, npu_runner.cpp)
// sits at the top of measure/ until it grows a second one. The external measurements
// (command, npu, a Python function) share measure/external_runner.cpp.
#pragma once

#include <exception>
#include <memory>
#include <optional>
#include <string>

#include "core/program.h"
#include "core/target.h"
#include "cost_model/estimate.h"
#include "cost_model/predictor.h"
#include "measure/runner.h"

namespace pto::measure {

// make_runner has checked the backend fits the target and set options.coefficients.
std::unique_ptr<Runner> make_cpu_runner(const Target& host, const RunnerOptions& options);
std::unique_ptr<Runner> make_model_runner(const Target& target, const RunnerOptions& options);
std::unique_ptr<Runner> make_sim_runner(const Target& npu, const RunnerOptions& options);
// Always throws: says what a real NPU backend needs and that this build has none; the
// npu backend measures through a command (options.measure_command) instead.
std::unique_ptr<Runner> make_npu_runner(const Target& npu, const RunnerOptions& options);
// The command and npu backends (`name`): options.measure_function when set, else
// options.measure_command run per batch (measure/command_runner.cpp).
std::unique_ptr<Runner> make_command_runner(const std::string& name, const Target& target,
                                            const RunnerOptions& options);
// A runner that hands each batch to `measurer` (measure/external_measure.h): warmup and
// repeats from options.warmup and options.min_repetitions.
std::unique_ptr<Runner> make_external_runner(const std::string& name, const Target& target,
                                             const RunnerOptions& options, ExternalMeasurer measurer);

// The predictor's verdict on one candidate, the start of its Measurement: OK with
// predicted_ns set (the predictor's time; a runner's predictor has the calibrated
// coefficients and no correction, so it is the analytical model's), or INFEASIBLE (the violated rules, or input the compiler refuses,
// e.g. a bad fusion list) / COMPILE_ERROR (the compiler failed) with the reason.
struct Prediction {
  Measurement measurement;
  std::optional<Estimate> estimate;  // when the model could score the config
};
Prediction predict(const Predictor& predictor, const TileConfig& config, const std::string& backend);

// Usage Error unless 0 < timeout_s <= a day (past it a deadline is a typo).
void check_timeout(double timeout_s);

// Marks `m` as rejected before running: INFEASIBLE for an Error of category
// Infeasible or Usage (bad input: exit code 2 in the CLI), COMPILE_ERROR for anything
// else, with the error's message.
void reject(Measurement& m, const std::exception& why);

// Compiles a candidate for `target`; on failure returns nullopt with `m` INFEASIBLE
// (the verifier's violations, a program past the size limits, a bad fusion list) or
// COMPILE_ERROR (anything else the compiler threw).
std::optional<Program> compile_candidate(const TensorGraph& graph, const TileConfig& config,
                                         const Target& target, Measurement& m);

// Host name and timestamp, stamped on every measurement a backend returns.
void stamp(Measurement& m);

}  // namespace pto::measure
