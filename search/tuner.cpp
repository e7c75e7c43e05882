// tune(): the one tuning loop. A map of this file:
//   TuningJob         everything one call holds: graph, space, model, strategy, records
//   TuningJob::run    the store's records of the key -> baseline -> batches until
//                     converged / budget / time / stop -> winner
//   remembered        the search's memory: what the store already measured for the key
//   measure_batch     one runner call, every result committed on its own and counted as
//                     it comes; the batch ends early when the job is to stop
//   choose_winner     the best usable record; on a noisy backend from an interleaved
//                     re-measurement of the finalists and the default
//
// Noise margins. A strategy stops when nothing left is predicted to beat the measured
// best by more than its context's noise. On a noisy backend (real time: cpu, npu) that
// is the default config's measured relative spread, (p90 - p10) / median, clamped to
// [kMinNoise, kMaxNoise]: a predicted gain inside the run-to-run spread cannot be told
// from noise anyway. The cap is 5%: the spread is that of single runs, while the search
// compares medians of several; on a loaded machine the default's spread reached 25%,
// and a margin that wide stopped topk on the cpu after 12 measurements at 0.60 of the
// exhaustive best (layernorm 64x256), where 5% reached 0.98 (results/tuning_quality.md). A deterministic backend (its results are `simulated`: sim, model)
// has no spread; its margin is kDeterministicMargin = 1%, the accuracy the tuning
// benchmarks hold topk to (>= 0.99 of the exhaustive best), so the search stops when
// the model expects no more than that from what is left.
#include "search/tuner.h"
#include "search/tuning_session.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/global_memory.h"
#include "core/op_library.h"
#include "cost_model/correction.h"
#include "cost_model/estimate.h"
#include "cost_model/predictor.h"
#include "measure/stats.h"
#include "search/space_generator.h"
#include "search/strategy.h"
#include "search/tune_request.h"

namespace pto::search {

namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

constexpr double kDeterministicMargin = 0.01;
constexpr double kMinNoise = 0.01;
constexpr double kMaxNoise = 0.05;
constexpr const char* kDefaultLabel = "default";

void check_options(const TuneOptions& o, const measure::Runner& runner) {
  // The rules a TuneRequest is held to (search/tune_request.h), for a caller that fills
  // in TuneOptions itself.
  check_strategy(o.strategy);
  check_budget(o.budget);
  check_time_limit(o.time_limit_s);
  if (o.batch_size == 0) usage_error("tune: batch size must be at least 1");
  if (o.finalists == 0) usage_error("tune: finalists must be at least 1");
  if (o.finalist_runner && o.finalist_runner->name() != runner.name())
    usage_error("tune: the finalists' runner is " + o.finalist_runner->name() + ", the search's " + runner.name() +
                "; they must be one backend");
}

// The workload's graph, refused before any search where its tensors cannot fit the
// target's global memory (no config could run it; the space would be analyzed whole to
// find that out).
TensorGraph graph_fitting(const Workload& w, const Target& target) {
  TensorGraph graph = build_graph(w);
  try {
    check_fits_global_memory(graph, target);
  } catch (const Error& e) {
    fail(ErrorCategory::Infeasible, "tune: " + w.key() + ": " + e.what());
  }
  return graph;
}

CostModel make_model(const TensorGraph& graph, const Target& target, const TuneOptions& o) {
  return o.coefficients ? CostModel(graph, target, *o.coefficients) : CostModel(graph, target);
}

class TuningJob {
 public:
  TuningJob(const Workload& w, const Target& target, measure::Runner& runner, TuningStore& store,
            const TuneOptions& options)
      : runner_(runner),
        store_(store),
        options_(options),
        graph_(graph_fitting(w, target)),
        space_(graph_, target, default_config(w, graph_, target)),
        predictor_(make_model(graph_, target, options)),
        start_(Clock::now()) {
    result_.workload = w;
    result_.target_name = target.name;
    result_.target_fingerprint = target.fingerprint();
    result_.backend = runner.name();
    result_.store_location = store.location();
    result_.counts.total = space_.size();
  }

  // The records the store holds for this key (unless the options ask to retune) are
  // taken as measured, as a resumed session's are: the strategy is told them, they
  // count against the budget, and none is measured again. When they leave nothing new
  // to measure, the finalists are not re-measured either: the run that stored them did.
  TuneResult run() {
    const std::vector<TuningRecord> memory = options_.retune ? std::vector<TuningRecord>{} : remembered();
    if (memory.empty() && !options_.retune) seed_from_store();
    start(memory);
    search(strategy());
    return conclude(/*confirm_finalists=*/memory.empty() || result_.counts.measured > 0);
  }

