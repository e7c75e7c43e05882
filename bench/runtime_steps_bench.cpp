// What the CPU runtime's FMAs, steps, tasks and streams cost, against the prices the
// host cost model charges for them (cost_model/host_model.cpp). Families of one-thread
// runs, each followed by a non-negative least-squares fit that prints the prices in ns
// and in cycles of the host's nominal clock. All but packing past 1 MiB are the host
// probe's (calibration/host_probe.h), which `pto-tune calibrate` times on
// a host to set the model's prices; this program times them under Google Benchmark, for
// the published figures:
//
// kernel  The micro-kernel alone (core/runtime/microkernel.h) on packed panels in L1d,
//         9 shapes from 16x16x16 to 32x48x64, each repeated to ~200k model cycles. Fit:
//         time = the model's FMA cycles x a factor (1 where the reference machine's FMA
//         rate holds) + blocks x block.
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
//         time = a base per op + the tasks' instructions (flags included, standing in for
//         a task's set-up) x instr.
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
// stream  rmsnorm [2048 x 1024] fused, in whole-row tiles of 16 to 2048 rows: time per
//         element against the UB footprint (no fit here; the probe matches the model's
//         stream speed to it).
// pack    TLOAD's packing (runtime::pack_panels) of an fp32 operand into A panels (runs
//         along a row, 64 rows a window) or B panels (runs along a row of B, 64 rows
//         deep), windows swept over the whole operand as a matmul's tiles sweep it, for
//         operands of 256 KiB to 16 MiB: inside the core's L2, past it, past a core's LLC
//         share. Per operand and size, fit: time = bytes x byte + runs x run (a run start,
//         runs of 32, 128 and 512 floats).
#include <benchmark/benchmark.h>

#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "core/target.h"
#include "calibration/host_probe.h"

namespace pto {
namespace {

using calibration::ProbeCase;
using calibration::ProbeFamily;

const Target& host() {
  static const Target t = load_target("host");
  return t;
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

// The family's fit (calibration::fit_family), printed per regressor in ns and in cycles of
// the host's nominal clock; the stream family's time per element.
void print_fit(const ProbeFamily& f, const std::map<std::string, double>& ns) {
  if (f.regressors.empty()) {
    for (const ProbeCase& c : f.cases)
      if (auto it = ns.find(c.name); it != ns.end())
        std::printf("%s: UB %.0f KiB, %.2f ns per element\n", c.name.c_str(), c.amounts.at("ub_kib"),
                    it->second / c.amounts.at("elements"));
    return;
  }
  const std::map<std::string, double> prices = calibration::fit_family(f, ns);
  if (prices.empty()) return;  // too few runs to fit
  const double ghz = host().clock_mhz / 1000.0;
  std::printf("%s fit at %.2f GHz:", f.title.c_str(), ghz);
  for (const std::string& r : f.regressors)
    std::printf("  %s %.2f ns (%.2f cycles)", r.c_str(), prices.at(r), prices.at(r) * ghz);
  std::printf("\n");
}

}  // namespace
}  // namespace pto

int main(int argc, char** argv) {
  using namespace pto;
  std::vector<ProbeFamily> families = {calibration::kernel_family(host()), calibration::cube_family(host()),
                                       calibration::vector_family(host()), calibration::element_family(host()),
                                       calibration::row_family(host()),    calibration::stream_family(host())};
  for (const bool is_a : {true, false})
    for (const int64_t kib : {256, 1024, 4096, 16384}) families.push_back(calibration::pack_family(is_a, kib));
  for (const ProbeFamily& f : families)
    for (const ProbeCase& c : f.cases) {
      benchmark::RegisterBenchmark(c.name.c_str(), [&c](benchmark::State& state) {
        const std::function<void()> run = c.prepare();
        run();
        for (auto _ : state) run();
        for (const auto& [name, amount] : c.amounts) state.counters[name] = amount;
      })->Unit(benchmark::kMicrosecond);
    }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  Collector collector;
  benchmark::RunSpecifiedBenchmarks(&collector);
  for (const ProbeFamily& f : families) print_fit(f, collector.ns);
  benchmark::Shutdown();
  return 0;
}
