// Correction: the learned correction of the cost model as it is saved and loaded (TVM
// MetaSchedule's CostModel Save/Load) — the rows it is fitted on, each a candidate's
// features (cost_model/candidate_features.h) and the log of its measured over its
// predicted time, under the feature layout that made them. The Predictor
// (cost_model/predictor.h) fits its residual model on such rows; the tuning store keeps
// them per CorrectionKey, so that a later session of the op and the JIT start from what
// earlier measurements taught the model. Rows, not fitted weights: a fit takes a
// millisecond, and rows of several sessions merge where weights would not.
#pragma once

#include <compare>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "cost_model/candidate_features.h"

namespace pto {

struct CorrectionRow {
  std::vector<double> features;  // kFeatureCount of them; features[0] is log(predicted ns)
  double log_residual = 0;       // log(measured / predicted)
  double log_measured() const { return features.front() + log_residual; }
  bool operator==(const CorrectionRow&) const = default;
};

struct Correction {
  int layout = kFeatureLayout;
  std::vector<CorrectionRow> rows;
  bool operator==(const Correction&) const = default;

  // {"layout": 1, "rows": [{"features": [..], "log_residual": r}, ..]}
  nlohmann::json to_json() const;
  // Nothing for rows of another feature layout: they would be misread, and are ignored.
  // Usage Error naming the field for anything else malformed (a row of another width,
  // a value that is not a finite number).
  static std::optional<Correction> from_json(const nlohmann::json& j);
};

// Where a correction is kept: one op on one target (by fingerprint) as one backend
// measures it. By op, not by workload: what one shape taught the model is what another
// shape of the op starts from.
struct CorrectionKey {
  std::string op;
  std::string target_fingerprint;
  std::string backend;
  bool operator==(const CorrectionKey&) const = default;
  auto operator<=>(const CorrectionKey&) const = default;
};

// The rows a store keeps after a session: kCorrectionSessionRows of `session` — its
// fastest half of them, then the rest spread evenly over the slower ones — then the rows
// of `stored` (nothing, or one of another layout: none), at most kCorrectionMaxRows in
// all, so the newest sessions' rows are kept and the oldest fall out. Why: the fastest
// rows are where the model's ordering decides a tuning, and the slower ones give the
// contrast a slope is learnt from (a session's fastest rows alone are all alike: the
// large tiles its first batch measured slow are what says large tiles are slow). 32 rows
// describe one shape; 128 keep the last four sessions or more, enough shapes for the
// slopes to average over while a fit on them costs about a millisecond; the prior counts
// as a fixed number of measurements however many rows it has (Predictor::kPriorWeight),
// so more rows would add cost, not weight.
inline constexpr size_t kCorrectionSessionRows = 32;
inline constexpr size_t kCorrectionMaxRows = 128;
Correction merge_corrections(const std::optional<Correction>& stored, const Correction& session);

}  // namespace pto
