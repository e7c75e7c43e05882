// `pto-tune explain`: the cost model's view of one config — predicted time, where the
// time goes per pipe, what bounds it and, for matmul, the arithmetic intensity — or,
// for an infeasible config, every violated rule. It is how a developer reads why one
// tile shape beats another before measuring anything.
//
// Calibrated coefficients (cost_model/calibration_store.h) are used when a fit for this
// target exists under --calibration; the output says which coefficients it used.
#include <algorithm>
#include <filesystem>
#include <iostream>

#include <nlohmann/json.hpp>

#include "cli/cli.h"
#include "cli/commands.h"
#include "core/error.h"
#include "core/op_library.h"
#include "cost_model/calibration_store.h"
#include "cost_model/estimate.h"
#include "measure/runner.h"

namespace pto::cli {

namespace {

// --backend names a backend and an explicit --calibration an existing folder; either
// mistyped would otherwise fall back to the datasheet figures without a word.
void check_calibration_options(const po::variables_map& vm) {
  if (vm.count("backend")) {
    const std::string backend = vm["backend"].as<std::string>();
    const std::vector<std::string> known = measure::backend_names();
    if (std::find(known.begin(), known.end(), backend) == known.end())
      usage_error("--backend: unknown backend '" + backend + "' (known: " + join(known, ", ") + ")");
  }
  const std::string dir = vm["calibration"].as<std::string>();
  std::error_code ec;
  if (!vm["calibration"].defaulted() && !dir.empty() && !std::filesystem::is_directory(dir, ec))
    usage_error("--calibration: '" + dir + "' is not a folder (give the folder 'pto-tune calibrate' "
                "writes to, or '' for the datasheet figures)");
}

// The coefficients explain predicts with: a saved fit for (target, backend) if any.
Coefficients coefficients_for(const po::variables_map& vm, const Target& target,
                              std::string& provenance) {
  const std::string dir = vm["calibration"].as<std::string>();
  const std::string backend =
      vm.count("backend") ? vm["backend"].as<std::string>() : measure::default_backend(target);
  if (!dir.empty()) {
    if (auto fitted = usable_calibration(dir, target, backend)) {
      provenance = "calibrated on " + std::to_string(fitted->samples) + " " + backend + " measurements";
      if (fitted->host_prices) provenance += ", at prices " + fitted->host_prices->source;
      return *fitted;
    }
  }
  provenance = "uncalibrated (datasheet figures)";
  return Coefficients::defaults(target);
}

}  // namespace

int run_explain(const Args& args) {
  po::options_description options;
  add_workload_options(options);
  add_target_option(options, "ascend910b1");
  add_config_option(options);
  options.add_options()
      ("calibration", po::value<std::string>()->default_value(default_calibration_dir()),
       "folder of calibrated coefficients (one JSON per target and backend), as 'pto-tune "
       "calibrate' writes them; '' for the datasheet figures")
      ("backend", po::value<std::string>(),
       "which backend's calibration to use from --calibration; default: sim for an NPU target, cpu for the host")
      ("json", po::bool_switch(), "print JSON (feasible, violations, predicted_ns, breakdown, bound, ...)");
  const auto vm = parse_command(
      args, options,
      {"explain", "--op OP --shapes DIMS [options]",
       "Scores one config with the analytical cost model and says why: predicted time,\n"
       "per-pipe busy time, what bounds the kernel (cube, vector, MTE2/HBM, L2,\n"
       "launch/latency, imbalance), and for matmul the arithmetic intensity against the\n"
       "machine balance. An infeasible config lists every violated rule instead.\n"
       "Figures are predictions, not measurements.",
       "pto-tune explain --op matmul --shapes 6144,6144,6144 --dtype fp16 --target ascend910b1 "
       "--config '{\"cube\":{\"m\":[128,128],\"k\":[64,256],\"n\":[256,256]},\"l2_group\":[6,4]}'"});
  if (!vm) return 0;

  check_calibration_options(*vm);
  const Target target = target_from(*vm);
  const Workload w = workload_from(*vm, target);
  const TensorGraph graph = build_graph(w);
  const TileConfig config = config_from(*vm, w, graph, target);
  std::string provenance;
  const CostModel model(graph, target, coefficients_for(*vm, target, provenance));
  const Estimate estimate = model.estimate(config);

  if ((*vm)["json"].as<bool>()) {
    nlohmann::json j = estimate.to_json();
    j["workload"] = w.key();
    j["target"] = target.name;
    j["config"] = config.to_json();
    j["coefficients"] = provenance;
    print_json(std::cout, j);
  } else {
    std::cout << "# " << w.key() << " on " << target.name << ", predicted by the cost model, "
              << provenance << "\n# config " << config.to_string() << "\n"
              << estimate.to_table();
  }
  return estimate.feasible ? 0 : 2;
}

}  // namespace pto::cli
