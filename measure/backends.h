// Inside measure/: the factory of each Runner backend (one backend per file), which
// make_runner (measure/runner.cpp) picks among after checking the backend fits the
// target, and the steps the backends share — the cost model's verdict, compiling a
// candidate into a status, stamping where and when a result was taken.
#pragma once

#include <exception>
#include <memory>
#include <optional>
#include <string>

#include "core/program.h"
#include "core/target.h"
#include "cost_model/estimate.h"
#include "measure/runner.h"

namespace pto::measure {

// make_runner has checked the backend fits the target and set options.coefficients.
std::unique_ptr<Runner> make_cpu_runner(const Target& host, const RunnerOptions& options);
std::unique_ptr<Runner> make_model_runner(const Target& target, const RunnerOptions& options);
std::unique_ptr<Runner> make_sim_runner(const Target& npu, const RunnerOptions& options);
// Always throws: this build has no NPU backend.
std::unique_ptr<Runner> make_npu_runner(const Target& npu, const RunnerOptions& options);

// The cost model's verdict on one candidate, the start of its Measurement: OK with
// predicted_ns set, or INFEASIBLE (the violated rules) / COMPILE_ERROR (a config the
// compiler rejects, e.g. a bad fusion list) with the reason.
struct Prediction {
  Measurement measurement;
  std::optional<Estimate> estimate;  // when the model could score the config
};
Prediction predict(const CostModel& model, const TileConfig& config, const std::string& backend);

// Marks `m` as rejected before running: INFEASIBLE for an Error of category
// Infeasible, COMPILE_ERROR for anything else, with the error's message.
void reject(Measurement& m, const std::exception& why);

// Compiles a candidate for `target`; on failure returns nullopt with `m` INFEASIBLE
// (the verifier's violations) or COMPILE_ERROR (anything else the compiler threw).
std::optional<Program> compile_candidate(const TensorGraph& graph, const TileConfig& config,
                                         const Target& target, Measurement& m);

// Host name and timestamp, stamped on every measurement a backend returns.
void stamp(Measurement& m);

}  // namespace pto::measure
