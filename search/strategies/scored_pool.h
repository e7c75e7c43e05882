// ScoredPool: the candidates a model-guided strategy (topk, evolve) knows of, each with
// its program identity, the analytical prediction and its features, and what became of
// it (fresh, proposed, measured) — ranked by the context's predictor
// (cost_model/predictor.h), whose correction, refitted on every measurement the caller
// feeds it, re-ranks the candidates not yet measured.
//
// The ranking a strategy proposes from is the corrected prediction:
// log(analytical prediction) + correction(features). A candidate is worth measuring while
// it is predicted to beat the best measured time by more than the context's noise.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <random>
#include <span>
#include <unordered_map>
#include <vector>

#include "core/tile_config.h"
#include "measure/measurement.h"
#include "search/space_generator.h"
#include "search/strategy.h"

namespace pto::search {

class ScoredPool {
 public:
  explicit ScoredPool(const SearchContext& context) : context_(context) {}

  // Adds a candidate unless it is infeasible or a program the pool already holds;
  // returns its index when added.
  std::optional<size_t> add(const TileConfig& config);
  // add() for each, in order, with the same result; the cost model scores them on
  // parallel threads first (a topk pool scores the whole space: 78,000 candidates on a
  // 4096^3 matmul).
  void add_all(const std::vector<TileConfig>& configs);
  // Scores every candidate of the space (one analysis each, on parallel threads) and
  // adds the `keep` distinct ones the analytical model predicts fastest, and the best of each parallelism
  // stratum beyond them (pick() explores the strata), in index order. The rest are
  // predicted slower than all of those: a residual correction that lifts one of them
  // to the top would have to be larger than the spread of `keep` candidates. Returns
  // what the scan saw, as SpaceGenerator::for_each counts it.
  SpaceTally add_space(size_t keep);
  size_t size() const { return entries_.size(); }
  const TileConfig& config(size_t i) const { return entries_[i].config; }
  bool fresh(size_t i) const { return entries_[i].state == State::Fresh; }
  size_t fresh_count() const { return fresh_; }
  // Corrected log prediction, or the log of the measured time once measured.
  double log_time(size_t i) const;

  // Marks candidates proposed, so they are never proposed again.
  void mark_proposed(size_t i);
  // Records measurements (of candidates in the pool or not: the tuner's baseline joins
  // here) and re-ranks the fresh candidates by the predictor's correction, which the
  // caller has updated with them.
  void observe(std::span<const TileConfig> configs, std::span<const measure::Measurement> results);

  // Up to `max` fresh candidates worth measuring: the best by corrected prediction,
  // with about a quarter drawn at random among the better half of the other fresh ones
  // (exploration feeds the residual model candidates unlike the ones it already knows).
  // Once the search is done (search_done), the best-predicted fresh candidate of each
  // parallelism stratum (tasks of the busiest kernel, in powers of two) that nothing
  // measured or proposed is in yet and that is predicted within kStratumReach of the
  // measured best, best first, until none is left: the analytical model's error is
  // largest across that axis (a K-heavy matmul on 4 cores against 16: load imbalance
  // against shared L2 fills), and the residual model cannot correct along an axis it
  // has no samples on. A stratum's candidate that wins starts the search again. (Taking
  // the strata within every batch instead crowded out the random picks whose spread
  // keeps the stop rule honest: a 1024^3 matmul then stopped after 9 measurements at
  // 34.6 us instead of 25 at 32.8 us.)
  //
  // The search is done once at least `min_measured` were measured and either
  //  - no fresh candidate could beat the measured best by more than the noise margin:
  //    "could" is the corrected prediction less the model's error where the decision
  //    is: the larger of the correction's leave-one-out error over the kLocalRows
  //    best measured candidates and the error of the corrected predictions the last
  //    kLocalRows measured were proposed on. The second is what this workload's own
  //    finalists showed the model's error to be, out of sample; the first alone,
  //    a fit's error on rows it was fitted beside, stopped a 512,11008,4096 matmul
  //    after 17 measurements at 0.96 of what evolve found. (The error over all measured
  //    candidates is dominated by the slow ones exploration measured, and kept a
  //    4096^3 matmul searching a plateau of near-equal tiles for 80 measurements.) Or
  //  - the last `min_measured` * kPatienceRounds successful measurements, the model's
  //    own best picks among them, beat the best by no more than the noise margin: the
  //    model's optimism was put to the test and refuted (TVM's early stopping).
  std::vector<size_t> pick(size_t max, size_t min_measured, std::mt19937_64& rng) const;
  // Fresh candidates by corrected prediction, best first (at most `max`).
  std::vector<size_t> best_fresh(size_t max) const;
  // Indices of all candidates ordered by log_time, best first (at most `max`).
  std::vector<size_t> best_overall(size_t max) const;

 private:
  enum class State { Fresh, Proposed, Measured };
  struct Entry {
    TileConfig config;
    double log_predicted = 0;
    std::vector<double> features;
    double residual = 0;
    State state = State::Fresh;
    double log_measured = 0;
    int parallelism = 0;  // the parallelism stratum: round(log2(tasks)), see pick()
    std::optional<double> log_proposed;  // log_time when it was proposed
  };

  // What add() computes for a candidate before inserting it: its program (absent when
  // infeasible) and its entry (absent when the model finds it infeasible).
  struct Scored {
    std::optional<uint64_t> program;
    std::optional<Entry> entry;
  };
  Scored score(const TileConfig& config) const;
  // What add_space keeps of a candidate while it ranks the whole space: its program
  // (absent when infeasible to the compiler or the model), prediction and stratum.
  struct Glance {
    std::optional<uint64_t> program;
    double log_predicted = 0;
    int parallelism = 0;
  };
  Glance glance(const TileConfig& config) const;
  static std::vector<uint64_t> kept_indices(const std::vector<Glance>& glances, std::vector<uint64_t> distinct,
                                            size_t keep);
  std::optional<size_t> insert(Scored scored);
  std::optional<size_t> find_or_add(const TileConfig& config);
  // The `max` best of `ids` by log_time, best first; ties by index.
  std::vector<size_t> best_of(std::vector<size_t> ids, size_t max) const;
  // Takes up the predictor's current correction for every candidate not measured.
  void rerank();
  // Whether the stop rule of pick() holds.
  bool search_done(const std::vector<size_t>& ranked, size_t min_measured) const;
  // The best of each parallelism stratum not yet tried, in the order of `ranked` (the
  // fresh candidates, best first), while predicted within kStratumReach of the measured
  // best; at most `max`.
  std::vector<size_t> untried_strata(const std::vector<size_t>& ranked, size_t max) const;
  // The rms error, in log time, of the corrected predictions the last kLocalRows
  // measured candidates were proposed on: the model's error out of sample, as it
  // stands now, on the picks it ranked best.
  double finalist_error() const;
  // Counts a successful measurement towards the stagnation rule.
  void note_progress(double log_measured);

  SearchContext context_;
  std::vector<Entry> entries_;
  std::unordered_map<uint64_t, size_t> by_program_;
  size_t fresh_ = 0;
  size_t measured_ok_ = 0;
  std::optional<double> best_log_measured_;
  // The best time when the search last gained more than the noise margin, and the
  // successful measurements since.
  std::optional<double> gain_anchor_;
  size_t since_gain_ = 0;
  std::vector<size_t> measured_order_;  // entries in the order they were measured
};

}  // namespace pto::search
