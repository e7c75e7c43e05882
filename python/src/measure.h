// Measuring from Python: pto_tune.run (run.cpp) and pto_tune.tune (tune.cpp). Both
// release the GIL while they measure, and measure cpu candidates in a spawned
// pto-tune-worker (measure/isolation.h): forking an interpreter would copy its
// threads' locks in whatever state they were. tune(measure=fn) measures with a Python
// function instead (measure_function.cpp).
#pragma once

#include <string>

#include <pybind11/pybind11.h>

#include "measure/runner.h"

namespace pto::python {

void bind_run(pybind11::module_& m);
void bind_tune(pybind11::module_& m);

// Runner options for a measurement from Python: cpu candidates in a spawned worker.
measure::RunnerOptions runner_options(uint64_t seed);

// The measurement of pto_tune.tune(measure=fn), with the GIL held: usage Error when fn
// is not callable. The measurer takes the GIL for its calls; fn must outlive it.
measure::ExternalMeasurer measure_function(pybind11::handle fn);

// Drops the cached lookup of the database at `path` (and every cached answer), so that
// the next lookup sees what was just stored (lookup.cpp). Called with the GIL held.
void forget_lookups(const std::string& path);

}  // namespace pto::python
