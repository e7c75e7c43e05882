// TuningRecord (see search/tuning_record.h): its key, whether it may win, whether it
// is stale, its JSON form and the one order that decides "best".
#include "search/tuning_record.h"

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/json_read.h"
#include "core/version.h"
#include "cost_model/version.h"

namespace pto::search {

namespace {

using nlohmann::json;

const json& required(const json& obj, const char* key) {
  if (!obj.contains(key)) usage_error(std::string("tuning record: missing required field '") + key + "'");
  return obj[key];
}

}  // namespace

Versions Versions::current() { return {kCompilerVersion, kCostModelVersion}; }

RecordKey TuningRecord::key() const { return {workload.key(), target_fingerprint, backend}; }

bool TuningRecord::usable() const { return measurement.ok() && measurement.stats.median_ns > 0; }

std::string TuningRecord::stale_reason(const Versions& now) const {
  std::string reason;
  auto add = [&](const char* what, const std::string& then, const std::string& today) {
    if (then == today) return;
    reason += (reason.empty() ? "made by " : " and ") + std::string(what) + " " + then + " (now " + today + ")";
  };
  add("compiler", versions.compiler, now.compiler);
  add("cost model", versions.cost_model, now.cost_model);
  return reason;
}

json TuningRecord::to_json() const {
  return {{"workload", workload.key()},
          {"config", config.to_json()},
          {"target", target_name},
          {"target_fingerprint", target_fingerprint},
          {"backend", backend},
          {"measurement", measurement.to_json()},
          {"versions", {{"compiler", versions.compiler}, {"cost_model", versions.cost_model}}},
          {"strategy", strategy}};
}

TuningRecord TuningRecord::from_json(const json& j) {
  json_read::object(j, "tuning record");
  json_read::reject_unknown_keys(j, "tuning record",
                                 {"workload", "config", "target", "target_fingerprint", "backend",
                                  "measurement", "versions", "strategy"});
  TuningRecord r;
  r.workload = Workload::parse_key(json_read::string(required(j, "workload"), "workload"));
  r.config = TileConfig::from_json(required(j, "config"));
  r.target_name = json_read::string(required(j, "target"), "target");
  r.target_fingerprint = json_read::string(required(j, "target_fingerprint"), "target_fingerprint");
  r.backend = json_read::string(required(j, "backend"), "backend");
  r.measurement = measure::Measurement::from_json(required(j, "measurement"));
  const json& versions = json_read::object(required(j, "versions"), "versions");
  r.versions.compiler = json_read::string(required(versions, "compiler"), "versions.compiler");
  r.versions.cost_model = json_read::string(required(versions, "cost_model"), "versions.cost_model");
  if (j.contains("strategy")) r.strategy = json_read::string(j["strategy"], "strategy");
  return r;
}

bool better(const TuningRecord& a, const TuningRecord& b) {
  if (a.usable() != b.usable()) return a.usable();
  if (a.time_ns() != b.time_ns()) return a.time_ns() < b.time_ns();
  return a.config.to_string() < b.config.to_string();
}

}  // namespace pto::search
