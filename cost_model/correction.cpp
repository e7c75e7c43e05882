#include "cost_model/correction.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>

#include <nlohmann/json.hpp>

#include "core/json_read.h"

namespace pto {

namespace {

using nlohmann::json;

double finite_number(const json& value, const std::string& path) {
  if (!value.is_number() || !std::isfinite(value.get<double>())) json_read::bad_value(path, "a finite number", value);
  return value.get<double>();
}

CorrectionRow row_from_json(const json& j, const std::string& path) {
  json_read::object(j, path);
  json_read::reject_unknown_keys(j, path, {"features", "log_residual"});
  if (!j.contains("features") || !j.contains("log_residual"))
    json_read::bad_value(path, "an object with features and log_residual", j);
  const std::string features_path = json_read::member_path(path, "features");
  const json& features = json_read::array(j["features"], features_path, kFeatureCount, kFeatureCount);
  CorrectionRow row;
  for (size_t i = 0; i < features.size(); ++i)
    row.features.push_back(finite_number(features[i], json_read::index_path(features_path, i)));
  row.log_residual = finite_number(j["log_residual"], json_read::member_path(path, "log_residual"));
  return row;
}

}  // namespace

json Correction::to_json() const {
  json rows_json = json::array();
  for (const CorrectionRow& r : rows) rows_json.push_back({{"features", r.features}, {"log_residual", r.log_residual}});
  return {{"layout", layout}, {"rows", std::move(rows_json)}};
}

std::optional<Correction> Correction::from_json(const json& j) {
  json_read::object(j, "correction");
  json_read::reject_unknown_keys(j, "correction", {"layout", "rows"});
  if (!j.contains("layout") || !j.contains("rows")) json_read::bad_value("correction", "an object with layout and rows", j);
  Correction c;
  c.layout = static_cast<int>(json_read::positive_integer(j["layout"], "correction.layout"));
  if (c.layout != kFeatureLayout) return std::nullopt;
  const json& rows = json_read::array(j["rows"], "correction.rows", 0, SIZE_MAX);
  for (size_t i = 0; i < rows.size(); ++i) c.rows.push_back(row_from_json(rows[i], json_read::index_path("correction.rows", i)));
  return c;
}

Correction merge_corrections(const std::optional<Correction>& stored, const Correction& session) {
  std::vector<CorrectionRow> ranked = session.rows;
  std::stable_sort(ranked.begin(), ranked.end(),
                   [](const CorrectionRow& a, const CorrectionRow& b) { return a.log_measured() < b.log_measured(); });
  Correction out;
  if (ranked.size() <= kCorrectionSessionRows) {
    out.rows = std::move(ranked);
  } else {
    const size_t fastest = kCorrectionSessionRows / 2, spread = kCorrectionSessionRows - fastest;
    out.rows.assign(ranked.begin(), ranked.begin() + static_cast<std::ptrdiff_t>(fastest));
    const size_t rest = ranked.size() - fastest;  // more than `spread`: the picks are distinct
    for (size_t j = 0; j < spread; ++j) out.rows.push_back(ranked[fastest + j * (rest - 1) / (spread - 1)]);
  }
  if (stored && stored->layout == kFeatureLayout)
    for (size_t i = 0; i < stored->rows.size() && out.rows.size() < kCorrectionMaxRows; ++i) out.rows.push_back(stored->rows[i]);
  return out;
}

}  // namespace pto
