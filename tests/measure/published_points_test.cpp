// The published Ascend measurements (tests/data/ascend_measurements.json) load and are
// consistent: every target exists, every config parses and is feasible on its target,
// a config is present exactly when the tiling is expressible, ids are unique, the
// numbers are positive; and a damaged copy of the file is refused with the record named.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <set>

#include <nlohmann/json.hpp>

#include "measure/fidelity.h"
#include "measure/published_points.h"
#include "tests/core/error_testing.h"
#include "tests/temp_dir.h"

namespace pto {
namespace {

const std::string kData = std::string(PTO_SOURCE_DIR) + "/tests/data/ascend_measurements.json";

nlohmann::json data_json() {
  std::ifstream in(kData);
  return nlohmann::json::parse(in);
}

TEST(PublishedPoints, EveryRecordLoadsWithAKnownTargetAndAFeasibleConfigWhereExpressible) {
  const std::vector<PublishedPoint> points = load_published_points(kData);
  ASSERT_EQ(points.size(), data_json()["records"].size());
  std::set<std::string> sources;
  int simulated = 0;
  for (const PublishedPoint& p : points) {
    EXPECT_GT(p.measured_us, 0) << p.id;
    EXPECT_FALSE(p.repo.empty()) << p.id;
    EXPECT_EQ(p.simulated(), p.mapping != Mapping::None) << p.id;
    const Target t = p.target_with_cores();
    const bool clusters = p.config && (p.config->cube || p.config->attention);  // cube ops and flash_attention
    EXPECT_EQ(clusters ? t.aic_cores : t.aiv_cores, p.cores) << p.id;
    simulated += p.simulated();
    if (p.simulated()) sources.insert(p.source);
  }
  // Enough of the training set is expressible for leave-one-source-out to mean something.
  EXPECT_GE(simulated, 20);
  EXPECT_GE(sources.size(), 5u);
}

// A figure timed inside the kernel is compared with the simulated time less the
// target's launch cost, once per kernel; the same point with the launch counted is
// exactly that much slower.
TEST(PublishedPoints, ALaunchlessFigureLosesTheTargetsLaunchCost) {
  std::vector<PublishedPoint> points = load_published_points(kData);
  const auto it = std::find_if(points.begin(), points.end(), [](const PublishedPoint& p) {
    return p.simulated() && !p.launch_included;
  });
  ASSERT_NE(it, points.end());
  PublishedPoint with = *it;
  with.launch_included = true;
  const std::vector<PublishedPoint> pair = {*it, with};
  const FidelityReport r = evaluate_fidelity(pair, false);
  ASSERT_EQ(r.points.size(), 2u);
  const Target t = it->target_with_cores();
  EXPECT_NEAR(r.points[1].shipped_us - r.points[0].shipped_us, t.kernel_launch_cycles / t.clock_mhz, 1e-6) << it->id;
}

TEST(PublishedPoints, FamiliesSplitThe950FromThe910s) {
  EXPECT_EQ(target_family("ascend950pr"), "950");
  for (const char* t : {"ascend910b1", "ascend910b2", "ascend910b3", "ascend910b4", "ascend910_93"})
    EXPECT_EQ(target_family(t), "A2/A3") << t;
}

// Each damage is refused with a usage error naming the record and the field.
TEST(PublishedPoints, DamagedRecordsAreRefusedNamingTheRecord) {
  struct Damage {
    const char* field;
    nlohmann::json value;
    const char* named;
  };
  const std::vector<Damage> damages = {
      {"target", "ascend999", "ascend999"},
      {"measured_us", -1.0, "measured_us"},
      {"cores", 0, "cores"},
      {"mapping", "roughly", "mapping"},
      {"config", nullptr, "config"},  // an expressible record without its config
      {"config", nlohmann::json::parse(R"({"cube":{"m":[4096,4096],"k":[64,256],"n":[256,256]}})"), "infeasible"},
      {"source", "nowhere", "nowhere"},
      {"launch_included", "yes", "launch_included"},
  };
  const testing::TempDir dir("published_points");
  for (const Damage& d : damages) {
    nlohmann::json j = data_json();
    nlohmann::json& record = j["records"][0];
    ASSERT_NE(record["config"], nullptr);  // the first record is expressible
    record[d.field] = d.value;
    const std::string path = dir.write("damaged.json", j.dump());
    pto::testing::expect_error([&] { load_published_points(path); }, ErrorCategory::Usage,
                               {record["id"].get<std::string>(), d.named}, d.field);
  }
  pto::testing::expect_error([&] { load_published_points(dir.str() + "/absent.json"); }, ErrorCategory::Io,
                             {"absent.json"});
}

TEST(PublishedPoints, ErrorSummaryCountsBandsAndMedian) {
  const ErrorSummary s = summarize({1.0, 1.2, 0.6, 2.0}, {1.0, 1.0, 1.0, 1.0});
  EXPECT_EQ(s.points, 4);
  EXPECT_EQ(s.within_25, 2);
  EXPECT_EQ(s.within_30, 2);
  EXPECT_EQ(s.within_50, 3);
  EXPECT_NEAR(s.worst_abs_log, std::log(2.0), 1e-12);
  EXPECT_NEAR(s.median_abs_log, (std::log(1.2) + std::fabs(std::log(0.6))) / 2, 1e-12);
}

}  // namespace
}  // namespace pto
