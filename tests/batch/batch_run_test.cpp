// The batch engine (batch/batch_run.h) in-process, on the model backend with small
// shapes, against a search::MemoryStore and a journal in a temporary folder: every
// workload tuned and reported in the order given; a fresh record skips a workload and
// retune tunes it again, a stale one (however fast) does not skip it; a run killed
// half-way (a journal "start" without "done") goes on from the stored records and
// measures nothing twice; a total budget is never overspent; a stop request ends with
// interrupted / not_started; bad and duplicate entries; workers sharing a claim file
// take each workload once. Hermetic: PTO_TUNE_HOME is a temporary folder.
#include "batch/batch_run.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <random>
#include <set>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "batch/batch_journal.h"
#include "batch/batch_task.h"
#include "batch/claim_file.h"
#include "search/tune_request.h"
#include "search/tuning_session.h"
#include "tests/core/error_testing.h"
#include "tests/temp_dir.h"

namespace pto::batch {
namespace {

using nlohmann::json;
using pto::testing::TempDir;

// Small workloads whose spaces each hold more candidates than any budget below.
const std::vector<std::string> kLines = {
    "matmul 64,64,64", "matmul 128,64,64", "matmul 64,128,128", "softmax 64,256",
    "softmax 128,512",  "layernorm 64,256", "matmul 32,256,64",  "softmax 256,256",
};

// `n` distinct lines of kLines in a random order.
std::string random_batch_text(std::mt19937_64& rng, size_t n) {
  std::vector<std::string> lines = kLines;
  std::shuffle(lines.begin(), lines.end(), rng);
  std::string text;
  for (size_t i = 0; i < n; ++i) text += lines[i] + "\n";
  return text;
}

class BatchRunTest : public ::testing::Test {
 protected:
  BatchRunTest() : dir_("batch_run_test") {
    ::setenv("PTO_TUNE_HOME", (dir_.str() + "/home").c_str(), 1);
    options_.target = "ascend910b1";
    options_.backend = "model";
    options_.budget = 4;
    options_.warn = [this](const std::string& message) { warnings_.push_back(message); };
  }
  ~BatchRunTest() override { ::unsetenv("PTO_TUNE_HOME"); }

  std::vector<BatchTask> tasks_of(const std::string& text, BatchSummary& summary) const {
    return plan_tasks(resolve_tasks("test.txt", parse_batch(text), options_, true, summary), options_, std::nullopt);
  }
  BatchSummary run(const std::vector<BatchTask>& tasks) {
    BatchSummary summary;
    BatchRun(options_, *store_, journal(), summary).run(tasks);
    return summary;
  }
  BatchSummary run(const std::string& text) {
    BatchSummary summary;
    const std::vector<BatchTask> tasks = tasks_of(text, summary);
    BatchRun(options_, *store_, journal(), summary).run(tasks);
    return summary;
  }
  std::string journal() const { return dir_.str() + "/tune.db.batch-journal"; }
  // An empty store and no journal, for the next trial.
  void start_over() {
    store_ = std::make_unique<search::MemoryStore>();
    std::filesystem::remove(journal());
  }

  // Records of the key stored, and whether any config of it was measured twice.
  size_t stored(const search::RecordKey& key) { return store_->records_of(key).size(); }
  bool measured_twice(const search::RecordKey& key) {
    std::set<std::string> configs;
    for (const search::TuningRecord& r : store_->records_of(key))
      if (!configs.insert(r.config.to_json().dump()).second) return true;
    return false;
  }

