// DbConfigProvider (see db/config_lookup.h). The map: Index::add() files each record
// under three keys (exact, same-name, family); choose() walks the fallback order
// (exact_hit, nearest, stale exact, model_pick, default) and memoizes the slow answers.
#include "db/config_lookup.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <limits>
#include <map>
#include <shared_mutex>
#include <unordered_map>

#include "core/analyze.h"
#include "core/error.h"
#include "core/op_library.h"
#include "cost_model/estimate.h"
#include "db/tuning_db.h"
#include "search/space_generator.h"

namespace pto::db {

namespace {

using search::TuningRecord;

struct Tuned {
  Shape shape;
  TileConfig config;
  std::string target_name;
  std::string fingerprint;
  std::string stale_reason;  // versions; empty when fresh
  size_t backend_rank = 0;   // index in LookupOptions::backends
};

std::string joined(const std::string& a, const std::string& b) { return a + '\n' + b; }

// op, dtype and attrs: the workload without its shape.
std::string family_of(const Workload& w) {
  Workload shapeless = w;
  shapeless.shape.clear();
  return shapeless.key();
}

double log2_distance(const Shape& a, const Shape& b) {
  double d = 0;
  for (size_t i = 0; i < a.size(); ++i)
    d += std::abs(std::log2(static_cast<double>(a[i]) / static_cast<double>(b[i])));
  return d;
}

std::string dims_text(const Shape& s) {
  std::string out;
  for (int64_t d : s) out += (out.empty() ? "" : ",") + std::to_string(d);
  return out;
}

}  // namespace

struct DbConfigProvider::Index {
  LookupOptions options;
  std::string location = "memory";
  std::vector<Tuned> tuned;
  std::unordered_map<std::string, size_t> exact;                 // workload key + fingerprint
  std::unordered_map<std::string, std::vector<size_t>> by_name;  // workload key + target name
  std::unordered_map<std::string, std::vector<size_t>> family;   // family + fingerprint, fresh, by shape

  std::shared_mutex mutex;  // guards the two memos below
  std::unordered_map<std::string, std::string> fingerprints;  // target name -> fingerprint
  std::unordered_map<std::string, ConfigChoice> answers;      // workload key + fingerprint

  explicit Index(LookupOptions o) : options(std::move(o)) {}

  void add(const TuningRecord& r) {
    const auto rank = std::find(options.backends.begin(), options.backends.end(), r.backend);
    if (rank == options.backends.end() || !r.usable()) return;
    Tuned t{r.workload.shape, r.config, r.target_name, r.target_fingerprint, r.stale_reason(),
            static_cast<size_t>(rank - options.backends.begin())};
    const std::string key = joined(r.workload.key(), r.target_fingerprint);
    if (const auto it = exact.find(key); it != exact.end()) {
      // A fresh record wins over a stale one, then the more trusted backend.
      auto preference = [](const Tuned& x) { return std::make_pair(!x.stale_reason.empty(), x.backend_rank); };
      if (preference(t) < preference(tuned[it->second])) tuned[it->second] = std::move(t);
      return;
    }
    exact.emplace(key, tuned.size());
    by_name[joined(r.workload.key(), r.target_name)].push_back(tuned.size());
    family[joined(family_of(r.workload), r.target_fingerprint)].push_back(tuned.size());
    tuned.push_back(std::move(t));
  }

  // After every add(): family lists hold fresh records only, ordered by shape, so that
  // the nearest search breaks distance ties by the smaller shape.
  void finish() {
    for (auto& [key, members] : family) {
      std::erase_if(members, [&](size_t i) { return !tuned[i].stale_reason.empty(); });
      std::sort(members.begin(), members.end(), [&](size_t a, size_t b) { return tuned[a].shape < tuned[b].shape; });
    }
  }

  std::string fingerprint(const Target& t) {
    {
      std::shared_lock lock(mutex);
      if (const auto it = fingerprints.find(t.name); it != fingerprints.end()) return it->second;
    }
    std::string fp = t.fingerprint();
    std::unique_lock lock(mutex);
    return fingerprints.emplace(t.name, std::move(fp)).first->second;
  }

  // The stale record of this workload when there is one: versions first, else one made
  // for the same target name under another fingerprint.
  std::optional<ConfigChoice> stale_exact(const Workload& w, const Target& t, const std::string& fp) {
    if (const auto it = exact.find(joined(w.key(), fp)); it != exact.end())
      return ConfigChoice{tuned[it->second].config, ConfigSource::Exact, {}, true, tuned[it->second].stale_reason};
    const auto same_name = by_name.find(joined(w.key(), t.name));
    if (same_name == by_name.end()) return std::nullopt;
    const Tuned& other = tuned[same_name->second.front()];
    std::string reason = "tuned for target '" + t.name + "' with fingerprint " + other.fingerprint + " (now " + fp + ")";
    if (!other.stale_reason.empty()) reason += ", " + other.stale_reason;
    return ConfigChoice{other.config, ConfigSource::Exact, {}, true, reason};
  }

