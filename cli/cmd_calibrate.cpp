// `pto-tune calibrate`: fits the cost model's coefficients to measurements of one target
// and backend, and saves them where every prediction picks them up (the runners'
// predicted times, the `model` backend, `explain`, the tuner).
//
// The work is calibration/calibration_job.h (sample each workload's space, measure through
// the backend's Runner, fit); this file parses, shows progress and prints. On a host
// target the job first measures the machine's own prices of the runtime's steps
// (calibration/host_probe.h, a few seconds), so that the coefficients are fitted over them
// and saved with them. Candidates that fail to measure are skipped, and each one is
// named on stderr. It prints the fit error before and after and every coefficient,
// old -> new (and on a host, every price against the reference machine's). The fit is saved through
// cost_model/calibration_store.h, which keeps a saved fit made on more samples unless
// --replace is given, and says so.
#include <algorithm>
#include <iostream>
#include <optional>

#include <nlohmann/json.hpp>

#include "cli/cli.h"
#include "cli/commands.h"
#include "core/format_number.h"
#include "cli/progress.h"
#include "core/error.h"
#include "core/op_library.h"
#include "cost_model/calibration_store.h"
#include "cost_model/host_model.h"
#include "measure/runner.h"
#include "calibration/calibration_job.h"
#include "calibration/host_probe.h"

