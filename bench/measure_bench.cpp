// The cost of one `cpu` measurement: what the runner adds around the kernel's own
// time — the reference (once per batch), the fork of an isolated child or the spawn of
// a pto-tune-worker (which rebuilds the reference itself), compile and the verifying
// first run, and the timed repetitions with their minimum total time.
//
//   build-measure/bench/measure_bench --benchmark_min_time=1
//
// BM_CpuMeasurement times one measure() call of one candidate: with the default timing
// policy (warm-up, then runs until 50 ms and 5 runs) that is what a candidate costs the
// tuner; with the minimal policy (no warm-up, one timed run, no minimum time) what is
// left is the fixed overhead. results/measure_overhead.md records a run.
#include <benchmark/benchmark.h>

#include <string>

#include "core/op_library.h"
#include "measure/cpu/candidate.h"
#include "measure/isolation.h"
#include "measure/runner.h"

namespace pto::measure {
namespace {

const Target& host() {
  static const Target t = load_target("host");
  return t;
}

Workload matmul(int64_t size) { return Workload{"matmul", {size, size, size}, DType::F32, {}}; }

enum Isolation { kInProcess = 0, kFork = 1, kSpawn = 2 };

const char* isolation_label(int64_t isolation) {
  return isolation == kInProcess ? "in-process" : isolation == kFork ? "forked" : "spawned worker";
}

// Args: matrix size, isolation (Isolation), default timing policy (1) or the minimal one (0).
void BM_CpuMeasurement(benchmark::State& state) {
  Workload w = matmul(state.range(0));
  RunnerOptions options;
  options.isolate = state.range(1) != kInProcess;
  options.child_start = state.range(1) == kSpawn ? ChildStart::Spawn : ChildStart::Fork;
  bool default_policy = state.range(2) != 0;
  if (!default_policy) {
    options.warmup = 0;
    options.min_time_ms = 0;
    options.min_repetitions = 1;
  }
  TileConfig config = default_config(w, build_graph(w), host());
  auto runner = make_runner("cpu", host(), options);
  Measurement last;
  for (auto _ : state) last = runner->measure(w, {config}).front();
  if (!last.ok()) state.SkipWithError(last.error.c_str());
  state.counters["kernel_ms"] = last.stats.median_ns / 1e6;
  state.counters["repetitions"] = last.stats.repetitions;
  state.SetLabel(std::string(isolation_label(state.range(1))) +
                 (default_policy ? ", 50 ms/5 runs" : ", 1 run"));
}
BENCHMARK(BM_CpuMeasurement)
    ->ArgsProduct({{64, 512}, {kFork, kSpawn, kInProcess}, {1, 0}})
    ->ArgNames({"size", "isolation", "default_policy"})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// The inputs and the reference outputs every candidate is checked against, once per batch.
void BM_Fixture(benchmark::State& state) {
  Workload w = matmul(state.range(0));
  TensorGraph graph = build_graph(w);
  for (auto _ : state) benchmark::DoNotOptimize(make_fixture(w, graph, 1));
}
BENCHMARK(BM_Fixture)->Arg(64)->Arg(512)->ArgName("size")->Unit(benchmark::kMillisecond)->UseRealTime();

// Fork, a fresh thread, a pipe round trip and the reap: the price of isolation alone.
void BM_EmptyChild(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(run_in_child([] { return std::string("{}"); }, 10));
}
BENCHMARK(BM_EmptyChild)->Unit(benchmark::kMillisecond)->UseRealTime();

// posix_spawn of pto-tune-worker, its start-up and a malformed request it rejects at
// once: the price of a spawned child before it does any work.
void BM_EmptyWorker(benchmark::State& state) {
  const std::string worker = worker_executable();
  for (auto _ : state) benchmark::DoNotOptimize(run_in_worker(worker, {}, "{}", 10));
}
BENCHMARK(BM_EmptyWorker)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace pto::measure

BENCHMARK_MAIN();
