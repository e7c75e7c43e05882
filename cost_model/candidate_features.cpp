#include "cost_model/candidate_features.h"

#include <algorithm>
#include <cmath>

namespace pto {

namespace {

double log2_or_zero(double v) { return v > 0 ? std::log2(v) : 0; }

void add_breakdown(std::vector<double>& f, const Breakdown& b, double predicted_ns) {
  const double scale = predicted_ns > 0 ? 1 / predicted_ns : 0;
  for (double v : {b.mte2_hbm, b.mte2_l2, b.read_latency, b.mte1, b.cube, b.vector, b.fix, b.mte3,
                   b.write_latency, b.launch, b.task, b.instr, b.hbm_roofline, b.l2_roofline})
    f.push_back(v * scale);
}

void add_work(std::vector<double>& f, const Estimate& e) {
  double tasks = 0, waves = 0, idle = 0, last_wave_fill = 0;
  for (const KernelEstimate& k : e.kernels) {
    tasks += static_cast<double>(k.aic_tasks + k.aiv_tasks);
    if (k.waves > waves && k.wave_width > 0) {
      waves = static_cast<double>(k.waves);
      last_wave_fill = static_cast<double>(k.last_wave_tasks) / static_cast<double>(k.wave_width);
    }
    idle = std::max(idle, k.idle_fraction);
  }
  f.push_back(static_cast<double>(e.kernels.size()));
  f.push_back(log2_or_zero(tasks));
  f.push_back(log2_or_zero(waves));
  f.push_back(idle);
  f.push_back(last_wave_fill);
  f.push_back(log2_or_zero(e.mte2_bytes));
  f.push_back(log2_or_zero(e.hbm_bytes));
}

void add_config(std::vector<double>& f, const TileConfig& c) {
  const CubeTile t = c.cube.value_or(CubeTile{});
  for (int64_t v : {t.mL0, t.mL1, t.kL0, t.kAL1, t.kBL1, t.nL0, t.nL1}) f.push_back(log2_or_zero(static_cast<double>(v)));
  f.push_back(t.split_k ? 1 : 0);
  f.push_back(log2_or_zero(static_cast<double>(t.k_view)));
  double vec_elements = 0, vec_last = 0;
  if (c.vec && !c.vec->empty()) {
    vec_elements = 1;
    for (int64_t v : *c.vec) vec_elements *= static_cast<double>(v);
    vec_last = static_cast<double>(c.vec->back());
  }
  f.push_back(log2_or_zero(vec_elements));
  f.push_back(log2_or_zero(vec_last));
  f.push_back(c.nbuffer_or_default());
  f.push_back(c.l2_group ? log2_or_zero(static_cast<double>(c.l2_group->first)) : 0);
  f.push_back(c.l2_group ? log2_or_zero(static_cast<double>(c.l2_group->second)) : 0);
  f.push_back(c.fusion ? static_cast<double>(c.fusion->size()) : 0);
}

}  // namespace

std::vector<double> candidate_features(const Estimate& estimate, const TileConfig& config) {
  std::vector<double> f;
  f.reserve(kFeatureCount);
  f.push_back(std::log(estimate.predicted_ns));
  add_breakdown(f, estimate.breakdown, estimate.predicted_ns);
  add_work(f, estimate);
  add_config(f, config);
  return f;
}

}  // namespace pto
