// exhaustive: every feasible, distinct candidate of the space in index order — the
// ground truth the other strategies are judged against.
#include "search/strategies/list_strategy.h"
#include "search/strategies/strategies.h"

namespace pto::search {

namespace {

class Exhaustive : public ListStrategy {
 public:
  explicit Exhaustive(const SearchContext& context) : ListStrategy(context, "exhaustive") {
    SpaceTally tally;
    list_ = context.space->enumerate(UINT64_MAX, &tally);
    feasible_ = tally.distinct;
  }
};

}  // namespace

std::unique_ptr<Strategy> make_exhaustive(const SearchContext& context) {
  return std::make_unique<Exhaustive>(context);
}

}  // namespace pto::search
