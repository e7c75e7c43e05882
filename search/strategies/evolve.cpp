// evolve: model-guided evolutionary search for spaces too large to score whole (attention
// with its fusion variants, large matmuls with every L2 grouping). A candidate is a
// point in the space's mixed-radix product (SpaceGenerator::at / index_of); a child
// differs from a parent in one axis (a step to a neighbouring choice, or any choice),
// or takes each axis from one of two parents. On flash_attention's attention and stages
// axes, lists of several knobs' product, a neighbouring choice is one that changes one
// or two knobs (search/strategies/knob_neighbours.h), not the next index. Parents are
// the best candidates known — measured time where measured, corrected prediction
// otherwise — so the cost model is the fitness filter and the measurements correct it
// through the predictor's learned correction.
//
// Each proposal first breeds kGenerations generations of kChildren tries into the pool,
// then picks from the pool as topk does; the search ends when nothing bred or known is
// predicted to beat the measured best by more than the noise margin.
#include "search/strategies/knob_neighbours.h"
#include "search/strategies/model_guided.h"
#include "search/strategies/space_digits.h"
#include "search/strategies/strategies.h"

namespace pto::search {

namespace {

constexpr size_t kInitialSample = 512;
constexpr size_t kParents = 32;
constexpr size_t kChildren = 256;
constexpr int kGenerations = 2;
constexpr double kCrossoverRate = 0.2;
constexpr double kNeighbourRate = 0.5;

class Evolve : public ModelGuided {
 public:
  explicit Evolve(const SearchContext& context) : ModelGuided(context, "evolve") {
    for (size_t axis : {kAttentionAxis, kStagesAxis})
      neighbours_[axis] = knob_neighbours(knob_table(context.space->axes(), axis));
    SpaceTally tally;
    for (const TileConfig& c : context.space->sample(kInitialSample, context.seed, &tally)) pool_.add(c);
    pool_.add(context.space->baseline());  // the default seeds the population too
  }

  uint64_t feasible_seen() const override { return pool_.size(); }

 protected:
  void grow() override {
    for (int g = 0; g < kGenerations; ++g) breed();
  }

 private:
  void breed() {
    const std::vector<size_t> parents = pool_.best_overall(kParents);
    if (parents.empty()) return;
    std::uniform_real_distribution<double> unit(0, 1);
    for (size_t k = 0; k < kChildren; ++k) {
      const std::optional<Digits> a = digits_.of(pool_.config(parents[rng_() % parents.size()]));
      if (!a) continue;
      Digits child = *a;
      if (unit(rng_) < kCrossoverRate) {
        const std::optional<Digits> b = digits_.of(pool_.config(parents[rng_() % parents.size()]));
        if (b)
          for (size_t i = 0; i < kAxes; ++i) child[i] = (rng_() & 1) ? (*b)[i] : child[i];
      }
      mutate(child, unit(rng_) < kNeighbourRate);
      pool_.add(digits_.at(child));
    }
  }

  // Changes one axis with more than one choice: to a neighbouring choice or any other.
  void mutate(Digits& d, bool neighbour) {
    std::vector<size_t> movable;
    for (size_t i = 0; i < kAxes; ++i)
      if (digits_.radix()[i] > 1) movable.push_back(i);
    if (movable.empty()) return;
    const size_t axis = movable[rng_() % movable.size()];
    const uint64_t r = digits_.radix()[axis];
    const std::vector<std::vector<uint32_t>>& near = neighbours_[axis];
    if (neighbour && d[axis] < near.size() && !near[d[axis]].empty()) {
      d[axis] = near[d[axis]][rng_() % near[d[axis]].size()];
    } else if (neighbour) {
      d[axis] = (d[axis] == 0 || (d[axis] + 1 < r && (rng_() & 1))) ? d[axis] + 1 : d[axis] - 1;
    } else {
      d[axis] = (d[axis] + 1 + rng_() % (r - 1)) % r;  // any choice but the current one
    }
  }

  // Per axis, each choice's knob neighbours; empty for axes stepped by index.
  std::array<std::vector<std::vector<uint32_t>>, kAxes> neighbours_;
};

}  // namespace

std::unique_ptr<Strategy> make_evolve(const SearchContext& context) { return std::make_unique<Evolve>(context); }

}  // namespace pto::search
