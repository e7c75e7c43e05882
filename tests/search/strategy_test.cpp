// Strategies, as properties over a few small workloads on ascend910b1: whatever a
// strategy proposes is feasible and a program not proposed or measured before (the
// tuner's baseline included); exhaustive covers every distinct feasible candidate; the
// same seed gives the same proposals; auto says which strategy it picked; unknown names
// are usage errors. Candidates are "measured" by a deterministic stand-in — the cost
// model's prediction bent by a per-config factor — so the residual model has something
// to learn and the tests need no simulator.
#include "search/strategy.h"

#include <gtest/gtest.h>

#include <cmath>
#include <algorithm>
#include <functional>
#include <limits>
#include <map>
#include <set>
#include <string>

#include "core/op_library.h"
#include "search/strategies/strategies.h"
#include "tests/builtin_targets.h"
#include "tests/core/error_testing.h"

namespace pto::search {
namespace {

using pto::testing::npu;

const std::vector<std::string>& workloads() {
  static const std::vector<std::string> keys = {
      "matmul|64,128,96|fp16", "matmul|37,150,100|fp16", "softmax|64,512|fp16",
      "layernorm|48,1000|fp32",  "rmsnorm|33,700|fp16",    "gelu|100,300|fp16",
  };
  return keys;
}

// With flash_attention, whose space has the attention and stages axes too.
const std::vector<std::string>& workloads_with_attention() {
  static const std::vector<std::string> keys = [] {
    std::vector<std::string> all = workloads();
    all.push_back("flash_attention|1,2,40,100,32|fp16|causal=1");
    return all;
  }();
  return keys;
}

// One workload's space and model, kept together for a SearchContext.
struct Subject {
  Workload workload;
  TensorGraph graph;
  SpaceGenerator space;
  CostModel model;
  Predictor untold;  // for strategies that are never told a measurement
  explicit Subject(const std::string& key)
      : workload(Workload::parse_key(key)),
        graph(build_graph(workload)),
        space(graph, npu(), default_config(workload, graph, npu())),
        model(graph, npu()),
        untold(model.for_graph(graph)) {}
  SearchContext context(uint64_t seed = 1) const { return {&space, &untold, seed, 0.01}; }
};

// A strategy with a predictor of its own, told of measurements as the tuner tells it:
// the predictor is updated first, then the strategy observes (search/strategy.h).
struct Search {
  Predictor predictor;
  std::unique_ptr<Strategy> strategy;
  Search(const Subject& subject, const std::string& name, uint64_t seed = 1)
      : predictor(subject.model.for_graph(subject.graph)),
        strategy(make_strategy(name, {&subject.space, &predictor, seed, 0.01})) {}
  Strategy* operator->() const { return strategy.get(); }
  void observe(std::span<const TileConfig> configs, std::span<const measure::Measurement> results) {
    std::vector<double> times;
    for (const measure::Measurement& m : results) times.push_back(m.stats.median_ns);
    predictor.update(configs, times);
    strategy->observe(configs, results);
  }
};

// `salt` and `amplitude` pick one of a family of such bends.
measure::Measurement stand_in(const CostModel& model, const TileConfig& c, const std::string& salt = "",
                              double amplitude = 0.3) {
  measure::Measurement m;
  const double bend =
      1 + amplitude * std::sin(static_cast<double>(std::hash<std::string>{}(c.to_string() + salt) % 1000));
  const double t = model.predict_ns(c) * bend;
  m.stats = {t, t, t, 1};
  m.simulated = true;
  return m;
}

// Drives a strategy as the tuner does — the baseline observed first — until it has
// nothing left or `cap` proposals; returns what it proposed, in order.
std::vector<TileConfig> drive(Search& s, const Subject& setup, size_t batch, size_t cap) {
  const TileConfig& base = setup.space.baseline();
  const measure::Measurement bm = stand_in(setup.model, base);
  s.observe(std::span(&base, 1), std::span(&bm, 1));
  std::vector<TileConfig> all;
  while (all.size() < cap) {
    const std::vector<TileConfig> proposed = s->propose(std::min(batch, cap - all.size()));
    if (proposed.empty()) break;
    EXPECT_LE(proposed.size(), batch);
    std::vector<measure::Measurement> results;
    for (const TileConfig& c : proposed) results.push_back(stand_in(setup.model, c));
    s.observe(proposed, results);
    all.insert(all.end(), proposed.begin(), proposed.end());
  }
  return all;
}

const std::vector<std::string> kConcrete = {"topk", "evolve", "exhaustive", "random"};

TEST(Strategy, ProposesOnlyFeasibleNewPrograms) {
  for (const std::string& key : workloads_with_attention()) {
    const Subject setup(key);
    for (const std::string& name : kConcrete) {
      Search s(setup, name);
      EXPECT_EQ(s->name(), name);
      std::set<uint64_t> programs{*setup.space.program_key(setup.space.baseline())};
      for (const TileConfig& c : drive(s, setup, 5, 300)) {
        const std::optional<uint64_t> program = setup.space.program_key(c);
        ASSERT_TRUE(program) << key << " " << name << " proposed an infeasible " << c.to_string();
        EXPECT_TRUE(programs.insert(*program).second) << key << " " << name << " proposed a repeat " << c.to_string();
      }
    }
  }
}

TEST(Strategy, ExhaustiveCoversEveryDistinctFeasibleCandidate) {
  for (const std::string& key : workloads_with_attention()) {
    const Subject setup(key);
    std::set<uint64_t> expected;
    for (const TileConfig& c : setup.space.enumerate(UINT64_MAX)) expected.insert(*setup.space.program_key(c));
    expected.erase(*setup.space.program_key(setup.space.baseline()));  // measured by the tuner already
    Search s(setup, "exhaustive");
    std::set<uint64_t> got;
    for (const TileConfig& c : drive(s, setup, 7, UINT64_MAX)) got.insert(*setup.space.program_key(c));
    EXPECT_EQ(got, expected) << key;
    EXPECT_EQ(s->feasible_seen(), setup.space.enumerate(UINT64_MAX).size()) << key;
  }
}

TEST(Strategy, SameSeedSameProposals) {
  for (const std::string& key : {workloads()[1], workloads()[3], workloads_with_attention().back()}) {
    const Subject setup(key);
    for (const std::string& name : kConcrete) {
      auto run = [&](uint64_t seed) {
        Search s(setup, name, seed);
        std::vector<std::string> texts;
        for (const TileConfig& c : drive(s, setup, 4, 40)) texts.push_back(c.to_string());
        return texts;
      };
      EXPECT_EQ(run(9), run(9)) << key << " " << name;
    }
  }
}

// With measurements that follow the model exactly, the model-guided strategies have a
// perfect ranking: they stop early, and their first proposal is the model's best.
TEST(Strategy, ModelGuidedStrategiesStopWhenNothingIsPredictedToWin) {
  for (const std::string& key : workloads_with_attention()) {
    const Subject setup(key);
    const size_t feasible = setup.space.enumerate(UINT64_MAX).size();
    if (feasible < 40) continue;
    Search s(setup, "topk");
    const TileConfig& base = setup.space.baseline();
    auto exact = [&](const TileConfig& c) {
      measure::Measurement m;
      const double t = setup.model.predict_ns(c);
      m.stats = {t, t, t, 1};
      return m;
    };
    const measure::Measurement bm = exact(base);
    s.observe(std::span(&base, 1), std::span(&bm, 1));
    size_t proposed = 0;
    while (true) {
      const std::vector<TileConfig> batch = s->propose(8);
      if (batch.empty()) break;
      std::vector<measure::Measurement> results;
      for (const TileConfig& c : batch) results.push_back(exact(c));
      s.observe(batch, results);
      proposed += batch.size();
    }
    EXPECT_LT(proposed, feasible) << key << ": topk measured everything with a perfect model";
  }
}

// The stop rule is backed by what this workload's finalists showed of the model's
// error: where the measured times depart from the predictions by up to +-30 % (the
// stand-in's bend), topk measures longer over the workloads than where the model is
// exact (on one it may stop at once: a lucky first batch no prediction can beat by
// the error it showed), and ends within 3 % of the best the bent times hold
// (exhaustive over them).
TEST(Strategy, TopkMeasuresLongerWhereItsFinalistsShowTheModelWrong) {
  size_t exact_total = 0, bent_total = 0;
  for (const std::string& key : workloads()) {
    const Subject setup(key);
    const std::vector<TileConfig> all = setup.space.enumerate(UINT64_MAX);
    if (all.size() < 100) continue;
    auto exact = [&](const TileConfig& c) {
      measure::Measurement m;
      const double t = setup.model.predict_ns(c);
      m.stats = {t, t, t, 1};
      return m;
    };
    auto run = [&](const std::function<measure::Measurement(const TileConfig&)>& time) {
      Search s(setup, "topk");
      const TileConfig& base = setup.space.baseline();
      const measure::Measurement bm = time(base);
      s.observe(std::span(&base, 1), std::span(&bm, 1));
      std::pair<size_t, double> proposed_best = {0, bm.stats.median_ns};
      for (std::vector<TileConfig> batch = s->propose(8); !batch.empty(); batch = s->propose(8)) {
        std::vector<measure::Measurement> results;
        for (const TileConfig& c : batch) {
          results.push_back(time(c));
          proposed_best.second = std::min(proposed_best.second, results.back().stats.median_ns);
        }
        s.observe(batch, results);
        proposed_best.first += batch.size();
      }
      return proposed_best;
    };
    const auto bent = [&](const TileConfig& c) { return stand_in(setup.model, c); };
    double truth = std::numeric_limits<double>::infinity();
    for (const TileConfig& c : all) truth = std::min(truth, bent(c).stats.median_ns);
    const size_t exact_proposed = run(exact).first;
    const auto [bent_proposed, bent_best] = run(bent);
    exact_total += exact_proposed;
    bent_total += bent_proposed;
    EXPECT_LE(bent_best, truth * 1.03) << key << ": " << bent_proposed << " proposed of " << all.size();
  }
  EXPECT_GT(bent_total, exact_total);
}

// The stop rule holds where it matters: over 36 searches (six workloads, spaces of 48
// to 41,000 candidates, bends of +-15 % and +-30 %, three bends each), topk ends at
// >= 0.99 of the bent times' best (geomean) and below 0.97 in at most 3. The measured
// finalists' error is what keeps it going after a lucky batch: with the correction's
// leave-one-out error alone (the best rows, which selection made look well fitted),
// it stopped at 0.988 geomean, 6 searches under 0.97, after 470 measurements instead
// of 708. (The patience's lengthening by that error does not show on these spaces.)
TEST(Strategy, TopkStopRuleHoldsOverManyBentSearches) {
  std::vector<double> qualities;
  for (const std::string key : {"matmul|64,128,96|fp16", "matmul|37,150,100|fp16", "matmul|200,300,250|fp16",
                                "matmul|128,1024,256|fp16", "softmax|64,512|fp16", "layernorm|48,1000|fp32"}) {
    const Subject setup(key);
    const std::vector<TileConfig> all = setup.space.enumerate(UINT64_MAX);
    for (const double amplitude : {0.15, 0.3}) {
      for (const std::string salt : {"0", "1", "2"}) {
        const auto bent = [&](const TileConfig& c) { return stand_in(setup.model, c, salt, amplitude); };
        double truth = std::numeric_limits<double>::infinity();
        for (const TileConfig& c : all) truth = std::min(truth, bent(c).stats.median_ns);
        Search s(setup, "topk");
        const TileConfig& base = setup.space.baseline();
        const measure::Measurement bm = bent(base);
        s.observe(std::span(&base, 1), std::span(&bm, 1));
        double best = bm.stats.median_ns;
        for (std::vector<TileConfig> batch = s->propose(8); !batch.empty(); batch = s->propose(8)) {
          std::vector<measure::Measurement> results;
          for (const TileConfig& c : batch) results.push_back(bent(c));
          for (const measure::Measurement& m : results) best = std::min(best, m.stats.median_ns);
          s.observe(batch, results);
        }
        qualities.push_back(truth / best);
      }
    }
  }
  double log_sum = 0;
  for (double q : qualities) log_sum += std::log(q);
  EXPECT_GE(std::exp(log_sum / static_cast<double>(qualities.size())), 0.99);
  EXPECT_LE(std::count_if(qualities.begin(), qualities.end(), [](double q) { return q < 0.97; }), 3);
}

// The tasks of a candidate's busiest kernel, in powers of two: the axis along which
// topk explores (search/strategies/scored_pool.h).
int parallelism(const CostModel& model, const TileConfig& c) {
  int64_t tasks = 1;
  for (const KernelEstimate& k : model.estimate(c).kernels) tasks = std::max(tasks, k.aic_tasks + k.aiv_tasks);
  return static_cast<int>(std::lround(std::log2(static_cast<double>(tasks))));
}

// Where the model is wrong about one whole degree of parallelism — of the strata whose
// best candidate it predicts within 1.4x of its overall best (inside topk's reach of
// 1.5x, search/strategies/scored_pool.cpp), the one it ranks last, measured 2x faster
// than predicted, so that its best is the true winner — topk still comes within its
// noise margin of the true winner: it tries the best candidate of every stratum in
// reach before it stops, and the residual model cannot learn about a stratum it has
// never measured.
// Over the matmul and vector workloads: on the toy flash_attention space topk ends 1 %
// above the skewed stratum's best (9158.6 against 9079.7 ns), which this test does not
// yet explain.
TEST(Strategy, TopkFindsAWinnerInTheParallelismTheModelRanksLastInReach) {
  int tested = 0;
  for (const std::string& key : workloads()) {
    const Subject setup(key);
    std::map<int, double> best_of_stratum;  // stratum -> best predicted time in it
    for (const TileConfig& c : setup.space.enumerate(UINT64_MAX)) {
      const auto [it, added] = best_of_stratum.emplace(parallelism(setup.model, c), setup.model.predict_ns(c));
      if (!added) it->second = std::min(it->second, setup.model.predict_ns(c));
    }
    const auto by_time = [](const auto& a, const auto& b) { return a.second < b.second; };
    const double overall = std::min_element(best_of_stratum.begin(), best_of_stratum.end(), by_time)->second;
    std::erase_if(best_of_stratum, [&](const auto& s) { return s.second > 1.4 * overall; });
    if (best_of_stratum.size() < 2) continue;
    const int last = std::max_element(best_of_stratum.begin(), best_of_stratum.end(), by_time)->first;
    const double truth = best_of_stratum[last] / 2;
    auto skewed = [&](const TileConfig& c) {
      measure::Measurement m;
      const double t = setup.model.predict_ns(c) / (parallelism(setup.model, c) == last ? 2 : 1);
      m.stats = {t, t, t, 1};
      return m;
    };
    Search s(setup, "topk");
    const TileConfig& base = setup.space.baseline();
    const measure::Measurement bm = skewed(base);
    s.observe(std::span(&base, 1), std::span(&bm, 1));
    double best = bm.stats.median_ns;
    size_t proposed = 0;
    for (std::vector<TileConfig> batch = s->propose(8); !batch.empty(); batch = s->propose(8)) {
      std::vector<measure::Measurement> results;
      for (const TileConfig& c : batch) {
        results.push_back(skewed(c));
        best = std::min(best, results.back().stats.median_ns);
      }
      s.observe(batch, results);
      proposed += batch.size();
    }
    ++tested;
    EXPECT_LE(best, truth * (1 + setup.context().noise)) << key << ": stratum 2^" << last << " tasks, " << proposed << " proposed";
  }
  EXPECT_GE(tested, 3) << "too few workloads with two strata in reach: the test shows nothing";
}

TEST(Strategy, AutoSaysWhichItPicked) {
  for (const std::string& key : workloads_with_attention()) {
    const Subject setup(key);
    const std::string picked = make_strategy("auto", setup.context())->name();
    EXPECT_TRUE(picked == "exhaustive" || picked == "topk" || picked == "evolve") << picked;
    const uint64_t size = setup.space.size();
    EXPECT_EQ(picked, size <= 64 ? "exhaustive" : size <= score_whole_limit(setup.space) ? "topk" : "evolve") << key;
  }
}

TEST(Strategy, UnknownNamesAndBadContextsAreUsageErrors) {
  const Subject setup(workloads()[0]);
  testing::expect_error([&] { make_strategy("annealing", setup.context()); }, ErrorCategory::Usage,
                        {"annealing", "topk", "evolve", "exhaustive", "random"});
  SearchContext no_space = setup.context();
  no_space.space = nullptr;
  testing::expect_error([&] { make_strategy("topk", no_space); }, ErrorCategory::Usage, {"space"});
  SearchContext loud = setup.context();
  loud.noise = 1.5;
  testing::expect_error([&] { make_strategy("topk", loud); }, ErrorCategory::Usage, {"noise", "1.5"});
  const std::vector<std::string> names = strategy_names();
  EXPECT_EQ(names.front(), "auto");
  for (const std::string& n : kConcrete) EXPECT_NE(std::find(names.begin(), names.end(), n), names.end());
}

}  // namespace
}  // namespace pto::search
