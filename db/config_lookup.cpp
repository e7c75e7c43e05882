// DbConfigProvider (see db/config_lookup.h). The map: Index::load() takes the best
// records (TuningDb::best_configs(), or records in memory put in the same form) and
// add() files each under its workload key (records of other fingerprints chained from
// it) and its family (op, dtype, attrs, rank, fingerprint), whose shapes finish()
// indexes; answer() walks the database's steps (exact hit, transfer or nearest, stale
// exact); explain() gives the same answer with the candidates transfer() ranked
// (rank_transfer: the margin rule).
#include "db/config_lookup.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>
#include <set>
#include <string_view>
#include <unordered_map>

#include "core/analyze.h"
#include "core/error.h"
#include "core/op_library.h"
#include "core/shape.h"
#include "core/target_fingerprints.h"
#include "cost_model/estimate.h"
#include "cost_model/predictor.h"
#include "cost_model/target_predictors.h"
#include "db/shape_index.h"
#include "db/tuning_db.h"

namespace pto::db {

namespace {

using search::TuningRecord;

constexpr size_t kNone = SIZE_MAX;

// One best record, its workload, config and target by index in the Index's pools.
struct Tuned {
  size_t workload;
  size_t config;
  size_t target;
  std::string stale_reason;  // versions; empty when fresh
  size_t backend_rank = 0;   // index in LookupOptions::backends
  size_t next = kNone;       // the next record of the same workload (another fingerprint)
  // What the model's prediction of this config's lead over the default was off by at its
  // own shape, as a factor on its predicted time (BestConfigs::Entry::own_lead_error); 1
  // without that evidence.
  double lead_correction = 1;
  // The model's errors on this key's leads over the default (BestConfigs::Entry::lead_errors):
  // what a transfer ranking this record's config learns its margin from.
  std::vector<float> lead_errors;
};

// How much slower than a neighbour's config the model must predict the default for a
// transfer to serve that config, and what it was learned from.
struct Margin {
  double fraction = 0;
  std::string basis;
};

// A neighbour's measured lead error as the factor a transfer multiplies the config's
// predicted time with. Bounded: one noisy record must not decide a transfer alone.
double lead_correction(const std::optional<float>& own_lead_error) {
  constexpr double kMostLog = 0.4;  // a factor within [0.67, 1.49]
  return own_lead_error ? std::exp(std::clamp(static_cast<double>(*own_lead_error), -kMostLog, kMostLog)) : 1.0;
}

std::string stale_reason(const search::Versions& versions) {
  if (versions == search::Versions::current()) return {};
  TuningRecord r;
  r.versions = versions;
  return r.stale_reason();
}

// Records in memory in best_configs()'s form: one entry each, usable ones only.
BestConfigs best_configs_of(const std::vector<TuningRecord>& records) {
  BestConfigs out;
  for (const TuningRecord& r : records) {
    if (!r.usable()) continue;
    const BestConfigs::TargetId target{r.target_name, r.target_fingerprint};
    auto t = std::find_if(out.targets.begin(), out.targets.end(), [&](const BestConfigs::TargetId& x) {
      return x.name == target.name && x.fingerprint == target.fingerprint;
    });
    if (t == out.targets.end()) t = out.targets.insert(t, target);
    out.entries.push_back({out.workloads.size(), out.configs.size(), static_cast<size_t>(t - out.targets.begin()),
                           r.backend, r.versions});
    out.workloads.push_back(r.workload);
    out.workload_keys.push_back(r.workload.key());
    out.configs.push_back(r.config);
  }
  return out;
}

// The records one nearest search compares: op, dtype and attrs (the workload key
// without its dims), rank and target fingerprint. From the key, which both the load
// and a lookup have at hand: "op|dims|dtype[|attrs]" -> "op|rank|dtype[|attrs]\nfp".
std::string family_key(std::string_view workload_key, size_t rank, std::string_view fingerprint) {
  const size_t op_end = workload_key.find('|');
  const size_t dims_end = workload_key.find('|', op_end + 1);
  std::string key(workload_key.substr(0, op_end + 1));
  key += std::to_string(rank);
  key += workload_key.substr(dims_end);
  key += '\n';
  key += fingerprint;
  return key;
}

// "12.3 %": a fraction as a percentage, for the reasons a choice gives.
std::string percent(double fraction) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f %%", 100 * fraction);
  return text;
}

// What one wanted shape is checked and priced with, each built on first use: the
// predictor (the target's calibrated coefficients and the op's stored correction, made
// from the provider's predictor of the target and op: TargetPredictors; a transfer uses
// its calibrated model only), or, for the
// unranked nearest or a target the model cannot describe, the analyzer alone. The graph
// is built once.
class ShapePricing {
 public:
  ShapePricing(TensorGraph g, const Target& t, const std::string& op, TargetPredictors& predictors)
      : graph(std::move(g)), target(t), op_(op), predictors_(predictors) {}

