// `pto-tune report`: writes the tuning report (reporting/report.h) of a tuning database —
// report.html (self-contained, inline SVG) and report.md — into a folder.
#include <filesystem>
#include <iostream>

#include "cli/cli.h"
#include "cli/commands.h"
#include "reporting/report.h"
#include "core/atomic_file.h"
#include "core/error.h"
#include "db/tuning_db.h"

namespace pto::cli {

int run_report(const Args& args) {
  po::options_description options;
  options.add_options()
      ("db", po::value<std::string>(), "tuning database file; default: $PTO_TUNE_DB, else ~/.cache/pto-tune/tune.db")
      ("out", po::value<std::string>()->default_value("pto-tune-report"), "folder to write report.html and report.md into");
  add_op_filter_option(options);
  const auto vm = parse_command(
      args, options,
      {"report", "[--db PATH] [--out DIR]",
       "Writes a report of a tuning database: report.html (one self-contained page with\n"
       "inline SVG plots: predicted vs measured time, search convergence, speedup over\n"
       "the defaults, the cost model's ranking quality) and report.md (the tables).",
       "pto-tune report --db tune.db --out report"});
  if (!vm) return 0;
  const std::string op = op_filter_from(*vm);
  const std::optional<std::string> db_flag =
      vm->count("db") ? std::optional<std::string>((*vm)["db"].as<std::string>()) : std::nullopt;
  const std::string path = db::resolve_db_path(db_flag);
  const std::unique_ptr<db::TuningDb> db = db::TuningDb::open(path, db::OpenMode::ReadOnly);
  const std::vector<search::TuningRecord> records = db->records(op);
  if (records.empty()) usage_error("report: no records in '" + path + "'");
  const reporting::Report report = reporting::make_report(records, path);
  const std::filesystem::path out = (*vm)["out"].as<std::string>();
  std::error_code ec;
  std::filesystem::create_directories(out, ec);
  if (ec) throw Error(ErrorCategory::Io, "report: cannot create '" + out.string() + "': " + ec.message());
  for (const char* name : {"report.html", "report.md"})  // a link planted there must not lead onto the database
    refuse_output_onto_input((out / name).string(), path, "the report", "the database");
  write_output_file((out / "report.html").string(), report.html, "the report");
  write_output_file((out / "report.md").string(), report.markdown, "the report");
  std::cout << "wrote " << (out / "report.html").string() << " and " << (out / "report.md").string() << " ("
            << records.size() << " records)\n";
  return 0;
}

}  // namespace pto::cli
