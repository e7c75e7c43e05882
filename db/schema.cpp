#include "db/schema.h"

#include <algorithm>
#include <array>
#include <map>

#include "core/error.h"

namespace pto::db {

namespace {

constexpr const char* kV1 = R"sql(
CREATE TABLE schema_version (version INTEGER NOT NULL);
INSERT INTO schema_version VALUES (0);
CREATE TABLE targets (
  fingerprint TEXT PRIMARY KEY NOT NULL,
  name TEXT NOT NULL,
  json TEXT NOT NULL
);
CREATE TABLE workloads (
  id INTEGER PRIMARY KEY,
  key TEXT NOT NULL UNIQUE,
  op TEXT NOT NULL,
  shape TEXT NOT NULL,
  dtype TEXT NOT NULL,
  attrs TEXT NOT NULL
);
CREATE INDEX workloads_op ON workloads (op);
CREATE TABLE configs (
  id INTEGER PRIMARY KEY,
  json TEXT NOT NULL UNIQUE
);
CREATE TABLE measurements (
  id INTEGER PRIMARY KEY,
  workload_id INTEGER NOT NULL REFERENCES workloads (id),
  config_id INTEGER NOT NULL REFERENCES configs (id),
  target_fingerprint TEXT NOT NULL REFERENCES targets (fingerprint),
  backend TEXT NOT NULL,
  status TEXT NOT NULL,
  error TEXT NOT NULL,
  usable INTEGER NOT NULL,
  median_ns REAL NOT NULL,
  p10_ns REAL NOT NULL,
  p90_ns REAL NOT NULL,
  repetitions INTEGER NOT NULL,
  predicted_ns REAL NOT NULL,
  simulated INTEGER NOT NULL,
  verified INTEGER NOT NULL,
  max_abs_err REAL NOT NULL,
  detail TEXT NOT NULL,
  compiler_version TEXT NOT NULL,
  cost_model_version TEXT NOT NULL,
  host TEXT NOT NULL,
  strategy TEXT NOT NULL,
  timestamp INTEGER NOT NULL
);
CREATE INDEX measurements_best
  ON measurements (workload_id, target_fingerprint, backend, usable, median_ns);
CREATE UNIQUE INDEX measurements_identity
  ON measurements (workload_id, config_id, target_fingerprint, backend, status, median_ns, p10_ns,
                   p90_ns, repetitions, compiler_version, cost_model_version, host, strategy, timestamp);
)sql";

// v2: the predictor's learned correction per (op, target, backend) (cost_model/
// correction.h), as JSON rows under the versions of the jobs that made it.
constexpr const char* kV2 = R"sql(
CREATE TABLE corrections (
  op TEXT NOT NULL,
  target_fingerprint TEXT NOT NULL,
  backend TEXT NOT NULL,
  compiler_version TEXT NOT NULL,
  cost_model_version TEXT NOT NULL,
  json TEXT NOT NULL,
  timestamp INTEGER NOT NULL,
  PRIMARY KEY (op, target_fingerprint, backend)
);
)sql";

constexpr std::array<Migration, 2> kMigrations{{{0, kV1}, {1, kV2}}};

// Columns each table of the current schema must have.
const std::map<std::string, std::vector<std::string>>& expected_tables() {
  static const std::map<std::string, std::vector<std::string>> tables = {
      {"schema_version", {"version"}},
      {"targets", {"fingerprint", "name", "json"}},
      {"workloads", {"id", "key", "op", "shape", "dtype", "attrs"}},
      {"configs", {"id", "json"}},
      {"measurements",
       {"id", "workload_id", "config_id", "target_fingerprint", "backend", "status", "error", "usable",
        "median_ns", "p10_ns", "p90_ns", "repetitions", "predicted_ns", "simulated", "verified",
        "max_abs_err", "detail", "compiler_version", "cost_model_version", "host", "strategy",
        "timestamp"}},
      {"corrections",
       {"op", "target_fingerprint", "backend", "compiler_version", "cost_model_version", "json", "timestamp"}},
  };
  return tables;
}

