// A tuning job killed with SIGKILL loses at most the measurement in flight: tune()
// commits each measurement to the database on its own as it arrives. In process, a
// runner that hangs in the middle of measurement k+1 (after telling the test that k are
// done) is killed, and the database holds exactly those k, passes its check and takes a
// re-run that completes. End to end, `pto-tune tune` killed at a random moment leaves a
// database that `pto-tune db check` passes, holding at least every measurement it had
// stored before the kill, and the same command run again completes. `pto-tune batch
// --jobs` killed with SIGKILL leaves no worker running, and its rerun stores as many
// measurements as one clean run.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <random>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/target.h"
#include "core/workload.h"
#include "db/tuning_db.h"
#include "measure/runner.h"
#include "search/tuner.h"
#include "tests/cli/cli_driver.h"
#include "tests/temp_dir.h"

namespace pto {
namespace {

using testing::TempDir;

const Target& npu() {
  static const Target t = load_target("ascend910b1");
  return t;
}

// The model backend, one candidate at a time; before starting measurement `hang_at`
// (counting from 1 over all calls) it writes how many it finished to `done_fd` and
// hangs, as a candidate in flight would when the kill comes.
class HangingRunner : public measure::Runner {
 public:
  HangingRunner(int64_t hang_at, int done_fd)
      : inner_(measure::make_runner("model", npu())), hang_at_(hang_at), done_fd_(done_fd) {}
  std::string name() const override { return "model"; }
  std::vector<measure::Measurement> measure(const Workload& w, const std::vector<TileConfig>& batch,
                                            const measure::OnResult& on_result = {}) override {
    std::vector<measure::Measurement> out;
    for (size_t i = 0; i < batch.size(); ++i) {
      if (++started_ == hang_at_) hang();
      out.push_back(inner_->measure(w, {batch[i]}).front());
      if (on_result && !on_result(i, out.back())) break;
    }
    return out;
  }

 private:
  [[noreturn]] void hang() const {
    const int64_t done = hang_at_ - 1;
    (void)!::write(done_fd_, &done, sizeof done);
    while (true) ::pause();
  }

