#include "errors.h"

#include <sstream>
#include <string>
#include <vector>

#include "core/error.h"

namespace py = pybind11;

namespace pto::python {

namespace {

struct Classes {
  PyObject* error = nullptr;
  PyObject* usage = nullptr;
  PyObject* infeasible = nullptr;
  PyObject* database = nullptr;
  PyObject* io = nullptr;
};

// Owned by the module (attributes), which lives as long as the interpreter.
Classes classes;

PyObject* new_class(py::module_& m, const char* name, const char* doc, py::tuple bases) {
  std::string qualified = std::string("pto_tune.") + name;
  PyObject* type = PyErr_NewExceptionWithDoc(qualified.c_str(), doc, bases.ptr(), nullptr);
  if (!type) throw py::error_already_set();
  m.add_object(name, py::handle(type));  // steals nothing: the module keeps its own reference
  return type;
}

// compile's message: "config ... is infeasible on T:\n<rule>: <detail>\n..." — one rule
// per line after the first; a message of another form is one violation.
py::list violations_of(const std::string& message) {
  std::vector<std::string> lines;
  std::istringstream text(message);
  for (std::string line; std::getline(text, line);)
    if (!line.empty()) lines.push_back(line);
  py::list rules;
  size_t first = lines.size() > 1 && lines.front().ends_with(":") ? 1 : 0;
  for (size_t i = first; i < lines.size(); ++i) rules.append(lines[i]);
  return rules;
}

PyObject* class_of(ErrorCategory category) {
  switch (category) {
    case ErrorCategory::Usage: return classes.usage;
    case ErrorCategory::Infeasible: return classes.infeasible;
    case ErrorCategory::Db: return classes.database;
    case ErrorCategory::Io: return classes.io;
    case ErrorCategory::Internal: return classes.error;
  }
  return classes.error;
}

void raise(const Error& e) {
  PyObject* type = class_of(e.category());
  py::object exception = py::reinterpret_steal<py::object>(PyObject_CallFunction(type, "s", e.what()));
  if (!exception) return;  // the call set its own error
  exception.attr("category") = to_string(e.category());
  if (e.category() == ErrorCategory::Infeasible) exception.attr("violations") = violations_of(e.what());
  PyErr_SetObject(type, exception.ptr());
}

}  // namespace

void bind_errors(py::module_& m) {
  py::handle exception_base(PyExc_Exception), value_error(PyExc_ValueError), os_error(PyExc_OSError);
  classes.error = new_class(m, "Error", "Any error pto-tune reports; .category names its kind.",
                            py::make_tuple(exception_base));
  py::handle error(classes.error);
  classes.usage = new_class(m, "UsageError", "A bad argument: op, shape, dtype, target, backend or option.",
                            py::make_tuple(error, value_error));
  classes.infeasible = new_class(m, "InfeasibleConfig",
                                 "A tile config that does not fit the target; .violations lists every "
                                 "violated rule with its numbers.",
                                 py::make_tuple(py::handle(classes.usage)));
  classes.database = new_class(m, "DatabaseError", "The tuning database is not usable (not a pto-tune database, "
                                                   "corrupt, newer schema, locked).",
                               py::make_tuple(error));
  classes.io = new_class(m, "IoError", "A file or a process (the measurement worker) could not be used.",
                         py::make_tuple(error, os_error));
  py::register_exception_translator([](std::exception_ptr thrown) {
    try {
      if (thrown) std::rethrow_exception(thrown);
    } catch (const Error& e) {
      raise(e);
    }
  });
}

}  // namespace pto::python
