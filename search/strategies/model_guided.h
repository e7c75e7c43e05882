// ModelGuided: what topk and evolve share — a ScoredPool of candidates, proposals picked
// from it by corrected prediction (search/strategies/scored_pool.h), measurements fed
// back into it. A subclass fills the pool (topk: the whole space at once; evolve:
// generation by generation, in grow()).
//
// When the pool's stop rule says the search is done, the search first measures the
// steps around the measured best (knob_steps.h) that the analytical model predicts
// within kStepReach of it, and ends only when a best has been polished so. The analytical model can
// misprice one knob against the others where the effect it does not model depends on
// that knob, and the residual correction cannot learn what no measurement varied alone:
// on batch_matmul 8,8192,1024,1024 (ascend910b1) it predicts K at L1 of 256 10 % faster
// than 192, which simulates 4 % faster, so a search that only followed the ranking
// stopped at 256 (results/jit_transfer.md). A step that wins becomes the best to
// polish next, and may start the search again.
#pragma once

#include <random>
#include <set>
#include <string>
#include <vector>

#include "search/strategies/scored_pool.h"
#include "search/strategies/space_digits.h"
#include "search/strategy.h"

namespace pto::search {

class ModelGuided : public Strategy {
 public:
  ModelGuided(const SearchContext& context, std::string name)
      : context_(context), pool_(context), digits_(*context.space), rng_(context.seed), name_(std::move(name)) {}

  std::string name() const override { return name_; }
  std::vector<TileConfig> propose(size_t max) override;
  void observe(std::span<const TileConfig> configs, std::span<const measure::Measurement> results) override {
    pool_.observe(configs, results);
  }
  std::optional<double> best_unproposed_ns() const override;

 protected:
  // Adds candidates to the pool before each proposal (evolve breeds here).
  virtual void grow() {}

  // Successful measurements before the stop rule may end the search: a residual fitted
  // on fewer says little about the candidates not measured.
  static constexpr size_t kMinMeasured = 8;

  SearchContext context_;
  ScoredPool pool_;
  SpaceDigits digits_;
  std::mt19937_64 rng_;

 private:
  // Up to `max` of the steps around the measured best still to measure; their list is
  // made when that best is polished first.
  std::vector<size_t> polish(size_t max);
  // The steps from pool entry `best` worth measuring, best predicted first, measured
  // or not.
  std::vector<size_t> steps_from(size_t best);

  std::string name_;
  std::set<size_t> polished_;  // pool entries whose steps were listed
  std::vector<size_t> steps_;  // the listed steps not proposed yet, best first
};

}  // namespace pto::search
