// Test helper for db/: tuning records made up at random (a few workloads, configs
// and statuses, so that keys repeat and failures occur), and the brute-force best
// that the database must agree with.
#pragma once

#include <algorithm>
#include <fstream>
#include <iterator>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <sqlite3.h>

#include "core/tile_config.h"
#include "core/workload.h"
#include "search/tuning_record.h"

namespace pto::db::testing {

using search::TuningRecord;

inline TuningRecord make_record(const std::string& workload_key, const std::string& config_json,
                                double median_ns, const std::string& fingerprint = "fp-a",
                                const std::string& backend = "sim") {
  TuningRecord r;
  r.workload = Workload::parse_key(workload_key);
  r.config = TileConfig::parse(config_json);
  r.target_name = "ascend910b1";
  r.target_fingerprint = fingerprint;
  r.backend = backend;
  r.measurement.backend = backend;
  r.measurement.stats = {median_ns, median_ns * 0.9, median_ns * 1.1, 5};
  r.measurement.predicted_ns = median_ns * 1.2;
  r.measurement.host = "testhost";
  r.versions = search::Versions::current();
  r.strategy = "test";
  return r;
}

// Random records over a few keys; about one in five fails. Timestamps are distinct, so
// no two are identical (the database stores identical records once).
inline std::vector<TuningRecord> random_records(std::mt19937_64& rng, size_t n, int64_t first_timestamp = 1) {
  const std::vector<std::string> workloads = {"matmul|256,256,256|fp16", "matmul|512,256,128|fp16",
                                              "softmax|64,128|fp16"};
  const std::vector<std::string> configs = {R"({"vec":[8,128]})", R"({"vec":[16,128]})",
                                            R"({"vec":[32,128],"nbuffer":2})", R"({"vec":[64,64]})"};
  const std::vector<std::string> fingerprints = {"fp-a", "fp-b"};
  std::vector<TuningRecord> out;
  for (size_t i = 0; i < n; ++i) {
    // Few distinct times, so that ties (broken by config text) happen.
    const double time = 100.0 * (1 + rng() % 6);
    TuningRecord r = make_record(workloads[rng() % workloads.size()], configs[rng() % configs.size()], time,
                                 fingerprints[rng() % 2], rng() % 2 ? "sim" : "model");
    r.measurement.timestamp = first_timestamp + static_cast<int64_t>(i);
    if (rng() % 5 == 0) {
      r.measurement.status = measure::Status::RUNTIME_ERROR;
      r.measurement.error = "crashed";
    }
    out.push_back(r);
  }
  return out;
}

// The k best usable records of `key` by search::better.
inline std::vector<TuningRecord> brute_force_top_k(const std::vector<TuningRecord>& all,
                                                   const search::RecordKey& key, size_t k) {
  std::vector<TuningRecord> mine;
  for (const TuningRecord& r : all)
    if (r.key() == key && r.usable()) mine.push_back(r);
  std::stable_sort(mine.begin(), mine.end(), search::better);
  if (mine.size() > k) mine.resize(k);
  return mine;
}

inline std::string file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// Writes garbage over the schema page of the database at `path`, after its 100-byte
// header: still a SQLite file, now a corrupt one.
inline void corrupt_schema_page(const std::string& path) {
  std::string bytes = file_bytes(path);
  for (size_t i = 100; i < 4096 && i < bytes.size(); ++i) bytes[i] = static_cast<char>(0xA5 ^ i);
  std::ofstream(path, std::ios::binary) << bytes;
}

// Runs `sql` on the database at `path` with SQLite itself, bypassing pto-tune: how a
// test writes the rows and triggers another program might have.
inline void execute_sql(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK) << path;
  char* error = nullptr;
  const int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &error);
  EXPECT_EQ(rc, SQLITE_OK) << sql << ": " << (error ? error : "");
  sqlite3_free(error);
  sqlite3_close(db);
}

}  // namespace pto::db::testing
