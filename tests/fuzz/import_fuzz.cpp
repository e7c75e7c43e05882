// Fuzzes the readers of files `pto-tune db import` and `db import-measurements` take,
// and the check every imported record then passes (search::ImportChecker: the workload
// builds, the backend is known, the config fits its built-in target): each input is a
// list of records or an Error of a category the CLI reports as bad input (Usage; Db for
// an export of a newer format version), never another exception, a crash or a hang.
// The first byte picks the reader, the rest is its file:
//   'c'  an mstuner CSV measured on ascend910b1 (search::records_from_mstuner_csv)
//   'p'  a measure-protocol request, a NUL byte, its answer (records_from_protocol_answer)
//   else the whole input is a release export (db::records_from_export)
// An accepted record must round-trip through its JSON, as the export writes it.
#include <nlohmann/json.hpp>

#include "core/json_read.h"
#include "core/warning.h"
#include "db/export_file.h"
#include "search/imported_measurements.h"
#include "tests/fuzz/fuzz_check.h"

namespace {

using pto::search::ImportedRecords;

ImportedRecords read_any(const std::string& input) {
  const std::string rest = input.substr(input.empty() ? 0 : 1);
  if (input.starts_with('c')) {
    static const pto::Target target = pto::load_target("ascend910b1");
    return pto::search::records_from_mstuner_csv(rest, "fuzz.csv", target, "fuzz");
  }
  if (input.starts_with('p')) {
    const size_t nul = rest.find('\0');
    const std::string request = rest.substr(0, nul), answer = nul == std::string::npos ? "" : rest.substr(nul + 1);
    return pto::search::records_from_protocol_answer(pto::json_read::parse(request, "request"),
                                                     pto::json_read::parse(answer, "answer"), "fuzz.json", "fuzz");
  }
  return pto::db::records_from_export(input, "fuzz.json");
}

void check_records(const ImportedRecords& imported) {
  if (imported.where.size() != imported.records.size()) pto::fuzz::broken("a record without a place");
  pto::search::ImportChecker checker;
  for (const pto::search::TuningRecord& r : imported.records) {
    const std::string text = r.to_json().dump();
    if (pto::search::TuningRecord::from_json(nlohmann::json::parse(text)).to_json().dump() != text)
      pto::fuzz::broken("record JSON round trip: " + text);
    pto::fuzz::expect_usage_errors_only([&] { checker.check(r); });
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const pto::WarningSink quiet = pto::set_warning_sink([](const std::string&) {});  // duplicate JSON keys
  const std::string input(reinterpret_cast<const char*>(data), size);
  pto::fuzz::expect_input_errors_only({pto::ErrorCategory::Usage, pto::ErrorCategory::Db},
                                      [&] { check_records(read_any(input)); });
  return 0;
}
