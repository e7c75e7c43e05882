// The release export file ("pto-tune-configs"): what `db export` writes and `db import`
// and Python's Database.import_json read. Reading it needs no database, so the reader
// is here on its own, the one a fuzz target drives (tests/fuzz/import_fuzz.cpp).
//
//   {"format":"pto-tune-configs","version":1,"compiler":..,"cost_model":..,"records":[..]}
//
// each record as search::TuningRecord::to_json. The database checks what it reads as
// it checks any import (search::ImportChecker) before storing it.
#pragma once

#include <string>

#include "search/tuning_record.h"

namespace pto::db {

// The version of the export file format (TuningDb::export_json).
inline constexpr int kExportFormatVersion = 1;

// The records of an export file's `text`; `file` names it in messages and in each
// record's `where` ("'configs.json' records[3]"). Usage Error naming the field for
// anything malformed (not JSON, not an object, no format, version or records, a record
// that is not one); Db Error for a format version newer than this pto-tune's.
search::ImportedRecords records_from_export(const std::string& text, const std::string& file);

}  // namespace pto::db
