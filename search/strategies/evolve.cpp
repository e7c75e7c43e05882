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
#include <array>

#include "search/strategies/knob_neighbours.h"
#include "search/strategies/model_guided.h"
#include "search/strategies/strategies.h"

namespace pto::search {

namespace {

constexpr size_t kInitialSample = 512;
constexpr size_t kParents = 32;
constexpr size_t kChildren = 256;
constexpr int kGenerations = 2;
constexpr double kCrossoverRate = 0.2;
constexpr double kNeighbourRate = 0.5;

// fusion, cube, vec, k_split, l2_group, nbuffer, reduce, attention, stages: index_of's order
constexpr size_t kAxes = 9;
constexpr size_t kAttentionAxis = 7, kStagesAxis = 8;
using Digits = std::array<uint64_t, kAxes>;

class Evolve : public ModelGuided {
 public:
  explicit Evolve(const SearchContext& context) : ModelGuided(context, "evolve") {
    const SpaceAxes& a = context.space->axes();
    radix_ = {a.fusion.size(), a.cube.size(),   a.vec.size(),       a.k_split.size(), a.l2_group.size(),
              a.nbuffer.size(), a.reduce.size(), a.attention.size(), a.stages.size()};
    neighbours_[kAttentionAxis] = knob_neighbours(knob_table(a.attention));
    neighbours_[kStagesAxis] = knob_neighbours(knob_table(a.stages));
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
      const std::optional<Digits> a = digits(pool_.config(parents[rng_() % parents.size()]));
      if (!a) continue;
      Digits child = *a;
      if (unit(rng_) < kCrossoverRate) {
        const std::optional<Digits> b = digits(pool_.config(parents[rng_() % parents.size()]));
        if (b)
          for (size_t i = 0; i < kAxes; ++i) child[i] = (rng_() & 1) ? (*b)[i] : child[i];
      }
      mutate(child, unit(rng_) < kNeighbourRate);
      pool_.add(context_.space->at(index(child)));
    }
  }

  // Changes one axis with more than one choice: to a neighbouring choice or any other.
  void mutate(Digits& d, bool neighbour) {
    std::vector<size_t> movable;
    for (size_t i = 0; i < kAxes; ++i)
      if (radix_[i] > 1) movable.push_back(i);
    if (movable.empty()) return;
    const size_t axis = movable[rng_() % movable.size()];
    const uint64_t r = radix_[axis];
    const std::vector<std::vector<uint32_t>>& near = neighbours_[axis];
    if (neighbour && d[axis] < near.size() && !near[d[axis]].empty()) {
      d[axis] = near[d[axis]][rng_() % near[d[axis]].size()];
    } else if (neighbour) {
      d[axis] = (d[axis] == 0 || (d[axis] + 1 < r && (rng_() & 1))) ? d[axis] + 1 : d[axis] - 1;
    } else {
      d[axis] = (d[axis] + 1 + rng_() % (r - 1)) % r;  // any choice but the current one
    }
  }

  std::optional<Digits> digits(const TileConfig& c) const {
    std::optional<uint64_t> i = context_.space->index_of(c);
    if (!i) return std::nullopt;
    Digits d{};
    for (size_t k = kAxes; k-- > 0;) {
      d[k] = *i % radix_[k];
      *i /= radix_[k];
    }
    return d;
  }

  uint64_t index(const Digits& d) const {
    uint64_t i = 0;
    for (size_t k = 0; k < kAxes; ++k) i = i * radix_[k] + d[k];
    return i;
  }

  template <typename Choice>
  static std::vector<std::vector<int64_t>> knob_table(const std::vector<Choice>& choices) {
    std::vector<std::vector<int64_t>> table;
    for (const Choice& c : choices) table.push_back(knobs_of(c));
    return table;
  }

  Digits radix_{};
  // Per axis, each choice's knob neighbours; empty for axes stepped by index.
  std::array<std::vector<std::vector<uint32_t>>, kAxes> neighbours_;
};

}  // namespace

std::unique_ptr<Strategy> make_evolve(const SearchContext& context) { return std::make_unique<Evolve>(context); }

}  // namespace pto::search
