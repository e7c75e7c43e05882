// `pto-tune db import-measurements`: times measured elsewhere become records of backend
// npu, strategy "imported", that the JIT serves. A CATLASS mstuner_catlass CSV (the
// columns and kernel names of its README, extra columns tolerated) imports, `lookup`
// serves its fastest row's tiles, `db check` passes and the report labels them measured; a malformed CSV — a missing
// column, a duration that is not a number, an unknown operation, tiles that do not fit
// the target — is refused whole, naming the row; a measure-protocol answer imports with
// the request it answers. Hermetic: PTO_TUNE_HOME is a temporary folder.
#include <cstdlib>
#include <fstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/target.h"
#include "db/tuning_db.h"
#include "measure/measure_protocol.h"
#include "tests/cli/cli_driver.h"
#include "tests/temp_dir.h"

namespace pto {
namespace {

using nlohmann::json;
using namespace cli::testing;
using testing::TempDir;

const std::string kHeader = "case_id,task_duration(us),device_id,operation,description,m,n,k,A,B,C,extra\n";

std::string row(const std::string& case_id, const std::string& us, const std::string& operation,
                const std::string& tiles) {
  return case_id + "," + us + ",0," + operation + ",catlass_gemm_basic_matmul_fp16xRowMajor_fp16xRowMajor_fp16xRowMajor_" +
         tiles + "_swizzle3x1,256,512,1024,fp16:row,fp16:row,fp16:row,x\n";
}

const std::string kGoodRows = row("1", "19.380", "Gemm", "32x128x128_32x128x32") +
                              row("489", "12.740", "Gemm", "64x128x128_64x128x64") +
                              row("77", "14.100", "Gemm", "64x256x128_64x256x64");
// What the fastest row (case 489: L1 64x128x128, L0 64x128x64, each MxNxK) is as a config.
const char* kFastest = R"({"cube":{"m":[64,64],"k":[64,128],"n":[128,128]}})";
const std::string kLookup = "lookup --op matmul --shapes 256,1024,512 --target ascend910b1 --json --db ";

class ImportMeasurements : public ::testing::Test {
 protected:
  ImportMeasurements() : home_("import_measurements_home") {
    ::setenv("PTO_TUNE_HOME", home_.str().c_str(), 1);
    ::unsetenv("PTO_TUNE_DB");
  }
  ~ImportMeasurements() override { ::unsetenv("PTO_TUNE_HOME"); }
  std::string db() const { return (home_.path() / "tune.db").string(); }
  const TempDir& home() const { return home_; }
  Result import_csv(const std::string& csv) {
    return pto_tune("db import-measurements " + home_.write("results.csv", csv) +
                    " --format mstuner-csv --target ascend910b1 --db " + db());
  }

 private:
  TempDir home_;
};

TEST_F(ImportMeasurements, AnMstunerCsvIsServedByTheLookup) {
  const Result r = import_csv(kHeader + kGoodRows);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("imported 3 new records"), std::string::npos) << r.out;

  const Result lookup = pto_tune(kLookup + db());
  ASSERT_EQ(lookup.exit_code, 0) << lookup.err;
  const json served = json::parse(lookup.out);
  EXPECT_EQ(served["source"], "exact");
  EXPECT_EQ(TileConfig::from_json(served["config"]), TileConfig::parse(kFastest));

  const Result check = pto_tune("db check --db " + db());
  EXPECT_EQ(check.exit_code, 0) << check.out << check.err;

