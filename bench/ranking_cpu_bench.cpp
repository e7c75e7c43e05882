// Ranking quality of the cost model against real CPU time on this host — a report, not a
// timing loop, so a plain main.
//
// For each workload of a fixed host suite (matmuls square, ragged and skinny; softmax,
// layernorm, rmsnorm, gelu; attention): draw feasible, distinct configs from the search
// space (search/space_generator.h), measure them with the `cpu` backend, all of one
// workload interleaved in one process (Runner::measure_interleaved: rounds of A B C ...,
// so that a neighbour's load hits every candidate alike), and score how the model orders
// them (Kendall tau, top-1 / top-5 regret, cost_model/ranking.h) two ways: with the
// default coefficients, and after calibrate() on the samples of every OTHER workload
// (leave-one-out: the fit never sees the workload it is scored on). Each candidate's
// relative spread ((p90 - p10) / median of its runs) is reported, and the tau that a
// model would get if the truth were each candidate's p10 or p90 instead of its median,
// so that a tau which moves with the noise can be told apart.
//
//   build/bench/ranking_cpu_bench [--samples 12] [--seed 1] [--threads 1] [--filter S]
//                                 [--min-time-ms 30] [--repetitions 7]
//                                 [--clock cpu|wall] [--save FILE | --load FILE]
//                                 [--prior-weight W] [--verbose 1]
//
// --save writes every measurement (workload key, config, median / p10 / p90 ns) as JSON
// lines; --load scores those instead of measuring, so a model change can be re-scored
// on the same times.
//
// --threads 1 (the default) measures on one thread and gives the model a one-core host:
// on a shared machine a second thread mostly measures the neighbours. --clock cpu (the
// default) times the process's CPU time (RunnerOptions::cpu_time): on a loaded machine the
// wall time of a run is mostly the time slices other jobs took.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/ranking_report.h"
#include "core/error.h"
#include "core/op_library.h"
#include "cost_model/calibrate.h"
#include "cost_model/estimate.h"
#include "cost_model/ranking.h"
#include "measure/runner.h"
#include "measure/stats.h"
#include "search/space_generator.h"