  const TensorGraph graph;
  const Target& target;

  // Null where the model cannot describe the target.
  const Predictor* model() {
    if (!tried_model_) {
      tried_model_ = true;
      model_ = predictors_.for_graph(graph, target, op_);
    }
    return model_ ? &*model_ : nullptr;
  }

  bool fits(const TileConfig& c) {
    if (model_) return model_->model().analyze(c).feasible;
    if (!analyzer_) analyzer_.emplace(graph, target);
    return analyzer_->analyze(c).feasible;
  }

 private:
  const std::string& op_;
  TargetPredictors& predictors_;
  bool tried_model_ = false;
  std::optional<Predictor> model_;
  std::optional<Analyzer> analyzer_;
};

// The one dim in which two shapes of one rank differ; none when they are equal or differ
// in more.
std::optional<size_t> sole_difference(const Shape& a, const Shape& b) {
  std::optional<size_t> dim;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i] != b[i]) {
      if (dim) return std::nullopt;
      dim = i;
    }
  return dim;
}

// The dim, M or N of the op's signature, in which two shapes differ alone: where a Cube
// tiling's count of tiles is what changes between them. None for another dim or more.
std::optional<size_t> cube_line_dim(const Shape& from, const Shape& to, const OpDef& op) {
  if (from.size() != op.dims.size()) return std::nullopt;
  const std::optional<size_t> dim = sole_difference(from, to);
  if (!dim || (op.dims[*dim] != "M" && op.dims[*dim] != "N")) return std::nullopt;
  return dim;
}

// How far (ShapeIndex::distance: octaves summed over dims) a neighbour's measured
// lead error still says something of the model's error at the wanted shape.
// Farther, the tiling meets another count of tiles and waves: 492's error applied at
// 6000,11008,4096 made a config served there 5 % slower than the default
// (results/jit_transfer.md).
constexpr double kCorrectionReach = 1;

// A neighbour's config re-cut for the wanted shape (TransferCandidate::recut) when the
// two shapes differ in M or N alone and the config has a Cube tile: the neighbour's
// count of tiles on that dim, each the smallest aligned size covering the wanted one,
// with the neighbour's L1 / L0 ratio. A tuned tiling is a tile count as much as a tile
// size: the best of 300,4096,4096 on 910B1 is 256's m [128,128] re-cut to [160,160]
// (128 would make a third, nearly empty row of tiles; results/jit_transfer.md).
std::optional<TileConfig> recut(const TileConfig& c, const Shape& from, const Shape& to, const OpDef& op) {
  if (!c.cube) return std::nullopt;
  const std::optional<size_t> dim = cube_line_dim(from, to, op);
  if (!dim) return std::nullopt;
  TileConfig out = c;
  const bool m = op.dims[*dim] == "M";
  int64_t& l0 = m ? out.cube->mL0 : out.cube->nL0;
  int64_t& l1 = m ? out.cube->mL1 : out.cube->nL1;
  if (l0 <= 0 || l1 % l0 != 0) return std::nullopt;
  constexpr int64_t kAlign = 16;  // the Cube's M and N fractal side
  const int64_t ratio = l1 / l0, tiles = ceil_div(from[*dim], l1);
  const int64_t new_l0 = align_up(ceil_div(to[*dim], tiles * ratio), kAlign);
  if (new_l0 == l0) return std::nullopt;
  l0 = new_l0;
  l1 = new_l0 * ratio;
  return out;
}

