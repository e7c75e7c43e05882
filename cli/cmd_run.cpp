// `pto-tune run`: compiles one workload for this host, runs it on the CPU runtime,
// verifies the first run against the op's reference and times repetitions — the
// quickest way to see that a config computes the right thing and how fast.
//
// It measures through the `cpu` Runner (measure/runner.h), the same path the tuner
// takes, so what `run` reports is what tuning would record.
#include <cstdio>
#include <iostream>

#include "cli/cli.h"
#include "cli/commands.h"
#include "core/error.h"
#include "core/op_library.h"
#include "measure/runner.h"

namespace pto::cli {

namespace {

std::string format_ns(double ns) {
  char text[32];
  if (ns >= 1e6) {
    std::snprintf(text, sizeof text, "%.3f ms", ns / 1e6);
  } else if (ns >= 1e3) {
    std::snprintf(text, sizeof text, "%.2f us", ns / 1e3);
  } else {
    std::snprintf(text, sizeof text, "%.0f ns", ns);
  }
  return text;
}

std::string format_error(double err) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3g", err);
  return text;
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
  add_workload_options(options, "fp32");
  add_config_option(options);
  options.add_options()
      ("repeats", po::value<int>()->default_value(5), "timed runs, at least (more while under 50 ms in all)")
      ("threads", po::value<int>()->default_value(0), "OpenMP threads, 0 = all cores")
      ("seed", po::value<uint64_t>()->default_value(1), "seed of the random inputs")
      ("json", "print the result as JSON");
  const auto vm = parse_command(
      args, options,
      {"run", "--op OP --shapes DIMS [options]",
       "Compiles the workload for the host target, runs it on this machine's CPU, checks\n"
       "the first run against the op's reference kernel and reports the median time.\n"
       "The exit code is 0 when the result is verified, 2 for an infeasible config and\n"
       "1 for a wrong result or a failed run.",
       "pto-tune run --op matmul --shapes 256,256,256 --config '{\"cube\":{\"m\":[64,64],\"k\":[64,256],\"n\":[64,64]}}'"});
  if (!vm) return 0;

  const Workload w = workload_from(*vm);
  const int repeats = (*vm)["repeats"].as<int>();
  if (repeats < 1) usage_error("--repeats: expected a positive integer, got " + std::to_string(repeats));
  const Target host = load_target("host");
  const TensorGraph graph = build_graph(w);
  const TileConfig config = config_from(*vm, w, graph, host);

  measure::RunnerOptions run_options;
  run_options.min_repetitions = repeats;
  run_options.threads = (*vm)["threads"].as<int>();
  run_options.seed = (*vm)["seed"].as<uint64_t>();
  const measure::Measurement m = measure::make_runner("cpu", host, run_options)->measure(w, {config}).at(0);

  if (vm->count("json")) {
    nlohmann::json j = {{"workload", w.key()},      {"target", host.name},
                        {"fingerprint", host.fingerprint()}, {"config", config.to_json()},
                        {"status", measure::status_name(m.status)}, {"verified", m.verified},
                        {"max_abs_err", m.max_abs_err}, {"time_ns", m.stats.median_ns},
                        {"p10_ns", m.stats.p10_ns},  {"p90_ns", m.stats.p90_ns},
                        {"repetitions", m.stats.repetitions}};
    if (!m.ok()) j["error"] = m.error;
    print_json(std::cout, j);
  } else {
    std::vector<std::vector<std::string>> rows = {
        {"workload", w.key()},
        {"target", host.name + " (" + host.fingerprint() + ")"},
        {"config", config.to_string()},
        {"status", measure::status_name(m.status)},
        {"verified", m.verified ? "yes" : "no"},
        {"max_abs_err", format_error(m.max_abs_err)}};
    if (m.ok()) {
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
