#include "cost_model/calibrate.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/error.h"
#include "cost_model/host_model.h"
#include "cost_model/nnls.h"

namespace pto {

namespace {

// One usable measurement: its summary is computed once, its terms per iterate.
struct Observation {
  const CostModel* model;
  const TileConfig* config;
  TilingSummary summary;
  double log_measured;
  size_t set;  // index of its SampleSet
};

struct FitError {
  double objective = 0;  // squared log errors plus the prior's penalty
  double rms = 0;
  double max = 0;
};

class Fit {
 public:
  // `options` resolved: prior_weight and per_set_level set.
  Fit(std::vector<Observation> obs, const Coefficients& start, const CalibrationOptions& options)
      : obs_(std::move(obs)),
        start_(start),
        prior_weight_(options.prior_weight.value()),
        per_set_level_(options.per_set_level.value()) {
    for (const Observation& o : obs_) sets_ = std::max(sets_, o.set + 1);
    if (options.fit.empty()) {
      for (int j = 0; j < kNumCoefs; ++j) free_.push_back(j);
    } else {
      for (Coef c : options.fit) free_.push_back(static_cast<int>(c));
      std::sort(free_.begin(), free_.end());
      free_.erase(std::unique(free_.begin(), free_.end()), free_.end());
    }
  }

  FitError error(const Coefficients& c) const {
    FitError e;
    std::vector<double> residuals;
    for (const Observation& o : obs_) residuals.push_back(log_error(o, c));
    for (const double r : relevel(std::move(residuals))) {
      e.objective += r * r;
      e.max = std::max(e.max, std::abs(r));
    }
    e.rms = std::sqrt(e.objective / static_cast<double>(obs_.size()));
    for (int j : free_) {
      if (start_.value[j] > 0) {
        const double p = prior_weight_ * (c.value[j] / start_.value[j] - 1);
        e.objective += p * p;
      }
    }
    return e;
  }

  // One Gauss-Newton step in log space, solved as NNLS for the new coefficients:
  // log p(c') ≈ log p(c) + Σ_j amount_j (c'_j − c_j) / p(c), and Σ_j amount_j c_j = p(c).
  Coefficients step(const Coefficients& c) const {
    const std::vector<TimeTerms> terms = terms_at(c);
    const std::vector<int> cols = movable(terms);
    if (cols.empty()) return c;
    const size_t n = cols.size();
    std::vector<std::vector<double>> columns(n);  // per movable coefficient, one row per observation
    std::vector<double> rhs;
    for (size_t i = 0; i < obs_.size(); ++i) {
      const double p = terms[i].value();
      double b = 1 + obs_[i].log_measured - std::log(p);
      for (int j = 0; j < kNumCoefs; ++j) {
        if (std::find(cols.begin(), cols.end(), j) == cols.end()) b -= c.value[j] * terms[i].amount(coef_at(j)) / p;
      }
      for (size_t k = 0; k < n; ++k) columns[k].push_back(terms[i].amount(coef_at(cols[k])) / p);
      rhs.push_back(b);
    }
    // The residual is linear in the rows: relevelling each column and the right-hand side
    // relevels the residual.
    rhs = relevel(std::move(rhs));
    for (std::vector<double>& column : columns) column = relevel(std::move(column));
    std::vector<double> rows;  // packed row by row
    for (size_t i = 0; i < obs_.size(); ++i) {
      for (size_t k = 0; k < n; ++k) rows.push_back(columns[k][i]);
    }
    for (size_t k = 0; k < n; ++k) {
      const double s = start_.value[cols[k]];
      if (s <= 0) continue;
      for (size_t q = 0; q < n; ++q) rows.push_back(q == k ? prior_weight_ / s : 0.0);
      rhs.push_back(prior_weight_);
    }
    DenseMatrix a(rhs.size(), n);
    a.data = std::move(rows);
    // Equilibrate the columns: amounts of different coefficients differ by decades.
    std::vector<double> norm(n, 0.0);
    for (size_t i = 0; i < a.rows; ++i) {
      for (size_t k = 0; k < n; ++k) norm[k] += a(i, k) * a(i, k);
    }
    for (size_t k = 0; k < n; ++k) {
      norm[k] = std::sqrt(norm[k]);
      for (size_t i = 0; i < a.rows; ++i) a(i, k) /= norm[k];
    }
    const std::vector<double> x = nnls(a, rhs);
    Coefficients next = c;
    for (size_t k = 0; k < n; ++k) next.value[cols[k]] = x[k] / norm[k];
    return next;
  }

