// Calibration: fit the cost model's coefficients to measured times of one target and
// backend, so that its ranking improves as the tuner measures.
//
// The fit minimises Σ (log predicted − log measured)² over the samples, with every
// coefficient ≥ 0: Gauss–Newton steps, each one a non-negative least-squares problem
// (cost_model/nnls.h) on the model's linear form (cost_model/time_terms.h), with a line
// search and a light pull toward the starting coefficients, so that a coefficient the
// samples cannot pin down stays where it was. On a host, each workload's samples keep
// their own level (CalibrationOptions::per_set_level): the machine's speed drifts
// between workloads timed minutes apart, and a fit that explained that drift with the
// coefficients the workloads share mispriced the held-out ones. The report gives the
// fit error before and after; the fitted Coefficients carry their provenance and are
// saved with Coefficients::save for later predictions.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/tile_config.h"
#include "cost_model/coefficients.h"
#include "cost_model/estimate.h"

namespace pto {

struct Sample {
  TileConfig config;
  double measured_ns = 0;
};

// The samples of one graph and the model that scores them. Every set of one fit must
// describe the same target.
struct SampleSet {
  const CostModel* model = nullptr;
  std::span<const Sample> samples;
};

// A host's samples are noisy: two passes over the same configs on an idle machine agree
// only to Kendall tau 0.4-0.9. With a light pull, fits on eight workloads lowered the
// ninth's tau more often than they raised it (mean 0.794 uncalibrated, 0.780 fitted, over
// the 27 workload-samples of seeds 19-21; with a pull of 1, 0.793, and 2 under 0.7
// instead of 6: results/cost_model_ranking_cpu.md). The simulator's times are
// deterministic, and there a light pull lets the samples decide.
inline constexpr double kHostPriorWeight = 1;
inline constexpr double kSimPriorWeight = 1e-3;

struct CalibrationOptions {
  std::string backend;          // recorded in the result: "sim", "cpu", ...
  std::vector<Coef> fit;        // the coefficients that may move; empty = all
  // The pull toward the starting coefficients, in units of relative change. Unset:
  // kHostPriorWeight on host targets, kSimPriorWeight for the simulator.
  std::optional<double> prior_weight;
  int max_iterations = 50;
  // Whether each sample set keeps its own level: the fit matches how the times of one
  // set's configs differ, and the level of all sets together, not one set's level against
  // another's. Unset: on for host targets, whose workloads are timed one after another on
  // a shared machine whose speed drifts between them (a workload's mean log error moved
  // by up to 0.8 between two measurements of the same configs, results/
  // cost_model_ranking_cpu.md), off for the simulator's deterministic times.
  std::optional<bool> per_set_level;
};

struct CalibrationReport {
  Coefficients before, after;
  int samples_used = 0;
  int samples_skipped = 0;      // infeasible configs and non-positive times
  // The coefficients the samples depend on, which the fit could move: a fit with no
  // more samples than unknowns is not determined by them (callers refuse it).
  int unknowns = 0;
  bool per_set_level = false;   // CalibrationOptions::per_set_level, resolved
  double prior_weight = 0;      // CalibrationOptions::prior_weight, resolved
  // Over the samples used: root mean square and largest |log(predicted / measured)|,
  // with per_set_level after each set's mean is replaced by the mean over all sets.
  double rms_log_error_before = 0, rms_log_error_after = 0;
  double max_log_error_before = 0, max_log_error_after = 0;
  int iterations = 0;
  // The fit error before and after, then each coefficient, old -> new.
  std::string to_string() const;
};

// Starts from the first set's model's coefficients. Usage Error for a negative or
// non-finite prior weight, no sets, a null model, sets of different targets, or no
// usable sample.
CalibrationReport calibrate(std::span<const SampleSet> sets, const CalibrationOptions& options = {});
CalibrationReport calibrate(const CostModel& model, std::span<const Sample> samples,
                            const CalibrationOptions& options = {});

}  // namespace pto