namespace pto::cli {

namespace {

using nlohmann::json;

// Every --shapes parsed before any work starts, so that a bad one costs nothing.
std::vector<Workload> workloads_from(const po::variables_map& vm, const Target& target) {
  const std::string op = find_op(vm["op"].as<std::string>()).name;
  const DType dtype = vm.count("dtype") ? parse_dtype(vm["dtype"].as<std::string>()) : search::default_dtype(target);
  const auto attrs = parse_attrs(vm["attrs"].as<std::string>());
  const std::string expr = expr_from(vm);
  std::vector<Workload> out;
  for (const std::string& shapes : vm["shapes"].as<std::vector<std::string>>()) {
    Workload w;
    w.op = op;
    w.shape = parse_shape_list(shapes);
    w.dtype = dtype;
    w.attrs = attrs;
    w.expr = expr;
    build_graph(w);  // checks the shape against the op's signature
    out.push_back(std::move(w));
  }
  return out;
}

// Calibration fits the model to times a backend measures: the advice names only the
// backends that measure this target in this build (never model, which predicts, nor
// one that the target or the build rules out), checked before any work starts.
void check_backend(const std::string& backend, const Target& target) {
  const std::vector<std::string> usable = measure::measuring_backends(target);
  if (std::find(usable.begin(), usable.end(), backend) != usable.end()) return;
  const std::vector<std::string> known = measure::backend_names();
  const std::string why =
      backend == "model" ? "the cost model cannot be calibrated against its own prediction"
      : std::find(known.begin(), known.end(), backend) == known.end()
          ? "unknown backend (known: " + join(known, ", ") + ")"
          : "backend '" + backend + "' does not measure target '" + target.name + "' in this build";
  usage_error("--backend " + backend + ": " + why + "; calibrate target '" + target.name + "' with --backend " +
              join(usable, " or --backend "));
}

json coefficient_values(const Coefficients& c) {
  json j = json::object();
  for (int i = 0; i < kNumCoefs; ++i) j[coef_name(coef_at(i))] = c.value[i];
  return j;
}

// Past this disagreement between a probe's rounds, the prices are the machine's load as
// much as its own.
constexpr double kBusyProbeSpread = 0.2;

// With --no-probe, a host calibration fits over the prices of the saved calibration,
// else (none, or one --replace is about to overwrite because it cannot be read) its
// ISA's reference machine's.
std::optional<HostPrices> saved_prices(const Target& target, const std::string& backend, const std::string& dir) {
  const auto saved = usable_calibration(dir, target, backend);
  return saved ? saved->host_prices : std::nullopt;
}

// Without --replace, a saved calibration that cannot be read would stop the save at the
// end of the run: it is named before anything is measured, with the way out.
void check_saved_calibration(const Target& target, const std::string& backend, const std::string& dir) {
  try {
    load_calibrated(dir, target, backend);
  } catch (const Error& e) {
    fail(e.category(), std::string(e.what()) + "; --replace overwrites it");
  }
}

void print_prices(const Target& target, const calibration::CalibrationJobResult& result) {
  const std::optional<HostPrices>& used = result.report.after.host_prices;
  const HostPrices reference = default_host_prices(target);
  const json reference_json = reference.to_json(), used_json = used.value_or(reference).to_json();
  std::cout << "host prices, in cycles of the " << target.clock_mhz / 1000.0 << " GHz nominal clock ("
            << used.value_or(reference).source << "):\n";
  std::vector<std::vector<std::string>> rows;
  for (const auto& [name, value] : used_json.items())
    if (value.is_number())
      rows.push_back({name, format_number("%.3g", reference_json.at(name).get<double>()), format_number("%.3g", value.get<double>())});
  print_table(std::cout, {"price", "reference machine", "used"}, rows);
  if (!result.probe) return;
  for (const std::string& kept : result.probe->kept) std::cout << "kept the reference price of " << kept << "\n";
  const double spread = result.probe->round_spread;
  std::cout << "the probe's rounds agreed within " << format_number("%.0f %%", 100 * spread)
            << " (median over its runs)"
            << (spread > kBusyProbeSpread ? ": this machine was busy; calibrate again when it is idle" : "") << "\n";
}

void report_skipped(const calibration::CalibrationJobResult& result) {
  for (const calibration::WorkloadSamples& w : result.workloads) {
    for (const calibration::SkippedSample& s : w.skipped) {
      const measure::Measurement& m = s.measurement;
      std::cerr << "pto-tune: skipped " << w.workload.key() << " " << s.config.to_string() << ": "
                << measure::status_name(m.status) << (m.error.empty() ? "" : ": " + m.error) << "\n";
    }
  }
}

std::string saved_line(const SaveOutcome& saved) {
  if (saved.saved) return "saved to " + saved.path;
  return "not saved: kept " + saved.path + " (" + saved.kept_because + "; --replace to overwrite it)";
}

void print_text(const calibration::CalibrationJobResult& result, const Target& target, const std::string& backend,
                const SaveOutcome& saved) {
  std::cout << "# cost model calibration for " << target.name << " on " << backend << " measurements"
            << (backend == "cpu" ? "" : " (simulated)") << "\n";
  std::vector<std::vector<std::string>> rows;
  for (const calibration::WorkloadSamples& w : result.workloads) {
    rows.push_back({w.workload.key(), std::to_string(w.space_size), std::to_string(w.tally.analyzed),
                    std::to_string(w.samples.size() + w.skipped.size()), std::to_string(w.samples.size()),
                    std::to_string(w.skipped.size())});
  }
  print_table(std::cout, {"workload", "space", "analyzed", "sampled", "measured", "skipped"}, rows);
  if (is_host_target(target)) print_prices(target, result);
  std::cout << result.report.to_string() << saved_line(saved) << "\n";
}

json to_json(const calibration::CalibrationJobResult& result, const Target& target, const std::string& backend,
             const SaveOutcome& saved) {
  json workloads = json::array();
  for (const calibration::WorkloadSamples& w : result.workloads) {
    json skipped = json::array();
    for (const calibration::SkippedSample& s : w.skipped) {
      skipped.push_back({{"config", s.config.to_json()},
                         {"status", measure::status_name(s.measurement.status)},
                         {"error", s.measurement.error}});
    }
    workloads.push_back({{"workload", w.workload.key()},
                         {"space_size", w.space_size},
                         {"analyzed", w.tally.analyzed},
                         {"sampled", w.samples.size() + w.skipped.size()},
                         {"measured", w.samples.size()},
                         {"skipped", skipped}});
  }
  const CalibrationReport& report = result.report;
  json j = {{"target", target.name},
            {"fingerprint", target.fingerprint()},
            {"backend", backend},
            {"simulated", backend != "cpu"},
            {"workloads", workloads},
            {"samples_used", report.samples_used},
            {"samples_skipped", report.samples_skipped},
            {"coefficients_fitted", report.unknowns},
            {"iterations", report.iterations},
            {"rms_log_error_before", report.rms_log_error_before},
            {"rms_log_error_after", report.rms_log_error_after},
            {"max_log_error_before", report.max_log_error_before},
            {"max_log_error_after", report.max_log_error_after},
            {"coefficients_before", coefficient_values(report.before)},
            {"coefficients", coefficient_values(report.after)},
            {"path", saved.path},
            {"saved", saved.saved}};
  if (!saved.saved) j["kept_because"] = saved.kept_because;
  if (is_host_target(target)) {
    const HostPrices reference = default_host_prices(target);
    j["host_prices"] = report.after.host_prices.value_or(reference).to_json();
    j["host_prices_reference"] = reference.to_json();
    j["host_prices_probed"] = result.probe.has_value();
    j["host_prices_kept"] = result.probe ? result.probe->kept : std::vector<std::string>{};
    if (result.probe) j["host_probe_round_spread"] = result.probe->round_spread;
  }
  return j;
}

}  // namespace

int run_calibrate(const Args& args) {
  po::options_description options;
  options.add_options()
      ("op", po::value<std::string>()->required(), "operator to calibrate on (see 'pto-tune ops')")
      ("shapes", po::value<std::vector<std::string>>()->required()->composing(),
       "sizes of the op's signature, e.g. 512,512,512; repeat --shapes for several workloads")
      ("dtype", po::value<std::string>(), kDtypeHelp)
      ("attrs", po::value<std::string>()->default_value(""), "op attributes, e.g. causal=1");
  add_expr_option(options);
  add_target_option(options, "ascend910b1");
  options.add_options()
      ("backend", po::value<std::string>(),
       "sim (NPU simulator) or cpu (real time on this host); default: cpu for the host, sim otherwise")
      ("samples", po::value<int>()->default_value(32),
       "feasible configs measured per workload (at least 11 in all: the model has 10 coefficients)")
      ("seed", po::value<uint64_t>()->default_value(1), "seed of the sample of the search space")
      ("out", po::value<std::string>(),
       "folder to save the coefficients in; default: $PTO_TUNE_HOME/calibration or "
       "~/.cache/pto-tune/calibration, where every prediction looks")
      ("replace", po::bool_switch(), "replace a saved fit even when it was made on more samples, or cannot be read")
      ("no-probe", po::bool_switch(),
       "host: skip measuring this machine's prices of the runtime's steps (a few seconds) and fit over "
       "those of the saved calibration, else the reference machine's")
      ("json", po::bool_switch(), "print the result as JSON");
  const auto vm = parse_command(
      args, options,
      {"calibrate", "--op OP --shapes DIMS [--shapes DIMS ...] [options]",
       "Samples feasible configs from the search space of each workload, measures them\n"
       "with the backend, fits the cost model's coefficients to the measured times and\n"
       "saves them for the target (by its fingerprint) and backend. Prints the model's\n"
       "log error before and after the fit and each coefficient. Candidates that fail to\n"
       "measure are skipped and named on stderr. A saved fit made on more samples is\n"
       "kept unless --replace. Simulated measurements are labelled so. On a host target\n"
       "it first probes what the CPU runtime's FMAs, steps, elements and row calls cost on\n"
       "this machine, fits the coefficients over those prices and saves them together.",
       "pto-tune calibrate --op matmul --shapes 512,512,512 --shapes 96,1536,3072 --target ascend910b1 "
       "--backend sim --samples 32"});
  if (!vm) return 0;

  const int samples = (*vm)["samples"].as<int>();
  if (samples < 1) usage_error("--samples: expected a positive integer, got " + std::to_string(samples));
  const Target target = target_from(*vm);
  const std::vector<Workload> workloads = workloads_from(*vm, target);
  const std::string backend =
      vm->count("backend") ? (*vm)["backend"].as<std::string>() : measure::default_backend(target);
  check_backend(backend, target);
  const std::string dir = vm->count("out") ? (*vm)["out"].as<std::string>() : default_calibration_dir();
  if (dir.empty()) usage_error("--out: not given, and neither PTO_TUNE_HOME nor HOME is set to derive it from");
  const bool replace = (*vm)["replace"].as<bool>();
  if (!replace) check_saved_calibration(target, backend, dir);

  calibration::CalibrationJobOptions job;
  ProgressBar probe_bar("probing this machine's prices");
  if (is_host_target(target)) {
    job.probe_host = !(*vm)["no-probe"].as<bool>();
    if (!job.probe_host) job.host_prices = saved_prices(target, backend, dir);
    job.probe_progress = [&](size_t done, size_t planned) {
      probe_bar.update(static_cast<int64_t>(done), static_cast<int64_t>(planned));
    };
  }
  job.samples = static_cast<size_t>(samples);
  job.seed = (*vm)["seed"].as<uint64_t>();
  measure::RunnerOptions runner_options;
  runner_options.seed = job.seed;
  const std::unique_ptr<measure::Runner> runner = measure::make_runner(backend, target, runner_options);
  std::optional<ProgressBar> bar;  // started with the first measurement, so its ETA leaves the probe out
  job.progress = [&](size_t done, size_t planned) {
    probe_bar.finish();
    if (!bar) bar.emplace("measuring");
    bar->update(static_cast<int64_t>(done), static_cast<int64_t>(planned));
  };
  const calibration::CalibrationJobResult result = calibration::run_calibration(workloads, target, *runner, job);
  if (bar) bar->finish();
  report_skipped(result);

  const SaveOutcome saved = save_calibration(dir, target, backend, result.report.after, replace);
  if (!saved.saved) std::cerr << "pto-tune: " << saved_line(saved) << "\n";
  if ((*vm)["json"].as<bool>()) {
    print_json(std::cout, to_json(result, target, backend, saved));
  } else {
    print_text(result, target, backend, saved);
  }
  return 0;
}

}  // namespace pto::cli
