// Benchmarks of the cost model (results/cost_model_speed.md).
//
//   Score/*      configs scored per second on one core, analyze() included, for the
//                search's inner loop: a matmul (target >= 1,000,000/s) and a softmax.
//   ModelOnly/*  the model's share of that, on summaries analyzed beforehand: the time
//                alone, what a search ranks by (target >= 3,000,000/s).
//   LinearTerms/*  the same as the linear form in the coefficients that calibration fits.
//   EstimateWithBreakdown/*  Score with the full breakdown that `explain` prints.
//   Ranking/*    how well the uncalibrated model orders candidates against the NPU
//                simulator (`sim` backend): Kendall tau and top-1 / top-5 regret, as
//                counters. Slow (it simulates every candidate): run it alone with
//                --benchmark_filter=Ranking.
//
//   build-cost/bench/cost_model_bench --benchmark_filter='Score|ModelOnly|Estimate'
#include <benchmark/benchmark.h>

#include <algorithm>
#include <map>
#include <random>
#include <vector>

#include "core/op_library.h"
#include "core/target.h"
#include "cost_model/estimate.h"
#include "cost_model/ranking.h"
#include "measure/runner.h"
#include "search/space_generator.h"

namespace pto {
namespace {

int64_t pick(std::mt19937& rng, std::initializer_list<int64_t> v) { return *(v.begin() + rng() % v.size()); }

// The kind of candidates a tile-space search proposes for a matmul.
TileConfig random_cube_config(std::mt19937& rng) {
  CubeTile c;
  c.mL0 = pick(rng, {16, 32, 64, 128, 256});
  c.mL1 = c.mL0 * pick(rng, {1, 2});
  c.kL0 = pick(rng, {16, 32, 64, 128});
  c.kAL1 = c.kBL1 = c.kL0 * pick(rng, {1, 2, 4});
  c.nL0 = pick(rng, {16, 32, 64, 128, 256});
  c.nL1 = c.nL0 * pick(rng, {1, 2});
  TileConfig t;
  t.cube = c;
  t.nbuffer = static_cast<int>(pick(rng, {1, 2}));
  if (rng() % 2) t.l2_group = std::make_pair(pick(rng, {2, 4, 6}), pick(rng, {2, 4, 6}));
  return t;
}

TileConfig random_row_config(std::mt19937& rng, int64_t cols) {
  TileConfig t;
  t.vec = Shape{pick(rng, {1, 2, 4, 8, 16, 32, 64}), cols};
  t.nbuffer = static_cast<int>(pick(rng, {1, 2}));
  return t;
}

Workload workload(const std::string& op, Shape shape, DType dtype, std::map<std::string, int64_t> attrs = {}) {
  Workload w;
  w.op = op;
  w.shape = std::move(shape);
  w.dtype = dtype;
  w.attrs = std::move(attrs);
  return w;
}

enum class Repeats { Allowed, Dropped };

// Up to `count` feasible candidates for the workload, as a search would draw them;
// flash_attention's from its space (loop blocks, per-stage tiles, n-buffering).
std::vector<TileConfig> feasible_candidates(const CostModel& model, const Workload& w, size_t count,
                                            uint64_t seed, Repeats repeats) {
  if (w.op == "flash_attention")
    return search::SpaceGenerator::for_workload(w, load_target("ascend910b1")).sample(count, seed);
  std::mt19937 rng(seed);
  std::vector<TileConfig> out;
  for (int tries = 0; out.size() < count && tries < 100000; ++tries) {
    TileConfig c = w.op == "softmax" ? random_row_config(rng, w.shape[1]) : random_cube_config(rng);
    if (repeats == Repeats::Dropped && std::find(out.begin(), out.end(), c) != out.end()) continue;
    if (model.analyze(c).feasible) out.push_back(std::move(c));
  }
  return out;
}

const Workload kMatmul = workload("matmul", {4096, 4096, 4096}, DType::F16);
const Workload kSoftmax = workload("softmax", {4096, 4096}, DType::F32);
const Workload kFlashAttention = workload("flash_attention", {1, 32, 8192, 8192, 128}, DType::F16, {{"causal", 1}});

void Score(benchmark::State& state, const Workload& w) {
  const CostModel model(build_graph(w), load_target("ascend910b1"));
  const std::vector<TileConfig> configs = feasible_candidates(model, w, 1024, 1, Repeats::Allowed);
  std::vector<double> scores(configs.size());
  for (auto _ : state) {
    model.score(configs, scores);
    benchmark::DoNotOptimize(scores.data());
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * configs.size()));
}

// The model's own share of Score: the summaries are analyzed once, outside the loop.
// The model alone on summaries analyzed beforehand: the time (`linear` false) or its
// linear form in the coefficients.
void model_only(benchmark::State& state, const Workload& w, bool linear) {
  const CostModel model(build_graph(w), load_target("ascend910b1"));
  const std::vector<TileConfig> configs = feasible_candidates(model, w, 1024, 1, Repeats::Allowed);
  std::vector<TilingSummary> summaries;
  for (const TileConfig& c : configs) summaries.push_back(model.analyze(c));
  for (auto _ : state) {
    for (size_t i = 0; i < configs.size(); ++i) {
      benchmark::DoNotOptimize(linear ? model.terms(summaries[i], configs[i], model.coefficients()).value()
                                      : model.predict_ns(summaries[i], configs[i]));
    }
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * configs.size()));
}

