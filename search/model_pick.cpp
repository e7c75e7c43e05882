#include "search/model_pick.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/error.h"
#include "core/op_library.h"
#include "search/space_generator.h"

namespace pto::search {

ModelPickProvider::ModelPickProvider(TargetPredictors::Sources sources, size_t candidates)
    : candidates_(candidates), predictors_(std::move(sources)) {}

std::optional<ConfigChoice> ModelPickProvider::lookup(const Workload& w, const Target& t) {
  const std::optional<Predictor> model = predictors_.for_graph(build_graph(w), t, w.op);
  if (!model) return std::nullopt;  // a target the model cannot describe: the default will do
  try {
    const SpaceGenerator space = SpaceGenerator::for_workload(w, t);
    std::vector<TileConfig> candidates = space.sample(candidates_, /*seed=*/1);
    candidates.push_back(space.baseline());
    std::vector<double> predicted(candidates.size());
    model->score(candidates, predicted);
    const size_t best = std::min_element(predicted.begin(), predicted.end()) - predicted.begin();
    if (!std::isfinite(predicted[best])) return std::nullopt;
    return ConfigChoice{candidates[best], ConfigSource::Model, {}, false, {}};
  } catch (const Error&) {
    return std::nullopt;
  }
}

}  // namespace pto::search
