// Bad and extreme input through the executable, as the hostile-user session of issue
// 12 tried it: every case ends in the contract's exit code (0 ok, 1 runtime failure,
// 2 bad usage or input) with a message that names the problem, never a crash, a
// runaway allocation, silent success or a mislabelled figure.
#include <cstdlib>
#include <random>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "measure/cpu/host_memory.h"
#include "tests/cli/cli_driver.h"
#include "tests/temp_dir.h"

namespace pto {
namespace {

using nlohmann::json;
using namespace cli::testing;
using testing::TempDir;

std::string deep_json(int depth) { return std::string(depth, '[') + std::string(depth, ']'); }

// Runs a shell line and returns what it prints on stdout.
std::string shell(const std::string& line) {
  std::string out;
  FILE* pipe = ::popen(line.c_str(), "r");
  if (!pipe) return out;
  char buffer[4096];
  for (size_t n; (n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0;) out.append(buffer, n);
  ::pclose(pipe);
  return out;
}

TEST(Robustness, DeeplyNestedJsonIsAUsageErrorWhereverItComesFrom) {
  TempDir dir("robust_deep");
  const std::string file = dir.write("deep.json", deep_json(60000));
  expect_usage_error("compile --op add --shapes 64,64 --config @" + file, {"nested deeper than 64 levels"});
  expect_usage_error("compile --op add --shapes 64,64 --target " + file, {"target file", "nested deeper"});
  expect_usage_error("explain --op add --shapes 64,64 --config " + quoted("{\"vec\":" + deep_json(5000) + "}"),
                     {"nested deeper"});
  expect_usage_error("run --op add --shapes 64,64 --config @" + file, {"nested deeper"});
}

TEST(Robustness, OverflowingShapesAreUsageErrorsNamingTheLimit) {
  expect_usage_error("run --op add --shapes 9223372036854775807,2 --target ascend910b1", {"1 TiB"});
  expect_usage_error("compile --op add --shapes 9223372036854775807,2 --emit tile", {"1 TiB"});
  expect_usage_error("explain --op add --shapes 4294967296,4294967296", {"1 TiB"});
  expect_usage_error("run --op add --shapes 1000000,1000000", {"1 TiB"});
  // Random huge matmuls: refused or compiled, never "OK, 0 ns".
  std::mt19937_64 rng(2);
  for (int trial = 0; trial < 6; ++trial) {
    const int64_t m = int64_t{1} << std::uniform_int_distribution<int>(33, 62)(rng);
    expect_usage_error("explain --op matmul --shapes " + std::to_string(m) + ",4096,4096", {"1 TiB"});
  }
}

// A huge bad value (a shape of 100,000 characters on the command line, which is about
// as long as one argument may be; a 5 MB line in a batch file) is named by its first
// 200 characters and its length, never echoed in full.
TEST(Robustness, AHugeBadValueIsNamedNotEchoed) {
  const TempDir dir("huge_value");
  const std::string shape(100'000, '7');
  const Result lookup = pto_tune("lookup --op matmul --shapes 1,1," + shape + "x --db " + quoted(dir.str() + "/t.db"));
  EXPECT_EQ(lookup.exit_code, 2);
  EXPECT_NE(lookup.err.find("...' (100005 characters)"), std::string::npos) << lookup.err.substr(0, 2000);
  EXPECT_LT(lookup.err.size(), 2000u);
  const std::string key(5'000'000, 'k');
  const Result batch = pto_tune("batch " + quoted(dir.write("b.txt", "matmul " + key + "\n" + key + " 64\n")) +
                                " --backend model --db " + quoted(dir.str() + "/t.db"));
  EXPECT_EQ(batch.exit_code, 2) << batch.err.substr(0, 2000);
  EXPECT_NE(batch.err.find("(5000000 characters)"), std::string::npos) << batch.err.substr(0, 2000);
  EXPECT_LT(batch.err.size(), 4000u);
}

TEST(Robustness, AWorkloadLargerThanHostMemoryIsRefusedBeforeAllocating) {
  const int64_t available = measure::host_bytes_available();
  ASSERT_GT(available, 0);
  // Rows so that one fp32 operand alone is larger than the memory available.
  const int64_t cols = 65536, rows = available / (4 * cols) + 1;
  ASSERT_LE(rows * cols * 4, int64_t{1} << 40) << "a machine with over 1 TiB: the tensor limit comes first";
  expect_usage_error("run --op add --dtype fp32 --shapes " + std::to_string(rows) + "," + std::to_string(cols),
                     {"host memory", "available on this machine"});
}

TEST(Robustness, EachCompileStageIsEmittedWithoutBuildingTheLaterOnes) {
  const std::string big = "compile --op matmul --shapes 2147483648,64,64 --config " +
                          quoted(R"({"cube":{"m":[16,16],"k":[16,16],"n":[16,16]}})");
  const Result tensor = pto_tune(big + " --emit tensor");
  EXPECT_EQ(tensor.exit_code, 0) << tensor.err;
  EXPECT_NE(tensor.out.find("matmul"), std::string::npos);
  const Result tile = pto_tune(big + " --emit tile");
  EXPECT_EQ(tile.exit_code, 0) << tile.err;
  expect_usage_error(big + " --emit program", {"tasks, over the limit of 1048576"});
  expect_usage_error("compile --op add --shapes 8192,8192 --config '{\"vec\":[1,16]}' --emit exec",
                     {"4194304 tasks", "over the limit"});
}

TEST(Robustness, HugeOrSpecialFilesAreRefusedWithAMessage) {
  TempDir dir("robust_files");
  const std::string empty = dir.write("empty.json", "");
  for (const std::string& flag : {std::string("--config @"), std::string("--target ")}) {
    expect_usage_error("compile --op add --shapes 64,64 " + flag + "/dev/zero", {"/dev/zero", "larger than 4 MiB"});
    expect_usage_error("compile --op add --shapes 64,64 " + flag + dir.str(), {"it is a folder"});
    expect_usage_error("compile --op add --shapes 64,64 " + flag + empty, {"is empty"});
  }
  expect_usage_error("compile --op add --shapes 64,64 --config @" + dir.str() + "/missing.json", {"no such file"});
  expect_usage_error("compile --op add --shapes 64,64 --target " + dir.str() + "/missing.json", {"unknown target"});
}

TEST(Robustness, ThreadsBeyondTheCoresAreClampedWithAWarning) {
  const Result r = pto_tune("run --op add --shapes 64,64 --threads 100000 --repeats 1");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("pto-tune: warning: threads 100000 is more than the"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("; using "), std::string::npos) << r.err;
}

TEST(Robustness, AbsurdTargetFiguresAreRejectedNamingTheField) {
  TempDir dir("robust_target");
  const json base = json::parse(pto_tune("targets --json --target ascend910b1").out).at(0);
  const std::pair<const char*, json> cases[] = {
      {"aic_cores", 2147483648}, {"aiv_cores", 0}, {"clock_mhz", 1e-300}, {"hbm_gbps", 1e-300},
      {"l2_gbps", 1e300},        {"ub", -1},       {"gm_read_bpc", 1e-300}};
  for (const auto& [key, value] : cases) {
    json j = base;
    j[key] = value;
    const std::string file = dir.write(std::string(key) + ".json", j.dump());
    expect_usage_error("run --op add --shapes 64,64 --target " + file, {std::string("target.") + key + ": expected a"});
  }
}

TEST(Robustness, AnInvalidFusionPartitionIsBadInputInEveryCommand) {
  const std::string config = quoted(R"({"fusion":[[0],[5]]})");
  for (const std::string& command :
       {std::string("compile"), std::string("explain"), std::string("run --target ascend910b1"),
        std::string("run --target ascend910b1 --backend model"), std::string("run --repeats 1")}) {
    const Result r = pto_tune(command + " --op softmax --shapes 64,64 --config " + config);
    EXPECT_EQ(r.exit_code, 2) << command << "\n" << r.out << r.err;
    EXPECT_NE(r.err.find("fusion"), std::string::npos) << command << "\n" << r.err;
  }
}

TEST(Robustness, OutputThatCannotBeWrittenIsAFailure) {
  const std::string bin = PTO_TUNE_BIN;
  EXPECT_EQ(shell(bin + " ops > /dev/full 2>/dev/null; echo $?"), "1\n");
  EXPECT_NE(shell(bin + " ops 2>&1 > /dev/full").find("cannot write the output"), std::string::npos);
  EXPECT_EQ(shell(bin + " ops >&- 2>/dev/null; echo $?"), "1\n");
  // A reader that is gone before pto-tune writes (the sleep orders it, nothing is timed).
  EXPECT_EQ(shell("bash -c '(sleep 1; " + bin + " targets --json 2>/dev/null) | true; echo ${PIPESTATUS[0]}'"), "1\n");
  EXPECT_EQ(shell(bin + " ops > /dev/null; echo $?"), "0\n");
}

TEST(Robustness, BackendAdviceWorksForTheTarget) {
  const Result host = pto_tune("run --op add --shapes 64,64 --backend npu");
  EXPECT_EQ(host.exit_code, 2);
  EXPECT_NE(host.err.find("use backend 'cpu'"), std::string::npos) << host.err;
  const Result npu = pto_tune("run --op add --shapes 64,64 --target ascend910b1 --backend npu");
  EXPECT_EQ(npu.exit_code, 2);
  EXPECT_NE(npu.err.find("use backend 'sim'"), std::string::npos) << npu.err;
  // The advice, followed, works.
  EXPECT_EQ(pto_tune("run --op add --shapes 64,64 --backend cpu --repeats 1").exit_code, 0);
  EXPECT_EQ(pto_tune("run --op add --shapes 64,64 --target ascend910b1 --backend sim").exit_code, 0);
}

TEST(Robustness, TheCostModelsFigureIsLabelledPredicted) {
  const Result r = pto_tune("run --op add --shapes 256,256 --target ascend910b1 --backend model");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("model (predicted)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("predicted by the cost model"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("simulated"), std::string::npos) << r.out;
  const json j = json::parse(pto_tune("run --op add --shapes 256,256 --target ascend910b1 --backend model --json").out);
  EXPECT_EQ(j["predicted"], true);
  const json sim = json::parse(pto_tune("run --op add --shapes 256,256 --target ascend910b1 --json").out);
  EXPECT_EQ(sim["predicted"], false);
  EXPECT_EQ(sim["simulated"], true);
}

TEST(Robustness, ExplainRejectsAnUnknownBackendAndAMissingCalibrationFolder) {
  expect_usage_error("explain --op add --shapes 64,64 --backend foo", {"--backend", "'foo'", "known: sim"});
  expect_usage_error("explain --op add --shapes 64,64 --calibration /nonexistent", {"--calibration", "/nonexistent"});
  EXPECT_EQ(pto_tune("explain --op add --shapes 64,64 --calibration ''").exit_code, 0);
}

TEST(Robustness, WhatTargetsJsonWritesIsAcceptedBack) {
  TempDir dir("robust_targets_json");
  const std::string one = dir.str() + "/one.json", all = dir.str() + "/all.json";
  ASSERT_EQ(pto_tune("targets --json --target ascend910b2 > " + one).exit_code, 0);
  const Result r = pto_tune("explain --op add --shapes 64,64 --target " + one);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  ASSERT_EQ(pto_tune("targets --json > " + all).exit_code, 0);
  expect_usage_error("explain --op add --shapes 64,64 --target " + all, {"a list of", "--target NAME"});
}

TEST(Robustness, TheCpuTimeoutIsDocumentedAndConfigurable) {
  const Result help = pto_tune("run --help");
  EXPECT_NE(help.out.find("--timeout"), std::string::npos);
  EXPECT_NE(help.out.find("TIMEOUT"), std::string::npos);
  expect_usage_error("run --op add --shapes 64,64 --timeout 0", {"timeout", "got 0"});
  expect_usage_error("run --op add --shapes 64,64 --timeout 1e300", {"timeout", "at most a day"});
  const Result r = pto_tune("run --op matmul --shapes 512,512,512 --timeout 0.001 --json");
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(json::parse(r.out)["status"], "TIMEOUT");
}

TEST(Robustness, NoErrorFigureIsShownWhenNothingWasVerified) {
  const std::string infeasible = " --op add --shapes 64,64 --config '{\"vec\":[64,64],\"nbuffer\":3}' --target ascend910b1";
  const Result sim = pto_tune("run" + infeasible);
  EXPECT_EQ(sim.out.find("max_abs_err"), std::string::npos) << sim.out;
  const Result host = pto_tune("run --op matmul --shapes 64,64,64 --config '{\"fusion\":[[7]]}'");
  EXPECT_EQ(host.exit_code, 2);
  EXPECT_EQ(host.out.find("max_abs_err"), std::string::npos) << host.out;
  const json j = json::parse(pto_tune("run --op matmul --shapes 64,64,64 --config '{\"fusion\":[[7]]}' --json").out);
  EXPECT_TRUE(j["max_abs_err"].is_null());
  const Result ok = pto_tune("run --op add --shapes 64,64 --repeats 1");
  EXPECT_NE(ok.out.find("max_abs_err"), std::string::npos) << ok.out;
}

TEST(Robustness, AcceptedButSuspiciousInputWarns) {
  const Result dup = pto_tune("explain --op add --shapes 64,64 --config '{\"nbuffer\":1,\"nbuffer\":2}'");
  EXPECT_EQ(dup.exit_code, 0);
  EXPECT_NE(dup.err.find("warning: config: key \"nbuffer\" is given more than once"), std::string::npos) << dup.err;
  const Result group = pto_tune(
      "explain --op matmul --shapes 256,256,256 --config "
      "'{\"cube\":{\"m\":[128,128],\"k\":[64,256],\"n\":[128,128]},\"l2_group\":[6,4]}'");
  EXPECT_EQ(group.exit_code, 0) << group.err;
  EXPECT_NE(group.err.find("warning: l2_group [6,4] is larger than the 2x2 tile grid"), std::string::npos) << group.err;
  const Result no_matmul = pto_tune("explain --op add --shapes 64,64 --config '{\"l2_group\":[2,2]}'");
  EXPECT_NE(no_matmul.err.find("l2_group is ignored"), std::string::npos) << no_matmul.err;
  const Result threads = pto_tune("run --op add --shapes 64,64 --target ascend910b1 --threads 4 --seed 3");
  EXPECT_EQ(threads.exit_code, 0) << threads.err;
  EXPECT_NE(threads.err.find("--threads is read by the cpu backend only; backend 'sim' ignores it"), std::string::npos)
      << threads.err;
  EXPECT_NE(threads.err.find("--seed is read by the cpu backend only"), std::string::npos) << threads.err;
  // Nothing suspicious, no warning.
  EXPECT_EQ(pto_tune("explain --op add --shapes 64,64").err, "");
}

}  // namespace
}  // namespace pto
