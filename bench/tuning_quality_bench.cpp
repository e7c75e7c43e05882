// The tuning-quality suite of issue 28: on 32 workloads (LLM and random shapes, M from 1
// to 8192, odd sizes, every kind of op, on 20-, 24- and 32-core Cube targets and 40- and
// 48-core vector units), topk as `pto-tune tune` runs it (its own stopping rule, no
// budget) against the best that evolve and random find with a large budget each (1024
// measurements by default). Reported per workload: the feasible space, what topk
// measured and what share of the space that is, the three bests, and topk's quality =
// min(evolve, random) best / topk's best. A report, not a timing loop, so a plain main.
//
// All times are simulated (measure/sim): deterministic, so the three strategies share
// one cache of simulations per workload, and a config two strategies try is simulated
// once.
//
//   build/bench/tuning_quality_bench [--budget 1024] [--jobs 2] [--filter SUBSTRING[,...]]
#include <algorithm>
#include <atomic>
#include <chrono>
#include <exception>
#include <iostream>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "bench/report_program.h"
#include "core/op_library.h"
#include "measure/runner.h"
#include "search/tuner.h"

namespace pto::search {
namespace {

using bench::fmt;

struct Case {
  std::string key;     // Workload::key()
  std::string target;  // built-in target name
};

const std::vector<Case>& suite() {
  static const std::vector<Case> cases = {
      // LLM matmuls, M = batch x tokens from decode to prefill (910B1: 24 AIC)
      {"matmul|1,4096,4096|fp16", "ascend910b1"},
      {"matmul|16,8192,5120|fp16", "ascend910b1"},
      {"matmul|77,4096,11008|fp16", "ascend910b1"},
      {"matmul|128,4096,4096|fp16", "ascend910b1"},
      {"matmul|512,11008,4096|fp16", "ascend910b1"},
      {"matmul|2048,4096,4096|fp16", "ascend910b1"},
      {"matmul|8192,1024,1024|fp16", "ascend910b1"},
      {"matmul|2048,2048,2048|fp32", "ascend910b1"},
      {"matmul|512,1024,4096|int8", "ascend910b1"},
      // odd and random sizes
      {"matmul|333,777,555|fp16", "ascend910b1"},
      {"matmul|1000,3000,500|bf16", "ascend910b1"},
      {"matmul|4095,1023,257|fp16", "ascend910b1"},
      // 20-core parts (910B3; 910B4 with its slower HBM)
      {"matmul|64,4096,14336|fp16", "ascend910b3"},
      {"matmul|2048,4096,1024|fp16", "ascend910b3"},
      {"matmul|100,2000,3000|fp16", "ascend910b3"},
      {"matmul|32,8192,8192|fp16", "ascend910b4"},
      {"matmul|1024,4096,4096|fp16", "ascend910b4"},
      // 32 AIC, Cube and vector fused
      {"matmul|3000,1024,1024|fp16", "ascend950pr"},
      {"matmul_bias_gelu|256,1024,4096|fp16", "ascend950pr"},
      {"batch_matmul|8,128,128,128|fp16", "ascend910b1"},
      {"batch_matmul|32,64,512,64|fp16", "ascend910b1"},
      // vector ops (48 AIV on 910B1, 40 on 910B3)
      {"softmax|1024,4096|fp16", "ascend910b1"},
      {"softmax|8,151936|fp32", "ascend910b1"},
      {"layernorm|4096,1024|fp16", "ascend910b1"},
      {"rmsnorm|777,4096|fp16", "ascend910b3"},
      {"gelu|4096,4096|fp16", "ascend910b1"},
      {"add|8192,1000|fp16", "ascend910b3"},
      {"sum|2048,8192|fp32", "ascend910b1"},
      {"amax|33,65536|fp16", "ascend910b1"},
      {"exp|1000,1000|fp32", "ascend910b1"},
      {"attention|1,8,512,64|fp16", "ascend910b1"},
      {"flash_attention|1,8,1024,1024,128|fp16", "ascend910b1"},
  };
  return cases;
}

// A sim runner that remembers what it simulated, by config: the simulator is
// deterministic, so a repeat would give the same time.
class CachedRunner : public measure::Runner {
 public:
  explicit CachedRunner(std::unique_ptr<measure::Runner> inner) : inner_(std::move(inner)) {}
  std::string name() const override { return inner_->name(); }
  std::vector<measure::Measurement> measure(const Workload& w, const std::vector<TileConfig>& batch,
                                            const measure::OnResult& on_result = {}) override {
    std::vector<TileConfig> fresh;
    for (const TileConfig& c : batch)
      if (!cache_.count(c.to_string())) fresh.push_back(c);
    const std::vector<measure::Measurement> simulated = inner_->measure(w, fresh);
    for (size_t i = 0; i < simulated.size(); ++i) cache_.emplace(fresh[i].to_string(), simulated[i]);
    std::vector<measure::Measurement> out;
    for (const TileConfig& c : batch) {
      out.push_back(cache_.at(c.to_string()));
      if (on_result && !on_result(out.size() - 1, out.back())) break;
    }
    return out;
  }
  size_t simulated() const { return cache_.size(); }

