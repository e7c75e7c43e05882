#include "cost_model/target_cost_models.h"

#include <mutex>

#include "core/error.h"

namespace pto {

std::optional<CostModel> TargetCostModels::for_graph(const TensorGraph& graph, const Target& t) {
  try {
    {
      std::shared_lock lock(mutex_);
      if (const auto it = by_target_.find(t.name); it != by_target_.end()) {
        const CostModel& kept = it->second;  // never erased: the reference outlives the lock
        lock.unlock();
        return kept.for_graph(graph);
      }
    }
    CostModel model(graph, t, Coefficients::defaults(t));
    std::unique_lock lock(mutex_);
    return by_target_.emplace(t.name, std::move(model)).first->second.for_graph(graph);
  } catch (const Error&) {
    return std::nullopt;
  }
}

}  // namespace pto
