// TargetCostModels: each graph's model made from the target's first one predicts what a
// model built afresh with the target's default coefficients does; nothing for a target
// the model cannot describe.
#include <vector>

#include <gtest/gtest.h>

#include "core/op_library.h"
#include "cost_model/target_cost_models.h"
#include "tests/builtin_targets.h"

namespace pto {
namespace {

using testing::npu;

TEST(TargetCostModels, PredictsWhatAModelBuiltAfreshWithTheDefaultCoefficientsDoes) {
  const std::vector<TileConfig> cubes = {TileConfig::parse(R"({"cube":{"m":[64,64],"k":[32,64],"n":[64,128]}})"),
                                          TileConfig::parse(R"({"cube":{"m":[128,128],"k":[64,256],"n":[256,256]}})")};
  const std::vector<TileConfig> vecs = {TileConfig::parse(R"({"vec":[8,128]})"), TileConfig::parse(R"({"vec":[4,304]})")};
  TargetCostModels models;
  for (const char* key : {"matmul|256,256,256|fp16", "softmax|100,300|fp16", "matmul|77,4096,11008|fp16"}) {
    const Workload w = Workload::parse_key(key);
    const TensorGraph graph = build_graph(w);
    const std::optional<CostModel> kept = models.for_graph(graph, npu());
    ASSERT_TRUE(kept) << key;
    const CostModel fresh(graph, npu(), Coefficients::defaults(npu()));
    for (const TileConfig& c : w.op == "matmul" ? cubes : vecs)
      EXPECT_DOUBLE_EQ(kept->predict_ns(c), fresh.predict_ns(c)) << key << " " << c.to_string();
  }
}

TEST(TargetCostModels, NothingForATargetTheModelCannotDescribe) {
  Target broken = npu();
  broken.name = "no_l2_bandwidth";
  broken.l2_read_bpc = 0;
  TargetCostModels models;
  EXPECT_FALSE(models.for_graph(build_graph(Workload::parse_key("softmax|100,300|fp16")), broken));
  EXPECT_TRUE(models.for_graph(build_graph(Workload::parse_key("softmax|100,300|fp16")), npu()));
}

}  // namespace
}  // namespace pto