// Whether `to_config` cuts `to` into as many Cube tiles as `from_config` cut `from`,
// in the one dim (M or N) the shapes differ in: then the tasks and waves are the same,
// and what the model misjudged at `from` speaks for `to` (TransferCandidate::near). A
// re-cut aims at the same count (alignment can leave it one short). Without a Cube tile
// or such a dim: whether the shapes are within kCorrectionReach.
bool same_cut(const TileConfig& from_config, const Shape& from, const TileConfig& to_config, const Shape& to,
              const OpDef& op) {
  const std::optional<size_t> dim = cube_line_dim(from, to, op);
  if (!from_config.cube || !to_config.cube || !dim) return ShapeIndex::distance(from, to) <= kCorrectionReach;
  const auto tiles = [&](const TileConfig& c, const Shape& s) {
    const int64_t l1 = op.dims[*dim] == "M" ? c.cube->mL1 : c.cube->nL1;
    return l1 > 0 ? ceil_div(s[*dim], l1) : 0;
  };
  return tiles(from_config, from) == tiles(to_config, to);
}

// What a transfer's candidates are ranked with: `near` for the configs that cut the
// wanted shape as they cut their own (TransferCandidate::near, same_cut), `far` for the
// others.
struct Margins {
  Margin near, far;
  const Margin& of(const TransferCandidate& c) const { return c.near ? near : far; }
};

// Of a transfer's candidates (the op's default first, then the neighbours' configs
// nearest first, each with its predicted time for the wanted shape), the answer: the
// fastest neighbour's config where the model predicts the default slower by more than
// that config's margin (the model's error: closer than that, the ranking is a coin
// toss), else the default, saying why. Ties keep the default, then the nearer shape.
ConfigChoice rank_transfer(const std::vector<TransferCandidate>& candidates, const Margins& margins) {
  const auto neighbours = static_cast<size_t>(
      std::count_if(candidates.begin(), candidates.end(), [](const TransferCandidate& c) { return c.from_shape && !c.recut; }));
  // +inf: the default does not fit
  const auto advantage = [&](const TransferCandidate& c) { return candidates.front().predicted_ns / c.predicted_ns - 1; };
  size_t fastest = 0, served = 0;
  for (size_t i = 1; i < candidates.size(); ++i) {
    const TransferCandidate& c = candidates[i];
    if (c.predicted_ns < candidates[fastest].predicted_ns) fastest = i;
    if (advantage(c) > margins.of(c).fraction && (served == 0 || c.predicted_ns < candidates[served].predicted_ns))
      served = i;
  }
  ConfigChoice pick{candidates.front().config, ConfigSource::Default, {}, false, {}, neighbours};
  if (fastest == 0) return pick;
  const auto margin_text = [&](const TransferCandidate& c) {
    return "the model's " + percent(margins.of(c).fraction) + " error margin (" + margins.of(c).basis + ")";
  };
  if (served != 0) {
    const TransferCandidate& winner = candidates[served];
    const double lead = advantage(winner);
    pick = {winner.config, ConfigSource::Transfer, winner.from_shape, false, {}, neighbours};
    pick.reason = std::isfinite(lead) ? "the default is predicted " + percent(lead) + " slower, beyond " + margin_text(winner)
                                      : "the default does not fit";
    if (winner.recut) pick.reason += "; the Cube tile re-cut for this shape";
    return pick;
  }
  const TransferCandidate& winner = candidates[fastest];
  const double advantage_of_best = advantage(winner);
  pick.reason = "the default is predicted only " + percent(advantage_of_best) + " slower than the best of " +
                std::to_string(neighbours) + " tuned neighbours' configs, from " + shape_dims(*winner.from_shape) +
                (winner.recut ? " re-cut" : "") + ": within " + margin_text(winner);
  return pick;
}

}  // namespace

