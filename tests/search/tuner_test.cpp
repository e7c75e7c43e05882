// tune(), as properties with an in-memory store and the model and sim backends: the
// default is always measured and the winner is never slower than it; failures are
// recorded with their status and never win; every measurement is committed; budget,
// time limit and stop flag are respected; on a noisy backend the winner comes from the
// interleaved re-measurement; bad options are usage errors before any measurement;
// topk and evolve find the exhaustive winner on small spaces; and the store is the
// search's memory: a rerun measures nothing new and finds the same best, a larger
// budget measures only what is new, retune measures again, stale records are not taken;
// and a job on another shape of the op starts from the correction the first one stored.
#include "search/tuner.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <map>
#include <random>

#include <nlohmann/json.hpp>

#include "core/op_library.h"
#include "measure/stats.h"
#include "tests/builtin_targets.h"
#include "tests/core/error_testing.h"
#include "tests/search/config_sets.h"

namespace pto::search {
namespace {

using measure::Measurement;
using measure::Status;
using pto::testing::npu;
using pto::testing::configs_of;
using pto::testing::no_duplicates;

const std::vector<std::string>& small_workloads() {
  static const std::vector<std::string> keys = {
      "matmul|64,128,96|fp16", "matmul|37,150,100|fp16", "matmul|16,256,128|fp16",
      "softmax|64,512|fp16",     "layernorm|48,1000|fp32", "rmsnorm|33,700|fp16",
      "gelu|100,300|fp16",
  };
  return keys;
}

bool is_default(const TileConfig& c, const Workload& w) {
  const TensorGraph g = build_graph(w);
  return c == default_config(w, g, npu());
}

// A runner that wraps another and fails every candidate `fails` picks (never the
// default), optionally pretending to be noisy: its results are then not `simulated`,
// they carry a spread, and measure_interleaved is counted.
class FakeRunner : public measure::Runner {
 public:
  FakeRunner(std::unique_ptr<measure::Runner> inner, std::function<bool(const TileConfig&)> fails, bool noisy = false)
      : inner_(std::move(inner)), fails_(std::move(fails)), noisy_(noisy) {}
  std::string name() const override { return inner_->name(); }
  std::vector<Measurement> measure(const Workload& w, const std::vector<TileConfig>& batch,
                                   const measure::OnResult& on_result = {}) override {
    ++calls;
    std::vector<Measurement> out = inner_->measure(w, batch);
    for (size_t i = 0; i < batch.size(); ++i) {
      if (!is_default(batch[i], w) && fails_(batch[i])) {
        out[i].status = Status::RUNTIME_ERROR;
        out[i].error = "injected";
        out[i].stats = {1, 1, 1, 1};  // a failure's time must not make it win
      } else if (noisy_) {
        out[i].simulated = false;
        out[i].stats.p10_ns = 0.97 * out[i].stats.median_ns;
        out[i].stats.p90_ns = 1.03 * out[i].stats.median_ns;
      }
      if (on_result && !on_result(i, out[i])) {
        out.resize(i + 1);  // told to stop: the batch ends after this result
        break;
      }
    }
    return out;
  }
  std::vector<Measurement> measure_interleaved(const Workload& w, const std::vector<TileConfig>& f,
                                               const measure::OnResult& on_result = {}) override {
    ++interleaved_calls;
    return measure(w, f, on_result);
  }
  int calls = 0, interleaved_calls = 0;

