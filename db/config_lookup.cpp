// DbConfigProvider (see db/config_lookup.h). The map: Index::load() takes the best
// records (TuningDb::best_configs(), or records in memory put in the same form) and
// add() files each under its workload key (records of other fingerprints chained from
// it) and its family (op, dtype, attrs, rank, fingerprint), whose shapes finish()
// indexes; choose() walks the fallback order (exact hit, nearest, stale exact,
// model_pick, default) and memoizes the slow answers.
#include "db/config_lookup.h"

#include <algorithm>
#include <atomic>
#include <optional>
#include <shared_mutex>
#include <string_view>
#include <unordered_map>

#include "core/analyze.h"
#include "core/error.h"
#include "core/op_library.h"
#include "cost_model/estimate.h"
#include "db/shape_index.h"
#include "db/tuning_db.h"
#include "search/space_generator.h"

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
};

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
  };
  std::unordered_map<std::string, Family> family;

  // Per tuned record, whether its config fits its target, found on its first exact hit:
  // a record from elsewhere (an import, a hand-edited row) may not, and is then never
  // served. Nearest and stale hits are analyzed on their own path.
  enum Fit : uint8_t { kUnchecked, kFits, kDoesNotFit };
  std::unique_ptr<std::atomic<uint8_t>[]> fits;

  std::shared_mutex mutex;  // guards the two memos below
  std::unordered_map<std::string, std::string> fingerprints;  // target name -> fingerprint
  std::unordered_map<std::string, ConfigChoice> answers;      // workload key + fingerprint

  explicit Index(LookupOptions o) : options(std::move(o)) {}

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
    Tuned t{e.workload, e.config, e.target, stale_reason(e.versions),
            static_cast<size_t>(rank - options.backends.begin())};
    const std::string& workload_key = pools.workload_keys[e.workload];
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
    family[family_key(workload_key, shape(t).size(), fingerprint)].members.push_back(tuned.size());
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

  // After every add(): families keep fresh records only, indexed by shape.
  void finish() {
    for (auto& [key, f] : family) {
      std::erase_if(f.members, [&](size_t i) { return !tuned[i].stale_reason.empty(); });
      if (f.members.empty()) continue;
      const size_t rank = shape(tuned[f.members.front()]).size();
      std::vector<int64_t> dims;
      dims.reserve(f.members.size() * rank);
      for (size_t i : f.members) dims.insert(dims.end(), shape(tuned[i]).begin(), shape(tuned[i]).end());
      f.shapes.emplace(rank, dims);
    }
  }

  const std::string& fingerprint(const Target& t) {
    {
      std::shared_lock lock(mutex);
      if (const auto it = fingerprints.find(t.name); it != fingerprints.end()) return it->second;
    }
    std::string fp = t.fingerprint();
    std::unique_lock lock(mutex);
    return fingerprints.emplace(t.name, std::move(fp)).first->second;
  }

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

  // Up to `most` tuned shapes nearest to this one whose configs fit it, nearest first
  // (db/shape_index.h gives the order).
  std::vector<const Tuned*> neighbours(const Workload& w, const std::string& workload_key, const std::string& fp,
                                       const Analyzer& analyzer, size_t most) const {
    std::vector<const Tuned*> found;
    const auto it = family.find(family_key(workload_key, w.shape.size(), fp));
    if (it == family.end() || !it->second.shapes) return found;
    const Family& f = it->second;
    f.shapes->nearest(w.shape, [&](size_t i) {
      const Tuned& t = tuned[f.members[i]];
      if (analyzer.analyze(config(t)).feasible) found.push_back(&t);
      return found.size() >= most;
    });
    return found;
  }

  // Step 2 of the fallback order (db/config_lookup.h).
  std::optional<ConfigChoice> transfer(const Workload& w, const std::string& workload_key, const std::string& fp,
                                       const TensorGraph& graph, const Analyzer& analyzer, const Target& t) const {
    const std::vector<const Tuned*> near =
        neighbours(w, workload_key, fp, analyzer, std::max<size_t>(options.transfer_neighbours, 1));
    if (near.empty()) return std::nullopt;
    const ConfigChoice nearest{config(*near.front()), ConfigSource::Nearest, shape(*near.front()), false, {}};
    if (options.transfer_neighbours == 0) return nearest;
    try {
      const CostModel model(graph, t);
      ConfigChoice pick{default_config(w, graph, t), ConfigSource::Default, {}, false, {}, near.size()};
      double fastest = model.predict_ns(pick.config);
      for (const Tuned* n : near) {
        const double predicted = model.predict_ns(config(*n));
        if (predicted >= fastest) continue;  // ties keep the default, then the nearer shape
        fastest = predicted;
        pick = {config(*n), ConfigSource::Transfer, shape(*n), false, {}, near.size()};
      }
      return pick;
    } catch (const Error&) {
      return nearest;  // a target the model cannot describe
    }
  }

  // The cost model's best of a deterministic sample of the space (a sample, not the
  // first candidates in index order, which are all small tiles) and the default.
  std::optional<ConfigChoice> model_pick(const Workload& w, const TensorGraph& graph, const Target& t) const {
    if (options.model_candidates == 0) return std::nullopt;
    try {
      const search::SpaceGenerator space = search::SpaceGenerator::for_workload(w, t);
      std::vector<TileConfig> candidates = space.sample(options.model_candidates, /*seed=*/1);
      candidates.push_back(space.baseline());
      std::vector<double> predicted(candidates.size());
      CostModel(graph, t).score(candidates, predicted);
      const size_t best = std::min_element(predicted.begin(), predicted.end()) - predicted.begin();
      if (!std::isfinite(predicted[best])) return std::nullopt;
      return ConfigChoice{candidates[best], ConfigSource::Model, {}, false, {}};
    } catch (const Error&) {
      return std::nullopt;  // a target the model cannot describe: the default will do
    }
  }

  ConfigChoice slow_path(const Workload& w, const std::string& workload_key, const Target& t, const std::string& fp) {
    const TensorGraph graph = build_graph(w);
    const Analyzer analyzer(graph, t);
    if (auto hit = transfer(w, workload_key, fp, graph, analyzer, t)) return *hit;
    if (auto old = stale_exact(workload_key, t, fp); old && analyzer.analyze(old->config).feasible) return *old;
    if (auto pick = model_pick(w, graph, t)) return *pick;
    return {default_config(w, graph, t), ConfigSource::Default, {}, false, {}};
  }
};