  // How many coefficients the samples pin down at `c`: the unknowns of the fit.
  size_t unknowns(const Coefficients& c) const { return movable(terms_at(c)).size(); }

 private:
  // Per-observation values with each set's mean replaced by the mean over all
  // observations, when each set's level is its own (CalibrationOptions::per_set_level):
  // the fit then sees how a workload's configs differ and the overall level, not the
  // level of one workload against another.
  std::vector<double> relevel(std::vector<double> v) const {
    if (!per_set_level_) return v;
    std::vector<double> sum(sets_, 0.0), count(sets_, 0.0);
    double total = 0;
    for (size_t i = 0; i < v.size(); ++i) {
      sum[obs_[i].set] += v[i];
      count[obs_[i].set] += 1;
      total += v[i];
    }
    const double mean = total / static_cast<double>(v.size());
    for (size_t i = 0; i < v.size(); ++i) v[i] += mean - sum[obs_[i].set] / count[obs_[i].set];
    return v;
  }

  std::vector<TimeTerms> terms_at(const Coefficients& c) const {
    std::vector<TimeTerms> terms;
    for (const Observation& o : obs_) terms.push_back(o.model->terms(o.summary, *o.config, c));
    return terms;
  }

  // Only the free coefficients some sample depends on can move; the rest keep their value.
  std::vector<int> movable(const std::vector<TimeTerms>& terms) const {
    std::vector<int> cols;
    for (int j : free_) {
      const bool measured = std::any_of(terms.begin(), terms.end(),
                                        [&](const TimeTerms& t) { return t.amount(coef_at(j)) > 0; });
      if (measured) cols.push_back(j);
    }
    return cols;
  }

  static double log_error(const Observation& o, const Coefficients& c) {
    const double p = o.model->terms(o.summary, *o.config, c).value();
    return std::log(std::max(p, 1e-300)) - o.log_measured;
  }

