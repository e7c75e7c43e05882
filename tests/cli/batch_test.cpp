// `pto-tune batch` as a release engineer drives it, on the model backend (and sim for
// the lookups) with small shapes: malformed files exit 2 naming the problem; a second
// run skips what the first tuned; a SIGKILLed run resumes with nothing lost and
// nothing tuned twice; SIGTERM ends with the summary; shards run as separate
// processes and merged, and --jobs workers on one database, serve the same lookups as
// one process; the longest workloads start first, and --json says how busy the workers
// were and what the critical path was; the shipped Slurm script and Kubernetes
// manifest parse.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "batch/batch_file.h"
#include "core/config_chain.h"
#include "core/target.h"
#include "db/config_lookup.h"
#include "db/tuning_db.h"
#include "search/model_pick.h"
#include "tests/cli/cli_driver.h"
#include "tests/temp_dir.h"

namespace pto {
namespace {

using nlohmann::json;
using namespace cli::testing;
using testing::TempDir;
namespace fs = std::filesystem;

const char* kTarget = "ascend910b1";

// `n` small matmuls and softmaxes, one a line, with a range among them.
std::string batch_text(int n) {
  std::string text = "# test batch\n";
  for (int i = 0; i < n; ++i) {
    const int m = 16 * (i + 1);
    text += i % 2 ? "softmax " + std::to_string(m) + ",256\n" : "matmul " + std::to_string(m) + ",64,64 fp16\n";
  }
  return text;
}

json batch_json(const std::string& args, int expected_exit = 0) {
  const Result r = pto_tune("batch " + args + " --json");
  EXPECT_EQ(r.exit_code, expected_exit) << args << "\n" << r.err;
  return json::parse(r.out);
}

int64_t count(const json& summary, const std::string& status) {
  return summary["workloads"].contains(status) ? summary["workloads"][status].get<int64_t>() : 0;
}

// The geometric mean over the stored workloads of default time / best time, each from
// the database: the default's record (strategy "default") and the fastest usable one.
double geomean_speedup_stored(const std::string& db) {
  std::map<std::string, std::pair<double, double>> times;  // workload: default, best
  for (const auto& r : db::TuningDb::open(db, db::OpenMode::ReadOnly)->records()) {
    if (!r.usable()) continue;
    auto [it, fresh] = times.try_emplace(r.workload.key(), 0.0, r.time_ns());
    it->second.second = std::min(it->second.second, r.time_ns());
    if (r.strategy == "default") it->second.first = r.time_ns();
  }
  double log_sum = 0;
  for (const auto& [key, t] : times) {
    EXPECT_GT(t.first, 0) << key << " has no record of its default";
    log_sum += std::log(t.first / t.second);
  }
  return times.empty() ? 1 : std::exp(log_sum / static_cast<double>(times.size()));
}

std::map<std::string, size_t> records_per_workload(const std::string& db) {
  std::map<std::string, size_t> n;
  for (const auto& r : db::TuningDb::open(db, db::OpenMode::ReadOnly)->records()) ++n[r.workload.key()];
  return n;
}

TEST(BatchCli, MalformedFilesExit2NamingTheProblem) {
  const TempDir dir("batch_bad");
  const std::string db = " --db " + quoted(dir.str() + "/t.db");
  expect_usage_error("batch " + quoted(dir.write("bad.json", "[{\"op\":")) + db, {"bad.json", "not valid JSON"});
  expect_usage_error("batch " + quoted(dir.write("empty.txt", "")) + db, {"empty.txt", "is empty"});
  expect_usage_error("batch " + quoted(dir.write("op.txt", "nosuchop 64,64\n")) + " --strict" + db, {"line 1", "nosuchop"});
  expect_usage_error("batch " + quoted(dir.write("range.txt", "matmul 64,64,64\nmatmul 1..64:cube,64,64\n")) + " --strict" + db,
                     {"line 2", "cube"});
  expect_usage_error("batch " + quoted(dir.str() + "/missing.txt") + db, {"missing.txt", "cannot read"});
  expect_usage_error("batch" + db, {"FILE"});
  expect_usage_error("batch " + quoted(dir.write("ok.txt", "matmul 64,64,64\n")) + " --shard 3/3" + db, {"3/3"});
  expect_usage_error("batch " + quoted(dir.str() + "/ok.txt") + " --jobs 100000" + db, {"--jobs", "per core", "100000"});
  expect_usage_error("batch " + quoted(dir.str()) + db, {"is a folder"});
  // The tuning job's rules (search/tune_request.h), for the flags and for an entry's own budget.
  expect_usage_error("batch " + quoted(dir.str() + "/ok.txt") + " --strategy nosuch" + db, {"--strategy 'nosuch'"});
  expect_usage_error("batch " + quoted(dir.str() + "/ok.txt") + " --budget 1" + db, {"--budget 1"});
  expect_usage_error("batch " + quoted(dir.str() + "/ok.txt") + " --time-limit -1" + db, {"--time-limit -1"});
  expect_usage_error("batch " + quoted(dir.write("budget.txt", "matmul 64,64,64 budget=1\n")) + " --strict" + db,
                     {"line 1", "budget 1", "at least 2"});
  EXPECT_FALSE(std::filesystem::exists(dir.str() + "/t.db")) << "a --strict stop or a bad option opened the database";
}

// Lines that differ only in what the defaults fill in (the target's dtype, the
// command's target and backend) are one workload: tuned once, the repeat named.
TEST(BatchCli, EntriesThatDifferOnlyInDefaultsAreTunedOnce) {
  const TempDir dir("batch_defaults");
  const std::string file = dir.write("b.txt", std::string("matmul 64,64,64\nmatmul 64,64,64 fp16\n") +
                                                  "matmul 64,64,64 - target=" + kTarget + " backend=model\nsoftmax 64,256\n");
  const std::string db = dir.str() + "/t.db";
  const Result r = pto_tune("batch " + quoted(file) + " --target " + kTarget + " --backend model --budget 2 --json --db " + quoted(db));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(count(json::parse(r.out), "tuned"), 2);
  EXPECT_EQ(records_per_workload(db).size(), 2u);
  for (const std::string line : {"line 2", "line 3"}) EXPECT_NE(r.err.find(line + " (matmul|64,64,64|fp16) is line 1 again"), std::string::npos) << r.err;
}

// Each tuned workload's best time is keyed by its provenance: neither the simulator's
// nor the cost model's time is called measured.
TEST(BatchCli, ResultsNameEachBestTimeByItsProvenance) {
  const TempDir dir("batch_provenance");
  const std::string file = dir.write("b.txt", "matmul 64,64,64\nsoftmax 64,256 - backend=sim\n");
  const json s = batch_json(quoted(file) + " --target " + kTarget + " --backend model --budget 2 --db " +
                            quoted(dir.str() + "/t.db"));
  ASSERT_EQ(s["results"].size(), 2u) << s.dump(2);
  for (const json& r : s["results"]) {
    const std::string provenance = r["backend"] == "sim" ? "simulated" : "predicted";
    EXPECT_EQ(r["provenance"], provenance) << r.dump();
    EXPECT_GT(r.value("best_" + provenance + "_ns", 0.0), 0) << r.dump();
    EXPECT_FALSE(r.contains("best_measured_ns")) << r.dump();
  }
}

TEST(BatchCli, BadEntriesAreSkippedTheRestTunedAndTheRunExits2) {
  const TempDir dir("batch_skip");
  const std::string file = dir.write("b.txt", "matmul 32,64,64 fp16\nnosuchop 1,2\nmatmul 1..64:pow3,8,8\nsoftmax 16,256\n"
                                               "add 8,64 backend=nosuch\nadd 8,128 backend=npu\n");
  const Result r = pto_tune("batch " + quoted(file) + " --target " + kTarget + " --backend model --budget 4 --json --db " +
                            quoted(dir.str() + "/t.db"));
  EXPECT_EQ(r.exit_code, 2) << r.err;
  for (const char* part : {"line 2", "line 3", "line 5", "unknown backend 'nosuch'", "line 6", "'npu'"})
    EXPECT_NE(r.err.find(part), std::string::npos) << part << "\n" << r.err;
  const json s = json::parse(r.out);
  EXPECT_EQ(count(s, "tuned"), 2);
  EXPECT_EQ(count(s, "bad_entry"), 4);
}

TEST(BatchCli, ASecondRunSkipsWhatTheFirstTunedAndRetuneForcesIt) {
  const TempDir dir("batch_resume");
  const std::string file = dir.write("b.txt", batch_text(6) + "matmul M=16..64:step16,32,32 fp16\n");
  const std::string args = quoted(file) + " --target " + kTarget + " --backend model --budget 4 --db " + quoted(dir.str() + "/t.db");
  const json first = batch_json(args);
  EXPECT_EQ(count(first, "tuned"), 10);
  EXPECT_NEAR(first["geomean_speedup"].get<double>(), geomean_speedup_stored(dir.str() + "/t.db"), 1e-9);
  const auto records = records_per_workload(dir.str() + "/t.db");
  EXPECT_EQ(records.size(), 10u);
  const json second = batch_json(args);
  EXPECT_EQ(count(second, "skipped"), 10);
  EXPECT_EQ(count(second, "tuned"), 0);
  EXPECT_EQ(records_per_workload(dir.str() + "/t.db"), records) << "a skipped workload was measured";
  EXPECT_EQ(count(batch_json(args + " --retune"), "tuned"), 10);
}

// The review's case: a record of an older compiler, twice as fast as anything today's
// finds, imported beside a tuned workload, made every rerun tune it again.
TEST(BatchCli, AStaleRecordNeverDecidesWhetherAWorkloadIsTuned) {
  const TempDir dir("batch_stale");
  const std::string file = dir.write("b.txt", "matmul 64,64,64 fp16\n");
  const auto args = [&](const std::string& db) {
    return quoted(file) + " --target " + kTarget + " --backend model --budget 4 --db " + quoted(dir.str() + "/" + db);
  };
  ASSERT_EQ(count(batch_json(args("fresh.db")), "tuned"), 1);
  search::TuningRecord stale = db::TuningDb::open(dir.str() + "/fresh.db")->best_records().at(0);
  stale.versions.compiler = "0.0.1";
  stale.measurement.stats.median_ns /= 2;
  for (const std::string db : {"fresh.db", "stale.db"}) db::TuningDb::open(dir.str() + "/" + db)->commit(std::vector{stale});

  EXPECT_EQ(count(batch_json(args("fresh.db")), "skipped"), 1) << "the stale record made a tuned workload untuned";
  EXPECT_EQ(count(batch_json(args("stale.db")), "tuned"), 1) << "a workload only a stale record tuned was skipped";
  EXPECT_EQ(count(batch_json(args("stale.db")), "skipped"), 1);
}

// Starts `pto-tune batch ARGS --json` as a child with stdout into `out`; returns its pid.
pid_t start_batch(const std::string& args, const std::string& out) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::execl("/bin/sh", "sh", "-c", ("exec " + std::string(PTO_TUNE_BIN) + " batch " + args + " --json >" + out + " 2>/dev/null").c_str(),
            static_cast<char*>(nullptr));
    ::_exit(127);
  }
  return pid;
}