DbConfigProvider::DbConfigProvider(const std::vector<TuningRecord>& records, LookupOptions options)
    : index_(std::make_unique<Index>(std::move(options))) {
  index_->load(best_configs_of(records));
}

DbConfigProvider::DbConfigProvider(const std::string& path, LookupOptions options)
    : index_(std::make_unique<Index>(std::move(options))) {
  index_->location = path;
  try {
    if (!database_exists(path)) return;
    index_->load(TuningDb::open(path, OpenMode::ReadOnly)->best_configs());
  } catch (const Error& e) {
    if (index_->options.strict) throw;
    // The JIT compiles on without tuned configs rather than stopping the program.
    index_->load_warning = "tuning database '" + path + "' not used: " + e.what() +
                           "; serving the cost model's pick or the op's default instead";
    index_->options.warn(index_->load_warning);
  }
}

DbConfigProvider::~DbConfigProvider() = default;

std::optional<ConfigChoice> DbConfigProvider::lookup(const Workload& w, const Target& t) { return choose(w, t); }

ConfigChoice DbConfigProvider::choose(const Workload& w, const Target& t) {
  Index& index = *index_;
  const std::string workload_key = w.key();
  const std::string& fp = index.fingerprint(t);
  if (const Tuned* hit = index.record(workload_key, &fp, nullptr);
      hit && hit->stale_reason.empty() && index.fits_target(*hit, w, workload_key, t))
    return {index.config(*hit), ConfigSource::Exact, {}, false, {}};
  const std::string key = workload_key + '\n' + fp;
  {
    std::shared_lock lock(index.mutex);
    if (const auto it = index.answers.find(key); it != index.answers.end()) return it->second;
  }
  ConfigChoice answer = index.slow_path(w, workload_key, t, fp);
  std::unique_lock lock(index.mutex);
  if (index.answers.size() >= kMaxMemoized) index.answers.clear();
  return index.answers.emplace(key, std::move(answer)).first->second;
}

size_t DbConfigProvider::size() const { return index_->tuned.size(); }
size_t DbConfigProvider::memoized() const {
  std::shared_lock lock(index_->mutex);
  return index_->answers.size();
}
const std::string& DbConfigProvider::location() const { return index_->location; }
const std::string& DbConfigProvider::load_warning() const { return index_->load_warning; }

}  // namespace pto::db