struct DbConfigProvider::Index {
  LookupOptions options;
  std::string location = "memory";
  std::string load_warning;  // why the database could not be read
  BestConfigs pools;  // the loaded records' workloads, configs and targets
  std::vector<Tuned> tuned;
  // Workload key -> its first record; Tuned::next chains the records of the other
  // fingerprints (usually none).
  std::unordered_map<std::string, size_t> by_workload;
  // Family key: the fresh records of one op, dtype, attrs, rank and target (members, in
  // the order given to the index), searched by shape.
  struct Family {
    std::vector<size_t> members;
    std::optional<ShapeIndex> shapes;
    Margin margin;  // what its transfers rank with where their neighbours' evidence is thin (finish())
  };
  std::unordered_map<std::string, Family> family;

  // Per tuned record, whether its config fits its target, found on its first exact hit:
  // a record from elsewhere (an import, a hand-edited row) may not, and is then never
  // served. Nearest and stale hits are analyzed on their own path.
  enum Fit : uint8_t { kUnchecked, kFits, kDoesNotFit };
  std::unique_ptr<std::atomic<uint8_t>[]> fits;

  TargetFingerprints fingerprints;
  // What transfers are priced with: the options' backends and calibrations and the
  // database's corrections (price_with).
  TargetPredictors::Sources sources;
  std::optional<TargetPredictors> predictors;

  explicit Index(LookupOptions o) : options(std::move(o)) {}

  void price_with(std::map<CorrectionKey, Correction> corrections) {
    sources = {options.backends, options.calibration_dir, std::move(corrections)};
    predictors.emplace(sources);
  }

  void load(BestConfigs all) {
    pools = std::move(all);
    tuned.reserve(pools.entries.size());
    by_workload.reserve(pools.workloads.size());
    for (const BestConfigs::Entry& e : pools.entries) add(e);
    finish();
    fits = std::make_unique<std::atomic<uint8_t>[]>(tuned.size());
    pools.entries = {};  // filed now
    pools.workload_keys = {};
  }

  const Shape& shape(const Tuned& t) const { return pools.workloads[t.workload].shape; }
  const TileConfig& config(const Tuned& t) const { return pools.configs[t.config]; }
  const BestConfigs::TargetId& target(const Tuned& t) const { return pools.targets[t.target]; }

  void add(const BestConfigs::Entry& e) {
    const auto rank = std::find(options.backends.begin(), options.backends.end(), e.backend);
    if (rank == options.backends.end()) return;
    const std::string& workload_key = pools.workload_keys[e.workload];
    if (options.only_workloads && !options.only_workloads->contains(workload_key)) return;
    Tuned t{e.workload, e.config, e.target, stale_reason(e.versions),
            static_cast<size_t>(rank - options.backends.begin()), kNone, lead_correction(e.own_lead_error),
            e.lead_errors};
    const std::string& fingerprint = pools.targets[e.target].fingerprint;
    const auto [first, added] = by_workload.try_emplace(workload_key, kNone);
    for (size_t i = first->second; i != kNone; i = tuned[i].next) {
      if (target(tuned[i]).fingerprint != fingerprint) continue;
      // A fresh record wins over a stale one, then the more trusted backend.
      auto preference = [](const Tuned& x) { return std::make_pair(!x.stale_reason.empty(), x.backend_rank); };
      if (preference(t) < preference(tuned[i])) {
        t.next = tuned[i].next;
        tuned[i] = std::move(t);
      }
      return;
    }
    t.next = first->second;
    first->second = tuned.size();
    Family& f = family[family_key(workload_key, shape(t).size(), fingerprint)];
    f.members.push_back(tuned.size());
    tuned.push_back(std::move(t));
  }

  // The record of this workload key made for the target with fingerprint `fp`, when
  // `fp` is given; else, for the target named `name`, the one of the smallest
  // fingerprint (so that the answer does not depend on the order records came in).
  const Tuned* record(const std::string& workload_key, const std::string* fp, const std::string* name) const {
    const auto it = by_workload.find(workload_key);
    if (it == by_workload.end()) return nullptr;
    const Tuned* found = nullptr;
    for (size_t i = it->second; i != kNone; i = tuned[i].next) {
      const BestConfigs::TargetId& id = target(tuned[i]);
      if (fp && id.fingerprint == *fp) return &tuned[i];
      if (name && id.name == *name && (!found || id.fingerprint < target(*found).fingerprint)) found = &tuned[i];
    }
    return found;
  }

