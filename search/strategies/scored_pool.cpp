#include "search/strategies/scored_pool.h"

#include <algorithm>
#include <cmath>
#include <exception>
#include <limits>
#include <numeric>
#include <set>
#include <unordered_set>
#include <utility>

#include "cost_model/candidate_features.h"
#include "search/parallel_for.h"
#include "search/space_generator.h"

namespace pto::search {

namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();

// round(log2(tasks)) of the busiest kernel (a MIX task counts on both core types, as
// its estimate reports it): candidates of one stratum spread the work alike.
int parallelism_stratum(const TilingSummary& s) {
  int64_t tasks = 1;
  for (const KernelSummary& k : s.kernels) tasks = std::max(tasks, k.mix_tasks > 0 ? 2 * k.mix_tasks : k.aic_tasks + k.aiv_tasks);
  return static_cast<int>(std::lround(std::log2(static_cast<double>(tasks))));
}

// The share of each batch drawn at random among the fresh candidates.
constexpr size_t kExploreDivisor = 4;
// The measured candidates whose leave-one-out error says how far off a prediction near
// the optimum is likely to be.
constexpr size_t kLocalRows = 8;
// Rounds of min_measured successful measurements without a gain beyond the noise
// margin that end the search.
constexpr size_t kPatienceRounds = 2;
// The finalists' prediction error (rms, log time) up to which kPatienceRounds are
// enough; a larger error lengthens the patience in proportion, since more untried
// candidates are then within reach of the best.
constexpr double kConfidentError = 0.05;
// How much slower than the measured best a stratum's best candidate may be predicted and
// still be explored: the analytical model's error across strata is within it (a K-heavy
// matmul's winner on 4 cores was predicted 1.3x slower than simulated), while the strata
// far beyond it (one core for a 4096^3 matmul) cost seconds of simulation each and
// cannot win.
constexpr double kStratumReach = 1.5;

}  // namespace

ScoredPool::Scored ScoredPool::score(const TileConfig& config) const {
  const CostModel& model = context_.predictor->model();
  const TilingSummary s = model.analyze(config);
  if (!s.feasible || !s.within_program_limits()) return {};
  Scored scored{SpaceGenerator::program_key(s, config), std::nullopt};
  const Estimate e = model.estimate(s, config);
  if (!e.feasible || !(e.predicted_ns > 0)) return scored;
  Entry entry;
  entry.config = config;
  entry.log_predicted = std::log(e.predicted_ns);
  entry.features = candidate_features(e, config);
  entry.residual = context_.predictor->correction(entry.features);
  entry.parallelism = parallelism_stratum(s);
  scored.entry = std::move(entry);
  return scored;
}

std::optional<size_t> ScoredPool::insert(Scored scored) {
  if (!scored.program || !scored.entry || by_program_.count(*scored.program)) return std::nullopt;
  by_program_.emplace(*scored.program, entries_.size());
  entries_.push_back(std::move(*scored.entry));
  ++fresh_;
  return entries_.size() - 1;
}

std::optional<size_t> ScoredPool::add(const TileConfig& config) { return insert(score(config)); }

void ScoredPool::add_all(const std::vector<TileConfig>& configs) {
  std::vector<Scored> scored(configs.size());
  parallel_for(static_cast<int64_t>(configs.size()), [&](int64_t i) { scored[i] = score(configs[i]); });
  for (Scored& s : scored) insert(std::move(s));
}

SpaceTally ScoredPool::add_space(size_t keep) {
  const SpaceGenerator& space = *context_.space;
  std::vector<Glance> glances(space.size());
  parallel_for(static_cast<int64_t>(glances.size()), [&](int64_t i) { glances[i] = glance(space.at(i)); });
  SpaceTally tally;
  tally.analyzed = glances.size();
  std::vector<uint64_t> distinct;  // indices, the first of each program
  std::unordered_set<uint64_t> programs;
  for (uint64_t i = 0; i < glances.size(); ++i) {
    if (!glances[i].program) {
      ++tally.infeasible;
    } else if (!programs.insert(*glances[i].program).second) {
      ++tally.equivalent;
    } else {
      distinct.push_back(i);
    }
  }
  tally.distinct = distinct.size();
  std::vector<TileConfig> kept;
  for (uint64_t i : kept_indices(glances, std::move(distinct), keep)) kept.push_back(space.at(i));
  add_all(kept);
  return tally;
}

