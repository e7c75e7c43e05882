// TuningStore: the small storage interface the tuner writes through, in the spirit of
// TVM MetaSchedule's Database (CommitTuningRecord, GetTopK). search/ never includes
// SQLite: db/ implements this interface on a database file, and MemoryStore below
// implements it in memory for tests and for tuning without a database.
//
// Every measurement is committed, failures included. best() and top_k() consider only
// usable records (TuningRecord::usable), in the one ranking of records (search::better):
// a fresh record before any stale one, so a stale best means the key has no fresh
// usable record; a caller that must not serve an old record checks fresh().
// records_of() is the search's memory: what was measured for a key before, which the
// tuner takes instead of measuring it again. The store also keeps the predictor's
// learned correction per (op, target fingerprint, backend) under today's versions
// (cost_model/correction.h): the rows a later job of the op and the JIT start from.
#pragma once

#include <cstddef>
#include <map>
#include <mutex>
#include <optional>
#include <span>
#include <vector>

#include "cost_model/correction.h"
#include "search/tuning_record.h"

namespace pto::search {

class TuningStore {
 public:
  virtual ~TuningStore() = default;
  // Stores the records atomically: all of them or none (Db Error).
  virtual void commit(std::span<const TuningRecord> records) = 0;
  // Every record of the key, failures and other versions included, in the order stored.
  virtual std::vector<TuningRecord> records_of(const RecordKey& key) = 0;
  // Where the records go, for people ("~/.cache/pto-tune/tune.db", "memory").
  virtual std::string location() const = 0;

  // The correction stored for `key` by jobs under today's versions (Versions::current);
  // nothing when there is none, or only one of other versions or another feature layout.
  virtual std::optional<Correction> correction(const CorrectionKey& key) = 0;
  // Adds a finished job's rows to the correction of `key` (merge_corrections: bounded),
  // atomically, so that jobs of one op finishing at once in several processes lose none
  // of each other's rows. A correction of other versions is replaced.
  virtual void add_correction(const CorrectionKey& key, const Correction& session) = 0;

  // The k best usable records of the key, best first; best() is the first of them.
  // Both rank records_of(key) here, so that every store answers in the one ranking.
  std::vector<TuningRecord> top_k(const RecordKey& key, size_t k);
  std::optional<TuningRecord> best(const RecordKey& key);
};

// Whether the key is tuned for today's code: its best record is fresh. best() ranks
// fresh records first, so a stale best means there is no fresh usable record, and a
// stale record, however fast, never makes a key count as tuned (batch resume skips
// only tuned keys).
bool is_tuned(TuningStore& store, const RecordKey& key);

// Thread-safe, in memory.
class MemoryStore : public TuningStore {
 public:
  void commit(std::span<const TuningRecord> records) override;
  std::vector<TuningRecord> records_of(const RecordKey& key) override;
  std::string location() const override { return "memory"; }
  std::optional<Correction> correction(const CorrectionKey& key) override;
  void add_correction(const CorrectionKey& key, const Correction& session) override;
  std::vector<TuningRecord> all() const;  // in commit order

 private:
  mutable std::mutex mutex_;
  std::vector<TuningRecord> records_;
  std::map<CorrectionKey, Correction> corrections_;  // made under today's versions
};

}  // namespace pto::search
