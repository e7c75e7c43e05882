#include "search/strategy.h"

#include "core/error.h"
#include "search/strategies/strategies.h"

namespace pto::search {

namespace {

// auto: exhaustive for spaces this small (before analysis) ...
constexpr uint64_t kExhaustiveLimit = 64;
// ... topk while it can be scored whole (kScoreWholeLimit), evolve beyond.

std::unique_ptr<Strategy> make_auto(const SearchContext& context) {
  const uint64_t size = context.space->size();
  if (size <= kExhaustiveLimit) return make_exhaustive(context);
  if (size <= score_whole_limit(*context.space)) return make_topk(context);
  return make_evolve(context);
}

}  // namespace

std::vector<std::string> strategy_names() { return {"auto", "topk", "evolve", "exhaustive", "random"}; }

std::unique_ptr<Strategy> make_strategy(const std::string& name, const SearchContext& context) {
  if (!context.space || !context.predictor) usage_error("strategy: the search context needs a space and a predictor");
  if (!(context.noise >= 0 && context.noise < 1))
    usage_error("strategy: noise must be in [0, 1), got " + std::to_string(context.noise));
  if (name == "auto") return make_auto(context);
  if (name == "topk") return make_topk(context);
  if (name == "evolve") return make_evolve(context);
  if (name == "exhaustive") return make_exhaustive(context);
  if (name == "random") return make_random(context);
  usage_error("unknown strategy '" + name + "' (known: auto, topk, evolve, exhaustive, random)");
}

}  // namespace pto::search
