// Tuning quality of the search strategies over a fixed suite of workloads — a report,
// not a timing loop, so a plain main (like bench/ranking_bench.cpp).
//
// For each workload: measure every feasible, distinct candidate once (the exhaustive
// strategy through tune(): the ground truth), then replay those measurements to the
// topk, evolve and random strategies (a ReplayRunner answers from the exhaustive table,
// keyed by program, so every strategy is judged on the same times and costs nothing to
// re-run over seeds). Reported: the exhaustive best, topk's best / exhaustive best with
// its measurements, the speedup over the default, and per strategy the measurements
// needed to come within 1% of the exhaustive best and the quality at budgets 8..64.
// On the noisy cpu backend a replayed time is one timing, and the least of a thousand
// noisy timings lies below the best candidate's true time (the winner's curse): there
// each run picks its winner from its finalists re-measured for real, as a tuning job
// does, and the final quality and the speedups come from one interleaved
// re-measurement of every run's winner, exhaustive's best few and the default
// (remeasure_finalists).
// Finally the wall time of two real tuning jobs (auto strategy, no replay): a 4096^3
// matmul on sim and a 1024^3 fp32 matmul on this CPU.
//
//   build/bench/tuning_bench [--seeds 5] [--filter SUBSTRING[,...]] [--no-cpu] [--only-cpu] [--no-timing] [--list]
//
// Sim workloads run on ascend910b1: their times are simulated, not measured on an NPU.
// CPU workloads are measured on this host (target `host`).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include <sys/resource.h>

#include "core/error.h"
#include "core/op_library.h"
#include "cost_model/estimate.h"
#include "measure/runner.h"
#include "search/space_generator.h"
#include "search/tuner.h"
#include "bench/report_program.h"

