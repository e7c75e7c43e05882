// BatchTask: one workload of a batch, resolved — its entry of the file with the run's
// defaults filled in (target, dtype, backend, budget), checked as a tuning job before
// anything runs, and keyed as its records are. resolve_tasks() makes them from a file;
// plan_tasks() shares out a total budget, keeps a shard's and orders them longest first;
// tune_request() is the job (search/tune_request.h) the engine resolves for each.
//
// Entries that differ only in what the defaults fill in (`matmul 64,64,64` and `matmul
// 64,64,64 fp16` where fp16 is the target's dtype) are one task: tuned once.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "batch/batch_file.h"
#include "batch/batch_options.h"
#include "batch/batch_summary.h"
#include "batch/shard.h"
#include "core/target.h"
#include "search/tune_request.h"
#include "search/tuning_record.h"

namespace pto::batch {

struct BatchTask {
  BatchEntry entry;          // its workload's dtype filled in
  Target target;
  std::string backend;       // resolved
  search::RecordKey key;
  int64_t budget = 0;        // its own measurements (0: the strategy decides)
  int64_t share = 0;         // with a total budget: its share in an equal split of the total
  double cost = 0;           // batch::predicted_tune_cost: what orders the batch
};

// The tasks of the file's good entries, in file order. Bad entries (the file's problems,
// an entry whose job breaks a rule: an unknown target, backend or a shape that does not
// fit) are left out and, when `report`, said through options.warn and counted as
// bad_entry in `summary` (options.strict: the first is a usage Error naming `file` and
// the entry instead). A worker process leaves the report to its parent.
std::vector<BatchTask> resolve_tasks(const std::string& file, const BatchFile& batch, const BatchOptions& options,
                                     bool report, BatchSummary& summary);

// The tasks as a run (or one shard of a cluster's runs) takes them: with a total budget
// each carries its share of an equal split of the total over all the tasks given, so that
// the shards, each spending its tasks' shares, together spend no more than the total;
// then only the shard's (none: all), the longest to tune first (batch/tune_cost.h).
std::vector<BatchTask> plan_tasks(std::vector<BatchTask> tasks, const BatchOptions& options,
                                  const std::optional<Shard>& shard);

// The tuning job of a task: the run's options, with the entry's own backend and budget
// where it gives them. The run's time limit is the whole run's, shared out by rounds, so
// no job has one of its own.
search::TuneRequest tune_request(const BatchTask& task, const BatchOptions& options);
// How a job's fields are named in messages: an entry's own budget as the file names it.
search::FieldNames field_names(const BatchEntry& entry, const BatchOptions& options);

}  // namespace pto::batch
