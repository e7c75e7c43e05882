#include "lookup.h"

#include <algorithm>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include <pybind11/stl.h>

#include "arguments.h"
#include "config.h"
#include "core/config_chain.h"
#include "core/error.h"
#include "db/config_lookup.h"
#include "db/tuning_db.h"
#include "fork_guard.h"
#include "measure.h"
#include "measure/runner.h"
#include "search/model_pick.h"

namespace py = pybind11;

namespace pto::python {

namespace {

// What a provider is made for: a database path, the backend asked for ("" for any),
// whether the cost model may pick.
using ProviderKey = std::tuple<std::string, std::string, bool>;

// The JIT's fallback order for one key (core/config_chain.h), and its database's
// provider, whose load warning Python hears.
struct Provider {
  std::shared_ptr<db::DbConfigProvider> database;
  std::shared_ptr<ConfigChain> lookup;
};

// The database's answer, then the cost model's pick where `model`, then the default.
Provider make_provider(const ProviderKey& key) {
  const auto& [path, backend, model] = key;
  db::LookupOptions options;
  if (!backend.empty()) options.backends = {backend};
  // Not on stderr: choose() says it through warnings.warn, where the GIL is held.
  options.warn = [](const std::string&) {};
  Provider p{std::make_shared<db::DbConfigProvider>(path, options), nullptr};
  std::vector<std::shared_ptr<ConfigProvider>> steps{p.database};
  if (model) steps.push_back(std::make_shared<search::ModelPickProvider>(p.database->model_sources()));
  p.lookup = std::make_shared<ConfigChain>(std::move(steps));
  return p;
}

// One provider per key, loaded on first use.
class Providers {
 public:
  // `loaded` tells the caller that this call loaded the provider (and should say so
  // when its database could not be read).
  Provider get(const ProviderKey& key, bool& loaded) {
    std::lock_guard lock(mutex_);
    auto& slot = providers_[key];
    loaded = !slot.database;
    if (loaded) {
      try {
        slot = make_provider(key);
      } catch (...) {
        providers_.erase(key);
        throw;
      }
    }
    return slot;
  }

  void forget(const std::string& path) {
    std::lock_guard lock(mutex_);
    std::erase_if(providers_, [&](const auto& entry) { return std::get<0>(entry.first) == path; });
  }

 private:
  std::mutex mutex_;
  std::map<ProviderKey, Provider> providers_;
};

// Never destroyed: a lookup may still run on a thread while the interpreter exits.
Providers& providers() {
  static auto* cache = new Providers;
  return *cache;
}

void check_backend(const std::string& backend) {
  const auto known = measure::backend_names();
  if (std::find(known.begin(), known.end(), backend) != known.end()) return;
  std::string names;
  for (const std::string& name : known) names += (names.empty() ? "" : ", ") + name;
  usage_error("unknown backend '" + backend + "' (known: " + names + ")");
}

// "exact", "transfer 4096,4096,4096", "nearest 4096,4096,4096", "model", "default": where
// the config came from.
std::string source_of(const ConfigChoice& choice) {
  std::string source = config_source_name(choice.source);
  if (!choice.from_shape) return source;
  std::string shape;
  for (int64_t dim : *choice.from_shape) shape += (shape.empty() ? "" : ",") + std::to_string(dim);
  return source + " " + shape;
}

// The answers already given, by the arguments as given: an exact hit from Python is then
// a key built from the arguments and one hash probe, with no Workload, provider lookup,
// GIL release or Config built (results/python_lookup.md). The provider's answer for a
// workload never changes, so a cached one is what choose() would say again; the cache
// is dropped with the providers (forget_lookups), and starts over when full. Every
// access holds the GIL, which is its lock; the Config objects are immutable.
class Answers {
 public:
  static constexpr size_t kCapacity = 1 << 16;

