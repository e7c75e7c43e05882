// The passes one by one: the fusion partition (default groups, validation of a
// config's groups with errors naming group and node), the vector body's iteration
// space, the UB allocator (no two live buffers overlap, space is reused), tile
// expansion's clamping and split-K chunks, and the L2-group visiting order.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <set>

#include "core/error.h"
#include "core/op_library.h"
#include "core/passes/execute_graph.h"
#include "core/passes/fusion_partition.h"
#include "core/passes/resolve_config.h"
#include "core/passes/tile_expansion.h"
#include "core/passes/ub_allocation.h"
#include "core/passes/vector_body.h"
#include "core/target.h"

namespace pto::passes {
namespace {

TensorGraph graph_of(const std::string& key) { return build_graph(Workload::parse_key(key)); }

std::vector<std::vector<int>> groups_of(const TensorGraph& g) { return partition_graph(g, std::nullopt, true).fusion; }

NodeId node_named(const TensorGraph& g, const std::string& name) {
  for (const Node& n : g.nodes())
    if (n.name == name) return n.id;
  throw std::runtime_error("no node " + name);
}

// The usage Error's message of partitioning with `fusion`, or "" if it was accepted.
std::string fusion_error(const TensorGraph& g, const std::vector<std::vector<int>>& fusion) {
  try {
    partition_graph(g, fusion, true);
  } catch (const Error& e) {
    EXPECT_EQ(e.category(), ErrorCategory::Usage);
    return e.what();
  }
  return "";
}

// ---- Fusion partition ----------------------------------------------------------------------

TEST(FusionPartition, MatmulTakesItsWholeElementwiseEpilogue) {
  const TensorGraph g = graph_of("matmul_bias_gelu|64,32,128|fp16");
  const auto groups = groups_of(g);
  ASSERT_EQ(groups.size(), 2u);  // cast(bias) | matmul + add + gelu + cast
  EXPECT_EQ(groups[0], std::vector<int>{node_named(g, "bias_f32")});
  EXPECT_EQ(groups[1].front(), node_named(g, "acc"));
  for (const char* name : {"biased", "erf", "gelu", "y"})
    EXPECT_NE(std::find(groups[1].begin(), groups[1].end(), node_named(g, name)), groups[1].end()) << name;
}

TEST(FusionPartition, ReductionsStayOutOfTheDefaultEpilogue) {
  const TensorGraph g = graph_of("attention|1,2,64,32|fp16|causal=1");
  const auto groups = groups_of(g);
  ASSERT_EQ(groups.size(), 3u);
  EXPECT_EQ(groups[0], (std::vector<int>{node_named(g, "scores"), node_named(g, "scaled"), node_named(g, "masked")}));
  EXPECT_EQ(groups[1].front(), node_named(g, "row_max"));
  EXPECT_EQ(groups[2], std::vector<int>{node_named(g, "out")});
}

TEST(FusionPartition, RowOpsFuseIntoOneKernel) {
  for (const char* key : {"softmax|32,64|fp16", "layernorm|32,64|bf16", "rmsnorm|32,64|fp32", "gelu|32,64|fp16"}) {
    const TensorGraph g = graph_of(key);
    EXPECT_EQ(groups_of(g).size(), 1u) << key;
  }
}

TEST(FusionPartition, ValidGroupsAreAcceptedAndOrderedByDependency) {
  const TensorGraph g = graph_of("softmax|32,64|fp32");
  std::vector<std::vector<int>> singles;
  for (NodeId id : g.compute_nodes()) singles.push_back({id});
  std::reverse(singles.begin(), singles.end());  // listed backwards: the partition orders them
  const Partition p = partition_graph(g, singles, true);
  ASSERT_EQ(p.kernels.size(), singles.size());
  for (size_t i = 0; i < p.kernels.size(); ++i)
    for (int a : p.kernels[i].after) EXPECT_LT(a, static_cast<int>(i));
  EXPECT_EQ(p.kernels.back().nodes, std::vector<NodeId>{g.outputs()[0]});
}

TEST(FusionPartition, BadGroupsNameTheGroupAndTheNode) {
  const TensorGraph g = graph_of("softmax|32,64|fp32");  // x, row_max, shifted, exps, row_sum, softmax
  const int row_max = node_named(g, "row_max"), shifted = node_named(g, "shifted"), exps = node_named(g, "exps");
  const int row_sum = node_named(g, "row_sum"), out = node_named(g, "softmax");
  EXPECT_NE(fusion_error(g, {{row_max, shifted, exps, row_sum, out}, {exps}}).find("is in groups 0 and 1"),
            std::string::npos);
  EXPECT_NE(fusion_error(g, {{row_max, shifted, exps, row_sum}}).find("\"softmax\" is in no group"), std::string::npos);
  EXPECT_NE(fusion_error(g, {{0, row_max, shifted, exps, row_sum, out}}).find("is an input, not a compute node"),
            std::string::npos);
  EXPECT_NE(fusion_error(g, {{row_max, shifted, exps, row_sum, out, 99}}).find("node 99 does not exist"),
            std::string::npos);
  const std::string convex = fusion_error(g, {{row_max, exps, row_sum, out}, {shifted}});
  EXPECT_NE(convex.find("fusion group 0"), std::string::npos) << convex;
  EXPECT_NE(convex.find("is not convex"), std::string::npos) << convex;
  EXPECT_NE(convex.find("\"shifted\""), std::string::npos) << convex;
}

TEST(FusionPartition, CubeGroupsNeedTheirMatmulFirstAndOnlyOne) {
  const TensorGraph att = graph_of("attention|1,1,32,16|fp16");
  EXPECT_NE(fusion_error(att, {att.compute_nodes()}).find("has 2 matmuls"), std::string::npos);

  const TensorGraph g = graph_of("matmul_bias_gelu|32,16,64|fp32");
  const int acc = node_named(g, "acc"), biased = node_named(g, "biased");
  std::vector<std::vector<int>> groups;
  for (NodeId id : g.compute_nodes())
    if (id != acc && id != biased) groups.push_back({id});
  groups.push_back({acc, biased});
  EXPECT_EQ(fusion_error(g, groups), "");
}

TEST(FusionPartition, EpilogueNodesMustConsumeTheMatmul) {
  const TensorGraph g = graph_of("matmul_bias_gelu|32,16,64|fp16");
  const int acc = node_named(g, "acc"), bias = node_named(g, "bias_f32");
  std::vector<std::vector<int>> groups = {{acc, bias}};
  for (NodeId id : g.compute_nodes())
    if (id != acc && id != bias) groups.push_back({id});
  EXPECT_NE(fusion_error(g, groups).find("does not consume the matmul"), std::string::npos);
}

TEST(FusionPartition, MismatchedIterationSpacesAreRejected) {
  // sum without keepdim gives [R]; a later node lining it up by trailing dims reads it as [1,R].
  GraphBuilder b;
  const NodeId x = b.input("x", {8, 8}, DType::F32);
  const NodeId s = b.sum(x, 1, false, "s");
  b.mark_output(b.add(x, s, "y"));
  const TensorGraph g = b.build();
  const std::string err = fusion_error(g, {{s, s + 1}});
  EXPECT_NE(err.find("dropped a dim"), std::string::npos) << err;
  EXPECT_EQ(groups_of(g).size(), 2u);  // the default keeps them apart
}

TEST(FusionPartition, CyclicGroupsAreRejected) {
  // a -> c, b -> d with groups {a, d} and {b, c}: each convex, but they need each other.
  GraphBuilder bld;
  const NodeId x = bld.input("x", {4, 4}, DType::F32);
  const NodeId a = bld.exp(x, "a");
  const NodeId b = bld.unary(OpKind::Neg, x, "b");
  const NodeId c = bld.add(a, x, "c");
  const NodeId d = bld.add(b, x, "d");
  bld.mark_output(c);
  bld.mark_output(d);
  const TensorGraph g = bld.build();
  EXPECT_NE(fusion_error(g, {{a, d}, {b, c}}).find("cycle"), std::string::npos);
}

// ---- Vector bodies --------------------------------------------------------------------------

TEST(VectorBody, IterationSpaceIsTheWidestTensorAndReductionsAreMarked) {
  const TensorGraph g = graph_of("layernorm|16,48|bf16");
  const Partition p = partition_graph(g, std::nullopt, true);
  ASSERT_EQ(p.kernels.size(), 1u);
  const VectorBody& b = p.kernels[0].body;
  EXPECT_EQ(b.iteration, (Shape{16, 48}));
  EXPECT_EQ(b.reduce_dims, (std::vector<int>{1, 1}));
  // gamma [48] spans only the last dim; the row statistics only the first.
  std::map<std::string, DimMask> masks;
  for (const VecValue& v : b.values) masks[v.name] = v.mask;
  EXPECT_EQ(masks.at("gamma"), 0b10u);
  EXPECT_EQ(masks.at("var"), 0b01u);
  EXPECT_EQ(masks.at("x"), 0b11u);
  ASSERT_EQ(b.stores.size(), 1u);
  EXPECT_EQ(b.values[b.stores[0].value].name, "y");
}

// ---- UB allocation ----------------------------------------------------------------------------

TEST(UbAllocation, LiveBuffersNeverOverlapAndDeadOnesAreReused) {
  std::mt19937 rng(5);
  for (const char* key : {"layernorm|64,512|fp32", "softmax|64,300|fp16", "gelu|64,512|bf16", "rmsnorm|8,64|fp16"}) {
    const TensorGraph g = graph_of(key);
    const Partition p = partition_graph(g, std::nullopt, true);
    const VectorBody& body = p.kernels[0].body;
    for (int nbuffer = 1; nbuffer <= 3; ++nbuffer) {
      const Shape tile = {std::uniform_int_distribution<int64_t>(1, body.iteration[0])(rng), body.iteration[1]};
      VecTiling t;
      allocate_ub(body, tile, nbuffer, 32, t);
      int64_t total = 0;
      const int end = body.end_position();
      auto live = [&](const UbBuffer& u) {
        const VecValue& v = body.values[u.value];
        const bool pinned = v.kind == ValueKind::Load && nbuffer >= 2;
        return std::make_pair(v.def, pinned ? end : v.last_use);
      };
      for (size_t i = 0; i < t.buffers.size(); ++i) {
        const UbBuffer& a = t.buffers[i];
        EXPECT_EQ(a.offset % 32, 0);
        EXPECT_EQ(a.bytes, value_bytes(body.values[a.value], tile));
        EXPECT_LE(a.offset + a.bytes, t.ub_bytes);
        total += a.bytes;
        for (size_t j = 0; j < i; ++j) {
          const UbBuffer& b = t.buffers[j];
          const auto [s1, e1] = live(a);
          const auto [s2, e2] = live(b);
          const bool together = s1 <= e2 && s2 <= e1;
          const bool overlap = a.offset < b.offset + b.bytes && b.offset < a.offset + a.bytes;
          EXPECT_FALSE(together && overlap) << key << ": " << body.values[a.value].name << " and "
                                            << body.values[b.value].name;
        }
      }
      if (std::string(key).rfind("layernorm", 0) == 0) {
        EXPECT_LT(t.ub_bytes, total) << key;
      }
    }
  }
}

// ---- Tile expansion ---------------------------------------------------------------------------

TilePlan plan_for(const std::string& key, const std::string& config, const Target& t) {
  static std::vector<std::unique_ptr<Partition>> keep;  // plans point into their partition
  const TensorGraph g = graph_of(key);
  const ResolvedConfig rc = resolve_config(g, TileConfig::parse(config));
  keep.push_back(std::make_unique<Partition>(partition_graph(g, rc.fusion, true)));
  return expand_tiles(g, *keep.back(), rc, t);
}

TEST(TileExpansion, CubeTilesClampToTheAlignedDims) {
  const Target t = load_target("ascend910b1");
  const TilePlan plan = plan_for("matmul|40,100,300|fp16", R"({"cube":{"m":[128,128],"k":[64,256],"n":[256,256]}})", t);
  ASSERT_EQ(plan.kernels.size(), 1u);
  const CubeTiling& ct = plan.kernels[0].cube;
  EXPECT_EQ(ct.mL1, 48);  // align_up(40, 16)
  EXPECT_EQ(ct.mL0, 48);
  EXPECT_EQ(ct.k_step, 112);  // align_up(100, 16)
  EXPECT_EQ(ct.kL0, 64);
  EXPECT_EQ(ct.steps, 1);
  EXPECT_EQ(ct.nL1, 256);
  EXPECT_EQ(ct.n.count, 2);
  EXPECT_EQ(ct.n.tail, 44);
  EXPECT_TRUE(plan.feasible);
}

// fp32 split-K stores each chunk's sums and a Combine kernel adds them (as PyPTO does);
// int32 adds atomically into an output a Zero kernel cleared first.
TEST(TileExpansion, SplitKCombinesFp32PartialsAndZeroesAnInt32Output) {
  const Target t = load_target("ascend910b1");
  const std::string config = R"({"cube":{"m":[64,64],"k":[64,128],"n":[64,64],"split_k":true}})";
  const TilePlan fp32 = plan_for("matmul|64,2048,64|fp32", config, t);
  ASSERT_EQ(fp32.kernels.size(), 2u);
  EXPECT_EQ(fp32.kernels[0].cube.chunks, 16);  // 2048 / kL1 128, whatever the cores
  EXPECT_EQ(fp32.kernels[0].cube.chunk_steps, 1);
  EXPECT_GE(fp32.kernels[0].cube.partials, 0);
  EXPECT_EQ(fp32.kernels[1].kind, KernelKind::Combine);
  EXPECT_EQ(fp32.kernels[1].after, std::vector<int>{0});
  EXPECT_EQ(fp32.kernels[1].vec.tile.front(), 16);  // the chunks, whole
  ASSERT_EQ(fp32.extra_tensors.size(), 2u);
  EXPECT_EQ(fp32.extra_tensors[0].shape, (Shape{16 * 64, 64}));
  EXPECT_EQ(fp32.extra_tensors[1].shape, (Shape{16, 64, 64}));

  const TilePlan int32 = plan_for("matmul|64,2048,64|int8", config, t);
  ASSERT_EQ(int32.kernels.size(), 2u);
  EXPECT_EQ(int32.kernels[0].kind, KernelKind::Zero);
  EXPECT_EQ(int32.kernels[1].after, std::vector<int>{0});
  EXPECT_EQ(int32.kernels[1].cube.partials, -1);
}

TEST(TileExpansion, VecTakesTheTrailingEntriesOfALongerConfig) {
  const Target t = load_target("ascend910b1");
  const TilePlan plan = plan_for("softmax|64,128|fp32", R"({"vec":[1,1,8,128]})", t);
  ASSERT_TRUE(plan.feasible);
  EXPECT_EQ(plan.kernels[0].vec.tile, (Shape{8, 128}));
  EXPECT_EQ(plan.kernels[0].vec.dims[0].count, 8);
}

TEST(ResolveConfig, FallbacksAndBadValues) {
  const TensorGraph g = graph_of("matmul|64,64,64|fp16");
  EXPECT_EQ(resolve_config(g, TileConfig{}).cube, fallback_cube());
  TileConfig bad;
  bad.nbuffer = 9;
  EXPECT_THROW(resolve_config(g, bad), Error);
  TileConfig zero;
  zero.cube = fallback_cube();
  zero.cube->kL0 = 0;
  try {
    resolve_config(g, zero);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cube.kL0=0"), std::string::npos);
  }
  EXPECT_EQ(fallback_vec({4, 1000, 2000}, {1}), (Shape{1, 1000, 512}));
  EXPECT_EQ(internal_vec({5, 100}), (Shape{5, 100}));
}

// ---- Dispatch order ---------------------------------------------------------------------------

TEST(ExecuteGraph, L2GroupOrderVisitsEveryTileOnceInGroups) {
  std::mt19937 rng(11);
  for (int round = 0; round < 50; ++round) {
    const int64_t mt = std::uniform_int_distribution<int64_t>(1, 9)(rng);
    const int64_t nt = std::uniform_int_distribution<int64_t>(1, 9)(rng);
    const int64_t gm = std::uniform_int_distribution<int64_t>(1, 4)(rng);
    const int64_t gn = std::uniform_int_distribution<int64_t>(1, 4)(rng);
    const auto order = cube_tile_order(mt, nt, std::make_pair(gm, gn));
    ASSERT_EQ(static_cast<int64_t>(order.size()), mt * nt);
    std::set<std::pair<int64_t, int64_t>> seen(order.begin(), order.end());
    EXPECT_EQ(static_cast<int64_t>(seen.size()), mt * nt);
    // Each run of one group's tiles stays inside one mDim x nDim block.
    for (size_t i = 1; i < order.size(); ++i) {
      const auto [i0, j0] = order[i - 1];
      const auto [i1, j1] = order[i];
      const bool same_group = i0 / gm == i1 / gm && j0 / gn == j1 / gn;
      if (!same_group) {
        EXPECT_TRUE(i1 % gm == 0 && j1 % gn == 0) << "a group starts at its corner";
      }
    }
  }
  EXPECT_EQ(cube_tile_order(2, 2, std::nullopt),
            (std::vector<std::pair<int64_t, int64_t>>{{0, 0}, {0, 1}, {1, 0}, {1, 1}}));
}

}  // namespace
}  // namespace pto::passes
