// ModelPickProvider alone: a feasible pick the model ranks no slower than any config of
// its sample nor the op's default, the same pick every time, nothing where the model
// cannot describe the target, and the same answers from many threads at once.
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "core/analyze.h"
#include "core/op_library.h"
#include "cost_model/estimate.h"
#include "search/model_pick.h"
#include "search/space_generator.h"
#include "tests/builtin_targets.h"

namespace pto::search {
namespace {

using testing::npu;

const std::vector<Workload> kAsks = {Workload::parse_key("matmul|384,768,256|fp16"),
                                     Workload::parse_key("matmul|77,4096,11008|fp16"),
                                     Workload::parse_key("softmax|100,300|fp16"),
                                     Workload::parse_key("layernorm|48,1000|fp32")};

TEST(ModelPick, IsAFeasibleConfigTheModelRanksAtLeastAsFastAsItsSampleAndTheDefault) {
  ModelPickProvider pick;
  for (const Workload& w : kAsks) {
    const std::optional<ConfigChoice> c = pick.lookup(w, npu());
    ASSERT_TRUE(c) << w.key();
    EXPECT_EQ(c->source, ConfigSource::Model);
    EXPECT_EQ(c->describe(), "model");
    const TensorGraph graph = build_graph(w);
    EXPECT_TRUE(analyze(graph, c->config, npu()).feasible) << w.key();
    const CostModel model(graph, npu());
    const double picked = model.predict_ns(c->config);
    EXPECT_LE(picked, model.predict_ns(default_config(w, graph, npu()))) << w.key();
    const SpaceGenerator space = SpaceGenerator::for_workload(w, npu());
    for (const TileConfig& other : space.sample(ModelPickProvider::kDefaultCandidates, /*seed=*/1))
      EXPECT_LE(picked, model.predict_ns(other)) << w.key() << ": " << other.to_string();
  }
}

TEST(ModelPick, TheSamePickEveryTimeAndFromEveryProvider) {
  ModelPickProvider first, second;
  for (const Workload& w : kAsks) {
    const TileConfig c = first.lookup(w, npu())->config;
    EXPECT_EQ(first.lookup(w, npu())->config, c) << w.key();
    EXPECT_EQ(second.lookup(w, npu())->config, c) << w.key();
  }
}

// A target the model cannot describe: nothing, so that the chain's default serves.
TEST(ModelPick, NothingWhereTheModelCannotDescribeTheTarget) {
  Target broken = npu();
  broken.name = "no_l2_bandwidth";
  broken.l2_read_bpc = 0;
  EXPECT_FALSE(ModelPickProvider().lookup(kAsks.front(), broken));
}

TEST(ModelPick, ManyThreadsGetTheSameAnswersAsOne) {
  std::vector<TileConfig> expected;
  for (const Workload& w : kAsks) expected.push_back(ModelPickProvider(32).lookup(w, npu())->config);
  ModelPickProvider shared(32);
  std::vector<int> mismatches(4, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (size_t i = 0; i < kAsks.size(); ++i) {
        const size_t k = (i + t) % kAsks.size();
        if (shared.lookup(kAsks[k], npu())->config != expected[k]) ++mismatches[t];
      }
    });
  }
  for (std::thread& th : threads) th.join();
  for (int m : mismatches) EXPECT_EQ(m, 0);
}

}  // namespace
}  // namespace pto::search
