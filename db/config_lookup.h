// DbConfigProvider: the JIT's ConfigProvider (core/jit.h) on a tuning database — the
// runtime side of the tuner, and the first step of the JIT's fallback order
// (core/config_chain.h: this, then the cost model's pick, search/model_pick.h, then the
// op's default). It reads the database once, into an immutable in-memory index, and
// never measures or writes; lookups are thread-safe and are not memoized (the chain
// memoizes them).
//
// What it serves, each step reported in the answer's ConfigChoice, and nothing (the
// chain's next step) when none applies:
//   1. exact: a tuned record of this workload (op, shape, dtype, attrs) on this target
//      whose config core::analyze finds feasible here (checked on its first hit: a
//      record imported or edited from elsewhere may not fit, and is then skipped with
//      one warning naming it, through LookupOptions::warn);
//   2. transfer: the configs tuned for the LookupOptions::transfer_neighbours shapes
//      of the same op, dtype, attrs, rank and target nearest to this one (distance: the
//      sum over dims of |log2(tuned / wanted)|; ties go to the smaller shape, dim by
//      dim) whose configs core::analyze finds feasible here, found in a k-d tree over
//      log2 dims (db/shape_index.h), ranked with the op's default by the cost model for
//      this shape (calibrated, without the op's stored correction: the margin below is
//      that model's error), each neighbour's time multiplied by what the model misjudged
//      of that config's lead over the default at the neighbour's own shape, when the
//      neighbour is within an octave (LookupOptions::correct_by_neighbour_leads): a
//      neighbour's config is served only where the model predicts the
//      default slower by more than its margin (the model's error measured at the
//      neighbours ranked where they hold enough of it, else on all the op's records,
//      else LookupOptions::transfer_margin: learn_margin; for a config that cuts this
//      shape into another count of tiles than its own, the larger of the first and the
//      op's), the fastest such,
//      else the default, saying why (ConfigChoice::reason). Each config is analyzed once,
//      and the model priced from that summary. The nearest shape's best
//      tiling is often not this one's (77,4096,11008 between tuned 64 and 128 rows),
//      and the default is the floor the JIT must not fall below. Each neighbour's config
//      is ranked as tuned and re-cut for this shape (TransferCandidate::recut). With
//      transfer_neighbours 0, or where the model cannot score the target, the nearest
//      feasible shape's config as it is (nearest);
//   3. stale: the stale exact record (below) when its config fits here.
// Stale records — made under other compiler or cost-model versions, or for the same
// target name with another fingerprint (its description changed) — are never served as
// fresh: a fresh record wins wherever there is one, and when an exact hit is stale it
// is served flagged stale, with the version or fingerprint it came from.
//
// Records are matched on a backend: the first of LookupOptions::backends the database
// has for the key (measured on hardware before simulated before predicted).
//
// Targets are identified by name within one provider: the provider computes a target's
// fingerprint the first time it sees the name and reuses it, so a lookup costs a hash
// of the workload key, not a hash of the target description. A process that changes a
// target's description under the same name makes a new provider.
//
// The JIT degrades rather than dies: a database that cannot be read (corrupt, not a
// tuning database, a schema this build does not know, unreadable) is served as if it
// were missing — nothing, so the model's pick or the default — with a warning that
// names the file and why; LookupOptions::strict makes it the error instead. Either way
// the file is left as it was.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

#include "core/jit.h"
#include "core/warning.h"
#include "cost_model/calibration_store.h"
#include "cost_model/target_predictors.h"
#include "search/tuning_record.h"