size_t journal_lines(const std::string& journal, const std::string& word) {
  std::ifstream in(journal);
  size_t n = 0;
  for (std::string line; std::getline(in, line);) n += line.starts_with(word + " ");
  return n;
}

// Waits until the journal notes `done` finished workloads (or 60 s pass).
void wait_for_done(const std::string& journal, size_t done) {
  for (int i = 0; i < 6000 && journal_lines(journal, "done") < done; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ASSERT_GE(journal_lines(journal, "done"), done) << "the batch never got going";
}

TEST(BatchCli, ASigkilledRunResumesWithNothingLostAndNothingTunedTwice) {
  const TempDir dir("batch_kill");
  const int n = 300;
  const std::string db = dir.str() + "/t.db";
  const std::string args = quoted(dir.write("b.txt", batch_text(n))) + " --target " + kTarget +
                           " --backend sim --budget 3 --db " + quoted(db);
  const pid_t pid = start_batch(args, dir.str() + "/out1.json");
  wait_for_done(db + ".batch-journal", 3);
  ::kill(pid, SIGKILL);
  int status = 0;
  ::waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status));
  const size_t done_before = journal_lines(db + ".batch-journal", "done");
  ASSERT_LT(done_before, static_cast<size_t>(n)) << "the batch finished before the kill; make it longer";
  const auto records_before = records_per_workload(db);

  const json resumed = batch_json(args);
  EXPECT_EQ(static_cast<size_t>(count(resumed, "skipped")), done_before);
  EXPECT_EQ(static_cast<size_t>(count(resumed, "tuned")), n - done_before);
  EXPECT_EQ(count(resumed, "failed"), 0);
  const auto records_after = records_per_workload(db);
  EXPECT_EQ(records_after.size(), static_cast<size_t>(n)) << "a workload was lost";
  size_t kept = 0;
  for (const auto& [key, k] : records_before) kept += records_after.at(key) == k;
  EXPECT_GE(kept + 1, done_before) << "workloads finished before the kill were measured again";
  EXPECT_EQ(journal_lines(db + ".batch-journal", "done"), static_cast<size_t>(n)) << "each workload finished once";
  EXPECT_EQ(count(batch_json(args), "skipped"), n);
}

