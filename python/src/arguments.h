// The arguments every pto_tune function shares, from Python values to pto's types:
// the workload (op, shapes, dtype, attrs), the target by name (loaded once and kept:
// the host target is detected from sysfs, and lookup must stay cheap), and JSON to
// Python objects.
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json_fwd.hpp>
#include <pybind11/pybind11.h>

#include "core/target.h"
#include "core/workload.h"

namespace pto::python {

// `shapes` is a sequence of ints or text ("4096,4096,4096"); `attrs` a dict of
// name -> int, or None. UsageError naming the bad value.
Workload workload_from(const std::string& op, const pybind11::handle& shapes, const std::string& dtype,
                       const pybind11::handle& attrs, const std::optional<std::string>& expr);

// A built-in target or a target file, loaded on first use; thread-safe. The reference
// stays valid for the life of the process.
const Target& target_named(const std::string& name_or_path);

// The backend asked for, else the CLI's default (measure::default_backend).
std::string backend_or_default(const std::optional<std::string>& backend, const Target& target);

pybind11::object to_python(const nlohmann::json& j);
// The JSON text of a Python value (json.dumps), for the parsers of records and configs.
// A value nested past what json.dumps recurses through is a UsageError naming `what`, not
// Python's RecursionError; a value JSON has no form for stays json.dumps' TypeError.
std::string json_text_of(const pybind11::handle& value, const std::string& what);

// A file path as Python code gives one: a str or an os.PathLike (pathlib.Path) naming
// text; None is nullopt. UsageError naming `what` and the value for anything else.
std::optional<std::string> path_from(const pybind11::handle& value, const std::string& what);

}  // namespace pto::python
