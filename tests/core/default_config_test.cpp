// default_config: the hand-picked config clamped to the shape, then shrunk until
// analyze() finds it feasible — for every op over random shapes on every built-in
// target, and on a target whose buffers are far smaller than any hand-picked tile.
#include <gtest/gtest.h>

#include <random>

#include "core/analyze.h"
#include "core/compile.h"
#include "core/op_library.h"
#include "core/target.h"
#include "tests/random_attrs.h"

namespace pto {
namespace {

// `max_head_dim` caps flash_attention's D: its running output, q_tile x D fp32 rows, stays
// in each vector unit's UB however small the blocks get. `int8_kv`: an int8 KV cache
// dequantizes whole 128-token blocks, whose fp32 softmax slices (16 x 128 x 4 B, three of
// them) alone outgrow a tiny UB.
Workload random_workload(const OpDef& op, std::mt19937& rng, int64_t max_head_dim, bool int8_kv) {
  auto dim = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  Workload w;
  w.op = op.name;
  for (const std::string& d : op.dims) w.shape.push_back(d == "B" || d == "H" ? dim(1, 3) : dim(1, 400));
  if (op.name == "attention") w.shape[3] = 8 * dim(1, 16);
  if (op.name == "flash_attention") w.shape[4] = dim(1, max_head_dim);
  w.dtype = op.dtypes[std::uniform_int_distribution<size_t>(0, op.dtypes.size() - 1)(rng)];
  pto::testing::draw_attrs(op, w, rng, int8_kv);
  return w;
}

void expect_feasible_defaults(const Target& t, int shapes_per_op, uint32_t seed, int64_t max_head_dim = 400,
                              bool int8_kv = true) {
  std::mt19937 rng(seed);
  for (const OpDef& op : op_library())
    for (int i = 0; i < shapes_per_op; ++i) {
      const Workload w = random_workload(op, rng, max_head_dim, int8_kv);
      const TensorGraph g = build_graph(w);
      const TileConfig c = default_config(w, g, t);
      const TilingSummary s = analyze(g, c, t);
      EXPECT_TRUE(s.feasible) << w.key() << " on " << t.name << ": " << c.to_string() << "\n"
                              << format_violations(s.violations);
    }
}

TEST(DefaultConfig, FeasibleForEveryOpOnEveryBuiltinTarget) {
  uint32_t seed = 1;
  for (const std::string& name : builtin_target_names()) expect_feasible_defaults(load_target(name), 20, seed++);
}

TEST(DefaultConfig, ShrinksUntilItFitsASmallTarget) {
  Target t = load_target("ascend910b1");
  t.l1 = 64 * 1024;
  t.l0a = t.l0b = 8 * 1024;
  t.l0c = 16 * 1024;
  t.ub = 24 * 1024;
  expect_feasible_defaults(t, 4, 77, 64, false);
  const Workload w = Workload::parse_key("matmul|1024,1024,1024|fp16");
  const TileConfig c = default_config(w, build_graph(w), t);
  const TileConfig hand = find_op("matmul").hand_picked(w);
  EXPECT_LT(c.cube->mL1 * c.cube->nL1, hand.cube->mL1 * hand.cube->nL1);
}

// At 32 k tokens 128 x 256 blocks are more instructions than a program holds: the
// default takes larger blocks instead, feasible and within the limits.
TEST(DefaultConfig, LongFlashAttentionGrowsItsBlocksIntoTheProgramLimits) {
  const Target t = load_target("ascend910b1");
  const Workload w = Workload::parse_key("flash_attention|1,32,32768,32768,128|fp16");
  const TensorGraph g = build_graph(w);
  TileConfig hand = find_op("flash_attention").hand_picked(w);
  ASSERT_FALSE(analyze(g, hand, t).within_program_limits()) << "the case no longer needs growing";
  const TileConfig c = default_config(w, g, t);
  const TilingSummary s = analyze(g, c, t);
  EXPECT_TRUE(s.feasible) << c.to_string();
  EXPECT_TRUE(s.within_program_limits()) << c.to_string();
}

// The kernel's QK preload of four stays where its FIFOs go through the workspace (910B);
// where they land in L1 and UB (the 950) and do not fit, it is the first thing given up,
// before any block shrinks.
TEST(DefaultConfig, FlashAttentionGivesUpTheDeepPreloadBeforeItsBlocks) {
  const Workload w = Workload::parse_key("flash_attention|1,8,2048,2048,128|fp16");
  const TensorGraph g = build_graph(w);
  const TileConfig hand = find_op("flash_attention").hand_picked(w);
  const TileConfig workspace = default_config(w, g, load_target("ascend910b1"));
  EXPECT_EQ(workspace.preload_or_default(), 4);
  const Target direct = load_target("ascend950pr");
  ASSERT_FALSE(analyze(g, hand, direct).feasible) << "the case no longer needs shrinking";
  const TileConfig c = default_config(w, g, direct);
  EXPECT_TRUE(analyze(g, c, direct).feasible) << c.to_string();
  EXPECT_FALSE(c.attention->preload) << c.to_string();
  TileConfig shallow = hand;
  shallow.attention->preload.reset();
  if (analyze(g, shallow, direct).feasible) EXPECT_EQ(c, shallow);
}

TEST(DefaultConfig, TilesLargerThanTheShapeShrinkToTheAlignedDims) {
  const Target t = load_target("ascend910b1");
  const Workload w = Workload::parse_key("matmul|40,72,100|fp16");
  const TileConfig c = default_config(w, build_graph(w), t);
  ASSERT_TRUE(c.cube.has_value());
  EXPECT_EQ(c.cube->mL1, 48);  // align_up(40, 16)
  EXPECT_EQ(c.cube->nL1, 112);
  EXPECT_EQ(c.cube->nL0, 112);
  EXPECT_LE(c.cube->kAL1, 128);  // K = 72 fits one step of the (aligned) L0 size
  EXPECT_EQ(c.cube->kAL1 % c.cube->kL0, 0);

  const Workload soft = Workload::parse_key("softmax|8,100|fp32");
  const TileConfig v = default_config(soft, build_graph(soft), t);
  ASSERT_TRUE(v.vec.has_value());
  EXPECT_LE(v.vec->front(), 8);
  EXPECT_EQ(v.vec->back(), 100);  // the reduced row stays whole
}

TEST(DefaultConfig, MatchesTheHandPickedConfigWhereItAlreadyFits) {
  const Target t = load_target("ascend910b1");
  const Workload w = Workload::parse_key("matmul|4096,4096,4096|fp16");
  EXPECT_EQ(default_config(w, build_graph(w), t), find_op("matmul").hand_picked(w));
}

TEST(DefaultConfig, CompilesOnTheHost) {
  const Target t = load_target("host");
  const Workload w = Workload::parse_key("attention|1,2,48,32|fp32|causal=1");
  const TensorGraph g = build_graph(w);
  EXPECT_NO_THROW(compile(g, default_config(w, g, t), t));
}

}  // namespace
}  // namespace pto