TEST(BatchCli, SigtermStopsAfterTheMeasurementInFlightWithTheSummary) {
  const TempDir dir("batch_term");
  const std::string db = dir.str() + "/t.db";
  const std::string out = dir.str() + "/out.json";
  const pid_t pid = start_batch(quoted(dir.write("b.txt", batch_text(300))) + " --target " + kTarget +
                                    " --backend sim --budget 3 --db " + quoted(db),
                                out);
  wait_for_done(db + ".batch-journal", 2);
  ::kill(pid, SIGTERM);
  int status = 0;
  ::waitpid(pid, &status, 0);
  std::ifstream in(out);
  const json s = json::parse(in);
  EXPECT_TRUE(s["interrupted"].get<bool>());
  EXPECT_GE(count(s, "tuned"), 2);
  EXPECT_GT(count(s, "not_started"), 0);
}

// The config and source every workload of the file gets from a database.
std::vector<std::string> lookups(const std::string& db, const std::string& file) {
  ConfigChain provider({std::make_shared<db::DbConfigProvider>(db), std::make_shared<search::ModelPickProvider>()});
  const Target t = load_target(kTarget);
  std::vector<std::string> out;
  for (batch::BatchEntry e : batch::read_batch_file(file).entries) {
    e.workload.dtype = DType::F16;  // the NPU target's default, as the batch used
    const ConfigChoice c = provider.choose(e.workload, t);
    out.push_back(e.workload.key() + " " + c.describe() + " " + c.config.to_string());
  }
  return out;
}

