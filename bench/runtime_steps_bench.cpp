// What the CPU runtime's FMAs, steps, tasks and streams cost, against the prices the
// host cost model charges for them (cost_model/host_model.cpp). Families of one-thread runs, each followed by a
// least-squares fit that prints the prices in ns and in cycles of the host's clock:
//
// kernel  The micro-kernel alone (core/runtime/microkernel.h) on packed panels in L1d,
//         9 shapes from 16x16x16 to 32x48x64. Fit: time = the model's FMA cycles x a
//         factor (1 where the model's FMA rate holds) + blocks x block.
// cube    Each of 32 tasks multiplies [64 x 64] x [64 x 48] fp32. The configs split the
//         same FMA work into 4 to 48 TMATMULs a task (mL0 in {16, 32}, kL0 in
//         {16, 32, 64}, nL0 in {16, 48}; one TMATMUL's operands and C stay well inside
//         L1d, so no split pays for cache misses the others do not). A TMATMUL runs
//         mL0/8 x nL0/48 blocks of the 8 x 48 AVX-512 kernel (mL0/4 x nL0/16 of AVX2's
//         4 x 16), so blocks and steps vary apart. Fit: time = base + TMATMULs x step
//         (with the two L0 views it reads) + blocks x block.
// vector  add (2 loads, 1 op, 1 store a task: 8 instructions with the flags) and
//         softmax (1 load, 7 ops, 1 store: 13) on [512 x 64] fp32, fused, in tiles of 1 to
//         64 whole rows: the elements and row loops stay the same, the tasks vary. Fit:
//         time = a base per op + tasks x the op's price per task (its steps and set-up).
// element add, sum, amax, erfc, gelu, softmax, layernorm and rmsnorm on [128 | 256 x 1024]
//         fp32, fused, in tiles of 32 whole rows (inputs and output inside a core's LLC
//         share). Fit: time = element passes x pass + exp / log / tanh passes x
//         fp64_math + erf / erfc passes x erf + bytes loaded x load_byte + bytes stored
//         x store_byte.
// row     add (2 loads, 1 op, 1 store) and gelu (1 load, 5 ops, 1 store) on [256 x 1024]
//         fp32, fused, in tiles of 4096 elements from 256 x 16 to 4 x 1024: the elements
//         and tasks stay the same, the rows of a tile vary. Each row of a tile is a call
//         of every instruction's row loop, and a tile narrower than the tensor loads and
//         stores each row as a run of its own. Fit: time = a base per op + row calls x
//         row_call + runs x run_start (HostModel::row_calls, row_runs: the two ops call
//         and run in different ratios). softmax reduces its rows, so it varies the
//         row length instead: 2^18 elements in whole rows of 16 to 1024, 4096 a task.
// stream  rmsnorm [2048 x 1024] fused, in whole-row tiles of 1 to 2048 rows: time per
//         element against the UB footprint (no fit).
// pack    TLOAD's packing (runtime::pack_panels) of an fp32 operand into A panels (runs
//         along a row, 64 rows a window) or B panels (runs along a row of B, 64 rows
//         deep), windows swept over the whole operand as a matmul's tiles sweep it, for
//         operands of 256 KiB to 16 MiB: inside the core's L2, past it, past a core's LLC
//         share. Per operand and size, fit: time = bytes x byte + runs x run (a run start,
//         runs of 32, 128 and 512 floats).
#include <benchmark/benchmark.h>

#include <cstdio>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "core/analyze.h"
#include "core/compile.h"
#include "core/cpu_runtime.h"
#include "core/op_library.h"
#include "core/runtime/microkernel.h"
#include "core/runtime/panels.h"
#include "core/target.h"
#include "cost_model/host_model.h"

