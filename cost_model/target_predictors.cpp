#include "cost_model/target_predictors.h"

#include <mutex>

#include "core/error.h"

namespace pto {

Predictor TargetPredictors::make(const TensorGraph& graph, const Target& t, const std::string& op) const {
  std::optional<Coefficients> coefficients;
  for (const std::string& backend : sources_.backends)
    if (!coefficients && !sources_.calibration_dir.empty())
      coefficients = usable_calibration(sources_.calibration_dir, t, backend);
  Predictor predictor(CostModel(graph, t, coefficients.value_or(Coefficients::defaults(t))));
  const std::string fingerprint = t.fingerprint();
  for (const std::string& backend : sources_.backends) {
    const auto it = sources_.corrections.find(CorrectionKey{op, fingerprint, backend});
    if (it == sources_.corrections.end()) continue;
    predictor.seed(it->second);
    break;
  }
  return predictor;
}

const Predictor& TargetPredictors::kept(const TensorGraph& graph, const Target& t, const std::string& op) {
  const std::pair<std::string, std::string> key{t.name, op};
  {
    std::shared_lock lock(mutex_);
    if (const auto it = by_target_op_.find(key); it != by_target_op_.end())
      return it->second;  // never erased: the reference outlives the lock
  }
  // A model this graph cannot have (a dtype without a Cube fractal) throws here and is not
  // kept: another graph of the op may fit.
  Predictor made = make(graph, t, op);
  std::unique_lock lock(mutex_);
  return by_target_op_.try_emplace(key, std::move(made)).first->second;
}

std::optional<Predictor> TargetPredictors::for_graph(const TensorGraph& graph, const Target& t, const std::string& op) {
  try {
    return kept(graph, t, op).for_graph(graph);
  } catch (const Error&) {
    return std::nullopt;
  }
}

}  // namespace pto
