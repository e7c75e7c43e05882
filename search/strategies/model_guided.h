// ModelGuided: what topk and evolve share — a ScoredPool of candidates, proposals picked
// from it by corrected prediction (search/strategies/scored_pool.h), measurements fed
// back into it. A subclass fills the pool (topk: the whole space at once; evolve:
// generation by generation, in grow()).
#pragma once

#include <random>
#include <string>

#include "search/strategies/scored_pool.h"
#include "search/strategy.h"

namespace pto::search {

class ModelGuided : public Strategy {
 public:
  ModelGuided(const SearchContext& context, std::string name)
      : context_(context), pool_(context), rng_(context.seed), name_(std::move(name)) {}

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
  std::mt19937_64 rng_;

 private:
  std::string name_;
};

}  // namespace pto::search
