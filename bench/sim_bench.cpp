// Speed of the NPU simulator: simulated instructions per second of host time, on the
// calibration matmul (6144^3 fp16, ascend910b1; target: under 2 s) and on smaller
// programs of several kinds. Programs are compiled once, outside the timed loop.
//
//   build/bench/sim_bench
//
// Counters: instr/s = simulated instructions per second (target: >= 1e6),
// sim_ms = the simulated time of the program (the same on every run).
#include <benchmark/benchmark.h>

#include <string>

#include "core/compile.h"
#include "core/op_library.h"
#include "core/target.h"
#include "measure/sim/simulator.h"

namespace pto::sim {
namespace {

const Target& b1() {
  static const Target t = load_target("ascend910b1");
  return t;
}

Program compile_op(const std::string& op, Shape shape, const std::string& config) {
  const Workload w{op, std::move(shape), DType::F16, {}};
  const TensorGraph graph = build_graph(w);
  const TileConfig c = config.empty() ? default_config(w, graph, b1()) : TileConfig::parse(config);
  return compile(graph, c, b1()).program;
}

void run(benchmark::State& state, const Program& program) {
  SimResult r;
  for (auto _ : state) {
    r = simulate(program, b1());
    benchmark::DoNotOptimize(r.cycles);
  }
  state.counters["instr/s"] = benchmark::Counter(static_cast<double>(r.instructions) * static_cast<double>(state.iterations()),
                                                 benchmark::Counter::kIsRate);
  state.counters["instrs"] = static_cast<double>(r.instructions);
  state.counters["sim_ms"] = r.time_ns / 1e6;
}

constexpr const char* kGuideTiles = R"({"cube":{"m":[128,128],"k":[64,256],"n":[256,256]},"nbuffer":2)";

void BM_GuideMatmul6144(benchmark::State& state) {
  static const Program row_major = compile_op("matmul", {6144, 6144, 6144}, std::string(kGuideTiles) + "}");
  run(state, row_major);
}
BENCHMARK(BM_GuideMatmul6144)->Unit(benchmark::kMillisecond);

void BM_GuideMatmul6144Grouped(benchmark::State& state) {
  static const Program grouped =
      compile_op("matmul", {6144, 6144, 6144}, std::string(kGuideTiles) + R"(,"l2_group":[6,4]})");
  run(state, grouped);
}
BENCHMARK(BM_GuideMatmul6144Grouped)->Unit(benchmark::kMillisecond);

void BM_Matmul(benchmark::State& state) {
  const int64_t n = state.range(0);
  run(state, compile_op("matmul", {n, n, n}, ""));
}
BENCHMARK(BM_Matmul)->Arg(1024)->Arg(2048)->Arg(4096)->Unit(benchmark::kMillisecond);

void BM_Softmax(benchmark::State& state) {
  run(state, compile_op("softmax", {state.range(0), 4096}, ""));
}
BENCHMARK(BM_Softmax)->Arg(4096)->Arg(16384)->Unit(benchmark::kMillisecond);

void BM_Attention(benchmark::State& state) {
  run(state, compile_op("attention", {1, 8, state.range(0), 128}, ""));
}
BENCHMARK(BM_Attention)->Arg(1024)->Arg(2048)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace pto::sim

BENCHMARK_MAIN();
