// Simulator fidelity: the `sim` backend against published Ascend timings
// (measure/published_points.h), with a fit of a handful of physical parameters per target
// family and leave-one-source-out cross-validation, so that the error reported for a
// point comes from a fit that never saw its source. `pto-tune validate` prints it;
// results/sim_validation.md explains it.
//
// The knobs are few and physical: the effective HBM bandwidth, the per-core HBM fill
// rate, the DMA burst a short contiguous run still costs, the fixed cost of a kernel
// inside msprof's Task Duration, the latency of a Cube-vector hand-off and the L2's
// bandwidth. Where a training-set source measures one directly, its
// grid is that one value (knob_grid says which and why); the rest span a grid, bounded
// to what the datasheets allow, that is simulated once for every fold. The launch cost is
// additive (a constant per kernel launch), so it never needs re-simulating.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "measure/published_points.h"

namespace pto {

struct SimKnobs {
  double hbm_gbps = 0;         // effective HBM bandwidth shared by all cores
  double gm_read_bpc = 0;      // per-core rate for data that comes from HBM
  double min_burst_bytes = 0;  // each contiguous run costs at least this much
  double launch_us = 0;        // per kernel launch, counted by Task Duration
  double cross_core_sync_cycles = 0;  // a flag from the Cube to a vector unit or back
  double l2_per_hbm = 0;       // the L2's bandwidth shared by all cores, over HBM's
  static SimKnobs of_target(const Target& t);
  Target applied_to(Target t) const;
  nlohmann::json to_json() const;
};

// The bounds of each knob, as the grid the fit searches.
struct KnobGrid {
  std::vector<double> hbm_gbps, gm_read_bpc, min_burst_bytes, launch_us, cross_core_sync_cycles, l2_per_hbm;
};
KnobGrid knob_grid(const std::string& family);

struct PointOutcome {
  const PublishedPoint* point = nullptr;
  std::string family;
  double shipped_us = 0;   // simulated with the target files as they are
  double fitted_us = 0;    // simulated with the family's fit on every source
  double held_out_us = 0;  // simulated with the fit that left this point's source out
  std::map<std::string, double> shipped_pipes_us;  // msprof names ("aic_mte2"), average over used cores
};

struct PairOutcome {
  std::string a, b;        // ids, a measured faster than b
  bool shipped_ok = false, held_out_ok = false;
};

struct ErrorSummary {
  int points = 0;
  double median_abs_log = 0, worst_abs_log = 0;
  int within_25 = 0, within_30 = 0, within_50 = 0;
};
ErrorSummary summarize(const std::vector<double>& simulated, const std::vector<double>& measured);

struct FidelityReport {
  std::vector<PointOutcome> points;     // the simulated points, in file order
  std::vector<PairOutcome> pairs;       // same source and workload, different tiling
  std::map<std::string, SimKnobs> fit;  // per family, on every source
  std::map<std::string, std::map<std::string, SimKnobs>> fold_fit;  // family -> left-out source -> fit
  ErrorSummary shipped, fitted, held_out;
  nlohmann::json to_json() const;
};

// Simulates every point with a config; with `cross_validate`, also fits and validates.
FidelityReport evaluate_fidelity(const std::vector<PublishedPoint>& points, bool cross_validate);

}  // namespace pto