  // After every add(): families keep fresh records only, indexed by shape, each with
  // the margin its transfers rank with.
  void finish() {
    for (auto& [key, f] : family) {
      set_margin(f);
      std::erase_if(f.members, [&](size_t i) { return !tuned[i].stale_reason.empty(); });
      if (f.members.empty()) continue;
      const size_t rank = shape(tuned[f.members.front()]).size();
      std::vector<int64_t> dims;
      dims.reserve(f.members.size() * rank);
      for (size_t i : f.members) dims.insert(dims.end(), shape(tuned[i]).begin(), shape(tuned[i]).end());
      f.shapes.emplace(rank, dims);
    }
  }

  // The family's margin: learned from every lead error of its records, else the prior.
  void set_margin(Family& f) const {
    std::vector<float> errors;
    for (size_t i : f.members) errors.insert(errors.end(), tuned[i].lead_errors.begin(), tuned[i].lead_errors.end());
    const size_t n = errors.size();
    if (const std::optional<double> learned = learned_margin(std::move(errors))) {
      f.margin = {*learned, learned_basis(n, "of this op")};
      return;
    }
    f.margin = {options.transfer_margin, options.learn_margin ? "the prior: " + std::to_string(n) +
                                                                    " measured lead errors of this op, " +
                                                                    std::to_string(LookupOptions::kMinLeadEvidence) +
                                                                    " wanted"
                                                              : "given"};
  }

  // LookupOptions::learn_margin: the 90th percentile of `errors` as a fraction (never
  // below 0: a model that promised less than it gave needs no margin); none with fewer
  // than kMinLeadEvidence of them.
  std::optional<double> learned_margin(std::vector<float> errors) const {
    const size_t n = errors.size();
    if (!options.learn_margin || n < LookupOptions::kMinLeadEvidence) return std::nullopt;
    const size_t at = (n * 9) / 10;
    std::nth_element(errors.begin(), errors.begin() + static_cast<std::ptrdiff_t>(at), errors.end());
    return std::min(kMaxLearnedMargin, std::max(0.0, std::expm1(static_cast<double>(errors[at]))));
  }
  static std::string learned_basis(size_t errors, const std::string& where) {
    return "learned: the 90th percentile of " + std::to_string(errors) + " measured lead errors " + where;
  }

  // The margins a transfer ranking the configs of `near` uses. Near (a config that cuts
  // the wanted shape as it cut its own: same_cut): the model's error measured at those
  // shapes, where they hold kMinLeadEvidence lead errors, else the family's. The model is
  // not equally wrong everywhere on an op: on the LLM matmuls its 90th percentile is
  // 0-3 % at the small-M buckets and 15-50 % at a few large ones, and the family's pooled
  // 7 % kept the default at 3, 12 and 77 rows of 4096,11008, 6-7 % off their tuned best.
  // Far (a config that cuts it into another count of tiles): the larger of that and the
  // family's, as those shapes' errors were measured on another tiling (128's m [128,128]
  // at 300,4096,11008, three rows of tiles for its one: predicted 3.1 % faster than the
  // default against a margin of 0.7 % learned at the neighbours, simulated 10.8 % slower;
  // results/jit_transfer.md).
  Margins margins_near(const Family& f, const std::vector<const Tuned*>& near) const {
    std::vector<float> errors;
    for (const Tuned* t : near) errors.insert(errors.end(), t->lead_errors.begin(), t->lead_errors.end());
    const size_t n = errors.size();
    const std::optional<double> local = learned_margin(std::move(errors));
    Margins out{local ? Margin{*local, learned_basis(n, "at the " + std::to_string(near.size()) + " tuned shapes ranked")}
                      : f.margin,
                f.margin};
    if (out.near.fraction > out.far.fraction) out.far = out.near;
    return out;
  }

