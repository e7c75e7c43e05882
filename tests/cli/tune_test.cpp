// `pto-tune tune` and its bare form `pto-tune --op ...`: bad arguments give one clear
// line and exit 2 before anything is opened or measured; the model and sim backends tune
// end to end into a temporary database that then holds the winner; --json carries the
// fields the issue names, consistent with each other and with the database; Ctrl-C in
// the middle of a cpu tuning keeps what was measured; the report says whether the
// model's predictions are calibrated; a rerun takes what the database holds and
// measures nothing new, --retune measures again. Hermetic: PTO_TUNE_HOME is a
// temporary folder and every database is given with --db.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/target.h"
#include "core/workload.h"
#include "db/tuning_db.h"
#include "tests/cli/cli_driver.h"
#include "tests/temp_dir.h"

namespace pto {
namespace {

using nlohmann::json;
using namespace cli::testing;
using testing::TempDir;
namespace fs = std::filesystem;

class Tune : public ::testing::Test {
 protected:
  Tune() : home_("tune_home") {
    ::setenv("PTO_TUNE_HOME", home_.str().c_str(), 1);
    ::unsetenv("PTO_TUNE_DB");
  }
  ~Tune() override { ::unsetenv("PTO_TUNE_HOME"); }
  std::string db_path() const { return (home_.path() / "tune.db").string(); }

