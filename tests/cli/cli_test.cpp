// The pto-tune executable, driven as a user drives it: exit codes (0 ok, 1 runtime
// failure, 2 bad usage or input), "pto-tune: error: ..." messages that name the bad
// value, help that teaches, listings that agree with the library, and compile/run on
// every op of the library at random small shapes.
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/op_library.h"
#include "core/target.h"
#include "tests/cli/cli_driver.h"
#include "tests/temp_dir.h"

namespace pto {
namespace {

using nlohmann::json;
using namespace cli::testing;

TEST(Cli, HelpListsTheCommandsAndAnExample) {
  const Result r = pto_tune("--help");
  EXPECT_EQ(r.exit_code, 0);
  for (const char* word : {"tune", "ops", "targets", "compile", "run", "Examples:", "pto-tune --op matmul"}) {
    EXPECT_NE(r.out.find(word), std::string::npos) << word;
  }
  const Result bare = pto_tune("");
  EXPECT_EQ(bare.exit_code, 2);
  EXPECT_NE(bare.err.find("Usage: pto-tune COMMAND"), std::string::npos);
}

TEST(Cli, EveryCommandHasHelpWithAnExampleAndItsOptions) {
  const std::pair<const char*, std::vector<const char*>> commands[] = {
      {"ops", {"--json"}},
      {"targets", {"--json"}},
      {"compile", {"--op", "--shapes", "--dtype", "--attrs", "--target", "--config", "--emit"}},
      {"run", {"--op", "--shapes", "--dtype", "--config", "--repeats", "--json", "--trace", "--trace-full"}},
      {"tune", {"--op", "--shapes", "--dtype", "--target", "--backend", "--strategy", "--budget", "--time-limit",
                "--seed", "--db", "--json", "fp16 on an NPU target, fp32 on the host"}},
      {"calibrate", {"--op", "--shapes", "--samples", "--replace", "fp16 on an NPU target, fp32 on the host"}},
      {"report", {"--db", "--out", "--op"}},
  };
  for (const auto& [command, options] : commands) {
    for (const std::string& form : {std::string(command) + " --help", "help " + std::string(command)}) {
      const Result r = pto_tune(form);
      EXPECT_EQ(r.exit_code, 0) << form << r.err;
      EXPECT_NE(r.out.find("Usage: pto-tune " + std::string(command)), std::string::npos) << form;
      EXPECT_NE(r.out.find("Example:\n  pto-tune " + std::string(command)), std::string::npos) << form;
      for (const char* option : options) EXPECT_NE(r.out.find(option), std::string::npos) << form << " " << option;
    }
  }
}

TEST(Cli, UnknownCommandsAndOptionsAreUsageErrorsNamingThem) {
  expect_usage_error("frobnicate", {"unknown command 'frobnicate'", "compile"});
  expect_usage_error("ops --bogus", {"--bogus", "pto-tune ops --help"});
  expect_usage_error("targets extra", {"unexpected argument 'extra'"});
  expect_usage_error("compile --shapes 64,64,64", {"--op"});
  expect_usage_error("compile --op matmul", {"--shapes"});
  expect_usage_error("run --op matmul --shapes 8,8,8 --repeats 0", {"--repeats", "0"});
  expect_usage_error("run --op matmul --shapes 8,8,8 --repeats many", {"--repeats", "many"});
  // Unsigned options would wrap a negative number to 2^64 - n.
  expect_usage_error("run --op matmul --shapes 8,8,8 --seed -1", {"--seed: expected a non-negative integer, got '-1'"});
  expect_usage_error("tune --op matmul --shapes 8,8,8 --seed=-7 --backend model", {"--seed", "'-7'"});
  expect_usage_error("batch nosuch.batch --shard-count -2 --shard 0", {"--shard-count", "'-2'"});
}

TEST(Cli, OptionsThatWouldDoNothingOrNameAnotherFlagAreUsageErrors) {
  expect_usage_error("run --op matmul --shapes 64,64,64 --target ascend910b1 --trace-full", {"--trace-full", "--trace PATH"});
  expect_usage_error("tune --op matmul --shapes 64,64,64 --db :memory:", {"--db", ":memory:", "keeps nothing"});
  expect_usage_error("lookup --op matmul --shapes 64,64,64 --db :memory:", {"--db", ":memory:"});
}

TEST(Cli, BadWorkloadsTargetsAndConfigsNameTheBadValue) {
  const std::string matmul = "compile --op matmul --shapes 64,64,64 ";
  expect_usage_error("compile --op nosuchop --shapes 64,64", {"nosuchop", "matmul"});
  expect_usage_error("compile --op matmul --shapes 64,abc,64", {"'abc'"});
  expect_usage_error("compile --op matmul --shapes 64,64", {"matmul", "[64,64]"});
  expect_usage_error(matmul + "--dtype fp99", {"fp99"});
  expect_usage_error(matmul + "--attrs causal", {"'causal'"});
  expect_usage_error(matmul + "--attrs causal=1", {"causal"});
  expect_usage_error(matmul + "--target ascend999", {"ascend999", "ascend910b1", "host"});
  expect_usage_error(matmul + "--config " + quoted(R"({"cube":{"m":[128,128],"k":[64,-3],"n":[64,64]}})"),
                     {"cube.k[1]: expected a positive integer, got -3"});
  expect_usage_error(matmul + "--config " + quoted(R"({"vec":[64,512],"typo":1})"), {"\"typo\""});
  expect_usage_error(matmul + "--emit assembly", {"assembly"});
  expect_usage_error("run --op add --shapes 0,8", {"0"});

  // A path that names no file is bad input like any other (issue 12).
  expect_usage_error(matmul + "--config @/nonexistent/cfg.json",
                     {"cannot read config file '/nonexistent/cfg.json'", "no such file"});
}

TEST(Cli, OpsListsTheLibrary) {
  const Result table = pto_tune("ops");
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_TRUE(table.out.starts_with("OP")) << table.out;
  const Result r = pto_tune("ops --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json list = json::parse(r.out);
  ASSERT_EQ(list.size(), op_library().size());
  for (size_t i = 0; i < list.size(); ++i) {
    const OpDef& op = op_library()[i];
    EXPECT_EQ(list[i]["name"], op.name);
    EXPECT_EQ(list[i]["signature"], op.dims);
    EXPECT_EQ(list[i]["attrs"], op.attrs);
    EXPECT_EQ(list[i]["expr"], op.takes_expr);
    EXPECT_EQ(list[i]["summary"], op.summary);
    EXPECT_NE(table.out.find(op.name), std::string::npos) << op.name;
  }
}

TEST(Cli, TargetsListEveryBuiltinWithItsFingerprint) {
  const Result table = pto_tune("targets");
  ASSERT_EQ(table.exit_code, 0) << table.err;
  const Result r = pto_tune("targets --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json list = json::parse(r.out);
  ASSERT_EQ(list.size(), builtin_target_names().size());
  for (json j : list) {
    const Target expected = load_target(j["name"].get<std::string>());
    EXPECT_EQ(j["fingerprint"], expected.fingerprint());
    EXPECT_NE(table.out.find(expected.fingerprint()), std::string::npos) << expected.name;
    j.erase("fingerprint");
    EXPECT_EQ(Target::from_json(j).fingerprint(), expected.fingerprint());  // the listing is loadable
  }
  EXPECT_NE(table.out.find("192M"), std::string::npos);  // 910B L2, human-readable
}

TEST(Cli, CompileEmitsEveryStage) {
  for (const char* stage : {"tensor", "tile", "block", "program", "exec"}) {
    const Result r = pto_tune(std::string("compile --op matmul --shapes 96,64,80 --dtype fp16 --emit ") + stage);
    EXPECT_EQ(r.exit_code, 0) << stage << "\n" << r.err;
    EXPECT_TRUE(r.out.starts_with("# matmul|96,64,80|fp16 on ascend910b1")) << r.out;
    EXPECT_GT(r.out.size(), 100u) << stage;
  }
}

TEST(Cli, CompileOfAnInfeasibleConfigIsAnErrorListingTheRule) {
  // mL0 x nL0 x 4 B = 256 KiB of fp32 accumulators overflow the 910B's 128 KiB L0C.
  const Result r = pto_tune("compile --op matmul --shapes 512,512,512 --target Ascend910B1 --config " +
                            quoted(R"({"cube":{"m":[256,256],"k":[64,256],"n":[256,256]}})"));
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("L0C"), std::string::npos) << r.err;
}

TEST(Cli, CompileReadsConfigsAndTargetsFromFiles) {
  const testing::TempDir dir("cli_files");
  json target = load_target("ascend910b1").to_json();
  target["name"] = "half910";
  target["aic_cores"] = 12;
  const std::string target_file = dir.write("half910.json", target.dump(2));
  const std::string config_file = dir.write("cfg.json", R"({"cube":{"m":[64,64],"k":[64,128],"n":[64,64]}})");
  const Result r = pto_tune("compile --op matmul --shapes 128,128,128 --target " + target_file + " --config @" +
                            config_file + " --emit tensor");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("on half910"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(R"("m":[64,64])"), std::string::npos) << r.out;
}

TEST(Cli, RunVerifiesEveryOpAtRandomRaggedShapes) {
  std::mt19937 rng(3);
  for (const OpDef& op : op_library()) {
    std::string shapes;
    for (size_t i = 0; i < op.dims.size(); ++i) {
      if (i) shapes += ",";
      shapes += std::to_string(std::uniform_int_distribution<int>(1, 40)(rng));
    }
    const std::string expr = op.takes_expr ? std::string(" --expr 'mul(add(a, b), 2)'") : "";
    const std::string args = "run --op " + op.name + " --shapes " + shapes + expr + " --repeats 2 --json";
    const Result r = pto_tune(args);
    ASSERT_EQ(r.exit_code, 0) << args << "\n" << r.out << r.err;
    const json j = json::parse(r.out);
    EXPECT_EQ(j["status"], "OK") << args;
    EXPECT_EQ(j["verified"], true) << args;
    EXPECT_LT(j["max_abs_err"].get<double>(), 1e-3) << args;  // fp32, at most 40-long accumulations
    EXPECT_GT(j["time_ns"].get<double>(), 0) << args;
    EXPECT_EQ(j["workload"], op.name + "|" + shapes + "|fp32" + (op.takes_expr ? "|expr=mul(add(a,b),2.0)" : "")) << args;
  }
}

// One rule for the default dtype, whatever the command: fp16 on an NPU target, fp32 on
// the host, so that the same --config (or fusion list) means the same nodes everywhere.
TEST(Cli, OneDefaultDtypeAcrossCommands) {
  for (const auto& [target, dtype] : {std::pair{"ascend910b1", "fp16"}, std::pair{"host", "fp32"}}) {
    const std::string w = std::string("--op add --shapes 64,128 --target ") + target;
    const std::string key = std::string("add|64,128|") + dtype;
    const Result compiled = pto_tune("compile " + w + " --emit tensor");
    EXPECT_TRUE(compiled.out.starts_with("# " + key + " on " + target)) << compiled.out << compiled.err;
    for (const std::string& command : {"explain " + w + " --json --calibration ''", "run " + w + " --repeats 1 --json"}) {
      const Result r = pto_tune(command);
      ASSERT_EQ(r.exit_code, 0) << command << "\n" << r.err;
      EXPECT_EQ(json::parse(r.out)["workload"], key) << command;
    }
  }
}

TEST(Cli, RunPrintsAReadableSummary) {
  const Result r = pto_tune("run --op softmax --shapes 33,70 --repeats 2");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* field : {"workload", "status", "OK", "verified", "yes", "max_abs_err", "median of"}) {
    EXPECT_NE(r.out.find(field), std::string::npos) << field << "\n" << r.out;
  }
}

TEST(Cli, RunOfAnInfeasibleConfigExitsTwoWithTheStatus) {
  // A vec tile needs a size per iteration dim, on the host as on the NPU.
  const Result r = pto_tune("run --op softmax --shapes 33,70 --repeats 1 --json --config " +
                            quoted(R"({"vec":[16]})"));
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_EQ(json::parse(r.out)["status"], "INFEASIBLE");
  EXPECT_EQ(json::parse(r.out)["verified"], false);
  EXPECT_TRUE(r.err.starts_with("pto-tune: error: INFEASIBLE: vec tile rank")) << r.err;
}

}  // namespace
}  // namespace pto
