// The `model` backend: the cost model's prediction only, for dry runs and CI. Nothing
// is compiled or run; results say `predicted` (and `simulated`: not measured), and an
// infeasible config comes back INFEASIBLE with the rules it breaks. It predicts the
// target's default backend (sim for an NPU, cpu for the host) with that backend's
// calibration.
#include <cmath>

#include <nlohmann/json.hpp>

#include "core/compile.h"
#include "core/op_library.h"
#include "measure/backends.h"
#include "measure/model_estimate.h"

namespace pto::measure {

namespace {

class ModelRunner : public Runner {
 public:
  ModelRunner(Target target, Coefficients coefficients)
      : target_(std::move(target)), coefficients_(std::move(coefficients)) {}

  std::string name() const override { return "model"; }

  std::vector<Measurement> measure(const Workload& w, const std::vector<TileConfig>& candidates,
                                   const OnResult& on_result) override {
    const Predictor predictor(CostModel(build_graph(w), target_, coefficients_));
    std::vector<Measurement> results;
    for (const TileConfig& config : candidates) {
      Prediction p = predict(predictor, config, name());
      Measurement& m = p.measurement;
      m.simulated = true;
      m.predicted = true;
      if (m.ok()) {
        m.stats = {m.predicted_ns, m.predicted_ns, m.predicted_ns, 1};
        m.detail_json = p.estimate->to_json().dump();
        attach_model_estimate(m, std::move(*p.estimate));
      }
      stamp(m);
      results.push_back(std::move(m));
      if (on_result && !on_result(results.size() - 1, results.back())) break;
    }
    return results;
  }

 private:
  Target target_;
  Coefficients coefficients_;
};

}  // namespace

Prediction predict(const Predictor& predictor, const TileConfig& config, const std::string& backend) {
  Prediction p;
  Measurement& m = p.measurement;
  m.backend = backend;
  const CostModel& model = predictor.model();
  try {
    const TilingSummary summary = model.analyze(config);
    if (const auto too_large = summary.feasible ? program_too_large(summary, config) : std::nullopt) {
      m.status = Status::INFEASIBLE;  // compile refuses it, as the other backends would find
      m.error = *too_large;
      return p;
    }
    p.estimate = model.estimate(summary, config);
  } catch (const std::exception& e) {
    reject(m, e);
    return p;
  }
  if (!p.estimate->feasible) {
    m.status = Status::INFEASIBLE;
    m.error = format_violations(p.estimate->violations);
    return p;
  }
  m.predicted_ns = predictor.predict_ns(*p.estimate, config);
  return p;
}

std::unique_ptr<Runner> make_model_runner(const Target& target, const RunnerOptions& options) {
  return std::make_unique<ModelRunner>(target, *options.coefficients);
}

}  // namespace pto::measure
