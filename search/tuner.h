// The tuner driver: joins the space, the cost model, a strategy, a runner and a store
// into one tuning job for one workload. The CLI, the batch command and the Python
// package all call tune(); none of them re-implements the loop.
//
//   space + model ──► strategy.propose ──► runner.measure (a batch) ──► store.commit
//        ▲                                          │
//        └──────────── strategy.observe ◄───────────┘       until converged / budget / time / stop
//
// The store is the search's memory: the fresh records it already holds for the
// workload's key (same target fingerprint, backend and versions) are taken as measured
// — the strategy is told them, they count against the budget, and none is measured
// again — so a rerun of a tuned workload measures nothing new unless told to retune.
// The store also keeps what the predictor (cost_model/predictor.h) learned of the op:
// a workload it holds no records of starts from the rows earlier jobs of the op left
// there (their correction as a prior), and every job adds its own rows at its end.
//
// The op's default config (what a PyPTO user hand-picks today) is always measured (or
// remembered); the winner is never slower than it. On a noisy backend the finalists are re-measured
// interleaved and the winner chosen from that, with its spread. Every measurement is
// committed to the store on its own as it arrives, and the stop flag and the time
// limit are checked after each, so a stopped job finishes the measurement in flight and
// a killed one (SIGKILL) loses at most that one. The strategy's noise margin is the default's measured relative spread on a
// noisy backend, and a fixed 1% on a deterministic one (simulated results: sim, model);
// search/tuner.cpp says why.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/target.h"
#include "core/workload.h"
#include "cost_model/coefficients.h"
#include "measure/runner.h"
#include "search/tuning_record.h"
#include "search/tuning_store.h"

namespace pto::search {

struct TuneOptions {
  std::string strategy = "auto";
  // Search measurements, the default's included; 0 = the strategy decides (exhaustive
  // and random then measure every feasible candidate). On a noisy backend the
  // finalists' interleaved re-measurement comes on top: at most `finalists` more.
  int64_t budget = 0;
  double time_limit_s = 0;     // wall time; 0 = none
  uint64_t seed = 1;
  size_t batch_size = 8;       // candidates per runner call
  size_t finalists = 3;        // re-measured interleaved on a noisy backend
  // Re-measures the finalists on a noisy backend; absent = the search's runner. The
  // search can then run with few, short repetitions (measure::search_options): it
  // only needs a ranking, while the winner and its spread come from this runner's
  // full-length interleaved timing. Same backend and target as the search's runner.
  measure::Runner* finalist_runner = nullptr;
  // Polled after every measurement: set it (e.g. from SIGINT) to stop after the
  // measurement in flight and keep everything measured so far (no finalist
  // re-measurement then; one already under way is finished, its results come together).
  const std::atomic<bool>* stop = nullptr;
  // Called after each measurement: (measured so far, planned total or 0 when unknown).
  std::function<void(int64_t done, int64_t planned)> progress;
  // The cost model's coefficients for the strategies' predictions and the records'
  // predicted_ns: the calibrated ones for (target, backend) when there are any; absent =
  // the target's datasheet defaults. The caller looks them up (cost_model/ owns where
  // calibrations live).
  std::optional<Coefficients> coefficients;
  // Measure again what the store already holds fresh records of (a tune() only; a
  // TuningSession is handed its records): for a backend or host that changed under the
  // same fingerprint, or to see the spread of a noisy one.
  bool retune = false;
};

struct TuneCounts {
  uint64_t total = 0;          // candidates in the space (the product of its axes)
  uint64_t feasible = 0;       // distinct feasible candidates seen by the space
  int64_t measured = 0;        // runner results of this job, the default's and re-measurements included
  int64_t reused = 0;          // records of earlier jobs taken instead of measuring (the store's, a session's prior)
  std::map<std::string, int64_t> failed;  // status name -> count
  int64_t failed_total() const;
};

struct TuneResult {
  Workload workload;
  std::string target_name, target_fingerprint, backend, strategy;  // strategy as picked
  TuningRecord best;           // never slower than the default
  // The op's default config, measured; INFEASIBLE (with why) when it does not fit the
  // target, and then the search ran without it and there is no speedup.
  TuningRecord baseline;
  double speedup_vs_default = 1;  // baseline time / best time; 0 without a default
  bool has_default() const { return baseline.usable(); }
  double best_spread = 0;      // relative spread of the winner's timing (noisy backends)
  TuneCounts counts;
  // Best measured time after each measurement, for convergence plots.
  std::vector<double> best_so_far_ns;
  double elapsed_s = 0;
  bool stopped = false;        // by `stop` or the time limit before convergence
  std::string store_location;

  // The CLI's --json: workload, target, backend, strategy, best {config, provenance,
  // its time as measured_ns, simulated_ns or predicted_ns by that provenance, and the
  // model's predicted_ns beside a time that is not one}, default {config, feasible,
  // provenance, its time likewise | why}, speedup_vs_default (null without a default),
  // candidates {total, feasible, measured, reused, failed}, elapsed_s, db.
  nlohmann::json to_json() const;
};

// Tunes `w` on `target` with `runner`, committing every measurement to `store`, from
// the fresh records `store` already holds for its key (unless options.retune).
// (search/tuning_session.h runs the same job a round at a time.)
// Throws a Usage Error for a bad option or workload before any measurement, an
// Infeasible Error when neither the default nor any candidate fits the target, and an
// Internal Error when the default fits but cannot be measured.
TuneResult tune(const Workload& w, const Target& target, measure::Runner& runner, TuningStore& store,
                const TuneOptions& options);

}  // namespace pto::search