 private:
  std::unique_ptr<measure::Runner> inner_;
  std::map<std::string, measure::Measurement> cache_;
};

struct Row {
  std::string key, target;
  uint64_t feasible = 0;
  int64_t topk_measured = 0;
  double topk_ns = 0, evolve_ns = 0, random_ns = 0, default_ns = 0, seconds = 0;
  double quality() const { return std::min(evolve_ns, random_ns) / topk_ns; }
};

TuneResult tune_with(const std::string& strategy, int64_t budget, const Workload& w, const Target& t,
                     CachedRunner& runner) {
  MemoryStore store;
  TuneOptions o;
  o.strategy = strategy;
  o.budget = budget;
  return tune(w, t, runner, store, o);
}

Row run_case(const Case& c, int64_t budget) {
  const auto start = std::chrono::steady_clock::now();
  const Workload w = Workload::parse_key(c.key);
  const Target t = load_target(c.target);
  CachedRunner runner(measure::make_runner("sim", t));
  Row row{c.key, c.target};
  const TuneResult topk = tune_with("topk", 0, w, t, runner);
  row.feasible = topk.counts.feasible;
  row.topk_measured = topk.counts.measured;
  row.topk_ns = topk.best.time_ns();
  row.default_ns = topk.baseline.time_ns();
  row.evolve_ns = tune_with("evolve", budget, w, t, runner).best.time_ns();
  row.random_ns = tune_with("random", budget, w, t, runner).best.time_ns();
  row.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  // One write per workload: the workers' lines do not interleave.
  std::cerr << c.key + " on " + c.target + ": topk " + std::to_string(row.topk_measured) + ", evolve, random: " +
                   std::to_string(runner.simulated()) + " simulated in " + fmt("%.0f s", row.seconds) + ", quality " +
                   fmt("%.4f", row.quality()) + "\n";
  return row;
}

// The selected cases on `jobs` threads (each case's tunes are independent and the
// simulator's times do not depend on load); rows in suite order.
std::vector<Row> run_cases(const std::vector<Case>& cases, int64_t budget, int jobs) {
  std::vector<Row> rows(cases.size());
  std::atomic<size_t> next{0};
  std::vector<std::exception_ptr> failures(static_cast<size_t>(jobs));
  std::vector<std::thread> workers;
  for (int j = 0; j < jobs; ++j) {
    workers.emplace_back([&, j] {
      try {
        for (size_t i = next++; i < cases.size(); i = next++) rows[i] = run_case(cases[i], budget);
      } catch (...) {
        failures[static_cast<size_t>(j)] = std::current_exception();
        next = cases.size();  // the others stop after their case in flight
      }
    });
  }
  for (std::thread& worker : workers) worker.join();
  for (const std::exception_ptr& failure : failures) {
    if (failure) std::rethrow_exception(failure);
  }
  return rows;
}

// A workload key in a Markdown table cell: its '|' escaped.
std::string escaped(const std::string& key) {
  std::string out;
  for (char c : key) out += c == '|' ? std::string("\\|") : std::string(1, c);
  return out;
}

void print_header(int64_t budget) {
  std::cout << "| workload | target | feasible | topk measured | share | topk best | evolve best (" << budget
            << ") | random best (" << budget << ") | topk quality | speedup over default |\n"
            << "|---|---|---|---|---|---|---|---|---|---|" << std::endl;
}

void print_row(const Row& r) {
  std::cout << "| " << escaped(r.key) << " | " << r.target << " | " << r.feasible << " | " << r.topk_measured << " | "
            << fmt("%.2f %%", 100.0 * static_cast<double>(r.topk_measured) / static_cast<double>(r.feasible)) << " | "
            << fmt("%.2f us", r.topk_ns / 1e3) << " | " << fmt("%.2f us", r.evolve_ns / 1e3) << " | "
            << fmt("%.2f us", r.random_ns / 1e3) << " | " << fmt("%.4f", r.quality()) << " | "
            << fmt("%.2fx", r.default_ns / r.topk_ns) << " |" << std::endl;
}

void print_summary(const std::vector<Row>& rows) {
  std::vector<double> qualities;
  for (const Row& r : rows) qualities.push_back(r.quality());
  const double worst = qualities.empty() ? 0 : *std::min_element(qualities.begin(), qualities.end());
  std::cout << "\ntopk quality over " << rows.size() << " workloads: geomean " << fmt("%.4f", bench::geomean(qualities))
            << " (target >= 0.99), worst " << fmt("%.4f", worst) << " (target >= 0.97); quality > 1: topk beat both\n";
}

int run(int argc, char** argv) {
  int64_t budget = 1024;
  int jobs = 1;
  std::string filter;
  bench::po::options_description options("options");
  options.add_options()
      ("budget", bench::po::value(&budget)->default_value(budget), "measurements of evolve and random per workload")
      ("jobs", bench::po::value(&jobs)->default_value(jobs), "workloads tuned at once, on threads (1..64)")
      ("filter", bench::po::value(&filter), "comma-separated substrings of the workloads to run");
  bench::parse_report_options(argc, argv, "tuning_quality_bench [options]", options);
  if (budget < 2) usage_error("tuning_quality_bench: --budget must be at least 2, got " + std::to_string(budget));
  if (jobs < 1 || jobs > 64) usage_error("tuning_quality_bench: --jobs must be 1..64, got " + std::to_string(jobs));
  std::vector<Case> cases;
  for (const Case& c : suite()) {
    if (bench::selected(filter, c.key, c.target)) cases.push_back(c);
  }
  std::cout << "# Tuning quality: topk against evolve and random (times simulated by measure/sim)\n\n";
  print_header(budget);
  const std::vector<Row> rows = run_cases(cases, budget, jobs);
  for (const Row& row : rows) print_row(row);
  print_summary(rows);
  return 0;
}

}  // namespace
}  // namespace pto::search

int main(int argc, char** argv) {
  return pto::bench::report_main("tuning_quality_bench", [&] { return pto::search::run(argc, argv); });
}
