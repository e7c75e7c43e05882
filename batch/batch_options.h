// BatchOptions: what a batch run is asked for, apart from its file — the settings that
// `pto-tune batch` reads from its flags (cli/cmd_batch.cpp) and a test sets directly, so
// that the engine (batch/batch_run.h) knows nothing of how they were spelled. An entry of
// the file may give its own target, backend and budget; these are the rest's.
//
// Budgets: `budget` is each workload's own; `total_budget` is the whole file's (every
// shard and worker together) and is shared out in rounds by expected gain
// (batch/task_scheduler.h), or evenly with `equal_split`; `time_limit_s` alone shares
// out the wall time the same way.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "measure/runner.h"
#include "search/tune_request.h"

namespace pto::batch {

struct BatchTask;

struct BatchOptions {
  std::string target = "host";           // a built-in name or a file, for entries without target=
  std::optional<std::string> backend;    // for entries without backend=; none: the target's default
  std::string strategy = "auto";
  int64_t budget = 16;                   // measurements per workload without budget= (0: the strategy decides)
  std::optional<int64_t> total_budget;   // measurements for the whole file
  bool equal_split = false;              // with total_budget: split it evenly instead
  double time_limit_s = 0;               // wall time of the whole run; 0 = none
  uint64_t seed = 1;                     // of each search and its runners' input data
  bool retune = false;                   // tune workloads that hold a fresh record again
  bool strict = false;                   // a bad entry is a usage Error, not a skipped entry
  measure::RunnerOptions runner;         // how candidates are timed (its seed is `seed`)
  search::FieldNames names;              // how the caller spells budget, strategy and time limit

  // Polled after every measurement: set, the run stops after the measurement in flight.
  const std::atomic<bool>* stop = nullptr;
  // (done, planned): workloads, or with a total budget measurements.
  std::function<void(int64_t done, int64_t planned)> progress;
  // What the run says about one entry or workload (a bad entry skipped, a duplicate, a
  // failed tune), one line without the program's name; none: said to nobody.
  std::function<void(const std::string& message)> warn;
  // Called once per workload, before its first measurement in this run (the CLI stores
  // the target in its database so the JIT's lookup finds it).
  std::function<void(const BatchTask& task)> on_start;

  // Whether the run shares one budget or one stretch of time out in rounds (else each
  // workload is tuned to its own budget, in order).
  bool scheduled() const { return total_budget ? !equal_split : time_limit_s > 0; }
};

// The rules of the fields every workload's job shares (search/tune_request.h), checked
// before the file is read: a bad one is the run's usage Error, not each entry's.
void check(const BatchOptions& options);

}  // namespace pto::batch
