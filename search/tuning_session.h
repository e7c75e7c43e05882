// TuningSession: one workload's tuning job, run in rounds — what a task scheduler
// (batch/task_scheduler.h) drives when it shares one budget across many workloads and
// decides after every round which workload gets the next measurements. tune()
// (search/tuner.h) is the same job run to its end in one call: one loop, one set of
// rules (budget, early stop, the default always measured, every measurement committed,
// the finalists re-measured on a noisy backend).
//
// A session keeps its strategy between rounds, so a round goes on where the last one
// stopped and never measures a candidate twice. It can also start from the records of
// an earlier session of the same workload (a killed batch run, or a session the batch
// let go to bound its memory): they count as searched (measured() includes them; the
// result's counts call them reused), the default among them is not measured again, and
// the strategy is told all of them before it proposes anything. tune() starts the same
// way from the store's records of the key.
//
// Unlike tune(), a session does not start from the op's correction in the store (it adds
// its rows to it at its end, as tune() does): which sessions of a batch finished first
// would then change what the others find, and a batch split over shards or workers
// would tune differently from the same batch in one process.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "core/target.h"
#include "core/workload.h"
#include "measure/runner.h"
#include "search/strategy.h"
#include "search/tuner.h"
#include "search/tuning_record.h"
#include "search/tuning_store.h"

namespace pto::search {

class TuningSession {
 public:
  // `options.budget` and `options.time_limit_s` are ignored: advance() gives each round
  // its own. `prior`: records of this workload (same key, current versions) measured
  // by an earlier session, in the order they were measured. Usage Error as tune() for
  // bad options; runner, store and target must outlive the session.
  TuningSession(const Workload& w, const Target& target, measure::Runner& runner, TuningStore& store,
                const TuneOptions& options, std::vector<TuningRecord> prior = {});
  ~TuningSession();
  TuningSession(const TuningSession&) = delete;
  TuningSession& operator=(const TuningSession&) = delete;

  // Measures up to `measurements` more candidates (the default config's first, unless
  // a prior record holds it) and returns how many it measured: fewer when the strategy
  // has nothing left worth measuring (exhausted() is then true), when the stop flag is
  // set, or when `seconds_left` (> 0) runs out. Internal Error, as tune(), when the
  // default config cannot be measured.
  int64_t advance(int64_t measurements, double seconds_left = 0);

  // The strategy has nothing left worth measuring: more rounds would measure nothing.
  bool exhausted() const { return exhausted_; }
  // Search measurements so far, prior ones included (not the finalists' re-measurement).
  int64_t measured() const;
  // Every search record so far, prior ones first, in the order measured.
  const std::vector<TuningRecord>& records() const;
  // The best usable measured time and the default config's (ns); 0 before the first
  // round.
  double best_ns() const;
  double default_ns() const;
  // The strategy's expected time of its best candidate not yet measured (its model
  // corrected by what it measured), absent when it does not rank by a model, has no
  // candidate left, or has not searched yet in this session (Strategy::best_unproposed_ns).
  std::optional<double> best_unmeasured_ns() const;

  // Candidates the strategy holds (Strategy::feasible_seen: the scored space of topk),
  // for a caller bounding the memory of many sessions.
  uint64_t candidates_held() const;

  // Ends the session: the winner, on a noisy backend from the finalists' interleaved
  // re-measurement, as tune() returns it (the default is measured first when no round
  // and no prior record did; counts.feasible is 0 when this session never searched).
  TuneResult finish();

 private:
  class Job;
  void begin();  // takes the prior records, measures the default if they lack it
  const Strategy* made_strategy() const;  // null before the first search
  TuneOptions options_;  // the job reads the round's budget and time limit from here
  std::vector<TuningRecord> prior_;
  std::unique_ptr<Job> job_;
  bool started_ = false;
  bool exhausted_ = false;
};

}  // namespace pto::search
