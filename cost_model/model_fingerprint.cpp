#include "cost_model/model_fingerprint.h"

#include <cstdio>
#include <optional>

#include "core/error.h"
#include "core/op_library.h"
#include "core/stable_hash.h"
#include "cost_model/estimate.h"

namespace pto {

namespace {

std::string priced(const CostModel& model, const TileConfig& config) {
  try {
    const Estimate e = model.estimate(config);
    if (!e.feasible) return "infeasible";
    char text[32];
    std::snprintf(text, sizeof text, "%.6g", e.predicted_ns);
    return text;
  } catch (const Error& e) {
    return std::string("refused: ") + to_string(e.category());
  }
}

}  // namespace

std::string cost_model_fingerprint(std::span<const ProbeCase> cases) {
  uint64_t h = 0;
  // Consecutive cases share a workload and target (probe_cases() orders them so): one
  // model for each such run.
  std::optional<CostModel> model;
  const ProbeCase* modelled = nullptr;
  for (const ProbeCase& c : cases) {
    if (!modelled || modelled->workload.key() != c.workload.key() || modelled->target != c.target) {
      modelled = &c;
      try {
        model.emplace(build_graph(c.workload), *c.target);
      } catch (const Error&) {
        model.reset();
      }
    }
    h = stable_hash_mix(h, stable_hash(model ? priced(*model, c.config) : "no model"));
  }
  return fingerprint_text('m', h);
}

}  // namespace pto