ScoredPool::Glance ScoredPool::glance(const TileConfig& config) const {
  const CostModel& model = context_.predictor->model();
  const TilingSummary s = model.analyze(config);
  if (!s.feasible || !s.within_program_limits()) return {};
  const double predicted = model.predict_ns(s, config);
  if (!(predicted > 0 && std::isfinite(predicted))) return {};
  return {SpaceGenerator::program_key(s, config), std::log(predicted), parallelism_stratum(s)};
}

std::vector<uint64_t> ScoredPool::kept_indices(const std::vector<Glance>& glances, std::vector<uint64_t> distinct,
                                               size_t keep) {
  std::stable_sort(distinct.begin(), distinct.end(),
                   [&](uint64_t a, uint64_t b) { return glances[a].log_predicted < glances[b].log_predicted; });
  std::vector<uint64_t> kept(distinct.begin(), distinct.begin() + std::min(keep, distinct.size()));
  std::set<int> strata;
  for (uint64_t i : kept) strata.insert(glances[i].parallelism);
  for (size_t r = kept.size(); r < distinct.size(); ++r)
    if (strata.insert(glances[distinct[r]].parallelism).second) kept.push_back(distinct[r]);
  std::sort(kept.begin(), kept.end());
  return kept;
}

std::optional<size_t> ScoredPool::find_or_add(const TileConfig& config) {
  const std::optional<uint64_t> program = context_.space->program_key(config);
  if (!program) return std::nullopt;
  const auto it = by_program_.find(*program);
  if (it != by_program_.end()) return it->second;
  return add(config);
}

double ScoredPool::log_time(size_t i) const {
  const Entry& e = entries_[i];
  if (e.state != State::Measured) return e.log_predicted + e.residual;
  return e.log_measured;
}

void ScoredPool::mark_proposed(size_t i) {
  if (entries_[i].state == State::Fresh) --fresh_;
  entries_[i].log_proposed = log_time(i);
  entries_[i].state = State::Proposed;
}

void ScoredPool::observe(std::span<const TileConfig> configs, std::span<const measure::Measurement> results) {
  for (size_t k = 0; k < configs.size() && k < results.size(); ++k) {
    const std::optional<size_t> i = find_or_add(configs[k]);
    if (!i) continue;
    Entry& e = entries_[*i];
    if (e.state == State::Fresh) --fresh_;
    if (e.state != State::Measured) measured_order_.push_back(*i);
    e.state = State::Measured;
    const measure::Measurement& m = results[k];
    e.log_measured = m.ok() && m.stats.median_ns > 0 ? std::log(m.stats.median_ns) : kInfinity;
    if (e.log_measured < kInfinity) note_progress(e.log_measured);
  }
  rerank();
}

void ScoredPool::note_progress(double log_measured) {
  if (!best_log_measured_ || log_measured < *best_log_measured_) best_log_measured_ = log_measured;
  if (!gain_anchor_ || log_measured < *gain_anchor_ + std::log1p(-std::min(context_.noise, 0.5))) {
    gain_anchor_ = log_measured;
    since_gain_ = 0;
  } else {
    ++since_gain_;
  }
}

void ScoredPool::rerank() {
  measured_ok_ = 0;
  for (Entry& e : entries_) {
    if (e.state != State::Measured) e.residual = context_.predictor->correction(e.features);
    else if (e.log_measured != kInfinity) ++measured_ok_;
  }
}

double ScoredPool::finalist_error() const {
  double sum = 0;
  size_t n = 0;
  for (auto it = measured_order_.rbegin(); it != measured_order_.rend() && n < kLocalRows; ++it) {
    const Entry& e = entries_[*it];
    if (!e.log_proposed || e.log_measured == kInfinity) continue;
    sum += std::pow(*e.log_proposed - e.log_measured, 2);
    ++n;
  }
  return n ? std::sqrt(sum / static_cast<double>(n)) : 0;
}

