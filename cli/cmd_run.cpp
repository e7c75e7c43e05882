// `pto-tune run`: compiles one workload for this host, runs it on the CPU runtime,
// verifies the first run against the op's reference and times repetitions — the
// quickest way to see that a config computes the right thing and how fast. With an
// NPU target it reports the simulator's time instead (or, with --backend model, the
// cost model's prediction), labelled simulated (or predicted).
//
// It measures through a Runner (measure/runner.h), the same path the tuner takes, so
// what `run` reports is what tuning would record.
#include <array>
#include <cmath>
#include <iostream>

#include "cli/cli.h"
#include "cli/commands.h"
#include "core/format_number.h"
#include "core/atomic_file.h"
#include "core/compile.h"
#include "core/error.h"
#include "core/op_library.h"
#include "core/program.h"
#include "core/warning.h"
#include "cost_model/estimate.h"
#include "cost_model/format_ns.h"
#include "measure/model_estimate.h"
#include "measure/runner.h"
#include "measure/sim/sim_report.h"
#include "measure/sim/simulator.h"
#include "measure/sim/trace.h"

namespace pto::cli {

namespace {

std::string format_error(double err) { return format_number("%.3g", err); }

std::string whole_percent(double fraction) { return std::to_string(std::lround(fraction * 100)) + "%"; }

// "S 0%  MTE1 12%  MTE2 61%  ..." in pipe order.
std::string pipe_busy(const std::array<double, kNumPipes>& pipes) {
  std::string busy;
  for (int p = 0; p < kNumPipes; ++p)
    busy += (busy.empty() ? "" : "  ") + std::string(pipe_name(static_cast<Pipe>(p))) + " " + whole_percent(pipes[p]);
  return busy;
}

// The simulator's report (measure/sim/simulator.h): its time, the bound and how busy
// each pipe of each core type was.
std::vector<std::vector<std::string>> simulator_rows(const sim::SimResult& r, const measure::Measurement& m,
                                                     const Target& target) {
  std::vector<std::vector<std::string>> rows = {
      {"time", format_ns(m.stats.median_ns) + " simulated (" + std::to_string(static_cast<int64_t>(r.cycles)) + " cycles)"},
      {"bound", r.bound + " (" + whole_percent(r.bound_utilisation) + " busy where it ran)"}};
  for (const auto& [core, pipes] : r.pipe_utilisation) {
    // The pipes' mean is over every core of the type; the bound's over the busy ones.
    rows.push_back({std::string("pipes ") + core_type_name(core),
                    pipe_busy(pipes) + "  (mean over " + std::to_string(target.cores(core)) + " cores, " +
                        std::to_string(r.cores_used.at(core)) + " ran tasks)"});
  }
  return rows;
}

// The rows of a simulated result: the simulator's report, or the cost model's time and bound.
std::vector<std::vector<std::string>> simulated_rows(const measure::Measurement& m, const Target& target) {
  if (const sim::SimResult* report = sim::sim_report(m)) return simulator_rows(*report, m, target);
  std::vector<std::vector<std::string>> rows = {
      {"time", format_ns(m.stats.median_ns) + " predicted by the cost model (not measured)"}};
  if (const Estimate* estimate = measure::model_estimate(m)) rows.push_back({"bound", bound_name(estimate->bound)});
  return rows;
}

// Verification ran: the first run's output was compared with the reference.
bool was_verified(const measure::Measurement& m) {
  return m.verified || m.status == measure::Status::WRONG_RESULT;
}

// Options only the cpu backend reads, given with another backend, would be silently
// ignored; say so. A measure command (command, npu) reads the repeats and the timeout.
void warn_ignored_options(const po::variables_map& vm, const std::string& backend) {
  if (backend == "cpu") return;
  const bool external = backend == "command" || backend == "npu";
  for (const char* option : {"repeats", "threads", "seed", "timeout"}) {
    if (external && (option == std::string("repeats") || option == std::string("timeout"))) continue;
    if (vm.count(option) && !vm[option].defaulted()) {
      warn(std::string("--") + option + " is read by the cpu backend only; backend '" + backend + "' ignores it");
    }
  }
}

// A config that does not fit is the input's fault; anything else that goes wrong is not.
int exit_code_of(measure::Status status) {
  if (status == measure::Status::OK) return 0;
  return exit_code(status == measure::Status::INFEASIBLE ? ErrorCategory::Infeasible
                                                         : ErrorCategory::Internal);
}

// Simulates the config once more with a ChromeTrace attached and writes the trace
// (the simulator is deterministic, so this is the run the result above reports).
void write_trace(const std::string& path, bool full, const TensorGraph& graph, const TileConfig& config,
                 const Target& target) {
  const Program program = compile(graph, config, target).program;
  sim::ChromeTrace trace(program, target, full ? 0 : sim::ChromeTrace::kDefaultMaxSlices);
  sim::SimOptions options;
  options.trace = &trace;
  sim::simulate(program, target, options);
  write_output_file(path, trace.text(), "trace");
  std::cerr << "pto-tune: wrote the simulated timeline to " << path
            << (trace.capped() ? " (capped: --trace-full for every instruction)" : "")
            << "; open it in ui.perfetto.dev or chrome://tracing\n";
}

}  // namespace

int run_run(const Args& args) {
  po::options_description options;
  add_workload_options(options);
  add_config_option(options);
  add_target_option(options, "host");
  options.add_options()
      ("backend", po::value<std::string>(),
       "cpu (real time on this host), sim (NPU simulator), model (cost model only), command or npu "
       "(your own measurement, with --measure-cmd); default: cpu for the host, sim for an NPU target")
      ("repeats", po::value<int>()->default_value(5), "cpu: timed runs, at least (more while under 50 ms in all)")
      ("threads", po::value<int>()->default_value(0), "cpu: OpenMP threads, 0 = all cores")
      ("seed", po::value<uint64_t>()->default_value(1), "cpu: seed of the random inputs")
      ("trace", po::value<std::string>(), "sim: write the simulated timeline to FILE as Chrome Trace Event JSON "
       "(Perfetto, chrome://tracing)")
      ("trace-full", "sim: with --trace, keep every instruction (default: the first 200000 slices)")
      ("json", "print the result as JSON");
  add_measure_options(options);
  const auto vm = parse_command(
      args, options,
      {"run", "--op OP --shapes DIMS [options]",
       "Compiles the workload for the host target, runs it on this machine's CPU, checks\n"
       "the first run against the op's reference kernel and reports the median time.\n"
       "With an NPU target (--target ascend910b1) the NPU simulator times it instead:\n"
       "simulated time, the bound and how busy each pipe was (--backend model: the cost\n"
       "model's prediction). The exit code is 0 when the result is verified (or\n"
       "simulated), 2 for an infeasible config and 1 for a wrong result or a failed run.",
       "pto-tune run --op matmul --shapes 256,256,256 --config '{\"cube\":{\"m\":[64,64],\"k\":[64,256],\"n\":[64,64]}}'"});
  if (!vm) return 0;

  const int repeats = (*vm)["repeats"].as<int>();
  if (repeats < 1) usage_error("--repeats: expected a positive integer, got " + std::to_string(repeats));
  const Target target = target_from(*vm);
  const Workload w = workload_from(*vm, target);
  const std::string backend = vm->count("backend") ? (*vm)["backend"].as<std::string>() : measure::default_backend(target);
  warn_ignored_options(*vm, backend);
  const TensorGraph graph = build_graph(w);
  const TileConfig config = config_from(*vm, w, graph, target);
  if (vm->count("trace") && backend != "sim") usage_error("--trace needs --backend sim, got '" + backend + "'");
  if (vm->count("trace-full") && !vm->count("trace")) usage_error("--trace-full is an option of --trace PATH");

  measure::RunnerOptions run_options = with_measure_options(*vm, {});
  run_options.min_repetitions = repeats;
  run_options.threads = (*vm)["threads"].as<int>();
  run_options.seed = (*vm)["seed"].as<uint64_t>();
  const measure::Measurement m = measure::make_runner(backend, target, run_options)->measure(w, {config}).at(0);

  if (vm->count("json")) {
    nlohmann::json j = {{"workload", w.key()},      {"target", target.name},
                        {"fingerprint", target.fingerprint()}, {"config", config.to_json()},
                        {"backend", m.backend},     {"simulated", m.simulated}, {"predicted", m.predicted},
                        {"status", measure::status_name(m.status)}, {"verified", m.verified},
                        {"max_abs_err", was_verified(m) ? nlohmann::json(m.max_abs_err) : nlohmann::json()},
                        {"time_ns", m.stats.median_ns},
                        {"p10_ns", m.stats.p10_ns},  {"p90_ns", m.stats.p90_ns},
                        {"repetitions", m.stats.repetitions}, {"predicted_ns", m.predicted_ns}};
    if (!m.detail_json.empty()) j["detail"] = nlohmann::json::parse(m.detail_json);
    if (!m.ok()) j["error"] = m.error;
    print_json(std::cout, j);
  } else {
    std::vector<std::vector<std::string>> rows = {
        {"workload", w.key()},
        {"target", target.name + " (" + target.fingerprint() + ")"},
        {"config", config.to_string()},
        {"backend", m.backend + " (" + m.provenance() + (m.backend == "cpu" ? " on this machine)" : ")")},
        {"status", measure::status_name(m.status)}};
    if (!m.simulated) rows.push_back({"verified", m.verified ? "yes" : "no"});
    if (was_verified(m)) rows.push_back({"max_abs_err", format_error(m.max_abs_err)});
    if (m.ok() && m.simulated) {
      for (auto& row : simulated_rows(m, target)) rows.push_back(std::move(row));
    } else if (m.ok()) {
      rows.push_back({"time", format_ns(m.stats.median_ns) + " median of " +
                                  std::to_string(m.stats.repetitions) + " runs (p10 " +
                                  format_ns(m.stats.p10_ns) + ", p90 " + format_ns(m.stats.p90_ns) + ")"});
    }
    print_table(std::cout, {}, rows);
  }
  if (!m.ok()) std::cerr << "pto-tune: error: " << measure::status_name(m.status) << ": " << m.error << "\n";
  if (m.ok() && vm->count("trace"))
    write_trace((*vm)["trace"].as<std::string>(), vm->count("trace-full") > 0, graph, config, target);
  return exit_code_of(m.status);
}

}  // namespace pto::cli
