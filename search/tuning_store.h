// TuningStore: the small storage interface the tuner writes through, in the spirit of
// TVM MetaSchedule's Database (CommitTuningRecord, GetTopK). search/ never includes
// SQLite: db/ implements this interface on a database file, and MemoryStore below
// implements it in memory for tests and for tuning without a database.
//
// Every measurement is committed, failures included. best() and top_k() consider only
// usable records (TuningRecord::usable), ordered by search::better, of any version: a
// caller that must not serve an old record checks stale_reason().
#pragma once

#include <cstddef>
#include <map>
#include <mutex>
#include <optional>
#include <span>
#include <vector>

#include "search/tuning_record.h"

namespace pto::search {

class TuningStore {
 public:
  virtual ~TuningStore() = default;
  // Stores the records atomically: all of them or none (Db Error).
  virtual void commit(std::span<const TuningRecord> records) = 0;
  virtual std::optional<TuningRecord> best(const RecordKey& key) = 0;
  // The k best usable records of the key, best first.
  virtual std::vector<TuningRecord> top_k(const RecordKey& key, size_t k) = 0;
  // Where the records go, for people ("~/.cache/pto-tune/tune.db", "memory").
  virtual std::string location() const = 0;
};

// Thread-safe, in memory.
class MemoryStore : public TuningStore {
 public:
  void commit(std::span<const TuningRecord> records) override;
  std::optional<TuningRecord> best(const RecordKey& key) override;
  std::vector<TuningRecord> top_k(const RecordKey& key, size_t k) override;
  std::string location() const override { return "memory"; }
  std::vector<TuningRecord> all() const;  // in commit order

 private:
  mutable std::mutex mutex_;
  std::vector<TuningRecord> records_;
};

}  // namespace pto::search