std::vector<size_t> ScoredPool::best_of(std::vector<size_t> ids, size_t max) const {
  // Sorted on (log_time, index) pairs computed once: a topk pool ranks every fresh
  // candidate of the space (78,000 on a 4096^3 matmul) for each proposal.
  std::vector<std::pair<double, size_t>> keyed;
  keyed.reserve(ids.size());
  for (size_t i : ids) keyed.emplace_back(log_time(i), i);
  const size_t n = std::min(max, ids.size());
  std::partial_sort(keyed.begin(), keyed.begin() + static_cast<std::ptrdiff_t>(n), keyed.end());
  ids.resize(n);
  for (size_t k = 0; k < n; ++k) ids[k] = keyed[k].second;
  return ids;
}

std::vector<size_t> ScoredPool::best_fresh(size_t max) const {
  std::vector<size_t> fresh;
  for (size_t i = 0; i < entries_.size(); ++i)
    if (entries_[i].state == State::Fresh) fresh.push_back(i);
  return best_of(std::move(fresh), max);
}

std::vector<size_t> ScoredPool::best_overall(size_t max) const {
  std::vector<size_t> all(entries_.size());
  std::iota(all.begin(), all.end(), size_t{0});
  return best_of(std::move(all), max);
}

std::vector<size_t> ScoredPool::pick(size_t max, size_t min_measured, std::mt19937_64& rng) const {
  if (max == 0 || fresh_ == 0) return {};
  const std::vector<size_t> ranked = best_fresh(fresh_);
  if (search_done(ranked, min_measured)) return untried_strata(ranked, max);
  const size_t explore_slots = max >= kExploreDivisor ? max / kExploreDivisor : 0;
  const size_t exploit = std::min(max - explore_slots, ranked.size());
  std::vector<size_t> picked(ranked.begin(), ranked.begin() + static_cast<std::ptrdiff_t>(exploit));
  // The rest: a partial Fisher-Yates shuffle of the better half of the fresh candidates
  // not taken — exploring the predicted worst (tiny tiles of a large matmul) costs
  // minutes of simulation and teaches little.
  std::vector<size_t> rest(ranked.begin() + static_cast<std::ptrdiff_t>(exploit),
                           ranked.begin() + static_cast<std::ptrdiff_t>(std::max(exploit, (ranked.size() + 1) / 2)));
  for (size_t k = 0; k < rest.size() && picked.size() < max; ++k) {
    std::swap(rest[k], rest[k + rng() % (rest.size() - k)]);
    picked.push_back(rest[k]);
  }
  return picked;
}

bool ScoredPool::search_done(const std::vector<size_t>& ranked, size_t min_measured) const {
  if (measured_ok_ < min_measured || !best_log_measured_) return false;
  const double error = std::max(context_.predictor->loo_error(kLocalRows), finalist_error());
  const double patience = static_cast<double>(min_measured * kPatienceRounds) * std::max(1.0, error / kConfidentError);
  if (static_cast<double>(since_gain_) >= patience) return true;
  const double threshold = *best_log_measured_ + std::log1p(-std::min(context_.noise, 0.5)) + error;
  return ranked.empty() || log_time(ranked.front()) >= threshold;
}

std::vector<size_t> ScoredPool::untried_strata(const std::vector<size_t>& ranked, size_t max) const {
  std::set<int> tried;
  for (const Entry& e : entries_)
    if (e.state != State::Fresh) tried.insert(e.parallelism);
  const double reach = best_log_measured_ ? *best_log_measured_ + std::log(kStratumReach) : kInfinity;
  std::vector<size_t> picked;
  for (size_t k = 0; k < ranked.size() && picked.size() < max && log_time(ranked[k]) < reach; ++k)
    if (tried.insert(entries_[ranked[k]].parallelism).second) picked.push_back(ranked[k]);
  return picked;
}

}  // namespace pto::search