class BatchShards : public ::testing::TestWithParam<std::string> {};

TEST_P(BatchShards, MergedShardsAndParallelWorkersServeTheSameLookupsAsOneProcess) {
  const std::string backend = GetParam();
  const TempDir dir("batch_shards_" + backend);
  const std::string file = dir.write("b.txt", batch_text(12));
  const std::string common = quoted(file) + " --target " + kTarget + " --backend " + backend + " --budget 4";
  batch_json(common + " --db " + quoted(dir.str() + "/single.db"));

  std::vector<pid_t> shards;
  for (int i = 0; i < 3; ++i)
    shards.push_back(start_batch(common + " --shard " + std::to_string(i) + "/3 --db " + quoted(dir.str() + "/shard" + std::to_string(i) + ".db"),
                                 dir.str() + "/shard" + std::to_string(i) + ".json"));
  int64_t tuned = 0;
  for (size_t i = 0; i < shards.size(); ++i) {
    int status = 0;
    ::waitpid(shards[i], &status, 0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    std::ifstream in(dir.str() + "/shard" + std::to_string(i) + ".json");
    tuned += count(json::parse(in), "tuned");
  }
  EXPECT_EQ(tuned, 12) << "the shards did not split the batch exactly";
  const std::string shard_dbs = quoted(dir.str() + "/shard0.db") + " " + quoted(dir.str() + "/shard1.db") + " " +
                                quoted(dir.str() + "/shard2.db");
  ASSERT_EQ(pto_tune("db merge " + shard_dbs + " --into " + quoted(dir.str() + "/merged.db")).exit_code, 0);

  const json parallel = batch_json(common + " --jobs 2 --db " + quoted(dir.str() + "/jobs.db"));
  EXPECT_EQ(count(parallel, "tuned"), 12);

  const std::vector<std::string> single = lookups(dir.str() + "/single.db", file);
  ASSERT_EQ(single.size(), 12u);
  for (const std::string& line : single) EXPECT_NE(line.find(" exact "), std::string::npos) << line;
  EXPECT_EQ(lookups(dir.str() + "/merged.db", file), single);
  EXPECT_EQ(lookups(dir.str() + "/jobs.db", file), single);
}

INSTANTIATE_TEST_SUITE_P(Backends, BatchShards, ::testing::Values("model", "sim"));

// The journal notes each workload as it starts: one process takes the longest first.
TEST(BatchCli, TheLongestWorkloadsGoFirst) {
  const TempDir dir("batch_longest");
  const std::string db = dir.str() + "/t.db";
  const std::string file = dir.write("b.txt", "matmul 16,64,64 fp16\nsoftmax 64,256\nmatmul 2048,2048,1024 fp16\nmatmul 256,512,512 fp16\n");
  batch_json(quoted(file) + " --target " + kTarget + " --backend model --budget 2 --db " + quoted(db));
  std::ifstream in(db + ".batch-journal");
  std::vector<std::string> started;
  for (std::string word, key; in >> word && std::getline(in >> std::ws, key);)
    if (word == "start") started.push_back(key.substr(0, key.find(' ')));
  EXPECT_EQ(started, (std::vector<std::string>{"matmul|2048,2048,1024|fp16", "matmul|256,512,512|fp16",
                                               "softmax|64,256|fp16", "matmul|16,64,64|fp16"}));
}

// --json says how busy the workers were and what the critical path was; the workers
// claim their workloads, so each is tuned once, by one of them.
TEST(BatchCli, JsonReportsTheWorkersBusyFractionAndTheCriticalPath) {
  const TempDir dir("batch_busy");
  const int n = 8;
  const std::string db = dir.str() + "/t.db";
  const json s = batch_json(quoted(dir.write("b.txt", batch_text(n))) + " --target " + kTarget +
                            " --backend sim --budget 3 --jobs 2 --db " + quoted(db));
  EXPECT_EQ(count(s, "tuned"), n);
  for (const auto& [key, records] : records_per_workload(db)) EXPECT_EQ(records, 3u) << key << " tuned twice";
  EXPECT_EQ(journal_lines(db + ".batch-journal", "start"), static_cast<size_t>(n));
  const json& workers = s["workers"];
  EXPECT_EQ(workers["count"], 2);
  ASSERT_EQ(workers["busy_s"].size(), 2u);
  const double wall = s["elapsed_s"].get<double>(), busy = workers["busy_fraction"].get<double>();
  EXPECT_GT(busy, 0);
  EXPECT_LE(busy, 1);
  for (const json& b : workers["busy_s"]) EXPECT_LE(b.get<double>(), wall);
  EXPECT_GT(workers["cpu_s"].get<double>(), 0);
  const json& critical = s["critical_path"];
  ASSERT_TRUE(critical.is_object()) << s.dump();
  EXPECT_GT(critical["seconds"].get<double>(), 0);
  EXPECT_LE(critical["seconds"].get<double>(), wall);
  double longest = 0;
  for (const json& r : s["results"]) longest = std::max(longest, r["seconds"].get<double>());
  EXPECT_EQ(critical["seconds"].get<double>(), longest);

  const Result text = pto_tune("batch " + quoted(dir.str() + "/b.txt") + " --target " + kTarget +
                               " --backend sim --budget 3 --retune --db " + quoted(db));
  EXPECT_NE(text.out.find("critical path"), std::string::npos) << text.out;
}

TEST(BatchCli, TotalBudgetIsSpentAcrossTheBatch) {
  const TempDir dir("batch_total");
  const std::string args = quoted(dir.write("b.txt", batch_text(6))) + " --target " + kTarget +
                           " --backend model --db " + quoted(dir.str() + "/t.db") + " --total-budget ";
  const json s = batch_json(args + "40");
  EXPECT_EQ(count(s, "tuned"), 6);
  EXPECT_LE(s["measurements"].get<int64_t>(), 40);
  expect_usage_error("batch " + args + "5 --retune", {"5", "6 workloads"});
}

// Every (workload, config) measured in a database, with how often.
std::map<std::string, size_t> measured_pairs(const std::string& db) {
  std::map<std::string, size_t> n;
  for (const auto& r : db::TuningDb::open(db, db::OpenMode::ReadOnly)->records())
    ++n[r.workload.key() + " " + r.config.to_string()];
  return n;
}

size_t total_of(const std::map<std::string, size_t>& counts) {
  size_t n = 0;
  for (const auto& [key, k] : counts) n += k;
  return n;
}

// Workloads of very different headroom: large matmuls far from their defaults' best,
// small elementwise ones close to it.
std::string mixed_text() {
  return "matmul 1024,1024,256 fp16\nmatmul 64,2048,256 fp16\nmatmul 256,128,512 fp16\n"
         "softmax 16,1024\nsoftmax 2048,1024\ngelu 64,256\nadd 32,128\nrmsnorm 512,1024\n";
}

TEST(BatchCli, ASharedBudgetGivesEveryWorkloadItsWarmupAndNeverExceedsTheTotal) {
  const TempDir dir("batch_shared");
  const std::string file = dir.write("b.txt", mixed_text());
  const std::string common = quoted(file) + " --target " + kTarget + " --backend model --total-budget 64 --seed 5";
  const json s = batch_json(common + " --db " + quoted(dir.str() + "/a.db"));
  EXPECT_EQ(count(s, "tuned"), 8);
  EXPECT_LE(s["measurements"].get<int64_t>(), 64);
  const auto pairs = measured_pairs(dir.str() + "/a.db");
  EXPECT_EQ(total_of(pairs), static_cast<size_t>(s["measurements"].get<int64_t>()));
  for (const auto& [pair, k] : pairs) EXPECT_EQ(k, 1u) << pair << " was measured twice";
  for (const json& r : s["results"]) EXPECT_GE(r["measured"].get<int64_t>(), 4) << r.dump() << ": no warm-up share";
  // The same seed, the same measurements.
  batch_json(common + " --db " + quoted(dir.str() + "/b.db"));
  EXPECT_EQ(measured_pairs(dir.str() + "/b.db"), pairs);
  // The equal split of the same total, for comparison, and a usage error for too small a total.
  const json equal = batch_json(common + " --equal-split --db " + quoted(dir.str() + "/c.db"));
  EXPECT_EQ(count(equal, "tuned"), 8);
  EXPECT_LE(equal["measurements"].get<int64_t>(), 64);
  expect_usage_error("batch " + quoted(file) + " --equal-split --db " + quoted(dir.str() + "/c.db"), {"--equal-split"});
}

TEST(BatchCli, ASharedBudgetOverWorkersAndShardsIsTheFilesTotal) {
  const TempDir dir("batch_shared_jobs");
  const std::string common = quoted(dir.write("b.txt", batch_text(12))) + " --target " + kTarget +
                             " --backend model --total-budget 48";
  const json jobs = batch_json(common + " --jobs 2 --db " + quoted(dir.str() + "/jobs.db"));
  EXPECT_EQ(count(jobs, "tuned"), 12);
  EXPECT_LE(total_of(measured_pairs(dir.str() + "/jobs.db")), 48u);
  size_t spent = 0;
  for (int i = 0; i < 3; ++i) {
    const std::string db = dir.str() + "/shard" + std::to_string(i) + ".db";
    batch_json(common + " --shard " + std::to_string(i) + "/3 --db " + quoted(db));
    if (std::filesystem::exists(db)) spent += total_of(measured_pairs(db));
  }
  EXPECT_LE(spent, 48u) << "the shards together spent more than the total";
}

TEST(BatchCli, ASigkilledSharedBudgetRunResumesWithNothingLostOrMeasuredTwice) {
  const TempDir dir("batch_shared_kill");
  const int n = 120;
  const int64_t total = 480;
  const std::string db = dir.str() + "/t.db";
  const std::string args = quoted(dir.write("b.txt", batch_text(n))) + " --target " + kTarget +
                           " --backend sim --total-budget " + std::to_string(total) + " --db " + quoted(db);
  const std::string journal = db + ".batch-journal";
  const pid_t pid = start_batch(args, dir.str() + "/out1.json");
  for (int i = 0; i < 6000 && journal_lines(journal, "start") < 20; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ::kill(pid, SIGKILL);
  int status = 0;
  ::waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status)) << "the batch finished before the kill; make it longer";
  const auto before = measured_pairs(db);
  ASSERT_GT(total_of(before), 0u);

  const json resumed = batch_json(args);
  EXPECT_EQ(count(resumed, "tuned") + count(resumed, "skipped"), n);
  EXPECT_EQ(count(resumed, "failed"), 0);
  const auto after = measured_pairs(db);
  for (const auto& [pair, k] : before) EXPECT_EQ(after.count(pair), 1u) << pair << " was lost";
  for (const auto& [pair, k] : after) EXPECT_EQ(k, 1u) << pair << " was measured twice";
  EXPECT_LE(total_of(after), static_cast<size_t>(total)) << "the two runs together spent more than the total";
  EXPECT_EQ(static_cast<size_t>(resumed["measurements"].get<int64_t>()), total_of(after) - total_of(before));
  EXPECT_EQ(records_per_workload(db).size(), static_cast<size_t>(n)) << "a workload was lost";
  EXPECT_EQ(journal_lines(journal, "done"), static_cast<size_t>(n)) << "each workload finished once";
  EXPECT_EQ(count(batch_json(args), "skipped"), n);
}

