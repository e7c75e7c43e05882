// topk: score the whole space with the cost model, measure the best few plus a few
// random picks, re-rank by the predictor's correction refitted on what was measured
// (and on the op's stored correction, cost_model/predictor.h), repeat — until
// no candidate left is predicted to beat the measured best by more than the noise
// margin (search/strategies/scored_pool.h), or the tuner's budget ends it.
//
// "The whole space" is every feasible, distinct candidate when the space has at most
// kScoreWholeLimit candidates before analysis: all are scored, and the kPoolKeep
// predicted fastest (with the best of each parallelism stratum) make the pool. A larger
// space is represented by a seeded random draw of kScoreSample feasible, distinct
// candidates (auto picks evolve for those).
#include "search/strategies/model_guided.h"
#include "search/strategies/strategies.h"

namespace pto::search {

namespace {

constexpr size_t kScoreSample = 20'000;
constexpr size_t kPoolKeep = 20'000;

class TopK : public ModelGuided {
 public:
  explicit TopK(const SearchContext& context) : ModelGuided(context, "topk") {
    const SpaceGenerator& space = *context.space;
    if (space.size() <= kScoreWholeLimit) {
      feasible_ = pool_.add_space(kPoolKeep).distinct;
    } else {
      SpaceTally tally;
      pool_.add_all(space.sample(kScoreSample, context.seed, &tally));
      feasible_ = tally.distinct;
    }
  }

  uint64_t feasible_seen() const override { return feasible_; }

 private:
  uint64_t feasible_ = 0;
};

}  // namespace

std::unique_ptr<Strategy> make_topk(const SearchContext& context) { return std::make_unique<TopK>(context); }

}  // namespace pto::search
