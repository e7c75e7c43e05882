// pto_tune.lookup (lookup.cpp): the JIT's question from Python. The database's lookup
// provider is loaded once per database path and kept, so that a lookup costs a few
// microseconds and can run on every kernel trace; tune() drops the entry of the
// database it wrote (forget_lookups, measure.h). A fork() while other threads are
// inside lookup() or reload() leaves the child a working lookup (fork_guard.h).
#pragma once

#include <pybind11/pybind11.h>

namespace pto::python {

void bind_lookup(pybind11::module_& m);

}  // namespace pto::python
