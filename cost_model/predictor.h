// Predictor: the one way pto-tune predicts how long a candidate runs — the analytical
// cost model (cost_model/estimate.h) with the coefficients its maker resolved
// (calibrated where `pto-tune calibrate` fitted some: cost_model/calibration_store.h),
// times a learned correction (cost_model/residual_model.h) fitted on measurements. Its
// interface is TVM MetaSchedule's CostModel: predict, update, save, load. The strategies
// rank by it (search/strategies/scored_pool.h), the runners stamp its predictions
// (measure/backends.h), the tuner feeds it every measurement and keeps its rows with the
// records (search/tuner.h), and the JIT's model pick and transfer rank with it
// (cost_model/target_predictors.h).
//
// The correction is fitted on rows (cost_model/correction.h) of two kinds: this
// workload's own measurements (update, load), and a prior (seed): rows that other
// workloads of the op left in the store. The prior counts as kPriorWeight measurements
// in all, however many rows it holds, so this workload's own rows outweigh it once there
// are a few. Its rows carry one more feature, 1 for a prior row and 0 for an own one, so
// that the prior's level (other shapes are mispredicted by other constant factors) does
// not shift this workload's predictions: the prior teaches how the error varies across
// candidates, this workload's rows its level.
//
// Without rows the correction is 0 and every prediction is exactly the analytical
// model's. update() only records rows; the correction is refitted when a prediction next
// needs it (a search that never asks, exhaustive, never pays for a fit), once, safely
// from many threads. Predictions may run on many threads at once; update, seed and load
// may not run beside anything else.
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/tensor_graph.h"
#include "core/tile_config.h"
#include "cost_model/correction.h"
#include "cost_model/estimate.h"

namespace pto {

class Predictor {
 public:
  // The measurements the prior counts as, together.
  static constexpr double kPriorWeight = 4;

  explicit Predictor(CostModel model);
  ~Predictor();
  Predictor(Predictor&&) noexcept;
  Predictor& operator=(Predictor&&) noexcept;

  // This predictor (coefficients, rows, correction) for another graph of the same op:
  // what pricing many shapes on one target reuses (CostModel::for_graph).
  Predictor for_graph(const TensorGraph& graph) const;

  // The analytical model alone, with its coefficients: for what a person reads
  // (explain's breakdown) and for the prediction a record keeps beside its measurement,
  // which must not be corrected by that very measurement.
  const CostModel& model() const { return model_; }

  // Predict. The corrected time (ns) of `config` from its analytical estimate; +infinity
  // for an infeasible one.
  double predict_ns(const Estimate& estimate, const TileConfig& config) const;
  double predict_ns(const TileConfig& config) const;
  // predicted_ns[i] = predict_ns(configs[i]); the spans must be the same length.
  void score(std::span<const TileConfig> configs, std::span<double> predicted_ns) const;
  // The correction, log(measured / predicted), expected of a candidate with these
  // features (candidate_features): what a strategy adds to log(predicted) to rank by.
  double correction(std::span<const double> features) const;

  // Update. Records the measured times of this workload's configs (a time that is not
  // positive and finite: the config failed, and a row it had is dropped); a config
  // measured again replaces its row. Configs the model finds infeasible have no row.
  void update(std::span<const TileConfig> configs, std::span<const double> measured_ns);
  // This workload's rows, and the leave-one-out rms error (log time) of the correction
  // over the `fastest` of them measured fastest (all when 0): how far off a prediction
  // near the optimum is likely to be; 0 with fewer than two rows.
  size_t rows() const { return own_.size(); }
  double loo_error(size_t fastest = 0) const;

  // Save and load. save() gives this workload's rows in the order first measured (the
  // prior came from the store and is not saved again); load() replaces them, so that a
  // predictor loaded with another's save() predicts exactly what it does (with the same
  // prior). seed() sets the prior. Rows of another feature layout never get here:
  // Correction::from_json drops them.
  Correction save() const;
  void load(const Correction& rows);
  void seed(const Correction& prior);

 private:
  struct Fit;
  const Fit& fitted() const;
  void refit(Fit& fit) const;
  void invalidate();

  CostModel model_;
  std::vector<CorrectionRow> own_;
  std::unordered_map<std::string, size_t> own_index_;  // config text -> its row in own_
  std::shared_ptr<const std::vector<CorrectionRow>> prior_;  // shared with for_graph()'s copies
  std::unique_ptr<Fit> fit_;
};

}  // namespace pto