  TempDir dir_;
  BatchOptions options_;
  std::unique_ptr<search::MemoryStore> store_ = std::make_unique<search::MemoryStore>();
  std::vector<std::string> warnings_;
};

std::vector<std::string> statuses(const BatchSummary& s) {
  std::vector<std::string> out;
  for (const json& r : s.results) out.push_back(r["status"].get<std::string>());
  return out;
}

TEST_F(BatchRunTest, EveryWorkloadIsTunedAndReportedInTheOrderGiven) {
  std::mt19937_64 rng(7);
  for (int trial = 0; trial < 3; ++trial) {
    start_over();
    options_.budget = 2 + static_cast<int64_t>(rng() % 4);
    BatchSummary planned;
    const std::vector<BatchTask> tasks = tasks_of(random_batch_text(rng, 2 + rng() % 4), planned);
    const BatchSummary s = run(tasks);
    ASSERT_EQ(s.results.size(), tasks.size());
    EXPECT_EQ(s.count("tuned"), static_cast<int64_t>(tasks.size()));
    int64_t measured = 0;
    for (size_t i = 0; i < tasks.size(); ++i) {
      const json& r = s.results[i];
      EXPECT_EQ(r["workload"], tasks[i].key.workload) << "trial " << trial << ": reported out of order";
      EXPECT_EQ(r["status"], "tuned") << r.dump();
      EXPECT_LE(r["measured"].get<int64_t>(), tasks[i].budget) << r.dump();
      EXPECT_TRUE(search::is_tuned(*store_, tasks[i].key)) << tasks[i].key.workload;
      EXPECT_EQ(static_cast<int64_t>(stored(tasks[i].key)), r["measured"].get<int64_t>()) << tasks[i].key.workload;
      measured += r["measured"].get<int64_t>();
    }
    EXPECT_EQ(s.measurements, measured);
  }
}

TEST_F(BatchRunTest, AFreshRecordSkipsAWorkloadAndRetuneTunesItAgain) {
  const std::string text = "matmul 64,64,64\nsoftmax 64,256\n";
  ASSERT_EQ(run(text).count("tuned"), 2);
  const size_t before = store_->all().size();

  const BatchSummary again = run(text);
  EXPECT_EQ(statuses(again), (std::vector<std::string>{"skipped", "skipped"}));
  EXPECT_EQ(again.measurements, 0);
  EXPECT_EQ(store_->all().size(), before);

  options_.retune = true;
  const BatchSummary retuned = run(text);
  EXPECT_EQ(statuses(retuned), (std::vector<std::string>{"tuned", "tuned"}));
  EXPECT_GT(retuned.measurements, 0);
  EXPECT_EQ(store_->all().size(), before + static_cast<size_t>(retuned.measurements));
}

TEST_F(BatchRunTest, AStaleRecordDoesNotSkipAWorkloadHoweverFast) {
  const std::string text = "matmul 64,64,64\n";
  search::MemoryStore first;
  {
    BatchSummary s;
    BatchRun(options_, first, dir_.str() + "/first.journal", s).run(tasks_of(text, s));
    ASSERT_EQ(s.count("tuned"), 1);
  }
  for (search::TuningRecord old : first.all()) {
    old.versions.compiler = "0.0.1";
    old.measurement.stats.median_ns /= 2;
    store_->commit(std::span(&old, 1));
  }
  const BatchSummary s = run(text);
  ASSERT_EQ(statuses(s), std::vector<std::string>{"tuned"});
  EXPECT_EQ(s.results[0]["resumed_from"], 0) << "a stale record was taken as measured";
  EXPECT_GT(s.measurements, 0);
  EXPECT_EQ(store_->all().size(), first.all().size() + static_cast<size_t>(s.measurements));
}

TEST_F(BatchRunTest, AKilledRunGoesOnFromItsRecordsAndMeasuresNothingTwice) {
  options_.budget = 8;
  BatchSummary planned;
  const std::vector<BatchTask> tasks = tasks_of("matmul 64,128,128\nsoftmax 128,512\n", planned);
  ASSERT_EQ(tasks.size(), 2u);
  // The killed run: the first workload started, three measurements stored, never done.
  const BatchTask& half = tasks[0];
  {
    const search::ResolvedTune job = search::resolve(tune_request(half, options_));
    search::TuningSession session(half.entry.workload, half.target, *job.runners.search, *store_, job.options);
    ASSERT_EQ(session.advance(3), 3);
    BatchJournal(journal()).note_start(half.key);
  }
  const BatchSummary s = run(tasks);
  EXPECT_EQ(statuses(s), (std::vector<std::string>{"tuned", "tuned"}));
  EXPECT_EQ(s.results[1]["resumed_from"], 0);
  EXPECT_EQ(s.results[0]["resumed_from"], 3);
  EXPECT_LE(s.results[0]["measured"].get<int64_t>(), 5) << "the earlier run's measurements were not counted";
  for (size_t i = 0; i < tasks.size(); ++i) {
    EXPECT_FALSE(measured_twice(tasks[i].key)) << tasks[i].key.workload;
    EXPECT_EQ(stored(tasks[i].key), s.results[i]["resumed_from"].get<size_t>() + s.results[i]["measured"].get<size_t>())
        << tasks[i].key.workload;
  }
  EXPECT_FALSE(BatchJournal(journal()).unfinished(half.key)) << "the resumed workload was not noted done";
}

TEST_F(BatchRunTest, ATotalBudgetIsSharedOutAndNeverExceeded) {
  std::mt19937_64 rng(11);
  for (int trial = 0; trial < 4; ++trial) {
    start_over();
    const size_t n = 2 + rng() % 4;
    const int64_t total = static_cast<int64_t>(n) * (2 + static_cast<int64_t>(rng() % 5));
    options_.total_budget = total;
    options_.equal_split = trial % 2 == 1;
    options_.budget = 16;  // more than any share: the total decides
    BatchSummary planned;
    const std::vector<BatchTask> tasks = tasks_of(random_batch_text(rng, n), planned);
    int64_t shares = 0;
    for (const BatchTask& t : tasks) shares += t.share;
    EXPECT_EQ(shares, total);
    const BatchSummary s = run(tasks);
    const std::string context = "trial " + std::to_string(trial) + ", total " + std::to_string(total) +
                                (options_.equal_split ? ", equal split" : ", by gain");
    EXPECT_LE(static_cast<int64_t>(store_->all().size()), total) << context;
    EXPECT_EQ(s.measurements, static_cast<int64_t>(store_->all().size())) << context;
    for (size_t i = 0; options_.equal_split && i < tasks.size(); ++i)
      EXPECT_LE(static_cast<int64_t>(stored(tasks[i].key)), tasks[i].share) << context;
  }
}

TEST_F(BatchRunTest, AStopEndsTheRunWithInterruptedAndNotStarted) {
  std::atomic<bool> stop = false;
  options_.stop = &stop;
  options_.progress = [&stop](int64_t, int64_t) { stop = true; };  // after the first workload (or round)
  const std::string text = "matmul 64,64,64\nsoftmax 64,256\nmatmul 128,64,64\n";

  BatchSummary in_order = run(text);
  EXPECT_EQ(in_order.count("tuned"), 1);
  EXPECT_EQ(in_order.count("not_started"), 2);
  EXPECT_EQ(static_cast<int64_t>(store_->all().size()), in_order.measurements);

  start_over();
  stop = false;
  options_.total_budget = 24;  // rounds: stopped after the first workload's warm-up
  BatchSummary planned;
  const std::vector<BatchTask> tasks = tasks_of(text, planned);
  const BatchSummary scheduled = run(tasks);
  EXPECT_EQ(statuses(scheduled), (std::vector<std::string>{"interrupted", "not_started", "not_started"}));
  EXPECT_GT(scheduled.results[0]["measured"].get<int64_t>(), 0);
  EXPECT_EQ(static_cast<int64_t>(store_->all().size()), scheduled.measurements);
  EXPECT_TRUE(BatchJournal(journal()).unfinished(tasks[0].key)) << "an interrupted workload was noted done";
}

TEST_F(BatchRunTest, BadEntriesAreCountedAndSaidOrWithStrictAUsageError) {
  const std::string text =
      "matmul 64,64,64\n"
      "notanop 64,64\n"
      "matmul 64,64\n"
      "softmax 64,256 target=nosuchtarget\n"
      "softmax 64,256 backend=gpu\n";
  BatchSummary summary;
  const std::vector<BatchTask> tasks = tasks_of(text, summary);
  ASSERT_EQ(tasks.size(), 1u);
  EXPECT_EQ(tasks[0].key.workload, "matmul|64,64,64|fp16");
  EXPECT_EQ(summary.count("bad_entry"), 4);
  ASSERT_EQ(warnings_.size(), 4u);
  for (const std::string line : {"line 2", "line 3", "line 4", "line 5"}) {
    const bool said = std::any_of(warnings_.begin(), warnings_.end(), [&](const std::string& w) {
      return w.starts_with("test.txt: " + line) && w.ends_with("(skipped)");
    });
    EXPECT_TRUE(said) << line << " was not said";
  }

  BatchSummary by_worker;  // a worker leaves the report to its parent
  warnings_.clear();
  EXPECT_EQ(resolve_tasks("test.txt", parse_batch(text), options_, false, by_worker).size(), 1u);
  EXPECT_EQ(by_worker.count("bad_entry"), 0);
  EXPECT_TRUE(warnings_.empty());

  options_.strict = true;
  BatchSummary strict;
  pto::testing::expect_error([&] { resolve_tasks("test.txt", parse_batch(text), options_, true, strict); },
                             ErrorCategory::Usage, {"test.txt", "line 2", "notanop"});
}

TEST_F(BatchRunTest, EntriesThatAreOneOnceDefaultsAreFilledInAreTunedOnce) {
  // ascend910b1's default dtype is fp16; the model backend is the options' default.
  const std::string text = "matmul 64,64,64\nsoftmax 64,256\nmatmul 64,64,64 fp16\nsoftmax 64,256 backend=model\n";
  BatchSummary summary;
  const std::vector<BatchTask> tasks = tasks_of(text, summary);
  ASSERT_EQ(tasks.size(), 2u);
  EXPECT_EQ(summary.count("bad_entry"), 0);
  ASSERT_EQ(warnings_.size(), 2u);
  EXPECT_NE(warnings_[0].find("line 3"), std::string::npos) << warnings_[0];
  EXPECT_NE(warnings_[0].find("is line 1 again"), std::string::npos) << warnings_[0];
  EXPECT_NE(warnings_[1].find("is line 2 again"), std::string::npos) << warnings_[1];
  const BatchSummary s = run(tasks);
  EXPECT_EQ(s.count("tuned"), 2);
  std::set<search::RecordKey> keys;
  for (const search::TuningRecord& r : store_->all()) keys.insert(r.key());
  EXPECT_EQ(keys.size(), 2u);
}

TEST_F(BatchRunTest, WorkersSharingAClaimFileTakeEachWorkloadOnce) {
  std::mt19937_64 rng(3);
  BatchSummary planned;
  const std::vector<BatchTask> tasks = tasks_of(random_batch_text(rng, 6), planned);
  const ClaimFile claims(dir_.str() + "/claims");
  std::vector<BatchSummary> summaries(2);
  std::vector<std::thread> workers;
  for (BatchSummary& s : summaries)
    workers.emplace_back([this, &tasks, &claims, &s] { BatchRun(options_, *store_, journal(), s, &claims).run(tasks); });
  for (std::thread& w : workers) w.join();
  std::multiset<std::string> reported;
  for (const BatchSummary& s : summaries)
    for (const json& r : s.results) reported.insert(r["workload"].get<std::string>());
  ASSERT_EQ(reported.size(), tasks.size());
  for (const BatchTask& t : tasks) {
    EXPECT_EQ(reported.count(t.key.workload), 1u) << t.key.workload;
    EXPECT_FALSE(measured_twice(t.key)) << t.key.workload;
  }
}

}  // namespace
}  // namespace pto::batch
