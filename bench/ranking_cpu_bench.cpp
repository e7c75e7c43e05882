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
// (leave-one-out: the fit never sees the workload it is scored on).
//
// Noise: every workload is measured in --passes independent passes (pass 1 of the whole
// suite, then pass 2, ..., each in its own child process), and a candidate's time is
// the mean of its pass medians. The tau of pass 1's medians against pass 2's is the
// order the noise alone leaves intact: a model scored against one pass cannot expect
// more than about that, and no target above it can be met by any model. Reported with
// each candidate's relative spread within a pass ((p90 - p10) / median of its runs) and
// the median relative difference of its two pass medians.
//
//   build/bench/ranking_cpu_bench [--samples 24] [--seed 1] [--threads 1] [--filter S]
//                                 [--min-time-ms 30] [--repetitions 7] [--passes 2]
//                                 [--clock cpu|wall] [--save FILE | --load FILE]
//                                 [--target FILE] [--prior-weight W] [--verbose 1]
//                                 [--probe | --prices FILE]
//
// --save writes the host target the times were measured on, then every measurement
// (workload key, config, the mean median and each pass's median / p10 / p90 ns), as
// JSON lines; --load scores those instead of measuring, so a model change can be
// re-scored on the same times. The model sees the host the file records (its cache
// sizes, SIMD width and clock), not the machine that re-scores it; --target names
// another (files written before the target was recorded need it).
//
// The model prices the runtime's steps at its ISA's reference machine's figures
// (cost_model/host_prices.h) unless given a machine's own: --probe measures this
// machine's (calibration/host_probe.h, as `pto-tune calibrate` does; a --load file must then
// have been measured on this machine) and prints them; --prices reads a JSON object of
// them, as --probe prints or a calibration file's "host_prices".
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
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/ranking_report.h"
#include "bench/report_program.h"
#include "core/error.h"
#include "core/json_read.h"
#include "core/op_library.h"
#include "cost_model/calibrate.h"
#include "cost_model/estimate.h"
#include "cost_model/ranking.h"
#include "cost_model/time_terms.h"
#include "measure/runner.h"
#include "measure/stats.h"
#include "calibration/host_probe.h"
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
  size_t samples = 24;  // the issue measured 25-30; with 12, one pair moves tau by 0.03
  uint64_t seed = 1;
  int threads = 1;
  double min_time_ms = 30;
  int repetitions = 7;
  int passes = 2;
  std::string filter;
  std::string save, load;
  std::string target;  // the host the times were taken on; empty: the --load file's, else this machine's
  bool cpu_time = true;
  bool verbose = false;  // --verbose 1: every sample, measured, predicted and its breakdown, on stderr
  std::optional<double> prior_weight;  // unset: calibrate()'s default for the host
  bool probe = false;
  std::string prices;  // a HostPrices JSON file
};

