#include "cli/cli.h"

#include <algorithm>
#include <cctype>
#include <iostream>
#include <typeinfo>

#include "core/analyze.h"
#include "core/error.h"
#include "core/expression.h"
#include "core/op_library.h"
#include "core/warning.h"

namespace pto::cli {
namespace {

// Boost reads "-1" into an unsigned option as 2^64 - 1 without a word; a negative seed,
// count or shard is a mistake to report, not a number to wrap.
void reject_negative_unsigned(const po::parsed_options& parsed, const po::variables_map& vm) {
  for (const po::option& o : parsed.options) {
    const auto it = vm.find(o.string_key);
    if (it == vm.end() || it->second.value().type() != typeid(uint64_t)) continue;
    for (const std::string& text : o.value)
      if (text.find('-') != std::string::npos)
        usage_error("--" + o.string_key + ": expected a non-negative integer, got '" + text + "'");
  }
}

}  // namespace

std::optional<po::variables_map> parse_command(const std::vector<std::string>& args,
                                               const po::options_description& options,
                                               const CommandHelp& help) {
  po::options_description all("Options");
  all.add_options()("help,h", "show this help");
  for (const auto& option : options.options()) all.add(option);  // one list, no group gap
  po::variables_map vm;
  try {
    const po::parsed_options parsed = po::command_line_parser(args).options(all).run();
    // Boost drops words that belong to no option; a stray word is a mistake to report.
    const auto stray = po::collect_unrecognized(parsed.options, po::include_positional);
    if (!stray.empty()) usage_error("unexpected argument '" + stray.front() + "' (see 'pto-tune " + help.name + " --help')");
    po::store(parsed, vm);
    reject_negative_unsigned(parsed, vm);
    if (vm.count("help")) {
      std::cout << "Usage: pto-tune " << help.name << " " << help.usage << "\n\n"
                << help.summary << "\n\nExample:\n  " << help.example << "\n\n"
                << all << "\n";
      return std::nullopt;
    }
    po::notify(vm);
  } catch (const po::error& e) {
    usage_error(std::string(e.what()) + " (see 'pto-tune " + help.name + " --help')");
  }
  return vm;
}

void add_workload_options(po::options_description& options) {
  options.add_options()
      ("op", po::value<std::string>()->required(), "operator (see 'pto-tune ops')")
      ("shapes", po::value<std::string>()->required(),
       "sizes of the op's signature, e.g. 4096,4096,4096 (or 4096x4096x4096)")
      ("dtype", po::value<std::string>(), kDtypeHelp)
      ("attrs", po::value<std::string>()->default_value(""),
       "op attributes, e.g. causal=1,transpose_b=0");
  add_expr_option(options);
}

void add_expr_option(po::options_description& options) {
  options.add_options()("expr", po::value<std::string>(),
                        "the elementwise op's expression: calls of add, sub, mul, div, maximum, minimum, exp, log, "
                        "sqrt, rsqrt, abs, neg, erf, erfc, tanh on tensors (lowercase names, the inputs) and "
                        "numbers, e.g. 'mul(add(a,b),2.0)'");
}

std::string expr_from(const po::variables_map& vm) {
  return vm.count("expr") ? canonical_expression(vm["expr"].as<std::string>()) : std::string();
}

Workload workload_from(const po::variables_map& vm, const Target& target) {
  Workload w;
  w.op = find_op(vm["op"].as<std::string>()).name;
  w.shape = parse_shape_list(vm["shapes"].as<std::string>());
  w.dtype = vm.count("dtype") ? parse_dtype(vm["dtype"].as<std::string>()) : search::default_dtype(target);
  w.attrs = parse_attrs(vm["attrs"].as<std::string>());
  w.expr = expr_from(vm);
  return w;
}

void add_op_filter_option(po::options_description& options) {
  options.add_options()("op", po::value<std::string>()->default_value(""), "only this operator's records");
}

std::string op_filter_from(const po::variables_map& vm) {
  const std::string op = vm["op"].as<std::string>();
  return op.empty() ? op : find_op(op).name;
}

void add_target_option(po::options_description& options, const std::string& default_target) {
  options.add_options()("target", po::value<std::string>()->default_value(default_target),
                        "a built-in target (see 'pto-tune targets') or the path of a target JSON file");
}

Target target_from(const po::variables_map& vm) { return load_target(vm["target"].as<std::string>()); }

void add_config_option(po::options_description& options) {
  options.add_options()("config", po::value<std::string>(),
                        "tile config as JSON, or @FILE to read it from a file; default: the "
                        "op's hand-picked config fitted to the shape and target");
}

void add_emit_option(po::options_description& options) {
  options.add_options()("emit", po::value<std::string>(),
                        "pypto: print the PyPTO module of the config (its tiles per stage, apply(), the kernel "
                        "with its fusion scopes and L2 loops, JIT_OPTIONS) instead of the report");
}

bool emit_pypto_from(const po::variables_map& vm) {
  if (!vm.count("emit")) return false;
  const std::string format = vm["emit"].as<std::string>();
  if (format != "pypto") usage_error("--emit: unknown format '" + format + "' (known: pypto)");
  if (vm.count("json") && vm["json"].as<bool>()) usage_error("--emit pypto and --json: give one of them");
  return true;
}

void add_measure_options(po::options_description& options) {
  options.add_options()
      ("measure-cmd", po::value<std::string>(),
       "command, npu: the shell command that measures each batch of candidates, reading the request "
       "(JSON) on stdin and printing the answer (docs/measure_protocol.md), e.g. "
       "'python3 examples/npu/measure_pypto.py --kernel my_kernel.py'")
      ("timeout", po::value<double>()->default_value(30),
       "seconds one candidate may take (cpu: compile, verify and timed runs in a child process; "
       "command, npu: its share of the command's run) before it is stopped and reported as TIMEOUT");
}

measure::RunnerOptions with_measure_options(const po::variables_map& vm, measure::RunnerOptions options) {
  options.timeout_s = vm["timeout"].as<double>();
  if (vm.count("measure-cmd")) {
    options.measure_command = vm["measure-cmd"].as<std::string>();
    if (options.measure_command.find_first_not_of(" \t") == std::string::npos)
      usage_error("--measure-cmd: expected a shell command, got '" + options.measure_command + "'");
  }
  return options;
}

search::FieldNames tune_flag_names() { return {.strategy = "--strategy", .budget = "--budget", .time_limit = "--time-limit"}; }

search::TuneRequest tune_request_from(const po::variables_map& vm, const Workload& w, const Target& target) {
  search::TuneRequest request(w, target);
  if (vm.count("backend")) request.backend = vm["backend"].as<std::string>();
  request.strategy = vm["strategy"].as<std::string>();
  request.budget = vm["budget"].as<int64_t>();
  request.seed = vm["seed"].as<uint64_t>();
  request.runner = with_measure_options(vm, {});
  return request;
}

namespace {

// An l2_group wider than the matmul's tile grid (or given for an op with no matmul)
// groups nothing: accepted, as the compiler clamps it, but probably not what was meant.
void warn_l2_group_unused(const TileConfig& config, const TensorGraph& g, const Target& t) {
  if (!config.l2_group) return;
  TilingSummary summary;
  try {
    summary = analyze(g, config, t);
  } catch (const Error&) {
    return;  // the command itself reports what is wrong with the config
  }
  const auto [m_group, n_group] = *config.l2_group;
  bool has_matmul = false;
  for (const KernelSummary& k : summary.kernels) {
    if (!k.uses_cube) continue;
    has_matmul = true;
    const size_t r = k.tile_counts.size();
    const int64_t m_tiles = k.tile_counts[r - 2], n_tiles = k.tile_counts[r - 1];
    if (m_group > m_tiles || n_group > n_tiles) {
      warn("l2_group [" + std::to_string(m_group) + "," + std::to_string(n_group) + "] is larger than the " +
           std::to_string(m_tiles) + "x" + std::to_string(n_tiles) + " tile grid (M x N tiles) of the matmul; it is clamped to it");
    }
  }
  if (summary.feasible && !has_matmul) warn("l2_group is ignored: the workload has no matmul kernel to group");
}

}  // namespace

TileConfig config_from(const po::variables_map& vm, const Workload& w, const TensorGraph& g,
                       const Target& t) {
  if (!vm.count("config")) return default_config(w, g, t);
  TileConfig config = TileConfig::parse_arg(vm["config"].as<std::string>());
  warn_l2_group_unused(config, g, t);
  return config;
}

void print_table(std::ostream& out, const std::vector<std::string>& header,
                 const std::vector<std::vector<std::string>>& rows) {
  const size_t columns = header.empty() && !rows.empty() ? rows[0].size() : header.size();
  std::vector<size_t> width(columns);
  for (size_t c = 0; c < columns; ++c) {
    width[c] = header.empty() ? 0 : header[c].size();
    for (const auto& row : rows) width[c] = std::max(width[c], row.at(c).size());
  }
  auto print_row = [&](const std::vector<std::string>& cells, bool upper) {
    std::string line;
    for (size_t c = 0; c < cells.size(); ++c) {
      std::string cell = cells[c];
      if (upper) std::transform(cell.begin(), cell.end(), cell.begin(), ::toupper);
      line += cell;
      if (c + 1 < cells.size()) line += std::string(width[c] - cell.size() + 2, ' ');
    }
    out << line << "\n";
  };
  if (!header.empty()) print_row(header, true);
  for (const auto& row : rows) print_row(row, false);
}

void print_json(std::ostream& out, const nlohmann::json& j) { out << j.dump(2) << "\n"; }

std::string human_bytes(int64_t bytes) {
  constexpr int64_t KiB = 1024;
  const std::pair<int64_t, const char*> units[] = {{KiB * KiB * KiB, "G"}, {KiB * KiB, "M"}, {KiB, "K"}};
  for (auto [unit, suffix] : units) {
    if (bytes >= unit && bytes % unit == 0) return std::to_string(bytes / unit) + suffix;
  }
  return std::to_string(bytes);
}

}  // namespace pto::cli
