// `pto-tune tune/lookup --emit pypto`: the PyPTO module of the winner (or of the config
// the lookup serves) on stdout instead of the report, the config in its header the one the
// database holds; another --emit value, or --emit with --json, is a usage error naming it.
// tests/python/test_pypto_module.py runs such modules against a stand-in pypto.
#include <cstdlib>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/cli/cli_driver.h"
#include "tests/temp_dir.h"

namespace pto {
namespace {

using namespace cli::testing;

class EmitPypto : public ::testing::Test {
 protected:
  EmitPypto() : home_("emit_home") { ::setenv("PTO_TUNE_HOME", home_.str().c_str(), 1); }
  ~EmitPypto() override { ::unsetenv("PTO_TUNE_HOME"); }
  std::string db() const { return " --db " + quoted((home_.path() / "tune.db").string()); }
  std::filesystem::path home() const { return home_.path(); }

 private:
  testing::TempDir home_;
};

const std::string kWorkload = " --op matmul_bias_gelu --shapes 200,192,320 --target ascend910b1";

// The text after `prefix` on the line that starts with it.
std::string line_after(const std::string& text, const std::string& prefix) {
  const size_t at = text.find("\n" + prefix);
  if (at == std::string::npos) return "";
  const size_t start = at + 1 + prefix.size();
  return text.substr(start, text.find('\n', start) - start);
}

void expect_module(const Result& r) {
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(r.out.starts_with("# PyPTO tiles for matmul_bias_gelu|200,192,320|fp16 on ascend910b1")) << r.out;
  for (const char* part : {"\nTILES = Tiles(", "\ndef tiles_for(shape):", "\ndef apply(pypto, stage=None, tiles=TILES):",
                           "\nJIT_OPTIONS = ", "\nTENSORS = {", "\ndef kernel(pypto, a, b, bias, y, tiles=TILES):",
                           "pypto.matmul(", "y[:] = pypto.cast(gelu, pypto.DT_FP16)"})
    EXPECT_NE(r.out.find(part), std::string::npos) << part << "\n" << r.out;
  EXPECT_EQ(r.out.find("best config"), std::string::npos) << "the module replaces the report";
}

TEST_F(EmitPypto, TuneAndLookupPrintTheModuleOfTheStoredConfig) {
  const Result tuned = pto_tune("tune" + kWorkload + " --backend model --budget 4" + db() + " --emit pypto");
  expect_module(tuned);
  EXPECT_TRUE(tuned.err.empty()) << tuned.err;
  EXPECT_NE(line_after(tuned.out, "# from: ").find("pto-tune tune, model backend"), std::string::npos) << tuned.out;

  const Result looked_up = pto_tune("lookup" + kWorkload + db() + " --emit pypto");
  expect_module(looked_up);
  EXPECT_NE(line_after(looked_up.out, "# from: ").find(": exact"), std::string::npos) << looked_up.out;
  const Result json = pto_tune("lookup" + kWorkload + db() + " --json");
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const nlohmann::json stored = nlohmann::json::parse(json.out)["config"];
  EXPECT_EQ(nlohmann::json::parse(line_after(tuned.out, "# config: ")), stored);
  EXPECT_EQ(nlohmann::json::parse(line_after(looked_up.out, "# config: ")), stored);
}

// Runs `script` with the module at `module_path` imported as `tuned`; its stdout.
std::string run_python(const std::filesystem::path& module_path, const std::string& script) {
  const std::string command = "cd " + quoted(module_path.parent_path().string()) + " && python3 -c " +
                              quoted("import " + module_path.stem().string() + " as tuned\n" + script);
  FILE* pipe = ::popen(command.c_str(), "r");
  std::string out;
  char buffer[4096];
  for (size_t n; pipe && (n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0;) out.append(buffer, n);
  if (pipe) ::pclose(pipe);
  return out;
}

// A dynamic M: a tile set per tuned M (and --shapes' own), each serving the sizes up to
// its bound; tiles_for picks the bucket of a shape's M.
TEST_F(EmitPypto, ADynamicDimGetsATileSetPerBucket) {
  for (const char* m : {"16", "256"})
    ASSERT_EQ(pto_tune(std::string("tune --op matmul --shapes ") + m + ",512,512 --target ascend910b1 --backend model "
                       "--budget 4" + db()).exit_code, 0);
  const std::string lookup = "lookup --op matmul --shapes 1000,512,512 --target ascend910b1" + db() + " --emit pypto";
  const Result r = pto_tune(lookup + " --dynamic M");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* part : {"DYNAMIC_DIM = 0", "# M <= 16: ", "# from: matmul|16,512,512|fp16: exact",
                           "# M <= 256: ", "# M <= 1000: ",
                           "# from: matmul|1000,512,512|fp16: default (the model ranks it above 2 tuned neighbours' configs)"})
    EXPECT_NE(r.out.find(part), std::string::npos) << part << "\n" << r.out;
  const Result json16 = pto_tune("lookup --op matmul --shapes 16,512,512 --target ascend910b1" + db() + " --json");
  const nlohmann::json tuned16 = nlohmann::json::parse(json16.out)["config"]["cube"];

  const std::filesystem::path module = home() / "dynamic_m.py";
  std::ofstream(module) << r.out;
  const std::string picked = run_python(
      module, "print([b for b, _ in tuned.BUCKETS])\n"
              "print(tuple(tuned.tiles_for((9, 512, 512)).main.cube.m), tuned.tiles_for((17, 512, 512)) is "
              "tuned.BUCKETS[1][1], tuned.tiles_for((5000, 512, 512)) is tuned.BUCKETS[-1][1])");
  EXPECT_EQ(picked, "[16, 256, 1000]\n(" + std::to_string(tuned16["m"][0].get<int>()) + ", " +
                        std::to_string(tuned16["m"][1].get<int>()) + ") True True\n");

  const Result given = pto_tune(lookup + " --dynamic M --buckets 1,64,4096");
  EXPECT_NE(given.out.find("# M <= 64: "), std::string::npos) << given.out;
  expect_usage_error(lookup + " --dynamic Q", {"--dynamic", "'Q'", "M, K, N"});
  expect_usage_error(lookup + " --dynamic M --buckets 64,16", {"--buckets", "rise", "64,16"});
  expect_usage_error(lookup + " --buckets 16", {"--buckets needs --dynamic"});
  expect_usage_error("lookup --op matmul --shapes 1000,512,512" + db() + " --dynamic M", {"--dynamic", "--emit pypto"});
}

TEST_F(EmitPypto, OtherFormatsAndJsonAreUsageErrors) {
  for (const char* command : {"tune", "lookup"}) {
    expect_usage_error(std::string(command) + kWorkload + db() + " --emit cpp", {"--emit", "'cpp'", "pypto"});
    expect_usage_error(std::string(command) + kWorkload + db() + " --emit pypto --json", {"--emit pypto", "--json"});
  }
}

TEST_F(EmitPypto, HelpTeachesIt) {
  for (const char* command : {"tune", "lookup"}) {
    const Result r = pto_tune(std::string(command) + " --help");
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("--emit pypto"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("--emit arg"), std::string::npos) << r.out;
  }
}

}  // namespace
}  // namespace pto
