// The `sim` backend: the NPU simulator's time for each candidate on an Ascend target.
//
// Each feasible candidate is compiled and simulated in this process (the simulator is
// deterministic and touches no data, so there is nothing to isolate or verify).
// Results are `simulated`; detail_json carries what the simulator says about why:
//   SimResult::to_json() plus "simulated": true — cycles, the bound and its utilisation
//   (over the cores that ran tasks), pipe_utilisation per core type (over all cores of
//   the type), cores_used, per-kernel times, L2 hit rate, HBM/L2 traffic and busy time.
#include <nlohmann/json.hpp>

#include "core/op_library.h"
#include "measure/backends.h"
#include "measure/sim/simulator.h"

namespace pto::measure {

namespace {

// The simulator's own report (SimResult::to_json), marked simulated.
std::string sim_detail(const sim::SimResult& r) {
  nlohmann::json detail = r.to_json();
  detail["simulated"] = true;
  return detail.dump();
}

class SimRunner : public Runner {
 public:
  SimRunner(Target target, Coefficients coefficients)
      : target_(std::move(target)), coefficients_(std::move(coefficients)) {}

  std::string name() const override { return "sim"; }

  std::vector<Measurement> measure(const Workload& w, const std::vector<TileConfig>& candidates,
                                   const OnResult& on_result) override {
    TensorGraph graph = build_graph(w);
    CostModel model(graph, target_, coefficients_);
    std::vector<Measurement> results;
    for (const TileConfig& config : candidates) {
      Measurement m = predict(model, config, name()).measurement;
      m.simulated = true;
      if (m.ok()) simulate_candidate(graph, config, m);
      stamp(m);
      results.push_back(std::move(m));
      if (on_result) on_result(results.size() - 1, results.back());
    }
    return results;
  }

 private:
  void simulate_candidate(const TensorGraph& graph, const TileConfig& config, Measurement& m) const {
    std::optional<Program> program = compile_candidate(graph, config, target_, m);
    if (!program) return;
    try {
      sim::SimResult r = sim::simulate(*program, target_);
      m.stats = {r.time_ns, r.time_ns, r.time_ns, 1};
      m.detail_json = sim_detail(r);
    } catch (const std::exception& e) {
      m.status = Status::RUNTIME_ERROR;
      m.error = std::string("simulator: ") + e.what();
    }
  }

  Target target_;
  Coefficients coefficients_;
};

}  // namespace

std::unique_ptr<Runner> make_sim_runner(const Target& npu, const RunnerOptions& options) {
  return std::make_unique<SimRunner>(npu, *options.coefficients);
}

}  // namespace pto::measure
