// pto_tune.tune(measure=fn): a Python function as the measurement of the command
// backend (measure/external_measure.h), the Triton / Kernel Tuner way of tuning from a
// notebook. fn(config) gets a pto_tune.Config (its tiles, its pypto_calls()) and returns
// the seconds of one run, or raises: the candidate fails with the exception's text
// (a TimeoutError is a TIMEOUT). It is called once per repeat wanted, the finalists'
// calls in rounds (A B C A B C ...), as a measure command would time them.
//
// The tuner runs with the GIL released (tune.cpp); each batch takes it back for the
// calls into Python, and lets it go between batches.
#include "measure.h"

#include <optional>

#include <pybind11/pybind11.h>

#include "config.h"
#include "core/error.h"

namespace py = pybind11;

namespace pto::python {

namespace {

// One call of fn: its seconds, or the failure it raised (with the GIL held).
struct Call {
  double seconds = 0;
  std::optional<measure::ExternalAnswer> failure;
};

measure::ExternalAnswer failed(measure::Status status, std::string message) {
  measure::ExternalAnswer answer;
  answer.status = status;
  answer.message = std::move(message);
  return answer;
}

Call call_once(py::handle fn, const py::object& config) {
  try {
    py::object result = fn(config);
    if (!py::isinstance<py::float_>(result) && !py::isinstance<py::int_>(result))
      return {0, failed(measure::Status::RUNTIME_ERROR, "measure function returned " +
                                                            py::repr(result).cast<std::string>() +
                                                            ", not a number of seconds")};
    return {result.cast<double>(), std::nullopt};
  } catch (py::error_already_set& e) {
    // Ctrl-C inside fn: this candidate fails, and the interrupt stays pending so that the
    // tuner's poll (tune.cpp) stops the job.
    if (e.matches(PyExc_KeyboardInterrupt)) PyErr_SetInterrupt();
    const auto status = e.matches(PyExc_TimeoutError) ? measure::Status::TIMEOUT : measure::Status::RUNTIME_ERROR;
    return {0, failed(status, std::string("measure function raised ") + e.what())};
  }
}

std::vector<measure::ExternalAnswer> measure_batch(py::handle fn, const measure::ExternalBatch& batch) {
  py::gil_scoped_acquire acquire;
  std::vector<py::object> configs;
  for (const measure::ExternalCandidate& c : batch.candidates)
    configs.push_back(py::cast(Config{c.config, "candidate " + c.id, false, ""}));
  std::vector<measure::ExternalAnswer> answers(batch.candidates.size());
  // Interleaved: round r times every candidate once; otherwise candidate by candidate.
  const size_t rounds = static_cast<size_t>(batch.repeats), n = configs.size();
  for (size_t step = 0; step < rounds * n; ++step) {
    const size_t i = batch.interleaved ? step % n : step / rounds;
    if (answers[i].status != measure::Status::OK) continue;  // failed already: no more calls
    Call call = call_once(fn, configs[i]);
    if (call.failure) answers[i] = std::move(*call.failure);
    else answers[i].times_s.push_back(call.seconds);
  }
  return answers;
}

}  // namespace

measure::ExternalMeasurer measure_function(py::handle fn) {
  if (!PyCallable_Check(fn.ptr()))
    usage_error("measure: expected a function taking a pto_tune.Config and returning seconds, got a " +
                py::str(py::type::handle_of(fn).attr("__name__")).cast<std::string>());
  // A function by its name; a callable object by its class's.
  const py::handle named = py::hasattr(fn, "__qualname__") ? fn : py::type::handle_of(fn);
  const std::string name = py::str(named.attr("__qualname__")).cast<std::string>();
  // A handle, not an object: the measurer is copied where the GIL is not held, and the
  // caller's argument keeps fn alive for as long as tune() runs.
  return {"python function " + name, [fn](const measure::ExternalBatch& batch) { return measure_batch(fn, batch); }};
}

}  // namespace pto::python