 private:
  std::unique_ptr<measure::Runner> inner_;
  std::function<bool(const TileConfig&)> fails_;
  bool noisy_;
};

bool every_third(const TileConfig& c) { return std::hash<std::string>{}(c.to_string()) % 3 == 0; }
bool never(const TileConfig&) { return false; }

// The properties every tuning result must have, whatever the options.
void check_result(const TuneResult& r, const MemoryStore& store, const std::string& context) {
  SCOPED_TRACE(context);
  EXPECT_TRUE(is_default(r.baseline.config, r.workload));
  EXPECT_TRUE(r.best.usable());
  EXPECT_LE(r.best.time_ns(), r.baseline.time_ns());
  EXPECT_NEAR(r.speedup_vs_default, r.baseline.time_ns() / r.best.time_ns(), 1e-9);
  const std::vector<TuningRecord> all = store.all();
  EXPECT_EQ(static_cast<int64_t>(all.size()), r.counts.measured) << "every measurement is committed";
  ASSERT_FALSE(all.empty());
  EXPECT_TRUE(is_default(all.front().config, r.workload)) << "the default is measured first";
  EXPECT_EQ(all.front().strategy, "default");
  int64_t failed = 0;
  for (const TuningRecord& rec : all) {
    if (!rec.measurement.ok()) ++failed;
    EXPECT_EQ(rec.versions, Versions::current());
    EXPECT_EQ(rec.backend, r.backend);
    EXPECT_EQ(rec.target_fingerprint, npu().fingerprint());
  }
  EXPECT_EQ(failed, r.counts.failed_total());
  EXPECT_FALSE(r.best_so_far_ns.empty());
  for (size_t i = 1; i < r.best_so_far_ns.size(); ++i) EXPECT_LE(r.best_so_far_ns[i], r.best_so_far_ns[i - 1]);
  EXPECT_GE(r.counts.total, r.counts.feasible);
}

TEST(Tune, DefaultMeasuredWinnerNeverSlowerFailuresNeverWin) {
  for (const std::string& key : small_workloads()) {
    for (const std::string strategy : {"topk", "evolve", "random", "exhaustive"}) {
      const Workload w = Workload::parse_key(key);
      FakeRunner runner(measure::make_runner("model", npu()), every_third);
      MemoryStore store;
      TuneOptions o;
      o.strategy = strategy;
      o.budget = 30;
      const TuneResult r = tune(w, npu(), runner, store, o);
      check_result(r, store, key + " " + strategy);
      EXPECT_LE(r.counts.measured, 30);
      EXPECT_FALSE(every_third(r.best.config) && !is_default(r.best.config, w)) << "a failed candidate won";
      EXPECT_EQ(r.strategy, strategy);
      // One runner call per batch.
      EXPECT_LE(runner.calls, 1 + (30 + 7) / 8);
      int64_t injected = 0;
      for (const TuningRecord& rec : store.all()) injected += !is_default(rec.config, w) && every_third(rec.config);
      EXPECT_EQ(r.counts.failed_total(), injected);
      EXPECT_EQ(r.counts.failed.count("RUNTIME_ERROR") ? r.counts.failed.at("RUNTIME_ERROR") : 0, injected);
    }
  }
}

TEST(Tune, BudgetTimeLimitAndStopFlag) {
  const Workload w = Workload::parse_key("matmul|37,150,100|fp16");
  for (int64_t budget : {2, 5, 9, 17}) {
    FakeRunner runner(measure::make_runner("model", npu()), never);
    MemoryStore store;
    TuneOptions o;
    o.strategy = "random";
    o.budget = budget;
    o.batch_size = 4;
    const TuneResult r = tune(w, npu(), runner, store, o);
    EXPECT_EQ(r.counts.measured, budget);
    EXPECT_EQ(static_cast<int64_t>(r.best_so_far_ns.size()), budget);
    check_result(r, store, "budget " + std::to_string(budget));
  }
  for (int64_t stop_after : {1, 4, 9}) {
    FakeRunner runner(measure::make_runner("model", npu()), never);
    MemoryStore store;
    std::atomic<bool> stop = false;
    TuneOptions o;
    o.strategy = "exhaustive";
    o.batch_size = 4;
    o.stop = &stop;
    int64_t seen = 0;
    o.progress = [&](int64_t done, int64_t) {
      EXPECT_EQ(done, seen + 1) << "progress after each measurement";
      seen = done;
      if (done >= stop_after) stop = true;
    };
    const TuneResult r = tune(w, npu(), runner, store, o);
    EXPECT_TRUE(r.stopped);
    // Stops after the measurement that raised the flag, mid-batch.
    EXPECT_EQ(r.counts.measured, stop_after);
    EXPECT_EQ(r.counts.measured, seen);
    check_result(r, store, "stop after " + std::to_string(stop_after));
  }
  FakeRunner runner(measure::make_runner("model", npu()), never);
  MemoryStore store;
  TuneOptions o;
  o.strategy = "exhaustive";
  o.time_limit_s = 1e-9;
  const TuneResult r = tune(w, npu(), runner, store, o);
  EXPECT_TRUE(r.stopped);
  EXPECT_EQ(r.counts.measured, 1) << "the time limit is checked after every measurement; the default is always measured";
  check_result(r, store, "time limit");
}

TEST(Tune, NoisyBackendPicksTheWinnerFromTheInterleavedFinalists) {
  const Workload w = Workload::parse_key("matmul|64,128,96|fp16");
  FakeRunner runner(measure::make_runner("model", npu()), never, /*noisy=*/true);
  MemoryStore store;
  TuneOptions o;
  o.strategy = "topk";
  o.budget = 20;
  o.finalists = 3;
  const TuneResult r = tune(w, npu(), runner, store, o);
  check_result(r, store, "noisy");
  EXPECT_EQ(runner.interleaved_calls, 1);
  EXPECT_LE(r.counts.measured, 20 + 1 + 3);
  EXPECT_NEAR(r.best_spread, 0.06, 1e-9);
  // The winner and the default are records of the re-measurement: the last committed.
  const std::vector<TuningRecord> all = store.all();
  EXPECT_EQ(all[all.size() - 1 - 3].config, r.baseline.config);
}

TEST(Tune, ResultJsonHasTheDocumentedFields) {
  const Workload w = Workload::parse_key("softmax|64,512|fp16");
  FakeRunner runner(measure::make_runner("model", npu()), every_third);
  MemoryStore store;
  TuneOptions o;
  o.budget = 12;
  const nlohmann::json j = tune(w, npu(), runner, store, o).to_json();
  for (const char* f : {"workload", "target", "backend", "strategy", "best", "default", "speedup_vs_default",
                        "candidates", "elapsed_s", "db"})
    EXPECT_TRUE(j.contains(f)) << f;
  for (const char* f : {"config", "provenance", "predicted_ns"}) EXPECT_TRUE(j["best"].contains(f)) << f;
  for (const char* f : {"config", "feasible", "provenance", "predicted_ns"}) EXPECT_TRUE(j["default"].contains(f)) << f;
  for (const char* f : {"total", "feasible", "measured", "failed"}) EXPECT_TRUE(j["candidates"].contains(f)) << f;
  EXPECT_EQ(j["db"], "memory");
  EXPECT_EQ(j["workload"], w.key());
}

// attention at S = 4096 on the 950 (which fuses the scores' epilogue into the Cube
// kernel): the op's default compiles to millions of tasks, past kMaxTasks. The tuner
// says so, searches the feasible space without it and reports no speedup.
TEST(Tune, AnInfeasibleDefaultDoesNotStopTheSearch) {
  const Workload w = Workload::parse_key("attention|1,32,4096,64|fp16");
  FakeRunner runner(measure::make_runner("model", testing::cv_npu()), never);
  MemoryStore store;
  TuneOptions o;
  o.strategy = "random";
  o.budget = 6;
  const TuneResult r = tune(w, testing::cv_npu(), runner, store, o);
  EXPECT_FALSE(r.has_default());
  EXPECT_EQ(r.baseline.measurement.status, Status::INFEASIBLE);
  EXPECT_NE(r.baseline.measurement.error.find("over the limit of 1048576"), std::string::npos)
      << r.baseline.measurement.error;
  ASSERT_TRUE(r.best.usable());
  EXPECT_EQ(r.counts.measured, 6);
  EXPECT_EQ(r.speedup_vs_default, 0);
  const nlohmann::json j = r.to_json();
  EXPECT_TRUE(j["speedup_vs_default"].is_null());
  EXPECT_EQ(j["default"]["feasible"], false);
  for (const char* f : {"provenance", "measured_ns", "simulated_ns", "predicted_ns"})
    EXPECT_FALSE(j["default"].contains(f)) << f;
}

// Only a real measurement is measured_ns: the simulator's times are simulated_ns, with
// the model's prediction beside them; the model backend's are predicted_ns alone.
TEST(Tune, ResultJsonNamesEachTimeByItsProvenance) {
  const Workload w = Workload::parse_key("softmax|64,512|fp16");
  TuneOptions o;
  o.budget = 4;
  for (const auto& [backend, provenance] : {std::pair<std::string, std::string>{"sim", "simulated"},
                                            {"model", "predicted"}}) {
    SCOPED_TRACE(backend);
    const std::unique_ptr<measure::Runner> runner = measure::make_runner(backend, npu());
    MemoryStore store;
    const nlohmann::json j = tune(w, npu(), *runner, store, o).to_json();
    for (const char* side : {"best", "default"}) {
      EXPECT_EQ(j[side]["provenance"], provenance) << side;
      ASSERT_TRUE(j[side].contains(provenance + "_ns")) << side << " " << j[side].dump();
      EXPECT_GT(j[side][provenance + "_ns"].get<double>(), 0) << side;
      EXPECT_FALSE(j[side].contains("measured_ns")) << side << " " << j[side].dump();
    }
    EXPECT_EQ(j["best"].contains("simulated_ns"), backend == "sim");
    EXPECT_GT(j["best"]["predicted_ns"].get<double>(), 0) << "the model's prediction, beside a simulated time too";
  }
}

// A workload whose tensors cannot fit the target's HBM is refused before the space is
// built or anything measured (a batch of M = 1..2^62 spent seconds per such shape).
TEST(Tune, AWorkloadLargerThanTheTargetsHbmIsInfeasibleBeforeAnySearch) {
  const std::function<bool(const TileConfig&)> never = [](const TileConfig&) { return false; };
  FakeRunner runner(measure::make_runner("model", npu()), never);
  MemoryStore store;
  const Workload w = Workload::parse_key("matmul|16777216,4096,4096|fp16");  // 256 GiB of tensors
  testing::expect_error([&] { tune(w, npu(), runner, store, {}); }, ErrorCategory::Infeasible,
                        {w.key(), "256 GiB of global memory", "64 GiB of HBM of ascend910b1"});
  EXPECT_EQ(runner.calls, 0);
  EXPECT_TRUE(store.all().empty());
}

TEST(Tune, BadOptionsAreUsageErrorsBeforeAnyMeasurement) {
  const Workload w = Workload::parse_key("softmax|64,512|fp16");
  struct Case {
    std::function<void(TuneOptions&)> set;
    std::vector<std::string_view> message;
  };
  const std::vector<Case> cases = {
      {[](TuneOptions& o) { o.strategy = "annealing"; }, {"annealing"}},
      {[](TuneOptions& o) { o.budget = -1; }, {"budget", "-1"}},
      {[](TuneOptions& o) { o.budget = 1; }, {"budget 1"}},
      {[](TuneOptions& o) { o.batch_size = 0; }, {"batch size"}},
      {[](TuneOptions& o) { o.time_limit_s = -2; }, {"time limit"}},
  };
  for (const Case& c : cases) {
    FakeRunner runner(measure::make_runner("model", npu()), never);
    MemoryStore store;
    TuneOptions o;
    c.set(o);
    testing::expect_error([&] { tune(w, npu(), runner, store, o); }, ErrorCategory::Usage, c.message);
    EXPECT_EQ(runner.calls, 0);
    EXPECT_TRUE(store.all().empty());
  }
  FakeRunner runner(measure::make_runner("model", npu()), never);
  MemoryStore store;
  testing::expect_error([&] { tune(Workload::parse_key("softmax|0,512|fp16"), npu(), runner, store, {}); },
                        ErrorCategory::Usage, {"0,512"});
  EXPECT_TRUE(store.all().empty());
}

// A runner whose every result fails, the default's too.
class BrokenRunner : public measure::Runner {
 public:
  std::string name() const override { return "model"; }
  std::vector<Measurement> measure(const Workload&, const std::vector<TileConfig>& batch,
                                   const measure::OnResult& on_result = {}) override {
    std::vector<Measurement> out(batch.size());
    for (size_t i = 0; i < out.size(); ++i) {
      out[i].status = Status::TIMEOUT, out[i].error = "hung";
      if (on_result) on_result(i, out[i]);
    }
    return out;
  }
};

TEST(Tune, AnUnmeasurableDefaultIsAnInternalErrorAndStillRecorded) {
  BrokenRunner runner;
  MemoryStore store;
  testing::expect_error([&] { tune(Workload::parse_key("gelu|100,300|fp16"), npu(), runner, store, {}); },
                        ErrorCategory::Internal, {"default config", "TIMEOUT", "hung"});
  ASSERT_EQ(store.all().size(), 1u);
  EXPECT_EQ(store.all().front().measurement.status, Status::TIMEOUT);
}

// The model backend, measuring one candidate at a time; when it starts its
// `raise_at`-th measurement (counting from 1 over all calls: a signal arriving while
// that one is in flight) it raises `stop`. It honours on_result's "stop" unless told not
// to, as a careless runner might.
class StopMidMeasurementRunner : public measure::Runner {
 public:
  StopMidMeasurementRunner(std::atomic<bool>& stop, int64_t raise_at, bool honours_stop)
      : inner_(measure::make_runner("model", npu())), stop_(stop), raise_at_(raise_at), honours_(honours_stop) {}
  std::string name() const override { return "model"; }
  std::vector<Measurement> measure(const Workload& w, const std::vector<TileConfig>& batch,
                                   const measure::OnResult& on_result = {}) override {
    if (stop_.load()) ++calls_after_stop_;
    std::vector<Measurement> out;
    for (size_t i = 0; i < batch.size(); ++i) {
      if (++started_ == raise_at_) stop_ = true;
      out.push_back(inner_->measure(w, {batch[i]}).front());
      if (on_result && !on_result(i, out.back()) && honours_) break;
    }
    return out;
  }
  int64_t started() const { return started_; }
  int calls_after_stop() const { return calls_after_stop_; }