namespace pto {
namespace {

using bench::fmt;
using bench::pct;
using bench::score;
using bench::Scores;

struct Case {
  std::string label;
  std::string key;  // Workload::key()
};

const std::vector<Case>& suite() {
  static const std::vector<Case> cases = {
      {"matmul 512^3", "matmul|512,512,512|fp32"},
      {"matmul 333x777x555 (ragged)", "matmul|333,777,555|fp32"},
      {"matmul 64x1024x1024 (skinny)", "matmul|64,1024,1024|fp32"},
      {"matmul 1024x64x1024 (short K)", "matmul|1024,64,1024|fp32"},
      {"softmax 2048x1024", "softmax|2048,1024|fp32"},
      {"layernorm 2048x1024", "layernorm|2048,1024|fp32"},
      {"rmsnorm 2048x1024", "rmsnorm|2048,1024|fp32"},
      {"gelu 2048x1024", "gelu|2048,1024|fp32"},
      {"attention 1x4x256x64", "attention|1,4,256,64|fp32"},
  };
  return cases;
}

struct Options {
  size_t samples = 12;
  uint64_t seed = 1;
  int threads = 1;
  double min_time_ms = 30;
  int repetitions = 7;
  std::string filter;
  std::string save, load;
  bool cpu_time = true;
  bool verbose = false;  // --verbose 1: every sample, measured and predicted, on stderr
  double prior_weight = CalibrationOptions{}.prior_weight;
};

Options parse_options(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (i + 1 >= argc) usage_error("ranking_cpu_bench: " + arg + " needs a value");
    const std::string value = argv[++i];
    if (arg == "--samples") {
      o.samples = std::stoul(value);
    } else if (arg == "--seed") {
      o.seed = std::stoull(value);
    } else if (arg == "--threads") {
      o.threads = std::stoi(value);
    } else if (arg == "--min-time-ms") {
      o.min_time_ms = std::stod(value);
    } else if (arg == "--repetitions") {
      o.repetitions = std::stoi(value);
    } else if (arg == "--filter") {
      o.filter = value;
    } else if (arg == "--prior-weight") {
      o.prior_weight = std::stod(value);
    } else if (arg == "--verbose") {
      o.verbose = value == "1";
    } else if (arg == "--clock") {
      if (value != "cpu" && value != "wall") usage_error("ranking_cpu_bench: --clock is cpu or wall, got " + value);
      o.cpu_time = value == "cpu";
    } else if (arg == "--save") {
      o.save = value;
    } else if (arg == "--load") {
      o.load = value;
    } else {
      usage_error("ranking_cpu_bench: unknown option '" + arg +
                  "' (known: --samples, --seed, --threads, --min-time-ms, --repetitions, --filter, --clock, --save, --load, --verbose, --prior-weight)");
    }
  }
  if (o.samples < 6) usage_error("ranking_cpu_bench: --samples must be at least 6, got " + std::to_string(o.samples));
  if (o.threads < 1) usage_error("ranking_cpu_bench: --threads must be at least 1, got " + std::to_string(o.threads));
  return o;
}

struct CaseRun {
  const Case* c = nullptr;
  Workload workload;
  TensorGraph graph;
  std::unique_ptr<CostModel> model;
  std::vector<Sample> samples;           // measured median per config
  std::vector<double> p10, p90, spread;  // per sample
  size_t failed = 0;
  Scores uncalibrated, loo;
  double tau_p10 = 0, tau_p90 = 0;       // uncalibrated tau against the p10 / p90 times
};

std::vector<double> predictions(const CostModel& model, const std::vector<Sample>& samples) {
  std::vector<double> out;
  for (const Sample& s : samples) out.push_back(model.predict_ns(s.config));
  return out;
}

std::vector<double> medians(const std::vector<Sample>& samples) {
  std::vector<double> out;
  for (const Sample& s : samples) out.push_back(s.measured_ns);
  return out;
}

// One measured candidate, as --save writes it and --load reads it.
struct Timed {
  TileConfig config;
  measure::Stats stats;
};

std::vector<Timed> measure_configs(const CaseRun& run, const Options& o, const Target& model_target,
                                   measure::Runner& cpu, size_t& failed) {
  const search::SpaceGenerator space(run.graph, model_target, default_config(run.workload, run.graph, model_target));
  const std::vector<TileConfig> configs = space.sample(o.samples, o.seed);
  const std::vector<measure::Measurement> results = cpu.measure_interleaved(run.workload, configs);
  std::vector<Timed> out;
  for (size_t i = 0; i < configs.size(); ++i) {
    if (!results[i].ok()) {
      ++failed;
      std::cerr << run.c->key << ": " << configs[i].to_string() << " failed: " << results[i].error << "\n";
      continue;
    }
    out.push_back({configs[i], results[i].stats});
  }
  return out;
}

std::vector<Timed> load_configs(const std::string& path, const std::string& key) {
  std::ifstream in(path);
  if (!in) fail(ErrorCategory::Io, "ranking_cpu_bench: cannot read " + path);
  std::vector<Timed> out;
  for (std::string line; std::getline(in, line);) {
    const nlohmann::json j = nlohmann::json::parse(line);
    if (j.at("key").get<std::string>() != key) continue;
    Timed t{TileConfig::from_json(j.at("config")), {}};
    t.stats.median_ns = j.at("median_ns").get<double>();
    t.stats.p10_ns = j.at("p10_ns").get<double>();
    t.stats.p90_ns = j.at("p90_ns").get<double>();
    out.push_back(std::move(t));
  }
  return out;
}

void save_configs(const std::string& path, const std::string& key, const std::vector<Timed>& timed) {
  std::ofstream out(path, std::ios::app);
  if (!out) fail(ErrorCategory::Io, "ranking_cpu_bench: cannot write " + path);
  for (const Timed& t : timed) {
    out << nlohmann::json{{"key", key}, {"config", t.config.to_json()}, {"median_ns", t.stats.median_ns},
                          {"p10_ns", t.stats.p10_ns}, {"p90_ns", t.stats.p90_ns}}.dump()
        << "\n";
  }
}

CaseRun measure_case(const Case& c, const Options& o, const Target& model_target, measure::Runner& cpu) {
  CaseRun run;
  run.c = &c;
  run.workload = Workload::parse_key(c.key);
  run.graph = build_graph(run.workload);
  run.model = std::make_unique<CostModel>(run.graph, model_target);
  const std::vector<Timed> timed =
      o.load.empty() ? measure_configs(run, o, model_target, cpu, run.failed) : load_configs(o.load, c.key);
  if (!o.save.empty()) save_configs(o.save, c.key, timed);
  for (const Timed& t : timed) {
    run.samples.push_back({t.config, t.stats.median_ns});
    run.p10.push_back(t.stats.p10_ns);
    run.p90.push_back(t.stats.p90_ns);
    run.spread.push_back(measure::relative_spread(t.stats));
  }
  if (run.samples.size() < 4) {
    internal_error("ranking_cpu_bench: " + c.key + ": only " + std::to_string(run.samples.size()) +
                   " candidates measured; a ranking needs at least 4");
  }
  const std::vector<double> predicted = predictions(*run.model, run.samples);
  if (o.verbose) {
    for (size_t i = 0; i < run.samples.size(); ++i) {
      std::cerr << c.key << "  measured " << run.samples[i].measured_ns / 1e6 << " ms  predicted "
                << predicted[i] / 1e6 << " ms  " << run.samples[i].config.to_string() << "\n";
    }
  }
  run.uncalibrated = score(predicted, medians(run.samples));
  run.tau_p10 = kendall_tau(predicted, run.p10);
  run.tau_p90 = kendall_tau(predicted, run.p90);
  return run;
}

// Fits on every workload but `left_out` and scores `left_out` with the fitted model.
Scores leave_one_out(std::vector<CaseRun>& runs, size_t left_out, const Options& o) {
  std::vector<SampleSet> sets;
  for (size_t i = 0; i < runs.size(); ++i) {
    if (i != left_out) sets.push_back({runs[i].model.get(), runs[i].samples});
  }
  CalibrationOptions fit;
  fit.backend = "cpu";
  fit.prior_weight = o.prior_weight;
  const CalibrationReport report = calibrate(sets, fit);
  if (o.verbose) std::cerr << "fit without " << runs[left_out].c->key << ":\n" << report.to_string();
  CaseRun& r = runs[left_out];
  const CostModel fitted(r.graph, r.model->target(), report.after);
  return score(predictions(fitted, r.samples), medians(r.samples));
}

double median_of(std::vector<double> v) { return measure::percentile(std::move(v), 0.5); }

void print_tables(const std::vector<CaseRun>& runs) {
  std::cout << "| workload | n | fastest / slowest measured | median spread | tau uncal | tau vs p10 / p90 "
               "| top-1 | top-5 | tau leave-one-out fit | top-1 | top-5 |\n"
               "|---|---|---|---|---|---|---|---|---|---|---|\n";
  for (const CaseRun& r : runs) {
    const std::vector<double> t = medians(r.samples);
    const auto [lo, hi] = std::minmax_element(t.begin(), t.end());
    std::cout << "| " << r.c->label << " | " << r.samples.size() << " | " << fmt("%.3f", *lo / 1e6) << " / "
              << fmt("%.3f ms", *hi / 1e6) << " | " << pct(median_of(r.spread)) << " | "
              << fmt("%.2f", r.uncalibrated.tau) << " | " << fmt("%.2f", r.tau_p10) << " / "
              << fmt("%.2f", r.tau_p90) << " | " << pct(r.uncalibrated.top1) << " | " << pct(r.uncalibrated.top5)
              << " | " << fmt("%.2f", r.loo.tau) << " | " << pct(r.loo.top1) << " | " << pct(r.loo.top5) << " |\n";
  }
}

int run(int argc, char** argv) {
  const Options o = parse_options(argc, argv);
  const Target host = load_target("host");
  Target model_target = host;  // the model sees the threads the runtime is given
  model_target.aic_cores = model_target.aiv_cores = std::min(o.threads, host.aic_cores);
  measure::RunnerOptions ro;
  ro.threads = o.threads;
  ro.min_time_ms = o.min_time_ms;
  ro.min_repetitions = o.repetitions;
  ro.cpu_time = o.cpu_time;
  const std::unique_ptr<measure::Runner> cpu = measure::make_runner("cpu", host, ro);
  std::vector<CaseRun> runs;
  for (const Case& c : suite()) {
    if (!o.filter.empty() && c.key.find(o.filter) == std::string::npos && c.label.find(o.filter) == std::string::npos)
      continue;
    std::cerr << "measuring " << c.key << "\n";
    runs.push_back(measure_case(c, o, model_target, *cpu));
  }
  if (runs.size() >= 2) {
    for (size_t i = 0; i < runs.size(); ++i) runs[i].loo = leave_one_out(runs, i, o);
  }
  print_tables(runs);
  return 0;
}

}  // namespace
}  // namespace pto

int main(int argc, char** argv) {
  try {
    return pto::run(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << e.what() << "\n";
    return 1;
  }
}