  std::unique_ptr<measure::Runner> inner_;
  int64_t hang_at_, started_ = 0;
  int done_fd_;
};

search::TuneOptions exhaustive(size_t batch_size) {
  search::TuneOptions o;
  o.strategy = "exhaustive";
  o.batch_size = batch_size;
  return o;
}

TEST(TuneKill, SigkillMidBatchLosesOnlyTheMeasurementInFlight) {
  const Workload w = Workload::parse_key("matmul|37,150,100|fp16");
  std::mt19937_64 rng(5);
  for (int trial = 0; trial < 5; ++trial) {
    const TempDir dir("tune_kill");
    const std::string path = dir.str() + "/t.db";
    const int64_t hang_at = 1 + static_cast<int64_t>(rng() % 30);
    const size_t batch_size = 2 + rng() % 10;  // the hang lands anywhere in a batch
    SCOPED_TRACE("hang at " + std::to_string(hang_at) + ", batch " + std::to_string(batch_size));
    int done[2];
    ASSERT_EQ(::pipe(done), 0);
    const pid_t pid = ::fork();
    if (pid == 0) {
      ::close(done[0]);
      HangingRunner runner(hang_at, done[1]);
      auto db = db::TuningDb::open(path);
      search::tune(w, npu(), runner, *db, exhaustive(batch_size));
      ::_exit(3);  // the runner hangs before the space runs out
    }
    ::close(done[1]);
    int64_t finished = -1;
    ASSERT_EQ(::read(done[0], &finished, sizeof finished), static_cast<ssize_t>(sizeof finished));
    ::close(done[0]);
    ::kill(pid, SIGKILL);
    int status = 0;
    ::waitpid(pid, &status, 0);
    ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << "status " << status;

    auto db = db::TuningDb::open(path);
    EXPECT_EQ(db->check(), std::vector<std::string>{});
    EXPECT_EQ(static_cast<int64_t>(db->records().size()), finished)
        << "every finished measurement is stored, the one in flight is lost";
    std::unique_ptr<measure::Runner> runner = measure::make_runner("model", npu());
    const search::TuneResult again = search::tune(w, npu(), *runner, *db, {});
    EXPECT_FALSE(again.stopped);
    EXPECT_GT(again.counts.measured, 0);
    EXPECT_EQ(db->check(), std::vector<std::string>{});
  }
}

// Starts `pto-tune ARGS` with its output thrown away; returns its pid.
pid_t spawn(const std::vector<std::string>& args) {
  const pid_t pid = ::fork();
  if (pid != 0) return pid;
  std::freopen("/dev/null", "w", stdout);
  std::vector<char*> argv = {const_cast<char*>(PTO_TUNE_BIN)};
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  ::execv(PTO_TUNE_BIN, argv.data());
  ::_exit(127);
}

size_t stored(const std::string& path) {
  try {
    return db::TuningDb::open(path, db::OpenMode::ReadOnly)->records().size();
  } catch (const std::exception&) {
    return 0;  // not created yet
  }
}

TEST(TuneKill, PtoTuneKilledMidRunLeavesASoundDatabaseAndARerunCompletes) {
  const TempDir dir("tune_kill_cli");
  const std::string path = dir.str() + "/t.db";
  // exhaustive with a large budget: every run, the resumed ones too, has hundreds of
  // measurements left, so each kill lands mid-run however fast the machine is.
  const std::vector<std::string> args = {"tune",     "--op",         "matmul",   "--shapes", "96,160,200",
                                         "--target", "ascend910b1",  "--backend", "sim",     "--strategy",
                                         "exhaustive", "--budget",   "2000",      "--db",    path};
  std::mt19937_64 rng(11);
  size_t before_kill = 0;
  for (int kill = 0; kill < 3; ++kill) {
    const pid_t pid = spawn(args);
    const size_t wanted = before_kill + 1 + rng() % 6;
    for (int wait = 0; wait < 1200 && stored(path) < wanted; ++wait)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    std::this_thread::sleep_for(std::chrono::milliseconds(rng() % 40));  // anywhere in a measurement
    const size_t seen = stored(path);
    ASSERT_GE(seen, wanted) << "the tuner stored nothing within a minute";
    ::kill(pid, SIGKILL);
    int status = 0;
    ::waitpid(pid, &status, 0);
    ASSERT_TRUE(WIFSIGNALED(status)) << "killed before it finished, status " << status;
    const cli::testing::Result check = cli::testing::pto_tune("db check --db " + cli::testing::quoted(path));
    EXPECT_EQ(check.exit_code, 0) << check.out << check.err;
    before_kill = stored(path);
    EXPECT_GE(before_kill, seen) << "what was stored before the kill is still there";
  }
  std::string rerun;
  for (const std::string& a : args) rerun += cli::testing::quoted(a) + " ";
  const cli::testing::Result r = cli::testing::pto_tune(rerun + "--json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_FALSE(nlohmann::json::parse(r.out)["stopped"].get<bool>());
  EXPECT_GT(stored(path), before_kill);
  EXPECT_EQ(cli::testing::pto_tune("db check --db " + cli::testing::quoted(path)).exit_code, 0);
}

// The live processes whose command line holds `marker` (a zombie's is empty).
std::vector<pid_t> processes_naming(const std::string& marker) {
  std::vector<pid_t> found;
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const std::string name = entry.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream in(entry.path() / "cmdline");
    const std::string cmdline((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (cmdline.find(marker) != std::string::npos) found.push_back(std::stoi(name));
  }
  return found;
}

// Starts `pto-tune ARGS` (a batch writing into `db`), waits until it stored a few
// measurements and kills it with SIGKILL, the parent only.
void kill_batch_mid_run(const std::vector<std::string>& args, const std::string& db) {
  const pid_t parent = spawn(args);
  for (int wait = 0; wait < 1200 && stored(db) < 3; ++wait) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  ASSERT_GE(stored(db), 3u) << "the workers stored nothing within a minute";
  ::kill(parent, SIGKILL);
  int status = 0;
  ::waitpid(parent, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status)) << "killed before it finished, status " << status;
}

std::vector<std::string> batch_args(const std::string& file, const std::string& db, const std::string& budget,
                                    const std::string& strategy = "auto") {
  return {"batch", file, "--target", "ascend910b1", "--backend", "sim", "--strategy", strategy,
          "--budget", budget, "--jobs", "2", "--db", db};
}

// A batch's workers die with their parent, even by SIGKILL (which it cannot pass on).
// Each worker here has minutes of measurements left (exhaustive, 2000 simulated
// measurements of a 1024-cube matmul each), so one left behind is still running when
// the test looks, 10 s on.
TEST(TuneKill, BatchWorkersDieWithTheirKilledParent) {
  const TempDir dir("batch_kill_workers");
  const std::string file = dir.write("b.txt", "matmul 1024,1024,1024 fp16\nmatmul 1024,1024,2048 fp16\n");
  const std::string db = dir.str() + "/killed.db";
  kill_batch_mid_run(batch_args(file, db, "2000", "exhaustive"), db);
  // The kernel kills the workers as their parent dies; they are gone once they die.
  std::vector<pid_t> left = processes_naming(db);
  for (int wait = 0; wait < 200 && !left.empty(); ++wait) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    left = processes_naming(db);
  }
  EXPECT_TRUE(left.empty()) << left.size() << " workers outlived their parent";
  for (pid_t p : left) ::kill(p, SIGKILL);
}

// A rerun of a killed batch goes on from what was stored: it stores exactly what one
// clean run stores (a worker left behind, racing the rerun, made 58 rows of 42).
TEST(TuneKill, ARerunOfAKilledBatchMeasuresNothingTwice) {
  const TempDir dir("batch_kill_rerun");
  const std::string file = dir.write("b.txt", "matmul 64..1024:pow2,64..1024:pow2,96 fp16\n");
  const std::string killed = dir.str() + "/killed.db", clean = dir.str() + "/clean.db";
  kill_batch_mid_run(batch_args(file, killed, "4"), killed);
  auto run = [&](const std::string& db) {
    std::string command;
    for (const std::string& a : batch_args(file, db, "4")) command += cli::testing::quoted(a) + " ";
    const cli::testing::Result r = cli::testing::pto_tune(command);
    EXPECT_EQ(r.exit_code, 0) << r.err;
  };
  run(killed);
  run(clean);
  EXPECT_EQ(stored(killed), stored(clean));
}
}  // namespace
}  // namespace pto
