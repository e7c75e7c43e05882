// random: feasible, distinct candidates in a random order, the same for the same seed —
// the baseline that shows what a model-guided strategy is worth at the same budget. It
// draws in growing rounds, each a prefix-extension of the last (SpaceGenerator::sample
// draws the same sequence for the same seed), so a small budget costs small draws.
#include "search/strategies/list_strategy.h"
#include "search/strategies/strategies.h"

namespace pto::search {

namespace {

constexpr size_t kFirstDraw = 256;

class Random : public ListStrategy {
 public:
  explicit Random(const SearchContext& context) : ListStrategy(context, "random") {}

 protected:
  bool extend() override {
    const size_t want = list_.empty() ? kFirstDraw : 4 * list_.size();
    if (exhausted_) return false;
    SpaceTally tally;
    std::vector<TileConfig> drawn = context_.space->sample(want, context_.seed, &tally);
    exhausted_ = drawn.size() < want;
    feasible_ = std::max<uint64_t>(feasible_, tally.distinct);
    if (drawn.size() <= list_.size()) return false;
    list_.insert(list_.end(), drawn.begin() + static_cast<std::ptrdiff_t>(list_.size()), drawn.end());
    return true;
  }

 private:
  bool exhausted_ = false;
};

}  // namespace

std::unique_ptr<Strategy> make_random(const SearchContext& context) { return std::make_unique<Random>(context); }

}  // namespace pto::search
