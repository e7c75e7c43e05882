// Strategy: the ask/tell interface every search strategy implements, as TVM
// MetaSchedule's SearchStrategy — the tuner asks for a batch of candidates (propose),
// measures them, and tells the strategy what came back (observe). A strategy never
// calls the runner or the store; the loop, the budget and the recording live in the
// tuner driver (search/tuner.h).
//
// Strategies: exhaustive (every feasible, distinct candidate: the ground truth), topk
// (model-ranked, refitted on what it measured), evolve (model-guided evolution for
// spaces too large to score whole), random (the baseline), and auto, which picks one
// of them by the size of the space.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/tile_config.h"
#include "cost_model/predictor.h"
#include "measure/measurement.h"
#include "search/space_generator.h"

namespace pto::search {

// What a strategy is given to search with; it outlives the strategy.
struct SearchContext {
  const SpaceGenerator* space = nullptr;
  // What the strategy ranks by: the analytical model (calibrated coefficients when there
  // are any) and its learned correction. The caller updates it with every measurement
  // before it tells the strategy (Predictor::update, then Strategy::observe), as the
  // tuner does: a strategy reads the predictor, it never refits it.
  const Predictor* predictor = nullptr;
  uint64_t seed = 1;
  // A candidate must be predicted to beat the measured best by more than this fraction
  // to be worth measuring: the backend's measured noise, or a fixed margin for a
  // deterministic backend.
  double noise = 0.01;
};

class Strategy {
 public:
  virtual ~Strategy() = default;
  virtual std::string name() const = 0;
  // Up to `max` candidates neither proposed nor observed before; empty when the strategy has nothing
  // left worth measuring (it has converged, or the space is exhausted).
  virtual std::vector<TileConfig> propose(size_t max) = 0;
  // The measurements of candidates it proposed (and of the baseline the tuner always
  // measures, and of the records an earlier search measured), in the order given.
  virtual void observe(std::span<const TileConfig> configs,
                       std::span<const measure::Measurement> results) = 0;
  // Distinct feasible candidates the strategy has seen in the space: all of them for
  // exhaustive and for topk on a space it scores whole, those drawn or bred otherwise.
  virtual uint64_t feasible_seen() const = 0;
  // The time the strategy expects of the best candidate it has not proposed yet (its
  // model's prediction, corrected by what it measured), so that a task scheduler can
  // weigh this search's headroom against another's; absent when it does not rank by a
  // model (exhaustive, random) or has no candidate left.
  virtual std::optional<double> best_unproposed_ns() const { return std::nullopt; }
};

std::vector<std::string> strategy_names();  // "auto", "topk", "evolve", "exhaustive", "random"

// Usage Error for an unknown name. "auto" resolves to a concrete strategy by the size of
// the space; the returned strategy's name() is the one picked.
std::unique_ptr<Strategy> make_strategy(const std::string& name, const SearchContext& context);

}  // namespace pto::search
