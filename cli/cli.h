// What the pto-tune subcommands share: parsing a subcommand's options (with --help),
// the workload / target / config options every compiling command takes, and output
// (aligned text tables, JSON).
//
// Errors go up as pto::Error (or Boost's option errors); main.cpp turns them into
// "pto-tune: error: ..." and the exit code of their category.
#pragma once

#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include <boost/program_options.hpp>
#include <nlohmann/json.hpp>

#include "core/join.h"
#include "core/target.h"
#include "core/tensor_graph.h"
#include "core/tile_config.h"
#include "core/workload.h"
#include "measure/runner.h"
#include "search/tune_request.h"

namespace pto::cli {

namespace po = boost::program_options;

// What `pto-tune COMMAND --help` says before the option list.
struct CommandHelp {
  std::string name;     // "compile"
  std::string usage;    // "--op OP --shapes DIMS [options]"
  std::string summary;  // what it does, a sentence or two
  std::string example;  // one command line
};

// Parses `args` (the words after the subcommand name) against `options` plus --help.
// Prints the help and returns nullopt when --help was given; otherwise checks required
// options and returns the values. Boost option errors are rethrown as usage Errors.
std::optional<po::variables_map> parse_command(const std::vector<std::string>& args,
                                               const po::options_description& options,
                                               const CommandHelp& help);

// --dtype's help: what search::default_dtype picks when it is not given.
inline constexpr const char* kDtypeHelp =
    "element type: fp32, fp16, bf16, int32, int8; default: fp16 on an NPU target, fp32 on the host";

// --op, --shapes, --dtype (search::default_dtype of the target), --attrs, --expr.
void add_workload_options(po::options_description& options);
// --expr, the elementwise op's expression, and its canonical form ("" when not given;
// a malformed one is a usage Error naming the bad token and its position).
void add_expr_option(po::options_description& options);
std::string expr_from(const po::variables_map& vm);
// The workload the options name (an unknown op or dtype, a bad shape or attribute
// list is a usage Error naming it); build_graph() checks it against the signature.
Workload workload_from(const po::variables_map& vm, const Target& target);

// --op OP of the commands that list records (db show, db export, report): one op's
// records, or every op's when not given.
void add_op_filter_option(po::options_description& options);
// "" for every op, else the op's name; an unknown op is a usage Error naming it and the
// known ops (as --op of tune is), not an empty listing that looks like success.
std::string op_filter_from(const po::variables_map& vm);

// --target NAME|FILE, defaulting to `default_target`.
void add_target_option(po::options_description& options, const std::string& default_target);
Target target_from(const po::variables_map& vm);

// --config JSON|@file.
void add_config_option(po::options_description& options);
// The --config given, else the op's default config for this target.
TileConfig config_from(const po::variables_map& vm, const Workload& w, const TensorGraph& g,
                       const Target& t);

// --emit FORMAT of tune and lookup: what to print instead of the report. The one format,
// "pypto", is the PyPTO module of the config (core/pypto_module.h).
void add_emit_option(po::options_description& options);
// Whether --emit pypto was given; another value, or --emit with --json, is a usage Error
// naming it.
bool emit_pypto_from(const po::variables_map& vm);

// --measure-cmd CMD and --timeout SECONDS of the commands that measure (run, tune,
// batch): the command the `command` and `npu` backends run per batch of candidates
// (docs/measure_protocol.md), and the per-candidate limit of a measurement (the cpu
// backend's child process, a measure command's share of its batch).
void add_measure_options(po::options_description& options);
// `options` with the measure command and timeout given; a --measure-cmd that is empty is
// a usage Error.
measure::RunnerOptions with_measure_options(const po::variables_map& vm, measure::RunnerOptions options);

// The flags of a tuning job (--strategy, --budget, --time-limit) as a search::TuneRequest's
// messages name its fields.
search::FieldNames tune_flag_names();
// The job of tuning `w` on `target` as the flags every tuning command shares ask for it:
// --backend (when given), --strategy, --budget, --seed and the measure options. A
// command's own flags (tune's --time-limit and --retune) are its to add.
search::TuneRequest tune_request_from(const po::variables_map& vm, const Workload& w, const Target& target);

// Columns padded to their widest cell, two spaces apart; the header is upper-cased
// (an empty header: no header line, for key/value listings).
void print_table(std::ostream& out, const std::vector<std::string>& header,
                 const std::vector<std::vector<std::string>>& rows);
void print_json(std::ostream& out, const nlohmann::json& j);

// 196608 -> "192K", 201326592 -> "192M", 1000 -> "1000".
std::string human_bytes(int64_t bytes);

}  // namespace pto::cli
