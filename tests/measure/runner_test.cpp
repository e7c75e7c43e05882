// The runners: make_runner's choices and errors, and every candidate status of the cpu
// backend (OK and verified, INFEASIBLE, COMPILE_ERROR, WRONG_RESULT, RUNTIME_ERROR on a
// crash, TIMEOUT on a hang) with the batch going on past each; the model and sim
// backends' simulated results; batches reported through on_result once per candidate,
// in order; predictions that use the calibration of the backend they predict. Timing
// options are tiny: these tests check behaviour, not speed. Hermetic: the default
// calibration folder is under a temporary PTO_TUNE_HOME.
#include <algorithm>
#include <cstdlib>
#include <optional>
#include <random>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <omp.h>

#include "core/analyze.h"
#include "core/compile.h"
#include "core/cpu_runtime.h"
#include "core/error.h"
#include "core/op_library.h"
#include "cost_model/calibration_store.h"
#include "cost_model/estimate.h"
#include "measure/cpu/cache_flush.h"
#include "measure/runner.h"
#include "measure/stats.h"
#include "tests/builtin_targets.h"
#include "tests/temp_dir.h"

namespace pto::measure {
namespace {

using pto::testing::host;
using pto::testing::npu;

RunnerOptions quick() {
  RunnerOptions o;
  o.min_time_ms = 1;
  o.min_repetitions = 3;
  o.warmup = 1;
  o.threads = 2;
  o.timeout_s = 60;
  return o;
}

Workload workload(const std::string& op, Shape shape, DType dtype) {
  return Workload{op, std::move(shape), dtype, {}};
}

TileConfig default_for(const Workload& w, const Target& t) {
  return default_config(w, build_graph(w), t);
}

// A cube config that breaks a rule no target relaxes: the larger of kAL1 and kBL1 must
// be a multiple of the smaller.
TileConfig cube_with_mismatched_k() {
  return TileConfig::parse(R"({"cube":{"m":[32,64],"k":[32,64,96],"n":[32,64]}})");
}

std::string usage_message(const std::function<void()>& call) {
  try {
    call();
  } catch (const Error& e) {
    EXPECT_EQ(e.category(), ErrorCategory::Usage) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "no error";
  return "";
}

void expect_ok_and_timed(const Measurement& m, const RunnerOptions& o) {
  ASSERT_EQ(m.status, Status::OK) << m.error;
  EXPECT_TRUE(m.verified);
  EXPECT_FALSE(m.simulated);
  EXPECT_EQ(m.backend, "cpu");
  EXPECT_GE(m.stats.repetitions, o.min_repetitions);
  EXPECT_GT(m.stats.p10_ns, 0);
  EXPECT_LE(m.stats.p10_ns, m.stats.median_ns);
  EXPECT_LE(m.stats.median_ns, m.stats.p90_ns);
  EXPECT_GT(m.predicted_ns, 0);
  EXPECT_FALSE(m.host.empty());
  EXPECT_GT(m.timestamp, 0);
}

// ---- make_runner ----------------------------------------------------------------------

TEST(MakeRunner, KnowsFiveBackends) {
  EXPECT_EQ(backend_names(), (std::vector<std::string>{"sim", "cpu", "model", "npu", "command"}));
  EXPECT_EQ(make_runner("cpu", host())->name(), "cpu");
  EXPECT_EQ(make_runner("sim", npu())->name(), "sim");
  EXPECT_EQ(make_runner("model", npu())->name(), "model");
  EXPECT_EQ(make_runner("model", host())->name(), "model");
}

TEST(MakeRunner, UnknownBackendIsNamedWithTheKnownOnes) {
  std::string msg = usage_message([] { make_runner("gpu", host()); });
  EXPECT_NE(msg.find("'gpu'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("sim, cpu, model, npu"), std::string::npos) << msg;
}

TEST(MakeRunner, BackendMustFitTheTarget) {
  std::string cpu_on_npu = usage_message([] { make_runner("cpu", npu()); });
  EXPECT_NE(cpu_on_npu.find("'host'"), std::string::npos) << cpu_on_npu;
  EXPECT_NE(cpu_on_npu.find("ascend910b1"), std::string::npos) << cpu_on_npu;
  std::string sim_on_host = usage_message([] { make_runner("sim", host()); });
  EXPECT_NE(sim_on_host.find("NPU target"), std::string::npos) << sim_on_host;
}

TEST(MakeRunner, NpuSaysWhatItNeedsAndThatThisBuildHasNone) {
  std::string msg = usage_message([] { make_runner("npu", npu()); });
  for (const char* part : {"CANN", "ASCEND_HOME_PATH", "device", "no NPU backend", "'sim'"})
    EXPECT_NE(msg.find(part), std::string::npos) << part << " missing from: " << msg;
}

TEST(MakeRunner, RejectsBadCpuOptions) {
  RunnerOptions o = quick();
  o.timeout_s = 0;
  EXPECT_NE(usage_message([&] { make_runner("cpu", host(), o); }).find("timeout"), std::string::npos);
  o = quick();
  o.min_repetitions = 0;
  EXPECT_NE(usage_message([&] { make_runner("cpu", host(), o); }).find("repetitions"), std::string::npos);
  o = quick();
  o.isolate = false;
  o.faults = {{0, Fault::Hang}};
  EXPECT_NE(usage_message([&] { make_runner("cpu", host(), o); }).find("isolation"), std::string::npos);
}

// ---- cpu ------------------------------------------------------------------------------

TEST(CpuRunner, DefaultConfigIsVerifiedAndTimed) {
  RunnerOptions o = quick();
  Workload w = workload("matmul", {72, 40, 56}, DType::F32);
  auto results = make_runner("cpu", host(), o)->measure(w, {default_for(w, host())});
  ASSERT_EQ(results.size(), 1u);
  expect_ok_and_timed(results[0], o);
}

// Both ways of starting the isolated child: a fork, and a spawned pto-tune-worker.
class IsolatedCpuRunner : public ::testing::TestWithParam<ChildStart> {
 protected:
  RunnerOptions options() const {
    RunnerOptions o = quick();
    o.child_start = GetParam();
    return o;
  }
};

INSTANTIATE_TEST_SUITE_P(Starts, IsolatedCpuRunner, ::testing::Values(ChildStart::Fork, ChildStart::Spawn),
                         [](const auto& info) { return info.param == ChildStart::Fork ? "Fork" : "Spawn"; });

TEST_P(IsolatedCpuRunner, EveryFailureCostsOnlyItsCandidate) {
  RunnerOptions o = options();
  o.timeout_s = 2;  // ample for a small matmul on a busy machine; the hang waits it out
  o.faults = {{2, Fault::CorruptOutput}, {3, Fault::Crash}, {4, Fault::Hang}};
  Workload w = workload("matmul", {48, 80, 40}, DType::F16);
  TileConfig good = default_for(w, host());
  TileConfig bad_fusion = good;
  bad_fusion.fusion = std::vector<std::vector<int>>{{0}};  // node 0 is an input, not compute
  std::vector<TileConfig> batch = {cube_with_mismatched_k(), bad_fusion, good, good, good, good};

  auto r = make_runner("cpu", host(), o)->measure(w, batch);
  ASSERT_EQ(r.size(), batch.size());
  EXPECT_EQ(r[0].status, Status::INFEASIBLE) << r[0].error;
  EXPECT_NE(r[0].error.find("kAL1/kBL1"), std::string::npos) << r[0].error;
  EXPECT_EQ(r[1].status, Status::INFEASIBLE) << r[1].error;  // bad input, not a compiler failure
  EXPECT_NE(r[1].error.find("not a compute node"), std::string::npos) << r[1].error;
  EXPECT_EQ(r[2].status, Status::WRONG_RESULT) << r[2].error;
  EXPECT_FALSE(r[2].verified);
  EXPECT_GE(r[2].max_abs_err, 100);
  EXPECT_NE(r[2].error.find("output 0"), std::string::npos) << r[2].error;
  EXPECT_EQ(r[3].status, Status::RUNTIME_ERROR);
  EXPECT_NE(r[3].error.find("signal 11"), std::string::npos) << r[3].error;
  EXPECT_EQ(r[4].status, Status::TIMEOUT);
  EXPECT_NE(r[4].error.find("2 s"), std::string::npos) << r[4].error;
  expect_ok_and_timed(r[5], o);  // the batch went on
  for (const Measurement& m : r) {
    EXPECT_EQ(m.backend, "cpu");
    EXPECT_FALSE(m.host.empty());
  }
}

TEST(CpuRunner, FlushingCachesBetweenRunsStillMeasures) {
  RunnerOptions o = quick();
  o.flush_cache = true;
  Workload w = workload("gelu", {33, 130}, DType::F16);
  auto r = make_runner("cpu", host(), o)->measure(w, {default_for(w, host())});
  expect_ok_and_timed(r[0], o);
}

TEST(CacheFlusher, BufferOutgrowsTheLastLevelCache) {
  EXPECT_GE(CacheFlusher(32 << 20).buffer_bytes(), 64 << 20);
  EXPECT_GE(CacheFlusher(0).buffer_bytes(), 64 << 20);  // unknown: generous
  CacheFlusher small(1 << 20);
  small.flush();
  small.flush();
  EXPECT_GE(small.buffer_bytes(), 2 << 20);
}

TEST(CpuRunner, WrongResultIsCaughtWithoutIsolationToo) {
  RunnerOptions o = quick();
  o.isolate = false;
  o.faults = {{0, Fault::CorruptOutput}};
  Workload w = workload("softmax", {20, 70}, DType::F32);
  TileConfig config = default_for(w, host());
  auto r = make_runner("cpu", host(), o)->measure(w, {config, config});
  EXPECT_EQ(r[0].status, Status::WRONG_RESULT) << r[0].error;
  expect_ok_and_timed(r[1], o);
}

TEST(CpuRunner, IsolatedChildRunsAfterTheParentRanTheRuntime) {
  // The parent's OpenMP thread pool exists before the fork: the case a plain fork
  // does not survive (measure/isolation.h).
  Workload w = workload("add", {64, 96}, DType::F32);
  TensorGraph g = build_graph(w);
  Compiled compiled = compile(g, default_for(w, host()), host());
  CpuExecutor executor(compiled.program, ExecOptions{2});
  executor.run(random_inputs(g, 3));

  RunnerOptions o = quick();
  auto r = make_runner("cpu", host(), o)->measure(w, {default_for(w, host())});
  expect_ok_and_timed(r[0], o);
}

// Random tile sizes (multiples of 16, L1 a multiple of L0) that analyze() accepts.
std::vector<TileConfig> random_feasible_configs(const Workload& w, std::mt19937& rng, int count) {
  TensorGraph g = build_graph(w);
  Analyzer analyzer(g, host());
  auto pick = [&](std::initializer_list<int64_t> options) {
    return *(options.begin() + rng() % options.size());
  };
  std::vector<TileConfig> configs;
  for (int attempt = 0; attempt < 200 && static_cast<int>(configs.size()) < count; ++attempt) {
    TileConfig c = default_for(w, host());
    if (c.cube) {
      int64_t m0 = pick({16, 32, 48}), k0 = pick({16, 32}), n0 = pick({16, 32, 64});
      c.cube->mL0 = m0;
      c.cube->mL1 = m0 * pick({1, 2});
      c.cube->kL0 = k0;
      c.cube->kAL1 = c.cube->kBL1 = k0 * pick({1, 2, 4});
      c.cube->nL0 = n0;
      c.cube->nL1 = n0 * pick({1, 2});
      c.nbuffer = static_cast<int>(pick({1, 2}));
    }
    if (c.vec && !c.vec->empty()) {
      c.vec->front() = pick({1, 3, 8, 16});
      if (c.vec->size() > 1) c.vec->back() = pick({16, 32, 64, 256});
    }
    if (analyzer.analyze(c).feasible) configs.push_back(c);
  }
  return configs;
}

TEST(CpuRunner, RandomFeasibleConfigsOnRaggedShapesAreVerified) {
  std::mt19937 rng(11);
  RunnerOptions o = quick();
  o.min_repetitions = 1;
  o.warmup = 0;
  auto runner = make_runner("cpu", host(), o);
  std::uniform_int_distribution<int64_t> dim(17, 150);
  for (const char* op : {"matmul", "add", "softmax", "sum", "matmul_bias_gelu"}) {
    Workload w = std::string(op).starts_with("matmul")
                     ? workload(op, {dim(rng), dim(rng), dim(rng)}, DType::F16)
                     : workload(op, {dim(rng), dim(rng)}, DType::F32);
    auto configs = random_feasible_configs(w, rng, 3);
    ASSERT_FALSE(configs.empty()) << w.key();
    auto results = runner->measure(w, configs);
    for (size_t i = 0; i < results.size(); ++i) {
      SCOPED_TRACE(w.key() + " " + configs[i].to_string());
      expect_ok_and_timed(results[i], o);
    }
  }
}

TEST_P(IsolatedCpuRunner, InterleavedFinalistsEachGetTheirStatsAndSpread) {
  RunnerOptions o = options();
  Workload w = workload("matmul", {64, 64, 64}, DType::F32);
  std::mt19937 rng(5);
  auto finalists = random_feasible_configs(w, rng, 3);
  ASSERT_EQ(finalists.size(), 3u);
  auto r = make_runner("cpu", host(), o)->measure_interleaved(w, finalists);
  ASSERT_EQ(r.size(), 3u);
  for (const Measurement& m : r) {
    expect_ok_and_timed(m, o);
    auto detail = nlohmann::json::parse(m.detail_json);
    EXPECT_TRUE(detail["interleaved"].get<bool>());
    EXPECT_DOUBLE_EQ(detail["spread"].get<double>(), relative_spread(m.stats));
  }
  // Rounds are whole: every finalist ran the same number of times.
  EXPECT_EQ(r[0].stats.repetitions, r[1].stats.repetitions);
  EXPECT_EQ(r[1].stats.repetitions, r[2].stats.repetitions);
}

// ---- model and sim --------------------------------------------------------------------

// An fp16 cube tile of 256x256 fp32 accumulators is 256 KiB: over any 910B L0C.
TileConfig l0c_overflow() {
  return TileConfig::parse(R"({"cube":{"m":[256,256],"k":[64,256],"n":[256,256]}})");
}

TEST(ModelRunner, PredictsFeasibleAndExplainsInfeasible) {
  Workload w = workload("matmul", {512, 256, 384}, DType::F16);
  auto r = make_runner("model", npu())->measure(w, {default_for(w, npu()), l0c_overflow()});
  ASSERT_EQ(r[0].status, Status::OK) << r[0].error;
  EXPECT_TRUE(r[0].simulated);
  EXPECT_TRUE(r[0].predicted);
  EXPECT_STREQ(r[0].provenance(), "predicted");
  EXPECT_EQ(r[0].backend, "model");
  EXPECT_GT(r[0].predicted_ns, 0);
  EXPECT_EQ(r[0].stats.median_ns, r[0].predicted_ns);
  EXPECT_TRUE(nlohmann::json::parse(r[0].detail_json).contains("bound"));
  EXPECT_EQ(r[1].status, Status::INFEASIBLE);
  EXPECT_TRUE(r[1].simulated);
  EXPECT_NE(r[1].error.find("L0C"), std::string::npos) << r[1].error;
}

TEST(SimRunner, SimulatesWithPipeUtilisationAndBound) {
  Workload w = workload("matmul_bias_gelu", {256, 128, 512}, DType::F16);
  auto r = make_runner("sim", npu())->measure(w, {default_for(w, npu()), l0c_overflow()});
  ASSERT_EQ(r[0].status, Status::OK) << r[0].error;
  EXPECT_TRUE(r[0].simulated);
  EXPECT_EQ(r[0].backend, "sim");
  EXPECT_GT(r[0].stats.median_ns, 0);
  EXPECT_GT(r[0].predicted_ns, 0);
  auto detail = nlohmann::json::parse(r[0].detail_json);
  EXPECT_TRUE(detail["simulated"].get<bool>());
  EXPECT_FALSE(detail["bound"].get<std::string>().empty());
  EXPECT_TRUE(detail["pipe_utilisation"].contains("AIC"));
  EXPECT_TRUE(detail["pipe_utilisation"]["AIC"].contains("M"));
  EXPECT_EQ(r[1].status, Status::INFEASIBLE);
}

TEST(SimRunner, IsDeterministic) {
  Workload w = workload("softmax", {96, 1000}, DType::F16);
  auto runner = make_runner("sim", npu());
  TileConfig c = default_for(w, npu());
  EXPECT_EQ(runner->measure(w, {c})[0].stats.median_ns, runner->measure(w, {c})[0].stats.median_ns);
}

// ---- batches and calibration ----------------------------------------------------------

using pto::testing::TempDir;

// A fresh, empty PTO_TUNE_HOME for each test.
class RunnerBatch : public ::testing::Test {
 protected:
  RunnerBatch() : home_("runner_batch_home") { ::setenv("PTO_TUNE_HOME", home_.str().c_str(), 1); }
  ~RunnerBatch() override { ::unsetenv("PTO_TUNE_HOME"); }
  std::string calibration_dir() const { return default_calibration_dir(); }

 private:
  TempDir home_;
};

// Up to n distinct feasible configs of `w` on `t`, the op's default first.
std::vector<TileConfig> configs_for(const Workload& w, const Target& t, size_t n) {
  const TensorGraph g = build_graph(w);
  std::vector<TileConfig> out = {default_config(w, g, t)};
  const TileConfig infeasible = TileConfig::parse(R"({"cube":{"m":[32,64],"k":[32,64,96],"n":[32,64]}})");
  if (out[0].cube) out.push_back(infeasible);  // a failing candidate in the middle of the batch
  CostModel model(g, t);
  std::mt19937 rng(3);
  for (int tries = 0; out.size() < n && tries < 200; ++tries) {
    TileConfig c = out[0];
    if (c.cube) {
      c.cube->mL0 = c.cube->mL1 = 16 << (rng() % 3);
      c.cube->nL0 = c.cube->nL1 = 16 << (rng() % 3);
    } else if (c.vec) {
      c.vec->front() = 1 << (rng() % 4);
    }
    c.nbuffer = 1 + static_cast<int>(rng() % 2);
    if (model.estimate(c).feasible && std::find(out.begin(), out.end(), c) == out.end()) out.push_back(c);
  }
  return out;
}

// Runs the batch and checks the callback against what measure() returned.
void expect_one_callback_per_result_in_order(Runner& runner, const Workload& w, const std::vector<TileConfig>& batch,
                                             bool interleaved = false) {
  std::vector<size_t> order;
  std::vector<Measurement> seen;
  const OnResult on_result = [&](size_t i, const Measurement& m) {
    order.push_back(i);
    seen.push_back(m);
    return true;
  };
  const std::vector<Measurement> results =
      interleaved ? runner.measure_interleaved(w, batch, on_result) : runner.measure(w, batch, on_result);
  ASSERT_EQ(results.size(), batch.size());
  ASSERT_EQ(order.size(), batch.size());
  for (size_t i = 0; i < order.size(); ++i) {
    EXPECT_EQ(order[i], i);
    EXPECT_EQ(seen[i].status, results[i].status) << i;
    EXPECT_EQ(seen[i].stats.median_ns, results[i].stats.median_ns) << i;
    EXPECT_EQ(seen[i].predicted_ns, results[i].predicted_ns) << i;
  }
}

TEST_F(RunnerBatch, EveryBackendReportsEachResultOnceInOrder) {
  for (const char* key : {"matmul|96,160,200|fp16", "softmax|33,500|fp16"}) {
    const Workload w = Workload::parse_key(key);
    const auto batch = configs_for(w, npu(), 5);
    ASSERT_GE(batch.size(), 3u) << key;
    for (const char* backend : {"model", "sim"}) {
      SCOPED_TRACE(std::string(key) + " " + backend);
      expect_one_callback_per_result_in_order(*make_runner(backend, npu()), w, batch);
    }
  }
  // Without a callback a runner measures as before.
  const Workload w = Workload::parse_key("matmul|64,64,64|fp16");
  EXPECT_EQ(make_runner("model", npu())->measure(w, configs_for(w, npu(), 3)).size(), 3u);
}

// The sim backend simulates a batch's candidates on parallel threads: every result is
// the serial run's, field for field, whatever the thread count; and a caller that asks
// to stop after result k gets exactly k + 1 results, reported once each, in order.
TEST_F(RunnerBatch, SimInParallelIsTheSerialRunAndStopsWhereAsked) {
  std::mt19937 rng(9);
  for (const char* key : {"matmul|96,160,200|fp16", "softmax|33,500|fp16", "matmul|300,70,129|fp16"}) {
    const Workload w = Workload::parse_key(key);
    const auto batch = configs_for(w, npu(), 9);
    const int threads_before = omp_get_max_threads();
    omp_set_num_threads(1);
    const std::vector<Measurement> serial = make_runner("sim", npu())->measure(w, batch);
    for (int threads : {2, 3, 8}) {
      SCOPED_TRACE(std::string(key) + ", " + std::to_string(threads) + " threads");
      omp_set_num_threads(threads);
      const std::vector<Measurement> parallel = make_runner("sim", npu())->measure(w, batch);
      ASSERT_EQ(parallel.size(), serial.size());
      for (size_t i = 0; i < serial.size(); ++i) {
        EXPECT_EQ(parallel[i].status, serial[i].status) << i;
        EXPECT_EQ(parallel[i].stats.median_ns, serial[i].stats.median_ns) << i;
        EXPECT_EQ(parallel[i].predicted_ns, serial[i].predicted_ns) << i;
        EXPECT_EQ(parallel[i].detail_json, serial[i].detail_json) << i;
        EXPECT_EQ(parallel[i].error, serial[i].error) << i;
      }
      const size_t stop_after = rng() % batch.size();
      std::vector<size_t> order;
      const std::vector<Measurement> cut =
          make_runner("sim", npu())->measure(w, batch, [&](size_t i, const Measurement& m) {
            order.push_back(i);
            EXPECT_EQ(m.stats.median_ns, serial[i].stats.median_ns) << i;
            return i < stop_after;
          });
      EXPECT_EQ(cut.size(), stop_after + 1);
      ASSERT_EQ(order.size(), stop_after + 1);
      for (size_t i = 0; i < order.size(); ++i) EXPECT_EQ(order[i], i);
    }
    omp_set_num_threads(threads_before);
  }
}

TEST_F(RunnerBatch, CpuReportsEachResultIncludingFailuresAndInterleavedFinalists) {
  const Workload w = Workload::parse_key("matmul|48,64,80|fp32");
  const auto batch = configs_for(w, host(), 4);
  ASSERT_GE(batch.size(), 3u);
  RunnerOptions crash = quick();
  crash.faults[batch.size() - 1] = Fault::Crash;  // the last one dies in its child
  expect_one_callback_per_result_in_order(*make_runner("cpu", host(), crash), w, batch);
  RunnerOptions in_process = quick();
  in_process.isolate = false;
  expect_one_callback_per_result_in_order(*make_runner("cpu", host(), in_process), w, batch);
  const std::vector<TileConfig> finalists = {batch[0], batch.back()};
  expect_one_callback_per_result_in_order(*make_runner("cpu", host(), quick()), w, finalists, /*interleaved=*/true);
}

// Coefficients three times slower than the datasheet on every scale.
Coefficients slow(const Target& t) {
  Coefficients c = Coefficients::defaults(t);
  for (int i = 0; i < kNumCoefs; ++i) c.value[i] *= 3;  // every term three times slower
  c.samples = 50;
  return c;
}

double predicted_with(const Coefficients& c, const Workload& w, const TileConfig& config, const Target& t) {
  return CostModel(build_graph(w), t, c).predict_ns(config);
}

TEST_F(RunnerBatch, PredictionsUseTheCoefficientsGiven) {
  const Workload w = Workload::parse_key("matmul|512,256,384|fp16");
  const TileConfig config = configs_for(w, npu(), 1).front();
  RunnerOptions o;
  o.coefficients = slow(npu());
  for (const char* backend : {"model", "sim"}) {
    const Measurement m = make_runner(backend, npu(), o)->measure(w, {config}).front();
    ASSERT_TRUE(m.ok()) << m.error;
    EXPECT_DOUBLE_EQ(m.predicted_ns, predicted_with(slow(npu()), w, config, npu())) << backend;
  }
}

TEST_F(RunnerBatch, PredictionsUseTheSavedCalibrationOfThePredictedBackend) {
  const Workload w = Workload::parse_key("matmul|512,256,384|fp16");
  const TileConfig config = configs_for(w, npu(), 1).front();
  const double datasheet = predicted_with(Coefficients::defaults(npu()), w, config, npu());
  EXPECT_DOUBLE_EQ(make_runner("model", npu())->measure(w, {config}).front().predicted_ns, datasheet);

  ASSERT_TRUE(save_calibration(calibration_dir(), npu(), "sim", slow(npu())).saved);
  const double calibrated = predicted_with(slow(npu()), w, config, npu());
  ASSERT_GT(calibrated, 2 * datasheet);
  // `model` predicts what sim would measure, so it takes sim's calibration.
  const Measurement model = make_runner("model", npu())->measure(w, {config}).front();
  EXPECT_DOUBLE_EQ(model.predicted_ns, calibrated);
  EXPECT_DOUBLE_EQ(model.stats.median_ns, calibrated);
  EXPECT_DOUBLE_EQ(make_runner("sim", npu())->measure(w, {config}).front().predicted_ns, calibrated);

  const Workload hw = Workload::parse_key("matmul|64,64,64|fp32");
  const TileConfig host_config = configs_for(hw, host(), 1).front();
  ASSERT_TRUE(save_calibration(calibration_dir(), host(), "cpu", slow(host())).saved);
  RunnerOptions o = quick();
  o.isolate = false;
  EXPECT_DOUBLE_EQ(make_runner("cpu", host(), o)->measure(hw, {host_config}).front().predicted_ns,
                   predicted_with(slow(host()), hw, host_config, host()));
}

}  // namespace
}  // namespace pto::measure
