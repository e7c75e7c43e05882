// TuningDb: the SQLite tuning database, search's TuningStore on a file.
//
// One file (default ~/.cache/pto-tune/tune.db; PTO_TUNE_DB or --db override it) in WAL
// mode with a busy timeout, so that several tuning processes can write into it at
// once; every write is one transaction; the schema carries a version and migrates
// forward (db/schema.h). A file that is not a pto-tune database, is corrupt or has a
// newer schema is reported (Db Error, exit code 2 at the CLI) and never written to;
// so is a read-only file or folder asked to take writes. Corrupt means SQLite said so
// (SQLITE_CORRUPT, SQLITE_NOTADB) reading under its locks; a lock held by another
// process is waited for (busy timeout), and a reader waits a moment for a schema that
// another process is still creating. A database opened read-only takes no write of any
// kind: in a folder it cannot write (a deployed, root-owned one) it is read as
// immutable, as SQLite could not create the -wal and -shm files of a WAL reader there.
//
// Every measurement is stored, failures included. A record identical to one already
// stored (same workload, config, target, backend, status, statistics, versions, host
// and timestamp) is stored once, so a retried commit, an import or a merge run twice
// adds nothing.
//
// "Fresh" below means made under today's compiler and cost-model versions
// (search::Versions::current()). best(), top_k(), best_records(), best_configs(),
// and export all rank by search::better, the one ranking of records: fresh
// before stale, so a stale record never displaces a fresh one, however fast it is.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/target.h"
#include "db/export_file.h"
#include "search/tuning_store.h"

namespace pto::db {

// `flag` when given (--db), else $PTO_TUNE_DB, else ~/.cache/pto-tune/tune.db. Usage
// Error when none can be derived (no HOME).
std::string resolve_db_path(const std::optional<std::string>& flag = std::nullopt);

// Whether a file is at `path` (a missing folder on the way is no file); Db Error when the
// path cannot be followed (a loop of symbolic links, a folder that cannot be searched).
bool database_exists(const std::string& path);

enum class OpenMode { ReadWrite, ReadOnly };

// best_records() as the JIT lookup reads it (db/config_lookup.h): the same record per
// key, with only what a lookup serves, each distinct workload, config and target
// stored once.
struct BestConfigs {
  struct Entry {
    size_t workload;  // index in workloads / workload_keys
    size_t config;    // index in configs
    size_t target;    // index in targets
    std::string backend;
    search::Versions versions;
    // The model's error on this key's lead over the op's default: for each fresh usable
    // record but the default's measured within 5 % of the key's best, log(measured /
    // default's measured) - log(predicted / default's predicted); positive where the
    // model promised more than was measured.
    // Empty without the default's record. What the lookup's margin is learned from.
    std::vector<float> lead_errors = {};
    // The same error for this entry's own record: how much more the model promised for
    // this config at this shape than was measured. None for the default's record, or
    // without one. What a transfer corrects the config's predicted time with.
    std::optional<float> own_lead_error = {};
  };
  struct TargetId {
    std::string name;
    std::string fingerprint;
  };
  std::vector<Workload> workloads;
  std::vector<std::string> workload_keys;  // Workload::key() of each
  std::vector<TileConfig> configs;
  std::vector<TargetId> targets;
  std::vector<Entry> entries;  // in no particular order
};

struct MergeSummary {
  size_t inputs = 0;
  size_t keys = 0;      // distinct (workload, target fingerprint, backend) merged
  size_t added = 0;     // records the output did not hold yet
  size_t stale = 0;     // keys whose kept record is stale (no fresh one anywhere)
  size_t skipped = 0;   // rows of the inputs and `out` that could not be read (TuningDb::skipped_rows)
};

class TuningDb : public search::TuningStore {
 public:
  // Creates the file (and its folder) in ReadWrite mode when missing; ReadOnly on a
  // missing file is a Db Error. Checks an existing file before anything writes to it:
  // one with a trigger or view the schema does not create is not written to (Db Error).
  static std::unique_ptr<TuningDb> open(const std::string& path, OpenMode mode = OpenMode::ReadWrite);
  ~TuningDb() override;