  // A model wrong by more than this on an op ranks no transfer worth the risk anyway.
  static constexpr double kMaxLearnedMargin = 0.5;

  // Whether the exact hit `hit` of `w` may be served on `t`: analyzed once, with one
  // warning when it does not fit.
  bool fits_target(const Tuned& hit, const Workload& w, const std::string& workload_key, const Target& t) {
    std::atomic<uint8_t>& verdict = fits[static_cast<size_t>(&hit - tuned.data())];
    if (const uint8_t v = verdict.load(std::memory_order_acquire); v != kUnchecked) return v == kFits;
    const bool fit = analyze(build_graph(w), config(hit), t).feasible;
    uint8_t unchecked = kUnchecked;
    if (verdict.compare_exchange_strong(unchecked, fit ? kFits : kDoesNotFit) && !fit) {
      options.warn("tuning database '" + location + "': the record of " + workload_key + " for target '" + t.name +
                   "' has config " + config(hit).to_string() + ", which does not fit it: not served");
    }
    return fit;
  }

  // The stale record of this workload when there is one: versions first, else one made
  // for the same target name under another fingerprint.
  std::optional<ConfigChoice> stale_exact(const std::string& workload_key, const Target& t, const std::string& fp) {
    if (const Tuned* same = record(workload_key, &fp, nullptr))
      return ConfigChoice{config(*same), ConfigSource::Exact, {}, true, same->stale_reason};
    const Tuned* other = record(workload_key, nullptr, &t.name);
    if (!other) return std::nullopt;
    std::string reason =
        "tuned for target '" + t.name + "' with fingerprint " + target(*other).fingerprint + " (now " + fp + ")";
    if (!other->stale_reason.empty()) reason += ", " + other->stale_reason;
    return ConfigChoice{config(*other), ConfigSource::Exact, {}, true, reason};
  }

  // Up to `most` tuned shapes nearest to this one whose configs fit it (`fits(Tuned)`), nearest
  // first (db/shape_index.h gives the order). For a ranked transfer (`on_line_first`),
  // shapes on a line through this one (equal in every dim but one) come first, and when
  // there are any, only they: a dynamic dim
  // (an LLM matmul's M) varies alone, and a config tuned for another N or K solves
  // another problem, where the model's error is larger (results/jit_transfer.md: at
  // 6000,4096,11008 the config of 8192,4096,4096 was predicted 35 % faster than the
  // default and simulated 6 % slower). On the line, the nearest shape on each side of
  // this one is among them, one more than `most` where the nearest `most` lie on one
  // side: the buckets below a size are often far sparser than those above it, and the
  // smaller bucket's tiling, re-cut, can be the one that fits (48,11008,4096: M = 1's,
  // re-cut, is 1.3 % off its tuned best, the four nearest buckets above it 6 %;
  // results/jit_transfer.md). The walk past the first `most` shapes is bounded, so that
  // a large family costs a lookup no more than a few dozen.
  template <typename Fits>
  std::vector<const Tuned*> neighbours(const Family& f, const Shape& wanted, size_t most, bool on_line_first,
                                       Fits&& fits) const {
    std::vector<const Tuned*> on_line, off_line;
    if (!f.shapes) return on_line;
    LineSides sides(wanted);
    size_t walked = 0;
    f.shapes->nearest(wanted, [&](size_t i) {
      const Tuned& t = tuned[f.members[i]];
      const bool line = !on_line_first || on_line_with(shape(t), wanted);
      std::vector<const Tuned*>& found = line ? on_line : off_line;
      const bool by_side = on_line_first && line;
      const bool wanted_here = found.size() < most || (by_side && found.size() == most && sides.missing(shape(t)));
      if (wanted_here && fits(t)) {
        found.push_back(&t);
        if (by_side) sides.add(shape(t));
      }
      const bool done = on_line.size() > most || (on_line.size() == most && (!on_line_first || sides.both_seen()));
      return done || ((on_line.size() >= most || off_line.size() >= most) && ++walked > kOffLineWalk);
    });
    return on_line.empty() ? off_line : on_line;
  }

