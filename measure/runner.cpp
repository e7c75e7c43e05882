#include "measure/runner.h"

#include <unistd.h>

#include <algorithm>
#include <ctime>

#include "core/compile.h"
#include "core/error.h"
#include "cost_model/calibration_store.h"
#include "measure/backends.h"

namespace pto::measure {

RunnerOptions search_options(RunnerOptions finalists) {
  finalists.min_time_ms = 1;
  finalists.min_repetitions = 2;
  return finalists;
}

TuningRunners make_tuning_runners(const std::string& backend, const Target& target, const RunnerOptions& options) {
  return {make_runner(backend, target, search_options(options)), make_runner(backend, target, options)};
}

std::vector<std::string> backend_names() { return {"sim", "cpu", "model", "npu", "command"}; }

std::vector<std::string> measuring_backends(const Target& target) {
  return {target.kind == TargetKind::Cpu ? "cpu" : "sim"};
}

std::string default_backend(const Target& target) { return measuring_backends(target).front(); }

std::string predicted_backend(const std::string& backend, const Target& target) {
  return backend == "model" ? default_backend(target) : backend;
}

void check_backend_name(const std::string& backend) {
  const std::vector<std::string> known = backend_names();
  if (std::find(known.begin(), known.end(), backend) != known.end()) return;
  std::string names;
  for (const std::string& name : known) names += (names.empty() ? "" : ", ") + name;
  usage_error("unknown backend '" + backend + "' (known: " + names + ")");
}

void check_backend(const std::string& backend, const Target& target, const RunnerOptions& options) {
  check_backend_name(backend);
  const bool measures_externally = !options.measure_command.empty() || options.measure_function;
  if (backend == "npu" && !measures_externally) make_npu_runner(target, options);  // throws, saying what it needs
  if (backend == "npu" && target.kind != TargetKind::Npu)
    usage_error("backend 'npu' measures on an Ascend NPU and needs an NPU target, got '" + target.name +
                "'; to measure another device with your own command use backend 'command'");
  if (backend == "command" && !measures_externally)
    usage_error("backend 'command' runs your measurement command for each batch of candidates: give it "
                "with --measure-cmd 'CMD' (see docs/measure_protocol.md)");
  if (backend != "command" && backend != "npu" && measures_externally)
    usage_error("a measure command is for backend 'command' or 'npu', not '" + backend + "'");
  if (backend == "cpu" && target.kind != TargetKind::Cpu)
    usage_error("backend 'cpu' times real runs on this machine and needs the 'host' target, got '" +
                target.name + "'; for an NPU target use backend 'sim' or 'model'");
  if (backend == "sim" && target.kind != TargetKind::Npu)
    usage_error("backend 'sim' simulates an Ascend NPU and needs an NPU target, got '" + target.name +
                "' (kind '" + target_kind_name(target.kind) + "'); for the host use backend 'cpu'");
}

std::unique_ptr<Runner> make_runner(const std::string& backend, const Target& target,
                                    const RunnerOptions& given) {
  check_backend(backend, target, given);
  RunnerOptions options = given;
  if (!options.coefficients) options.coefficients = calibrated_coefficients(target, predicted_backend(backend, target));
  if (backend == "cpu") return make_cpu_runner(target, options);
  if (backend == "sim") return make_sim_runner(target, options);
  if (backend == "command" || backend == "npu") return make_command_runner(backend, target, options);
  return make_model_runner(target, options);
}

void check_timeout(double timeout_s) {
  constexpr double kMaxTimeoutS = 24 * 3600;  // a day; past it a deadline is a typo
  if (!(timeout_s > 0 && timeout_s <= kMaxTimeoutS))
    usage_error("the per-candidate timeout must be > 0 s and at most a day (86400 s), got " +
                std::to_string(timeout_s));
}

void reject(Measurement& m, const std::exception& why) {
  // A config the compiler refuses as bad input (not a valid fusion partition, a program
  // past the size limits) cannot run, as an infeasible one cannot: the input's fault,
  // not the compiler's. Anything else is a compile error.
  auto* error = dynamic_cast<const Error*>(&why);
  bool infeasible = error && exit_code(error->category()) == exit_code(ErrorCategory::Usage);
  m.status = infeasible ? Status::INFEASIBLE : Status::COMPILE_ERROR;
  m.error = why.what();
}

std::optional<Program> compile_candidate(const TensorGraph& graph, const TileConfig& config,
                                         const Target& target, Measurement& m) {
  try {
    return compile(graph, config, target).program;
  } catch (const std::exception& e) {
    reject(m, e);
  }
  return std::nullopt;
}

namespace {

std::string host_name() {
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0) return "unknown";
  return name;
}

}  // namespace

void stamp(Measurement& m) {
  static const std::string host = host_name();
  m.host = host;
  m.timestamp = static_cast<int64_t>(std::time(nullptr));
}

}  // namespace pto::measure