namespace pto::db {

struct LookupOptions {
  // Backends whose records may be served, most trusted first.
  std::vector<std::string> backends = {"npu", "cpu", "sim", "model"};
  // Tuned shapes whose configs a transfer ranks (step 2); 0: the nearest one's config
  // is served unranked.
  size_t transfer_neighbours = 4;
  // How much faster than the op's default the model must predict a neighbour's config
  // for a transfer to serve it (0.03: the default predicted more than 3 % slower): the
  // model's error in ranking two configs of one shape, below which the default, the
  // floor, is kept. With `learn_margin`, this is the prior, for a family with too little
  // evidence. 3 %: above the uncalibrated model's top-1 regret on the simulated ranking
  // suite (0-1 % for matmul, batch_matmul, softmax, layernorm, gelu;
  // results/cost_model_ranking.md) with room for the shape being one it was not ranked on.
  double transfer_margin = 0.03;
  // The margin from the records instead (the model's measured error on that op, target
  // and backend): those of the neighbours a transfer ranks where they hold
  // kMinLeadEvidence lead errors, else all the op's, where they do: the 90th
  // percentile of how much more the model promised than was measured, over the configs
  // the tuner measured within 5 % of each key's best, against the default it measures
  // first (BestConfigs::Entry::lead_errors). A transfer then serves a config only where its
  // predicted lead over the default exceeds what the model overstated nine times in
  // ten for this op; a model that is right there serves more transfers than the prior,
  // one that is wrong fewer. A caller's own margin (`--transfer-margin`) turns it off.
  bool learn_margin = true;
  static constexpr size_t kMinLeadEvidence = 16;
  // Also rank each neighbour's config re-cut for the wanted shape (TransferCandidate::recut).
  bool recut_neighbours = true;
  // Correct each neighbour's predicted time by the model's measured error on that
  // config's lead over the default at the neighbour's own shape
  // (TransferCandidate::correction): where the model understated a tuned tiling's lead
  // at the buckets, it understates it between them too.
  bool correct_by_neighbour_leads = true;
  // When given, only the records of these workload keys are loaded: what a database
  // holding just them would serve, with the evidence they were tuned with (the planner's
  // check of a release that ships its buckets, cli/cmd_plan.cpp).
  std::optional<std::unordered_set<std::string>> only_workloads;
  // A database that cannot be read is an error (the Db or Io Error of the file)
  // instead of a warning and no records.
  bool strict = false;
  // Where the calibrations that transfers are priced with are looked for
  // (cost_model/calibration_store.h); empty: the datasheet coefficients.
  std::string calibration_dir = default_calibration_dir();
  // Where the warning about a database that cannot be read goes.
  WarningSink warn = [](const std::string& message) { pto::warn(message); };
};

// One config a transfer priced for the wanted shape: the op's default or a tuned
// neighbour's.
struct TransferCandidate {
  std::optional<Shape> from_shape;  // the neighbour's tuned shape; none for the default
  TileConfig config;
  double predicted_ns = 0;          // the cost model's for the wanted shape, times `correction`
  // The neighbour's config with its Cube tile re-cut for this shape: as many M (or N)
  // tiles as the neighbour's shape had, each the smallest aligned size covering this one.
  bool recut = false;
  // The factor the model's time was corrected by: measured / predicted lead over the
  // default of the neighbour's config at its own shape (LookupOptions::
  // correct_by_neighbour_leads); 1 for the default and without that evidence.
  double correction = 1;
  // Whether the config cuts the wanted shape into as many Cube tiles as the neighbour's
  // own (in the dim, M or N, they differ in; without a Cube tile: whether the shapes are
  // within an octave): then the margin is the one learned at the neighbours ranked.
  bool near = false;
  // How much slower the default must be predicted for this config to be served (0 for
  // the default): for a near one, the margin learned at the neighbours ranked; for
  // another, the larger of that and the op's.
  double margin = 0;
};

// The database's answer with the ranking behind it (`pto-tune lookup --explain`).
struct LookupExplanation {
  std::optional<ConfigChoice> choice;  // none: the database has nothing, the chain's next step serves
  // What a transfer ranked: the op's default first, then the neighbours' configs,
  // nearest first. Empty when no ranking took place (an exact hit, no neighbour, ...).
  std::vector<TransferCandidate> candidates;
  // The margin of the configs that cut this shape as they cut their own (learned or
  // LookupOptions::transfer_margin; each candidate has its own: TransferCandidate::margin).
  double margin = 0;
  std::string margin_basis;  // where it and the others' margin came from, for people
};

class DbConfigProvider : public ConfigProvider {
 public:
  // Loads the database at `path` read-only (a missing file is an empty database: every
  // lookup answers nothing) through TuningDb::best_configs(). A file
  // that cannot be read is served as a missing one, with a warning (see above), or with
  // LookupOptions::strict is the Error saying why; the file is never changed.
  explicit DbConfigProvider(const std::string& path, LookupOptions options = {});
  // From records already in memory (TuningDb::best_records(), or tests).
  explicit DbConfigProvider(const std::vector<search::TuningRecord>& records, LookupOptions options = {});
  ~DbConfigProvider() override;

  // Steps 1-3 above; nullopt when none applies.
  std::optional<ConfigChoice> lookup(const Workload& w, const Target& t) override;
  // lookup()'s answer with the candidates it ranked.
  LookupExplanation explain(const Workload& w, const Target& t);

  size_t size() const;  // tuned records in the index
  const std::string& location() const;
  // The warning given when the database at location() could not be read (none of it
  // is served), naming the file and why; empty when it was read (or is missing).
  const std::string& load_warning() const;
  // What transfers are priced with (the options' backends and calibrations, the
  // database's corrections): for the model's pick after this step
  // (search::ModelPickProvider), so that both rank with the same predictor.
  const TargetPredictors::Sources& model_sources() const;

 private:
  struct Index;
  std::unique_ptr<Index> index_;
};

}  // namespace pto::db