  // What a TuningSession (search/tuning_session.h) does in steps: start once (the
  // records of an earlier session are taken as measured, the default's among them),
  // search in rounds, finish once.
  void start(std::span<const TuningRecord> prior) {
    for (const TuningRecord& r : prior) {
      count(r, Source::Memory);
      if (!baseline_ && settles_default(r) && r.config == space_.baseline()) baseline_ = r;
    }
    if (!baseline_) baseline_ = measure_baseline();
  }

  // The strategy is made when a search needs it (a session opened only to finish, from
  // its records, scores nothing) and told everything measured so far.
  Strategy& strategy() {
    if (strategy_) return *strategy_;
    SearchContext context{&space_, &predictor_, options_.seed, noise_margin(*baseline_)};
    strategy_ = make_strategy(options_.strategy, context);
    result_.strategy = strategy_->name();
    tell(*strategy_, std::span(&baseline_->config, 1), std::span(&baseline_->measurement, 1));
    std::vector<TileConfig> configs;
    std::vector<measure::Measurement> results;
    for (const TuningRecord& r : measured_) {
      if (r.config == baseline_->config) continue;
      configs.push_back(r.config);
      results.push_back(r.measurement);
    }
    if (!configs.empty()) tell(*strategy_, configs, results);
    return *strategy_;
  }

  // `confirm_finalists`: re-measure them on a noisy backend (search/tuner.h). What this
  // job's measurements taught the predictor joins the op's correction in the store.
  TuneResult conclude(bool confirm_finalists = true) {
    if (predictor_.rows() > 0) store_.add_correction(correction_key(), predictor_.save());
    if (strategy_) {
      result_.counts.feasible = strategy_->feasible_seen();
    } else {  // no search in this job: the strategy is the one that proposed the last record
      const std::string& last = measured_.back().strategy;
      result_.strategy = last == kDefaultLabel ? options_.strategy : last;
    }
    choose_winner(*baseline_, confirm_finalists);
    result_.elapsed_s = seconds_since_start();
    return std::move(result_);
  }

  const Strategy* made_strategy() const { return strategy_.get(); }
  int64_t searched() const { return searched_; }
  const std::vector<TuningRecord>& measured() const { return measured_; }
  const std::optional<TuningRecord>& best() const { return best_; }
  const TuningRecord& baseline() const { return *baseline_; }
  bool stopped() const { return result_.stopped; }
  double seconds_since_start() const { return std::chrono::duration<double>(Clock::now() - start_).count(); }
  void search_round() { search(strategy()); }

 private:
  CorrectionKey correction_key() const {
    return {result_.workload.op, result_.target_fingerprint, result_.backend};
  }

  // The op's correction as earlier jobs stored it becomes the predictor's prior. Only for
  // a workload the store holds no fresh records of: its own records are better evidence
  // than other shapes', and a rerun then ranks exactly as the run that made them did.
  // Not on a retune either, which distrusts what the store learned of the backend.
  void seed_from_store() {
    if (const std::optional<Correction> stored = store_.correction(correction_key())) predictor_.seed(*stored);
  }

  // The predictor learns of measurements before the strategy is told of them: the
  // strategy ranks by its correction (search/strategy.h).
  void tell(Strategy& strategy, std::span<const TileConfig> configs, std::span<const measure::Measurement> results) {
    std::vector<double> times;
    for (const measure::Measurement& m : results) times.push_back(m.ok() ? m.stats.median_ns : 0);
    predictor_.update(configs, times);
    strategy.observe(configs, results);
  }

  // Where a counted record came from: this job's search, the re-measurement of its
  // finalists, or an earlier job (the store, or a session resumed from its records).
  enum class Source { Search, Remeasure, Memory };

  // The fresh records the store holds for this job's key, one per config: the last
  // stored, which on a noisy backend is the finalists' interleaved re-measurement, the
  // most careful timing there is. In the order first stored.
  std::vector<TuningRecord> remembered() const {
    const RecordKey key{result_.workload.key(), result_.target_fingerprint, result_.backend};
    std::vector<TuningRecord> memory;
    std::map<std::string, size_t> index;  // config text -> place in `memory`
    for (TuningRecord& r : store_.records_of(key)) {
      if (!r.fresh()) continue;
      predict(r.measurement, r.config);  // by this job's model, which may be calibrated since
      const auto [at, first] = index.try_emplace(r.config.to_string(), memory.size());
      if (first) memory.push_back(std::move(r));
      else memory[at->second] = std::move(r);
    }
    return memory;
  }