namespace pto::search {
namespace {

using bench::fmt;
using bench::geomean;

struct Case {
  std::string label;
  std::string key;   // Workload::key()
  std::string backend;  // "sim" (ascend910b1) or "cpu" (host)
};

const std::vector<Case>& suite() {
  // Shapes whose spaces the exhaustive ground truth gets through in minutes on a shared
  // 2-core machine (`--list` prints each space): the ragged and N-heavy matmuls, the
  // batch_matmul and the attention are smaller than the examples for that reason.
  // The cpu shapes are small enough to measure every candidate for real.
  static const std::vector<Case> cases = {
      {"matmul 128^3", "matmul|128,128,128|fp16", "sim"},
      {"matmul 16x1024x1024 (decode)", "matmul|16,1024,1024|fp16", "sim"},
      {"matmul 77x255x133 (ragged)", "matmul|77,255,133|fp16", "sim"},
      {"matmul 64x4096x64 (K-heavy)", "matmul|64,4096,64|fp16", "sim"},
      {"matmul 32x128x2048 (N-heavy)", "matmul|32,128,2048|fp16", "sim"},
      {"batch_matmul 2x64x128x64", "batch_matmul|2,64,128,64|fp16", "sim"},
      {"softmax 256x1024", "softmax|256,1024|fp16", "sim"},
      {"layernorm 256x1024", "layernorm|256,1024|fp16", "sim"},
      {"rmsnorm 256x1024", "rmsnorm|256,1024|fp16", "sim"},
      {"gelu 256x1024", "gelu|256,1024|fp16", "sim"},
      {"attention 1x1x64x64", "attention|1,1,64,64|fp16", "sim"},
      {"matmul 64^3 fp32 (host)", "matmul|64,64,64|fp32", "cpu"},
      {"softmax 64x256 fp32 (host)", "softmax|64,256|fp32", "cpu"},
      {"layernorm 64x256 fp32 (host)", "layernorm|64,256|fp32", "cpu"},
  };
  return cases;
}

constexpr int kBudgets[] = {8, 16, 32, 64};

struct Options {
  int seeds = 5;
  std::string filter;
  bool cpu = true, sim = true;
  bool list = false;  // print each workload's space and what exhaustive would simulate, run nothing
  bool timing = true;  // the two time-to-tune jobs at the end
};

Options parse_options(int argc, char** argv) {
  Options o;
  bench::po::options_description options("options");
  options.add_options()
      ("seeds", bench::po::value(&o.seeds)->default_value(o.seeds), "seeds each strategy runs with per workload")
      ("filter", bench::po::value(&o.filter), "comma-separated substrings of the workloads to run")
      ("no-cpu", bench::po::bool_switch(), "skip the cpu workloads")
      ("only-cpu", bench::po::bool_switch(), "skip the sim workloads")
      ("no-timing", bench::po::bool_switch(), "skip the two time-to-tune jobs at the end")
      ("list", bench::po::bool_switch(&o.list), "print each workload's space and run nothing");
  const bench::po::variables_map vm = bench::parse_report_options(argc, argv, "tuning_bench [options]", options);
  o.cpu = !vm["no-cpu"].as<bool>();
  o.sim = !vm["only-cpu"].as<bool>();
  o.timing = !vm["no-timing"].as<bool>();
  if (o.seeds < 1) usage_error("tuning_bench: --seeds must be at least 1");
  return o;
}

// The cpu cases run on one thread and time the process's CPU time, as
// bench/ranking_cpu_bench.cpp does, and the model sees a one-core host: on this shared
// 2-vCPU VM a second thread mostly measures whether the hypervisor ran both at once (a
// 2-task split-K 64^3 matmul's wall-time median came out 19 us in one timing and 38 us in
// the next), which no tuner can rank.
const Target& target_for(const std::string& backend) {
  static const Target npu = load_target("ascend910b1");
  static const Target host = [] {
    Target t = load_target("host");
    t.aic_cores = t.aiv_cores = 1;
    return t;
  }();
  return backend == "cpu" ? host : npu;
}

constexpr double kNever = std::numeric_limits<double>::infinity();

// Answers from the exhaustive measurements, by program: every strategy is judged on the
// same times.
class ReplayRunner : public measure::Runner {
 public:
  ReplayRunner(std::string name, const search::SpaceGenerator& space, const std::vector<search::TuningRecord>& truth)
      : name_(std::move(name)), space_(space) {
    for (const search::TuningRecord& r : truth)
      if (auto k = space.program_key(r.config)) table_.emplace(*k, Entry{r.config, r.measurement});
  }
  // The time the replay answers for `config` (its first measurement).
  double time_ns(const TileConfig& config) const {
    const auto k = space_.program_key(config);
    const auto it = k ? table_.find(*k) : table_.end();
    if (it == table_.end()) internal_error("tuning_bench: no exhaustive measurement of " + config.to_string());
    return it->second.m.ok() ? it->second.m.stats.median_ns : kNever;
  }
  // The best time in the table: the reference every strategy is judged against.
  double best_ns() const {
    const std::vector<TileConfig> best = best_configs(1);
    return best.empty() ? kNever : time_ns(best.front());
  }
  // The `n` configs of the table with the best times, best first.
  std::vector<TileConfig> best_configs(size_t n) const {
    std::vector<std::pair<double, const TileConfig*>> ok;
    for (const auto& [key, entry] : table_)
      if (entry.m.ok()) ok.emplace_back(entry.m.stats.median_ns, &entry.config);
    n = std::min(n, ok.size());
    std::partial_sort(ok.begin(), ok.begin() + static_cast<std::ptrdiff_t>(n), ok.end(),
                      [](const auto& a, const auto& b) { return a.first < b.first; });
    std::vector<TileConfig> out;
    for (size_t k = 0; k < n; ++k) out.push_back(*ok[k].second);
    return out;
  }
  std::string name() const override { return name_; }
  std::vector<measure::Measurement> measure(const Workload&, const std::vector<TileConfig>& batch,
                                            const measure::OnResult& on_result = {}) override {
    std::vector<measure::Measurement> out;
    for (const TileConfig& c : batch) {
      time_ns(c);  // throws for a config exhaustive never measured
      out.push_back(table_.at(*space_.program_key(c)).m);
      if (on_result && !on_result(out.size() - 1, out.back())) break;
    }
    return out;
  }