  // Which sides of a wanted shape the shapes on lines through it lie on, per dim.
  class LineSides {
   public:
    explicit LineSides(const Shape& wanted) : wanted_(wanted) {}
    void add(const Shape& s) { seen_.insert(side(s)); }
    // Whether `s` (on a line through the wanted shape) lies on a side of its dim that no
    // added shape does, while the other side has one.
    bool missing(const Shape& s) const {
      const auto [dim, below] = side(s);
      return !seen_.contains({dim, below}) && seen_.contains({dim, !below});
    }
    // Whether every dim an added shape differs in has shapes on both of its sides.
    bool both_seen() const {
      return std::all_of(seen_.begin(), seen_.end(), [&](const auto& x) { return seen_.contains({x.first, !x.second}); });
    }

   private:
    std::pair<size_t, bool> side(const Shape& s) const {
      const size_t dim = sole_difference(s, wanted_).value_or(0);
      return {dim, s[dim] < wanted_[dim]};
    }
    const Shape& wanted_;
    std::set<std::pair<size_t, bool>> seen_;
  };

  // Shapes looked at beyond the first `most` off the line before the walk gives up on
  // finding one on it.
  static constexpr size_t kOffLineWalk = 32;

  static bool on_line_with(const Shape& a, const Shape& b) { return a == b || sole_difference(a, b); }

  // Step 2 of the fallback order (db/config_lookup.h). Each neighbour's config is
  // analyzed once: the summary says whether it fits and is what the model prices.
  // `explained`, when given, gets every candidate the model priced, the default first,
  // and the margin it ranked them with.
  std::optional<ConfigChoice> transfer(const Workload& w, const std::string& workload_key, const std::string& fp,
                                       ShapePricing& pricing, LookupExplanation* explained) const {
    const auto it = family.find(family_key(workload_key, w.shape.size(), fp));
    if (it == family.end()) return std::nullopt;
    const Family& f = it->second;
    const Predictor* model = options.transfer_neighbours > 0 ? pricing.model() : nullptr;
    if (!model) {  // unranked: the nearest feasible shape's config as it is
      const std::vector<const Tuned*> near =
          neighbours(f, w.shape, 1, false, [&](const Tuned& t) { return pricing.fits(config(t)); });
      if (near.empty()) return std::nullopt;
      return ConfigChoice{config(*near.front()), ConfigSource::Nearest, shape(*near.front()), false, {}};
    }
    // A config's time for this shape, from one analysis; none where it does not fit.
    // Priced by the calibrated model without the op's stored correction: the margin is
    // that model's measured error (records keep its predictions, search/tuner.cpp), and
    // the correction, fitted on the tuner's searches at other shapes, extrapolated badly
    // between them (results/jit_transfer.md: batch_matmul 8,6000,1024,1024 priced at
    // 1.5-1.8 ms against 0.57-0.62 ms simulated, in the wrong order).
    const CostModel& priced = model->model();
    const auto price = [&](const TileConfig& c) -> std::optional<double> {
      const TilingSummary summary = priced.analyze(c);
      if (!summary.feasible) return std::nullopt;
      return priced.estimate(summary, c).predicted_ns;
    };
    std::unordered_map<const Tuned*, double> predicted;  // each neighbour's, priced once
    const std::vector<const Tuned*> near = neighbours(f, w.shape, options.transfer_neighbours, true, [&](const Tuned& t) {
      const std::optional<double> ns = price(config(t));
      if (ns) predicted.emplace(&t, *ns);
      return ns.has_value();
    });
    if (near.empty()) return std::nullopt;
    std::vector<TransferCandidate> candidates(1);
    const OpDef& op = find_op(w.op);
    const Margins margins = margins_near(f, near);
    for (const Tuned* t : near) {
      const bool within = ShapeIndex::distance(shape(*t), w.shape) <= kCorrectionReach;
      const double k = options.correct_by_neighbour_leads && within ? t->lead_correction : 1.0;
      const auto candidate = [&](const TileConfig& c, double ns, bool recut) {
        TransferCandidate out{shape(*t), c, ns * k, recut, k, same_cut(config(*t), shape(*t), c, w.shape, op)};
        out.margin = margins.of(out).fraction;
        return out;
      };
      candidates.push_back(candidate(config(*t), predicted.at(t), false));
      if (!options.recut_neighbours) continue;
      if (const std::optional<TileConfig> c = recut(config(*t), shape(*t), w.shape, op))
        if (const std::optional<double> ns = price(*c)) candidates.push_back(candidate(*c, *ns, true));
    }
    candidates.front().config = default_config(w, pricing.graph, pricing.target);
    candidates.front().predicted_ns = priced.predict_ns(candidates.front().config);
    ConfigChoice pick = rank_transfer(candidates, margins);
    if (explained) {
      explained->candidates = std::move(candidates);
      explained->margin = margins.near.fraction;
      explained->margin_basis = margins.near.basis;
      if (margins.far.fraction != margins.near.fraction)
        explained->margin_basis += "; for a config that cuts this shape into another count of tiles than its own, " +
                                   percent(margins.far.fraction) + " (" + margins.far.basis + ")";
    }
    return pick;
  }