  for (const search::TuningRecord& rec : db::TuningDb::open(db())->records()) {
    EXPECT_EQ(rec.backend, "npu");
    EXPECT_EQ(rec.strategy, "imported");
    EXPECT_FALSE(rec.measurement.simulated);
    EXPECT_EQ(json::parse(rec.measurement.detail_json)["format"], "mstuner-csv");
  }
  // The report shows them for what they are: measured on an NPU, imported.
  const std::string report_dir = (home().path() / "report").string();
  ASSERT_EQ(pto_tune("report --db " + db() + " --out " + report_dir).exit_code, 0);
  std::ifstream report(report_dir + "/report.md");
  const std::string md{std::istreambuf_iterator<char>(report), std::istreambuf_iterator<char>()};
  EXPECT_NE(md.find("npu (measured)"), std::string::npos) << md;
  EXPECT_NE(md.find("imported"), std::string::npos) << md;
}

TEST_F(ImportMeasurements, TheTileColumnsServeWhereTheCsvHasThem) {
  const std::string csv = "case_id,task_duration(us),device_id,operation,description,l0_tile_shape,l1_tile_shape,m,n,k\n"
                          "5,10.5,0,Gemm,my_kernel,64x128x64,64x128x128,256,512,1024\n";
  ASSERT_EQ(import_csv(csv).exit_code, 0);
  EXPECT_EQ(TileConfig::from_json(json::parse(pto_tune(kLookup + db()).out)["config"]), TileConfig::parse(kFastest));
}

TEST_F(ImportMeasurements, AMalformedCsvIsRefusedWholeNamingTheRow) {
  struct Case {
    std::string csv;
    std::vector<std::string> parts;
  };
  const std::vector<Case> cases = {
      {"case_id,task_duration(us),device_id,operation,description,m,n\n1,2,0,Gemm,x,1,2\n",
       {"line 1", "no column 'k'"}},
      {kHeader + kGoodRows + row("9", "fast", "Gemm", "64x128x128_64x128x64"),
       {"row 4 (line 5)", "task_duration(us) 'fast' is not a positive number"}},
      {kHeader + row("9", "-3", "Gemm", "64x128x128_64x128x64"), {"row 1 (line 2)", "'-3'"}},
      {kHeader + row("1", "19.380", "Gemm", "32x128x128_32x128x32") + row("9", "3.5", "GroupedGemm", "64x128x128_64x128x64"),
       {"row 2 (line 3)", "unknown operation 'GroupedGemm'"}},
      {kHeader + row("9", "3.5", "Gemm", "no_tiles_here"), {"row 1 (line 2)", "names no tiles"}},
      {kHeader + row("9", "3.5", "Gemm", "512x512x512_512x512x512"), {"row 1 (line 2)", "does not fit ascend910b1"}},
      {kHeader + "9,3.5,0,Gemm\n", {"row 1 (line 2)", "4 fields, the header has 12"}},
      // Found by tests/fuzz/import_fuzz: a byte that is not UTF-8 reached the record's
      // JSON detail, whose writer threw (exit 1, "[json.exception.type_error.316]").
      {kHeader + row("9", "3.5", "Gemm", "64x128x128_64x128x64\xff"), {"row 1 (line 2)", "not valid UTF-8"}},
      // Also the fuzzer's: a tile size past int64 threw std::stoll's out_of_range (exit 1).
      {kHeader + row("9", "3.5", "Gemm", "64x128x99999999999999999999999_64x128x64"),
       {"row 1 (line 2)", "'99999999999999999999999' is past a 64-bit size"}},
  };
  for (const Case& c : cases) {
    const Result r = import_csv(c.csv);
    EXPECT_EQ(r.exit_code, 2) << c.csv << r.err;
    for (const std::string& part : c.parts) EXPECT_NE(r.err.find(part), std::string::npos) << part << " not in " << r.err;
    // Nothing half-imported: the good rows before the bad one are not there either.
    EXPECT_NE(pto_tune(kLookup + db()).out.find("\"source\": \"model\""), std::string::npos) << c.csv;
  }
  expect_usage_error("db import-measurements x.csv --format mstuner-csv --db " + db(), {"--target"});
  expect_usage_error("db import-measurements x.csv --format xml --db " + db(), {"unknown format 'xml'"});
}

TEST_F(ImportMeasurements, AProtocolAnswerImportsWithItsRequest) {
  const Workload w{"matmul", {256, 1024, 512}, DType::F16, {}};
  const measure::ExternalBatch batch{
      w, {{"c0", TileConfig::parse(kFastest)}, {"c1", TileConfig::parse(R"({"cube":{"m":[32,32],"k":[32,128],"n":[128,128]}})")}},
      1, 3, false};
  const std::string request = home().write("request.json", measure::protocol_request(batch, load_target("ascend910b1"), 30).dump());
  const json answer{{"protocol", "pto-tune-measure"}, {"version", 1}, {"device", "npu:1"},
                    {"results", {{{"id", "c0"}, {"times_s", {1e-5, 1.2e-5, 1.1e-5}}},
                                 {{"id", "c1"}, {"status", "failed"}, {"message", "launch failed"}}}}};
  const std::string answer_file = home().write("answer.json", answer.dump());
  const Result r = pto_tune("db import-measurements " + answer_file + " --format json --request " + request +
                            " --host npu-box-3 --db " + db());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("imported 2 new records"), std::string::npos) << r.out;
  const json served = json::parse(pto_tune(kLookup + db()).out);
  EXPECT_EQ(served["source"], "exact");
  EXPECT_EQ(TileConfig::from_json(served["config"]), TileConfig::parse(kFastest));
  for (const search::TuningRecord& rec : db::TuningDb::open(db())->records()) EXPECT_EQ(rec.measurement.host, "npu-box-3");

  const std::string bad = home().write("bad.json", json{{"protocol", "pto-tune-measure"}, {"version", 1},
                                                        {"results", {{{"id", "c0"}, {"times_s", {-1}}},
                                                                     {{"id", "c1"}, {"times_s", {1e-5}}}}}}.dump());
  expect_usage_error("db import-measurements " + bad + " --format json --request " + request + " --db " + db(),
                     {"candidate c0", "not a positive finite number"});
  const std::string partial = home().write("partial.json", json{{"protocol", "pto-tune-measure"}, {"version", 1},
                                                                {"results", {{{"id", "c0"}, {"times_s", {1e-5}}}}}}.dump());
  expect_usage_error("db import-measurements " + partial + " --format json --request " + request + " --db " + db(),
                     {"0 results for candidate c1"});
}

}  // namespace
}  // namespace pto
