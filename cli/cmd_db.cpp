// `pto-tune db SUBCOMMAND`: the tuning database as a release engineer handles it —
// show the best config per workload, export it as versioned JSON (what a release
// ships), import such a file, import measurements taken elsewhere (an mstuner CSV, a
// measure-protocol answer: search/imported_measurements.h), merge the databases of
// sharded tuning jobs, and check a file's integrity and schema.
//
// Files named on the command line come before the options: `db export FILE.json
// --db PATH`, `db merge A.db B.db --into OUT.db`. A bad database file is a Db Error
// (exit code 2) and is never changed; `db check` exits 2 when it finds a problem. A
// bad row in a sound file (written by another program) is skipped by show, export and
// merge with a warning naming it (exit code 0; export and merge say how many).
#include <iostream>
#include <set>

#include <nlohmann/json.hpp>

#include "cli/cli.h"
#include "cli/commands.h"
#include "core/error.h"
#include "cost_model/format_ns.h"
#include "core/json_list_writer.h"
#include "core/json_read.h"
#include "batch/batch_file.h"
#include "core/target.h"
#include "db/tuning_db.h"
#include "search/imported_measurements.h"
#include "search/tune_request.h"

namespace pto::cli {

namespace {

using db::OpenMode;
using db::TuningDb;
using search::TuningRecord;

void add_db_option(po::options_description& options) {
  options.add_options()("db", po::value<std::string>(),
                        "tuning database file; default $PTO_TUNE_DB, else ~/.cache/pto-tune/tune.db");
}

std::string db_path(const po::variables_map& vm) {
  return db::resolve_db_path(vm.count("db") ? std::optional(vm["db"].as<std::string>()) : std::nullopt);
}

// The words before the first option: the files a subcommand works on.
std::pair<Args, Args> split_files(const Args& args) {
  const auto first_option = std::find_if(args.begin(), args.end(), [](const std::string& a) { return a.starts_with("-"); });
  return {Args(args.begin(), first_option), Args(first_option, args.end())};
}

// What export and merge add to their summary when rows could not be read (each was
// named in a warning).
std::string skipped_note(size_t skipped) {
  return skipped ? " (" + std::to_string(skipped) + " unreadable rows skipped, named above)" : "";
}

int show(const Args& args) {
  po::options_description options;
  add_db_option(options);
  add_op_filter_option(options);
  options.add_options()("json", po::bool_switch(), "print JSON: {db, measurements, best: [record...]}");
  const auto vm = parse_command(args, options,
                                {"db show", "[--op OP] [--json] [--db PATH]",
                                 "Lists the best usable record per (workload, target, backend): the config\n"
                                 "the JIT lookup serves. Stale records (other compiler or cost-model\n"
                                 "versions) are marked; times from sim and model are simulated/predicted.",
                                 "pto-tune db show --op matmul --db tune.db"});
  if (!vm) return 0;
  const std::string op = op_filter_from(*vm);
  const std::string path = db_path(*vm);
  auto database = TuningDb::open(path, OpenMode::ReadOnly);
  const std::vector<TuningRecord> best = database->best_records(op);
  const size_t measurements = database->count_records(op);
  if ((*vm)["json"].as<bool>()) {
    JsonListWriter list(std::cout, {{"db", path}, {"measurements", measurements}}, "best");
    for (const TuningRecord& r : best) {
      nlohmann::json record = r.to_json();
      record["stale_reason"] = r.stale_reason();
      list.add(record);
    }
    list.finish();
    return 0;
  }
  std::cout << "# " << path << ": " << measurements << " measurements, best of " << best.size() << " keys\n";
  std::vector<std::vector<std::string>> rows;
  for (const TuningRecord& r : best) {
    const std::string stale = r.stale_reason();
    rows.push_back({r.workload.key(), r.target_name, r.backend, format_ns(r.time_ns()),
                    stale.empty() ? "fresh" : "stale: " + stale, r.config.to_string()});
  }
  print_table(std::cout, {"workload", "target", "backend", "time", "versions", "config"}, rows);
  return 0;
}

// Parses `db export|import FILE.json [options]`: the one file and the options (which
// gain --db), or nullopt after --help.
struct FileCommand {
  std::string file;
  po::variables_map vm;
};
std::optional<FileCommand> parse_file_command(const Args& args, po::options_description& options,
                                              const CommandHelp& help) {
  const auto [files, rest] = split_files(args);
  add_db_option(options);
  auto vm = parse_command(rest, options, help);
  if (!vm) return std::nullopt;
  if (files.size() != 1) usage_error(help.name + " takes one FILE.json (see 'pto-tune " + help.name + " --help')");
  return FileCommand{files[0], std::move(*vm)};
}

int export_configs(const Args& args) {
  po::options_description options;
  add_op_filter_option(options);
  const auto c = parse_file_command(args, options,
                                    {"db export", "FILE.json [--op OP] [--db PATH]",
                                     "Writes the best record per key as versioned JSON (format\n"
                                     "\"pto-tune-configs\"): what a release ships for the JIT to look up;\n"
                                     "with each key's default and near-best records, which the lookup learns\n"
                                     "its transfer margin and corrections from.",
                                     "pto-tune db export release-configs.json --db merged.db"});
  if (!c) return 0;
  const std::string op = op_filter_from(c->vm);
  const std::string path = db_path(c->vm);
  const std::unique_ptr<TuningDb> database = TuningDb::open(path, OpenMode::ReadOnly);
  const size_t n = database->export_json(c->file, op);
  std::cout << "exported " << n << " records from " << path << " to " << c->file << skipped_note(database->skipped_rows())
            << "\n";
  return 0;
}

int import_configs(const Args& args) {
  po::options_description options;
  const auto c = parse_file_command(args, options,
                                    {"db import", "FILE.json [--db PATH]",
                                     "Adds the records of an export file to the database, all or none; a\n"
                                     "record already stored is not added twice.",
                                     "pto-tune db import release-configs.json --db tune.db"});
  if (!c) return 0;
  const std::string path = db_path(c->vm);
  const size_t n = TuningDb::open(path)->import_json(c->file);
  std::cout << "imported " << n << " new records from " << c->file << " into " << path << "\n";
  return 0;
}

// The records a measurement file holds, in the --format it is given as.
search::ImportedRecords measurement_records(const std::string& file, const po::variables_map& vm) {
  const std::string format = vm["format"].as<std::string>();
  const std::string host = vm["host"].as<std::string>();
  if (format == "mstuner-csv") {
    if (!vm.count("target")) usage_error("--format mstuner-csv: give the --target the CSV was measured on (its rows do not say)");
    if (vm.count("request")) usage_error("--request is for --format json, not mstuner-csv");
    return search::records_from_mstuner_csv(json_read::read_text_file(file, "measurement file"), file,
                                            target_from(vm), host);
  }
  if (format == "json") {
    if (!vm.count("request")) usage_error("--format json: give the --request FILE the answer answers");
    if (vm.count("target")) usage_error("--format json: the request names the target; --target is for mstuner-csv");
    const std::string request = vm["request"].as<std::string>();
    return search::records_from_protocol_answer(
        json_read::parse(json_read::read_text_file(request, "request file"), "request file '" + request + "'"),
        json_read::parse(json_read::read_text_file(file, "answer file"), "answer file '" + file + "'"), file, host);
  }
  usage_error("--format: unknown format '" + format + "' (known: mstuner-csv, json)");
}

int import_measurements(const Args& args) {
  po::options_description options;
  options.add_options()
      ("format", po::value<std::string>()->required(), "mstuner-csv (CATLASS mstuner_catlass's CSV) or json (a measure-protocol answer)")
      ("target", po::value<std::string>(), "mstuner-csv: the target (built-in name or JSON file) the CSV was measured on")
      ("request", po::value<std::string>(), "json: the request file the answer answers")
      ("host", po::value<std::string>()->default_value("imported"), "the machine that measured, stored in each record");
  const auto c = parse_file_command(
      args, options,
      {"db import-measurements", "FILE --format mstuner-csv|json [--target T] [--request REQ.json] [--db PATH]",
       "Adds times measured elsewhere (on a real NPU) as records of backend npu,\n"
       "strategy 'imported', all or none: each must name a workload the op library\n"
       "builds and a config that fits its target, as an import's must; a bad row is an\n"
       "error naming it. mstuner-csv reads CATLASS's mstuner_catlass CSV (operation Gemm,\n"
       "m, n, k, the tiles from the description's L1 and L0 MxNxK or the l1_tile_shape and\n"
       "l0_tile_shape columns); json reads an answer of docs/measure_protocol.md with the\n"
       "request it answers. 'pto-tune lookup' then serves the best.",
       "pto-tune db import-measurements results.csv --format mstuner-csv --target ascend910b1 --db tune.db"});
  if (!c) return 0;
  const search::ImportedRecords imported = measurement_records(c->file, c->vm);
  const std::string path = db_path(c->vm);
  const std::unique_ptr<TuningDb> store = TuningDb::open(path);
  const size_t n = store->import_records(imported.records, imported.where);
  if (c->vm.count("target")) store->remember_target(target_from(c->vm));
  std::cout << "imported " << n << " new records (" << imported.records.size() << " measurements) from " << c->file
            << " into " << path << "\n";
  return 0;
}

// The workload keys of a batch file's entries, for `db merge --workloads`: an entry
// without a dtype means the one its target= defaults to, as `pto-tune batch` tunes it.
// A problem entry, or one that names neither, is a usage Error naming its line.
std::set<std::string> batch_workload_keys(const std::string& path) {
  const batch::BatchFile file = batch::read_batch_file(path);
  if (!file.problems.empty())
    usage_error("--workloads: " + path + " " + file.problems.front().where + ": " + file.problems.front().message);
  std::set<std::string> keys;
  for (batch::BatchEntry e : file.entries) {
    if (!e.dtype_given) {
      if (!e.target) usage_error("--workloads: " + path + " " + e.where + " names neither a dtype nor a target=");
      e.workload.dtype = search::default_dtype(load_target(*e.target));
    }
    keys.insert(e.workload.key());
  }
  return keys;
}

int merge(const Args& args) {
  const auto [files, rest] = split_files(args);
  po::options_description options;
  options.add_options()("into", po::value<std::string>()->required(), "the database to merge into (created when missing)")(
      "workloads", po::value<std::string>(),
      "a batch file: merge the records of its workloads alone (a plan's buckets, without its checks)");
  const auto vm = parse_command(rest, options,
                                {"db merge", "A.db [B.db ...] --into OUT.db [--workloads FILE]",
                                 "Merges tuning databases: every record of the inputs joins OUT, so that the\n"
                                 "merge of sharded tuning jobs is the database one machine would have made\n"
                                 "(the lookup learns its margins from each workload's default and near-best\n"
                                 "records, not its best alone). --workloads keeps those of a batch file's\n"
                                 "workloads: the buckets 'pto-tune plan' tuned and checked, from its database,\n"
                                 "without the sizes it tuned only to check them. The inputs are read only;\n"
                                 "merging again, or in another order, gives the same result.",
                                 "pto-tune db merge shard-*.db --into merged.db\n"
                                 "  pto-tune db merge plan.db --workloads llm_matmul.txt --into release.db"});
  if (!vm) return 0;
  if (files.empty()) usage_error("db merge needs at least one input database (see 'pto-tune db merge --help')");
  const std::string out = (*vm)["into"].as<std::string>();
  std::optional<std::set<std::string>> only;
  if (vm->count("workloads")) only = batch_workload_keys((*vm)["workloads"].as<std::string>());
  const db::MergeSummary s = TuningDb::merge(files, out, only);
  std::cout << "merged " << s.inputs << " databases into " << out << ": " << s.keys << " keys, " << s.added
            << " records added, " << s.stale << " stale" << skipped_note(s.skipped) << "\n";
  return 0;
}

int check(const Args& args) {
  po::options_description options;
  add_db_option(options);
  const auto vm = parse_command(args, options,
                                {"db check", "[--db PATH]",
                                 "Checks the database: SQLite's integrity check, foreign keys, the\n"
                                 "schema's version, tables and columns (and no trigger or view of another\n"
                                 "program), and every row: its workload key, config, status and detail\n"
                                 "parse, and its config fits its target (a built-in one of the same\n"
                                 "fingerprint). Each problem is named by row id; exit code 2 when one is found.",
                                 "pto-tune db check --db tune.db"});
  if (!vm) return 0;
  const std::string path = db_path(*vm);
  const std::vector<std::string> problems = TuningDb::open(path, OpenMode::ReadOnly)->check();
  for (const std::string& p : problems) std::cout << path << ": " << p << "\n";
  if (problems.empty()) std::cout << path << ": ok\n";
  return problems.empty() ? 0 : exit_code(ErrorCategory::Db);
}

struct Subcommand {
  const char* name;
  const char* summary;
  int (*run)(const Args&);
};

const Subcommand kSubcommands[] = {
    {"show", "list the best record per workload, target and backend", show},
    {"export", "write the best configs as versioned JSON (what a release ships)", export_configs},
    {"import", "add the records of an exported JSON file", import_configs},
    {"import-measurements", "add times measured elsewhere (mstuner CSV, measure-protocol answer)", import_measurements},
    {"merge", "merge databases of sharded tuning jobs, keeping the best record per key", merge},
    {"check", "check integrity and schema", check},
};

void print_db_help(std::ostream& out) {
  out << "Usage: pto-tune db SUBCOMMAND [options]\n\nThe tuning database (SQLite).\n\nSubcommands:\n";
  for (const Subcommand& s : kSubcommands) out << "  " << s.name << std::string(std::max<size_t>(2, 21 - std::string(s.name).size()), ' ') << s.summary << "\n";
  out << "\nExample:\n  pto-tune db show --op matmul\n\nRun 'pto-tune db SUBCOMMAND --help' for its options.\n";
}

}  // namespace

int run_db(const Args& args) {
  if (args.empty() || args[0] == "--help" || args[0] == "-h") {
    print_db_help(args.empty() ? std::cerr : std::cout);
    return args.empty() ? exit_code(ErrorCategory::Usage) : 0;
  }
  for (const Subcommand& s : kSubcommands) {
    if (args[0] == s.name) return s.run(Args(args.begin() + 1, args.end()));
  }
  usage_error("unknown db subcommand '" + args[0] + "' (known: show, export, import, import-measurements, merge, check)");
}

}  // namespace pto::cli
