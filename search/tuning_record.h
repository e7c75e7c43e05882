// TuningRecord: one measured candidate of one workload, as the tuning database keeps it
// — what was measured (workload, config), where (target name and fingerprint, backend,
// host), the outcome (status, statistics, the model's prediction beside it) and under
// which versions of the compiler and cost model. Every measurement the tuner makes
// becomes a record, failures included; a failed record never wins.
//
// RecordKey is what "the best config for this" means: (workload key, target
// fingerprint, backend). Records of other versions share the key; the one ranking of
// records (better() below) puts them after every fresh one, and the caller sees them
// for what they are (fresh(), stale_reason()).
#pragma once

#include <compare>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/target.h"
#include "core/tile_config.h"
#include "core/workload.h"
#include "measure/measurement.h"

namespace pto::search {

struct RecordKey {
  std::string workload;            // Workload::key()
  std::string target_fingerprint;  // Target::fingerprint()
  std::string backend;             // "sim", "cpu", "model", "npu", "command"
  bool operator==(const RecordKey&) const = default;
  auto operator<=>(const RecordKey&) const = default;
};

// The compiler and cost-model versions a record was made under.
struct Versions {
  std::string compiler;
  std::string cost_model;
  bool operator==(const Versions&) const = default;
  static const Versions& current();  // this build's fingerprints (core/compiler_fingerprint.h)
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
  // Made under `now`'s compiler and cost-model versions: a record that describes
  // today's code.
  bool fresh(const Versions& now = Versions::current()) const { return versions == now; }
  // Why this record does not describe today's code, or empty when it does:
  // "made by compiler 0.1.0 (now 0.2.0)".
  std::string stale_reason(const Versions& now = Versions::current()) const;
  double time_ns() const { return measurement.stats.median_ns; }

  nlohmann::json to_json() const;
  // Usage Error naming the field for malformed input.
  static TuningRecord from_json(const nlohmann::json& j);
  // Usage Error naming the first text field that is not valid UTF-8, which to_json()
  // could not write (core/utf8.h): a database row or an import from elsewhere.
  void check_text() const;
};

// What a record from elsewhere (an import) must be to be stored as a tuner's would: text
// that is UTF-8 (check_text), a workload the op library builds, a backend pto-tune knows, a positive finite time where
// it says OK, and a config that fits its target where that target is a built-in one of
// the same fingerprint (another's file is not here to check against). check() is a Usage
// Error naming what is wrong; each built-in target is loaded once per checker, not once
// per record of a release's thousands.
class ImportChecker {
 public:
  void check(const TuningRecord& r);

 private:
  struct Builtin {
    Target target;
    std::string fingerprint;
  };
  const Builtin* builtin(const std::string& name);
  std::map<std::string, std::optional<Builtin>> builtins_;
};

// Records from elsewhere (an export file: db/export_file.h; measurements taken by another
// tool: search/imported_measurements.h) on their way to ImportChecker, each with where
// it came from, for the messages: "'configs.json' records[3]", "row 3 (line 4)".
struct ImportedRecords {
  std::vector<TuningRecord> records;
  std::vector<std::string> where;  // per record
};

// What the ranking of records reads of one, so that db/ can rank rows of the database
// without building records from them; the views point into the record or row.
struct RankFields {
  bool usable = false;
  bool fresh = false;
  double time_ns = 0;
  int64_t timestamp = 0;
  std::string_view host, strategy, compiler, cost_model;
};

RankFields rank_fields(const TuningRecord& r, const Versions& now = Versions::current());

// The one ranking of records, which best(), top_k(), the JIT lookup, merge, export and
// batch resume all answer by: usable records before unusable ones, then fresh before
// stale (a stale record, however fast, describes code that is gone), then by measured
// time, then by config text, then by the rest of the record, so that "best" is one
// answer whatever the order records were stored in or databases merged.
// `config_order` three-way compares the two configs' canonical text; it is called only
// when everything before it ties, so that a caller holding config ids reads the texts
// only then.
template <typename ConfigOrder>
bool ranks_before(const RankFields& a, const RankFields& b, ConfigOrder&& config_order) {
  if (a.usable != b.usable) return a.usable;
  if (a.fresh != b.fresh) return a.fresh;
  if (a.usable && a.time_ns != b.time_ns) return a.time_ns < b.time_ns;
  if (const std::weak_ordering c = config_order(); c != 0) return c < 0;
  return std::tie(a.timestamp, a.host, a.strategy, a.compiler, a.cost_model) <
         std::tie(b.timestamp, b.host, b.strategy, b.compiler, b.cost_model);
}

// ranks_before() on two records, as of today's versions.
bool better(const TuningRecord& a, const TuningRecord& b);

}  // namespace pto::search
