// The concrete strategies behind make_strategy (search/strategy.h), one file each under
// search/strategies/. Only search/strategy.cpp and the tests construct them by name.
#pragma once

#include <cstdint>
#include <memory>

#include "search/space_generator.h"
#include "search/strategy.h"

namespace pto::search {

// Spaces up to this many candidates (before analysis) are analyzed and scored whole by
// topk, about 2.5 us each on one core; auto picks evolve for larger ones.
inline constexpr uint64_t kScoreWholeLimit = 1'500'000;
// flash_attention's candidates take milliseconds each to analyze (its loop's distinct
// steps are emitted and counted: bench/cost_model_bench Score/flash_attention_*), so its
// spaces are scored whole only up to this many.
inline constexpr uint64_t kScoreWholeAttentionLimit = 2'000;

inline uint64_t score_whole_limit(const SpaceGenerator& space) {
  const bool attention = !space.axes().attention.empty() && space.axes().attention.front().has_value();
  return attention ? kScoreWholeAttentionLimit : kScoreWholeLimit;
}

// Every feasible, distinct candidate, in index order: the ground truth.
std::unique_ptr<Strategy> make_exhaustive(const SearchContext& context);
// Feasible, distinct candidates drawn at random: the baseline a model must beat.
std::unique_ptr<Strategy> make_random(const SearchContext& context);
// The whole space scored by the model, the best measured first, refitted as it goes.
std::unique_ptr<Strategy> make_topk(const SearchContext& context);
// Model-guided evolution along the space's axes, for spaces too large to score whole.
std::unique_ptr<Strategy> make_evolve(const SearchContext& context);

}  // namespace pto::search
