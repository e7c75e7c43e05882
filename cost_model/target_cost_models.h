// TargetCostModels: the cost model of many graphs on a few targets, each target with its
// default coefficients (Coefficients::defaults) — what the JIT's lookups, which price
// shape after shape (db/config_lookup.h's transfer, search/model_pick.h), reuse: the
// first graph's model of a target is kept and every later one made from it
// (CostModel::for_graph), so that a target's description is hashed and tabulated once,
// not per shape. Targets are identified by name within one instance (a process that
// changes a target's description under the same name makes a new one). Thread-safe.
#pragma once

#include <optional>
#include <shared_mutex>
#include <string>
#include <unordered_map>

#include "core/target.h"
#include "core/tensor_graph.h"
#include "cost_model/estimate.h"

namespace pto {

class TargetCostModels {
 public:
  // nullopt where the model cannot describe the target for this graph (a rate it
  // divides by is not positive, no Cube fractal for a matmul's dtype).
  std::optional<CostModel> for_graph(const TensorGraph& graph, const Target& t);

 private:
  std::shared_mutex mutex_;
  std::unordered_map<std::string, CostModel> by_target_;  // by name; never erased
};

}  // namespace pto