  std::vector<Observation> obs_;
  Coefficients start_;
  std::vector<int> free_;
  double prior_weight_;
  bool per_set_level_;
  size_t sets_ = 0;
};

Coefficients blend(const Coefficients& from, const Coefficients& to, double t) {
  Coefficients c = from;
  for (int j = 0; j < kNumCoefs; ++j) c.value[j] = from.value[j] + t * (to.value[j] - from.value[j]);
  return c;
}

std::vector<Observation> usable_observations(std::span<const SampleSet> sets, int& skipped) {
  std::vector<Observation> obs;
  skipped = 0;
  for (size_t set_index = 0; set_index < sets.size(); ++set_index) {
    const SampleSet& set = sets[set_index];
    for (const Sample& s : set.samples) {
      TilingSummary summary = set.model->analyze(s.config);
      if (!summary.feasible || !(s.measured_ns > 0)) {
        ++skipped;
        continue;
      }
      // A config the model prices at zero carries nothing to fit.
      const Coefficients& c = set.model->coefficients();
      if (!(set.model->terms(summary, s.config, c).value() > 0)) {
        ++skipped;
        continue;
      }
      obs.push_back({set.model, &s.config, std::move(summary), std::log(s.measured_ns), set_index});
    }
  }
  return obs;
}

void check_sets(std::span<const SampleSet> sets) {
  if (sets.empty()) usage_error("calibrate: no sample sets given");
  for (size_t i = 0; i < sets.size(); ++i) {
    if (!sets[i].model) usage_error("calibrate: sample set " + std::to_string(i) + " has no model");
    const Target& t = sets[i].model->target();
    const Target& first = sets[0].model->target();
    if (t.fingerprint() != first.fingerprint()) {
      usage_error("calibrate: sample set " + std::to_string(i) + " is for target " + t.name +
                  " (" + t.fingerprint() + "), the first for " + first.name + " (" +
                  first.fingerprint() + ")");
    }
  }
}

}  // namespace

CalibrationReport calibrate(std::span<const SampleSet> sets, const CalibrationOptions& options) {
  if (options.prior_weight && !(std::isfinite(*options.prior_weight) && *options.prior_weight >= 0))
    usage_error("calibrate: the prior weight must be a finite number >= 0, got " + std::to_string(*options.prior_weight));
  check_sets(sets);
  CalibrationReport report;
  report.before = sets[0].model->coefficients();
  std::vector<Observation> obs = usable_observations(sets, report.samples_skipped);
  report.samples_used = static_cast<int>(obs.size());
  if (obs.empty()) {
    usage_error("calibrate: none of the " + std::to_string(report.samples_skipped) +
                " samples is usable (all infeasible or with non-positive times)");
  }
  const bool host = is_host_target(sets[0].model->target());
  CalibrationOptions resolved = options;
  report.per_set_level = *(resolved.per_set_level = options.per_set_level.value_or(host));
  report.prior_weight = *(resolved.prior_weight = options.prior_weight.value_or(host ? kHostPriorWeight : kSimPriorWeight));
  const Fit fit(std::move(obs), report.before, resolved);
  report.unknowns = static_cast<int>(fit.unknowns(report.before));
  Coefficients current = report.before;
  FitError current_error = fit.error(current);
  const FitError initial = current_error;
  for (int it = 0; it < options.max_iterations; ++it) {
    report.iterations = it + 1;
    const Coefficients proposal = fit.step(current);
    bool improved = false;
    for (double t = 1; t > 1e-3; t /= 2) {  // backtracking: the model is only piecewise linear
      const Coefficients candidate = blend(current, proposal, t);
      const FitError e = fit.error(candidate);
      if (e.objective < current_error.objective) {
        const double gain = current_error.objective - e.objective;
        current = candidate;
        current_error = e;
        improved = gain > 1e-12 * (1 + e.objective);
        break;
      }
    }
    if (!improved) break;
  }
  report.after = current;
  report.after.backend = options.backend;
  report.after.samples = report.samples_used;
  report.after.rms_log_error = current_error.rms;
  report.rms_log_error_before = initial.rms;
  report.max_log_error_before = initial.max;
  report.rms_log_error_after = current_error.rms;
  report.max_log_error_after = current_error.max;
  return report;
}

CalibrationReport calibrate(const CostModel& model, std::span<const Sample> samples,
                            const CalibrationOptions& options) {
  const SampleSet set{&model, samples};
  return calibrate(std::span<const SampleSet>(&set, 1), options);
}

std::string CalibrationReport::to_string() const {
  char line[200];
  std::string out;
  std::snprintf(line, sizeof line,
                "fit of %d coefficients on %d samples (%d skipped), %d iterations, prior weight %g\n"
                "log error%s  rms %.4f -> %.4f   max %.4f -> %.4f\n",
                unknowns, samples_used, samples_skipped, iterations, prior_weight,
                per_set_level ? " (each set's level its own)" : "", rms_log_error_before, rms_log_error_after,
                max_log_error_before, max_log_error_after);
  out += line;
  for (int j = 0; j < kNumCoefs; ++j) {
    std::snprintf(line, sizeof line, "  %-8s %12.6g -> %12.6g\n", coef_name(coef_at(j)),
                  before.value[j], after.value[j]);
    out += line;
  }
  return out;
}

}  // namespace pto
