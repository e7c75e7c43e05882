// Statistics over timing samples, the timing loop's stopping rule, interleaving order,
// and the Measurement JSON round trip.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "measure/cpu/timing.h"
#include "measure/interleave.h"
#include "measure/measurement.h"
#include "measure/stats.h"

namespace pto::measure {
namespace {

TEST(Stats, KnownSamples) {
  Stats s = summarize({10, 1, 9, 2, 8, 3, 7, 4, 6, 5});
  EXPECT_DOUBLE_EQ(s.median_ns, 5.5);
  EXPECT_DOUBLE_EQ(s.p10_ns, 1.9);
  EXPECT_DOUBLE_EQ(s.p90_ns, 9.1);
  EXPECT_EQ(s.repetitions, 10);
  EXPECT_DOUBLE_EQ(relative_spread(s), (9.1 - 1.9) / 5.5);
}

TEST(Stats, OddCountMedianIsTheMiddleSample) {
  Stats s = summarize({300, 100, 200});
  EXPECT_DOUBLE_EQ(s.median_ns, 200);
  EXPECT_DOUBLE_EQ(s.p10_ns, 120);
  EXPECT_DOUBLE_EQ(s.p90_ns, 280);
}

TEST(Stats, SingleSampleIsEveryPercentile) {
  Stats s = summarize({42});
  EXPECT_EQ(s.median_ns, 42);
  EXPECT_EQ(s.p10_ns, 42);
  EXPECT_EQ(s.p90_ns, 42);
  EXPECT_EQ(relative_spread(s), 0);
}

TEST(Stats, PercentilesAreOrderedAndWithinRangeForRandomSamples) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<double> samples(1 + rng() % 50);
    for (double& x : samples) x = std::uniform_real_distribution<double>(1, 1e6)(rng);
    Stats s = summarize(samples);
    auto [lo, hi] = std::minmax_element(samples.begin(), samples.end());
    EXPECT_LE(*lo, s.p10_ns);
    EXPECT_LE(s.p10_ns, s.median_ns);
    EXPECT_LE(s.median_ns, s.p90_ns);
    EXPECT_LE(s.p90_ns, *hi);
    // The median splits the samples in halves.
    auto below = std::count_if(samples.begin(), samples.end(), [&](double x) { return x < s.median_ns; });
    auto above = std::count_if(samples.begin(), samples.end(), [&](double x) { return x > s.median_ns; });
    EXPECT_LE(below, static_cast<long>(samples.size() / 2));
    EXPECT_LE(above, static_cast<long>(samples.size() / 2));
  }
}

TEST(Stats, RejectsEmptySamplesAndBadQuantiles) {
  EXPECT_THROW(summarize({}), Error);
  EXPECT_THROW(percentile({1, 2}, 1.5), Error);
  EXPECT_THROW(percentile({1, 2}, -0.1), Error);
}

TEST(Timing, RunsWarmupThenAtLeastTheMinimumRepetitions) {
  int runs = 0, flushes = 0;
  TimingPolicy policy{.warmup = 3, .min_time_ms = 0, .min_repetitions = 7};
  auto samples = time_runs([&] { ++runs; }, policy, [&] { ++flushes; });
  EXPECT_EQ(samples.size(), 7u);
  EXPECT_EQ(runs, 10);
  EXPECT_EQ(flushes, 7);  // before timed runs only
}

TEST(Timing, RepeatsUntilTheMinimumTimeIsReached) {
  TimingPolicy policy{.warmup = 0, .min_time_ms = 2, .min_repetitions = 1};
  auto samples = time_runs([] {}, policy);
  double total = 0;
  for (double ns : samples) total += ns;
  EXPECT_GE(total, 2e6);
  EXPECT_GT(samples.size(), 1u);
}

TEST(Timing, MaxRepetitionsBoundsAnEmptyRun) {
  TimingPolicy policy{.warmup = 0, .min_time_ms = 1e9, .min_repetitions = 1, .max_repetitions = 25};
  EXPECT_EQ(time_runs([] {}, policy).size(), 25u);
}

