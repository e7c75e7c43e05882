// Ranking quality of the cost model against the NPU simulator, over a fixed suite of
// workloads on ascend910b1 — a report, not a timing loop, so a plain main.
//
// For each workload: draw feasible, distinct configs from the search space
// (search/space_generator.h), split them into an evaluation sample and a disjoint
// calibration sample, simulate both (measure's `sim` backend: every time here is
// simulated, not measured on an NPU), and score how the model orders the evaluation
// sample (Kendall tau, top-1 / top-5 regret, cost_model/ranking.h) three ways: with the
// datasheet coefficients, fitted on this workload's calibration sample, and fitted on
// every workload's calibration samples at once (one set of coefficients for the target,
// what `pto-tune calibrate` produces). Then the details of each workload: the true best
// candidate, the model's pick, and what each one's bound is according to the simulator
// and to the model.
//
//   build-search/bench/ranking_bench [--samples 40] [--seed 1] [--filter SUBSTRING[,...]]
//
// Candidates whose program exceeds an instruction budget are left out of the draw (the
// simulator runs ~10 M instructions/s, and a 16x16 tile of a 6144^3 matmul is hundreds
// of millions): the report says how many.
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/ranking_report.h"
#include "bench/report_program.h"
#include "core/analyze.h"
#include "core/error.h"
#include "core/op_library.h"
#include "cost_model/calibrate.h"
#include "cost_model/estimate.h"
#include "measure/runner.h"
#include "search/space_generator.h"

