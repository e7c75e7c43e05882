// The summaries `--jobs` workers hand their parent as JSON (batch/batch_summary.h): for
// random worker summaries, the parent's sum holds every count, measurement and result
// of each, the geometric mean is over all their speedups, and the critical path is the
// workload that took longest.
#include "batch/batch_summary.h"

#include <cmath>
#include <map>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace pto::batch {
namespace {

using nlohmann::json;

BatchSummary random_worker(std::mt19937_64& rng, int index) {
  const std::vector<std::string> statuses = {"tuned", "skipped", "failed", "interrupted", "not_started"};
  BatchSummary s;
  const int n = 1 + static_cast<int>(rng() % 5);
  for (int i = 0; i < n; ++i) {
    const std::string status = statuses[rng() % statuses.size()];
    ++s.workloads[status];
    const double seconds = static_cast<double>(rng() % 1000) / 10;
    s.busy_s += seconds;
    s.results.push_back({{"workload", std::to_string(100 * index + i)},
                         {"where", std::to_string(i + 1)},
                         {"status", status},
                         {"seconds", seconds}});
  }
  s.failed_measurements["TIMEOUT"] = static_cast<int64_t>(rng() % 3);
  s.measurements = static_cast<int64_t>(rng() % 100);
  s.speedups = static_cast<int64_t>(rng() % 4);
  s.log_speedup_sum = static_cast<double>(s.speedups) * std::log(1 + static_cast<double>(rng() % 10) / 10);
  return s;
}

TEST(BatchSummary, TheParentAddsUpItsWorkersSummaries) {
  std::mt19937_64 rng(5);
  for (int trial = 0; trial < 50; ++trial) {
    const int jobs = 1 + static_cast<int>(rng() % 4);
    BatchSummary parent;
    std::map<std::string, int64_t> workloads;
    int64_t measurements = 0, speedups = 0, timeouts = 0;
    double log_sum = 0, longest = -1;
    std::string critical;
    size_t results = 0;
    for (int j = 0; j < jobs; ++j) {
      const BatchSummary w = random_worker(rng, j);
      parent.add(json::parse(w.to_json().dump()));  // as the worker's stdout carries it
      for (const auto& [status, n] : w.workloads) workloads[status] += n;
      measurements += w.measurements;
      speedups += w.speedups;
      log_sum += w.log_speedup_sum;
      timeouts += w.failed_measurements.at("TIMEOUT");
      results += w.results.size();
      for (const json& r : w.results)
        if (r["seconds"].get<double>() > longest) {
          longest = r["seconds"].get<double>();
          critical = r["workload"].get<std::string>();
        }
    }
    parent.elapsed_s = 100;
    EXPECT_EQ(parent.workloads, workloads);
    EXPECT_EQ(parent.measurements, measurements);
    EXPECT_EQ(parent.count("TIMEOUT"), 0) << "a measurement status counted as a workload's";
    EXPECT_EQ(parent.failed_measurements["TIMEOUT"], timeouts);
    EXPECT_EQ(parent.results.size(), results);
    ASSERT_EQ(parent.worker_busy_s.size(), static_cast<size_t>(jobs));
    EXPECT_DOUBLE_EQ(parent.geomean_speedup(), speedups ? std::exp(log_sum / static_cast<double>(speedups)) : 1);
    const json used = utilisation(parent, jobs);
    EXPECT_EQ(used["critical_path"]["workload"], critical);
    EXPECT_EQ(used["workers"]["count"], jobs);
  }
}

}  // namespace
}  // namespace pto::batch