bool has_table(Connection& c, const std::string& name) {
  Statement s = c.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?");
  return s.bind(1, name).step();
}

}  // namespace

std::span<const Migration> migrations() { return kMigrations; }
int current_schema_version() { return static_cast<int>(kMigrations.size()); }

int schema_version(Connection& c, int newest) {
  // One statement, so one snapshot of the tables: another process may be creating them
  // meanwhile, and two reads could see no schema_version, then its tables.
  Statement first = c.prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name <> 'schema_version' LIMIT 1");
  if (!first.step()) return 0;
  if (first.text_view(0) != "schema_version") {
    fail(ErrorCategory::Db, "'" + c.path() + "' is not a pto-tune tuning database (it has a table '" +
                                first.text(0) + "' but no schema_version)");
  }
  Statement s = c.prepare("SELECT version, typeof(version) = 'integer' FROM schema_version");
  if (!s.step()) fail(ErrorCategory::Db, "tuning database '" + c.path() + "': schema_version is empty");
  // A migration commits its tables with version 1 or more, never 0: a 0 (or text, or a
  // negative number) beside tables is a damaged file, which migrating would fail on
  // ("table schema_version already exists").
  if (s.integer(1) == 0 || s.integer(0) < 1) {
    fail(ErrorCategory::Db, "tuning database '" + c.path() + "' is damaged: its schema_version holds '" + s.text(0) +
                                "', not a version (1 or more): left unchanged");
  }
  const int version = static_cast<int>(s.integer(0));
  if (version > newest) {
    fail(ErrorCategory::Db, "tuning database '" + c.path() + "' has schema version " +
                                std::to_string(version) + ", newer than this pto-tune's " +
                                std::to_string(newest) + ": use a newer pto-tune");
  }
  return version;
}

void migrate(Connection& c, std::span<const Migration> steps) {
  const int newest = static_cast<int>(steps.size());
  if (schema_version(c, newest) == newest) return;  // the usual case: no write lock taken
  for (const Migration& step : steps) {
    Transaction t(c);
    // Read inside the write lock: another process may have migrated meanwhile.
    const int version = schema_version(c, newest);
    if (version != step.from) continue;
    c.exec(step.sql);
    c.prepare("UPDATE schema_version SET version = ?").bind(1, int64_t{step.from + 1}).run();
    t.commit();
  }
}

std::vector<std::string> foreign_objects(Connection& c) {
  std::vector<std::string> found;
  for (Statement s = c.prepare("SELECT type, name FROM sqlite_master WHERE type IN ('trigger', 'view') ORDER BY name");
       s.step();)
    found.push_back(s.text(0) + " '" + s.text(1) + "'");
  return found;
}

std::vector<std::string> missing_schema(Connection& c) {
  std::vector<std::string> problems;
  for (const auto& [table, columns] : expected_tables()) {
    if (!has_table(c, table)) {
      problems.push_back("table '" + table + "' is missing");
      continue;
    }
    std::vector<std::string> present;
    Statement info = c.prepare("SELECT name FROM pragma_table_info(?)");
    info.bind(1, table);
    while (info.step()) present.push_back(info.text(0));
    for (const std::string& column : columns) {
      if (std::find(present.begin(), present.end(), column) == present.end())
        problems.push_back("table '" + table + "' lacks column '" + column + "'");
    }
  }
  return problems;
}

std::vector<std::string> schema_problems(Connection& c) {
  std::vector<std::string> problems = missing_schema(c);
  if (has_table(c, "schema_version")) {
    Statement versions = c.prepare("SELECT count(*) FROM schema_version");
    if (versions.step() && versions.integer(0) != 1)
      problems.push_back("table 'schema_version' has " + std::to_string(versions.integer(0)) + " rows, expected 1");
  }
  Statement index = c.prepare("SELECT 1 FROM sqlite_master WHERE type = 'index' AND name = 'measurements_best'");
  if (!index.step()) problems.push_back("index 'measurements_best' is missing");
  for (std::string& object : foreign_objects(c)) problems.push_back(object + " is not pto-tune's: drop it or use another file");
  return problems;
}

}  // namespace pto::db