  // Step 1: a fresh record of this workload whose config fits.
  std::optional<ConfigChoice> exact(const Workload& w, const std::string& workload_key, const Target& t,
                                    const std::string& fp) {
    if (const Tuned* hit = record(workload_key, &fp, nullptr);
        hit && hit->stale_reason.empty() && fits_target(*hit, w, workload_key, t))
      return ConfigChoice{config(*hit), ConfigSource::Exact, {}, false, {}};
    return std::nullopt;
  }

  // The steps of db/config_lookup.h in order; `explained`, when given, gets what a
  // transfer ranked.
  std::optional<ConfigChoice> answer(const Workload& w, const Target& t, LookupExplanation* explained = nullptr) {
    const std::string workload_key = w.key();
    const std::string& fp = fingerprints.of(t);
    if (auto hit = exact(w, workload_key, t, fp)) return hit;
    ShapePricing pricing(build_graph(w), t, w.op, *predictors);
    if (auto hit = transfer(w, workload_key, fp, pricing, explained)) return hit;
    if (auto old = stale_exact(workload_key, t, fp); old && pricing.fits(old->config)) return old;
    return std::nullopt;
  }
};

DbConfigProvider::DbConfigProvider(const std::vector<TuningRecord>& records, LookupOptions options)
    : index_(std::make_unique<Index>(std::move(options))) {
  index_->load(best_configs_of(records));
  index_->price_with({});
}

DbConfigProvider::DbConfigProvider(const std::string& path, LookupOptions options)
    : index_(std::make_unique<Index>(std::move(options))) {
  index_->location = path;
  std::map<CorrectionKey, Correction> corrections;
  try {
    if (database_exists(path)) {
      const std::unique_ptr<TuningDb> db = TuningDb::open(path, OpenMode::ReadOnly);
      index_->load(db->best_configs());
      corrections = db->corrections();
    }
  } catch (const Error& e) {
    if (index_->options.strict) throw;
    // The JIT compiles on without tuned configs rather than stopping the program.
    index_->load_warning = "tuning database '" + path + "' not used: " + e.what() +
                           "; serving the cost model's pick or the op's default instead";
    index_->options.warn(index_->load_warning);
  }
  index_->price_with(std::move(corrections));
}

DbConfigProvider::~DbConfigProvider() = default;

std::optional<ConfigChoice> DbConfigProvider::lookup(const Workload& w, const Target& t) { return index_->answer(w, t); }

LookupExplanation DbConfigProvider::explain(const Workload& w, const Target& t) {
  LookupExplanation out;
  out.margin = index_->options.transfer_margin;
  out.choice = index_->answer(w, t, &out);
  return out;
}

size_t DbConfigProvider::size() const { return index_->tuned.size(); }
const std::string& DbConfigProvider::location() const { return index_->location; }
const std::string& DbConfigProvider::load_warning() const { return index_->load_warning; }
const TargetPredictors::Sources& DbConfigProvider::model_sources() const { return index_->sources; }

}  // namespace pto::db
