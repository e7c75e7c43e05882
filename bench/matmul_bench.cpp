// GFLOP/s of the CPU runtime's fp32 matmul beside OpenBLAS sgemm.
//
// For each size (1024^3, 2048^3) and thread count (1, 2), the runtime runs the best of
// a small grid of cube tiles, each compiled by compile() for the host target (the
// grid is timed once per point before the benchmark loop; the label names the
// winner). OpenBLAS runs cblas_sgemm on the same row-major data when the build found
// it (PTO_HAVE_BLAS). Run as results/run.sh does (OPENBLAS_CORETYPE=SKYLAKEX on AVX-512 CPUs).
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/compile.h"
#include "core/cpu_runtime.h"
#include "core/op_library.h"
#include "core/target.h"

#ifdef PTO_HAVE_BLAS
#include <cblas.h>
#endif

namespace pto {
namespace {

const int64_t kSizes[] = {1024, 2048};
const int kThreads[] = {1, 2};

// Cube tiles [mL0,mL1], [kL0,kL1], [nL0,nL1]: L0 blocks the micro-kernel's 8x48
// register tiles divide, and L1 tiles that fill a few hundred KB of L2 per task.
const char* const kGrid[] = {
    R"({"cube":{"m":[128,256],"k":[128,256],"n":[96,192]}})",
    R"({"cube":{"m":[64,256],"k":[256,256],"n":[192,384]}})",
    R"({"cube":{"m":[128,256],"k":[256,512],"n":[192,384]}})",
    R"({"cube":{"m":[64,128],"k":[128,512],"n":[96,384]}})",
    R"({"cube":{"m":[128,128],"k":[64,256],"n":[256,256]}})",  // the PyPTO guide's fp16 default
};

double flops(int64_t n) { return 2.0 * static_cast<double>(n) * static_cast<double>(n) * static_cast<double>(n); }

Workload matmul_workload(int64_t n) { return Workload{"matmul", {n, n, n}, DType::F32, {}}; }

double seconds_of_one_run(CpuExecutor& exec, const std::vector<HostTensor>& inputs) {
  const auto start = std::chrono::steady_clock::now();
  exec.execute(inputs);
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// The grid config that runs fastest at this size and thread count (one warm-up run
// and the better of two timed runs each).
std::string best_config(int64_t n, int threads, const std::vector<HostTensor>& inputs) {
  static std::map<std::pair<int64_t, int>, std::string> cache;
  const auto key = std::make_pair(n, threads);
  if (auto it = cache.find(key); it != cache.end()) return it->second;
  const TensorGraph g = build_graph(matmul_workload(n));
  const Target host = load_target("host");
  std::string best;
  double best_s = 1e30;
  for (const char* text : kGrid) {
    CpuExecutor exec(compile(g, TileConfig::parse(text), host).program, ExecOptions{threads});
    exec.execute(inputs);
    const double s = std::min(seconds_of_one_run(exec, inputs), seconds_of_one_run(exec, inputs));
    if (s < best_s) {
      best_s = s;
      best = text;
    }
  }
  return cache[key] = best;
}

void runtime_matmul(benchmark::State& state, int64_t n, int threads) {
  const TensorGraph g = build_graph(matmul_workload(n));
  const std::vector<HostTensor> inputs = random_inputs(g, 1);
  const std::string config = best_config(n, threads, inputs);
  CpuExecutor exec(compile(g, TileConfig::parse(config), load_target("host")).program, ExecOptions{threads});
  exec.execute(inputs);
  for (auto _ : state) exec.execute(inputs);
  state.counters["GFLOP/s"] = benchmark::Counter(flops(n) / 1e9, benchmark::Counter::kIsIterationInvariantRate);
  state.SetLabel(config);
}

#ifdef PTO_HAVE_BLAS
void openblas_sgemm(benchmark::State& state, int64_t n, int threads) {
  openblas_set_num_threads(threads);
  const std::vector<float> a(static_cast<size_t>(n * n), 0.5f), b(static_cast<size_t>(n * n), 0.25f);
  std::vector<float> c(static_cast<size_t>(n * n));
  const int dim = static_cast<int>(n);
  auto sgemm = [&] {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, dim, dim, dim, 1.0f, a.data(), dim, b.data(), dim, 0.0f,
                c.data(), dim);
  };
  sgemm();
  for (auto _ : state) {
    sgemm();
    benchmark::DoNotOptimize(c.data());
  }
  state.counters["GFLOP/s"] = benchmark::Counter(flops(n) / 1e9, benchmark::Counter::kIsIterationInvariantRate);
}
#endif

}  // namespace

// Each size and thread count, for the runtime and (when found) OpenBLAS.
void register_benchmarks() {
  for (int64_t n : kSizes)
    for (int threads : kThreads) {
      const std::string point = std::to_string(n) + "/threads:" + std::to_string(threads);
      benchmark::RegisterBenchmark(("runtime_matmul_fp32/" + point).c_str(), runtime_matmul, n, threads)
          ->Unit(benchmark::kMillisecond)
          ->UseRealTime()
          ->MinTime(1.0);
#ifdef PTO_HAVE_BLAS
      benchmark::RegisterBenchmark(("openblas_sgemm/" + point).c_str(), openblas_sgemm, n, threads)
          ->Unit(benchmark::kMillisecond)
          ->UseRealTime()
          ->MinTime(1.0);
#endif
    }
}

}  // namespace pto

int main(int argc, char** argv) {
  pto::register_benchmarks();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
