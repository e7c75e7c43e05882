// The tuning database's schema: its version, the migrations that bring an older file
// up to it, and the checks that tell a pto-tune database from any other SQLite file.
//
// A file's version lives in the one-row table schema_version; an empty file is at
// version 0 and reaches the current version through the same migration steps as an
// old one, each step in its own transaction together with the version bump, so a
// migration interrupted half-way leaves the file at its old version. Adding a version
// means appending a step to kMigrations: nothing else changes.
//
// Tables (v1): targets (fingerprint, name, json), workloads (key, op, shape, dtype,
// attrs), configs (canonical JSON text), measurements (one row per measured candidate,
// failures included; foreign keys to the three, plus backend, status, statistics,
// prediction, versions, host, strategy, timestamp). Every column is NOT NULL; the
// index measurements_best makes "best record of (workload, target, backend)" one
// indexed range scan; the unique index measurements_identity stores a record that is
// already there only once.
// v2 adds corrections: the predictor's learned correction per (op, target fingerprint,
// backend), its rows as JSON, with the compiler and cost-model versions it was made
// under. A v1 file opened read-only (a deployed database pto-tune may not migrate) is
// read as it is, with no corrections.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "db/sqlite.h"

namespace pto::db {

struct Migration {
  int from;          // the version it applies to
  const char* sql;   // brings it to from + 1
};

// The steps from version 0, in order.
std::span<const Migration> migrations();
int current_schema_version();  // migrations().size()

// The version of an open pto-tune database: 0 for an empty file. Db Error for a file
// with tables but no schema_version (another program's database), or one with a
// schema newer than `newest` (written by a newer pto-tune).
int schema_version(Connection& c, int newest = current_schema_version());

// Applies `steps` from the file's version on, each in its own transaction.
void migrate(Connection& c, std::span<const Migration> steps = migrations());

// The triggers and views of the file ("trigger 'name'"): the schema creates none, so
// each is another program's, and a trigger runs on our writes (one that deletes rows
// would silently empty the database). Empty for a pto-tune database.
std::vector<std::string> foreign_objects(Connection& c);

// The tables and columns of the current schema that the file lacks, one line each
// ("table 'measurements' is missing"). A file at the current version has them all
// unless something changed it after pto-tune wrote it (a table dropped by hand).
std::vector<std::string> missing_schema(Connection& c);

// What check() adds to SQLite's integrity check: the schema's tables and indexes are
// present with their columns, and no foreign_objects(). Empty when all is well, else one line per problem.
std::vector<std::string> schema_problems(Connection& c);

}  // namespace pto::db
