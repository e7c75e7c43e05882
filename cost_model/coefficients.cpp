#include "cost_model/coefficients.h"

#include <limits>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/atomic_file.h"
#include "core/error.h"
#include "core/json_read.h"
#include "core/target.h"

namespace pto {

namespace jr = json_read;
using nlohmann::json;

namespace {

constexpr const char* kCoefNames[kNumCoefs] = {"hbm",     "l2",    "cube", "vector", "onchip",
                                               "latency", "spill", "task", "instr",  "launch"};

// What the model's instruction issue costs before calibration: one scalar-pipe cycle.
constexpr double kDefaultInstrCycles = 1.0;

std::vector<std::string_view> known_keys() {
  return {"coefficients", "target", "fingerprint", "backend", "samples", "rms_log_error", "host_prices"};
}

}  // namespace

const char* coef_name(Coef c) { return kCoefNames[static_cast<int>(c)]; }

Coefficients Coefficients::defaults(const Target& target) {
  Coefficients c;
  c.value.fill(1.0);
  c[Coef::Task] = target.task_dispatch_cycles;
  c[Coef::Instr] = kDefaultInstrCycles;
  c[Coef::Launch] = target.kernel_launch_cycles;
  c.target = target.name;
  c.fingerprint = target.fingerprint();
  return c;
}

json Coefficients::to_json() const {
  json values = json::object();
  for (int i = 0; i < kNumCoefs; ++i) values[kCoefNames[i]] = value[i];
  json j = {{"coefficients", values}, {"target", target},   {"fingerprint", fingerprint},
            {"backend", backend},     {"samples", samples}, {"rms_log_error", rms_log_error}};
  if (host_prices) j["host_prices"] = host_prices->to_json();
  return j;
}

Coefficients Coefficients::from_json(const json& j) {
  jr::object(j, "");
  jr::reject_unknown_keys(j, "", known_keys());
  if (!j.contains("coefficients")) usage_error("coefficients: missing");
  const json& values = jr::object(j.at("coefficients"), "coefficients");
  jr::reject_unknown_keys(values, "coefficients",
                          std::vector<std::string_view>(std::begin(kCoefNames), std::end(kCoefNames)));
  Coefficients c;
  for (int i = 0; i < kNumCoefs; ++i) {
    const std::string path = jr::member_path("coefficients", kCoefNames[i]);
    if (!values.contains(kCoefNames[i])) usage_error(path + ": missing");
    c.value[i] = jr::positive_number(values.at(kCoefNames[i]), path, /*allow_zero=*/true);
  }
  if (j.contains("target")) c.target = jr::string(j.at("target"), "target");
  if (j.contains("fingerprint")) c.fingerprint = jr::string(j.at("fingerprint"), "fingerprint");
  if (j.contains("backend")) c.backend = jr::string(j.at("backend"), "backend");
  if (j.contains("samples")) {
    c.samples = static_cast<int>(jr::integer(j.at("samples"), "samples", 0, std::numeric_limits<int>::max(),
                                             "a non-negative integer"));
  }
  if (j.contains("rms_log_error")) {
    c.rms_log_error = jr::positive_number(j.at("rms_log_error"), "rms_log_error", true);
  }
  if (j.contains("host_prices")) c.host_prices = HostPrices::from_json(j.at("host_prices"));
  return c;
}

void Coefficients::save(const std::string& path) const {
  write_file_atomically(path, to_json().dump(2) + "\n", "coefficients file");
}

Coefficients Coefficients::load(const std::string& path) {
  const json j = jr::parse(jr::read_text_file(path, "coefficients file"),
                           "coefficients file '" + path + "'");
  try {
    return from_json(j);
  } catch (const Error& e) {
    fail(e.category(), "coefficients file '" + path + "': " + e.what());
  }
}

}  // namespace pto
