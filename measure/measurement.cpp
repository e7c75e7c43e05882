#include "measure/measurement.h"

#include <array>
#include <cmath>
#include <limits>
#include <utility>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/json_read.h"

namespace pto::measure {

namespace {

using nlohmann::json;

constexpr std::array<std::pair<Status, const char*>, 6> kStatusNames{{
    {Status::OK, "OK"},
    {Status::INFEASIBLE, "INFEASIBLE"},
    {Status::COMPILE_ERROR, "COMPILE_ERROR"},
    {Status::RUNTIME_ERROR, "RUNTIME_ERROR"},
    {Status::TIMEOUT, "TIMEOUT"},
    {Status::WRONG_RESULT, "WRONG_RESULT"},
}};

// JSON has no infinity or NaN: a non-finite error (a NaN or inf output) is written as
// null and read back as +inf, which still reads as "far off".
json finite_or_null(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }

double number_or_inf(const json& v, const std::string& path) {
  if (v.is_null()) return std::numeric_limits<double>::infinity();
  return json_read::positive_number(v, path, /*allow_zero=*/true);
}

const json& required(const json& obj, const std::string& path, const char* key) {
  if (!obj.contains(key))
    usage_error(path + ": missing required field '" + key + "'");
  return obj[key];
}

double time_ns(const json& stats, const char* key) {
  return json_read::positive_number(required(stats, "stats", key),
                                    json_read::member_path("stats", key), /*allow_zero=*/true);
}

Stats stats_from_json(const json& j) {
  json_read::object(j, "stats");
  json_read::reject_unknown_keys(j, "stats", {"median_ns", "p10_ns", "p90_ns", "repetitions"});
  Stats s;
  s.median_ns = time_ns(j, "median_ns");
  s.p10_ns = time_ns(j, "p10_ns");
  s.p90_ns = time_ns(j, "p90_ns");
  s.repetitions = static_cast<int>(json_read::integer(required(j, "stats", "repetitions"),
                                                      "stats.repetitions", 0,
                                                      std::numeric_limits<int>::max(),
                                                      "a non-negative integer"));
  return s;
}

}  // namespace

const char* status_name(Status s) {
  for (const auto& [status, name] : kStatusNames)
    if (status == s) return name;
  return "UNKNOWN";
}

Status parse_status(const std::string& s) {
  for (const auto& [status, name] : kStatusNames)
    if (s == name) return status;
  usage_error("unknown measurement status '" + s +
              "' (known: OK, INFEASIBLE, COMPILE_ERROR, RUNTIME_ERROR, TIMEOUT, WRONG_RESULT)");
}

json Measurement::to_json() const {
  json j{
      {"status", status_name(status)},
      {"error", error},
      {"stats",
       {{"median_ns", stats.median_ns},
        {"p10_ns", stats.p10_ns},
        {"p90_ns", stats.p90_ns},
        {"repetitions", stats.repetitions}}},
      {"predicted_ns", predicted_ns},
      {"backend", backend},
      {"simulated", simulated},
      {"predicted", predicted},
      {"verified", verified},
      {"max_abs_err", finite_or_null(max_abs_err)},
      {"host", host},
      {"timestamp", timestamp},
  };
  if (!detail_json.empty()) j["detail"] = json::parse(detail_json);
  return j;
}

Measurement Measurement::from_json(const json& j) {
  json_read::object(j, "measurement");
  json_read::reject_unknown_keys(j, "measurement",
                                 {"status", "error", "stats", "predicted_ns", "backend", "simulated",
                                  "predicted", "verified", "max_abs_err", "host", "detail", "timestamp"});
  Measurement m;
  m.status = parse_status(json_read::string(required(j, "measurement", "status"), "status"));
  if (j.contains("error")) m.error = json_read::string(j["error"], "error");
  if (j.contains("stats")) m.stats = stats_from_json(j["stats"]);
  if (j.contains("predicted_ns"))
    m.predicted_ns = json_read::positive_number(j["predicted_ns"], "predicted_ns", true);
  if (j.contains("backend")) m.backend = json_read::string(j["backend"], "backend");
  if (j.contains("simulated")) m.simulated = json_read::boolean(j["simulated"], "simulated");
  // Records written before `predicted` existed: the model backend's were predictions.
  m.predicted = j.contains("predicted") ? json_read::boolean(j["predicted"], "predicted") : m.backend == "model";
  if (j.contains("verified")) m.verified = json_read::boolean(j["verified"], "verified");
  if (j.contains("max_abs_err")) m.max_abs_err = number_or_inf(j["max_abs_err"], "max_abs_err");
  if (j.contains("host")) m.host = json_read::string(j["host"], "host");
  if (j.contains("detail")) m.detail_json = json_read::object(j["detail"], "detail").dump();
  if (j.contains("timestamp"))
    m.timestamp = json_read::integer(j["timestamp"], "timestamp", 0,
                                     std::numeric_limits<int64_t>::max(), "a non-negative integer");
  return m;
}

}  // namespace pto::measure
