// Calibration: fit the cost model's coefficients to measured times of one target and
// backend, so that its ranking improves as the tuner measures.
//
// The fit minimises Σ (log predicted − log measured)² over the samples, with every
// coefficient ≥ 0: Gauss–Newton steps, each one a non-negative least-squares problem
// (cost_model/nnls.h) on the model's linear form (cost_model/time_terms.h), with a line
// search and a light pull toward the starting coefficients, so that a coefficient the
// samples cannot pin down stays where it was. The report gives the fit error before and
// after; the fitted Coefficients carry their provenance and are saved with
// Coefficients::save for later predictions.
#pragma once

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

struct CalibrationOptions {
  std::string backend;          // recorded in the result: "sim", "cpu", ...
  std::vector<Coef> fit;        // the coefficients that may move; empty = all
  double prior_weight = 1e-3;   // pull toward the start, in units of relative change
  int max_iterations = 50;
};

struct CalibrationReport {
  Coefficients before, after;
  int samples_used = 0;
  int samples_skipped = 0;      // infeasible configs and non-positive times
  // The coefficients the samples depend on, which the fit could move: a fit with no
  // more samples than unknowns is not determined by them (callers refuse it).
  int unknowns = 0;
  // Over the samples used: root mean square and largest |log(predicted / measured)|.
  double rms_log_error_before = 0, rms_log_error_after = 0;
  double max_log_error_before = 0, max_log_error_after = 0;
  int iterations = 0;
  // The fit error before and after, then each coefficient, old -> new.
  std::string to_string() const;
};

// Starts from the first set's model's coefficients. Usage Error for no sets, a null
// model, sets of different targets, or no usable sample.
CalibrationReport calibrate(std::span<const SampleSet> sets, const CalibrationOptions& options = {});
CalibrationReport calibrate(const CostModel& model, std::span<const Sample> samples,
                            const CalibrationOptions& options = {});

}  // namespace pto