Options parse_options(int argc, char** argv) {
  Options o;
  std::string clock = "cpu";
  int verbose = 0;
  bench::po::options_description options("options");
  options.add_options()
      ("samples", bench::po::value(&o.samples)->default_value(o.samples), "candidates per workload (at least 6)")
      ("seed", bench::po::value(&o.seed)->default_value(o.seed), "seed of the candidate draw")
      ("threads", bench::po::value(&o.threads)->default_value(o.threads), "threads of the runtime and cores of the model")
      ("min-time-ms", bench::po::value(&o.min_time_ms)->default_value(o.min_time_ms), "timed milliseconds per candidate and pass")
      ("repetitions", bench::po::value(&o.repetitions)->default_value(o.repetitions), "timed runs per candidate and pass, at least")
      ("passes", bench::po::value(&o.passes)->default_value(o.passes), "passes over the whole suite (independent machine states)")
      ("filter", bench::po::value(&o.filter), "comma-separated substrings of the workloads to run")
      ("clock", bench::po::value(&clock)->default_value(clock), "cpu (the process's CPU time) or wall")
      ("save", bench::po::value(&o.save), "write every measurement to FILE (JSON lines)")
      ("load", bench::po::value(&o.load), "score the measurements of FILE instead of measuring")
      ("target", bench::po::value(&o.target),
       "the host the times were measured on, a target JSON file (default: the one the --load file records, else this machine)")
      ("verbose", bench::po::value(&verbose)->default_value(verbose), "1: every sample with its breakdown, on stderr")
      ("prior-weight", bench::po::value<double>()->notifier([&o](double w) { o.prior_weight = w; }),
       "the calibration's pull towards the datasheet figures (default: calibrate()'s for a host)")
      ("probe", bench::po::bool_switch(&o.probe), "price the runtime's steps at this machine's figures, probed first")
      ("prices", bench::po::value(&o.prices), "price the runtime's steps at the figures of FILE (a JSON object, as --probe prints)");
  bench::parse_report_options(argc, argv, "ranking_cpu_bench [options]", options);
  if (clock != "cpu" && clock != "wall") usage_error("ranking_cpu_bench: --clock is cpu or wall, got " + clock);
  o.cpu_time = clock == "cpu";
  o.verbose = verbose == 1;
  if (o.samples < 6) usage_error("ranking_cpu_bench: --samples must be at least 6, got " + std::to_string(o.samples));
  if (o.threads < 1) usage_error("ranking_cpu_bench: --threads must be at least 1, got " + std::to_string(o.threads));
  if (o.passes < 1) usage_error("ranking_cpu_bench: --passes must be at least 1, got " + std::to_string(o.passes));
  if (o.probe && !o.prices.empty()) usage_error("ranking_cpu_bench: --probe and --prices both set the prices; give one");
  if (!o.target.empty() && o.load.empty()) usage_error("ranking_cpu_bench: --target describes --load's measurements; without --load the host is this machine");
  return o;
}

constexpr double kNone = std::numeric_limits<double>::quiet_NaN();
constexpr double kPi = 3.14159265358979323846;

double median_of(std::vector<double> v) { return measure::percentile(std::move(v), 0.5); }

// One measured candidate: each pass's statistics; its time is the mean of the pass medians.
struct Timed {
  TileConfig config;
  std::vector<measure::Stats> passes;
  double mean_ns() const {
    double sum = 0;
    for (const measure::Stats& s : passes) sum += s.median_ns;
    return sum / static_cast<double>(passes.size());
  }
};

// The best tau a model can expect against the mean of `passes` passes, when two single
// passes agree with tau `pass_tau`: with Gaussian noise tau = (2/pi) asin(rho), the passes'
// correlation is the reliability of one pass, and Spearman-Brown gives the mean's. An
// estimate; `pass_tau` itself is the measured figure.
double tau_ceiling(double pass_tau, int passes) {
  if (!std::isfinite(pass_tau)) return kNone;
  const double rho = std::clamp(std::sin(kPi / 2 * pass_tau), 0.0, 1.0);
  const double reliability = passes * rho / (1 + (passes - 1) * rho);
  return 2 / kPi * std::asin(std::sqrt(reliability));
}

