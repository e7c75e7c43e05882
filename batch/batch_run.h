// BatchRun: the engine of `pto-tune batch` — one run of a batch's tasks in this
// process, into a TuningStore, with a journal beside it. cli/cmd_batch.cpp only turns
// flags into BatchOptions, starts the worker processes and prints; tests run the engine
// in-process against a search::MemoryStore.
//
// How a run goes. Each workload is tuned through a search::TuningSession built from its
// job (batch::tune_request, resolved by search::resolve), either
//   in order        one after another, each to its own budget (or its share of a total
//                   split evenly), as this process claims them (a ClaimFile shared by the
//                   workers) or all of them in the order given; or
//   scheduled       in rounds a TaskScheduler hands out (a total budget shared by expected
//                   gain, or a time limit; BatchOptions::scheduled).
// The sessions held open at once are bounded (a session of a large space holds its
// scored candidates); one let go is opened again from its records, which measures
// nothing twice.
//
// Resume. A workload whose store holds a fresh usable record (search::is_tuned) is
// skipped unless retune; a stale one, however fast, does not count. A workload the
// journal says a run started and never finished (killed) goes on from its stored
// records whatever they hold, measuring none of them again; with a shared budget what
// the journal's workloads have stored counts as spent. The tuner commits every
// measurement as it comes, so a killed run loses at most the measurement in flight.
//
// Stopping. options.stop ends the run after the measurement in flight: the workloads
// being tuned end as interrupted, those not begun as not_started; everything measured
// is in the store. A failed tune (a usage, infeasible or internal Error of one workload)
// ends that workload as failed and the run goes on; a Db or Io Error ends the run.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "batch/batch_options.h"
#include "batch/batch_summary.h"
#include "batch/batch_task.h"
#include "batch/claim_file.h"
#include "search/tuning_store.h"

namespace pto::batch {

class BatchRun {
 public:
  // `journal`: the journal's file (journal_path of the database); `claims`: where a
  // worker claims its next workload, null: this process takes them all. Each must
  // outlive the run, as must the options and the store.
  BatchRun(const BatchOptions& options, search::TuningStore& store, const std::string& journal,
           BatchSummary& summary, const ClaimFile* claims = nullptr);
  ~BatchRun();
  BatchRun(const BatchRun&) = delete;
  BatchRun& operator=(const BatchRun&) = delete;

  // Runs the tasks (those of plan_tasks) once and adds each workload this process took
  // to the summary: its outcome, its line in summary.results (in the order given) and
  // the busy time. Called once per BatchRun.
  void run(const std::vector<BatchTask>& tasks);

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace pto::batch