 private:
  struct Entry {
    TileConfig config;
    measure::Measurement m;
  };
  std::string name_;
  const search::SpaceGenerator& space_;
  std::map<uint64_t, Entry> table_;
};

// One strategy's runs over the seeds on one workload.
struct StrategyRuns {
  std::vector<double> needed;                    // measurements to within 1%; +inf when never
  std::vector<std::array<double, 4>> quality;    // exhaustive best / best after b measurements
  std::vector<double> final_quality;
  std::vector<double> measured;
  std::vector<TileConfig> winners;
};

struct CaseResult {
  const Case* c = nullptr;
  uint64_t space = 0, feasible = 0, failed = 0;
  double exhaustive_best = 0, default_ns = 0, exhaustive_s = 0;
  std::string best_config;
  std::map<std::string, StrategyRuns> runs;      // "topk", "evolve", "random"
};

double needed_within(const std::vector<double>& best_so_far, double truth, double tolerance = 0.01) {
  for (size_t i = 0; i < best_so_far.size(); ++i)
    if (best_so_far[i] > 0 && best_so_far[i] <= truth * (1 + tolerance)) return static_cast<double>(i + 1);
  return kNever;
}

double quality_at(const std::vector<double>& best_so_far, double truth, size_t budget) {
  if (best_so_far.empty()) return 0;
  const double best = best_so_far[std::min(budget, best_so_far.size()) - 1];
  return best > 0 ? truth / best : 0;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  if (n % 2) return v[n / 2];
  if (std::isinf(v[n / 2])) return kNever;
  return 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

std::string count_or_never(double v) { return std::isinf(v) ? "never" : fmt("%.0f", v); }

void list_case(const Case& c) {
  const Workload w = Workload::parse_key(c.key);
  const Target& target = target_for(c.backend);
  const search::SpaceGenerator space = search::SpaceGenerator::for_workload(w, target);
  const CostModel model(build_graph(w), target);
  double instructions = 0;
  const search::SpaceTally tally = space.for_each([&](const TileConfig& config) {
    instructions += static_cast<double>(model.analyze(config).instructions());
    return true;
  });
  std::cout << c.label << ": space " << space.size() << ", " << tally.to_string() << ", "
            << fmt("%.3g", instructions) << " instructions in all" << std::endl;
}

// Exhaustive's best few, re-measured beside the winners so that the reference is not
// one lucky timing.
constexpr size_t kReferenceFinalists = 5;
// Their timing: interleaved rounds until each has this many runs and this much time, so
// that a finalist's median spans the machine states of the whole call (this VM's
// run-to-run spread of one config's median is ±15%).
constexpr double kReferenceTimeMs = 300;
constexpr int kReferenceRepetitions = 30;

// Re-measures, interleaved in one call, every strategy's winners, exhaustive's
// kReferenceFinalists best and the default; then judges each run's winner against the
// best of those times (every candidate was measured by exhaustive, so the best of them
// is exhaustive's best), and the default from the same call. The convergence figures
// keep the replayed single timings: they compare strategies on one table.
void remeasure_finalists(const Workload& w, const search::SpaceGenerator& space, const ReplayRunner& replay,
                         const TileConfig& default_config, measure::Runner& runner, CaseResult& out) {
  std::vector<TileConfig> finalists = replay.best_configs(kReferenceFinalists);
  finalists.push_back(default_config);
  for (const auto& [strategy, runs] : out.runs) finalists.insert(finalists.end(), runs.winners.begin(), runs.winners.end());
  std::map<uint64_t, size_t> index;  // program -> its entry in `distinct`
  std::vector<TileConfig> distinct;
  for (const TileConfig& c : finalists)
    if (index.emplace(*space.program_key(c), distinct.size()).second) distinct.push_back(c);
  std::cerr << "  re-measuring " << distinct.size() << " finalists interleaved ..." << std::flush;
  const std::vector<measure::Measurement> times = runner.measure_interleaved(w, distinct);
  const auto time_of = [&](const TileConfig& c) {
    const measure::Measurement& m = times.at(index.at(*space.program_key(c)));
    return m.ok() ? m.stats.median_ns : kNever;
  };
  out.exhaustive_best = kNever;
  for (const TileConfig& c : distinct) {
    out.exhaustive_best = std::min(out.exhaustive_best, time_of(c));
    std::cerr << "\n    " << c.to_string() << " " << fmt("%.1f us", time_of(c) / 1e3) << " (replayed "
              << fmt("%.1f us", replay.time_ns(c) / 1e3) << ")";
  }
  out.default_ns = time_of(default_config);
  for (auto& [strategy, runs] : out.runs)
    for (size_t k = 0; k < runs.winners.size(); ++k) runs.final_quality[k] = out.exhaustive_best / time_of(runs.winners[k]);
  std::cerr << " best " << fmt("%.1f us", out.exhaustive_best / 1e3) << "\n";
}

CaseResult run_case(const Case& c, const Options& o) {
  CaseResult out;
  out.c = &c;
  const Workload w = Workload::parse_key(c.key);
  const Target& target = target_for(c.backend);
  measure::RunnerOptions timing;
  timing.min_time_ms = 10;  // cpu: the ground truth times hundreds of candidates
  timing.threads = 1;       // cpu: see target_for
  timing.cpu_time = true;
  std::unique_ptr<measure::Runner> real = measure::make_runner(c.backend, target, timing);
  search::MemoryStore truth_store;
  search::TuneOptions exhaustive;
  exhaustive.strategy = "exhaustive";
  exhaustive.batch_size = 32;
  std::cerr << c.label << ": exhaustive ... " << std::flush;
  const search::TuneResult truth = search::tune(w, target, *real, truth_store, exhaustive);
  std::cerr << truth.counts.measured << " measured in " << fmt("%.1f", truth.elapsed_s) << " s\n";
  out.space = truth.counts.total;
  out.feasible = truth.counts.feasible;
  out.failed = static_cast<uint64_t>(truth.counts.failed_total());
  out.best_config = truth.best.config.to_string();
  out.exhaustive_s = truth.elapsed_s;

  const search::SpaceGenerator space = search::SpaceGenerator::for_workload(w, target);
  ReplayRunner replay(c.backend, space, truth_store.all());
  // On a noisy backend exhaustive re-measured its finalists; the strategies replay the
  // first measurements, so the reference and the default come from those too.
  out.exhaustive_best = replay.best_ns();
  out.default_ns = replay.time_ns(truth.baseline.config);
  // On cpu each run picks its winner as a real tuning job does: its finalists
  // re-measured interleaved, for real, with the runner's default timing.
  measure::RunnerOptions finalist_timing;
  finalist_timing.threads = timing.threads;
  finalist_timing.cpu_time = timing.cpu_time;
  const std::unique_ptr<measure::Runner> finalist_runner =
      c.backend == "cpu" ? measure::make_runner(c.backend, target, finalist_timing) : nullptr;
  for (const std::string strategy : {"topk", "evolve", "random"}) {
    StrategyRuns& runs = out.runs[strategy];
    for (int seed = 1; seed <= o.seeds; ++seed) {
      search::MemoryStore store;
      search::TuneOptions t;
      t.strategy = strategy;
      t.seed = static_cast<uint64_t>(seed);
      t.finalist_runner = finalist_runner.get();
      // topk and evolve stop on their own; random measures everything (replayed: free).
      const search::TuneResult r = search::tune(w, target, replay, store, t);
      runs.needed.push_back(needed_within(r.best_so_far_ns, out.exhaustive_best));
      std::array<double, 4> q{};
      for (size_t b = 0; b < 4; ++b) q[b] = quality_at(r.best_so_far_ns, out.exhaustive_best, kBudgets[b]);
      runs.quality.push_back(q);
      runs.final_quality.push_back(out.exhaustive_best / r.best.time_ns());
      runs.measured.push_back(static_cast<double>(r.counts.measured));
      runs.winners.push_back(r.best.config);
    }
  }
  if (c.backend == "cpu") {
    measure::RunnerOptions reference = timing;
    reference.min_time_ms = kReferenceTimeMs;
    reference.min_repetitions = kReferenceRepetitions;
    remeasure_finalists(w, space, replay, truth.baseline.config, *measure::make_runner(c.backend, target, reference),
                        out);
  }
  return out;
}

void print_quality(const std::vector<CaseResult>& results) {
  std::cout << "## Per workload: topk against the exhaustive best\n\n"
               "topk with its own stopping rule (no budget), median over the seeds; `measured` counts the "
               "default's measurement. Speedups are over the op's default config (what a PyPTO user "
               "hand-picks today).\n\n"
               "| workload | backend | space | feasible | exhaustive best | default | exhaustive speedup | "
               "topk best / exhaustive | topk measured | % of feasible | topk speedup |\n"
               "|---|---|---|---|---|---|---|---|---|---|---|\n";
  std::vector<double> qualities;
  double measured_all = 0, feasible_all = 0;
  for (const CaseResult& r : results) {
    const StrategyRuns& t = r.runs.at("topk");
    const double q = median(t.final_quality), m = median(t.measured);
    qualities.push_back(q);
    measured_all += m;
    feasible_all += static_cast<double>(r.feasible);
    const bool sim = r.c->backend == "sim";
    std::cout << "| " << r.c->label << " | " << (sim ? "sim (simulated)" : "cpu (measured)") << " | " << r.space
              << " | " << r.feasible << " | " << fmt("%.1f us", r.exhaustive_best / 1e3) << " | "
              << fmt("%.1f us", r.default_ns / 1e3) << " | " << fmt("%.2fx", r.default_ns / r.exhaustive_best)
              << " | " << fmt("%.4f", q) << " | " << fmt("%.0f", m) << " | "
              << fmt("%.1f%%", 100 * m / static_cast<double>(std::max<uint64_t>(r.feasible, 1))) << " | "
              << fmt("%.2fx", r.default_ns * q / r.exhaustive_best) << " |\n";
  }
  std::cout << "\n**Geometric mean of topk best / exhaustive best: " << fmt("%.4f", geomean(qualities))
            << "** (target >= 0.99); topk measured " << fmt("%.0f", measured_all) << " of "
            << fmt("%.0f", feasible_all) << " feasible candidates over the suite ("
            << fmt("%.1f%%", 100 * measured_all / std::max(feasible_all, 1.0)) << ", target <= 5%)\n\n";
}

// One row per strategy over `results` (one backend's workloads).
void print_convergence_rows(const std::vector<const CaseResult*>& results) {
  for (const std::string strategy : {"topk", "evolve", "random"}) {
    std::vector<double> needed;
    std::array<std::vector<double>, 4> quality;
    for (const CaseResult* r : results) {
      const StrategyRuns& s = r->runs.at(strategy);
      needed.push_back(median(s.needed));
      for (size_t b = 0; b < 4; ++b) {
        std::vector<double> per_seed;
        for (const auto& q : s.quality) per_seed.push_back(q[b]);
        quality[b].push_back(median(per_seed));
      }
    }
    std::cout << "| " << strategy << " | " << count_or_never(median(needed));
    for (size_t b = 0; b < 4; ++b) std::cout << " | " << fmt("%.4f", geomean(quality[b]));
    std::cout << " |\n";
  }
}

// A table per backend: on cpu the convergence is judged on the replayed single timings
// (every strategy sees the same ones), against their least, which the winner's curse
// puts below the re-measured best the final quality is judged on.
void print_convergence(const std::vector<CaseResult>& results, int seeds) {
  std::cout << "## Convergence per strategy\n\n"
               "Measurements (the default's included) needed to come within 1% of the exhaustive best: "
               "the median over the backend's workloads of each workload's median over "
            << seeds
            << " seeds (`never`: not reached before the strategy stopped). Quality at a budget b: "
               "exhaustive best / best after b measurements, geometric mean over the backend's workloads of "
               "the seed medians. On cpu both are judged on the replayed single timings, against their "
               "least (below the re-measured best of the table above: the winner's curse).\n\n";
  for (const std::string backend : {"sim", "cpu"}) {
    std::vector<const CaseResult*> of_backend;
    for (const CaseResult& r : results)
      if (r.c->backend == backend) of_backend.push_back(&r);
    if (of_backend.empty()) continue;
    std::cout << "| " << backend << ": strategy | measurements to within 1% (median) | quality at 8 | at 16 | "
                 "at 32 | at 64 |\n|---|---|---|---|---|---|\n";
    print_convergence_rows(of_backend);
    std::cout << "\n";
  }
  std::cout << "Per workload, measurements to within 1% (median over seeds):\n\n"
               "| workload | topk | evolve | random |\n|---|---|---|---|\n";
  for (const CaseResult& r : results) {
    std::cout << "| " << r.c->label;
    for (const std::string strategy : {"topk", "evolve", "random"})
      std::cout << " | " << count_or_never(median(r.runs.at(strategy).needed));
    std::cout << " |\n";
  }
  std::cout << "\n";
}

void print_winners(const std::vector<CaseResult>& results) {
  std::cout << "## Exhaustive winners\n\n| workload | winner | failed candidates | exhaustive wall time |\n"
               "|---|---|---|---|\n";
  for (const CaseResult& r : results)
    std::cout << "| " << r.c->label << " | `" << r.best_config << "` | " << r.failed << " | "
              << fmt("%.1f s", r.exhaustive_s) << " |\n";
  std::cout << "\n";
}

// A real tuning job, as `pto-tune --op ...` runs it: auto strategy, no replay.
// User + system CPU time of this process and its finished children (the cpu runner
// measures in child processes).
double cpu_seconds() {
  double s = 0;
  for (int who : {RUSAGE_SELF, RUSAGE_CHILDREN}) {
    rusage u{};
    getrusage(who, &u);
    s += static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
  }
  return s;
}

// A tuning job as `pto-tune tune` runs it: on the machine's own host target (all its
// cores, not target_for's one-core host of the quality cases), where the search times
// each candidate briefly (it only ranks them) and the finalists are re-measured
// interleaved with the runner's full default timing.
void time_to_tune(const std::string& key, const std::string& backend, const char* target_s) {
  const Workload w = Workload::parse_key(key);
  const Target target = load_target(backend == "cpu" ? "host" : "ascend910b1");
  const measure::TuningRunners runners = measure::make_tuning_runners(backend, target, {});
  search::TuneOptions options;
  options.finalist_runner = runners.finalists.get();
  search::MemoryStore store;
  const double cpu_start = cpu_seconds();
  const search::TuneResult r = search::tune(w, target, *runners.search, store, options);
  const double cpu_s = cpu_seconds() - cpu_start;
  std::cout << "| " << key << " | " << backend << (backend == "sim" ? " (simulated)" : " (measured)") << " | "
            << r.strategy << " | " << r.counts.measured << " | " << fmt("%.2f s", r.elapsed_s) << " | "
            << fmt("%.2f s", cpu_s) << " | " << target_s << " | " << fmt("%.2fx", r.speedup_vs_default) << " |\n";
}

int run(int argc, char** argv) {
  const Options o = parse_options(argc, argv);
  std::vector<CaseResult> results;
  for (const Case& c : suite()) {
    if (!bench::selected(o.filter, c.key, c.label)) continue;
    if ((c.backend == "cpu" && !o.cpu) || (c.backend == "sim" && !o.sim)) continue;
    if (o.list) {
      list_case(c);
    } else {
      results.push_back(run_case(c, o));
    }
  }
  if (o.list) return 0;
  std::cout << "# Tuning quality (sim figures simulated on ascend910b1; cpu figures measured on this host)\n\n";
  if (!results.empty()) {
    print_quality(results);
    print_convergence(results, o.seeds);
    print_winners(results);
  }
  if (!o.timing) return 0;
  std::cout << "## Time to tune one workload (auto strategy, wall time)\n\n"
               "| workload | backend | strategy picked | measurements | wall time | CPU time (with children) | "
               "target | speedup |\n"
               "|---|---|---|---|---|---|---|---|\n" << std::flush;
  if (o.sim) time_to_tune("matmul|4096,4096,4096|fp16", "sim", "< 5 s");
  if (o.cpu) time_to_tune("matmul|1024,1024,1024|fp32", "cpu", "< 15 s");
  return 0;
}

}  // namespace
}  // namespace pto::search

int main(int argc, char** argv) {
  return pto::bench::report_main("tuning_bench", [&] { return pto::search::run(argc, argv); });
}
