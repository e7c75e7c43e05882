// pto_tune.tune: search::tune from Python, into a tuning database, with the GIL
// released while it measures; with measure=fn, fn measures (measure_function.cpp).
// The job is the CLI's: a search::TuneRequest resolved by search/tune_request.h, so the
// same arguments give the same rules, backend, coefficients and records as `pto-tune tune`.
#include <atomic>
#include <optional>

#include <nlohmann/json.hpp>
#include <pybind11/stl.h>

#include "arguments.h"
#include "db/tuning_db.h"
#include "fork_guard.h"
#include "measure.h"
#include "search/tune_request.h"

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

// The tuning database, each call of it inside a ForkGuard::Section: SQLite's
// process-wide mutexes (its allocator's, its file system layer's), held by this thread
// at the moment another thread forks, would stay locked in the child, whose first
// database open then hangs (1 fork in 50-100 while a tune ran in another thread). No
// call here calls back into Python, so no section waits for the GIL.
class ForkSafeStore : public search::TuningStore {
 public:
  explicit ForkSafeStore(const std::string& path) {
    const ForkGuard::Section section;
    db_ = db::TuningDb::open(path);
  }
  ~ForkSafeStore() override {
    const ForkGuard::Section section;
    db_.reset();
  }
  ForkSafeStore(const ForkSafeStore&) = delete;
  ForkSafeStore& operator=(const ForkSafeStore&) = delete;

  void remember_target(const Target& target) {
    const ForkGuard::Section section;
    db_->remember_target(target);
  }
  void commit(std::span<const search::TuningRecord> records) override {
    const ForkGuard::Section section;
    db_->commit(records);
  }
  std::vector<search::TuningRecord> records_of(const search::RecordKey& key) override {
    const ForkGuard::Section section;
    return db_->records_of(key);
  }
  std::string location() const override { return db_->location(); }
  std::optional<Correction> correction(const CorrectionKey& key) override {
    const ForkGuard::Section section;
    return db_->correction(key);
  }
  void add_correction(const CorrectionKey& key, const Correction& session) override {
    const ForkGuard::Section section;
    db_->add_correction(key, session);
  }

 private:
  std::unique_ptr<db::TuningDb> db_;
};

py::object tune(const std::string& op, const py::object& shapes, const std::string& dtype,
                const std::string& target_name, const std::optional<std::string>& backend,
                const std::string& strategy, const std::optional<int64_t>& budget,
                const std::optional<double>& time_limit_s, uint64_t seed, const py::handle& db_argument,
                const py::object& attrs, const std::optional<std::string>& expr, bool retune,
                const py::object& measure) {
  search::TuneRequest request(workload_from(op, shapes, dtype, attrs, expr), target_named(target_name));
  request.runner = runner_options(seed);
  // A measure function is the command backend's measurement, unless called npu.
  if (!measure.is_none()) request.runner.measure_function = measure_function(measure);
  request.backend = measure.is_none() ? backend : backend.value_or("command");
  request.strategy = strategy;
  request.budget = budget.value_or(0);
  request.time_limit_s = time_limit_s.value_or(0);
  request.seed = seed;
  request.retune = retune;
  const std::string db_path = db::resolve_db_path(path_from(db_argument, "db"));
  InterruptWatch watch;
  nlohmann::json result;
  {
    py::gil_scoped_release release;
    search::ResolvedTune job = search::resolve(request, {.time_limit = "time_limit"});
    job.options.stop = &watch.stop;
    job.options.progress = [&watch](int64_t, int64_t) { watch.poll(); };
    ForkSafeStore store(db_path);
    store.remember_target(request.target);  // the lookup finds the target its records were tuned for, as the CLI's do
    result = search::tune(request.workload, request.target, *job.runners.search, store, job.options).to_json();
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
