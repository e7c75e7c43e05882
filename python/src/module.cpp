// The _pto_tune extension: the C++ half of the pto_tune package (pto_tune/__init__.py
// wraps the dicts it returns in classes and adds apply()). One bind_* per concept:
//   errors.cpp    pto::Error categories as Python exception classes
//   config.cpp    Config, CubeTiles, Stage, emit_pypto()
//   lookup.cpp    lookup(), with the per-database provider cache
//   run.cpp       run()
//   tune.cpp      tune()
//   database.cpp  Database
//   fork_guard.cpp   lookup() and reload() safe across fork()
#include <pybind11/pybind11.h>

#include "arguments.h"

#include "config.h"
#include "database.h"
#include "errors.h"
#include "lookup.h"
#include "measure.h"
#include "search/tuning_record.h"

PYBIND11_MODULE(_pto_tune, m) {
  m.doc() = "pto-tune's C++ core for the pto_tune package; import pto_tune instead.";
  m.attr("compiler_version") = pto::search::Versions::current().compiler;
  m.attr("cost_model_version") = pto::search::Versions::current().cost_model;
  pto::python::bind_errors(m);
  m.def("target_fingerprint", [](const std::string& target) { return pto::python::target_named(target).fingerprint(); },
        pybind11::arg("target") = "ascend910b1",
        "The fingerprint of a target's description: what records name their target by.");
  pto::python::bind_config(m);
  pto::python::bind_lookup(m);
  pto::python::bind_run(m);
  pto::python::bind_tune(m);
  pto::python::bind_database(m);
}
