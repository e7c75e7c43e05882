// The calibration job: sample the search space of each workload, measure the samples
// through a Runner, and fit the cost model's coefficients to them
// (cost_model/calibrate.h) — the candidates the model will have to rank, measured the
// way the tuner measures them. `pto-tune calibrate` prints what this returns; saving
// the fit is the caller's call (cost_model/calibration_store.h).
//
// Every workload is built and its space sampled before the first measurement, so a bad
// shape fails the job before any time is spent; a fit with no more usable samples than
// the coefficients it would move is refused rather than saved.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "core/target.h"
#include "core/tile_config.h"
#include "core/workload.h"
#include "cost_model/calibrate.h"
#include "measure/runner.h"
#include "calibration/host_probe.h"
#include "search/space_generator.h"

namespace pto::calibration {

struct CalibrationJobOptions {
  size_t samples = 32;  // feasible configs measured per workload
  uint64_t seed = 1;    // of the sample of each space
  // A host's prices of the runtime's steps to fit the coefficients over; none: its ISA's
  // reference machine's. `probe_host` measures this machine's instead (calibration/host_probe.h,
  // a few seconds, after every workload is checked and before the first is measured).
  std::optional<HostPrices> host_prices;
  bool probe_host = false;
  std::function<void(size_t done, size_t planned)> probe_progress;
  // Called as each measurement arrives: (measured so far, planned in all).
  std::function<void(size_t done, size_t planned)> progress;
};

struct SkippedSample {
  TileConfig config;
  measure::Measurement measurement;  // why: its status and error
};

struct WorkloadSamples {
  Workload workload;
  uint64_t space_size = 0;
  search::SpaceTally tally;  // of the sampling pass
  std::vector<Sample> samples;           // measured OK, with a positive time
  std::vector<SkippedSample> skipped;    // failed to measure
};

struct CalibrationJobResult {
  std::optional<HostProbeResult> probe;  // when asked for: what it measured
  std::vector<WorkloadSamples> workloads;
  CalibrationReport report;  // report.after: the fit, with its provenance
};

// The fewest samples a job may ask for: one more than the model has coefficients, so
// that a fit of all of them is determined.
size_t min_calibration_samples();

// Usage Error, before measuring, for no workloads, a workload that does not build,
// fewer samples in all than min_calibration_samples(), or a probe of a target that is
// not a host; Internal Error when too few
// measurements succeed to determine the fit.
CalibrationJobResult run_calibration(const std::vector<Workload>& workloads, const Target& target,
                                     measure::Runner& runner, const CalibrationJobOptions& options);

}  // namespace pto::calibration
