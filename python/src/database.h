// pto_tune.Database (database.cpp).
#pragma once

#include <pybind11/pybind11.h>

namespace pto::python {

void bind_database(pybind11::module_& m);

}  // namespace pto::python