 private:
  TempDir home_;
};

json tune_json(const std::string& args) {
  const Result r = pto_tune(args);
  EXPECT_EQ(r.exit_code, 0) << args << "\n" << r.err;
  EXPECT_TRUE(r.err.empty()) << "no progress bar when stderr is not a terminal: " << r.err;
  return json::parse(r.out);
}

search::RecordKey key_of(const json& j, const Target& t) {
  return {j["workload"].get<std::string>(), t.fingerprint(), j["backend"].get<std::string>()};
}

// The key of the result's times for its backend: only a real measurement (cpu) is
// measured_ns; the simulator's are simulated_ns, the cost model's predicted_ns.
std::string time_key(const json& j) {
  const std::string backend = j["backend"].get<std::string>();
  return backend == "sim" ? "simulated_ns" : backend == "model" ? "predicted_ns" : "measured_ns";
}

// The fields the issue names, and how they hang together.
void expect_consistent(const json& j, const std::string& db) {
  for (const char* field : {"workload", "target", "backend", "strategy", "best", "default", "speedup_vs_default",
                            "candidates", "elapsed_s", "db"})
    ASSERT_TRUE(j.contains(field)) << field << "\n" << j.dump(2);
  const std::string time = time_key(j);
  for (const std::string& field : {std::string("config"), time, std::string("predicted_ns")})
    ASSERT_TRUE(j["best"].contains(field)) << field << "\n" << j.dump(2);
  for (const std::string& field : {std::string("config"), time}) ASSERT_TRUE(j["default"].contains(field)) << field;
  for (const char* side : {"best", "default"}) {
    EXPECT_EQ(j[side]["provenance"].get<std::string>() + "_ns", time) << side;
    for (const char* other : {"measured_ns", "simulated_ns"})
      EXPECT_TRUE(other == time || !j[side].contains(other)) << side << " has " << other << " for a " << time;
  }
  for (const char* field : {"total", "feasible", "measured", "failed"}) ASSERT_TRUE(j["candidates"].contains(field)) << field;
  const double best = j["best"][time].get<double>(), baseline = j["default"][time].get<double>();
  EXPECT_GT(best, 0);
  EXPECT_LE(best, baseline) << "the winner is never slower than the default";
  double fastest_stored = 0;  // the winner is the fastest record stored for the workload
  for (const auto& r : db::TuningDb::open(db, db::OpenMode::ReadOnly)->records())
    if (r.usable() && r.workload.key() == j["workload"] && (fastest_stored == 0 || r.time_ns() < fastest_stored))
      fastest_stored = r.time_ns();
  EXPECT_DOUBLE_EQ(best, fastest_stored);
  EXPECT_NEAR(j["speedup_vs_default"].get<double>(), baseline / best, 1e-6 * baseline / best);
  EXPECT_GE(j["candidates"]["measured"].get<int64_t>(), 1);
  EXPECT_LE(j["candidates"]["feasible"].get<uint64_t>(), j["candidates"]["total"].get<uint64_t>());
  EXPECT_GE(j["elapsed_s"].get<double>(), 0);
  EXPECT_EQ(j["db"], db);
  ASSERT_FALSE(j["best"]["pypto"].empty());
  EXPECT_TRUE(j["best"]["pypto"][0].get<std::string>().starts_with("pypto.set_")) << j["best"]["pypto"];
}

// The database holds the printed winner as the best record of its key.
void expect_stored(const json& j, const std::string& db, const Target& t) {
  auto store = db::TuningDb::open(db, db::OpenMode::ReadOnly);
  const auto best = store->best(key_of(j, t));
  ASSERT_TRUE(best.has_value());
  EXPECT_EQ(best->config, TileConfig::from_json(j["best"]["config"]));
  EXPECT_DOUBLE_EQ(best->time_ns(), j["best"][time_key(j)].get<double>());
}

TEST_F(Tune, BadArgumentsExitTwoWithOneLine) {
  const std::string ok = "tune --op matmul --shapes 64,64,64 --target ascend910b1 --backend model --db " + db_path() + " ";
  expect_usage_error(ok + "--strategy nosuch", {"--strategy", "nosuch"});
  expect_usage_error(ok + "--budget -3", {"--budget", "-3"});
  expect_usage_error(ok + "--time-limit -1", {"--time-limit"});
  expect_usage_error("tune --op matmul --shapes 64,64,64 --target ascend910b1 --backend nosuch", {"nosuch"});
  expect_usage_error(ok + "--dtype fp7", {"fp7"});
  expect_usage_error("tune --op matmul --shapes 64,64,64 --target ascend910b1 --backend cpu", {"cpu", "ascend910b1"});
  expect_usage_error("tune --op matmul --shapes 64,64 --target ascend910b1", {"matmul"});
  expect_usage_error("tune --op nosuchop --shapes 1", {"nosuchop"});
  expect_usage_error("tune --op matmul", {"shapes"});
  expect_usage_error("--op matmul --shapes 64,64,64 --bogus", {"bogus"});
  for (const char* args : {"tune --op matmul --shapes 64,64 --target ascend910b1", "--op matmul --shapes 64,x,64"}) {
    const Result r = pto_tune(std::string(args) + " --db " + db_path());
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
  EXPECT_FALSE(fs::exists(db_path())) << "bad input opens no database";
}

TEST_F(Tune, ModelBackendEndToEnd) {
  const Target t = load_target("ascend910b1");
  const json j = tune_json("tune --op matmul --shapes 256,512,384 --target ascend910b1 --backend model --budget 16 --json --db " +
                           db_path());
  expect_consistent(j, db_path());
  EXPECT_EQ(j["backend"], "model");
  EXPECT_EQ(j["workload"], "matmul|256,512,384|fp16") << "fp16 is the NPU default";
  EXPECT_LE(j["candidates"]["measured"].get<int64_t>(), 16);
  expect_stored(j, db_path(), t);

  const json host = tune_json("tune --op add --shapes 64,128 --target host --backend model --budget 4 --json --db " + db_path());
  EXPECT_EQ(host["workload"], "add|64,128|fp32") << "fp32 is the host default";
  expect_stored(host, db_path(), load_target("host"));
}

TEST_F(Tune, SimBackendEndToEndAndTheHumanReport) {
  const Target t = load_target("ascend910b1");
  const std::string args = "--op softmax --shapes 256,1024 --target ascend910b1 --budget 12 --db " + db_path();
  const json j = tune_json("tune " + args + " --json");
  expect_consistent(j, db_path());
  EXPECT_EQ(j["backend"], "sim") << "an NPU target defaults to sim";
  expect_stored(j, db_path(), t);

  const Result text = pto_tune("tune " + args);
  ASSERT_EQ(text.exit_code, 0) << text.err;
  for (const std::string& part : std::vector<std::string>{"pypto.set_vec_tile_shapes(", "simulated", "speedup", "default",
                                                          "candidates", "measured", "stored in", db_path()})
    EXPECT_NE(text.out.find(part), std::string::npos) << part << "\n" << text.out;
}

TEST_F(Tune, SaysWhetherItsPredictionsAreCalibrated) {
  // An uncalibrated model prices a datasheet's (or another machine's) cycles: the
  // report says so, and says so no longer once `pto-tune calibrate` has fitted it.
  const std::string args = "--op softmax --shapes 256,1024 --target ascend910b1 --budget 12 --db " + db_path();
  EXPECT_FALSE(tune_json("tune " + args + " --json")["model_calibrated"].get<bool>());
  const Result before = pto_tune("tune " + args);
  ASSERT_EQ(before.exit_code, 0) << before.err;
  EXPECT_NE(before.out.find("by the uncalibrated model: 'pto-tune calibrate' fits it"), std::string::npos) << before.out;

  const Result fit = pto_tune("calibrate --op softmax --shapes 256,1024 --target ascend910b1 --samples 12");
  ASSERT_EQ(fit.exit_code, 0) << fit.err;
  EXPECT_TRUE(tune_json("tune " + args + " --json")["model_calibrated"].get<bool>());
  const Result after = pto_tune("tune " + args);
  ASSERT_EQ(after.exit_code, 0) << after.err;
  EXPECT_NE(after.out.find(", calibrated model)"), std::string::npos) << after.out;
  EXPECT_EQ(after.out.find("uncalibrated"), std::string::npos) << after.out;
}

TEST_F(Tune, TheBareFormIsTune) {
  const Target t = load_target("ascend910b1");
  const std::string args = "--op matmul --shapes 128,256,128 --target ascend910b1 --backend model --budget 8 --seed 3 --json --db " + db_path();
  const json bare = tune_json(args);
  const json named = tune_json("tune " + args);
  expect_consistent(bare, db_path());
  EXPECT_EQ(bare["best"]["config"], named["best"]["config"]) << "same seed, same search";
  EXPECT_EQ(bare["workload"], named["workload"]);
  const Result help = pto_tune("--help");
  EXPECT_NE(help.out.find("tune"), std::string::npos);
}

TEST_F(Tune, ARerunMeasuresNothingNewUnlessRetune) {
  const Target t = load_target("ascend910b1");
  const std::string args = "tune --op matmul --shapes 128,256,128 --target ascend910b1 --backend sim --db " + db_path();
  const json first = tune_json(args + " --json");
  const auto stored = db::TuningDb::open(db_path(), db::OpenMode::ReadOnly)->records().size();
  const json again = tune_json(args + " --json");
  EXPECT_EQ(again["candidates"]["measured"], 0);
  EXPECT_EQ(again["candidates"]["reused"], first["candidates"]["measured"]);
  EXPECT_EQ(again["best"]["config"], first["best"]["config"]);
  EXPECT_EQ(db::TuningDb::open(db_path(), db::OpenMode::ReadOnly)->records().size(), stored);
  const Result text = pto_tune(args);
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find(" 0 measured, " + std::to_string(stored) + " from the database"), std::string::npos) << text.out;

  const json retuned = tune_json(args + " --retune --json");
  EXPECT_EQ(retuned["candidates"]["reused"], 0);
  EXPECT_EQ(retuned["candidates"]["measured"], first["candidates"]["measured"]);
  expect_stored(retuned, db_path(), t);
}

// Starts `pto-tune ARGS` with stdout into `out`; returns its pid.
pid_t spawn(const std::vector<std::string>& args, const std::string& out) {
  const pid_t pid = ::fork();
  if (pid != 0) return pid;
  const int fd = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  ::dup2(fd, STDOUT_FILENO);
  std::vector<char*> argv = {const_cast<char*>(PTO_TUNE_BIN)};
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  ::execv(PTO_TUNE_BIN, argv.data());
  ::_exit(127);
}

size_t usable_records(const std::string& db, const search::RecordKey& key) {
  if (!fs::exists(db)) return 0;
  try {
    return db::TuningDb::open(db, db::OpenMode::ReadOnly)->top_k(key, 100000).size();
  } catch (const std::exception&) {
    return 0;  // not created yet
  }
}

TEST_F(Tune, CtrlCKeepsWhatWasMeasured) {
  const Target host = load_target("host");
  const std::string out = (fs::path(db_path()).parent_path() / "out.json").string();
  const search::RecordKey key{"matmul|160,192,224|fp32", host.fingerprint(), "cpu"};
  const pid_t pid = spawn({"--op", "matmul", "--shapes", "160,192,224", "--strategy", "exhaustive", "--json", "--db", db_path()}, out);
  size_t seen = 0;
  for (int wait = 0; wait < 1200 && seen < 2; ++wait) {  // up to 2 minutes for two results
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    seen = usable_records(db_path(), key);
  }
  ASSERT_GE(seen, 2u) << "the tuner stored nothing";
  ::kill(pid, SIGINT);
  int status = 0;
  ::waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGINT) << "ends by SIGINT after reporting, status " << status;
  std::ifstream in(out);
  const json j = json::parse(in);
  EXPECT_TRUE(j["interrupted"].get<bool>());
  EXPECT_TRUE(j["stopped"].get<bool>());
  EXPECT_GE(j["candidates"]["measured"].get<int64_t>(), static_cast<int64_t>(seen));
  EXPECT_GE(usable_records(db_path(), key), seen);
  expect_stored(j, db_path(), host);
}

}  // namespace
}  // namespace pto
