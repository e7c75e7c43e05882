// The simulator against the published PyPTO matmul guide (shared/ascend-facts.md):
// on ascend910b1, M=N=K=6144 fp16 with cube tiles [128,128],[64,256],[256,256] (MTE2
// and MTE1 double-buffered, as the guide says this config allows) takes about 2.1 ms,
// and about 1.6 ms with the core grid grouped 6x4 per wave for L2 reuse. The
// simulator must land within +-15% of both and rank the grouped one faster (the band
// was +-30% before the fit to the published measurements, results/sim_validation.md).
// results/sim_calibration.md explains where the simulated time goes.
#include <gtest/gtest.h>

#include "core/compile.h"
#include "core/op_library.h"
#include "core/target.h"
#include "measure/sim/simulator.h"

namespace pto::sim {
namespace {

SimResult simulate_guide_matmul(const std::string& l2_group) {
  const Target target = load_target("ascend910b1");
  const TensorGraph graph = build_graph(Workload{"matmul", {6144, 6144, 6144}, DType::F16, {}});
  const TileConfig config = TileConfig::parse(
      R"({"cube":{"m":[128,128],"k":[64,256],"n":[256,256]},"nbuffer":2)" + l2_group + "}");
  return simulate(compile(graph, config, target).program, target);
}

TEST(SimCalibration, MatmulGuideTimesWithinFifteenPercentAndGroupingRankedFaster) {
  const SimResult row_major = simulate_guide_matmul("");
  const SimResult grouped = simulate_guide_matmul(R"(,"l2_group":[6,4])");
  const double published_row_major_ns = 2.1e6, published_grouped_ns = 1.6e6;
  EXPECT_NEAR(row_major.time_ns, published_row_major_ns, 0.15 * published_row_major_ns) << row_major.summary();
  EXPECT_NEAR(grouped.time_ns, published_grouped_ns, 0.15 * published_grouped_ns) << grouped.summary();
  EXPECT_LT(grouped.time_ns, row_major.time_ns);
  // The reason is L2 reuse: balanced groups find more of their operands in L2.
  EXPECT_GT(grouped.l2_hit_rate, row_major.l2_hit_rate);
}

}  // namespace
}  // namespace pto::sim