  // search::TuningStore
  void commit(std::span<const search::TuningRecord> records) override;
  std::vector<search::TuningRecord> records_of(const search::RecordKey& key) override;
  std::string location() const override;
  std::optional<Correction> correction(const CorrectionKey& key) override;
  void add_correction(const CorrectionKey& key, const Correction& session) override;

  // Every correction made under today's versions and feature layout, for the JIT
  // (cost_model/target_predictors.h); none in a v1 file opened read-only. Export,
  // import and merge carry records only: a correction is relearnt from the records'
  // own tuning, and a release ships configs, not the tuner's working memory.
  std::map<CorrectionKey, Correction> corrections();

  // Stores the target's description beside its fingerprint (records name targets by
  // fingerprint only; this keeps what the fingerprint stood for).
  void remember_target(const Target& target);

  // Every stored measurement, failures included, in the order stored; `op` (when not
  // empty) keeps that op's.
  std::vector<search::TuningRecord> records(const std::string& op = "");
  // How many measurements are stored (of `op` when not empty), without reading them:
  // records(op).size() unless rows cannot be read (skipped_rows()).
  size_t count_records(const std::string& op = "");
  // One usable record per key, by key: the first in search::better's ranking, so the
  // best fresh one, else the best stale one (the caller sees it is stale with
  // stale_reason()). What a release ships and what the JIT lookup serves.
  std::vector<search::TuningRecord> best_records(const std::string& op = "");
  // The same records as best_records(), for the JIT lookup: the same one pass over the
  // measurements' ranking columns (5x less CPU than SQL's window sort for 100,000
  // records: results/lookup_latency.md), then each winning workload, config and target
  // read and parsed once.
  BestConfigs best_configs();

  // Writes best_records(op) as versioned JSON, with the records the lookup learns its
  // transfer margin and corrections from (each key's default and its fresh records
  // within 5 % of its best: BestConfigs::Entry::lead_errors), so that a database the
  // export is imported into serves the transfers the exported one did:
  //   {"format":"pto-tune-configs","version":1,"compiler":..,"cost_model":..,"records":[..]}
  // each record as TuningRecord::to_json. Returns how many were written. Io Error when
  // the file cannot be written.
  size_t export_json(const std::string& file, const std::string& op = "");
  // Reads such a file and commits its records in one transaction: all or none. Usage
  // Error naming the record and field for malformed input (nothing is stored), Db Error
  // for a format version newer than this pto-tune's. Returns the records added.
  size_t import_json(const std::string& file);
  // Checks records from elsewhere as an import's (search::ImportChecker) and commits
  // them in one transaction: all or none. `where[i]` names record i in the Usage Error
  // of a record that fails the check ("'results.csv' row 3 (line 4)"). Returns the
  // records added.
  size_t import_records(const std::vector<search::TuningRecord>& records, const std::vector<std::string>& where);

  // Merges the inputs (opened read-only, never changed) into `out` (created when
  // missing): every record of the inputs joins `out`, so that the merge of sharded
  // jobs is the database one machine would have made. The lookup learns its margins
  // and corrections from a key's default and near-best records, not its best alone
  // (db/config_lookup.h), and the tuner takes what is stored as measured. With
  // `only_workloads`, the records of those workload keys alone (a plan's buckets,
  // without its checks). Idempotent and independent of the inputs' order.
  static MergeSummary merge(const std::vector<std::string>& inputs, const std::string& out,
                            const std::optional<std::set<std::string>>& only_workloads = std::nullopt);

  // SQLite's integrity check, the foreign keys, the schema's tables and columns (and no
  // trigger or view it does not create), and every measurement row: a record the tuner
  // could have written (key, config, status and detail parse; search::ImportChecker's
  // checks, a config that fits its built-in target among them). One line per problem,
  // naming the row; empty when the database is sound.
  std::vector<std::string> check();

  // How many rows the reads so far skipped: a row that cannot be read as a record (a
  // config, workload key, status or detail that does not parse; no database pto-tune
  // wrote has one) costs its own record only, and is named in a warning (core/warning.h)
  // once per open database.
  size_t skipped_rows() const;

 private:
  struct Impl;
  explicit TuningDb(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace pto::db
