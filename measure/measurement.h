// Measurement: the outcome of timing one candidate config of one workload — its
// status, statistics over repetitions, the model's prediction beside it, and where
// and how it was measured. What is not a real measurement says so: `simulated` (the
// NPU simulator, and the cost model too: neither ran on hardware) and `predicted`
// (the cost model's figure alone, nothing simulated either); provenance() names it.
//
// It is backend-agnostic: a backend's own typed detail (the simulator's report, the
// cost model's estimate) rides along opaquely in `backend_detail`, and only that
// backend's header reads it (measure/sim/sim_report.h, measure/model_estimate.h), so
// that records, the database and Python depend on none of the backends' types.
#pragma once

#include <any>
#include <cstdint>
#include <string>

#include <nlohmann/json_fwd.hpp>

namespace pto::measure {

enum class Status { OK, INFEASIBLE, COMPILE_ERROR, RUNTIME_ERROR, TIMEOUT, WRONG_RESULT };
const char* status_name(Status s);          // "OK", "INFEASIBLE", ...
Status parse_status(const std::string& s);  // usage Error on unknown names

struct Stats {
  double median_ns = 0;
  double p10_ns = 0;
  double p90_ns = 0;
  int repetitions = 0;
};

struct Measurement {
  Status status = Status::OK;
  std::string error;          // why, for any status but OK
  Stats stats;
  double predicted_ns = 0;    // the cost model's prediction, 0 when none
  std::string backend;        // "sim", "cpu", "model", "npu", "command"
  bool simulated = false;     // true for sim and model: not a real measurement
  bool predicted = false;     // true for model: the cost model's figure, nothing was run
  bool verified = false;      // cpu: the first run matched the reference
  double max_abs_err = 0;
  std::string host;           // machine it ran on
  std::string detail_json;    // backend-specific detail (sim: pipe utilisation, bound), as stored
  // The same detail typed, for the caller that just measured (not stored, so not in
  // to_json/from_json); opaque here: read through its backend's accessor (see above).
  std::any backend_detail;
  int64_t timestamp = 0;      // unix seconds

  bool ok() const { return status == Status::OK; }
  // "predicted", "simulated" or "measured": how the time came about, for labels.
  const char* provenance() const { return predicted ? "predicted" : simulated ? "simulated" : "measured"; }
  // The JSON key for its time, named by provenance (measured_ns, simulated_ns or
  // predicted_ns), so that no reader takes a simulated or predicted time for a measured one.
  std::string time_key() const { return std::string(provenance()) + "_ns"; }
  nlohmann::json to_json() const;
  static Measurement from_json(const nlohmann::json& j);
};

}  // namespace pto::measure
