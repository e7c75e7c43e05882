// TuningRecord: one measured candidate of one workload, as the tuning database keeps it
// — what was measured (workload, config), where (target name and fingerprint, backend,
// host), the outcome (status, statistics, the model's prediction beside it) and under
// which versions of the compiler and cost model. Every measurement the tuner makes
// becomes a record, failures included; a failed record never wins.
//
// RecordKey is what "the best config for this" means: (workload key, target
// fingerprint, backend). Records of other versions share the key: the store answers
// with them and the caller decides (stale()).
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "core/target.h"
#include "core/tile_config.h"
#include "core/workload.h"
#include "measure/measurement.h"

namespace pto::search {

struct RecordKey {
  std::string workload;            // Workload::key()
  std::string target_fingerprint;  // Target::fingerprint()
  std::string backend;             // "sim", "cpu", "model"
  bool operator==(const RecordKey&) const = default;
  auto operator<=>(const RecordKey&) const = default;
};

// The compiler and cost-model versions a record was made under.
struct Versions {
  std::string compiler;
  std::string cost_model;
  bool operator==(const Versions&) const = default;
  static Versions current();  // core/version.h and cost_model's version
};

struct TuningRecord {
  Workload workload;
  TileConfig config;
  std::string target_name;         // for display; the fingerprint is the identity
  std::string target_fingerprint;
  std::string backend;
  measure::Measurement measurement;  // status, stats, predicted_ns, host, timestamp
  Versions versions;
  std::string strategy;            // which strategy proposed it ("default" for the baseline)

  RecordKey key() const;
  // OK with a positive median time: the only records that may win.
  bool usable() const;
  // Why this record does not describe today's code, or empty when it does:
  // "made by compiler 0.1.0 (now 0.2.0)".
  std::string stale_reason(const Versions& now = Versions::current()) const;
  double time_ns() const { return measurement.stats.median_ns; }

  nlohmann::json to_json() const;
  // Usage Error naming the field for malformed input.
  static TuningRecord from_json(const nlohmann::json& j);
};

// Orders usable records before unusable ones, then by measured time, then by config
// text, so that "best" is one deterministic answer whatever the insertion order.
bool better(const TuningRecord& a, const TuningRecord& b);

}  // namespace pto::search