void ModelOnly(benchmark::State& state, const Workload& w) { model_only(state, w, false); }
void LinearTerms(benchmark::State& state, const Workload& w) { model_only(state, w, true); }

void EstimateWithBreakdown(benchmark::State& state, const Workload& w) {
  const CostModel model(build_graph(w), load_target("ascend910b1"));
  const std::vector<TileConfig> configs = feasible_candidates(model, w, 256, 2, Repeats::Allowed);
  for (auto _ : state) {
    for (const TileConfig& c : configs) benchmark::DoNotOptimize(model.estimate(c));
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * configs.size()));
}

// The ranking-quality hook: the model's order against the simulator's times.
void Ranking(benchmark::State& state, const Workload& w) {
  const Target target = load_target("ascend910b1");
  const CostModel model(build_graph(w), target);
  const std::vector<TileConfig> configs = feasible_candidates(model, w, 48, 3, Repeats::Dropped);
  std::vector<double> predicted(configs.size()), simulated;
  model.score(configs, predicted);
  for (auto _ : state) {
    simulated.clear();
    for (const measure::Measurement& m : measure::make_runner("sim", target)->measure(w, configs)) {
      simulated.push_back(m.ok() ? m.stats.median_ns : INFINITY);
    }
  }
  state.counters["candidates"] = static_cast<double>(configs.size());
  state.counters["kendall_tau"] = kendall_tau(predicted, simulated);
  state.counters["top1_regret"] = top_k_regret(predicted, simulated, 1);
  state.counters["top5_regret"] = top_k_regret(predicted, simulated, 5);
}

BENCHMARK_CAPTURE(Score, matmul_4096_fp16, kMatmul);
BENCHMARK_CAPTURE(Score, softmax_4096x4096_fp32, kSoftmax);
BENCHMARK_CAPTURE(Score, flash_attention_8k_causal, kFlashAttention)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(ModelOnly, matmul_4096_fp16, kMatmul);
BENCHMARK_CAPTURE(ModelOnly, softmax_4096x4096_fp32, kSoftmax);
BENCHMARK_CAPTURE(LinearTerms, matmul_4096_fp16, kMatmul);
BENCHMARK_CAPTURE(LinearTerms, softmax_4096x4096_fp32, kSoftmax);
BENCHMARK_CAPTURE(EstimateWithBreakdown, matmul_4096_fp16, kMatmul);
BENCHMARK_CAPTURE(EstimateWithBreakdown, softmax_4096x4096_fp32, kSoftmax);
BENCHMARK_CAPTURE(Ranking, matmul_1024_fp16, workload("matmul", {1024, 1024, 1024}, DType::F16))
    ->Iterations(1)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(Ranking, softmax_1024x1024_fp32, workload("softmax", {1024, 1024}, DType::F32))
    ->Iterations(1)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace pto

BENCHMARK_MAIN();
