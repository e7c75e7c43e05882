// Measurements taken elsewhere, as tuning records: what `pto-tune db
// import-measurements` reads, so that times measured on a real NPU by another tool
// become records (backend npu, strategy "imported") that the JIT serves and the report
// shows beside simulated ones. The database checks and stores them as any import
// (db::TuningDb::import_records: search::ImportChecker, one transaction).
//
// Two sources:
// - mstuner-csv: the CSV of CATLASS's mstuner_catlass (tools/tuner/README.md of
//   hicann/catlass): columns case_id, task_duration(us), device_id, operation,
//   description, m, n, k, and optionally A, B, C ("fp16:row") and l0_tile_shape /
//   l1_tile_shape; other columns are ignored. operation Gemm is the matmul M,K,N = m,k,n.
//   Its tiles are mstuner's L1TileShape and L0TileShape, each MxNxK: the l1_tile_shape and
//   l0_tile_shape columns where the CSV has them, else the description's two groups
//   before "_swizzle" ("..._64x128x128_64x128x64_swizzle3x1": L1 then L0), which is how
//   mstuner names every kernel. They map to the cube tile m=[mL0,mL1], k=[kL0,kL1],
//   n=[nL0,nL1]. The swizzle has no PyPTO counterpart and stays in the record's detail.
//   A or B of layout "column" is transpose_a / transpose_b; other layouts are refused.
// - json: a measure-protocol answer (docs/measure_protocol.md) with the request it
//   answers: one record per candidate, failures included.
//
// Each record's detail says where it came from (format, file, row or candidate, device).
// A row or result that cannot be read is a Usage Error naming it; nothing is returned.
#pragma once

#include <string>

#include <nlohmann/json_fwd.hpp>

#include "core/target.h"
#include "search/tuning_record.h"

namespace pto::search {

inline constexpr const char* kImportedStrategy = "imported";

// `csv` is the file's text; `file` names it in messages and details; the records are
// for `target` and say `host` measured them.
ImportedRecords records_from_mstuner_csv(const std::string& csv, const std::string& file, const Target& target,
                                         const std::string& host);

// The answer's results for the request's candidates, for the request's target.
ImportedRecords records_from_protocol_answer(const nlohmann::json& request, const nlohmann::json& answer,
                                             const std::string& file, const std::string& host);

}  // namespace pto::search