struct CaseRun {
  const Case* c = nullptr;
  Workload workload;
  TensorGraph graph;
  std::unique_ptr<CostModel> model;
  std::vector<TileConfig> configs;                         // drawn, in measurement order
  std::vector<std::vector<measure::Measurement>> results;  // per pass, per config
  std::vector<Timed> timed;                                // measured in every pass
  std::vector<Sample> samples;                             // config, mean of the pass medians
  size_t failed = 0;
  Scores uncalibrated, loo;
  double spread = 0;          // median over candidates of the within-pass relative spread
  double pass_diff = kNone;   // median over candidates of |median 1 - median 2| / mean
  double pass_tau = kNone;    // tau of pass 1's medians against pass 2's
  double tau_pass1 = kNone, tau_pass2 = kNone;  // the model's uncalibrated tau against each
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

std::vector<double> pass_medians(const std::vector<Timed>& timed, size_t pass) {
  std::vector<double> out;
  for (const Timed& t : timed) out.push_back(t.passes[pass].median_ns);
  return out;
}

// The candidates measured in every pass (a failure is reported once, for its first pass).
void collect_timed(CaseRun& run) {
  for (size_t i = 0; i < run.configs.size(); ++i) {
    Timed t{run.configs[i], {}};
    for (const std::vector<measure::Measurement>& pass : run.results) {
      if (!pass[i].ok()) {
        ++run.failed;
        std::cerr << run.c->key << ": " << run.configs[i].to_string() << " failed: " << pass[i].error << "\n";
        break;
      }
      t.passes.push_back(pass[i].stats);
    }
    if (t.passes.size() == run.results.size()) run.timed.push_back(std::move(t));
  }
}

measure::Stats stats_from_json(const nlohmann::json& j) {
  measure::Stats s;
  s.median_ns = j.at("median_ns").get<double>();
  s.p10_ns = j.at("p10_ns").get<double>();
  s.p90_ns = j.at("p90_ns").get<double>();
  return s;
}

nlohmann::json stats_to_json(const measure::Stats& s) {
  return {{"median_ns", s.median_ns}, {"p10_ns", s.p10_ns}, {"p90_ns", s.p90_ns}};
}

std::vector<nlohmann::json> read_lines(const std::string& path) {
  std::ifstream in(path);
  if (!in) fail(ErrorCategory::Io, "ranking_cpu_bench: cannot read " + path);
  std::vector<nlohmann::json> lines;
  for (std::string line; std::getline(in, line);) {
    try {
      lines.push_back(nlohmann::json::parse(line));
    } catch (const nlohmann::json::exception& e) {
      usage_error("ranking_cpu_bench: " + path + " line " + std::to_string(lines.size() + 1) + " is not JSON: " + e.what());
    }
  }
  return lines;
}

// The host the model is given: --target, else the one the --load file's lines record,
// else this machine.
Target measured_host(const Options& o, const std::vector<nlohmann::json>& loaded) {
  if (!o.target.empty()) return load_target(o.target);
  if (o.load.empty()) return load_target("host");
  for (const nlohmann::json& j : loaded) {
    if (j.contains("target")) return Target::from_json(j.at("target"));
  }
  usage_error("ranking_cpu_bench: " + o.load + " does not record the host it was measured on; name it with --target FILE");
}

// One workload's lines of a --save file; files written before --passes hold one pass as
// median / p10 / p90 at the top level.
std::vector<Timed> load_configs(const std::vector<nlohmann::json>& loaded, const std::string& key) {
  std::vector<Timed> out;
  for (const nlohmann::json& j : loaded) {
    if (!j.contains("key") || j.at("key").get<std::string>() != key) continue;
    Timed t{TileConfig::from_json(j.at("config")), {}};
    if (j.contains("passes")) {
      for (const nlohmann::json& p : j.at("passes")) t.passes.push_back(stats_from_json(p));
    } else {
      t.passes.push_back(stats_from_json(j));
    }
    out.push_back(std::move(t));
  }
  return out;
}

// Starts a --save file: the host the times are measured on.
void start_save(const std::string& path, const Target& host) {
  std::ofstream out(path, std::ios::trunc);
  if (!out) fail(ErrorCategory::Io, "ranking_cpu_bench: cannot write " + path);
  out << nlohmann::json{{"target", host.to_json()}}.dump() << "\n";
}

void save_configs(const std::string& path, const std::string& key, const std::vector<Timed>& timed) {
  std::ofstream out(path, std::ios::app);
  if (!out) fail(ErrorCategory::Io, "ranking_cpu_bench: cannot write " + path);
  for (const Timed& t : timed) {
    nlohmann::json passes = nlohmann::json::array();
    for (const measure::Stats& s : t.passes) passes.push_back(stats_to_json(s));
    out << nlohmann::json{{"key", key}, {"config", t.config.to_json()}, {"median_ns", t.mean_ns()},
                          {"passes", passes}}.dump()
        << "\n";
  }
}

// The prices the model is given: --prices, this machine's by --probe (printed, so that a
// re-score can name them), else none (the reference machine's).
std::optional<HostPrices> host_prices(const Options& o, const Target& host) {
  if (!o.prices.empty()) {
    const std::string text = json_read::read_text_file(o.prices, "prices file");
    return HostPrices::from_json(json_read::parse(text, "prices file '" + o.prices + "'"));
  }
  if (!o.probe) return std::nullopt;
  const Target here = load_target("host");
  if (host.fingerprint() != here.fingerprint())
    usage_error("ranking_cpu_bench: --probe prices this machine, but " + o.load + " was measured on another host (" +
                host.fingerprint() + ", this one " + here.fingerprint() + "); give its prices with --prices");
  std::cerr << "probing this machine's prices\n";
  const HostPrices prices = calibration::probe_host(here).prices;
  std::cout << "host prices: " << prices.to_json().dump() << "\n";
  return prices;
}

CaseRun prepare_case(const Case& c, const Options& o, const Target& model_target, const std::optional<HostPrices>& prices) {
  CaseRun run;
  run.c = &c;
  run.workload = Workload::parse_key(c.key);
  run.graph = build_graph(run.workload);
  Coefficients start = Coefficients::defaults(model_target);
  start.host_prices = prices;
  run.model = std::make_unique<CostModel>(run.graph, model_target, start);
  if (o.load.empty()) {
    const search::SpaceGenerator space(run.graph, model_target, default_config(run.workload, run.graph, model_target));
    run.configs = space.sample(o.samples, o.seed);
  }
  return run;
}

// The prediction's parts by coefficient (ns): what calibration scales.
nlohmann::json coefficient_parts(const CostModel& model, const TileConfig& config) {
  const TimeTerms terms = model.terms(model.analyze(config), config, model.coefficients());
  nlohmann::json out;
  for (int i = 0; i < kNumCoefs; ++i) out[coef_name(coef_at(i))] = terms.amount(coef_at(i)) * model.coefficients().value[i];
  return out;
}

// Scores the model on one workload's timed candidates: against the mean of the passes,
// against each of the first two, and the passes against each other.
void score_case(CaseRun& run, const Options& o) {
  const std::string& key = run.c->key;
  std::vector<double> spreads, diffs;
  for (const Timed& t : run.timed) {
    run.samples.push_back({t.config, t.mean_ns()});
    for (const measure::Stats& s : t.passes) spreads.push_back(measure::relative_spread(s));
    if (t.passes.size() >= 2) diffs.push_back(std::abs(t.passes[0].median_ns - t.passes[1].median_ns) / t.mean_ns());
  }
  if (run.samples.size() < 4) {
    internal_error("ranking_cpu_bench: " + key + ": only " + std::to_string(run.samples.size()) +
                   " candidates measured; a ranking needs at least 4");
  }
  const std::vector<double> predicted = predictions(*run.model, run.samples);
  if (o.verbose) {
    for (size_t i = 0; i < run.samples.size(); ++i) {
      std::cerr << key << "  measured " << run.samples[i].measured_ns / 1e6 << " ms  predicted "
                << predicted[i] / 1e6 << " ms  " << run.samples[i].config.to_string() << "  "
                << run.model->estimate(run.samples[i].config).breakdown.to_json().dump() << "  "
                << coefficient_parts(*run.model, run.samples[i].config).dump() << "\n";
    }
  }
  run.uncalibrated = score(predicted, medians(run.samples));
  run.spread = median_of(spreads);
  run.tau_pass1 = kendall_tau(predicted, pass_medians(run.timed, 0));
  if (!diffs.empty()) {
    run.pass_diff = median_of(diffs);
    run.pass_tau = kendall_tau(pass_medians(run.timed, 0), pass_medians(run.timed, 1));
    run.tau_pass2 = kendall_tau(predicted, pass_medians(run.timed, 1));
  }
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

void print_tables(const std::vector<CaseRun>& runs, int passes) {
  std::cout << "| workload | n | fastest / slowest measured | spread in a pass | pass 1 vs 2 diff "
               "| tau pass 1 vs 2 | tau ceiling (est.) | tau uncal | tau vs pass 1 / 2 | top-1 | top-5 "
               "| tau leave-one-out fit | top-1 | top-5 |\n"
               "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n";
  for (const CaseRun& r : runs) {
    const std::vector<double> t = medians(r.samples);
    const auto [lo, hi] = std::minmax_element(t.begin(), t.end());
    std::cout << "| " << r.c->label << " | " << r.samples.size() << " | " << fmt("%.3f", *lo / 1e6) << " / "
              << fmt("%.3f ms", *hi / 1e6) << " | " << pct(r.spread) << " | " << pct(r.pass_diff) << " | "
              << fmt("%.2f", r.pass_tau) << " | " << fmt("%.2f", tau_ceiling(r.pass_tau, passes)) << " | "
              << fmt("%.2f", r.uncalibrated.tau) << " | " << fmt("%.2f", r.tau_pass1) << " / "
              << fmt("%.2f", r.tau_pass2) << " | " << pct(r.uncalibrated.top1) << " | " << pct(r.uncalibrated.top5)
              << " | " << fmt("%.2f", r.loo.tau) << " | " << pct(r.loo.top1) << " | " << pct(r.loo.top5) << " |\n";
  }
}

int run(int argc, char** argv) {
  const Options o = parse_options(argc, argv);
  const std::vector<nlohmann::json> loaded = o.load.empty() ? std::vector<nlohmann::json>{} : read_lines(o.load);
  const Target host = measured_host(o, loaded);
  Target model_target = host;  // the model sees the threads the runtime is given
  model_target.aic_cores = model_target.aiv_cores = std::min(o.threads, host.aic_cores);
  measure::RunnerOptions ro;
  ro.threads = o.threads;
  ro.min_time_ms = o.min_time_ms;
  ro.min_repetitions = o.repetitions;
  ro.cpu_time = o.cpu_time;
  const std::unique_ptr<measure::Runner> cpu = measure::make_runner("cpu", host, ro);
  const std::optional<HostPrices> prices = host_prices(o, host);
  std::vector<CaseRun> runs;
  for (const Case& c : suite()) {
    if (!bench::selected(o.filter, c.key, c.label)) continue;
    runs.push_back(prepare_case(c, o, model_target, prices));
  }
  if (!o.save.empty()) start_save(o.save, host);
  if (o.load.empty()) {  // pass 1 of the whole suite, then pass 2, ...: independent machine states
    for (int pass = 0; pass < o.passes; ++pass) {
      for (CaseRun& r : runs) {
        std::cerr << "pass " << pass + 1 << ": measuring " << r.c->key << "\n";
        r.results.push_back(cpu->measure_interleaved(r.workload, r.configs));
      }
    }
  }
  int passes = o.passes;
  for (CaseRun& r : runs) {
    if (o.load.empty()) {
      collect_timed(r);
    } else {
      r.timed = load_configs(loaded, r.c->key);
      if (!r.timed.empty()) passes = static_cast<int>(r.timed.front().passes.size());
    }
    if (!o.save.empty()) save_configs(o.save, r.c->key, r.timed);
    score_case(r, o);
  }
  if (runs.size() >= 2) {
    for (size_t i = 0; i < runs.size(); ++i) runs[i].loo = leave_one_out(runs, i, o);
  }
  print_tables(runs, passes);
  return 0;
}

}  // namespace
}  // namespace pto

int main(int argc, char** argv) {
  return pto::bench::report_main("ranking_cpu_bench", [&] { return pto::run(argc, argv); });
}