 private:
  std::unique_ptr<measure::Runner> inner_;
  std::atomic<bool>& stop_;
  int64_t raise_at_, started_ = 0;
  bool honours_;
  int calls_after_stop_ = 0;
};

// Per-measurement guarantees: a stop raised while measurement k is in flight records
// exactly k measurements (those done and the one in flight), each committed as it came,
// and asks the runner for nothing more; a runner that goes on regardless has every
// result it returned recorded.
TEST(Tune, AStopMidBatchRecordsTheMeasurementsDoneAndTheOneInFlight) {
  std::mt19937_64 rng(17);
  const std::vector<std::string> strategies = {"exhaustive", "random", "topk", "evolve"};
  for (int trial = 0; trial < 40; ++trial) {
    const Workload w = Workload::parse_key(small_workloads()[rng() % small_workloads().size()]);
    const int64_t raise_at = 1 + static_cast<int64_t>(rng() % 25);
    const bool honours = trial % 4 != 3;
    std::atomic<bool> stop = false;
    StopMidMeasurementRunner runner(stop, raise_at, honours);
    MemoryStore store;
    TuneOptions o;
    o.strategy = strategies[rng() % strategies.size()];
    o.batch_size = 1 + rng() % 9;
    o.stop = &stop;
    o.progress = [&](int64_t done, int64_t) {
      EXPECT_EQ(static_cast<int64_t>(store.all().size()), done) << "committed before it is reported";
    };
    const TuneResult r = tune(w, npu(), runner, store, o);
    const std::string context = w.key() + " " + o.strategy + " batch " + std::to_string(o.batch_size) +
                                " stop at " + std::to_string(raise_at) + (honours ? "" : " (ignored)");
    SCOPED_TRACE(context);
    check_result(r, store, context);
    EXPECT_EQ(runner.calls_after_stop(), 0) << "nothing is measured after a stop";
    EXPECT_EQ(r.counts.measured, runner.started()) << "every measurement started is recorded";
    if (!r.stopped) {  // the strategy ended before measurement raise_at
      EXPECT_LT(runner.started(), raise_at);
      continue;
    }
    if (honours) {
      EXPECT_EQ(r.counts.measured, raise_at);
    }
    EXPECT_GE(r.counts.measured, raise_at);
    EXPECT_LT(r.counts.measured, raise_at + static_cast<int64_t>(o.batch_size));
  }
}

// The model-guided strategies against the ground truth on small spaces, on the
// deterministic backends: the same winner as exhaustive (within the documented 1%
// margin at which they may stop), with fewer measurements.
TEST(Tune, TopkAndEvolveFindTheExhaustiveWinner) {
  // The simulator measures every candidate of the exhaustive run: smaller spaces there.
  const std::map<std::string, std::vector<std::string>> suites = {
      {"model", small_workloads()},
      {"sim", {"matmul|40,96,72|fp16", "softmax|64,512|fp16", "rmsnorm|33,700|fp16"}}};
  for (const auto& [name, keys] : suites) {
    const std::string& backend = name;  // clang 14 cannot capture a structured binding
    for (const std::string& key : keys) {
      const Workload w = Workload::parse_key(key);
      auto run = [&](const std::string& strategy) {
        std::unique_ptr<measure::Runner> runner = measure::make_runner(backend, npu());
        MemoryStore store;
        TuneOptions o;
        o.strategy = strategy;
        return tune(w, npu(), *runner, store, o);
      };
      const TuneResult truth = run("exhaustive");
      for (const std::string strategy : {"topk", "evolve"}) {
        const TuneResult r = run(strategy);
        EXPECT_LE(r.best.time_ns(), truth.best.time_ns() * 1.01)
            << backend << " " << key << " " << strategy << ": " << r.best.config.to_string() << " vs "
            << truth.best.config.to_string();
        EXPECT_LE(r.counts.measured, truth.counts.measured) << backend << " " << key << " " << strategy;
      }
    }
  }
}

TEST(Tune, ARerunMeasuresNothingNewAndFindsTheSameBestUnlessToldToRetune) {
  for (const std::string& key : small_workloads()) {
    for (const auto& [strategy, budget] : std::vector<std::pair<std::string, int64_t>>{
             {"auto", 0}, {"topk", 0}, {"evolve", 0}, {"exhaustive", 0}, {"random", 12}}) {
      SCOPED_TRACE(key + " " + strategy);
      const Workload w = Workload::parse_key(key);
      FakeRunner runner(measure::make_runner("model", npu()), every_third);
      MemoryStore store;
      TuneOptions o;
      o.strategy = strategy;
      o.budget = budget;
      o.seed = 7;
      const TuneResult first = tune(w, npu(), runner, store, o);
      EXPECT_EQ(first.counts.reused, 0);
      const size_t stored = store.all().size();

      const TuneResult again = tune(w, npu(), runner, store, o);
      EXPECT_EQ(again.counts.measured, 0) << "a rerun measured something new";
      EXPECT_EQ(again.counts.reused, first.counts.measured);
      EXPECT_EQ(store.all().size(), stored);
      EXPECT_EQ(again.best.config, first.best.config);
      EXPECT_DOUBLE_EQ(again.best.time_ns(), first.best.time_ns());
      EXPECT_EQ(again.baseline.config, first.baseline.config);
      EXPECT_EQ(again.counts.failed_total(), first.counts.failed_total()) << "remembered failures are counted";

      o.retune = true;
      const TuneResult retuned = tune(w, npu(), runner, store, o);
      EXPECT_EQ(retuned.counts.reused, 0);
      EXPECT_EQ(retuned.counts.measured, first.counts.measured) << "retune runs the first search again";
      EXPECT_EQ(store.all().size(), 2 * stored);
    }
  }
}

TEST(Tune, ALargerBudgetMeasuresOnlyWhatIsNew) {
  for (const std::string& key : small_workloads()) {
    for (const std::string strategy : {"topk", "evolve", "random"}) {
      SCOPED_TRACE(key + " " + strategy);
      const Workload w = Workload::parse_key(key);
      const auto runner = measure::make_runner("model", npu());
      MemoryStore store;
      TuneOptions o;
      o.strategy = strategy;
      o.budget = 6;
      const TuneResult first = tune(w, npu(), *runner, store, o);
      o.budget = 14;
      const TuneResult more = tune(w, npu(), *runner, store, o);
      EXPECT_EQ(more.counts.reused, first.counts.measured);
      EXPECT_LE(more.counts.measured + more.counts.reused, 14) << "remembered records count against the budget";
      EXPECT_EQ(static_cast<int64_t>(store.all().size()), first.counts.measured + more.counts.measured);
      EXPECT_TRUE(no_duplicates(configs_of(store.all()))) << "a remembered config was measured again";
      EXPECT_LE(more.best.time_ns(), first.best.time_ns());
    }
  }
}

TEST(Tune, ANoisyRerunReMeasuresNoFinalists) {
  const Workload w = Workload::parse_key("matmul|64,128,96|fp16");
  FakeRunner runner(measure::make_runner("model", npu()), never, /*noisy=*/true);
  MemoryStore store;
  TuneOptions o;
  o.budget = 16;
  const TuneResult first = tune(w, npu(), runner, store, o);
  ASSERT_EQ(runner.interleaved_calls, 1) << "the first run re-measures its finalists";
  const TuneResult again = tune(w, npu(), runner, store, o);
  EXPECT_EQ(runner.interleaved_calls, 1);
  EXPECT_EQ(again.counts.measured, 0);
  EXPECT_EQ(again.best.config, first.best.config);
  EXPECT_DOUBLE_EQ(again.best.time_ns(), first.best.time_ns()) << "the finalists' re-measurement is remembered";
}

TEST(Tune, StaleRecordsAreNotTakenAsMeasured) {
  const Workload w = Workload::parse_key("softmax|64,512|fp16");
  const auto runner = measure::make_runner("model", npu());
  MemoryStore first;
  TuneOptions o;
  o.budget = 8;
  const TuneResult r = tune(w, npu(), *runner, first, o);
  MemoryStore store;
  for (TuningRecord old : first.all()) {
    old.versions.compiler = "0.0.1";
    old.measurement.stats.median_ns /= 2;  // faster, and still not to be trusted
    store.commit(std::span(&old, 1));
  }
  const TuneResult again = tune(w, npu(), *runner, store, o);
  EXPECT_EQ(again.counts.reused, 0);
  EXPECT_EQ(again.counts.measured, r.counts.measured);
  EXPECT_DOUBLE_EQ(again.best.time_ns(), r.best.time_ns()) << "a stale record won";
}

// The model backend's times, with large N tiles penalised (times nL0 / 16): hardware
// the model is systematically wrong about on one feature.
class PenalisingRunner : public measure::Runner {
 public:
  std::string name() const override { return inner_->name(); }
  std::vector<Measurement> measure(const Workload& w, const std::vector<TileConfig>& batch,
                                   const measure::OnResult& on_result = {}) override {
    std::vector<Measurement> out = inner_->measure(w, batch);
    for (size_t i = 0; i < out.size(); ++i) {
      if (out[i].ok() && batch[i].cube) {
        const double factor = static_cast<double>(batch[i].cube->nL0) / 16;
        out[i].stats = {out[i].stats.median_ns * factor, out[i].stats.p10_ns * factor, out[i].stats.p90_ns * factor,
                        out[i].stats.repetitions};
      }
      if (on_result && !on_result(i, out[i])) {
        out.resize(i + 1);
        break;
      }
    }
    return out;
  }
  std::vector<Measurement> measure_interleaved(const Workload& w, const std::vector<TileConfig>& f,
                                               const measure::OnResult& on_result = {}) override {
    return measure(w, f, on_result);
  }

