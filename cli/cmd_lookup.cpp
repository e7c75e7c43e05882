// `pto-tune lookup`: what the JIT would compile a workload with — the config its
// fallback order serves (core/config_chain.h: the tuning database's db::DbConfigProvider,
// then the cost model's pick, then the default), the PyPTO calls that set it, and where
// it came from (exact, nearest tuned shape, the cost model's pick, the default; stale
// when made under other versions or another description of the target); with --emit
// pypto, the config's PyPTO module (core/pypto_module.h) instead, with --dynamic DIM a
// tile set per bucket of that dim's size. It never measures and never writes the
// database; one it cannot read is a warning and the answer it would give without one
// (with --strict, the error: exit 2).
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iostream>

#include <nlohmann/json.hpp>

#include "cli/cli.h"
#include "cli/commands.h"
#include "cli/fraction.h"
#include "core/format_number.h"
#include "core/config_chain.h"
#include "core/error.h"
#include "core/op_library.h"
#include "core/pypto_calls.h"
#include "core/pypto_module.h"
#include "cost_model/format_ns.h"
#include "db/config_lookup.h"
#include "db/tuning_db.h"
#include "measure/runner.h"
#include "search/model_pick.h"

namespace pto::cli {

namespace {

// The index of the op's dim called `name` (its --shapes order); a usage error lists them.
int dim_named(const Workload& w, const std::string& name) {
  const std::vector<std::string>& dims = find_op(w.op).dims;
  const auto it = std::find(dims.begin(), dims.end(), name);
  if (it != dims.end()) return static_cast<int>(it - dims.begin());
  std::string known;
  for (const std::string& d : dims) known += (known.empty() ? "" : ", ") + d;
  usage_error("--dynamic: " + w.op + " has no dim '" + name + "' (its dims: " + known + ")");
}

// The sizes of dim `dim` tuned in the database for `w` but for that dim, on `t`, and w's own.
Shape tuned_sizes(const db::DbConfigProvider& provider, const Workload& w, int dim, const Target& t) {
  Shape sizes = {w.shape[dim]};
  const std::string& path = provider.location();
  if (!provider.load_warning().empty() || !std::filesystem::exists(path)) return sizes;
  auto same_but_dim = [&](Workload other) {
    other.shape[dim] = w.shape[dim];
    return other.key() == w.key();
  };
  for (const search::TuningRecord& r : db::TuningDb::open(path, db::OpenMode::ReadOnly)->best_records(w.op))
    if (r.target_fingerprint == t.fingerprint() && r.workload.shape.size() == w.shape.size() && same_but_dim(r.workload))
      sizes.push_back(r.workload.shape[dim]);
  std::sort(sizes.begin(), sizes.end());
  sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
  return sizes;
}

Shape bucket_bounds(const po::variables_map& vm, const db::DbConfigProvider& provider, const Workload& w, int dim,
                    const Target& t) {
  if (!vm.count("buckets")) return tuned_sizes(provider, w, dim, t);
  const Shape bounds = parse_shape_list(vm["buckets"].as<std::string>());
  if (!std::is_sorted(bounds.begin(), bounds.end()) || std::adjacent_find(bounds.begin(), bounds.end()) != bounds.end())
    usage_error("--buckets: the bounds must rise, got " + shape_str(bounds));
  return bounds;
}

// With --dynamic: the config the JIT would use at each bucket's bound.
ShapeBuckets shape_buckets(const po::variables_map& vm, const Workload& w, const Target& t,
                           const db::DbConfigProvider& provider, ConfigChain& lookup) {
  if (vm.count("buckets") && !vm.count("dynamic")) usage_error("--buckets needs --dynamic DIM");
  if (!vm.count("dynamic")) return {};
  ShapeBuckets out;
  out.dim_name = vm["dynamic"].as<std::string>();
  out.dim = dim_named(w, out.dim_name);
  for (int64_t bound : bucket_bounds(vm, provider, w, out.dim, t)) {
    Workload at = w;
    at.shape[out.dim] = bound;
    const ConfigChoice choice = lookup.choose(at, t);
    out.buckets.push_back({bound, choice.config, at.key() + ": " + choice.describe()});
  }
  return out;
}

// Whether candidate `c` of a transfer's ranking is the one served, `choice` (the
// default, or the neighbour whose tuned shape the choice names).
bool served(const ConfigChoice& choice, const db::TransferCandidate& c) {
  if (choice.source == ConfigSource::Default) return !c.from_shape;
  return c.from_shape && choice.from_shape && *c.from_shape == *choice.from_shape && c.config == choice.config;
}

// With --explain: the candidates a transfer ranked, each priced for this shape, and why
// the winner won.
nlohmann::json explanation_json(const db::LookupExplanation& e, const ConfigChoice& choice) {
  nlohmann::json candidates = nlohmann::json::array();
  for (const db::TransferCandidate& c : e.candidates)
    candidates.push_back({{"from_shape", c.from_shape ? nlohmann::json(*c.from_shape) : nlohmann::json(nullptr)},
                          {"default", !c.from_shape},
                          {"config", c.config.to_json()},
                          {"recut", c.recut},
                          {"predicted_ns", std::isfinite(c.predicted_ns) ? nlohmann::json(c.predicted_ns) : nullptr},
                          {"correction", c.correction},
                          {"near", c.near},
                          {"margin", c.margin},
                          {"served", served(choice, c)}});
  return {{"candidates", candidates}, {"margin", e.margin}, {"margin_basis", e.margin_basis},
          {"winner", choice.describe()}, {"reason", choice.reason}};
}

void print_explanation(const db::LookupExplanation& e, const ConfigChoice& choice) {
  if (e.candidates.empty()) {
    std::cout << "explain: no transfer ranking took place (" << choice.describe() << ")\n";
    return;
  }
  const double fallback = e.candidates.front().predicted_ns;
  std::cout << "transfer candidates, priced for this shape by the cost model, each neighbour's within an octave "
               "corrected by the model's measured error on its lead over the default at its own shape (a neighbour's "
               "config is served only when the default is predicted slower by more than its margin: "
            << format_number("%.1f", 100 * e.margin) << " %, " << e.margin_basis << "):\n";
  std::vector<std::vector<std::string>> rows;
  for (const db::TransferCandidate& c : e.candidates) {
    const bool finite = std::isfinite(c.predicted_ns);
    rows.push_back({c.from_shape ? "tuned " + shape_dims(*c.from_shape) + (c.recut ? ", re-cut" : "") : "the op's default",
                    finite ? format_ns(c.predicted_ns) : "does not fit",
                    finite && c.from_shape ? format_number("%+.1f %%", 100 * (c.predicted_ns / fallback - 1)) : "",
                    c.correction != 1 ? format_number("x%.3f", c.correction) : "",
                    c.from_shape ? format_number("%.1f %%", 100 * c.margin) : "", served(choice, c) ? "served" : "",
                    c.config.to_string()});
  }
  print_table(std::cout, {"candidate", "predicted", "vs default", "corrected", "margin", "", "config"}, rows);
  std::cout << "winner: " << choice.describe() << "\n";
}

}  // namespace

int run_lookup(const Args& args) {
  po::options_description options;
  add_workload_options(options);
  add_target_option(options, "host");
  options.add_options()
      ("backend", po::value<std::string>(),
       "serve only records measured on this backend (npu, cpu, sim, model); default: any, "
       "measured before simulated before predicted")
      ("db", po::value<std::string>(), "tuning database file; default $PTO_TUNE_DB, else ~/.cache/pto-tune/tune.db")
      ("strict", po::bool_switch(),
       "a database that cannot be read (corrupt, not a tuning database, unreadable) is an error (exit 2) instead "
       "of a warning and the answer without it (the model's pick or the default)")
      ("json", po::bool_switch(),
       "print JSON: workload, target, config, source, from_shape, reason, stale, stale_reason, pypto, db (and "
       "explain with --explain)")
      ("transfer-margin", po::value<std::string>(),
       "how much faster than the op's default the cost model must predict a tuned neighbour's config for a "
       "transfer to serve it, the same for every config. By default learned from the records: the model's "
       "measured error at the tuned shapes ranked, else on all the configs tuned for the op, and the larger of "
       "the two for a config that cuts the shape into another count of tiles than its own "
       "(db::LookupOptions::learn_margin), else 3%; 0 serves the model's pick")
      ("no-lead-correction", po::bool_switch(),
       "rank the tuned neighbours' configs by the cost model alone; by default each one's predicted time is "
       "corrected by how far the model misjudged that config's lead over the default at its own tuned shape")
      ("explain", po::bool_switch(),
       "also list the candidates a transfer ranked for an untuned shape (the tuned neighbours' configs and the "
       "op's default, each with the cost model's time for this shape and the margin it must clear), the winner "
       "and why")
      ("dynamic", po::value<std::string>(),
       "with --emit pypto: the op's dim (by name, e.g. M) that is pypto.DYNAMIC in the kernel; the module gets "
       "a tile set per bucket of its size and a tiles_for(shape) that picks one")
      ("buckets", po::value<std::string>(),
       "with --dynamic: the buckets' upper bounds, rising (e.g. 16,128,1024,8192); default: the sizes of that "
       "dim tuned in the database with the other dims as --shapes gives them, and --shapes' own");
  add_emit_option(options);
  const auto vm = parse_command(
      args, options,
      {"lookup", "--op OP --shapes DIMS [options]",
       "Prints the config the JIT would use for a workload, the PyPTO calls that set it,\n"
       "and where it came from: exact (tuned for this shape), nearest (the tuned config of\n"
       "the nearest shape that still fits), transfer (a tuned neighbour's config the cost\n"
       "model ranks above the op's default by more than its error), model (the cost\n"
       "model's pick) or default; --explain lists what a transfer ranked. A\n"
       "record made by another compiler or cost-model version, or for another description\n"
       "of the target, is reported as stale. Nothing is measured or written. A database\n"
       "that cannot be read is warned about on stderr and served as if missing, unless\n"
       "--strict. --emit pypto prints the config as a Python module to import in a PyPTO\n"
       "kernel instead.",
       "pto-tune lookup --op matmul --shapes 1000,4096,1024 --dtype fp16 --target ascend910b1 --db tune.db\n"
       "  pto-tune lookup --op softmax --shapes 1000,4096 --target ascend910b1 --emit pypto > softmax_tiles.py\n"
       "  pto-tune lookup --op matmul --shapes 4096,4096,4096 --target ascend910b1 --emit pypto --dynamic M"});
  if (!vm) return 0;
  const bool emit_pypto = emit_pypto_from(*vm);
  const Target target = target_from(*vm);
  const Workload w = workload_from(*vm, target);
  build_graph(w);  // a bad workload is a usage error before any lookup
  const std::string path = db::resolve_db_path(vm->count("db") ? std::optional((*vm)["db"].as<std::string>()) : std::nullopt);
  db::LookupOptions lookup_options;
  if (vm->count("backend")) {
    const std::string backend = (*vm)["backend"].as<std::string>();
    measure::check_backend_name(backend);
    lookup_options.backends = {backend};
  }
  lookup_options.strict = (*vm)["strict"].as<bool>();
  if (vm->count("transfer-margin")) {
    lookup_options.transfer_margin = parse_fraction("--transfer-margin", (*vm)["transfer-margin"].as<std::string>(), true);
    lookup_options.learn_margin = false;
  }
  lookup_options.correct_by_neighbour_leads = !(*vm)["no-lead-correction"].as<bool>();
  const auto provider = std::make_shared<db::DbConfigProvider>(path, lookup_options);
  ConfigChain lookup({provider, std::make_shared<search::ModelPickProvider>(provider->model_sources())});
  const bool explain = (*vm)["explain"].as<bool>();
  if (explain && emit_pypto) usage_error("--explain is an option of the text and --json output, not of --emit pypto");
  const db::LookupExplanation explanation = explain ? provider->explain(w, target) : db::LookupExplanation{};
  const ConfigChoice choice = explanation.choice ? *explanation.choice : lookup.choose(w, target);
  if (!emit_pypto && vm->count("dynamic")) usage_error("--dynamic is an option of --emit pypto");
  const ShapeBuckets buckets = shape_buckets(*vm, w, target, *provider, lookup);

  if (emit_pypto) {
    const ModuleNote note{"pto-tune lookup in " + path + ": " + config_source_name(choice.source) +
                              (choice.from_shape ? " (nearest tuned shape " + shape_str(*choice.from_shape) + ")" : ""),
                          choice.stale ? "stale: " + choice.stale_reason : ""};
    std::cout << pypto_module(w, target, choice.config, note, buckets);
    return 0;
  }
  if ((*vm)["json"].as<bool>()) {
    nlohmann::json j{{"workload", w.key()},
                     {"target", target.name},
                     {"config", choice.config.to_json()},
                     {"source", config_source_name(choice.source)},
                     {"from_shape", nullptr},
                     {"reason", choice.reason},
                     {"stale", choice.stale},
                     {"stale_reason", choice.stale_reason},
                     {"pypto", pypto_calls(choice.config)},
                     {"db", path}};
    if (choice.from_shape) j["from_shape"] = *choice.from_shape;
    if (explain) j["explain"] = explanation_json(explanation, choice);
    print_json(std::cout, j);
    return 0;
  }
  std::cout << "# " << w.key() << " on " << target.name << " (" << provider->size() << " tuned records in "
            << path << ")\n"
            << "source: " << choice.describe() << "\n"
            << "config: " << choice.config.to_string() << "\n"
            << pypto_snippet(choice.config) << "\n";
  if (explain) print_explanation(explanation, choice);
  return 0;
}

}  // namespace pto::cli
