#include "db/export_file.h"

#include <cstdint>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/json_read.h"

namespace pto::db {

search::ImportedRecords records_from_export(const std::string& text, const std::string& file) {
  const nlohmann::json j = json_read::parse(text, "export file '" + file + "'");
  json_read::object(j, file);
  // Each member looked up with contains(): a const json's operator[] on a missing key is
  // undefined behaviour, not an error.
  if (!j.contains("format") || j["format"] != "pto-tune-configs" || !j.contains("records"))
    usage_error("'" + file + "' is not a pto-tune export (no \"format\":\"pto-tune-configs\" with \"records\")");
  if (!j.contains("version")) usage_error("'" + file + "' has no export format \"version\"");
  const int64_t version = json_read::integer(j["version"], "version", 1, INT32_MAX, "a format version");
  if (version > kExportFormatVersion) {
    fail(ErrorCategory::Db, "'" + file + "' has export format version " + std::to_string(version) +
                                ", newer than this pto-tune's " + std::to_string(kExportFormatVersion));
  }
  search::ImportedRecords out;
  const nlohmann::json& list = json_read::array(j["records"], "records", 0, SIZE_MAX);
  for (size_t i = 0; i < list.size(); ++i) {
    out.where.push_back("'" + file + "' records[" + std::to_string(i) + "]");
    try {
      out.records.push_back(search::TuningRecord::from_json(list[i]));
    } catch (const Error& e) {
      fail(e.category(), out.where.back() + ": " + e.what());
    }
  }
  return out;
}

}  // namespace pto::db
