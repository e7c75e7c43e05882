// `pto-tune calibrate`: fits the cost model's coefficients to measurements of one target
// and backend, and saves them where `pto-tune explain` (and the tuner) pick them up.
//
// For each workload it samples feasible configs from the search space
// (search/space_generator.h) — the kind of candidates the model will have to rank —
// measures them through the backend's Runner, and fits the coefficients to all of them
// at once with cost_model/calibrate.h. Candidates that fail to measure are skipped, and
// each one is named on stderr. It prints the fit error before and after and every
// coefficient, old -> new.
#include <unistd.h>

#include <iostream>

#include <nlohmann/json.hpp>

#include "cli/calibration_dir.h"
#include "cli/cli.h"
#include "cli/commands.h"
#include "core/error.h"
#include "core/op_library.h"
#include "cost_model/calibrate.h"
#include "measure/runner.h"
#include "search/space_generator.h"

namespace pto::cli {

namespace {

using nlohmann::json;

// What was measured for one workload, kept so the fit can point at it.
struct WorkloadRun {
  Workload workload;
  TensorGraph graph;
  std::unique_ptr<CostModel> model;
  uint64_t space_size = 0;
  search::SpaceTally tally;
  std::vector<Sample> samples;
  json skipped = json::array();
};

std::vector<Workload> workloads_from(const po::variables_map& vm) {
  const std::string op = find_op(vm["op"].as<std::string>()).name;
  const DType dtype = parse_dtype(vm["dtype"].as<std::string>());
  const auto attrs = parse_attrs(vm["attrs"].as<std::string>());
  std::vector<Workload> out;
  for (const std::string& shapes : vm["shapes"].as<std::vector<std::string>>()) {
    Workload w;
    w.op = op;
    w.shape = parse_shape_list(shapes);
    w.dtype = dtype;
    w.attrs = attrs;
    out.push_back(std::move(w));
  }
  return out;
}

std::string default_backend(const Target& target) { return target.kind == TargetKind::Cpu ? "cpu" : "sim"; }

json coefficient_values(const Coefficients& c) {
  json j = json::object();
  for (int i = 0; i < kNumCoefs; ++i) j[coef_name(coef_at(i))] = c.value[i];
  return j;
}

// Measures the candidates one at a time when a person watches (so progress can move),
// in one batch otherwise (a backend may share set-up work across a batch).
std::vector<measure::Measurement> measure_all(measure::Runner& runner, const Workload& w,
                                              const std::vector<TileConfig>& configs, bool progress) {
  if (!progress) return runner.measure(w, configs);
  std::vector<measure::Measurement> out;
  for (size_t i = 0; i < configs.size(); ++i) {
    std::cerr << "\r  measuring " << w.key() << "  " << i + 1 << "/" << configs.size() << std::flush;
    out.push_back(runner.measure(w, {configs[i]}).at(0));
  }
  std::cerr << "\n";
  return out;
}

WorkloadRun measure_workload(const Workload& w, const Target& target, measure::Runner& runner, size_t samples,
                             uint64_t seed, bool progress) {
  WorkloadRun run{w, build_graph(w), nullptr, 0, {}, {}};
  run.model = std::make_unique<CostModel>(run.graph, target);
  const search::SpaceGenerator space(run.graph, target, default_config(w, run.graph, target));
  run.space_size = space.size();
  const std::vector<TileConfig> configs = space.sample(samples, seed, &run.tally);
  const std::vector<measure::Measurement> results = measure_all(runner, w, configs, progress);
  for (size_t i = 0; i < configs.size(); ++i) {
    const measure::Measurement& m = results[i];
    if (m.ok() && m.stats.median_ns > 0) {
      run.samples.push_back({configs[i], m.stats.median_ns});
      continue;
    }
    std::cerr << "pto-tune: skipped " << w.key() << " " << configs[i].to_string() << ": "
              << measure::status_name(m.status) << (m.error.empty() ? "" : ": " + m.error) << "\n";
    run.skipped.push_back({{"config", configs[i].to_json()}, {"status", measure::status_name(m.status)},
                           {"error", m.error}});
  }
  return run;
}

void print_text(const std::vector<WorkloadRun>& runs, const Target& target, const std::string& backend,
                const CalibrationReport& report, const std::string& path) {
  std::cout << "# cost model calibration for " << target.name << " on " << backend << " measurements"
            << (backend == "cpu" ? "" : " (simulated)") << "\n";
  std::vector<std::vector<std::string>> rows;
  for (const WorkloadRun& r : runs) {
    rows.push_back({r.workload.key(), std::to_string(r.space_size), std::to_string(r.tally.analyzed),
                    std::to_string(r.samples.size() + r.skipped.size()), std::to_string(r.samples.size()),
                    std::to_string(r.skipped.size())});
  }
  print_table(std::cout, {"workload", "space", "analyzed", "sampled", "measured", "skipped"}, rows);
  std::cout << report.to_string() << "saved to " << path << "\n";
}

json to_json(const std::vector<WorkloadRun>& runs, const Target& target, const std::string& backend,
             const CalibrationReport& report, const std::string& path) {
  json workloads = json::array();
  for (const WorkloadRun& r : runs) {
    workloads.push_back({{"workload", r.workload.key()},
                         {"space_size", r.space_size},
                         {"analyzed", r.tally.analyzed},
                         {"sampled", r.samples.size() + r.skipped.size()},
                         {"measured", r.samples.size()},
                         {"skipped", r.skipped}});
  }
  return {{"target", target.name},
          {"backend", backend},
          {"simulated", backend != "cpu"},
          {"workloads", workloads},
          {"samples_used", report.samples_used},
          {"samples_skipped", report.samples_skipped},
          {"iterations", report.iterations},
          {"rms_log_error_before", report.rms_log_error_before},
          {"rms_log_error_after", report.rms_log_error_after},
          {"max_log_error_before", report.max_log_error_before},
          {"max_log_error_after", report.max_log_error_after},
          {"coefficients_before", coefficient_values(report.before)},
          {"coefficients", coefficient_values(report.after)},
          {"path", path}};
}

}  // namespace

int run_calibrate(const Args& args) {
  po::options_description options;
  options.add_options()
      ("op", po::value<std::string>()->required(), "operator to calibrate on (see 'pto-tune ops')")
      ("shapes", po::value<std::vector<std::string>>()->required()->composing(),
       "sizes of the op's signature, e.g. 512,512,512; repeat --shapes for several workloads")
      ("dtype", po::value<std::string>()->default_value("fp16"), "element type: fp32, fp16, bf16, int32, int8")
      ("attrs", po::value<std::string>()->default_value(""), "op attributes, e.g. causal=1");
  add_target_option(options, "ascend910b1");
  options.add_options()
      ("backend", po::value<std::string>(),
       "sim (NPU simulator) or cpu (real time on this host); default: cpu for the host, sim otherwise")
      ("samples", po::value<int>()->default_value(32), "feasible configs measured per workload")
      ("seed", po::value<uint64_t>()->default_value(1), "seed of the sample of the search space")
      ("out", po::value<std::string>(),
       "folder to save the coefficients in; default: $PTO_TUNE_HOME/calibration or "
       "~/.cache/pto-tune/calibration, where 'pto-tune explain' looks")
      ("json", po::bool_switch(), "print the result as JSON");
  const auto vm = parse_command(
      args, options,
      {"calibrate", "--op OP --shapes DIMS [--shapes DIMS ...] [options]",
       "Samples feasible configs from the search space of each workload, measures them\n"
       "with the backend, fits the cost model's coefficients to the measured times and\n"
       "saves them for the target and backend. Prints the model's log error before and\n"
       "after the fit and each coefficient. Candidates that fail to measure are skipped\n"
       "and named on stderr. Simulated measurements are labelled so.",
       "pto-tune calibrate --op matmul --shapes 512,512,512 --shapes 96,1536,3072 --target ascend910b1 "
       "--backend sim --samples 32"});
  if (!vm) return 0;

  const std::vector<Workload> workloads = workloads_from(*vm);
  const int samples = (*vm)["samples"].as<int>();
  if (samples < 1) usage_error("--samples: expected a positive integer, got " + std::to_string(samples));
  const Target target = target_from(*vm);
  const std::string backend = vm->count("backend") ? (*vm)["backend"].as<std::string>() : default_backend(target);
  if (backend == "model")
    usage_error("--backend model: the cost model cannot be calibrated against itself; use sim or cpu");
  const std::string dir = vm->count("out") ? (*vm)["out"].as<std::string>() : default_calibration_dir();
  if (dir.empty()) usage_error("--out: not given, and neither PTO_TUNE_HOME nor HOME is set to derive it from");
  const uint64_t seed = (*vm)["seed"].as<uint64_t>();

  measure::RunnerOptions runner_options;
  runner_options.seed = seed;
  const std::unique_ptr<measure::Runner> runner = measure::make_runner(backend, target, runner_options);
  const bool progress = ::isatty(STDERR_FILENO) != 0;
  std::vector<WorkloadRun> runs;
  for (const Workload& w : workloads) {
    runs.push_back(measure_workload(w, target, *runner, static_cast<size_t>(samples), seed, progress));
  }

  std::vector<SampleSet> sets;
  size_t measured = 0;
  for (const WorkloadRun& r : runs) {
    sets.push_back({r.model.get(), r.samples});
    measured += r.samples.size();
  }
  if (measured == 0) fail(ErrorCategory::Internal, "calibrate: no candidate was measured successfully");
  CalibrationOptions fit;
  fit.backend = backend;
  const CalibrationReport report = calibrate(sets, fit);
  const std::string path = coefficients_path(dir, target.name, backend);
  report.after.save(path);

  if ((*vm)["json"].as<bool>()) {
    print_json(std::cout, to_json(runs, target, backend, report, path));
  } else {
    print_text(runs, target, backend, report, path);
  }
  return 0;
}

}  // namespace pto::cli
