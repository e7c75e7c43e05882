// Fusion candidates for every op of the library: the default partition first, then
// partitions that put every compute node in exactly one group, that the compiler
// accepts, without repeats — and the fully unfused one wherever the default fuses.
#include "search/fusion_candidates.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "core/compile.h"
#include "core/op_library.h"
#include "tests/builtin_targets.h"
#include "tests/random_attrs.h"

namespace pto::search {
namespace {

using pto::testing::npu;

Workload small_workload(const OpDef& op) {
  Workload w;
  w.op = op.name;
  for (const std::string& d : op.dims) w.shape.push_back(d == "B" || d == "H" ? 2 : 48);
  w.dtype = op.dtypes.front();
  pto::testing::set_example_expr(w);
  return w;
}

TEST(FusionCandidates, ValidDistinctPartitionsOfEveryComputeNode) {
  for (const OpDef& op : op_library()) {
    const Workload w = small_workload(op);
    SCOPED_TRACE(w.key());
    const TensorGraph g = build_graph(w);
    const TileConfig base = default_config(w, g, npu());
    const Analyzer analyzer(g, npu());
    const auto candidates = fusion_candidates(g, analyzer, base);
    ASSERT_FALSE(candidates.empty());
    EXPECT_FALSE(candidates.front()) << "the default partition comes first";
    const std::vector<NodeId> compute = g.compute_nodes();
    std::set<FusionGroups> seen;
    bool unfused = false;
    for (size_t i = 1; i < candidates.size(); ++i) {
      ASSERT_TRUE(candidates[i]);
      const FusionGroups& groups = *candidates[i];
      EXPECT_TRUE(seen.insert(groups).second) << "repeated partition";
      std::vector<int> covered;
      for (const auto& group : groups) covered.insert(covered.end(), group.begin(), group.end());
      std::sort(covered.begin(), covered.end());
      EXPECT_EQ(covered, std::vector<int>(compute.begin(), compute.end()));
      unfused |= groups.size() == compute.size();
      TileConfig c = base;
      c.fusion = groups;
      EXPECT_NO_THROW(compile(g, c, npu()));
    }
    const auto kernels = analyzer.analyze(base).kernels;
    const auto with_nodes =
        std::count_if(kernels.begin(), kernels.end(), [](const KernelSummary& k) { return !k.nodes.empty(); });
    const bool default_fuses = static_cast<size_t>(with_nodes) < compute.size();
    EXPECT_EQ(unfused, default_fuses);
  }
}

TEST(FusionCandidates, CutsEachDefaultGroupOnce) {
  // softmax: one default group of 7 nodes (cast .. cast); the unfused partition and
  // each valid cut of the group.
  const Workload w = Workload::parse_key("softmax|32,64|fp16");
  const TensorGraph g = build_graph(w);
  const TileConfig base = default_config(w, g, npu());
  const auto candidates = fusion_candidates(g, Analyzer(g, npu()), base);
  size_t two_groups = 0;
  for (const auto& c : candidates) two_groups += c && c->size() == 2;
  EXPECT_GE(two_groups, 1u);
  EXPECT_LE(two_groups, 6u) << "at most one cut per gap between the 7 nodes";
}

}  // namespace
}  // namespace pto::search