namespace pto {
namespace {

const Target& host() {
  static const Target t = load_target("host");
  return t;
}

// The micro-kernel alone on packed panels in L1d: C[m, n] += A[m, k] x B[k, n].
struct KernelShape {
  int64_t m, n, k;
};

// One run: a workload compiled with its config, the micro-kernel alone, or a packing
// sweep; and the amounts the fit prices.
struct Case {
  std::string name;
  std::map<std::string, double> amounts;
  std::function<void(benchmark::State&)> run;
};

struct Family {
  std::string title;
  std::vector<std::string> regressors;
  std::vector<Case> cases;
};

// Runs the workload compiled with `config`, on random inputs.
std::function<void(benchmark::State&)> compiled(const Workload& w, const std::string& config) {
  return [w, config](benchmark::State& state) {
    const TensorGraph g = build_graph(w);
    const std::vector<HostTensor> inputs = random_inputs(g, 1);
    CpuExecutor exec(compile(g, TileConfig::parse(config), host()).program, ExecOptions{1});
    exec.execute(inputs);
    for (auto _ : state) exec.execute(inputs);
  };
}

// A vector tile of `rows` x `width`, one slot.
std::string vec_config(int64_t rows, int64_t width) {
  return R"({"vec":[)" + std::to_string(rows) + "," + std::to_string(width) + R"(],"nbuffer":1})";
}

std::string cube_config(int64_t mL0, int64_t kL0, int64_t nL0) {
  return R"({"cube":{"m":[)" + std::to_string(mL0) + R"(,64],"k":[)" + std::to_string(kL0) + R"(,64],"n":[)" +
         std::to_string(nL0) + ",48]}}";
}

Family cube_family() {
  const Workload w{"matmul", {32 * 64, 64, 48}, DType::F32, {}};
  const TensorGraph g = build_graph(w);
  const HostModel model(g, host());
  Family f{"cube", {"base", "tmatmul", "block"}, {}};
  for (int64_t m : {16, 32})
    for (int64_t k : {16, 32, 64})
      for (int64_t n : {16, 48}) {
        const std::string config = cube_config(m, k, n);
        const double tmatmuls = static_cast<double>(analyze(g, TileConfig::parse(config), host()).kernels[0].tmatmuls);
        f.cases.push_back({"cube/" + config,
                           {{"base", 1}, {"tmatmul", tmatmuls},
                            {"block", tmatmuls * static_cast<double>(model.tmatmul_blocks(m, n))}},
                           compiled(w, config)});
      }
  return f;
}

Family vector_family() {
  Family f{"vector", {"add", "softmax", "add_task", "softmax_task"}, {}};
  for (const char* op : {"add", "softmax"}) {
    const Workload w{op, {512, 64}, DType::F32, {}};
    const TensorGraph g = build_graph(w);
    for (int64_t rows : {1, 2, 4, 8, 16, 64}) {
      const std::string config = vec_config(rows, 64);
      double tasks = 0;
      for (const KernelSummary& k : analyze(g, TileConfig::parse(config), host()).kernels)
        tasks += static_cast<double>(k.aiv_tasks);
      f.cases.push_back({std::string("vector/") + op + "/" + config,
                         {{op, 1}, {std::string(op) + "_task", tasks}},
                         compiled(w, config)});
    }
  }
  return f;
}

// Runs the micro-kernel alone on packed panels in L1d.
std::function<void(benchmark::State&)> micro_kernel(KernelShape s) {
  return [s](benchmark::State& state) {
    using runtime::kPanelColsB;
    using runtime::kPanelRowsA;
    const int64_t a_stride = s.k * kPanelRowsA, b_stride = s.k * kPanelColsB;
    std::vector<float> a(static_cast<size_t>(ceil_div(s.m, kPanelRowsA) * a_stride), 0.5f);
    std::vector<float> b(static_cast<size_t>(ceil_div(s.n, kPanelColsB) * b_stride), 0.25f);
    std::vector<float> c(static_cast<size_t>(s.m * s.n), 0.0f);
    for (auto _ : state) {
      runtime::gemm_panels(s.m, s.n, s.k, a.data(), a_stride, b.data(), b_stride, c.data(), s.n, true);
      benchmark::DoNotOptimize(c.data());
    }
  };
}

Family kernel_family() {
  const TensorGraph g = build_graph(Workload{"matmul", {64, 64, 64}, DType::F32, {}});
  const HostModel model(g, host());
  Family f{"kernel", {"fma", "block"}, {}};
  for (const KernelShape s : {KernelShape{32, 48, 16}, {32, 48, 32}, {32, 48, 64}, {16, 16, 16}, {16, 16, 64},
                              {16, 16, 256}, {32, 16, 16}, {32, 16, 64}, {32, 16, 128}})
    f.cases.push_back({"kernel/" + std::to_string(s.m) + "x" + std::to_string(s.n) + "x" + std::to_string(s.k),
                       {{"fma", model.tmatmul_fma_cycles(s.m, s.n, s.k)},
                        {"block", static_cast<double>(model.tmatmul_blocks(s.m, s.n))}},
                       micro_kernel(s)});
  return f;
}

Family stream_family() {
  Family f{"stream", {}, {}};
  const Workload w{"rmsnorm", {2048, 1024}, DType::F32, {}};
  const TensorGraph g = build_graph(w);
  for (int64_t rows : {1, 4, 16, 64, 128, 256, 512, 1024, 2048}) {
    const std::string config = R"({"vec":[)" + std::to_string(rows) + R"(,1024],"nbuffer":1})";
    const KernelSummary k = analyze(g, TileConfig::parse(config), host()).kernels.at(0);
    f.cases.push_back({"stream/" + config,
                       {{"ub_kib", static_cast<double>(k.footprint.at(MemLevel::UB)) / 1024}, {"elements", 2048.0 * 1024}},
                       compiled(w, config)});
  }
  return f;
}

// One case of the row family: `w` in tiles of 4096 elements, `width` wide, with the row
// calls and runs the model charges for them.
Case row_case(const Workload& w, int64_t width) {
  const TensorGraph g = build_graph(w);
  const HostModel model(g, host());
  const std::string config = vec_config(4096 / width, width);
  std::map<std::string, double> amounts{{w.op, 1}, {"row_call", 0}, {"run_start", 0}};
  for (const KernelSummary& k : analyze(g, TileConfig::parse(config), host()).kernels) {
    for (const VectorWork& v : k.vector_work) amounts["row_call"] += model.row_calls(v, k);
    amounts["run_start"] += model.row_runs(k);
  }
  return {"row/" + w.key() + "/" + config, amounts, compiled(w, config)};
}

Family row_family() {
  Family f{"row", {"add", "gelu", "softmax", "row_call", "run_start"}, {}};
  for (int64_t width : {16, 32, 64, 128, 256, 512, 1024}) {
    for (const char* op : {"add", "gelu"}) f.cases.push_back(row_case({op, {256, 1024}, DType::F32, {}}, width));
    // softmax reduces its rows, so its tiles hold whole rows: the same 2^18 elements in
    // rows of `width`.
    f.cases.push_back(row_case({"softmax", {(int64_t{1} << 18) / width, width}, DType::F32, {}}, width));
  }
  return f;
}

// The amounts a fused vector kernel's elements cost by: every pass over them, the
// transcendental passes again, and the bytes its row loads read and its stores write.
std::map<std::string, double> element_amounts(const KernelSummary& k) {
  std::map<std::string, double> amounts{{"pass", 0}, {"fp64_math", 0}, {"erf", 0}, {"load_byte", 0},
                                        {"store_byte", k.gm_write_bytes}};
  for (const VectorWork& v : k.vector_work) {
    const double e = static_cast<double>(v.elements);
    amounts["pass"] += e;
    if (v.op == OpKind::Exp || v.op == OpKind::Log || v.op == OpKind::Tanh) amounts["fp64_math"] += e;
    if (v.op == OpKind::Erf || v.op == OpKind::Erfc) amounts["erf"] += e;
  }
  for (const TensorRead& read : k.reads) amounts["load_byte"] += read.bytes;
  return amounts;
}

Family element_family() {
  Family f{"element", {"pass", "fp64_math", "erf", "load_byte", "store_byte"}, {}};
  for (const char* op : {"add", "sum", "amax", "erfc", "gelu", "softmax", "layernorm", "rmsnorm"})
    for (const int64_t rows : {128, 256}) {
      const Workload w{op, {rows, 1024}, DType::F32, {}};
      const TensorGraph g = build_graph(w);
      const std::string config = vec_config(32, 1024);
      const KernelSummary k = analyze(g, TileConfig::parse(config), host()).kernels.at(0);
      f.cases.push_back({std::string("element/") + op + "/" + std::to_string(rows) + "x1024", element_amounts(k),
                         compiled(w, config)});
    }
  return f;
}

// One packing sweep: every window of a row-major fp32 operand of `bytes`, 512 floats a
// row, packed in turn into one L1 buffer, as a matmul's TLOADs sweep A (`is_a`: runs
// along a row, 64 rows a window) or B (runs along a row of B, 64 rows deep).
struct PackSweep {
  bool is_a;
  int64_t bytes, run;
};

constexpr int64_t kPackCols = 512, kPackWindowRows = 64;

std::function<void(benchmark::State&)> pack_sweep(PackSweep p) {
  return [p](benchmark::State& state) {
    using runtime::kPanelColsB;
    using runtime::kPanelRowsA;
    const int64_t rows = p.bytes / 4 / kPackCols;
    std::vector<float> src(static_cast<size_t>(rows * kPackCols), 0.5f);
    const int width = p.is_a ? kPanelRowsA : kPanelColsB;
    const int64_t lanes = p.is_a ? kPackWindowRows : p.run, depth = p.is_a ? p.run : kPackWindowRows;
    std::vector<float> l1(static_cast<size_t>(runtime::panel_elements(width, lanes, depth)));
    const runtime::Panels dst{l1.data(), width, depth * width};
    for (auto _ : state) {
      for (int64_t r = 0; r < rows; r += kPackWindowRows)
        for (int64_t c = 0; c < kPackCols; c += p.run) {
          const float* window = src.data() + r * kPackCols + c;
          if (p.is_a) runtime::pack_panels(dst, lanes, depth, window, DType::F32, kPackCols, 1);
          else runtime::pack_panels(dst, lanes, depth, window, DType::F32, 1, kPackCols);
        }
      benchmark::DoNotOptimize(l1.data());
    }
  };
}

// Per operand and size, one family: the fit separates the price of a byte from a run's.
std::vector<Family> pack_families() {
  std::vector<Family> families;
  for (const bool is_a : {true, false})
    for (const int64_t kib : {256, 1024, 4096, 16384}) {
      const std::string title = std::string("pack ") + (is_a ? "A" : "B") + " " + std::to_string(kib) + " KiB";
      Family f{title, {"byte", "run"}, {}};
      for (const int64_t run : {32, 128, 512}) {
        const PackSweep p{is_a, kib << 10, run};
        f.cases.push_back({"pack/" + std::string(is_a ? "A" : "B") + "/" + std::to_string(kib) + "KiB/run" +
                               std::to_string(run),
                           {{"byte", static_cast<double>(p.bytes)}, {"run", static_cast<double>(p.bytes / 4 / run)}},
                           pack_sweep(p)});
      }
      families.push_back(std::move(f));
    }
  return families;
}

// Keeps each run's CPU time per iteration (ns; the table is in us) by name, besides
// printing the table: the median when repeated.
class Collector : public benchmark::ConsoleReporter {
 public:
  Collector() : ConsoleReporter(OO_Tabular) {}  // no colour codes: results/run.sh keeps the output
  std::map<std::string, double> ns;
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& r : runs)
      if (r.run_type == Run::RT_Aggregate ? r.aggregate_name == "median" : !r.error_occurred)
        ns[r.run_name.function_name] = r.GetAdjustedCPUTime() * 1e3;
    ConsoleReporter::ReportRuns(runs);
  }
};

