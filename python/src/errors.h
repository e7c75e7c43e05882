// pto::Error as Python exceptions: a category becomes a class of the pto_tune module,
// so that Python code catches what it can act on and the interpreter never sees a C++
// exception.
//
//   pto_tune.Error (Exception)             internal errors; the base of all below
//   pto_tune.UsageError (Error, ValueError)   a bad argument: op, shape, dtype, target, backend, option
//   pto_tune.InfeasibleConfig (UsageError)    a config that does not fit; .violations lists the rules
//   pto_tune.DatabaseError (Error)            the tuning database cannot be used
//   pto_tune.IoError (Error, OSError)         a file or a process could not be used
#pragma once

#include <pybind11/pybind11.h>

namespace pto::python {

// Creates the classes in `m` and registers the translator of pto::Error.
void bind_errors(pybind11::module_& m);

}  // namespace pto::python