namespace pto {
namespace {

using bench::fmt;
using bench::pct;
using bench::score;
using bench::Scores;

constexpr int64_t kInstructionBudget = 30'000'000;

struct Case {
  std::string label;
  std::string key;         // Workload::key()
  size_t samples_cap = 0;  // fewer evaluation samples for slow workloads (0 = --samples)
};

const std::vector<Case>& suite() {
  static const std::vector<Case> cases = {
      {"matmul 1024^3", "matmul|1024,1024,1024|fp16"},
      {"matmul 4096^3", "matmul|4096,4096,4096|fp16"},
      {"matmul 96x1536x3072 (decode)", "matmul|96,1536,3072|fp16"},
      {"matmul 6144^3", "matmul|6144,6144,6144|fp16", 16},
      {"batch_matmul 8x512x512x512", "batch_matmul|8,512,512,512|fp16"},
      {"matmul_bias_gelu 1024x1024x4096", "matmul_bias_gelu|1024,1024,4096|fp16"},
      {"softmax 4096x4096", "softmax|4096,4096|fp16"},
      {"layernorm 4096x4096", "layernorm|4096,4096|fp16"},
      {"gelu 4096x4096", "gelu|4096,4096|fp16"},
      {"attention 1x8x512x64", "attention|1,8,512,64|fp16"},
      {"attention 1x8x512x64 causal", "attention|1,8,512,64|fp16|causal=1"},
      {"flash_attention 1x8x2048x2048x128 causal", "flash_attention|1,8,2048,2048,128|fp16|causal=1"},
      {"flash_attention 1x32x1024x1024x64", "flash_attention|1,32,1024,1024,64|fp16"},
      {"flash_attention 2x16x1536x3072x128 gqa (held out)", "flash_attention|2,16,1536,3072,128|bf16|causal=0,kv_heads=4"},
      {"flash_attention 4x32x16x8192x128 decode (held out)", "flash_attention|4,32,16,8192,128|fp16|kv_heads=8"},
  };
  return cases;
}

struct Options {
  size_t samples = 40;
  uint64_t seed = 1;
  std::string filter;
};

Options parse_options(int argc, char** argv) {
  Options o;
  bench::po::options_description options("options");
  options.add_options()
      ("samples", bench::po::value(&o.samples)->default_value(o.samples), "evaluation candidates per workload (at least 6)")
      ("seed", bench::po::value(&o.seed)->default_value(o.seed), "seed of the candidate draw")
      ("filter", bench::po::value(&o.filter), "comma-separated substrings of the workloads to run");
  bench::parse_report_options(argc, argv, "ranking_bench [options]", options);
  if (o.samples < 6) usage_error("ranking_bench: --samples must be at least 6, got " + std::to_string(o.samples));
  return o;
}

// One simulated candidate.
struct Point {
  TileConfig config;
  double simulated_ns = 0;
  std::string simulated_bound;
};

struct CaseRun {
  const Case* c = nullptr;
  Workload workload;
  TensorGraph graph;
  std::unique_ptr<CostModel> model;
  uint64_t space_size = 0;
  size_t over_budget = 0, failed = 0;
  std::vector<Point> eval, cal;
  double default_ns = 0;
  std::vector<Sample> cal_samples;
  CalibrationReport own_fit;
  Scores uncalibrated, own, suite;
};

std::vector<double> predictions(const CostModel& model, const std::vector<Point>& points) {
  std::vector<double> out;
  for (const Point& p : points) out.push_back(model.predict_ns(p.config));
  return out;
}

std::vector<double> simulated_times(const std::vector<Point>& points) {
  std::vector<double> out;
  for (const Point& p : points) out.push_back(p.simulated_ns);
  return out;
}

// Draws evaluation and calibration candidates within the budget, simulates them and
// the default config.
CaseRun simulate_case(const Case& c, const Options& o, const Target& target, measure::Runner& sim) {
  CaseRun run;
  run.c = &c;
  run.workload = Workload::parse_key(c.key);
  run.graph = build_graph(run.workload);
  run.model = std::make_unique<CostModel>(run.graph, target);
  const TileConfig baseline = default_config(run.workload, run.graph, target);
  const search::SpaceGenerator space(run.graph, target, baseline);
  run.space_size = space.size();
  const size_t eval_n = c.samples_cap ? std::min(c.samples_cap, o.samples) : o.samples;
  const size_t cal_n = eval_n;
  std::vector<TileConfig> within;
  for (TileConfig& config : space.sample(4 * (eval_n + cal_n), o.seed)) {
    if (within.size() == eval_n + cal_n) break;
    if (run.model->analyze(config).instructions() > kInstructionBudget) {
      ++run.over_budget;
      continue;
    }
    within.push_back(std::move(config));
  }
  within.push_back(baseline);
  const std::vector<measure::Measurement> results = sim.measure(run.workload, within);
  std::vector<Point> points;
  for (size_t i = 0; i + 1 < within.size(); ++i) {
    const measure::Measurement& m = results[i];
    if (!m.ok()) {
      ++run.failed;
      std::cerr << c.key << ": " << within[i].to_string() << " failed: " << m.error << "\n";
      continue;
    }
    const auto detail = nlohmann::json::parse(m.detail_json);
    points.push_back({within[i], m.stats.median_ns, detail.value("bound", std::string("?"))});
  }
  if (points.size() < 4) {
    internal_error("ranking_bench: " + c.key + ": only " + std::to_string(points.size()) +
                   " candidates simulated within the budget; a ranking needs at least 4");
  }
  // A space with fewer distinct candidates than asked for is split in halves.
  const size_t eval_taken = std::min(eval_n, (points.size() + 1) / 2);
  run.eval.assign(points.begin(), points.begin() + static_cast<std::ptrdiff_t>(eval_taken));
  run.cal.assign(points.begin() + static_cast<std::ptrdiff_t>(eval_taken), points.end());
  run.default_ns = results.back().ok() ? results.back().stats.median_ns : NAN;
  for (const Point& p : run.cal) run.cal_samples.push_back({p.config, p.simulated_ns});
  return run;
}

std::string us(double ns) { return fmt("%.1f", ns / 1e3); }

// "tau | top-1 | top-5" cells of one table row.
std::string cells(const Scores& s) { return fmt("%.2f", s.tau) + " | " + pct(s.top1) + " | " + pct(s.top5); }

void print_tables(const std::vector<CaseRun>& runs, const CalibrationReport& suite_fit) {
  std::cout << "## Ranking of the evaluation sample (all times simulated)\n\n"
               "| workload | space | eval / cal | tau uncal | top-1 | top-5 | tau own fit | top-1 | top-5 "
               "| tau suite fit | top-1 | top-5 |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n";
  Scores mean[3];
  for (const CaseRun& r : runs) {
    std::cout << "| " << r.c->label << " | " << r.space_size << " | " << r.eval.size() << " / " << r.cal.size()
              << " | " << cells(r.uncalibrated) << " | " << cells(r.own) << " | " << cells(r.suite) << " |\n";
    const Scores* each[3] = {&r.uncalibrated, &r.own, &r.suite};
    for (int i = 0; i < 3; ++i) {
      mean[i].tau += each[i]->tau / static_cast<double>(runs.size());
      mean[i].top1 += each[i]->top1 / static_cast<double>(runs.size());
      mean[i].top5 += each[i]->top5 / static_cast<double>(runs.size());
    }
  }
  std::cout << "| **mean** | | | " << cells(mean[0]) << " | " << cells(mean[1]) << " | " << cells(mean[2]) << " |\n";
  std::cout << "\n## Fit error (rms of log(predicted / simulated)) on each calibration sample\n\n"
               "| workload | before | own fit | left out (over budget / failed) |\n|---|---|---|---|\n";
  for (const CaseRun& r : runs) {
    std::cout << "| " << r.c->label << " | " << fmt("%.3f", r.own_fit.rms_log_error_before) << " | "
              << fmt("%.3f", r.own_fit.rms_log_error_after) << " | " << r.over_budget << " / " << r.failed
              << " |\n";
  }
  std::cout << "\nSuite fit:\n\n```\n" << suite_fit.to_string() << "```\n\n";
}

// The true best of the evaluation sample against the model's pick, with both bounds.
void print_details(const std::vector<CaseRun>& runs) {
  std::cout << "## The best simulated candidate against the model's top-1 (uncalibrated)\n\n";
  for (const CaseRun& r : runs) {
    const std::vector<double> sim = simulated_times(r.eval), predicted = predictions(*r.model, r.eval);
    size_t best = 0, pick = 0;
    for (size_t i = 0; i < r.eval.size(); ++i) {
      if (sim[i] < sim[best]) best = i;
      if (predicted[i] < predicted[pick]) pick = i;
    }
    std::cout << "### " << r.c->label << "\n\ndefault config: " << us(r.default_ns)
              << " us simulated; best of the sample: " << us(sim[best]) << " us ("
              << fmt("%.2fx", r.default_ns / sim[best]) << " the default's speed)\n\n"
              << "| | config | simulated us | sim bound | predicted us | model bound |\n|---|---|---|---|---|---|\n";
    for (const auto& [name, i] : {std::pair<const char*, size_t>{"best", best}, {"model's pick", pick}}) {
      const Estimate e = r.model->estimate(r.eval[i].config);
      std::cout << "| " << name << " | `" << r.eval[i].config.to_string() << "` | " << us(sim[i]) << " | "
                << r.eval[i].simulated_bound << " | " << us(e.predicted_ns) << " | " << bound_name(e.bound) << " |\n";
    }
    std::cout << "\n";
  }
}

CalibrationOptions sim_fit() {
  CalibrationOptions fit;
  fit.backend = "sim";
  return fit;
}

int run(int argc, char** argv) {
  const Options o = parse_options(argc, argv);
  const Target target = load_target("ascend910b1");
  const std::unique_ptr<measure::Runner> sim = measure::make_runner("sim", target);
  std::vector<CaseRun> runs;
  for (const Case& c : suite()) {
    if (!bench::selected(o.filter, c.key, c.label)) continue;
    std::cerr << "simulating " << c.key << "\n";
    runs.push_back(simulate_case(c, o, target, *sim));
  }
  std::vector<SampleSet> sets;
  for (CaseRun& r : runs) {
    r.uncalibrated = score(predictions(*r.model, r.eval), simulated_times(r.eval));
    r.own_fit = calibrate(*r.model, r.cal_samples, sim_fit());
    CostModel own(r.graph, target, r.own_fit.after);
    r.own = score(predictions(own, r.eval), simulated_times(r.eval));
    sets.push_back({r.model.get(), r.cal_samples});
  }
  const CalibrationReport suite_fit = calibrate(sets, sim_fit());
  for (CaseRun& r : runs) {
    CostModel fitted(r.graph, target, suite_fit.after);
    r.suite = score(predictions(fitted, r.eval), simulated_times(r.eval));
  }
  std::cout << "# Cost model ranking quality on ascend910b1 against the simulator (simulated)\n\n"
            << "samples per workload: " << o.samples << " evaluation + as many for calibration, seed " << o.seed
            << ", instruction budget " << kInstructionBudget << "\n\n";
  print_tables(runs, suite_fit);
  print_details(runs);
  return 0;
}

}  // namespace
}  // namespace pto

int main(int argc, char** argv) {
  return pto::bench::report_main("ranking_bench", [&] { return pto::run(argc, argv); });
}
