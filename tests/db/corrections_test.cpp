// TuningDb's corrections (schema v2): a database of the previous schema (v1) is read as
// it is when opened read-only (its records, no corrections, the file unchanged) and
// migrates keeping every record when opened for writing; a correction added is the
// bounded merge of what was stored and the session's rows, survives reopening, and one
// made under other versions, of another feature layout or unreadable is not served; the
// JIT's provider carries the database's corrections to the model's pick.
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cost_model/correction.h"
#include "db/config_lookup.h"
#include "db/schema.h"
#include "db/sqlite.h"
#include "db/tuning_db.h"
#include "tests/db/records_testing.h"
#include "tests/temp_dir.h"

namespace pto::db {
namespace {

using testing::file_bytes;
using testing::random_records;

// Rows whose measured times (features[0] + log_residual) are `first`, `first` + 1, ...
Correction rows(size_t n, double first) {
  Correction c;
  for (size_t i = 0; i < n; ++i)
    c.rows.push_back({std::vector<double>(kFeatureCount, first + static_cast<double>(i)), 0});
  return c;
}

std::vector<std::string> texts(const std::vector<search::TuningRecord>& records) {
  std::vector<std::string> out;
  for (const search::TuningRecord& r : records) out.push_back(r.to_json().dump());
  return out;
}

const CorrectionKey kKey{"matmul", "fp-a", "sim"};

// The previous schema: the file a v1 pto-tune wrote. v2 only adds the corrections table,
// so a v2 file with it dropped and its version set back is that file.
void make_version_1(const std::string& path) {
  std::mt19937_64 rng(3);
  TuningDb::open(path)->commit(random_records(rng, 60));
  Connection c(path, Connection::Mode::ReadWrite);
  c.exec("DROP TABLE corrections; UPDATE schema_version SET version = 1");
  ASSERT_EQ(schema_version(c), 1);
}

TEST(TuningDbCorrections, AVersion1DatabaseIsReadAsItIsAndMigratesKeepingEveryRecord) {
  const pto::testing::TempDir dir("db_v1");
  const std::string path = dir.str() + "/v1.db";
  make_version_1(path);
  std::vector<std::string> before;
  {
    auto old = TuningDb::open(path, OpenMode::ReadOnly);  // a deployed database: not migrated
    before = texts(old->records());
    EXPECT_EQ(before.size(), 60u);
    EXPECT_TRUE(old->corrections().empty());
    EXPECT_FALSE(old->correction(kKey));
  }
  const std::string bytes = file_bytes(path);
  EXPECT_TRUE(DbConfigProvider(path).model_sources().corrections.empty());
  EXPECT_EQ(file_bytes(path), bytes) << "a read-only open changed the file";

  auto db = TuningDb::open(path);  // migrates
  {
    Connection c(path, Connection::Mode::ReadOnly);
    EXPECT_EQ(schema_version(c), current_schema_version());
  }
  EXPECT_EQ(texts(db->records()), before);
  EXPECT_TRUE(db->check().empty());
  db->add_correction(kKey, rows(3, 1));
  EXPECT_EQ(db->correction(kKey), rows(3, 1));
}

TEST(TuningDbCorrections, AddedRowsMergeBoundedAndSurviveReopening) {
  const pto::testing::TempDir dir("db_corrections");
  const std::string path = dir.str() + "/t.db";
  const Correction first = rows(40, 100), second = rows(50, 1);
  {
    auto db = TuningDb::open(path);
    EXPECT_FALSE(db->correction(kKey));
    db->add_correction(kKey, first);
    EXPECT_EQ(db->correction(kKey), merge_corrections(std::nullopt, first));
    db->add_correction(kKey, second);
  }
  const Correction expected = merge_corrections(merge_corrections(std::nullopt, first), second);
  auto db = TuningDb::open(path, OpenMode::ReadOnly);
  EXPECT_EQ(db->correction(kKey), expected);
  EXPECT_EQ(expected.rows.size(), 2 * kCorrectionSessionRows);
  EXPECT_EQ(expected.rows.front().log_measured(), 1) << "the newest session's fastest row first";
  EXPECT_FALSE(db->correction({"softmax", "fp-a", "sim"}));
  EXPECT_FALSE(db->correction({"matmul", "fp-a", "cpu"}));
  const auto all = db->corrections();
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all.at(kKey), expected);
  EXPECT_EQ(DbConfigProvider(path).model_sources().corrections, all) << "the JIT's model ranks with them";
}

TEST(TuningDbCorrections, OtherVersionsOtherLayoutsAndUnreadableRowsAreNotServed) {
  const pto::testing::TempDir dir("db_corrections_stale");
  const std::string path = dir.str() + "/t.db";
  auto db = TuningDb::open(path);
  db->add_correction(kKey, rows(5, 1));
  {
    Connection c(path, Connection::Mode::ReadWrite);
    c.exec("UPDATE corrections SET compiler_version = '0.0.1'");
  }
  EXPECT_FALSE(db->correction(kKey)) << "a correction of another compiler version";
  EXPECT_TRUE(db->corrections().empty());
  db->add_correction(kKey, rows(3, 7));  // replaces the stale one, merging nothing of it
  EXPECT_EQ(db->correction(kKey), rows(3, 7));

  nlohmann::json newer = rows(3, 7).to_json();
  newer["layout"] = kFeatureLayout + 1;
  {
    Connection c(path, Connection::Mode::ReadWrite);
    c.prepare("UPDATE corrections SET json = ?").bind(1, newer.dump()).run();
  }
  EXPECT_FALSE(db->correction(kKey)) << "rows of another feature layout were read";
  {
    Connection c(path, Connection::Mode::ReadWrite);
    c.exec("UPDATE corrections SET json = '{\"layout\": 1, \"rows\": [{\"features\": [1]'");
  }
  EXPECT_FALSE(db->correction(kKey));
  EXPECT_EQ(db->skipped_rows(), 1u) << "the unreadable correction was not named";
}

}  // namespace
}  // namespace pto::db
