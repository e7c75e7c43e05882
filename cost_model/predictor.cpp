#include "cost_model/predictor.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <mutex>
#include <numeric>
#include <optional>

#include "core/error.h"
#include "cost_model/candidate_features.h"
#include "cost_model/residual_model.h"

namespace pto {

// The fitted correction, refitted under `mutex` when `current` is false: update() only
// clears the flag, and the first prediction after it refits.
struct Predictor::Fit {
  std::mutex mutex;
  std::atomic<bool> current{false};
  ResidualModel residual;
  bool prior_feature = false;  // rows carry the prior flag as one more feature
};

Predictor::Predictor(CostModel model) : model_(std::move(model)), fit_(std::make_unique<Fit>()) {}
Predictor::~Predictor() = default;
Predictor::Predictor(Predictor&&) noexcept = default;
Predictor& Predictor::operator=(Predictor&&) noexcept = default;

Predictor Predictor::for_graph(const TensorGraph& graph) const {
  Predictor out(model_.for_graph(graph));
  out.own_ = own_;
  out.own_index_ = own_index_;
  out.prior_ = prior_;
  const Fit& fit = fitted();
  out.fit_->residual = fit.residual;
  out.fit_->prior_feature = fit.prior_feature;
  out.fit_->current = true;
  return out;
}

void Predictor::invalidate() { fit_->current = false; }

void Predictor::refit(Fit& fit) const {
  const size_t prior = prior_ ? prior_->size() : 0;
  fit.prior_feature = prior > 0;
  std::vector<std::vector<double>> features;
  std::vector<double> targets, weights;
  const auto add = [&](const CorrectionRow& r, bool is_prior, double weight) {
    features.push_back(r.features);
    if (fit.prior_feature) features.back().push_back(is_prior ? 1 : 0);
    targets.push_back(r.log_residual);
    weights.push_back(weight);
  };
  if (prior > 0) {
    const double weight = std::min(1.0, kPriorWeight / static_cast<double>(prior));
    for (const CorrectionRow& r : *prior_) add(r, true, weight);
  }
  for (const CorrectionRow& r : own_) add(r, false, 1);
  fit.residual.fit(features, targets, weights);
}

const Predictor::Fit& Predictor::fitted() const {
  Fit& fit = *fit_;
  if (!fit.current.load(std::memory_order_acquire)) {
    std::lock_guard lock(fit.mutex);
    if (!fit.current.load(std::memory_order_relaxed)) {
      refit(fit);
      fit.current.store(true, std::memory_order_release);
    }
  }
  return fit;
}

double Predictor::correction(std::span<const double> features) const {
  if (own_.empty() && !prior_) return 0;
  const Fit& fit = fitted();
  if (!fit.prior_feature) return fit.residual.predict(features);
  std::vector<double> own(features.begin(), features.end());
  own.push_back(0);  // a candidate of this workload
  return fit.residual.predict(own);
}

double Predictor::predict_ns(const Estimate& estimate, const TileConfig& config) const {
  // Without rows, exactly the analytical time (exp(log(t)) is not always t); for an
  // infeasible config, the estimate's +infinity.
  if ((own_.empty() && !prior_) || !estimate.feasible || !(estimate.predicted_ns > 0)) return estimate.predicted_ns;
  return estimate.predicted_ns * std::exp(correction(candidate_features(estimate, config)));
}

double Predictor::predict_ns(const TileConfig& config) const {
  if (own_.empty() && !prior_) return model_.predict_ns(config);
  return predict_ns(model_.estimate(config), config);
}

void Predictor::score(std::span<const TileConfig> configs, std::span<double> predicted_ns) const {
  if (configs.size() != predicted_ns.size())
    usage_error("predictor: " + std::to_string(configs.size()) + " configs for " + std::to_string(predicted_ns.size()) +
                " predictions");
  if (own_.empty() && !prior_) return model_.score(configs, predicted_ns);
  for (size_t i = 0; i < configs.size(); ++i) predicted_ns[i] = predict_ns(configs[i]);
}

void Predictor::update(std::span<const TileConfig> configs, std::span<const double> measured_ns) {
  if (configs.size() != measured_ns.size())
    usage_error("predictor: " + std::to_string(configs.size()) + " configs for " + std::to_string(measured_ns.size()) +
                " measured times");
  for (size_t i = 0; i < configs.size(); ++i) {
    std::string key = configs[i].to_string();
    const auto at = own_index_.find(key);
    const double t = measured_ns[i];
    std::optional<CorrectionRow> row;
    if (t > 0 && std::isfinite(t)) {
      const Estimate e = model_.estimate(configs[i]);
      if (e.feasible && e.predicted_ns > 0 && std::isfinite(e.predicted_ns))
        row = CorrectionRow{candidate_features(e, configs[i]), std::log(t) - std::log(e.predicted_ns)};
    }
    if (at == own_index_.end()) {
      if (!row) continue;
      own_index_.emplace(std::move(key), own_.size());
      own_.push_back(std::move(*row));
    } else if (row) {
      own_[at->second] = std::move(*row);
    } else {  // failed now: its row goes, and the rows after it move up
      const size_t gone = at->second;
      own_.erase(own_.begin() + static_cast<std::ptrdiff_t>(gone));
      own_index_.erase(at);
      for (auto& [config, index] : own_index_)
        if (index > gone) --index;
    }
  }
  invalidate();
}

double Predictor::loo_error(size_t fastest) const {
  const Fit& fit = fitted();
  const std::vector<double>& loo = fit.residual.loo_residuals();
  const size_t prior = prior_ ? prior_->size() : 0;
  if (loo.size() != prior + own_.size()) return fit.residual.loo_rms();  // a constant fit
  std::vector<size_t> rows(own_.size());
  std::iota(rows.begin(), rows.end(), size_t{0});
  const size_t n = fastest == 0 ? rows.size() : std::min(fastest, rows.size());
  std::partial_sort(rows.begin(), rows.begin() + static_cast<std::ptrdiff_t>(n), rows.end(),
                    [&](size_t a, size_t b) { return own_[a].log_measured() < own_[b].log_measured(); });
  double sum = 0;
  for (size_t k = 0; k < n; ++k) sum += loo[prior + rows[k]] * loo[prior + rows[k]];
  return n ? std::sqrt(sum / static_cast<double>(n)) : 0;
}

Correction Predictor::save() const { return Correction{kFeatureLayout, own_}; }

void Predictor::load(const Correction& rows) {
  own_ = rows.rows;
  own_index_.clear();  // loaded rows name no config: a config measured later adds a row of its own
  invalidate();
}

void Predictor::seed(const Correction& prior) {
  prior_ = prior.rows.empty() ? nullptr : std::make_shared<const std::vector<CorrectionRow>>(prior.rows);
  invalidate();
}

}  // namespace pto
