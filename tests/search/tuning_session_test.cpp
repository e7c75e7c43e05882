// TuningSession, with an in-memory store and the model backend: rounds of random sizes
// never measure a candidate twice and measure what they say; one round of N is tune()
// with budget N; a session started from another's records measures none of them again
// (the default included) and counts them; a search that has nothing left says so.
#include "search/tuning_session.h"

#include <gtest/gtest.h>

#include <random>

#include "core/op_library.h"
#include "tests/search/config_sets.h"

namespace pto::search {
namespace {

using pto::testing::configs_of;
using pto::testing::no_duplicates;

const Target& npu() {
  static const Target t = load_target("ascend910b1");
  return t;
}

const std::vector<std::string> kWorkloads = {"matmul|64,128,96|fp16", "matmul|37,150,100|fp16",
                                             "softmax|64,512|fp16", "rmsnorm|33,700|fp16"};

TuneOptions options(const std::string& strategy, uint64_t seed) {
  TuneOptions o;
  o.strategy = strategy;
  o.seed = seed;
  return o;
}

TEST(TuningSession, RoundsMeasureEachCandidateOnceAndWhatTheySay) {
  std::mt19937_64 rng(4);
  for (const std::string& key : kWorkloads) {
    for (const char* strategy : {"topk", "evolve", "random", "exhaustive"}) {
      const Workload w = Workload::parse_key(key);
      const auto runner = measure::make_runner("model", npu());
      MemoryStore store;
      TuningSession session(w, npu(), *runner, store, options(strategy, rng()));
      int64_t total = 0;
      for (int round = 0; round < 6 && !session.exhausted(); ++round) {
        const int64_t k = std::uniform_int_distribution<int64_t>(1, 9)(rng);
        const int64_t got = session.advance(k);
        EXPECT_LE(got, k);
        if (got < k) {
          EXPECT_TRUE(session.exhausted()) << key << " " << strategy << ": a short round without a reason";
        }
        total += got;
        EXPECT_EQ(session.measured(), total);
        EXPECT_EQ(static_cast<int64_t>(store.all().size()), total) << "every measurement is committed as it comes";
      }
      ASSERT_GT(total, 0);
      EXPECT_TRUE(no_duplicates(configs_of(store.all()))) << key << " " << strategy;
      EXPECT_EQ(store.all().front().strategy, "default");
      EXPECT_EQ(configs_of(session.records()), configs_of(store.all()));
      EXPECT_GT(session.default_ns(), 0);
      EXPECT_LE(session.best_ns(), session.default_ns());
      const TuneResult r = session.finish();
      EXPECT_EQ(r.counts.measured, total);
      EXPECT_DOUBLE_EQ(r.best.time_ns(), session.best_ns());
    }
  }
}

TEST(TuningSession, OneRoundIsTune) {
  for (const std::string& key : kWorkloads) {
    const Workload w = Workload::parse_key(key);
    const auto runner = measure::make_runner("model", npu());
    MemoryStore by_tune, by_session;
    TuneOptions o = options("topk", 3);
    o.budget = 13;
    const TuneResult expected = tune(w, npu(), *runner, by_tune, o);
    TuningSession session(w, npu(), *runner, by_session, o);
    session.advance(13);
    const TuneResult got = session.finish();
    EXPECT_EQ(configs_of(by_session.all()), configs_of(by_tune.all())) << key;
    EXPECT_EQ(got.best.config, expected.best.config) << key;
    EXPECT_EQ(got.best_so_far_ns, expected.best_so_far_ns) << key;
  }
}

TEST(TuningSession, AResumedSessionMeasuresNoneOfItsPriorRecordsAgain) {
  std::mt19937_64 rng(9);
  for (const std::string& key : kWorkloads) {
    for (const char* strategy : {"topk", "evolve", "random"}) {
      const Workload w = Workload::parse_key(key);
      const auto runner = measure::make_runner("model", npu());
      MemoryStore first, second;
      const uint64_t seed = rng();
      TuningSession killed(w, npu(), *runner, first, options(strategy, seed));
      killed.advance(std::uniform_int_distribution<int64_t>(1, 10)(rng));
      const std::vector<TuningRecord> prior = killed.records();

      TuningSession resumed(w, npu(), *runner, second, options(strategy, seed), prior);
      EXPECT_EQ(resumed.measured(), static_cast<int64_t>(prior.size()));
      const int64_t more = resumed.advance(8);
      EXPECT_EQ(resumed.measured(), static_cast<int64_t>(prior.size()) + more);
      EXPECT_EQ(static_cast<int64_t>(second.all().size()), more) << "only the new measurements are committed";
      std::multiset<std::string> all = configs_of(prior);
      for (const std::string& c : configs_of(second.all())) all.insert(c);
      EXPECT_TRUE(no_duplicates(all)) << key << " " << strategy << ": a prior record was measured again";
      EXPECT_EQ(configs_of(resumed.records()), all);
      const TuneResult r = resumed.finish();
      EXPECT_LE(r.best.time_ns(), killed.best_ns()) << "the prior best is kept";
      EXPECT_EQ(r.baseline.config, prior.front().config) << "the default comes from the prior records";
    }
  }
}

TEST(TuningSession, ASearchWithNothingLeftSaysSo) {
  // A space small enough for exhaustive to run out.
  const Workload w = Workload::parse_key("gelu|100,300|fp16");
  const auto runner = measure::make_runner("model", npu());
  MemoryStore store;
  TuningSession session(w, npu(), *runner, store, options("exhaustive", 1));
  const int64_t got = session.advance(100000);
  EXPECT_LT(got, 100000);
  EXPECT_TRUE(session.exhausted());
  EXPECT_EQ(session.advance(5), 0);
  EXPECT_FALSE(session.best_unmeasured_ns()) << "exhaustive does not rank by a model";

  MemoryStore other;
  TuningSession topk(Workload::parse_key("matmul|64,128,96|fp16"), npu(), *runner, other, options("topk", 1));
  EXPECT_FALSE(topk.best_unmeasured_ns()) << "nothing is known before the first round";
  topk.advance(4);
  ASSERT_TRUE(topk.best_unmeasured_ns());
  EXPECT_GT(*topk.best_unmeasured_ns(), 0);
}

TEST(TuningSession, TheTimeLimitOfARoundAndTheStopFlagEndIt) {
  const Workload w = Workload::parse_key("matmul|37,150,100|fp16");
  const auto runner = measure::make_runner("model", npu());
  MemoryStore store;
  std::atomic<bool> stop = false;
  TuneOptions o = options("random", 1);
  o.stop = &stop;
  TuningSession session(w, npu(), *runner, store, o);
  EXPECT_EQ(session.advance(50, 1e-9), 1) << "the default is always measured; the time limit ends the round";
  EXPECT_FALSE(session.exhausted());
  EXPECT_EQ(session.advance(4), 4) << "the next round has its own time";
  stop = true;
  EXPECT_EQ(session.advance(4), 0);
  EXPECT_FALSE(session.exhausted());
}

}  // namespace
}  // namespace pto::search
