// pto_tune.tune: search::tune from Python, into a tuning database, with the GIL
// released while it measures; with measure=fn, fn measures (measure_function.cpp).
#include <atomic>
#include <optional>

#include <nlohmann/json.hpp>
#include <pybind11/stl.h>

#include "arguments.h"
#include "core/error.h"
#include "db/tuning_db.h"
#include "measure.h"
#include "search/tuner.h"

namespace py = pybind11;

namespace pto::python {

namespace {

// Stops the tuner at the next measurement once Python has a pending signal (Ctrl-C);
// the KeyboardInterrupt is raised when tune() returns.
struct InterruptWatch {
  std::atomic<bool> stop{false};
  bool interrupted = false;

  void poll() {
    py::gil_scoped_acquire acquire;
    if (PyErr_CheckSignals() != 0) {
      interrupted = true;
      stop = true;
    }
  }
};

py::object tune(const std::string& op, const py::object& shapes, const std::string& dtype,
                const std::string& target_name, const std::optional<std::string>& backend,
                const std::string& strategy, const std::optional<int64_t>& budget,
                const std::optional<double>& time_limit_s, uint64_t seed, const py::handle& db_argument,
                const py::object& attrs, const std::optional<std::string>& expr, bool retune,
                const py::object& measure) {
  const Workload w = workload_from(op, shapes, dtype, attrs, expr);
  const Target& target = target_named(target_name);
  const std::string db_path = db::resolve_db_path(path_from(db_argument, "db"));
  measure::RunnerOptions runner = runner_options(seed);
  if (!measure.is_none()) runner.measure_function = measure_function(measure);
  // A measure function is the command backend's measurement, unless called npu.
  const std::string backend_name = measure.is_none() ? backend_or_default(backend, target) : backend.value_or("command");
  if (budget && *budget < 1) usage_error("budget: expected a positive number of measurements, got " +
                                         std::to_string(*budget));
  search::TuneOptions options;
  options.strategy = strategy;
  options.budget = budget.value_or(0);
  options.time_limit_s = time_limit_s.value_or(0);
  options.seed = seed;
  options.retune = retune;
  InterruptWatch watch;
  options.stop = &watch.stop;
  options.progress = [&watch](int64_t, int64_t) { watch.poll(); };
  nlohmann::json result;
  {
    py::gil_scoped_release release;
    const measure::TuningRunners runners =
        measure::make_tuning_runners(backend_name, target, runner);
    options.finalist_runner = runners.finalists.get();
    auto store = db::TuningDb::open(db_path);
    result = search::tune(w, target, *runners.search, *store, options).to_json();
  }
  forget_lookups(db_path);
  if (watch.interrupted) throw py::error_already_set();
  return to_python(result);
}

}  // namespace

void bind_tune(py::module_& m) {
  m.def("tune", &tune, py::arg("op"), py::arg("shapes"), py::arg("dtype") = "fp16",
        py::arg("target") = "ascend910b1", py::arg("backend") = py::none(), py::arg("strategy") = "auto",
        py::arg("budget") = py::none(), py::arg("time_limit") = py::none(), py::arg("seed") = 1,
        py::arg("db") = py::none(), py::arg("attrs") = py::none(), py::arg("expr") = py::none(),
        py::arg("retune") = false, py::arg("measure") = py::none(),
        "Tunes one workload into the database; the result as a dict (the CLI's --json).");
}

}  // namespace pto::python
