// pto_tune.run: one config measured from Python, with the GIL released meanwhile.
#include "measure.h"

#include <optional>

#include <nlohmann/json.hpp>
#include <pybind11/stl.h>

#include "arguments.h"
#include "config.h"
#include "core/error.h"
#include "measure/runner.h"

namespace py = pybind11;

namespace pto::python {

namespace {

nlohmann::json measurement_json(const Workload& w, const Target& target, const TileConfig& config,
                                const measure::Measurement& m) {
  nlohmann::json j = m.to_json();
  j["workload"] = w.key();
  j["target"] = target.name;
  j["fingerprint"] = target.fingerprint();
  j["config"] = config.to_json();
  j["time_ns"] = m.stats.median_ns;
  return j;
}

py::object run(const std::string& op, const py::object& shapes, const py::object& config, const std::string& dtype,
               const std::string& target_name, const std::optional<std::string>& backend, uint64_t seed,
               const py::object& attrs, const std::optional<std::string>& expr) {
  const Workload w = workload_from(op, shapes, dtype, attrs, expr);
  const Target& target = target_named(target_name);
  const TileConfig tiles = tiles_from(config);
  measure::Measurement m;
  {
    py::gil_scoped_release release;
    m = measure::make_runner(backend_or_default(backend, target), target, runner_options(seed))->measure(w, {tiles}).at(0);
  }
  // An infeasible config is the caller's mistake, as at the CLI (exit code 2).
  if (m.status == measure::Status::INFEASIBLE) fail(ErrorCategory::Infeasible, m.error);
  return to_python(measurement_json(w, target, tiles, m));
}

}  // namespace

measure::RunnerOptions runner_options(uint64_t seed) {
  measure::RunnerOptions options;
  options.seed = seed;
  options.child_start = measure::ChildStart::Spawn;
  return options;
}

void bind_run(py::module_& m) {
  m.def("run", &run, py::arg("op"), py::arg("shapes"), py::arg("config"), py::arg("dtype") = "fp16",
        py::arg("target") = "ascend910b1", py::arg("backend") = py::none(), py::arg("seed") = 1,
        py::arg("attrs") = py::none(), py::arg("expr") = py::none(),
        "Measures one config of one workload; the measurement as a dict (status, time_ns, simulated, ...).");
}

}  // namespace pto::python
