#include "lookup.h"

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <utility>

#include <pybind11/stl.h>

#include "arguments.h"
#include "config.h"
#include "core/error.h"
#include "db/config_lookup.h"
#include "db/tuning_db.h"
#include "measure.h"
#include "measure/runner.h"

namespace py = pybind11;

namespace pto::python {

namespace {

// What a provider is made for: a database path, the backend asked for ("" for any),
// whether the cost model may pick.
using ProviderKey = std::tuple<std::string, std::string, bool>;

// One provider per key, loaded on first use.
class Providers {
 public:
  std::shared_ptr<db::DbConfigProvider> get(const ProviderKey& key) {
    std::lock_guard lock(mutex_);
    auto& slot = providers_[key];
    if (!slot) {
      const auto& [path, backend, model] = key;
      db::LookupOptions options;
      if (!backend.empty()) options.backends = {backend};
      if (!model) options.model_candidates = 0;  // no model pick: nearest, then the default
      try {
        slot = std::make_shared<db::DbConfigProvider>(path, options);
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
  std::map<ProviderKey, std::shared_ptr<db::DbConfigProvider>> providers_;
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

// "exact", "nearest 4096,4096,4096", "model", "default": where the config came from.
std::string source_of(const ConfigChoice& choice) {
  std::string source = config_source_name(choice.source);
  if (!choice.from_shape) return source;
  std::string shape;
  for (int64_t dim : *choice.from_shape) shape += (shape.empty() ? "" : ",") + std::to_string(dim);
  return source + " " + shape;
}

Config lookup(const std::string& op, const py::handle& shapes, const std::string& dtype, const std::string& target,
              const std::optional<std::string>& backend, const std::optional<std::string>& db, bool model,
              const py::handle& attrs) {
  const Workload w = workload_from(op, shapes, dtype, attrs);
  const Target& t = target_named(target);
  if (backend) check_backend(*backend);
  const ProviderKey key{db::resolve_db_path(db), backend.value_or(""), model};
  ConfigChoice choice;
  {
    py::gil_scoped_release release;  // a first model pick scores candidates for a while
    choice = providers().get(key)->choose(w, t);
  }
  return Config{std::move(choice.config), source_of(choice), choice.stale, choice.stale_reason};
}

}  // namespace

void forget_lookups(const std::string& path) { providers().forget(path); }

void bind_lookup(py::module_& m) {
  m.def("lookup", &lookup, py::arg("op"), py::arg("shapes"), py::arg("dtype") = "fp16",
        py::arg("target") = "ascend910b1", py::arg("backend") = py::none(), py::arg("db") = py::none(),
        py::arg("model") = true, py::arg("attrs") = py::none(),
        "The config for a workload, as the JIT would get it: the tuned record of this very\n"
        "workload ('exact'), else the nearest tuned shape of the op that still fits\n"
        "('nearest M,K,N'), else the cost model's pick ('model'), else the op's default.\n"
        "Never tunes. backend: serve only records of this backend (default: measured on\n"
        "hardware before simulated before predicted). db: the database file (default\n"
        "$PTO_TUNE_DB, else ~/.cache/pto-tune/tune.db; a missing file is an empty database).\n"
        "model=False skips the cost model's pick: the default follows the tuned records.\n"
        "The database is read once per path and kept; reload() drops it.");
  m.def("reload", [](const std::optional<std::string>& db) { forget_lookups(db::resolve_db_path(db)); },
        py::arg("db") = py::none(),
        "Makes the next lookup() read the database again (tune() and Database.merge() do\n"
        "this themselves; call it after another process wrote the database).");
}

}  // namespace pto::python