  // A measurement that settles the default: its time, or that it does not fit the target.
  static bool settles_default(const TuningRecord& r) {
    return r.usable() || r.measurement.status == measure::Status::INFEASIBLE;
  }

  // The default is measured first. One that does not fit the target (an infeasible
  // config, a program past the size limits) does not stop the search: the result says
  // so and has no speedup over it. Any other failure of the default is a fault.
  TuningRecord measure_baseline() {
    const std::vector<TuningRecord> records = measure_batch({space_.baseline()}, kDefaultLabel);
    if (records.empty()) misreported(1, "returned no result for the default config");
    const TuningRecord& r = records.front();
    if (!settles_default(r))
      internal_error("tune: the default config " + r.config.to_string() + " of " + r.workload.key() +
                     " could not be measured: " + measure::status_name(r.measurement.status) + " " +
                     r.measurement.error);
    return r;
  }

  double noise_margin(const TuningRecord& baseline) const {
    if (baseline.measurement.simulated) return kDeterministicMargin;
    if (!baseline.usable()) return kMaxNoise;  // no default measured: its spread is unknown
    return std::clamp(measure::relative_spread(baseline.measurement.stats), kMinNoise, kMaxNoise);
  }

  // The stop flag is raised or the time limit reached.
  bool should_stop() const {
    return (options_.stop && options_.stop->load()) ||
           (options_.time_limit_s > 0 && seconds_since_start() >= options_.time_limit_s);
  }

  void search(Strategy& strategy) {
    while (true) {
      if (should_stop()) return stop();
      size_t room = options_.batch_size;
      if (options_.budget > 0) {
        const int64_t left = options_.budget - searched_;
        if (left <= 0) return;
        room = std::min<size_t>(room, static_cast<size_t>(left));
      }
      const std::vector<TileConfig> batch = strategy.propose(room);
      if (batch.empty()) return;  // converged or exhausted
      const std::vector<TuningRecord> records = measure_batch(batch, strategy.name());
      std::vector<measure::Measurement> results;
      for (const TuningRecord& r : records) results.push_back(r.measurement);
      // A batch cut short by a stop is told as far as it got.
      tell(strategy, std::span(batch).first(records.size()), results);
    }
  }

  void stop() { result_.stopped = true; }

  // One runner call. Each result is committed on its own, counted and reported as it
  // arrives, so a kill loses at most the measurement in flight; after each the batch
  // ends when the job is to stop (then fewer records than candidates come back). The
  // interleaved finalists are timed together: their batch always ends whole.
  std::vector<TuningRecord> measure_batch(const std::vector<TileConfig>& batch, const std::string& label,
                                          bool interleaved = false) {
    std::vector<TuningRecord> records;
    const auto record = [&](size_t i, measure::Measurement m) {
      // A re-measured finalist keeps the label of the strategy that first proposed it.
      records.push_back(make_record(batch[i], std::move(m), interleaved ? strategy_of(batch[i]) : label));
      store_.commit(std::span(&records.back(), 1));
      count(records.back(), interleaved ? Source::Remeasure : Source::Search);
    };
    const measure::OnResult on_result = [&](size_t i, const measure::Measurement& m) {
      if (i != records.size()) misreported(batch.size(), "reported result " + std::to_string(i) + " out of order");
      record(i, m);
      return interleaved || !should_stop();
    };
    measure::Runner& finalist_runner = options_.finalist_runner ? *options_.finalist_runner : runner_;
    std::vector<measure::Measurement> results =
        interleaved ? finalist_runner.measure_interleaved(result_.workload, batch, on_result)
                    : runner_.measure(result_.workload, batch, on_result);
    if (results.size() > batch.size() || results.size() < records.size())
      misreported(batch.size(), "returned " + std::to_string(results.size()) + " results");
    // Results a runner returned without reporting them.
    for (size_t i = records.size(); i < results.size(); ++i) record(i, std::move(results[i]));
    if (records.size() < batch.size() && !should_stop())
      misreported(batch.size(), "returned " + std::to_string(records.size()) + " results");
    return records;
  }

  [[noreturn]] void misreported(size_t candidates, const std::string& what) const {
    internal_error("tune: runner " + runner_.name() + " " + what + " for a batch of " + std::to_string(candidates) +
                   " candidates");
  }