  // The key of a call, or nullopt for arguments of a form it does not take (a shape
  // sequence that is not a list or tuple of ints, say): those take the full path.
  static std::optional<std::string> key_of(std::string_view op, const py::handle& shapes, std::string_view dtype,
                                           std::string_view target, std::optional<std::string_view> backend,
                                           std::string_view db_path, bool model, const py::handle& attrs,
                                           const py::handle& expr) {
    std::string key;
    for (std::string_view text : {op, dtype, target, db_path}) append_text(key, text);
    key += backend ? 'b' : '-';
    append_text(key, backend.value_or(""));
    key += model ? 'm' : '-';
    if (!append_shapes(key, shapes) || !append_attrs(key, attrs)) return std::nullopt;
    if (expr.is_none()) {
      key += 'n';
    } else {
      const auto text = text_of(expr.ptr());
      if (!text) return std::nullopt;
      key += 'e';
      append_text(key, *text);
    }
    return key;
  }

  py::object find(const std::string& key) const {
    const auto it = answers_.find(key);
    return it == answers_.end() ? py::object() : it->second;
  }

  void keep(std::string key, py::object answer) {
    if (answers_.size() >= kCapacity) answers_.clear();
    answers_.emplace(std::move(key), std::move(answer));
  }

  void clear() { answers_.clear(); }

  // A str's UTF-8 text, or nullopt for anything else (a str subclass, or text with
  // lone surrogates); never throws or leaves a Python error set.
  static std::optional<std::string_view> text_of(PyObject* value) {
    if (!PyUnicode_CheckExact(value)) return std::nullopt;
    Py_ssize_t size = 0;
    const char* text = PyUnicode_AsUTF8AndSize(value, &size);
    if (!text) {
      PyErr_Clear();
      return std::nullopt;
    }
    return std::string_view(text, static_cast<size_t>(size));
  }

 private:
  static void append_text(std::string& key, std::string_view text) {
    const size_t size = text.size();
    key.append(reinterpret_cast<const char*>(&size), sizeof size).append(text);
  }
  static bool append_int(std::string& key, const py::handle& value) {
    if (!PyLong_CheckExact(value.ptr())) return false;
    int overflow = 0;
    const long long v = PyLong_AsLongLongAndOverflow(value.ptr(), &overflow);
    if (overflow != 0 || (v == -1 && PyErr_Occurred())) {
      PyErr_Clear();
      return false;
    }
    key.append(reinterpret_cast<const char*>(&v), sizeof v);
    return true;
  }
  static bool append_shapes(std::string& key, const py::handle& shapes) {
    PyObject* p = shapes.ptr();
    if (PyUnicode_Check(p)) {
      const auto text = text_of(p);
      if (!text) return false;
      key += 's';
      append_text(key, *text);
      return true;
    }
    if (!PyList_CheckExact(p) && !PyTuple_CheckExact(p)) return false;
    const Py_ssize_t size = PySequence_Fast_GET_SIZE(p);
    key += 'l';
    key.append(reinterpret_cast<const char*>(&size), sizeof size);
    for (Py_ssize_t i = 0; i < size; ++i)
      if (!append_int(key, PySequence_Fast_GET_ITEM(p, i))) return false;
    return true;
  }
  static bool append_attrs(std::string& key, const py::handle& attrs) {
    if (attrs.is_none()) {
      key += 'n';
      return true;
    }
    if (!PyDict_CheckExact(attrs.ptr())) return false;
    key += 'd';
    PyObject *name = nullptr, *value = nullptr;
    for (Py_ssize_t at = 0; PyDict_Next(attrs.ptr(), &at, &name, &value);) {
      const auto text = text_of(name);
      if (!text || !append_int(key, value)) return false;
      append_text(key, *text);
    }
    return true;
  }

