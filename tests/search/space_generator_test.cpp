// SpaceGenerator, as properties over every op of the library at random ragged shapes:
// what it produces is feasible per analyze and compiles, holds no repeats (not even two
// configs that compile to the same program), contains the op's default config, and is
// the same for the same seed; enumeration and indexing agree; small spaces are sampled
// whole; bad options are usage errors.
#include "search/space_generator.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "core/analyze.h"
#include "core/compile.h"
#include "core/op_library.h"
#include "search/tile_candidates.h"
#include "tests/builtin_targets.h"
#include "tests/core/error_testing.h"
#include "tests/random_attrs.h"

namespace pto::search {
namespace {

using pto::testing::npu;

// A workload of `op` with ragged sizes, small enough that compiling is quick.
Workload random_workload(const OpDef& op, std::mt19937& rng) {
  auto dim = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  Workload w;
  w.op = op.name;
  for (const std::string& d : op.dims) w.shape.push_back(d == "B" || d == "H" ? dim(1, 3) : dim(17, 300));
  if (op.name == "attention") w.shape[3] = 8 * dim(2, 12);
  w.dtype = op.dtypes[std::uniform_int_distribution<size_t>(0, op.dtypes.size() - 1)(rng)];
  pto::testing::draw_attrs(op, w, rng);
  return w;
}

// Every op at a few random shapes, each with its space.
template <class F>
void for_each_op_space(uint32_t seed, int shapes_per_op, F&& check) {
  std::mt19937 rng(seed);
  for (const OpDef& op : op_library()) {
    for (int i = 0; i < shapes_per_op; ++i) {
      const Workload w = random_workload(op, rng);
      SCOPED_TRACE(w.key());
      check(w, build_graph(w), SpaceGenerator::for_workload(w, npu()));
    }
  }
}

TEST(SpaceGenerator, SamplesAreFeasibleCompileAndAreDistinctPrograms) {
  for_each_op_space(1, 2, [](const Workload&, const TensorGraph& g, const SpaceGenerator& space) {
    SpaceTally tally;
    const std::vector<TileConfig> picked = space.sample(12, 5, &tally);
    EXPECT_FALSE(picked.empty()) << space.describe();
    EXPECT_LE(picked.size(), tally.distinct);
    EXPECT_EQ(tally.analyzed, tally.distinct + tally.infeasible + tally.equivalent);
    for (size_t i = 0; i < picked.size(); ++i) {
      const TileConfig& c = picked[i];
      const TilingSummary s = analyze(g, c, npu());
      EXPECT_TRUE(s.feasible) << c.to_string() << "\n" << format_violations(s.violations);
      EXPECT_NO_THROW(compile(g, c, npu())) << c.to_string();
      EXPECT_TRUE(space.index_of(c)) << c.to_string();
      for (size_t j = 0; j < i; ++j) EXPECT_FALSE(picked[j] == c) << c.to_string();
    }
  });
}

TEST(SpaceGenerator, ContainsTheOpsDefaultConfig) {
  for_each_op_space(2, 3, [](const Workload& w, const TensorGraph& g, const SpaceGenerator& space) {
    const TileConfig d = default_config(w, g, npu());
    const std::optional<uint64_t> index = space.index_of(d);
    ASSERT_TRUE(index) << d.to_string() << "\n" << space.describe();
    const TileConfig at = space.at(*index);
    EXPECT_EQ(at.vec, d.vec);
    EXPECT_EQ(at.fusion, d.fusion);
    EXPECT_EQ(at.nbuffer_or_default(), d.nbuffer_or_default());
    if (d.cube) {
      ASSERT_TRUE(at.cube);
      EXPECT_EQ(std::vector<int64_t>({at.cube->mL0, at.cube->mL1, at.cube->kL0, at.cube->kAL1, at.cube->kBL1,
                                      at.cube->nL0, at.cube->nL1}),
                std::vector<int64_t>({d.cube->mL0, d.cube->mL1, d.cube->kL0, d.cube->kAL1, d.cube->kBL1,
                                      d.cube->nL0, d.cube->nL1}));
    }
  });
}

TEST(SpaceGenerator, SamplingIsDeterministicPerSeed) {
  for_each_op_space(3, 1, [](const Workload&, const TensorGraph&, const SpaceGenerator& space) {
    const std::vector<TileConfig> a = space.sample(10, 42), b = space.sample(10, 42), c = space.sample(10, 43);
    EXPECT_EQ(a, b);
    if (a.size() == 10 && space.size() > 1000) {
      EXPECT_NE(a, c) << "another seed, another sample";
    }
  });
}

TEST(SpaceGenerator, EnumerationFollowsTheIndexAndStopsAtTheCap) {
  const Workload w = Workload::parse_key("matmul_bias_gelu|100,72,200|fp16");
  const SpaceGenerator space = SpaceGenerator::for_workload(w, npu());
  SpaceTally tally;
  const std::vector<TileConfig> first = space.enumerate(50, &tally);
  ASSERT_EQ(first.size(), 50u);
  EXPECT_EQ(tally.distinct, 50u);
  EXPECT_EQ(first, space.enumerate(50)) << "deterministic";
  std::optional<uint64_t> previous;
  for (const TileConfig& c : first) {
    const std::optional<uint64_t> index = space.index_of(c);
    ASSERT_TRUE(index);
    EXPECT_EQ(space.at(*index), c);
    if (previous) {
      EXPECT_GT(*index, *previous) << "index order";
    }
    previous = index;
  }
  std::mt19937_64 rng(9);
  for (int i = 0; i < 200; ++i) {
    const uint64_t index = rng() % space.size();
    EXPECT_EQ(space.index_of(space.at(index)), index);
  }
}

TEST(SpaceGenerator, SmallSpacesAreSampledWhole) {
  const Workload w = Workload::parse_key("softmax|40,48|fp32");
  const SpaceGenerator space = SpaceGenerator::for_workload(w, npu());
  const std::vector<TileConfig> all = space.enumerate(UINT64_MAX);
  ASSERT_GT(all.size(), 2u);
  std::vector<TileConfig> sampled = space.sample(all.size() + 10, 7);
  ASSERT_EQ(sampled.size(), all.size());
  for (const TileConfig& c : all) EXPECT_NE(std::find(sampled.begin(), sampled.end(), c), sampled.end());
}

TEST(SpaceGenerator, AxesFollowTheGraph) {
  const SpaceGenerator matmul = SpaceGenerator::for_workload(Workload::parse_key("matmul|256,256,256|fp16"), npu());
  EXPECT_EQ(matmul.axes().vec, (std::vector<std::optional<Shape>>{std::nullopt}));
  EXPECT_EQ(matmul.axes().fusion.size(), 1u) << "one compute node, one partition";
  EXPECT_EQ(matmul.axes().k_split, std::vector<KSplit>{KSplit{}}) << "fp16 output: a K split needs fp32";
  EXPECT_EQ(matmul.axes().l2_group.size(), 1 + l2_group_candidates(npu().aic_cores).size());
  EXPECT_GT(matmul.cube_tiles_pruned(), 0u);
  EXPECT_EQ(matmul.axes().cube.size() + matmul.cube_tiles_pruned(), matmul.cube_tiles_proposed());

  const SpaceGenerator fp32 = SpaceGenerator::for_workload(Workload::parse_key("matmul|64,4096,64|fp32"), npu());
  using F = KSplit::Form;
  EXPECT_EQ(fp32.axes().k_split, (std::vector<KSplit>{{}, {F::SplitK, 0}, {F::KLoop, 2}, {F::KLoop, 4}, {F::KLoop, 8},
                                                      {F::KLoop, 16}}));
  const SpaceGenerator int8 = SpaceGenerator::for_workload(Workload::parse_key("matmul|64,4096,64|int8"), npu());
  EXPECT_EQ(int8.axes().k_split, (std::vector<KSplit>{{}, {F::SplitK, 0}})) << "int32 adds atomically, no K loop";

  const SpaceGenerator softmax = SpaceGenerator::for_workload(Workload::parse_key("softmax|64,256|fp16"), npu());
  EXPECT_EQ(softmax.axes().cube, (std::vector<std::optional<CubeTile>>{std::nullopt}));
  EXPECT_EQ(softmax.axes().l2_group.size(), 1u);
  ASSERT_GE(softmax.axes().fusion.size(), 3u) << "default, unfused and cuts";
  EXPECT_FALSE(softmax.axes().fusion[0]) << "the default partition comes first";
  for (const auto& v : softmax.axes().vec) EXPECT_EQ(v->back(), 256) << "softmax reduces the last dim";
}

TEST(SpaceGenerator, SkipsCandidatesThatCompileToTheSameProgram) {
  // With one M tile no L2 grouping changes the order, and a kL1 that spans K leaves
  // split-K one chunk. Every produced split-K config really splits K and every grouping
  // really reorders; every K loop cuts K into its views.
  const Workload w = Workload::parse_key("matmul|64,2048,200|fp32");
  const TensorGraph g = build_graph(w);
  const SpaceGenerator space = SpaceGenerator::for_workload(w, npu());
  SpaceTally tally;
  const std::vector<TileConfig> all = space.enumerate(UINT64_MAX, &tally);
  EXPECT_GT(tally.equivalent, 0u);
  for (const TileConfig& c : all) {
    const TilingSummary s = analyze(g, c, npu());
    const KernelSummary& k = *std::find_if(s.kernels.begin(), s.kernels.end(),
                                           [](const KernelSummary& x) { return x.uses_cube; });
    if (c.cube->split_k) {
      EXPECT_GT(k.split_k, 1) << c.to_string();
    }
    if (c.cube->k_view > 0) {
      EXPECT_EQ(k.split_k, (2048 + c.cube->k_view - 1) / c.cube->k_view) << c.to_string();
      EXPECT_GT(k.split_k, 1) << c.to_string();
    }
    if (c.l2_group) {
      EXPECT_GT(k.tile_counts[0], 1) << c.to_string();
      EXPECT_LT(c.l2_group->second, k.tile_counts[1]) << c.to_string();
    }
  }
}

TEST(SpaceGenerator, HostTargetSpaceIsUsable) {
  const Target host = detect_host_target();
  const Workload w = Workload::parse_key("matmul|96,80,130|fp32");
  const SpaceGenerator space = SpaceGenerator::for_workload(w, host);
  const std::vector<TileConfig> picked = space.sample(8, 1);
  EXPECT_EQ(picked.size(), 8u);
  for (const TileConfig& c : picked) EXPECT_NO_THROW(compile(build_graph(w), c, host));
}

TEST(SpaceGenerator, BadOptionsAndIndicesAreUsageErrors) {
  const Workload w = Workload::parse_key("gelu|32,64|fp16");
  using pto::testing::expect_error;
  expect_error([&] { SpaceGenerator::for_workload(w, npu(), {.max_nbuffer = 5}); }, ErrorCategory::Usage,
               {"max_nbuffer", "5"});
  expect_error([&] { SpaceGenerator::for_workload(w, npu(), {.max_nbuffer = 0}); }, ErrorCategory::Usage,
               {"max_nbuffer", "0"});
  expect_error([&] { SpaceGenerator::for_workload(w, npu(), {.min_vec_tile_elements = 0}); }, ErrorCategory::Usage,
               {"min_vec_tile_elements"});
  const SpaceGenerator space = SpaceGenerator::for_workload(w, npu());
  expect_error([&] { space.at(space.size()); }, ErrorCategory::Usage, {std::to_string(space.size())});
  TileConfig foreign;
  foreign.vec = Shape{3, 5};
  EXPECT_FALSE(space.index_of(foreign));
}

// PyPTO has no buffer-depth setter: only flash_attention, whose depth is its kernel's
// QK preload, has an n-buffer axis; other ops leave the depth to the compiler.
TEST(SpaceGenerator, NbufferIsAnAxisOfFlashAttentionOnly) {
  const Workload fa = Workload::parse_key("flash_attention|1,2,256,512,64|fp16");
  const SpaceGenerator space = SpaceGenerator::for_workload(fa, npu(), {.max_nbuffer = 4});
  EXPECT_EQ(space.axes().nbuffer, (std::vector<std::optional<int>>{1, 2, 3, 4}));
  const Workload w = Workload::parse_key("gelu|128,512|fp16");
  const SpaceGenerator gelu = SpaceGenerator::for_workload(w, npu(), {.max_nbuffer = 4});
  EXPECT_EQ(gelu.axes().nbuffer, (std::vector<std::optional<int>>{std::nullopt}));
  for (uint64_t i = 0; i < gelu.size(); ++i) EXPECT_FALSE(gelu.at(i).nbuffer);
  const SpaceGenerator single = SpaceGenerator::for_workload(w, npu(), {.fusion_variants = false});
  EXPECT_EQ(single.axes().fusion.size(), 1u);
}

// PyPTO's matmul guide (docs/zh/tutorials/debug/matmul_performance_guide.md, 减少重复载入)
// recommends A resident in L1 for 96,1536,3072 fp16: the space holds it and it fits.
TEST(SpaceGenerator, HoldsTheGuidesResidentATiles) {
  const Workload w = Workload::parse_key("matmul|96,1536,3072|fp16");
  const SpaceGenerator space = SpaceGenerator::for_workload(w, npu());
  const TileConfig guide = TileConfig::parse(R"({"cube":{"m":[96,96],"k":[64,1536,256],"n":[128,128]}})");
  const std::optional<uint64_t> at = space.index_of(guide);
  ASSERT_TRUE(at);
  EXPECT_EQ(space.at(*at).cube, guide.cube);
  EXPECT_TRUE(analyze(build_graph(w), guide, npu()).feasible);
}

// On A2/A3 no fusion choice puts the matmul in a group with vector ops (PyPTO's
// sg_set_scope rule); on the 950 the space offers such groups.
TEST(SpaceGenerator, FusesCubeWithVectorOnlyWhereTheTargetAllows) {
  const Workload w = Workload::parse_key("matmul_bias_gelu|256,512,256|fp16");
  auto mixes = [&](const std::optional<FusionGroups>& f, const TensorGraph& g, const Target& t) {
    TileConfig c = default_config(w, g, t);
    c.fusion = f;
    const TilingSummary s = analyze(g, c, t);
    return std::any_of(s.kernels.begin(), s.kernels.end(), [&](const KernelSummary& k) {
      return k.nodes.size() > 1 && std::any_of(k.nodes.begin(), k.nodes.end(),
                                               [&](NodeId n) { return g.node(n).kind == OpKind::Matmul; });
    });
  };
  const TensorGraph g = build_graph(w);
  const SpaceGenerator a2 = SpaceGenerator::for_workload(w, npu());
  for (const std::optional<FusionGroups>& f : a2.axes().fusion) EXPECT_FALSE(mixes(f, g, npu()));
  const SpaceGenerator a5 = SpaceGenerator::for_workload(w, pto::testing::cv_npu());
  EXPECT_TRUE(std::any_of(a5.axes().fusion.begin(), a5.axes().fusion.end(),
                          [&](const auto& f) { return mixes(f, g, pto::testing::cv_npu()); }));
}

}  // namespace
}  // namespace pto::search