TEST(Timing, CpuTimeLeavesOutTimeTheProcessWasNotRunning) {
  // A sleeping run takes wall time but (almost) no CPU time: what a loaded machine's
  // neighbours take from a run is not counted.
  const auto sleep = [] { std::this_thread::sleep_for(std::chrono::milliseconds(20)); };
  EXPECT_GE(time_once_ns(sleep), 20e6);
  EXPECT_LT(time_once_ns(sleep, true), 10e6);
  RunnerOptions options;
  options.cpu_time = true;
  EXPECT_TRUE(timing_policy(options).cpu_time);
  EXPECT_FALSE(timing_policy(RunnerOptions{}).cpu_time);
}

TEST(Timing, PolicyRejectsBadOptions) {
  RunnerOptions bad;
  bad.min_repetitions = 0;
  EXPECT_THROW(timing_policy(bad), Error);
  bad = {};
  bad.min_time_ms = -1;
  EXPECT_THROW(timing_policy(bad), Error);
  bad = {};
  bad.warmup = -2;
  EXPECT_THROW(timing_policy(bad), Error);
}

TEST(Interleave, VisitsFinalistsInRoundsABCABC) {
  std::vector<int> order;
  std::vector<std::function<void()>> runs;
  for (int i = 0; i < 3; ++i) runs.push_back([&order, i] { order.push_back(i); });
  TimingPolicy policy{.warmup = 1, .min_time_ms = 0, .min_repetitions = 4};
  auto samples = time_interleaved(runs, policy);
  ASSERT_EQ(order.size(), 3u * 5u);  // one warm-up round, four timed
  for (size_t k = 0; k < order.size(); ++k) EXPECT_EQ(order[k], static_cast<int>(k % 3)) << k;
  ASSERT_EQ(samples.size(), 3u);
  for (const auto& s : samples) EXPECT_EQ(s.size(), 4u);
}

TEST(Interleave, KeepsWholeRoundsUntilTheTimeShareIsReached) {
  std::vector<int> counts(2);
  std::vector<std::function<void()>> runs = {[&] { ++counts[0]; }, [&] { ++counts[1]; }};
  TimingPolicy policy{.warmup = 0, .min_time_ms = 1, .min_repetitions = 1};
  auto samples = time_interleaved(runs, policy);
  EXPECT_EQ(counts[0], counts[1]);
  double total = 0;
  for (const auto& s : samples)
    for (double ns : s) total += ns;
  EXPECT_GE(total, 2e6);  // 1 ms per finalist
}

TEST(Interleave, NoFinalistsNoRuns) {
  EXPECT_TRUE(time_interleaved({}, TimingPolicy{}).empty());
}

Measurement full_measurement() {
  Measurement m;
  m.status = Status::WRONG_RESULT;
  m.error = "output 0 'c': max |actual - expected| = 3";
  m.stats = {1234.5, 1000.25, 2000, 17};
  m.predicted_ns = 999.5;
  m.backend = "cpu";
  m.simulated = false;
  m.verified = true;
  m.max_abs_err = 0.125;
  m.host = "box";
  m.detail_json = R"({"bound":"cube","pipes":{"aic":{"M":0.5}}})";
  m.timestamp = 1700000000;
  return m;
}

void expect_same(const Measurement& a, const Measurement& b) {
  EXPECT_EQ(a.status, b.status);
  EXPECT_EQ(a.error, b.error);
  EXPECT_EQ(a.stats.median_ns, b.stats.median_ns);
  EXPECT_EQ(a.stats.p10_ns, b.stats.p10_ns);
  EXPECT_EQ(a.stats.p90_ns, b.stats.p90_ns);
  EXPECT_EQ(a.stats.repetitions, b.stats.repetitions);
  EXPECT_EQ(a.predicted_ns, b.predicted_ns);
  EXPECT_EQ(a.backend, b.backend);
  EXPECT_EQ(a.simulated, b.simulated);
  EXPECT_EQ(a.predicted, b.predicted);
  EXPECT_EQ(a.verified, b.verified);
  EXPECT_EQ(a.max_abs_err, b.max_abs_err);
  EXPECT_EQ(a.host, b.host);
  EXPECT_EQ(a.detail_json, b.detail_json);
  EXPECT_EQ(a.timestamp, b.timestamp);
}