  std::unordered_map<std::string, py::object> answers_;
};

// Never destroyed, as providers(): Python objects outliving the interpreter are leaked,
// not released without a GIL.
Answers& answers() {
  static auto* cache = new Answers;
  return *cache;
}

// A database that could not be read is served as a missing one (db/config_lookup.h);
// Python hears of it as a warning (an error where warnings are errors: -W error).
void warn_unread(const db::DbConfigProvider& provider) {
  if (PyErr_WarnEx(PyExc_UserWarning, provider.load_warning().c_str(), 1) != 0) throw py::error_already_set();
}

Config choose(const std::string& op, const py::handle& shapes, const std::string& dtype, const std::string& target,
              const std::optional<std::string>& backend, const std::string& db_path, bool model,
              const py::handle& attrs, const std::optional<std::string>& expr) {
  const Workload w = workload_from(op, shapes, dtype, attrs, expr);
  const Target& t = target_named(target);
  if (backend) check_backend(*backend);
  const ProviderKey key{db_path, backend.value_or(""), model};
  ConfigChoice choice;
  Provider provider;
  bool loaded = false;
  {
    py::gil_scoped_release release;  // a first model pick scores candidates for a while
    const ForkGuard::Section section;
    provider = providers().get(key, loaded);
    choice = provider.lookup->choose(w, t);
  }
  if (loaded && !provider.database->load_warning().empty()) warn_unread(*provider.database);
  return Config{std::move(choice.config), source_of(choice), choice.stale, choice.stale_reason};
}

py::object lookup(const std::string& op, const py::handle& shapes, const std::string& dtype,
                  const std::string& target, const std::optional<std::string>& backend,
                  const py::handle& db, bool model, const py::handle& attrs,
                  const std::optional<std::string>& expr) {
  const std::string db_path = db::resolve_db_path(path_from(db, "db"));
  const py::object expr_text = expr ? py::object(py::str(*expr)) : py::object(py::none());
  std::optional<std::string> key = Answers::key_of(op, shapes, dtype, target, backend, db_path, model, attrs, expr_text);
  if (key) {
    if (py::object known = answers().find(*key)) return known;
  }
  py::object answer = py::cast(choose(op, shapes, dtype, target, backend, db_path, model, attrs, expr));
  if (key) answers().keep(std::move(*key), answer);
  return answer;
}

// pto_tune.lookup itself: a METH_FASTCALL function in front of lookup() above (bound
// with pybind11 as _lookup). A call whose arguments are all of the plain kinds (text,
// None, a bool, a list of ints) and whose answer is cached gets it here, without
// pybind11's keyword matching and conversions, which cost more than the probe; every
// other call goes to _lookup as it came, so errors and conversions stay in one place.
constexpr const char* kParameters[] = {"op", "shapes", "dtype", "target", "backend", "db", "model", "attrs", "expr"};
constexpr size_t kParameterCount = std::size(kParameters);
PyObject* full_lookup = nullptr;  // _lookup, kept for the life of the process

// The cached answer of a call (a new reference), or nullptr, with no Python error set:
// this runs outside pybind11, so nothing may throw out of it.
PyObject* cached_answer(PyObject* const* args, size_t positional, PyObject* keywords) noexcept try {
  PyObject* given[kParameterCount] = {};
  if (positional > kParameterCount) return nullptr;
  std::copy(args, args + positional, given);
  const Py_ssize_t named = keywords ? PyTuple_GET_SIZE(keywords) : 0;
  for (Py_ssize_t i = 0; i < named; ++i) {
    PyObject* name = PyTuple_GET_ITEM(keywords, i);
    const auto slot = std::find_if(std::begin(kParameters), std::end(kParameters), [&](const char* parameter) {
      return PyUnicode_CompareWithASCIIString(name, parameter) == 0;
    });
    if (slot == std::end(kParameters) || given[slot - std::begin(kParameters)]) return nullptr;
    given[slot - std::begin(kParameters)] = args[positional + static_cast<size_t>(i)];
  }
  auto text_or = [](PyObject* value, std::string_view fallback) -> std::optional<std::string_view> {
    return value ? Answers::text_of(value) : fallback;
  };
  auto optional_text = [](PyObject* value) -> std::optional<std::optional<std::string_view>> {
    if (!value || value == Py_None) return std::optional<std::string_view>();
    if (auto text = Answers::text_of(value)) return std::optional<std::string_view>(*text);
    return std::nullopt;
  };
  const auto op = text_or(given[0], ""), dtype = text_or(given[2], "fp16"), target = text_or(given[3], "ascend910b1");
  const auto backend = optional_text(given[4]), db = optional_text(given[5]);
  PyObject* model = given[6] ? given[6] : Py_True;
  if (!given[0] || !given[1] || !op || !dtype || !target || !backend || !db || (model != Py_True && model != Py_False))
    return nullptr;
  std::string db_path;
  try {
    db_path = db::resolve_db_path(*db ? std::optional<std::string>(**db) : std::nullopt);
  } catch (const Error&) {
    return nullptr;  // _lookup says what is wrong
  }
  const auto key = Answers::key_of(*op, given[1], *dtype, *target, *backend, db_path, model == Py_True,
                                   given[7] ? given[7] : Py_None, given[8] ? given[8] : Py_None);
  if (!key) return nullptr;
  return answers().find(*key).release().ptr();
} catch (...) {
  PyErr_Clear();
  return nullptr;  // out of memory, say: the full lookup will say so
}

PyObject* fast_lookup(PyObject*, PyObject* const* args, Py_ssize_t nargsf, PyObject* keywords) {
  if (PyObject* known = cached_answer(args, static_cast<size_t>(PyVectorcall_NARGS(nargsf)), keywords)) return known;
  return PyObject_Vectorcall(full_lookup, args, static_cast<size_t>(nargsf), keywords);
}

constexpr const char* kLookupDoc =
    "lookup(op, shapes, dtype='fp16', target='ascend910b1', backend=None, db=None, model=True, attrs=None,\n"
    "       expr=None)\n"
    "--\n\n"
    "The config for a workload, as the JIT would get it: the tuned record of this very\n"
    "workload ('exact'), else the nearest tuned shape of the op that still fits\n"
    "('nearest M,K,N'), else the cost model's pick ('model'), else the op's default.\n"
    "Never tunes. backend: serve only records of this backend (default: measured on\n"
    "hardware before simulated before predicted). db: the database file (default\n"
    "$PTO_TUNE_DB, else ~/.cache/pto-tune/tune.db; a missing file is an empty database;\n"
    "one that cannot be read, corrupt say, is served as a missing one with a\n"
    "UserWarning naming it and why: an error under warnings.simplefilter('error')).\n"
    "model=False skips the cost model's pick: the default follows the tuned records.\n"
    "The database is read once per path and kept; reload() drops it.";

}  // namespace

void forget_lookups(const std::string& path) {
  answers().clear();
  const ForkGuard::Section section;
  providers().forget(path);
}

void bind_lookup(py::module_& m) {
  ForkGuard::install();
  m.def("_lookup", &lookup, py::arg("op"), py::arg("shapes"), py::arg("dtype") = "fp16",
        py::arg("target") = "ascend910b1", py::arg("backend") = py::none(), py::arg("db") = py::none(),
        py::arg("model") = true, py::arg("attrs") = py::none(), py::arg("expr") = py::none(),
        "lookup() past its cache: use lookup().");
  full_lookup = py::object(m.attr("_lookup")).release().ptr();
  static PyMethodDef fast{"lookup", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(&fast_lookup)),
                          METH_FASTCALL | METH_KEYWORDS, kLookupDoc};
  m.add_object("lookup", py::reinterpret_steal<py::object>(PyCFunction_NewEx(&fast, nullptr, m.attr("__name__").ptr())));
  m.def("reload", [](const py::handle& db) { forget_lookups(db::resolve_db_path(path_from(db, "db"))); },
        py::arg("db") = py::none(),
        "Makes the next lookup() read the database again (tune() and Database.merge() do\n"
        "this themselves; call it after another process wrote the database).");
}

}  // namespace pto::python
