// `--backend npu` through the shipped runner examples/npu/measure_pypto.py, whole, on a
// stand-in device: tests/data/npu_standin/ holds stand-ins of torch, torch_npu and
// pypto (a JIT that computes on the stand-in tensors and advances a fake device clock
// by a hidden cost of the cube tiles set during the launch, least at one config; some
// tiles give a wrong output, a failed launch or a hang). The runner must load each
// candidate's PyPTO module, apply its tiles, check the output against the reference,
// time between events and answer, so that the tuner finds the hidden best; a user's
// kernel module is used where given; without torch_npu and pypto the runner's message
// reaches the user. Hermetic: PTO_TUNE_HOME is a temporary folder.
#include <cstdlib>
#include <map>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "db/tuning_db.h"
#include "tests/cli/cli_driver.h"
#include "tests/temp_dir.h"

namespace pto {
namespace {

using nlohmann::json;
using namespace cli::testing;
using testing::TempDir;

const std::string kRunner = quoted("python3 " + std::string(PTO_SOURCE_DIR) + "/examples/npu/measure_pypto.py");
const std::string kStandIns = std::string(PTO_SOURCE_DIR) + "/tests/data/npu_standin";
const std::string kWorkload = "--op matmul --shapes 32,32,32 --target ascend910b1 --backend npu --timeout 2 ";

class NpuBridge : public ::testing::Test {
 protected:
  NpuBridge() : home_("npu_bridge_home") {
    ::setenv("PTO_TUNE_HOME", home_.str().c_str(), 1);
    ::setenv("PYTHONPATH", kStandIns.c_str(), 1);
    ::unsetenv("PTO_TUNE_DB");
    ::unsetenv("PTO_TUNE_KERNEL");
  }
  ~NpuBridge() override {
    ::unsetenv("PTO_TUNE_HOME");
    ::unsetenv("PYTHONPATH");
  }
  std::string db() const { return (home_.path() / "tune.db").string(); }
  const TempDir& home() const { return home_; }

 private:
  TempDir home_;
};

TEST_F(NpuBridge, TunesOnTheStandInDeviceAndFindsItsBest) {
  const Result r = pto_tune("tune " + kWorkload + "--strategy exhaustive --json --db " + db() + " --measure-cmd " + kRunner);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json result = json::parse(r.out);
  EXPECT_EQ(result["backend"], "npu");
  // The stand-in pypto's hidden best (TARGET_TILES there), the one config with these tiles.
  EXPECT_EQ(TileConfig::from_json(result["best"]["config"]),
            TileConfig::parse(R"({"cube":{"m":[16,32],"k":[16,32],"n":[32,32]}})"));
  EXPECT_NEAR(result["best"]["measured_ns"].get<double>(), 1e4, 1);
  EXPECT_FALSE(result["best"]["simulated"].get<bool>());
  const json& failed = result["candidates"]["failed_by_status"];
  EXPECT_GT(failed.value("WRONG_RESULT", 0), 0) << failed;
  EXPECT_GT(failed.value("RUNTIME_ERROR", 0), 0) << failed;
  EXPECT_GT(failed.value("TIMEOUT", 0), 0) << failed;

  std::map<std::string, int> seen;
  for (const search::TuningRecord& rec : db::TuningDb::open(db())->records()) {
    const measure::Measurement& m = rec.measurement;
    if (m.status == measure::Status::INFEASIBLE) continue;
    const json detail = json::parse(m.detail_json);
    EXPECT_EQ(detail["device"], "npu:0 Ascend910B1 (stand-in)");
    EXPECT_EQ(detail["measured_by"], "command: python3 " + std::string(PTO_SOURCE_DIR) + "/examples/npu/measure_pypto.py");
    if (m.ok()) {
      EXPECT_TRUE(m.verified);
    }
    for (const char* why : {"max |output - reference| = 1", "launch failed (aclnn error 507015)", "over its 2 s"})
      if (m.error.find(why) != std::string::npos) ++seen[why];
  }
  for (const char* why : {"max |output - reference| = 1", "launch failed (aclnn error 507015)", "over its 2 s"})
    EXPECT_GT(seen[why], 0) << "no candidate failed with '" << why << "'";
}

TEST_F(NpuBridge, UsesTheUsersKernelModule) {
  // The kernel sets no tiles of its own (the runner applies the candidate's first) and its
  // reference is off by 2, so that its use shows.
  const std::string kernel = home().write("my_matmul.py",
                                          "def kernel(pypto, a, b, out):\n"
                                          "    out[:] = pypto.matmul(a, b, pypto.DT_FP16)\n\n"
                                          "def reference(torch, a, b):\n"
                                          "    ref = torch.matmul(a.float(), b.float())\n"
                                          "    return ref + torch.Tensor(ref.shape, [2.0] * len(ref.data))\n");
  const Result r = pto_tune("run " + kWorkload + "--json --measure-cmd " + quoted("python3 " + std::string(PTO_SOURCE_DIR) +
                                                                                   "/examples/npu/measure_pypto.py --kernel " + kernel));
  EXPECT_EQ(r.exit_code, 1) << r.err;
  const json m = json::parse(r.out);
  EXPECT_EQ(m["status"], "WRONG_RESULT");
  EXPECT_NE(m["error"].get<std::string>().find("max |output - reference| = 2"), std::string::npos) << m["error"];
}

TEST_F(NpuBridge, WithoutTheNpuPackagesTheRunnerSaysWhatIsMissing) {
  const TempDir empty("npu_bridge_no_packages");
  ::setenv("PYTHONPATH", empty.str().c_str(), 1);
  const Result r = pto_tune("run " + kWorkload + "--measure-cmd " + kRunner);
  EXPECT_EQ(r.exit_code, 1);
  for (const char* part : {"RUNTIME_ERROR", "measure_pypto.py: cannot import", "needs torch, torch_npu and pypto"})
    EXPECT_NE(r.err.find(part), std::string::npos) << part << " missing from: " << r.err;
}

}  // namespace
}  // namespace pto
