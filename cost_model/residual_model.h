// ResidualModel: a learned correction on top of the analytical cost model, refitted as
// the tuner measures — the part of TVM MetaSchedule's retrained XGBoost model that
// pto-tune needs. The analytical model is the prior; where it is wrong about the order of
// candidates within one workload (on the host target it ranks real CPU times backwards),
// the correction learns log(measured / predicted) as a function of the candidate's
// features (cost_model/candidate_features.h) and can reverse that order, not only rescale it.
//
// The learner is ridge regression on standardised features with an unpenalised
// intercept; the penalty is chosen per fit among a few values by exact leave-one-out
// error (the ridge hat matrix gives it in closed form), so that a handful of samples
// yields little more than a constant shift and many samples a real reordering. Rows may
// carry weights: the Predictor (cost_model/predictor.h) lets rows of other workloads
// count for less than this workload's own.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

namespace pto {

class ResidualModel {
 public:
  // Fits on rows of features (all of one width) and their targets (log residuals),
  // each row counting as its weight (positive; none given: 1 each, and a row of weight w
  // weighs as w copies of it would). Fewer than two rows fit a constant: the weighted
  // mean target, or 0 for none. Usage Error for rows of different widths, or a row count
  // unlike the target (or given weight) count.
  void fit(const std::vector<std::vector<double>>& features, std::span<const double> targets,
           std::span<const double> weights = {});
  // The predicted target of one row of features (0 before any fit).
  double predict(std::span<const double> features) const;
  size_t samples() const { return samples_; }
  double penalty() const { return penalty_; }  // the chosen ridge penalty (standardised units)
  // Root mean square leave-one-out error of the fit (weighted): how far off a prediction
  // for a candidate not measured is likely to be (0 before two samples).
  double loo_rms() const { return loo_rms_; }
  // The leave-one-out residual of each fitted row, in the order given to fit(): where
  // the model is wrong (a strategy weighs the rows near the optimum, where the
  // decisions are; search/strategies/scored_pool.h). Empty for a constant fit.
  const std::vector<double>& loo_residuals() const { return loo_residuals_; }

 private:
  size_t samples_ = 0;
  double intercept_ = 0;
  double penalty_ = 0;
  double loo_rms_ = 0;
  std::vector<double> mean_, scale_, weights_;  // per feature; empty for a constant fit
  std::vector<double> loo_residuals_;
};

}  // namespace pto
