// `pto-tune tune` (also `pto-tune --op ...` with no command word): tunes one workload —
// the product. It builds the workload's runner (cpu on the host, sim on an NPU target)
// and opens the tuning database, hands both to the tuner (search/tuner.h), and prints
// the winner as the PyPTO calls a user pastes (core/pypto_calls.h), its time beside
// the default's, and what the search did; with --emit pypto, the winner's PyPTO module
// (core/pypto_module.h) instead.
//
// A progress bar with an ETA goes to stderr when it is a terminal. Ctrl-C stops the
// tuner after the measurement in flight: everything measured is already stored, the
// best so far is printed, and the process then ends by SIGINT (cli/interrupt.h).
#include <cmath>
#include <iostream>

#include <nlohmann/json.hpp>

#include "cli/cli.h"
#include "cli/commands.h"
#include "core/format_number.h"
#include "cli/interrupt.h"
#include "cli/progress.h"
#include "core/error.h"
#include "core/pypto_calls.h"
#include "core/pypto_module.h"
#include "cost_model/format_ns.h"
#include "db/tuning_db.h"
#include "measure/runner.h"
#include "search/tune_request.h"
#include "search/tuner.h"

namespace pto::cli {

namespace {

// How a time of this backend is labelled: measured, simulated or predicted.
std::string time_kind(const std::string& backend) {
  if (backend == "cpu" || backend == "command" || backend == "npu") return "measured";
  if (backend == "sim") return "simulated";
  return "predicted by the cost model";
}

std::string failed_by_status(const search::TuneCounts& counts) {
  if (counts.failed.empty()) return "0";
  std::string by_status;
  for (const auto& [status, n] : counts.failed) by_status += (by_status.empty() ? "" : ", ") + status + " " + std::to_string(n);
  return std::to_string(counts.failed_total()) + " (" + by_status + ")";
}

std::string times(double ratio) { return format_number("%.2fx", ratio); }

std::string seconds(double s) { return format_number("%.1f s", s); }

// `calibrated`: whether `pto-tune calibrate` has fitted the model's predictions for this
// target and backend. An uncalibrated host model prices another machine's cycles, so its
// absolute times can be off severalfold (its ranking far less so).
// `calibratable`: whether `pto-tune calibrate` can fit them (it fits to backends that
// measure in this build, not to a user's measure command).
void print_text(const search::TuneResult& r, bool interrupted, bool calibrated, bool calibratable) {
  const search::TuningRecord& best = r.best;
  const std::string kind = time_kind(r.backend);
  std::cout << "# tuned " << r.workload.key() << " on " << r.target_name << " (" << r.target_fingerprint << ") with "
            << r.backend << ", strategy " << r.strategy << "\n"
            << (r.has_default() && best.config == r.baseline.config
                    ? "# nothing beat the op's default config; it stays the best\n"
                    : "")
            << (r.has_default() ? "" : "# the op's default config does not fit " + r.target_name + "; searched without it\n")
            << "best config, as PyPTO calls:\n"
            << pypto_snippet(best.config, "  ") << "\n\n";
  std::string best_time = format_ns(best.time_ns()) + " " + kind;
  if (best.measurement.predicted_ns > 0 && r.backend != "model")
    best_time += " (predicted " + format_ns(best.measurement.predicted_ns) +
                 (calibrated     ? ", calibrated model)"
                  : calibratable ? " by the uncalibrated model: 'pto-tune calibrate' fits it)"
                                 : " by the uncalibrated model)");
  if (r.best_spread > 0) best_time += ", spread " + std::to_string(std::lround(r.best_spread * 100)) + "%";
  std::vector<std::vector<std::string>> rows = {
      {"best", best_time},
      {"default", r.has_default() ? format_ns(r.baseline.time_ns()) + " " + kind + "  " + r.baseline.config.to_string()
                                  : "infeasible: " + r.baseline.config.to_string() + "\n" + r.baseline.measurement.error},
      {"speedup", r.has_default() ? times(r.speedup_vs_default) + " over the default" : "no feasible default"},
      {"candidates", std::to_string(r.counts.total) + " in the space, " + std::to_string(r.counts.feasible) +
                         " feasible seen, " + std::to_string(r.counts.measured) + " measured, " +
                         (r.counts.reused ? std::to_string(r.counts.reused) + " from the database, " : "") +
                         failed_by_status(r.counts) + " failed"},
      {"elapsed", seconds(r.elapsed_s)},
      {"stored in", r.store_location},
      {"config", best.config.to_string()}};
  if (r.stopped) rows.push_back({"stopped", interrupted ? "by Ctrl-C; everything measured is stored" : "by the time limit"});
  print_table(std::cout, {}, rows);
}

// Where the winner came from, for the module's header.
ModuleNote provenance(const search::TuneResult& r) {
  ModuleNote note;
  note.source = "pto-tune tune, " + r.backend + " backend, strategy " + r.strategy + ": " +
                format_ns(r.best.time_ns()) + " " + time_kind(r.backend);
  if (r.has_default()) note.source += " (the default config: " + format_ns(r.baseline.time_ns()) + ")";
  if (r.stopped) note.caveat = "the search was stopped early: the best config measured so far";
  return note;
}

}  // namespace

int run_tune(const Args& args) {
  po::options_description options;
  add_workload_options(options);
  add_target_option(options, "host");
  options.add_options()
      ("backend", po::value<std::string>(),
       "cpu (real time on this host), sim (NPU simulator), model (cost model only), command or npu "
       "(your own measurement, with --measure-cmd); default: cpu for the host, sim for an NPU target")
      ("strategy", po::value<std::string>()->default_value("auto"),
       "auto, topk, evolve, exhaustive or random; auto picks by the size of the space and says which")
      ("budget", po::value<int64_t>()->default_value(0),
       "measurements at most, the default config's included; 0 = the strategy decides")
      ("time-limit", po::value<double>()->default_value(0), "wall-time limit in seconds; 0 = none")
      ("seed", po::value<uint64_t>()->default_value(1), "seed of the search (the same seed, the same search)")
      ("retune", po::bool_switch(),
       "measure again the configs the database already holds records of (same target, backend and versions); "
       "without it they are taken as measured and count against the budget")
      ("db", po::value<std::string>(),
       "tuning database file; default: $PTO_TUNE_DB, else ~/.cache/pto-tune/tune.db")
      ("json", po::bool_switch(), "print the result as JSON");
  add_emit_option(options);
  add_measure_options(options);
  const auto vm = parse_command(
      args, options,
      {"tune", "--op OP --shapes DIMS [options]   (or: pto-tune --op OP --shapes DIMS [options])",
       "Tunes one workload: searches its tile configs with the cost model, measures the\n"
       "promising ones (cpu: real time on this host, verified; sim: the NPU simulator;\n"
       "model: the cost model's prediction), always measures the op's default config,\n"
       "and stores every measurement in the tuning database, where 'pto-tune lookup' and\n"
       "the JIT find the winner. Prints the winner as PyPTO calls, its time against the\n"
       "default's and what the search did. Ctrl-C stops after the measurement in flight\n"
       "and keeps what was measured; a second Ctrl-C exits at once. The database is the\n"
       "search's memory: what it already holds for this workload (same target, backend\n"
       "and versions) is taken as measured, so a rerun measures nothing new unless\n"
       "--retune or a larger --budget asks for more. --emit pypto prints\n"
       "the winner as a Python module to import in a PyPTO kernel instead: its tiles per\n"
       "stage, apply(pypto) making the setter calls, and the op's kernel body.",
       "pto-tune tune --op matmul --shapes 1024,1024,1024 --budget 32\n"
       "  pto-tune tune --op matmul --shapes 4096,4096,4096 --target ascend910b1 --backend npu \\\n"
       "      --measure-cmd 'python3 examples/npu/measure_pypto.py --kernel my_matmul.py'\n"
       "  pto-tune tune --op matmul --shapes 4096,4096,4096 --target ascend910b1 --emit pypto > matmul_tiles.py"});
  if (!vm) return 0;
  const bool emit_pypto = emit_pypto_from(*vm);

  const Target target = target_from(*vm);
  search::TuneRequest request = tune_request_from(*vm, workload_from(*vm, target), target);
  request.time_limit_s = (*vm)["time-limit"].as<double>();
  request.retune = (*vm)["retune"].as<bool>();
  // Checked before anything opens; on the cpu the search times each candidate briefly,
  // for a ranking, and the finalists are re-measured with the full timing.
  search::ResolvedTune job = search::resolve(request, tune_flag_names());
  const Workload& w = request.workload;
  search::TuneOptions& tune_options = job.options;
  const std::optional<std::string> db_flag =
      vm->count("db") ? std::optional<std::string>((*vm)["db"].as<std::string>()) : std::nullopt;
  const std::unique_ptr<db::TuningDb> db = db::TuningDb::open(db::resolve_db_path(db_flag));
  db->remember_target(target);  // the lookup finds the target its records were tuned for

  InterruptStop interrupt;
  tune_options.stop = interrupt.flag();
  ProgressBar bar("tuning " + w.key());
  tune_options.progress = [&](int64_t done, int64_t planned) { bar.update(done, planned); };
  const search::TuneResult result = search::tune(w, target, *job.runners.search, *db, tune_options);
  bar.finish();

  if (emit_pypto) {
    std::cout << pypto_module(w, target, result.best.config, provenance(result));
  } else if ((*vm)["json"].as<bool>()) {
    nlohmann::json j = result.to_json();
    j["best"]["pypto"] = pypto_calls(result.best.config);
    j["stopped"] = result.stopped;
    j["interrupted"] = interrupt.interrupted();
    j["model_calibrated"] = job.calibrated;
    print_json(std::cout, j);
  } else {
    const std::vector<std::string> calibratable = measure::measuring_backends(target);
    print_text(result, interrupt.interrupted(), job.calibrated,
               std::find(calibratable.begin(), calibratable.end(), job.backend) != calibratable.end());
  }
  interrupt.reraise_if_interrupted();
  return 0;
}

}  // namespace pto::cli