  // The prediction beside a measurement is the tuner's model's: calibrated when the
  // options carry coefficients, whatever the runner's own model assumed. Uncorrected: the
  // correction is fitted on these very measurements, and a record's prediction is what
  // reports score the model by (a model is never scored against itself).
  void predict(measure::Measurement& m, const TileConfig& config) const {
    const double predicted = predictor_.model().predict_ns(config);
    if (std::isfinite(predicted)) m.predicted_ns = predicted;
  }

  TuningRecord make_record(const TileConfig& config, measure::Measurement m, const std::string& label) const {
    predict(m, config);
    TuningRecord r;
    r.workload = result_.workload;
    r.config = config;
    r.target_name = result_.target_name;
    r.target_fingerprint = result_.target_fingerprint;
    r.backend = result_.backend;
    r.measurement = std::move(m);
    r.versions = Versions::current();
    r.strategy = label;
    return r;
  }

  void count(const TuningRecord& r, Source source) {
    ++(source == Source::Memory ? result_.counts.reused : result_.counts.measured);
    if (!r.measurement.ok()) ++result_.counts.failed[measure::status_name(r.measurement.status)];
    if (source != Source::Remeasure) {
      ++searched_;
      if (r.usable() && (!best_ || better(r, *best_))) best_ = r;
      measured_.push_back(r);
      result_.best_so_far_ns.push_back(best_ ? best_->time_ns() : 0);
    }
    if (options_.progress) options_.progress(result_.counts.measured + result_.counts.reused, options_.budget);
  }

  // The best usable record, never slower than the default. On a noisy backend the
  // finalists and the default are re-measured interleaved, and the winner is chosen
  // from that under one machine state.
  void choose_winner(const TuningRecord& baseline, bool confirm_finalists) {
    const bool noisy = !baseline.measurement.simulated;
    const bool with_default = baseline.usable();
    if (!with_default && !best_)
      fail(ErrorCategory::Infeasible, "tune: the default config of " + baseline.workload.key() + " does not fit " +
                                          result_.target_name + " (" + baseline.measurement.error +
                                          "), and no feasible candidate was measured");
    if (noisy && confirm_finalists && !result_.stopped && best_ && best_->config != baseline.config) {
      std::vector<TileConfig> finalists;
      if (with_default) finalists.push_back(baseline.config);
      for (const TuningRecord& r : top_records(options_.finalists))
        if (r.config != baseline.config) finalists.push_back(r.config);
      const std::vector<TuningRecord> again = measure_batch(finalists, result_.strategy, /*interleaved=*/true);
      if (again.size() == finalists.size() && (!with_default || again.front().usable())) {
        result_.baseline = with_default ? again.front() : baseline;
        result_.best = *std::min_element(again.begin(), again.end(), better);
        if (with_default && (!result_.best.usable() || !(result_.best.time_ns() < result_.baseline.time_ns())))
          result_.best = result_.baseline;
        if (result_.best.usable()) return finish();
      }
    }
    result_.baseline = baseline;
    result_.best = best_ && (!with_default || best_->time_ns() < baseline.time_ns()) ? *best_ : baseline;
    finish();
  }

  void finish() {
    result_.speedup_vs_default = result_.has_default() ? result_.baseline.time_ns() / result_.best.time_ns() : 0;
    result_.best_spread = measure::relative_spread(result_.best.measurement.stats);
  }

  std::vector<TuningRecord> top_records(size_t k) const {
    std::vector<TuningRecord> usable;
    for (const TuningRecord& r : measured_)
      if (r.usable()) usable.push_back(r);
    std::sort(usable.begin(), usable.end(), better);
    if (usable.size() > k) usable.resize(k);
    return usable;
  }

  std::string strategy_of(const TileConfig& config) const {
    for (const TuningRecord& r : measured_)
      if (r.config == config) return r.strategy;
    return result_.strategy;
  }