TEST(MeasurementJson, RoundTripsEveryField) {
  Measurement m = full_measurement();
  nlohmann::json j = m.to_json();
  expect_same(Measurement::from_json(j), m);
  EXPECT_EQ(Measurement::from_json(j).to_json(), j);
  // Through text as well, as it travels from a measurement child or into the database.
  expect_same(Measurement::from_json(nlohmann::json::parse(j.dump())), m);
  EXPECT_EQ(j["detail"]["bound"], "cube");  // detail is embedded as JSON, not as a string
}

TEST(MeasurementJson, PredictedRoundTripsAndOlderModelRecordsReadAsPredicted) {
  Measurement m = full_measurement();
  m.backend = "model";
  m.simulated = true;
  m.predicted = true;
  EXPECT_STREQ(m.provenance(), "predicted");
  nlohmann::json j = m.to_json();
  expect_same(Measurement::from_json(j), m);
  j.erase("predicted");  // a record from before the field existed
  EXPECT_TRUE(Measurement::from_json(j).predicted);
  j["backend"] = "sim";
  EXPECT_FALSE(Measurement::from_json(j).predicted);
  EXPECT_STREQ(Measurement::from_json(j).provenance(), "simulated");
  EXPECT_STREQ(full_measurement().provenance(), "measured");
}

TEST(MeasurementJson, RoundTripsEveryStatus) {
  for (Status s : {Status::OK, Status::INFEASIBLE, Status::COMPILE_ERROR, Status::RUNTIME_ERROR,
                   Status::TIMEOUT, Status::WRONG_RESULT}) {
    Measurement m;
    m.status = s;
    EXPECT_EQ(Measurement::from_json(m.to_json()).status, s);
    EXPECT_EQ(parse_status(status_name(s)), s);
  }
}

TEST(MeasurementJson, NonFiniteErrorTravelsAsNullAndReadsBackInfinite) {
  Measurement m;
  m.max_abs_err = std::numeric_limits<double>::quiet_NaN();
  nlohmann::json j = m.to_json();
  EXPECT_TRUE(j["max_abs_err"].is_null());
  EXPECT_TRUE(std::isinf(Measurement::from_json(j).max_abs_err));
}

std::string error_of(const nlohmann::json& j) {
  try {
    Measurement::from_json(j);
  } catch (const Error& e) {
    EXPECT_EQ(e.category(), ErrorCategory::Usage);
    return e.what();
  }
  ADD_FAILURE() << "no error for " << j.dump();
  return "";
}

TEST(MeasurementJson, ErrorsNameTheField) {
  nlohmann::json j = full_measurement().to_json();
  auto with = [&](const std::string& key, nlohmann::json value) {
    nlohmann::json copy = j;
    copy[key] = value;
    return copy;
  };
  EXPECT_NE(error_of(with("status", "FAST")).find("FAST"), std::string::npos);
  EXPECT_NE(error_of(with("verified", "yes")).find("verified"), std::string::npos);
  EXPECT_NE(error_of(with("predicted_ns", -1)).find("predicted_ns"), std::string::npos);
  EXPECT_NE(error_of(with("colour", 1)).find("colour"), std::string::npos);
  nlohmann::json no_median = j;
  no_median["stats"].erase("median_ns");
  EXPECT_NE(error_of(no_median).find("median_ns"), std::string::npos);
  nlohmann::json no_status = j;
  no_status.erase("status");
  EXPECT_NE(error_of(no_status).find("status"), std::string::npos);
  EXPECT_NE(error_of(nlohmann::json::array()).find("measurement"), std::string::npos);
}

}  // namespace
}  // namespace pto::measure