// --jobs once kept its workers' summaries in $TMPDIR/pto-batch-<pid>, a name anyone
// could plant a link at beforehand, and wrote through the link. Links are planted at
// that name for the next pids (the run gets one of them): none is followed, the files
// they point at stay as they were, and the run still works and cleans up.
TEST(BatchCli, JobsFollowNoLinkPlantedAtAPredictableTemporaryName) {
  const TempDir dir("batch_planted");
  const fs::path tmp = dir.path() / "tmp", victim = dir.path() / "victim";
  fs::create_directories(tmp);
  fs::create_directories(victim);
  for (const char* name : {"0.json", "1.json"}) std::ofstream(victim / name) << "keep me\n";
  pid_t last = 0;
  std::ifstream("/proc/sys/kernel/ns_last_pid") >> last;
  ASSERT_GT(last, 0);
  constexpr pid_t kPlanted = 2000;  // pids others may take meanwhile: ctest -j runs other tests
  for (pid_t pid = last + 1; pid <= last + kPlanted; ++pid) fs::create_directory_symlink(victim, tmp / ("pto-batch-" + std::to_string(pid)));

  const std::string file = dir.write("b.txt", batch_text(4));
  const char* outer_tmp = std::getenv("TMPDIR");
  const std::string saved_tmp = outer_tmp ? outer_tmp : "";
  ::setenv("TMPDIR", tmp.c_str(), 1);  // the child's temporary folder
  const Result r = pto_tune("batch " + quoted(file) + " --target " + kTarget + " --backend model --budget 2 --jobs 2 --json --db " +
                            quoted(dir.str() + "/jobs.db"));
  if (outer_tmp) ::setenv("TMPDIR", saved_tmp.c_str(), 1);
  else ::unsetenv("TMPDIR");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(count(json::parse(r.out), "tuned"), 4);
  for (const char* name : {"0.json", "1.json"}) {
    std::ifstream in(victim / name);
    EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), {}), "keep me\n") << name;
  }
  EXPECT_EQ(std::distance(fs::directory_iterator(victim), fs::directory_iterator()), 2);
  size_t entries = 0;
  for (const auto& entry : fs::directory_iterator(tmp)) entries += entry.is_symlink() ? 0 : 1;
  EXPECT_EQ(entries, 0u) << "the run left its temporary folder behind";
}

TEST(BatchCli, ShippedClusterFilesParse) {
  const std::string root = PTO_SOURCE_DIR;
  EXPECT_EQ(std::system(("bash -n " + quoted(root + "/deploy/slurm/tune-array.sbatch")).c_str()), 0);
  const std::string yaml_check = "python3 -c 'import sys, yaml; docs = list(yaml.safe_load_all(open(sys.argv[1]))); "
                                 "job = [d for d in docs if d and d.get(\"kind\") == \"Job\"]; "
                                 "assert any(j[\"spec\"].get(\"completionMode\") == \"Indexed\" for j in job), job; "
                                 "assert any(\"merge\" in str(j) for j in job)' ";
  EXPECT_EQ(std::system((yaml_check + quoted(root + "/deploy/kubernetes/tune-indexed-job.yaml")).c_str()), 0);
}

}  // namespace
}  // namespace pto
