// TuningRecord and MemoryStore: JSON round trips of random records, errors that name the
// field, staleness by version, the one deterministic order of `better`, and a store that
// answers best / top-k per key from usable records only, whatever the commit order.
#include "search/tuning_record.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <thread>

#include <nlohmann/json.hpp>

#include "search/tuning_store.h"
#include "tests/core/error_testing.h"

namespace pto::search {
namespace {

using measure::Status;

TuningRecord random_record(std::mt19937_64& rng) {
  auto pick = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  TuningRecord r;
  r.workload = Workload::parse_key(pick(0, 1) ? "matmul|" + std::to_string(pick(1, 999)) + ",64,128|fp16"
                                              : "softmax|" + std::to_string(pick(1, 99)) + ",512|fp32");
  r.config.vec = Shape{pick(1, 8), 512};
  r.config.nbuffer = static_cast<int>(pick(1, 2));
  r.target_name = "ascend910b1";
  r.target_fingerprint = pick(0, 1) ? "00112233aabbccdd" : "ffeeddccbbaa9988";
  r.backend = pick(0, 1) ? "sim" : "model";
  r.measurement.status = pick(0, 3) ? Status::OK : Status::RUNTIME_ERROR;
  if (!r.measurement.ok()) r.measurement.error = "crashed";
  const double t = static_cast<double>(pick(1000, 9000));
  if (r.measurement.ok()) r.measurement.stats = {t, t * 0.9, t * 1.1, 5};
  r.measurement.predicted_ns = t * 1.2;
  r.measurement.backend = r.backend;
  r.measurement.simulated = true;
  r.measurement.host = "box";
  r.measurement.timestamp = 1700000000;
  r.versions = Versions::current();
  r.strategy = pick(0, 1) ? "topk" : "default";
  return r;
}

bool same(const TuningRecord& a, const TuningRecord& b) { return a.to_json() == b.to_json(); }

TEST(TuningRecord, JsonRoundTrips) {
  std::mt19937_64 rng(1);
  for (int i = 0; i < 200; ++i) {
    const TuningRecord r = random_record(rng);
    const TuningRecord back = TuningRecord::from_json(nlohmann::json::parse(r.to_json().dump()));
    EXPECT_TRUE(same(r, back)) << r.to_json().dump();
    EXPECT_EQ(back.key(), r.key());
  }
}

TEST(TuningRecord, MalformedJsonNamesTheField) {
  std::mt19937_64 rng(2);
  const nlohmann::json good = random_record(rng).to_json();
  struct Case {
    const char* field;
    nlohmann::json value;  // null: remove the field
    std::vector<std::string_view> message;
  };
  const std::vector<Case> cases = {
      {"backend", nullptr, {"backend"}},
      {"workload", "matmul|x|fp16", {"workload"}},
      {"config", {{"vec", {-3}}}, {"config", "vec"}},
      {"measurement", {{"status", "MAYBE"}}, {"measurement", "MAYBE"}},
      {"versions", {{"compiler", "1"}}, {"versions.cost_model"}},
      {"target_fingerprint", 7, {"target_fingerprint"}},
  };
  for (const Case& c : cases) {
    nlohmann::json j = good;
    if (c.value.is_null()) {
      j.erase(c.field);
    } else {
      j[c.field] = c.value;
    }
    testing::expect_error([&] { TuningRecord::from_json(j); }, ErrorCategory::Usage, c.message, c.field);
  }
  nlohmann::json extra = good;
  extra["colour"] = "red";
  testing::expect_error([&] { TuningRecord::from_json(extra); }, ErrorCategory::Usage, {"colour"});
}

// Text that is not UTF-8 (from a CSV, a foreign database row, a command line) could not
// be written as JSON: each text field is checked, and named.
TEST(TuningRecord, TextThatIsNotUtf8IsAUsageErrorNamingTheField) {
  std::mt19937_64 rng(3);
  const TuningRecord good = random_record(rng);
  EXPECT_NO_THROW(good.check_text());
  TuningRecord bad_host = good;
  bad_host.measurement.host = "box\xff";
  testing::expect_error([&] { bad_host.check_text(); }, ErrorCategory::Usage, {"measurement.host", "UTF-8"});
  TuningRecord bad_strategy = good;
  bad_strategy.strategy = "\xed\xa0\x80";  // a surrogate, not a character
  testing::expect_error([&] { ImportChecker().check(bad_strategy); }, ErrorCategory::Usage, {"strategy", "UTF-8"});
}

TEST(TuningRecord, StaleReasonNamesTheOldVersion) {
  std::mt19937_64 rng(3);
  TuningRecord r = random_record(rng);
  EXPECT_EQ(r.stale_reason(), "");
  r.versions.compiler = "0.0.1";
  EXPECT_NE(r.stale_reason().find("compiler 0.0.1 (now " + Versions::current().compiler + ")"), std::string::npos);
  EXPECT_EQ(r.stale_reason().find("cost model"), std::string::npos);
  r.versions.cost_model = "0.0.9";
  EXPECT_NE(r.stale_reason().find("cost model 0.0.9"), std::string::npos);
}

TEST(TuningRecord, BetterIsAStrictDeterministicOrder) {
  std::mt19937_64 rng(4);
  std::vector<TuningRecord> records;
  for (int i = 0; i < 60; ++i) records.push_back(random_record(rng));
  for (const TuningRecord& a : records) {
    EXPECT_FALSE(better(a, a));
    for (const TuningRecord& b : records) {
      if (better(a, b)) {
        EXPECT_FALSE(better(b, a));
        if (a.usable() && b.usable()) {
          EXPECT_LE(a.time_ns(), b.time_ns());
        }
        EXPECT_TRUE(a.usable() || !b.usable()) << "an unusable record ranked before a usable one";
      }
    }
  }
}

TEST(MemoryStore, BestAndTopKPerKeyFromUsableRecordsInAnyOrder) {
  std::mt19937_64 rng(5);
  std::vector<TuningRecord> records;
  for (int i = 0; i < 300; ++i) records.push_back(random_record(rng));
  for (int order = 0; order < 3; ++order) {
    std::shuffle(records.begin(), records.end(), rng);
    MemoryStore store;
    for (size_t i = 0; i < records.size(); i += 7)
      store.commit(std::span(records).subspan(i, std::min<size_t>(7, records.size() - i)));
    EXPECT_EQ(store.all().size(), records.size());
    for (const TuningRecord& probe : records) {
      std::vector<TuningRecord> expected;
      for (const TuningRecord& r : records)
        if (r.key() == probe.key() && r.usable()) expected.push_back(r);
      std::sort(expected.begin(), expected.end(), better);
      const std::vector<TuningRecord> top = store.top_k(probe.key(), 3);
      ASSERT_EQ(top.size(), std::min<size_t>(3, expected.size()));
      for (size_t i = 0; i < top.size(); ++i) EXPECT_TRUE(same(top[i], expected[i]));
      const std::optional<TuningRecord> best = store.best(probe.key());
      ASSERT_EQ(best.has_value(), !expected.empty());
      if (best) {
        EXPECT_TRUE(same(*best, expected.front()));
      }
    }
  }
  MemoryStore empty;
  EXPECT_FALSE(empty.best(records.front().key()));
}

TEST(MemoryStore, ConcurrentCommitsLoseNothing) {
  std::mt19937_64 rng(6);
  const TuningRecord r = random_record(rng);
  MemoryStore store;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < 100; ++i) store.commit(std::span(&r, 1));
    });
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(store.all().size(), 400u);
}

}  // namespace
}  // namespace pto::search
