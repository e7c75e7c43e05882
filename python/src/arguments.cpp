#include "arguments.h"

#include <map>
#include <memory>
#include <mutex>

#include <nlohmann/json.hpp>
#include <pybind11/stl.h>

#include "core/dtype.h"
#include "core/error.h"
#include "core/expression.h"
#include "core/json_read.h"
#include "measure/runner.h"

namespace py = pybind11;

namespace pto::python {

namespace {

// A Python int as int64_t; UsageError naming `what` for one out of its range (2**63
// and up), which pybind11 would report as a bare RuntimeError.
int64_t int64_from(const py::handle& value, const std::string& what) {
  int overflow = 0;
  const long long v = PyLong_AsLongLongAndOverflow(value.ptr(), &overflow);
  if (v == -1 && PyErr_Occurred()) throw py::error_already_set();
  if (overflow != 0) usage_error(what + ": " + py::repr(value).cast<std::string>() + " does not fit in 64 bits");
  return v;
}

Shape shape_from(const py::handle& shapes) {
  if (py::isinstance<py::str>(shapes)) return parse_shape_list(shapes.cast<std::string>());
  if (!py::isinstance<py::sequence>(shapes))
    usage_error("shapes: expected a sequence of ints or text like '4096,4096,4096', got " +
                py::repr(shapes).cast<std::string>());
  Shape shape;
  for (const py::handle item : shapes.cast<py::sequence>()) {
    if (!py::isinstance<py::int_>(item) || py::isinstance<py::bool_>(item))
      usage_error("shapes: expected ints, got " + py::repr(item).cast<std::string>());
    const int64_t dim = int64_from(item, "shapes");
    if (dim <= 0) usage_error("shapes: '" + std::to_string(dim) + "' is not a positive integer");
    shape.push_back(dim);
  }
  return shape;
}

}  // namespace

Workload workload_from(const std::string& op, const py::handle& shapes, const std::string& dtype,
                       const py::handle& attrs, const std::optional<std::string>& expr) {
  Workload w{op, shape_from(shapes), parse_dtype(dtype), {}};
  if (!attrs.is_none()) {
    if (!py::isinstance<py::dict>(attrs))
      usage_error("attrs: expected a dict of name -> int, got " + py::repr(attrs).cast<std::string>());
    for (const auto& [key, value] : attrs.cast<py::dict>()) {
      const std::string name = py::str(key).cast<std::string>();
      // An element-type attribute (kv_dtype) is given by name, as on the command line.
      if (is_dtype_attr(name) && py::isinstance<py::str>(value)) {
        w.attrs[name] = static_cast<int64_t>(parse_dtype(value.cast<std::string>()));
        continue;
      }
      if (!py::isinstance<py::int_>(value))
        usage_error("attrs: '" + name + "' must be an int" + (is_dtype_attr(name) ? " or an element type name" : "") +
                    ", got " + py::repr(value).cast<std::string>());
      w.attrs[name] = int64_from(value, "attrs: '" + name + "'");
    }
  }
  if (expr) w.expr = canonical_expression(*expr);
  // The op name is checked where it is used: a lookup that misses builds its graph.
  return w;
}

const Target& target_named(const std::string& name_or_path) {
  static std::mutex mutex;
  static std::map<std::string, std::unique_ptr<const Target>> loaded;
  std::lock_guard lock(mutex);
  auto& slot = loaded[name_or_path];
  if (!slot) {
    try {
      slot = std::make_unique<const Target>(load_target(name_or_path));
    } catch (...) {
      loaded.erase(name_or_path);
      throw;
    }
  }
  return *slot;
}

std::string backend_or_default(const std::optional<std::string>& backend, const Target& target) {
  return backend ? *backend : measure::default_backend(target);
}

py::object to_python(const nlohmann::json& j) {
  return py::module_::import("json").attr("loads")(j.dump());
}

std::string json_text_of(const py::handle& value, const std::string& what) {
  try {
    return py::module_::import("json").attr("dumps")(value).cast<std::string>();
  } catch (py::error_already_set& e) {
    if (!e.matches(PyExc_RecursionError)) throw;
    usage_error(what + " is nested too deep to be JSON (more than " + std::to_string(json_read::kMaxDepth) +
                " levels are refused anyway)");
  }
}

std::optional<std::string> path_from(const py::handle& value, const std::string& what) {
  if (value.is_none()) return std::nullopt;
  const py::object path = py::reinterpret_steal<py::object>(PyOS_FSPath(value.ptr()));
  if (!path || !py::isinstance<py::str>(path)) {
    PyErr_Clear();
    usage_error(what + ": expected a path (str or os.PathLike naming text), got " + py::repr(value).cast<std::string>());
  }
  return path.cast<std::string>();
}

}  // namespace pto::python