  measure::Runner& runner_;
  TuningStore& store_;
  const TuneOptions& options_;
  TensorGraph graph_;
  SpaceGenerator space_;
  Predictor predictor_;
  Clock::time_point start_;
  TuneResult result_;
  int64_t searched_ = 0;                // measurements against the budget, remembered ones included
  std::vector<TuningRecord> measured_;  // this job's search records, remembered ones first, in order
  std::optional<TuningRecord> best_;
  std::optional<TuningRecord> baseline_;
  std::unique_ptr<Strategy> strategy_;
};

// Each time under the key of its provenance (Measurement::time_key), with the
// provenance beside it.
json best_json(const TuningRecord& r) {
  json j{{"config", r.config.to_json()},
         {"provenance", r.measurement.provenance()},
         {r.measurement.time_key(), r.time_ns()},
         {"spread", measure::relative_spread(r.measurement.stats)},
         {"simulated", r.measurement.simulated},
         {"strategy", r.strategy}};
  // The cost model's prediction beside a measured or simulated time; a predicted
  // time is that prediction already.
  if (!r.measurement.predicted) j["predicted_ns"] = r.measurement.predicted_ns;
  return j;
}

// The default config and its time, or why it does not fit.
json default_json(const TuningRecord& r) {
  if (!r.usable()) return json{{"config", r.config.to_json()}, {"feasible", false}, {"why", r.measurement.error}};
  return json{{"config", r.config.to_json()},
              {"feasible", true},
              {"provenance", r.measurement.provenance()},
              {r.measurement.time_key(), r.time_ns()}};
}

}  // namespace

int64_t TuneCounts::failed_total() const {
  int64_t n = 0;
  for (const auto& [status, count] : failed) n += count;
  return n;
}

json TuneResult::to_json() const {
  return json{{"workload", workload.key()},
              {"target", target_name},
              {"target_fingerprint", target_fingerprint},
              {"backend", backend},
              {"strategy", strategy},
              {"best", best_json(best)},
              {"default", default_json(baseline)},
              {"speedup_vs_default", has_default() ? json(speedup_vs_default) : json(nullptr)},
              {"candidates",
               {{"total", counts.total},
                {"feasible", counts.feasible},
                {"measured", counts.measured},
                {"reused", counts.reused},
                {"failed", counts.failed_total()},
                {"failed_by_status", counts.failed}}},
              {"best_so_far_ns", best_so_far_ns},
              {"elapsed_s", elapsed_s},
              {"stopped", stopped},
              {"db", store_location}};
}

TuneResult tune(const Workload& w, const Target& target, measure::Runner& runner, TuningStore& store,
                const TuneOptions& options) {
  check_options(options, runner);
  return TuningJob(w, target, runner, store, options).run();
}

// The session is the job above, run a round at a time: each round sets the budget and
// the time limit the job's loop reads from the session's options.
class TuningSession::Job : public TuningJob {
  using TuningJob::TuningJob;
};

TuningSession::TuningSession(const Workload& w, const Target& target, measure::Runner& runner, TuningStore& store,
                             const TuneOptions& options, std::vector<TuningRecord> prior)
    : options_(options), prior_(std::move(prior)) {
  options_.budget = 0;
  options_.time_limit_s = 0;
  check_options(options_, runner);
  job_ = std::make_unique<Job>(w, target, runner, store, options_);
}

TuningSession::~TuningSession() = default;

int64_t TuningSession::advance(int64_t measurements, double seconds_left) {
  // A round of nothing still takes up the prior records, so that the session can say
  // where it stands.
  if (measurements <= 0 && (started_ || prior_.empty())) return 0;
  const int64_t before = started_ ? job_->searched() : static_cast<int64_t>(prior_.size());
  options_.budget = before + measurements;
  options_.time_limit_s = seconds_left > 0 ? job_->seconds_since_start() + seconds_left : 0;
  if (!started_) begin();
  if (job_->searched() < options_.budget) job_->search_round();
  exhausted_ = !job_->stopped() && job_->searched() < options_.budget;
  return job_->searched() - before;
}

void TuningSession::begin() {
  job_->start(prior_);
  started_ = true;
  prior_.clear();
}

int64_t TuningSession::measured() const { return started_ ? job_->searched() : static_cast<int64_t>(prior_.size()); }

const std::vector<TuningRecord>& TuningSession::records() const { return started_ ? job_->measured() : prior_; }

double TuningSession::best_ns() const { return started_ && job_->best() ? job_->best()->time_ns() : 0; }

double TuningSession::default_ns() const { return started_ ? job_->baseline().time_ns() : 0; }

std::optional<double> TuningSession::best_unmeasured_ns() const {
  const Strategy* strategy = made_strategy();
  return strategy ? strategy->best_unproposed_ns() : std::nullopt;
}

uint64_t TuningSession::candidates_held() const {
  const Strategy* strategy = made_strategy();
  return strategy ? strategy->feasible_seen() : 0;
}

const Strategy* TuningSession::made_strategy() const { return started_ ? job_->made_strategy() : nullptr; }

TuneResult TuningSession::finish() {
  if (!started_) begin();
  return job_->conclude();
}

}  // namespace pto::search
