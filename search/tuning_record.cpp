#include "search/tuning_record.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

#include "core/analyze.h"
#include "core/error.h"
#include "core/json_read.h"
#include "core/op_library.h"
#include "core/utf8.h"
#include "derived_versions.h"
#include "measure/runner.h"

namespace pto::search {

namespace {

using nlohmann::json;

constexpr const char* kFields[] = {"workload", "config",    "target_name", "target_fingerprint",
                                   "backend",  "measurement", "versions",  "strategy"};

// `parent` names the object `key` belongs to ("" for the record itself).
const json& required(const json& j, const char* key, const std::string& parent = "") {
  if (!j.contains(key))
    usage_error("tuning record: missing required field '" + json_read::member_path(parent, key) + "'");
  return j[key];
}

// Runs a nested parser and prefixes its usage error with the field it was parsing, so
// that "stats.median_ns: ..." reads "tuning record measurement: stats.median_ns: ...".
template <typename Parse>
auto within(const char* field, Parse&& parse) {
  try {
    return parse();
  } catch (const Error& e) {
    if (e.category() != ErrorCategory::Usage) throw;
    usage_error(std::string("tuning record ") + field + ": " + e.what());
  }
}

std::string string_field(const json& j, const char* key) {
  return json_read::string(required(j, key), key);
}

Versions versions_from_json(const json& j) {
  json_read::object(j, "versions");
  json_read::reject_unknown_keys(j, "versions", {"compiler", "cost_model"});
  Versions v;
  v.compiler = json_read::string(required(j, "compiler", "versions"), "versions.compiler");
  v.cost_model = json_read::string(required(j, "cost_model", "versions"), "versions.cost_model");
  return v;
}

}  // namespace

const Versions& Versions::current() {
  static const Versions now{derived::kCompilerFingerprint, derived::kCostModelFingerprint};
  return now;
}

RecordKey TuningRecord::key() const { return {workload.key(), target_fingerprint, backend}; }

bool TuningRecord::usable() const { return measurement.ok() && time_ns() > 0; }

std::string TuningRecord::stale_reason(const Versions& now) const {
  std::string reason;
  auto note = [&reason](const char* what, const std::string& then, const std::string& today) {
    if (then == today) return;
    if (!reason.empty()) reason += ", ";
    reason += std::string("made by ") + what + " " + (then.empty() ? "(unknown)" : then) + " (now " + today + ")";
  };
  note("compiler", versions.compiler, now.compiler);
  note("cost model", versions.cost_model, now.cost_model);
  return reason;
}

json TuningRecord::to_json() const {
  return json{{"workload", workload.key()},
              {"config", config.to_json()},
              {"target_name", target_name},
              {"target_fingerprint", target_fingerprint},
              {"backend", backend},
              {"measurement", measurement.to_json()},
              {"versions", {{"compiler", versions.compiler}, {"cost_model", versions.cost_model}}},
              {"strategy", strategy}};
}

const ImportChecker::Builtin* ImportChecker::builtin(const std::string& name) {
  auto [it, added] = builtins_.try_emplace(name);
  if (added) {
    const std::vector<std::string> names = builtin_target_names();
    if (std::find(names.begin(), names.end(), name) != names.end()) {
      Target t = load_target(name);
      const std::string fingerprint = t.fingerprint();
      it->second = Builtin{std::move(t), fingerprint};
    }
  }
  return it->second ? &*it->second : nullptr;
}

void TuningRecord::check_text() const {
  const std::pair<const char*, const std::string*> fields[] = {
      {"target_name", &target_name},          {"target_fingerprint", &target_fingerprint},
      {"backend", &backend},                  {"measurement.error", &measurement.error},
      {"measurement.detail", &measurement.detail_json}, {"measurement.host", &measurement.host},
      {"versions.compiler", &versions.compiler}, {"versions.cost_model", &versions.cost_model},
      {"strategy", &strategy}};
  for (const auto& [name, text] : fields)
    if (!valid_utf8(*text)) usage_error(std::string("tuning record ") + name + " is not valid UTF-8 text");
}

void ImportChecker::check(const TuningRecord& r) {
  r.check_text();
  const TensorGraph graph = within("workload", [&] { return build_graph(r.workload); });
  within("backend", [&] {
    measure::check_backend_name(r.backend);
    return 0;
  });
  if (!r.measurement.ok()) return;
  if (!(std::isfinite(r.time_ns()) && r.time_ns() > 0))
    usage_error("tuning record measurement: status OK with a median of " + std::to_string(r.time_ns()) + " ns");
  const Builtin* own = builtin(r.target_name);
  if (!own || own->fingerprint != r.target_fingerprint) return;
  const TilingSummary s = within("config", [&] { return analyze(graph, r.config, own->target); });
  if (!s.feasible)
    usage_error("tuning record config " + r.config.to_string() + " does not fit " + r.target_name + ":\n" +
                format_violations(s.violations));
}

TuningRecord TuningRecord::from_json(const json& j) {
  json_read::object(j, "tuning record");
  json_read::reject_unknown_keys(j, "tuning record", {std::begin(kFields), std::end(kFields)});
  TuningRecord r;
  r.workload = within("workload", [&] { return Workload::parse_key(string_field(j, "workload")); });
  r.config = within("config", [&] { return TileConfig::from_json(required(j, "config")); });
  r.target_name = string_field(j, "target_name");
  r.target_fingerprint = string_field(j, "target_fingerprint");
  r.backend = string_field(j, "backend");
  r.measurement = within("measurement", [&] { return measure::Measurement::from_json(required(j, "measurement")); });
  r.versions = versions_from_json(required(j, "versions"));
  if (j.contains("strategy")) r.strategy = json_read::string(j["strategy"], "strategy");
  return r;
}

RankFields rank_fields(const TuningRecord& r, const Versions& now) {
  return {r.usable(),          r.fresh(now),   r.time_ns(),          r.measurement.timestamp,
          r.measurement.host, r.strategy,     r.versions.compiler, r.versions.cost_model};
}

bool better(const TuningRecord& a, const TuningRecord& b) {
  const Versions& now = Versions::current();
  return ranks_before(rank_fields(a, now), rank_fields(b, now), [&] {
    return a.config.to_string() <=> b.config.to_string();
  });
}

}  // namespace pto::search