// Least squares of time = Σ price x amount over the family's cases (normal equations,
// Gauss-Jordan), printed per regressor.
void print_fit(const Family& f, const std::map<std::string, double>& ns) {
  if (f.regressors.empty()) {  // no fit: time per element against the UB footprint
    for (const Case& c : f.cases)
      if (auto it = ns.find(c.name); it != ns.end())
        std::printf("%s: UB %.0f KiB, %.2f ns per element\n", c.name.c_str(), c.amounts.at("ub_kib"),
                    it->second / c.amounts.at("elements"));
    return;
  }
  const size_t n = f.regressors.size();
  std::vector<std::vector<double>> a(n, std::vector<double>(n + 1, 0));
  size_t used = 0;
  for (const Case& c : f.cases) {
    const auto it = ns.find(c.name);
    if (it == ns.end()) continue;  // filtered out
    ++used;
    std::vector<double> x(n, 0);
    for (size_t i = 0; i < n; ++i)
      if (auto amount = c.amounts.find(f.regressors[i]); amount != c.amounts.end()) x[i] = amount->second;
    for (size_t i = 0; i < n; ++i) {
      for (size_t j = 0; j < n; ++j) a[i][j] += x[i] * x[j];
      a[i][n] += x[i] * it->second;
    }
  }
  if (used <= n) return;  // too few runs to fit
  for (size_t p = 0; p < n; ++p)
    for (size_t i = 0; i < n; ++i) {
      if (i == p) continue;
      const double factor = a[i][p] / a[p][p];
      for (size_t j = p; j <= n; ++j) a[i][j] -= factor * a[p][j];
    }
  const double ghz = host().clock_mhz / 1000.0;
  std::printf("%s fit over %zu runs, at %.2f GHz:", f.title.c_str(), used, ghz);
  for (size_t i = 0; i < n; ++i) {
    const double price = a[i][n] / a[i][i];
    std::printf("  %s %.2f ns (%.2f cycles)", f.regressors[i].c_str(), price, price * ghz);
  }
  std::printf("\n");
}

}  // namespace
}  // namespace pto

int main(int argc, char** argv) {
  using namespace pto;
  std::vector<Family> families = {kernel_family(), cube_family(), vector_family(), element_family(), row_family(), stream_family()};
  for (Family& f : pack_families()) families.push_back(std::move(f));
  for (const Family& f : families)
    for (const Case& c : f.cases) {
      benchmark::RegisterBenchmark(c.name.c_str(), [&c](benchmark::State& state) {
        c.run(state);
        for (const auto& [name, amount] : c.amounts) state.counters[name] = amount;
      })->Unit(benchmark::kMicrosecond);
    }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  Collector collector;
  benchmark::RunSpecifiedBenchmarks(&collector);
  for (const Family& f : families) print_fit(f, collector.ns);
  benchmark::Shutdown();
  return 0;
}
