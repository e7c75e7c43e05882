// TuningDb: the SQLite tuning database, search's TuningStore on a file.
//
// One file (default ~/.cache/pto-tune/tune.db; PTO_TUNE_DB or --db override it) in WAL
// mode with a busy timeout, so that several tuning processes can write into it at
// once; every write is one transaction; the schema carries a version and migrates
// forward. A file that is not a pto-tune database, is corrupt or has a newer schema is
// reported (Db Error, exit code 2 at the CLI) and never written to.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "search/tuning_store.h"

namespace pto::db {

// `flag` when given (--db), else $PTO_TUNE_DB, else ~/.cache/pto-tune/tune.db. Usage
// Error when none can be derived (no HOME).
std::string resolve_db_path(const std::optional<std::string>& flag = std::nullopt);

enum class OpenMode { ReadWrite, ReadOnly };

class TuningDb : public search::TuningStore {
 public:
  // Creates the file (and its folder) in ReadWrite mode when missing.
  static std::unique_ptr<TuningDb> open(const std::string& path, OpenMode mode = OpenMode::ReadWrite);
  ~TuningDb() override;
  // search::TuningStore: commit, best, top_k, location — and the rest of the database's
  // interface (records, export, import, merge, check) is declared by db/.
};

}  // namespace pto::db
