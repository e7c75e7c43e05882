// `pto-tune lookup`: what the JIT would compile a workload with — the config the tuning
// database serves through db::DbConfigProvider, the PyPTO calls that set it, and where
// it came from (exact, nearest tuned shape, the cost model's pick, the default; stale
// when made under other versions or another description of the target); with --emit
// pypto, the config's PyPTO module (core/pypto_module.h) instead. It never measures and
// never writes the database.
#include <iostream>

#include <nlohmann/json.hpp>

#include "cli/cli.h"
#include "cli/commands.h"
#include "core/op_library.h"
#include "core/pypto_calls.h"
#include "core/pypto_module.h"
#include "db/config_lookup.h"
#include "db/tuning_db.h"

namespace pto::cli {

int run_lookup(const Args& args) {
  po::options_description options;
  add_workload_options(options);
  add_target_option(options, "host");
  options.add_options()
      ("backend", po::value<std::string>(),
       "serve only records measured on this backend (npu, cpu, sim, model); default: any, "
       "measured before simulated before predicted")
      ("db", po::value<std::string>(), "tuning database file; default $PTO_TUNE_DB, else ~/.cache/pto-tune/tune.db")
      ("json", po::bool_switch(), "print JSON: workload, target, config, source, from_shape, stale, stale_reason, pypto, db");
  add_emit_option(options);
  const auto vm = parse_command(
      args, options,
      {"lookup", "--op OP --shapes DIMS [options]",
       "Prints the config the JIT would use for a workload, the PyPTO calls that set it,\n"
       "and where it came from: exact (tuned for this shape), nearest (the tuned config of\n"
       "the nearest shape that still fits), model (the cost model's pick) or default. A\n"
       "record made by another compiler or cost-model version, or for another description\n"
       "of the target, is reported as stale. Nothing is measured or written. --emit pypto\n"
       "prints the config as a Python module to import in a PyPTO kernel instead.",
       "pto-tune lookup --op matmul --shapes 1000,4096,1024 --dtype fp16 --target ascend910b1 --db tune.db\n"
       "  pto-tune lookup --op softmax --shapes 1000,4096 --target ascend910b1 --emit pypto > softmax_tiles.py"});
  if (!vm) return 0;
  const bool emit_pypto = emit_pypto_from(*vm);
  const Target target = target_from(*vm);
  const Workload w = workload_from(*vm, target);
  build_graph(w);  // a bad workload is a usage error before any lookup
  const std::string path = db::resolve_db_path(vm->count("db") ? std::optional((*vm)["db"].as<std::string>()) : std::nullopt);
  db::LookupOptions lookup_options;
  if (vm->count("backend")) lookup_options.backends = {(*vm)["backend"].as<std::string>()};
  db::DbConfigProvider provider(path, lookup_options);
  const ConfigChoice choice = provider.choose(w, target);

  if (emit_pypto) {
    const ModuleNote note{"pto-tune lookup in " + path + ": " + config_source_name(choice.source) +
                              (choice.from_shape ? " (nearest tuned shape " + shape_str(*choice.from_shape) + ")" : ""),
                          choice.stale ? "stale: " + choice.stale_reason : ""};
    std::cout << pypto_module(w, target, choice.config, note);
    return 0;
  }
  if ((*vm)["json"].as<bool>()) {
    nlohmann::json j{{"workload", w.key()},
                     {"target", target.name},
                     {"config", choice.config.to_json()},
                     {"source", config_source_name(choice.source)},
                     {"from_shape", nullptr},
                     {"stale", choice.stale},
                     {"stale_reason", choice.stale_reason},
                     {"pypto", pypto_calls(choice.config)},
                     {"db", path}};
    if (choice.from_shape) j["from_shape"] = *choice.from_shape;
    print_json(std::cout, j);
    return 0;
  }
  std::cout << "# " << w.key() << " on " << target.name << " (" << provider.size() << " tuned records in "
            << path << ")\n"
            << "source: " << choice.describe() << "\n"
            << "config: " << choice.config.to_string() << "\n"
            << pypto_snippet(choice.config) << "\n";
  return 0;
}

}  // namespace pto::cli
