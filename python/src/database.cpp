// pto_tune.Database: a tuning database file from Python — its best records, every
// record, export to versioned JSON and merge of shards. Records are dicts in
// TuningRecord's JSON form (search/tuning_record.h).
#include "database.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <pybind11/stl.h>

#include "arguments.h"
#include "core/error.h"
#include "core/json_read.h"
#include "db/tuning_db.h"
#include "measure.h"

namespace py = pybind11;

namespace pto::python {

namespace {

class Database {
 public:
  explicit Database(const py::handle& path)
      : path_(db::resolve_db_path(path_from(path, "path"))), db_(db::TuningDb::open(path_)) {}

  const std::string& path() const { return path_; }

  py::object best(const std::string& op, const py::handle& shapes, const std::string& dtype,
                  const std::string& target_name, const std::optional<std::string>& backend,
                  const py::handle& attrs, const std::optional<std::string>& expr) {
    const Workload w = workload_from(op, shapes, dtype, attrs, expr);
    const Target& target = target_named(target_name);
    const search::RecordKey key{w.key(), target.fingerprint(), backend_or_default(backend, target)};
    std::optional<search::TuningRecord> record = db_->best(key);
    if (!record) return py::none();
    return to_python(record->to_json());
  }

  py::iterator records(const std::optional<std::string>& op) {
    py::list list;
    for (const search::TuningRecord& record : db_->records(op.value_or(""))) list.append(to_python(record.to_json()));
    return py::iter(list);
  }

  size_t export_to(const py::handle& file) { return db_->export_json(required_path(file)); }

  size_t import_from(const py::handle& file) {
    size_t added = db_->import_json(required_path(file));
    forget_lookups(path_);
    return added;
  }

  size_t commit(const py::iterable& records) {
    std::vector<search::TuningRecord> parsed;
    std::vector<std::string> where;
    for (const py::handle record : records) {
      where.push_back("records[" + std::to_string(parsed.size()) + "]");
      parsed.push_back(search::TuningRecord::from_json(json_read::parse(json_text_of(record, "a record"), "record")));
    }
    // Measurements made elsewhere: checked as an import's are (search::ImportChecker).
    db_->import_records(parsed, where);
    forget_lookups(path_);
    return parsed.size();
  }

  py::object merge(const py::iterable& paths) {
    std::vector<std::string> inputs;
    for (const py::handle path : paths) inputs.push_back(required_path(path));
    db::MergeSummary summary = db::TuningDb::merge(inputs, path_);
    forget_lookups(path_);
    return to_python({{"inputs", summary.inputs}, {"keys", summary.keys}, {"added", summary.added},
                      {"stale", summary.stale}});
  }

 private:
  static std::string required_path(const py::handle& value) {
    if (value.is_none()) usage_error("path: expected a path (str or os.PathLike), got None");
    return *path_from(value, "path");
  }

  std::string path_;
  std::unique_ptr<db::TuningDb> db_;
};

}  // namespace

void bind_database(py::module_& m) {
  py::class_<Database>(m, "Database", "A tuning database file, created when missing.")
      .def(py::init<const py::handle&>(), py::arg("path") = py::none(),
           "Opens the database at path (default $PTO_TUNE_DB, else ~/.cache/pto-tune/tune.db).")
      .def_property_readonly("path", &Database::path, "The database file.")
      .def("best", &Database::best, py::arg("op"), py::arg("shapes"), py::arg("dtype") = "fp16",
           py::arg("target") = "ascend910b1", py::arg("backend") = py::none(), py::arg("attrs") = py::none(),
           py::arg("expr") = py::none(),
           "The best usable record of the workload on the target and backend (default: cpu\n"
           "for the host, sim for an NPU target), as a dict; None when there is none.")
      .def("records", &Database::records, py::arg("op") = py::none(),
           "An iterator over every stored measurement (failures included) as dicts, in the\n"
           "order stored; of one op when op is given.")
      .def("export", &Database::export_to, py::arg("path"),
           "Writes the best record per key as versioned JSON (what a release ships), with each\n"
           "key's default and near-best records (what the lookup learns its transfer margin\n"
           "from); returns how many records it wrote.")
      .def("import_json", &Database::import_from, py::arg("path"),
           "Adds the records of an export file, all or none; returns how many were new.")
      .def("commit", &Database::commit, py::arg("records"),
           "Stores records (dicts in the form records() yields), all or none; returns how\n"
           "many were given. For measurements made elsewhere: each is checked as an import's\n"
           "(a workload the op library builds, a known backend, a positive time, a config that\n"
           "fits its built-in target), a UsageError naming records[i] otherwise.")
      .def("merge", &Database::merge, py::arg("paths"),
           "Merges other databases (shards of a batch job; never changed) into this one:\n"
           "every record of theirs, as one machine would have stored them; returns {inputs,\n"
           "keys, added, stale}.");
}

}  // namespace pto::python
