// `pto-tune run`: compiles one workload for this host, runs it on the CPU runtime,
// verifies the first run against the op's reference and times repetitions — the
// quickest way to see that a config computes the right thing and how fast. With an
// NPU target it reports the simulator's time instead (or, with --backend model, the
// cost model's prediction), labelled simulated.
//
// It measures through a Runner (measure/runner.h), the same path the tuner takes, so
// what `run` reports is what tuning would record.
#include <cmath>
#include <cstdio>
#include <iostream>

#include "cli/cli.h"
#include "cli/commands.h"
#include "core/error.h"
#include "core/op_library.h"
#include "core/program.h"
#include "measure/runner.h"

namespace pto::cli {

namespace {

std::string format_error(double err) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3g", err);
  return text;
}

std::string percent(double fraction) { return std::to_string(std::lround(fraction * 100)) + "%"; }

// "S 0%  MTE1 12%  MTE2 61%  ..." in pipe order.
std::string pipe_busy(const nlohmann::json& pipes) {
  std::string busy;
  for (int p = 0; p < kNumPipes; ++p) {
    const char* name = pipe_name(static_cast<Pipe>(p));
    if (!pipes.contains(name)) continue;
    busy += (busy.empty() ? "" : "  ") + std::string(name) + " " + percent(pipes[name].get<double>());
  }
  return busy;
}

// The rows of a simulated result: its time and, from the backend's detail
// (measure/sim_runner.cpp, the cost model's estimate), the bound and how busy each
// pipe of each core type was.
std::vector<std::vector<std::string>> simulated_rows(const measure::Measurement& m, const Target& target) {
  const nlohmann::json detail = nlohmann::json::parse(m.detail_json.empty() ? "{}" : m.detail_json);
  std::vector<std::vector<std::string>> rows;
  if (m.backend == "sim") {
    const auto cycles = static_cast<int64_t>(detail.value("cycles", 0.0));
    rows.push_back({"time", format_ns(m.stats.median_ns) + " simulated (" + std::to_string(cycles) + " cycles)"});
  } else {
    rows.push_back({"time", format_ns(m.stats.median_ns) + " predicted by the cost model (simulated)"});
  }
  if (detail.contains("bound")) {
    std::string bound = detail["bound"].get<std::string>();
    if (detail.contains("bound_utilisation")) bound += " (" + percent(detail["bound_utilisation"].get<double>()) + " busy where it ran)";
    rows.push_back({"bound", bound});
  }
  const nlohmann::json by_core = detail.value("pipe_utilisation", nlohmann::json::object());
  const nlohmann::json used = detail.value("cores_used", nlohmann::json::object());
  for (const auto& [core, pipes] : by_core.items()) {
    std::string busy = pipe_busy(pipes);
    if (used.contains(core)) {  // the pipes' mean is over every core; the bound's over the busy ones
      const int64_t all = target.cores(core == "AIC" ? CoreType::AIC : CoreType::AIV);
      busy += "  (mean over " + std::to_string(all) + " cores, " + std::to_string(used[core].get<int64_t>()) +
              " ran tasks)";
    }
    rows.push_back({"pipes " + core, busy});
  }
  return rows;
}

// A config that does not fit is the input's fault; anything else that goes wrong is not.
int exit_code_of(measure::Status status) {
  if (status == measure::Status::OK) return 0;
  return exit_code(status == measure::Status::INFEASIBLE ? ErrorCategory::Infeasible
                                                         : ErrorCategory::Internal);
}

}  // namespace

int run_run(const Args& args) {
  po::options_description options;
  add_workload_options(options);
  add_config_option(options);
  add_target_option(options, "host");
  options.add_options()
      ("backend", po::value<std::string>(),
       "cpu (real time on this host), sim (NPU simulator) or model (cost model only); "
       "default: cpu for the host, sim for an NPU target")
      ("repeats", po::value<int>()->default_value(5), "cpu: timed runs, at least (more while under 50 ms in all)")
      ("threads", po::value<int>()->default_value(0), "cpu: OpenMP threads, 0 = all cores")
      ("seed", po::value<uint64_t>()->default_value(1), "cpu: seed of the random inputs")
      ("json", "print the result as JSON");
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
  const TensorGraph graph = build_graph(w);
  const TileConfig config = config_from(*vm, w, graph, target);

  measure::RunnerOptions run_options;
  run_options.min_repetitions = repeats;
  run_options.threads = (*vm)["threads"].as<int>();
  run_options.seed = (*vm)["seed"].as<uint64_t>();
  const measure::Measurement m = measure::make_runner(backend, target, run_options)->measure(w, {config}).at(0);

  if (vm->count("json")) {
    nlohmann::json j = {{"workload", w.key()},      {"target", target.name},
                        {"fingerprint", target.fingerprint()}, {"config", config.to_json()},
                        {"backend", m.backend},     {"simulated", m.simulated},
                        {"status", measure::status_name(m.status)}, {"verified", m.verified},
                        {"max_abs_err", m.max_abs_err}, {"time_ns", m.stats.median_ns},
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
        {"backend", m.backend + (m.simulated ? " (simulated)" : " (measured on this machine)")},
        {"status", measure::status_name(m.status)}};
    if (!m.simulated) {
      rows.push_back({"verified", m.verified ? "yes" : "no"});
      rows.push_back({"max_abs_err", format_error(m.max_abs_err)});
    }
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
  return exit_code_of(m.status);
}

}  // namespace pto::cli
