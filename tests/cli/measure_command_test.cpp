// `pto-tune tune --backend command --measure-cmd CMD` end to end, against a stand-in
// measure command (tests/cli/standin_measure_command.py) that answers the measure
// protocol from a hidden cost function and fails, times out and prints garbage on the
// way: the tuner must still find that function's best over the whole space, give each
// misbehaviour its own clear status, kill a hung command's whole process group, and
// store records that say which command and host measured them. Also: batch (with worker
// processes) and run measure through it, and the options are checked before anything runs. Hermetic: PTO_TUNE_HOME is a temporary folder.
#include <signal.h>

#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <map>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/target.h"
#include "db/tuning_db.h"
#include "tests/cli/cli_driver.h"
#include "tests/temp_dir.h"

namespace pto {
namespace {

using nlohmann::json;
using namespace cli::testing;
using testing::TempDir;

const std::string kStandIn = std::string(PTO_SOURCE_DIR) + "/tests/cli/standin_measure_command.py";
const std::string kWorkload = "--op matmul --shapes 64,32,64 --target ascend910b1 ";

class MeasureCommand : public ::testing::Test {
 protected:
  MeasureCommand() : home_("measure_command_home"), state_("measure_command_state") {
    ::setenv("PTO_TUNE_HOME", home_.str().c_str(), 1);
    ::unsetenv("PTO_TUNE_DB");
  }
  ~MeasureCommand() override { ::unsetenv("PTO_TUNE_HOME"); }
  std::string db() const { return (home_.path() / "tune.db").string(); }
  // The stand-in, misbehaving or not.
  std::string command(bool mischief = false) const {
    return quoted("python3 " + kStandIn + " " + state_.str() + (mischief ? " --mischief" : ""));
  }
  const TempDir& state() const { return state_; }

 private:
  TempDir home_;
  TempDir state_;
};

// The stand-in's log: every candidate it was asked to measure, by config, its hidden cost.
std::map<std::string, double> seen_costs(const TempDir& state) {
  std::map<std::string, double> costs;
  std::ifstream log(state.path() / "seen.jsonl");
  for (std::string line; std::getline(log, line);) {
    const json j = json::parse(line);
    costs[j["config"].get<std::string>()] = j["cost_s"].get<double>();
  }
  return costs;
}

TEST_F(MeasureCommand, FindsTheHiddenBestThroughFailuresTimeoutsAndGarbage) {
  const Result r = pto_tune("tune " + kWorkload + "--strategy exhaustive --backend command --timeout 1 --db " + db() +
                            " --json --measure-cmd " + command(true));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json result = json::parse(r.out);

  // Exhaustive: the stand-in saw the whole feasible space, so its log's cheapest
  // config is the hidden function's best.
  const std::map<std::string, double> costs = seen_costs(state());
  ASSERT_GT(costs.size(), 20u);
  std::string best;
  double best_cost = std::numeric_limits<double>::infinity();
  for (const auto& [config, cost] : costs)
    if (cost < best_cost) best = config, best_cost = cost;
  EXPECT_EQ(TileConfig::parse(best).to_string(), TileConfig::from_json(result["best"]["config"]).to_string());
  EXPECT_NEAR(result["best"]["measured_ns"].get<double>(), best_cost * 1e9, best_cost * 1e9 * 1e-9);
  EXPECT_EQ(result["backend"], "command");

  // Each misbehaviour is a failed candidate with its own status, never a crash.
  const json& failed = result["candidates"]["failed_by_status"];
  EXPECT_GT(failed.value("TIMEOUT", 0), 0) << failed;
  EXPECT_GT(failed.value("WRONG_RESULT", 0), 0) << failed;
  EXPECT_GT(failed.value("RUNTIME_ERROR", 0), 0) << failed;

  const std::unique_ptr<db::TuningDb> store = db::TuningDb::open(db());
  std::map<std::string, int> errors;  // by the start of each failure's message
  for (const search::TuningRecord& rec : store->records()) {
    EXPECT_EQ(rec.backend, "command");
    EXPECT_FALSE(rec.measurement.simulated);
    EXPECT_FALSE(rec.measurement.host.empty());
    if (rec.measurement.status == measure::Status::INFEASIBLE) continue;
    const json detail = json::parse(rec.measurement.detail_json);
    EXPECT_EQ(detail["measured_by"], "command: python3 " + kStandIn + " " + state().str() + " --mischief");
    for (const char* why : {"not JSON", "exited with code 3: stand-in: the device is busy", "process group was killed",
                            "no result for candidate", "not a positive finite number", "expected seconds",
                            "stand-in: kernel launch failed"})
      if (rec.measurement.error.find(why) != std::string::npos) ++errors[why];
  }
  for (const char* why : {"not JSON", "exited with code 3: stand-in: the device is busy", "process group was killed",
                          "no result for candidate", "not a positive finite number", "expected seconds",
                          "stand-in: kernel launch failed"})
    EXPECT_GT(errors[why], 0) << "no candidate failed with '" << why << "'";

  // The hung command's grandchild went with its process group.
  std::ifstream pid_file(state().path() / "sleeper.pid");
  pid_t sleeper = 0;
  ASSERT_TRUE(pid_file >> sleeper);
  EXPECT_EQ(::kill(sleeper, 0), -1);
  EXPECT_EQ(errno, ESRCH);
}

TEST_F(MeasureCommand, OptionsAreCheckedBeforeAnythingRuns) {
  expect_usage_error("tune " + kWorkload + "--backend command --db " + db(), {"--measure-cmd"});
  expect_usage_error("tune " + kWorkload + "--backend sim --db " + db() + " --measure-cmd " + command(),
                     {"backend 'command' or 'npu'", "'sim'"});
  expect_usage_error("tune " + kWorkload + "--backend command --db " + db() + " --measure-cmd ' '", {"--measure-cmd"});
  expect_usage_error("tune --op matmul --shapes 64,64,64 --backend npu --db " + db() + " --measure-cmd " + command(),
                     {"NPU target", "'host'"});
  // npu without a command keeps saying what a CANN backend would need.
  expect_usage_error("tune " + kWorkload + "--backend npu --db " + db(), {"CANN", "--measure-cmd"});
  EXPECT_FALSE(std::filesystem::exists(state().path() / "calls"));
}

TEST_F(MeasureCommand, BatchTunesEveryWorkloadThroughTheCommand) {
  const std::string file = state().write("release.txt", "matmul 64,32,64 fp16\nmatmul 32,32,32 fp16\n");
  const Result r = pto_tune("batch " + file + " --target ascend910b1 --backend command --budget 4 --jobs 2 --json --db " +
                            db() + " --measure-cmd " + command());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(json::parse(r.out)["workloads"]["tuned"], 2) << r.out;
  std::map<std::string, int> records;
  for (const search::TuningRecord& rec : db::TuningDb::open(db())->records()) {
    EXPECT_EQ(rec.backend, "command");
    ++records[rec.workload.key()];
  }
  EXPECT_EQ(records.size(), 2u);
}

TEST_F(MeasureCommand, RunMeasuresOneConfigThroughTheCommand) {
  const Result r = pto_tune("run " + kWorkload + "--backend command --repeats 3 --json --measure-cmd " + command());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json m = json::parse(r.out);
  EXPECT_EQ(m["backend"], "command");
  EXPECT_EQ(m["status"], "OK");
  EXPECT_EQ(m["repetitions"], 3);
  EXPECT_TRUE(m["verified"].get<bool>());
  EXPECT_EQ(m["detail"]["device"], "stand-in:0");
}

}  // namespace
}  // namespace pto