  std::optional<ConfigChoice> nearest(const Workload& w, const std::string& fp, const Analyzer& analyzer) const {
    const auto it = family.find(joined(family_of(w), fp));
    if (it == family.end()) return std::nullopt;
    std::vector<std::pair<double, size_t>> ranked;  // stable: equal distances keep shape order
    for (size_t i : it->second) {
      if (tuned[i].shape.size() == w.shape.size() && tuned[i].shape != w.shape)
        ranked.emplace_back(log2_distance(tuned[i].shape, w.shape), i);
    }
    std::stable_sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    for (const auto& [distance, i] : ranked) {
      if (analyzer.analyze(tuned[i].config).feasible)
        return ConfigChoice{tuned[i].config, ConfigSource::Nearest, tuned[i].shape, false, {}};
    }
    return std::nullopt;
  }

  // The cost model's best of the space's first candidates, enumerated within the caps.
  std::optional<ConfigChoice> model_pick(const Workload& w, const TensorGraph& graph, const Target& t) const {
    if (options.model_time_cap_ms <= 0) return std::nullopt;
    using Clock = std::chrono::steady_clock;
    const auto deadline = Clock::now() + std::chrono::duration<double, std::milli>(options.model_time_cap_ms);
    try {
      const search::SpaceGenerator space = search::SpaceGenerator::for_workload(w, t);
      std::vector<TileConfig> candidates;
      space.for_each([&](const TileConfig& c) {
        candidates.push_back(c);
        return Clock::now() < deadline;
      }, options.model_max_candidates);
      if (candidates.empty()) return std::nullopt;
      std::vector<double> predicted(candidates.size());
      CostModel(graph, t).score(candidates, predicted);
      const size_t best = std::min_element(predicted.begin(), predicted.end()) - predicted.begin();
      if (!std::isfinite(predicted[best])) return std::nullopt;
      return ConfigChoice{candidates[best], ConfigSource::Model, {}, false, {}};
    } catch (const Error&) {
      return std::nullopt;  // a target the model cannot describe: the default will do
    }
  }

  ConfigChoice slow_path(const Workload& w, const Target& t, const std::string& fp) {
    const TensorGraph graph = build_graph(w);
    const Analyzer analyzer(graph, t);
    if (auto hit = nearest(w, fp, analyzer)) return *hit;
    if (auto old = stale_exact(w, t, fp); old && analyzer.analyze(old->config).feasible) return *old;
    if (auto pick = model_pick(w, graph, t)) return *pick;
    return {default_config(w, graph, t), ConfigSource::Default, {}, false, {}};
  }
};

DbConfigProvider::DbConfigProvider(const std::vector<TuningRecord>& records, LookupOptions options)
    : index_(std::make_unique<Index>(std::move(options))) {
  for (const TuningRecord& r : records) index_->add(r);
  index_->finish();
}

DbConfigProvider::DbConfigProvider(const std::string& path, LookupOptions options)
    : DbConfigProvider(std::filesystem::exists(path) ? TuningDb::open(path, OpenMode::ReadOnly)->best_records()
                                                     : std::vector<TuningRecord>{},
                       std::move(options)) {
  index_->location = path;
}

DbConfigProvider::~DbConfigProvider() = default;

std::optional<ConfigChoice> DbConfigProvider::lookup(const Workload& w, const Target& t) { return choose(w, t); }

ConfigChoice DbConfigProvider::choose(const Workload& w, const Target& t) {
  Index& index = *index_;
  const std::string key = joined(w.key(), index.fingerprint(t));
  if (const auto it = index.exact.find(key); it != index.exact.end() && index.tuned[it->second].stale_reason.empty())
    return {index.tuned[it->second].config, ConfigSource::Exact, {}, false, {}};
  {
    std::shared_lock lock(index.mutex);
    if (const auto it = index.answers.find(key); it != index.answers.end()) return it->second;
  }
  ConfigChoice answer = index.slow_path(w, t, index.fingerprint(t));
  std::unique_lock lock(index.mutex);
  return index.answers.emplace(key, std::move(answer)).first->second;
}

size_t DbConfigProvider::size() const { return index_->tuned.size(); }
const std::string& DbConfigProvider::location() const { return index_->location; }

}  // namespace pto::db
