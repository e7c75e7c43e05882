// The host probe (see host_probe.h).
#include "calibration/host_probe.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <span>

#include "core/analyze.h"
#include "core/compile.h"
#include "core/cpu_runtime.h"
#include "core/error.h"
#include "core/op_library.h"
#include "core/runtime/microkernel.h"
#include "core/runtime/panels.h"
#include "cost_model/estimate.h"
#include "cost_model/host_model.h"
#include "cost_model/nnls.h"
#include "measure/cpu/timing.h"
#include "measure/stats.h"

namespace pto::calibration {

namespace {

// Packing on the AVX2 reference machine (the Zen 3 VM), the pack loop alone, cycles a
// byte of an operand inside the core's L2 (results/runtime_steps.md, Packing: A
// 0.10-0.11, B 0.26-0.28): what HostPrices::pack_speedup is measured against.
constexpr double kReferencePackACyclesPerByte = 0.11;
constexpr double kReferencePackBCyclesPerByte = 0.27;
// A vector row load's byte there (the element fit: 0.12-0.13 cycles): what
// HostPrices::copy_speedup is measured against.
constexpr double kReferenceLoadCyclesPerByte = 0.13;

// A micro-kernel run repeats until it is about this many model cycles, so that each
// timed iteration is far above the clock's resolution.
constexpr double kKernelCyclesPerIteration = 200'000;

// Runs the workload compiled with `config`, on random inputs, one thread.
std::function<std::function<void()>()> compiled(const Workload& w, const std::string& config, const Target& target) {
  return [w, config, &target] {
    const TensorGraph g = build_graph(w);
    auto inputs = std::make_shared<const std::vector<HostTensor>>(random_inputs(g, 1));
    auto exec = std::make_shared<CpuExecutor>(compile(g, TileConfig::parse(config), target).program, ExecOptions{1});
    return std::function<void()>([exec, inputs] { exec->execute(*inputs); });
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

std::vector<KernelSummary> kernels(const TensorGraph& g, const std::string& config, const Target& target) {
  return analyze(g, TileConfig::parse(config), target).kernels;
}

// The micro-kernel alone on packed panels in L1d: C[m, n] += A[m, k] x B[k, n], `reps` times.
struct KernelShape {
  int64_t m, n, k;
};

std::function<std::function<void()>()> micro_kernel(KernelShape s, int64_t reps) {
  return [s, reps] {
    using runtime::kPanelColsB;
    using runtime::kPanelRowsA;
    const int64_t a_stride = s.k * kPanelRowsA, b_stride = s.k * kPanelColsB;
    auto a = std::make_shared<std::vector<float>>(static_cast<size_t>(ceil_div(s.m, kPanelRowsA) * a_stride), 0.5f);
    auto b = std::make_shared<std::vector<float>>(static_cast<size_t>(ceil_div(s.n, kPanelColsB) * b_stride), 0.25f);
    auto c = std::make_shared<std::vector<float>>(static_cast<size_t>(s.m * s.n), 0.0f);
    return std::function<void()>([=] {
      for (int64_t r = 0; r < reps; ++r)
        runtime::gemm_panels(s.m, s.n, s.k, a->data(), a_stride, b->data(), b_stride, c->data(), s.n, true);
    });
  };
}

// One case of the row family: `w` in tiles of 4096 elements, `width` wide, with the row
// calls and runs the model charges for them.
ProbeCase row_case(const Workload& w, int64_t width, const Target& target) {
  const TensorGraph g = build_graph(w);
  const HostModel model(g, target);
  const std::string config = vec_config(4096 / width, width);
  std::map<std::string, double> amounts{{w.op, 1}, {"row_call", 0}, {"run_start", 0}};
  for (const KernelSummary& k : kernels(g, config, target)) {
    for (const VectorWork& v : k.vector_work) amounts["row_call"] += model.row_calls(v, k);
    amounts["run_start"] += model.row_runs(k);
  }
  return {"row/" + w.key() + "/" + config, amounts, compiled(w, config, target)};
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

constexpr int64_t kPackCols = 512, kPackWindowRows = 64;

// The stream family: rmsnorm over [2048 x 1024] in tiles of whole rows, a UB footprint
// from 200 KiB to 24 MiB. Timed by the family and priced again by the derivation.
constexpr int64_t kStreamRows[] = {16, 64, 128, 256, 512, 1024, 2048};
constexpr int64_t kStreamCols = 1024;

Workload stream_workload() { return {"rmsnorm", {2048, kStreamCols}, DType::F32, {}}; }
// The stream speed-ups tried: a log grid from 1/4 to 16 times the reference machine's.
constexpr double kMinStreamSpeedup = 0.25, kMaxStreamSpeedup = 16;
constexpr int kStreamSpeedupSteps = 48;

// Every window of a row-major fp32 operand of `bytes`, 512 floats a row, packed in turn
// into one L1 buffer, as a matmul's TLOADs sweep A (`is_a`: runs along a row, 64 rows a
// window) or B (runs along a row of B, 64 rows deep).
std::function<std::function<void()>()> pack_sweep(bool is_a, int64_t bytes, int64_t run) {
  return [is_a, bytes, run] {
    using runtime::kPanelColsB;
    using runtime::kPanelRowsA;
    const int64_t rows = bytes / 4 / kPackCols;
    auto src = std::make_shared<std::vector<float>>(static_cast<size_t>(rows * kPackCols), 0.5f);
    const int width = is_a ? kPanelRowsA : kPanelColsB;
    const int64_t lanes = is_a ? kPackWindowRows : run, depth = is_a ? run : kPackWindowRows;
    auto l1 = std::make_shared<std::vector<float>>(static_cast<size_t>(runtime::panel_elements(width, lanes, depth)));
    return std::function<void()>([=] {
      const runtime::Panels dst{l1->data(), width, depth * width};
      for (int64_t r = 0; r < rows; r += kPackWindowRows)
        for (int64_t c = 0; c < kPackCols; c += run) {
          const float* window = src->data() + r * kPackCols + c;
          if (is_a) runtime::pack_panels(dst, lanes, depth, window, DType::F32, kPackCols, 1);
          else runtime::pack_panels(dst, lanes, depth, window, DType::F32, 1, kPackCols);
        }
    });
  };
}

// Each case's ns per iteration: every round times every case once, so a slow spell of
// the machine falls on all cases alike, and a case keeps its fastest round's median.
struct CaseTimes {
  std::map<std::string, double> ns;
  double round_spread = 0;  // HostProbeResult::round_spread
};

CaseTimes time_cases(const std::vector<ProbeFamily>& families, const HostProbeOptions& options) {
  std::vector<std::pair<const ProbeCase*, std::function<void()>>> runs;
  for (const ProbeFamily& f : families)
    for (const ProbeCase& c : f.cases) runs.emplace_back(&c, c.prepare());
  measure::TimingPolicy policy;
  policy.min_time_ms = options.min_time_ms;
  policy.min_repetitions = options.min_repetitions;
  policy.cpu_time = true;
  std::vector<std::vector<double>> rounds(runs.size());  // per case, each round's median
  size_t done = 0;
  for (int round = 0; round < options.rounds; ++round)
    for (size_t i = 0; i < runs.size(); ++i) {
      rounds[i].push_back(measure::percentile(measure::time_runs(runs[i].second, policy), 0.5));
      if (options.progress) options.progress(++done, runs.size() * static_cast<size_t>(options.rounds));
    }
  CaseTimes out;
  std::vector<double> spreads;
  for (size_t i = 0; i < runs.size(); ++i) {
    const auto [fastest, slowest] = std::minmax_element(rounds[i].begin(), rounds[i].end());
    out.ns[runs[i].first->name] = *fastest;
    if (*fastest > 0) spreads.push_back((*slowest - *fastest) / *fastest);
  }
  if (!spreads.empty()) out.round_spread = measure::percentile(spreads, 0.5);
  return out;
}

// Derives the prices from the families' fits (cycles), each from the family that
// isolates it; a fit that cannot give a rate leaves the default and says why.
class PriceDerivation {
 public:
  PriceDerivation(const Target& target, HostProbeResult& result) : target_(target), result_(result) {}

  double fitted(const std::string& family, const std::string& regressor) const {
    for (const ProbeFit& f : result_.fits)
      if (f.family == family)
        if (auto it = f.cycles.find(regressor); it != f.cycles.end()) return it->second;
    return NAN;
  }

  void price(double HostPrices::*field, const char* name, double value) {
    if (std::isfinite(value) && value >= 0) result_.prices.*field = value;
    else keep(name, "its fit gave no usable figure");
  }
  void rate(double HostPrices::*field, const char* name, double value) {
    if (std::isfinite(value) && value > 0) result_.prices.*field = value;
    else keep(name, "its fit gave no positive rate");
  }

  // The streams cannot be priced by a linear fit: a pass pays only what its stream takes
  // beyond its compute. The stream speed-up is the one at which the model, at the other
  // prices just derived, predicts the stream family's times best up to a common factor
  // (the least variance of log measured / predicted): the shape of time against the UB
  // footprint, which is what the streams set.
  void derive_stream_speedup(const ProbeFamily& stream, const std::map<std::string, double>& ns) {
    Target one_core = target_;  // the probe runs one thread
    one_core.aic_cores = one_core.aiv_cores = 1;
    const TensorGraph g = build_graph(stream_workload());
    double best = NAN, best_variance = INFINITY;
    for (int step = 0; step <= kStreamSpeedupSteps; ++step) {
      const double speedup =
          kMinStreamSpeedup * std::pow(kMaxStreamSpeedup / kMinStreamSpeedup, static_cast<double>(step) / kStreamSpeedupSteps);
      Coefficients c = Coefficients::defaults(one_core);
      c.host_prices = result_.prices;
      c.host_prices->stream_speedup = speedup;
      const CostModel model(g, one_core, c);
      std::vector<double> log_ratios;
      for (const ProbeCase& sc : stream.cases) {
        const auto measured = ns.find(sc.name);
        const double predicted = model.predict_ns(
            TileConfig::parse(vec_config(static_cast<int64_t>(sc.amounts.at("rows")), kStreamCols)));
        if (measured != ns.end() && measured->second > 0 && predicted > 0 && std::isfinite(predicted))
          log_ratios.push_back(std::log(measured->second / predicted));
      }
      const double variance = variance_of(log_ratios);
      if (log_ratios.size() >= 3 && variance < best_variance) {
        best_variance = variance;
        best = speedup;
      }
    }
    rate(&HostPrices::stream_speedup, "stream_speedup", best);
  }

  void derive() {
    // The kernel family's FMA amounts are the model's at the reference rates: the fit says
    // how much longer (or shorter) they took.
    rate(&HostPrices::kernel_speedup, "kernel_speedup", 1 / fitted("kernel", "fma"));
    price(&HostPrices::tmatmul_step, "tmatmul_step", fitted("cube", "tmatmul"));
    price(&HostPrices::instr, "instr", fitted("vector", "instr"));
    // The element fit's pass includes an fp32 op's own cycles, which the model charges
    // from the target's vector table.
    const double own = 1.0 / std::max(1, target_.vector_cost("add", DType::F32).parallelism);
    const double pass = fitted("element", "pass");
    price(&HostPrices::pass, "pass", std::isfinite(pass) ? std::max(0.0, pass - own) : pass);
    price(&HostPrices::fp64_math, "fp64_math", fitted("element", "fp64_math"));
    price(&HostPrices::erf, "erf", fitted("element", "erf"));
    price(&HostPrices::row_call, "row_call", fitted("row", "row_call"));
    rate(&HostPrices::pack_speedup, "pack_speedup", pack_speedup());
    // A row load's byte stands for the copies both ways: a stored byte is too cheap beside
    // a pass to measure (the reference machine's fit gave -0.06 cycles).
    rate(&HostPrices::copy_speedup, "copy_speedup", kReferenceLoadCyclesPerByte / fitted("element", "load_byte"));
  }

 private:
  // The geometric mean over A and B panels and both sizes of the reference price over
  // this machine's.
  double pack_speedup() const {
    double log_sum = 0;
    int n = 0;
    for (const ProbeFit& f : result_.fits) {
      if (f.family.rfind("pack ", 0) != 0) continue;
      const auto byte = f.cycles.find("byte");
      if (byte == f.cycles.end() || !(byte->second > 0)) return NAN;
      const bool is_a = f.family.rfind("pack A", 0) == 0;
      log_sum += std::log((is_a ? kReferencePackACyclesPerByte : kReferencePackBCyclesPerByte) / byte->second);
      ++n;
    }
    return n > 0 ? std::exp(log_sum / n) : NAN;
  }

  static double variance_of(const std::vector<double>& v) {
    if (v.empty()) return INFINITY;
    double mean = 0, sq = 0;
    for (double x : v) mean += x;
    mean /= static_cast<double>(v.size());
    for (double x : v) sq += (x - mean) * (x - mean);
    return sq / static_cast<double>(v.size());
  }

  void keep(const char* name, const std::string& why) { result_.kept.push_back(std::string(name) + ": " + why); }

  const Target& target_;
  HostProbeResult& result_;
};

}  // namespace

ProbeFamily kernel_family(const Target& target) {
  const TensorGraph g = build_graph(Workload{"matmul", {64, 64, 64}, DType::F32, {}});
  const HostModel model(g, target);
  ProbeFamily f{"kernel", {"fma", "block"}, {}};
  for (const KernelShape s : {KernelShape{32, 48, 16}, {32, 48, 32}, {32, 48, 64}, {16, 16, 16}, {16, 16, 64},
                              {16, 16, 256}, {32, 16, 16}, {32, 16, 64}, {32, 16, 128}}) {
    const double fma = model.tmatmul_fma_cycles(s.m, s.n, s.k);
    const auto reps = static_cast<int64_t>(std::ceil(kKernelCyclesPerIteration / fma));
    const double r = static_cast<double>(reps);
    f.cases.push_back({"kernel/" + std::to_string(s.m) + "x" + std::to_string(s.n) + "x" + std::to_string(s.k),
                       {{"fma", r * fma}, {"block", r * static_cast<double>(model.tmatmul_blocks(s.m, s.n))}},
                       micro_kernel(s, reps)});
  }
  return f;
}

ProbeFamily cube_family(const Target& target) {
  const Workload w{"matmul", {32 * 64, 64, 48}, DType::F32, {}};
  const TensorGraph g = build_graph(w);
  const HostModel model(g, target);
  ProbeFamily f{"cube", {"base", "tmatmul", "block"}, {}};
  for (int64_t m : {16, 32})
    for (int64_t k : {16, 32, 64})
      for (int64_t n : {16, 48}) {
        const std::string config = cube_config(m, k, n);
        const auto tmatmuls = static_cast<double>(kernels(g, config, target).at(0).tmatmuls);
        f.cases.push_back({"cube/" + config,
                           {{"base", 1}, {"tmatmul", tmatmuls},
                            {"block", tmatmuls * static_cast<double>(model.tmatmul_blocks(m, n))}},
                           compiled(w, config, target)});
      }
  return f;
}

ProbeFamily vector_family(const Target& target) {
  ProbeFamily f{"vector", {"add", "softmax", "instr"}, {}};
  for (const char* op : {"add", "softmax"}) {
    const Workload w{op, {512, 64}, DType::F32, {}};
    const TensorGraph g = build_graph(w);
    for (int64_t rows : {1, 2, 4, 8, 16, 64}) {
      const std::string config = vec_config(rows, 64);
      double instructions = 0;
      for (const KernelSummary& k : kernels(g, config, target)) instructions += static_cast<double>(k.instructions);
      f.cases.push_back({std::string("vector/") + op + "/" + config, {{op, 1}, {"instr", instructions}},
                         compiled(w, config, target)});
    }
  }
  return f;
}

ProbeFamily element_family(const Target& target) {
  ProbeFamily f{"element", {"pass", "fp64_math", "erf", "load_byte", "store_byte"}, {}};
  for (const char* op : {"add", "sum", "amax", "erfc", "gelu", "softmax", "layernorm", "rmsnorm"})
    for (const int64_t rows : {128, 256}) {
      const Workload w{op, {rows, 1024}, DType::F32, {}};
      const std::string config = vec_config(32, 1024);
      f.cases.push_back({std::string("element/") + op + "/" + std::to_string(rows) + "x1024",
                         element_amounts(kernels(build_graph(w), config, target).at(0)), compiled(w, config, target)});
    }
  return f;
}

ProbeFamily row_family(const Target& target) {
  ProbeFamily f{"row", {"add", "gelu", "softmax", "row_call", "run_start"}, {}};
  for (int64_t width : {16, 32, 64, 128, 256, 512, 1024}) {
    for (const char* op : {"add", "gelu"}) f.cases.push_back(row_case({op, {256, 1024}, DType::F32, {}}, width, target));
    // softmax reduces its rows, so its tiles hold whole rows: the same 2^18 elements in
    // rows of `width`.
    f.cases.push_back(row_case({"softmax", {(int64_t{1} << 18) / width, width}, DType::F32, {}}, width, target));
  }
  return f;
}

ProbeFamily stream_family(const Target& target) {
  ProbeFamily f{"stream", {}, {}};
  const Workload w = stream_workload();
  const TensorGraph g = build_graph(w);
  for (int64_t rows : kStreamRows) {
    const std::string config = vec_config(rows, kStreamCols);
    const KernelSummary k = kernels(g, config, target).at(0);
    f.cases.push_back({"stream/" + config,
                       {{"rows", static_cast<double>(rows)},
                        {"ub_kib", static_cast<double>(k.footprint.at(MemLevel::UB)) / 1024},
                        {"elements", static_cast<double>(num_elements(w.shape))}},
                       compiled(w, config, target)});
  }
  return f;
}

ProbeFamily pack_family(bool is_a, int64_t kib) {
  const std::string operand = is_a ? "A" : "B";
  ProbeFamily f{"pack " + operand + " " + std::to_string(kib) + " KiB", {"byte", "run"}, {}};
  const int64_t bytes = kib << 10;
  for (const int64_t run : {32, 128, 512}) {
    f.cases.push_back({"pack/" + operand + "/" + std::to_string(kib) + "KiB/run" + std::to_string(run),
                       {{"byte", static_cast<double>(bytes)}, {"run", static_cast<double>(bytes / 4 / run)}},
                       pack_sweep(is_a, bytes, run)});
  }
  return f;
}

std::map<std::string, double> fit_family(const ProbeFamily& family, const std::map<std::string, double>& ns) {
  std::vector<const ProbeCase*> timed;
  for (const ProbeCase& c : family.cases)
    if (ns.count(c.name)) timed.push_back(&c);
  const size_t cols = family.regressors.size();
  if (cols == 0 || timed.size() < cols) return {};
  // Each column scaled to unit size, so that amounts of very different magnitudes (a
  // base of 1 beside 10^6 elements) condition the solve alike.
  std::vector<double> scale(cols, 0);
  DenseMatrix a(timed.size(), cols);
  std::vector<double> b;
  for (size_t i = 0; i < timed.size(); ++i) {
    for (size_t j = 0; j < cols; ++j) {
      const auto amount = timed[i]->amounts.find(family.regressors[j]);
      a(i, j) = amount == timed[i]->amounts.end() ? 0 : amount->second;
      scale[j] = std::max(scale[j], std::abs(a(i, j)));
    }
    b.push_back(ns.at(timed[i]->name));
  }
  for (size_t i = 0; i < timed.size(); ++i)
    for (size_t j = 0; j < cols; ++j)
      if (scale[j] > 0) a(i, j) /= scale[j];
  const std::vector<double> x = nnls(a, b);
  std::map<std::string, double> prices;
  for (size_t j = 0; j < cols; ++j) prices[family.regressors[j]] = scale[j] > 0 ? x[j] / scale[j] : 0;
  return prices;
}

std::vector<ProbeFamily> probe_families(const Target& target) {
  std::vector<ProbeFamily> families = {kernel_family(target),  cube_family(target), vector_family(target),
                                       element_family(target), row_family(target)};
  for (const bool is_a : {true, false})
    for (const int64_t kib : {256, 1024}) families.push_back(pack_family(is_a, kib));
  families.push_back(stream_family(target));
  return families;
}

HostProbeResult derive_host_prices(const Target& target, const std::vector<ProbeFamily>& families,
                                   const std::map<std::string, double>& ns) {
  HostProbeResult result;
  result.prices = default_host_prices(target);
  const double ghz = target.clock_mhz / 1000.0;
  for (const ProbeFamily& f : families) {
    ProbeFit fit{f.title, {}};
    for (const auto& [regressor, price_ns] : fit_family(f, ns)) fit.cycles[regressor] = price_ns * ghz;
    result.fits.push_back(std::move(fit));
  }
  PriceDerivation derivation(target, result);
  derivation.derive();
  for (const ProbeFamily& f : families)
    if (f.title == "stream") derivation.derive_stream_speedup(f, ns);
  result.prices.source = "probed on this machine";
  return result;
}

HostProbeResult probe_host(const Target& target, const HostProbeOptions& options) {
  if (target.kind != TargetKind::Cpu) usage_error("host probe: target " + target.name + " is not a CPU target");
  if (options.rounds < 1) usage_error("host probe: rounds must be >= 1, got " + std::to_string(options.rounds));
  if (options.min_repetitions < 1)
    usage_error("host probe: minimum repetitions must be >= 1, got " + std::to_string(options.min_repetitions));
  if (!(options.min_time_ms >= 0))
    usage_error("host probe: minimum time must be >= 0 ms, got " + std::to_string(options.min_time_ms));
  const std::vector<ProbeFamily> families = probe_families(target);
  const CaseTimes times = time_cases(families, options);
  HostProbeResult result = derive_host_prices(target, families, times.ns);
  result.round_spread = times.round_spread;
  return result;
}

}  // namespace pto::calibration