 private:
  std::unique_ptr<measure::Runner> inner_ = measure::make_runner("model", npu());
};

// The mean log2 of the N tile of the first batch a job proposed (its records after the
// default's).
double first_batch_log2_n(TuningStore& store, const Workload& w) {
  double sum = 0;
  int n = 0;
  for (const TuningRecord& r : store.records_of({w.key(), npu().fingerprint(), "model"})) {
    if (r.strategy == "default") continue;
    sum += std::log2(static_cast<double>(r.config.cube->nL0));
    ++n;
  }
  EXPECT_GT(n, 0);
  return n ? sum / n : 0;
}

TEST(Tune, AJobOnAnotherShapeStartsFromTheCorrectionTheFirstJobStored) {
  PenalisingRunner runner;
  MemoryStore store;
  TuneOptions o;
  o.strategy = "topk";
  o.budget = 40;
  tune(Workload::parse_key("matmul|512,512,512|fp16"), npu(), runner, store, o);
  const CorrectionKey key{"matmul", npu().fingerprint(), "model"};
  const std::optional<Correction> stored = store.correction(key);
  ASSERT_TRUE(stored) << "the job kept no correction";
  EXPECT_GE(stored->rows.size(), 8u);
  EXPECT_LE(stored->rows.size(), kCorrectionSessionRows) << "at most the 32 fastest of its measurements";

  // One batch after the default on another shape: with the stored correction it
  // proposes smaller N tiles, as the first job's measurements said, than from scratch.
  const Workload other = Workload::parse_key("matmul|1024,256,768|fp16");
  o.budget = 9;
  MemoryStore empty;
  tune(other, npu(), runner, store, o);
  tune(other, npu(), runner, empty, o);
  const double seeded = first_batch_log2_n(store, other), scratch = first_batch_log2_n(empty, other);
  EXPECT_LT(seeded, scratch - 0.5) << "mean log2 N tile " << seeded << " with the stored correction, " << scratch
                                   << " without";
  EXPECT_GT(store.correction(key)->rows.size(), stored->rows.size()) << "the second job added its rows";
}

}  // namespace
}  // namespace pto::search
