// The tuner against the experts: for every tile set that ../shared/ascend-measurements.md
// publishes in our vocabulary (tests/data/ascend_measurements.json, on the cores it ran
// on) and every hand-pick of PyPTO's matmul guide (ascend-facts.md, "What users hand-pick
// today"), the winner of a topk tune started from the op's default, never told the
// expert's tiles, simulates at least as fast as those tiles. One test per workload and
// target (one tune, compared with each tile set published for it), so ctest spreads
// them over its jobs. flash_attention's published tilings have their own
// comparison (bench/flash_attention_bench.sh, "published"): a tune there takes tens of
// seconds per shape.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "measure/published_points.h"
#include "measure/runner.h"
#include "search/tuner.h"
#include "search/tuning_store.h"

namespace pto::search {
namespace {

struct ExpertTiles {
  std::string name;
  Workload workload;
  Target target;
  std::vector<TileConfig> configs;
};

void PrintTo(const ExpertTiles& e, std::ostream* os) { *os << e.name; }

std::vector<ExpertTiles> guide_tiles() {
  const Target a2 = load_target("ascend910b1");
  auto tiles = [&](const std::string& name, const std::string& key, const std::vector<const char*>& configs) {
    ExpertTiles e{name, Workload::parse_key(key), a2, {}};
    for (const char* c : configs) e.configs.push_back(TileConfig::from_json(nlohmann::json::parse(c)));
    return e;
  };
  return {
      tiles("guide_4096", "matmul|4096,4096,4096|fp16",
            {R"({"cube":{"m":[128,128],"k":[64,256],"n":[256,256]}})",
             R"({"cube":{"m":[256,256],"k":[64,256],"n":[128,128]}})",
             R"({"cube":{"m":[128,128],"k":[128,512],"n":[128,128]}})"}),
      tiles("guide_decode", "matmul|96,1536,3072|fp16",
            {R"({"cube":{"m":[96,96],"k":[64,256],"n":[128,128]}})",
             R"({"cube":{"m":[96,96],"k":[64,1536,256],"n":[128,128]}})"}),  // A resident in L1
  };
}

std::vector<ExpertTiles> expert_tiles() {
  std::vector<ExpertTiles> all = guide_tiles();
  for (const PublishedPoint& p : load_published_points(PTO_SOURCE_DIR "/tests/data/ascend_measurements.json")) {
    if (!p.config || p.workload.op == "flash_attention") continue;
    const Target target = p.target_with_cores();
    const auto same = std::find_if(all.begin(), all.end(), [&](const ExpertTiles& e) {
      return e.workload.key() == p.workload.key() && e.target.fingerprint() == target.fingerprint();
    });
    if (same != all.end()) {
      same->configs.push_back(*p.config);
      continue;
    }
    std::string name = p.id;
    for (char& c : name)
      if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
    all.push_back({name, p.workload, target, {*p.config}});
  }
  return all;
}

class ExpertTilesTest : public ::testing::TestWithParam<ExpertTiles> {};

TEST_P(ExpertTilesTest, TheTunersWinnerSimulatesAtLeastAsFast) {
  const ExpertTiles& e = GetParam();
  std::unique_ptr<measure::Runner> sim = measure::make_runner("sim", e.target);
  MemoryStore store;
  TuneOptions options;
  options.strategy = "topk";
  const TuneResult r = tune(e.workload, e.target, *sim, store, options);
  const std::vector<measure::Measurement> experts = sim->measure(e.workload, e.configs);
  for (size_t i = 0; i < experts.size(); ++i) {
    const measure::Measurement& expert = experts[i];
    ASSERT_TRUE(expert.ok()) << expert.error;
    EXPECT_LE(r.best.time_ns(), expert.stats.median_ns)
        << e.workload.key() << " on " << e.target.name << " (" << e.target.aic_cores << " AIC): the tuner's "
        << r.best.config.to_string() << " against the expert's " << e.configs[i].to_string() << " after "
        << r.counts.measured << " measurements";
  }
}

INSTANTIATE_TEST_SUITE_P(Published, ExpertTilesTest, ::testing::ValuesIn(expert_tiles()),
                         [](const ::testing::TestParamInfo<ExpertTiles>& info) { return info.param.name; });

}  // namespace
}  // namespace pto::search
