// compile(): the verifier's rules with their numbers, n-buffering, block sharing,
// dispatch order, split-K, the execute graph, dumps, and structural properties every
// generated program must have (flags pair up, windows stay inside their buffers and
// tensors, copies move equal element counts) over random configs of every op.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <set>
#include <tuple>

#include "core/analyze.h"
#include "core/compile.h"
#include "core/error.h"
#include "core/op_library.h"
#include "core/target.h"
#include "tests/builtin_targets.h"
#include "tests/random_attrs.h"

namespace pto {
namespace {

using testing::cv_npu;
using testing::host;
using testing::npu;

TensorGraph graph_of(const std::string& key) { return build_graph(Workload::parse_key(key)); }

// The Infeasible error's message, or "" if the config compiled.
std::string infeasibility(const TensorGraph& g, const std::string& config, const Target& t) {
  try {
    compile(g, TileConfig::parse(config), t);
  } catch (const Error& e) {
    EXPECT_EQ(e.category(), ErrorCategory::Infeasible) << e.what();
    return e.what();
  }
  return "";
}

void expect_contains(const std::string& text, std::initializer_list<const char*> parts) {
  for (const char* p : parts) EXPECT_NE(text.find(p), std::string::npos) << "missing '" << p << "' in:\n" << text;
}

// ---- The verifier -------------------------------------------------------------------------

std::map<MemLevel, int64_t> footprint_of(const Compiled& c) {
  std::map<MemLevel, int64_t> out;
  for (const BlockProgram& b : c.program.blocks)
    for (const auto& [level, bytes] : b.footprint()) out[level] = std::max(out[level], bytes);
  return out;
}

TEST(CompileRules, L0COverflowNamesTheTileAndBothSizes) {
  const std::string err = infeasibility(graph_of("matmul|512,512,512|fp16"),
                                        R"({"cube":{"m":[256,256],"k":[64,256],"n":[256,256]}})", npu());
  expect_contains(err, {"L0C capacity", "mL1=256", "nL1=256", "262144 B > L0C 131072 B"});
}

TEST(CompileRules, KL0MustBeAMultipleOf16) {
  const std::string err = infeasibility(graph_of("matmul|256,256,256|fp16"),
                                        R"({"cube":{"m":[64,64],"k":[24,96],"n":[64,64]}})", npu());
  expect_contains(err, {"kL0 % 16", "kL0=24 is not a multiple of 16 (fp16)"});
}

TEST(CompileRules, Int8AlignsTo32) {
  const std::string err = infeasibility(graph_of("matmul|256,256,256|int8"),
                                        R"({"cube":{"m":[64,64],"k":[48,96],"n":[64,64]}})", npu());
  expect_contains(err, {"kL0 % 16", "kL0=48 is not a multiple of 32 (int8)"});
}

TEST(CompileRules, L1MustBeAMultipleOfL0) {
  const std::string err = infeasibility(graph_of("matmul|512,512,512|fp16"),
                                        R"({"cube":{"m":[128,192],"k":[64,256],"n":[128,128]}})", npu());
  expect_contains(err, {"L1 % L0", "mL1=192 is not a multiple of mL0=128"});
}

TEST(CompileRules, L0LargerThanL1) {
  const std::string err = infeasibility(graph_of("matmul|512,512,512|fp16"),
                                        R"({"cube":{"m":[64,64],"k":[128,64],"n":[64,64]}})", npu());
  expect_contains(err, {"L0 <= L1", "kL0=128 > kAL1=64"});
}

TEST(CompileRules, KAL1AndKBL1MustBeMultiples) {
  const std::string err = infeasibility(graph_of("matmul|512,512,512|fp16"),
                                        R"({"cube":{"m":[64,64],"k":[32,96,64],"n":[64,64]}})", npu());
  expect_contains(err, {"kAL1/kBL1", "kAL1=96 and kBL1=64"});
}

TEST(CompileRules, L1CapacityCountsEveryBufferSlot) {
  const TensorGraph g = graph_of("matmul|1024,1024,1024|fp16");
  const std::string config = R"({"cube":{"m":[128,128],"k":[64,512],"n":[128,256]},"nbuffer":NB})";
  auto with = [&](int nb) {
    std::string c = config;
    c.replace(c.find("NB"), 2, std::to_string(nb));
    return c;
  };
  EXPECT_EQ(infeasibility(g, with(1), npu()), "");  // (128*512 + 512*256) * 2 B = 384 KiB
  expect_contains(infeasibility(g, with(2), npu()),
                  {"L1 capacity",
                   "(2 slots x mL1=128 x kAL1=512 + 2 slots x kBL1=512 x nL1=256) x 2 B = 786432 B > L1 524288 B"});
  // Without an nbuffer the compiler takes the one slot that fits, as PyPTO's does.
  const std::string auto_depth = R"({"cube":{"m":[128,128],"k":[64,512],"n":[128,256]}})";
  EXPECT_EQ(infeasibility(g, auto_depth, npu()), "");
  EXPECT_EQ(footprint_of(compile(g, TileConfig::parse(auto_depth), npu())).at(MemLevel::L1), 393216);
}

// PyPTO's matmul guide (docs/zh/tutorials/debug/matmul_performance_guide.md, 减少重复载入)
// keeps A resident in L1 over all of K: [96,96],[64,1536,256],[128,128] on 96,1536,3072
// fp16. PyPTO's L1 rule has no buffer factor; A, loaded once per task, needs one slot,
// and B's panels get two: (96*1536 + 2*256*128) * 2 B = 416 KiB.
TEST(CompileRules, TheGuidesResidentATileFits) {
  const TensorGraph g = graph_of("matmul|96,1536,3072|fp16");
  const TileConfig guide = TileConfig::parse(R"({"cube":{"m":[96,96],"k":[64,1536,256],"n":[128,128]}})");
  const Compiled c = compile(g, guide, npu());
  EXPECT_EQ(footprint_of(c).at(MemLevel::L1), (96 * 1536 + 2 * 256 * 128) * 2);
  EXPECT_EQ(footprint_of(c).at(MemLevel::L0A), 2 * 96 * 64 * 2);
}

// A vector kernel streams a cut reduced dim (split_reduction_test.cpp); a Cube kernel's
// epilogue, whose tasks are the Cube tile's sub-tiles, cannot.
TEST(CompileRules, ReductionAxisSplitInACubeEpilogueIsRejectedEvenOnTheHost) {
  const TensorGraph g = graph_of("attention|1,1,64,16|fp16");
  const std::string cube = R"("cube":{"m":[16,16],"k":[16,16],"n":[16,16]},"vec":[1,1,16,64])";
  for (const Target* t : {&cv_npu(), &host()}) {
    expect_contains(infeasibility(g, "{" + cube + R"(,"fusion":[[3,4,5],[6,7,8,9,10],[11]]})", *t),
                    {"reduction axis split", "amax \"row_max\" reduces dim 3", "(size 64)", "cuts it to 16",
                     "a Cube epilogue cannot stream it"});
    EXPECT_EQ(infeasibility(g, "{" + cube + R"(,"fusion":[[3,4],[5,6,7,8,9,10],[11]]})", *t), "");
  }
  EXPECT_EQ(infeasibility(graph_of("softmax|64,1024|fp32"), R"({"vec":[8,512]})", npu()), "");
}

// rmsnorm's cast of gamma [C] fused with the [R,C] squares but read by a later kernel:
// every row tile would store the same gamma_f32 again, racing with the others.
TEST(CompileRules, BroadcastValueStoredFromCutTilesIsRejectedEvenOnTheHost) {
  const TensorGraph g = graph_of("rmsnorm|66,2|bf16");
  const std::string fusion = R"("fusion":[[1],[3,4],[5,6,7,8],[9,10,11]])";
  for (const Target* t : {&npu(), &host()}) {
    expect_contains(infeasibility(g, "{" + fusion + R"(,"vec":[4,2]})", *t),
                    {"broadcast store split", "\"gamma_f32\"", "dim 0 of [66,2]", "[4,2]"});
    EXPECT_EQ(infeasibility(g, "{" + fusion + R"(,"vec":[66,2]})", *t), "");  // one tile along dim 0: one store
  }
  EXPECT_EQ(infeasibility(g, R"({"vec":[4,2]})", host()), "");  // fused whole, gamma_f32 never leaves the kernel
}

TEST(CompileRules, UbCapacityAndAlignment) {
  const TensorGraph g = graph_of("gelu|512,4096|fp16");
  expect_contains(infeasibility(g, R"({"vec":[256,4096]})", npu()), {"UB capacity", "> UB 196608 B"});
  expect_contains(infeasibility(g, R"({"vec":[8,100]})", npu()),
                  {"UB alignment", "100 x 2 B = 200 B", "not a multiple of 32 B"});
  EXPECT_EQ(infeasibility(g, R"({"vec":[2,4096]})", npu()), "");  // the whole row needs no alignment
}

TEST(CompileRules, VecTileRankMustCoverTheIterationSpace) {
  const TensorGraph g = graph_of("attention|1,2,64,32|fp16");
  expect_contains(infeasibility(g, R"({"vec":[16,64]})", npu()), {"vec tile rank", "vec [16,64] has 2 dims"});
}

TEST(CompileRules, SplitKNeedsAnFp32OutputAndNoEpilogue) {
  expect_contains(infeasibility(graph_of("matmul|64,1024,64|fp16"),
                                R"({"cube":{"m":[64,64],"k":[64,128],"n":[64,64],"split_k":true}})", npu()),
                  {"split_k", "fp32/int32 output", "fp16"});
  expect_contains(infeasibility(graph_of("matmul_bias_gelu|64,1024,64|fp32"),
                                R"({"cube":{"m":[64,64],"k":[64,128],"n":[64,64],"split_k":true}})", cv_npu()),
                  {"split_k", "epilogue"});
}

TEST(CompileRules, AKLoopTakesWholeL1KTilesOfAnFp32MatmulAndSplitsK) {
  const TensorGraph g = graph_of("matmul|64,1024,64|fp32");
  auto config = [](const std::string& cube_rest) {
    return R"({"cube":{"m":[64,64],"n":[64,64],)" + cube_rest + "}}";
  };
  EXPECT_EQ(infeasibility(g, config(R"("k":[32,64,128],"k_view":256)"), npu()), "");
  expect_contains(infeasibility(g, config(R"("k":[32,64,128],"k_view":192)"), npu()),
                  {"k_view", "k_view=192", "not a multiple of kBL1=128"});
  expect_contains(infeasibility(g, config(R"("k":[32,64],"k_view":1024)"), npu()), {"k_view", "k_view=1024 >= K=1024"});
  expect_contains(infeasibility(g, config(R"("k":[32,64],"k_view":128,"split_k":true)"), npu()),
                  {"k_view", "give one"});
  expect_contains(infeasibility(graph_of("matmul|64,1024,64|fp16"), config(R"("k":[32,64],"k_view":128)"), npu()),
                  {"k_view", "fp32 partial sums", "fp16"});
  expect_contains(infeasibility(graph_of("matmul|64,1024,64|int8"), config(R"("k":[32,64],"k_view":128)"), npu()),
                  {"k_view", "int32"});
  expect_contains(infeasibility(graph_of("matmul_bias_gelu|64,1024,64|fp32"), config(R"("k":[32,64],"k_view":128)"),
                                cv_npu()),
                  {"k_view", "epilogue"});
}

TEST(CompileRules, EveryViolationIsCollected) {
  const std::string err = infeasibility(graph_of("matmul|512,512,512|fp16"),
                                        R"({"cube":{"m":[256,256],"k":[24,100],"n":[256,256]}})", npu());
  expect_contains(err, {"kL0 % 16", "L0C capacity", "L1 % L0", "cube alignment", "kAL1=100"});
}

TEST(CompileRules, CapacitiesAreSoftOnTheHost) {
  const TensorGraph g = graph_of("matmul|512,512,512|fp32");
  const TileConfig c = TileConfig::parse(R"({"cube":{"m":[512,512],"k":[512,512],"n":[512,512]}})");
  const Compiled out = compile(g, c, host(), CompileOptions{.dumps = true});
  const TilingSummary s = analyze(g, c, host());
  EXPECT_TRUE(s.feasible);
  ASSERT_FALSE(s.violations.empty());
  expect_contains(out.tile_dump, {"soft", "rules broken"});
  for (const Violation& v : s.violations) EXPECT_NE(out.tile_dump.find(v.detail), std::string::npos);
}

// ---- n-buffering, blocks, dispatch ----------------------------------------------------------

TEST(CompileBuffers, NBufferingDoublesL1AndL0Footprints) {
  const TensorGraph g = graph_of("matmul|256,256,256|fp16");
  TileConfig c = TileConfig::parse(R"({"cube":{"m":[128,128],"k":[64,128],"n":[128,128]},"nbuffer":1})");
  const auto one = footprint_of(compile(g, c, npu()));
  c.nbuffer = 2;
  const auto two = footprint_of(compile(g, c, npu()));
  EXPECT_EQ(two.at(MemLevel::L1), 2 * one.at(MemLevel::L1));
  EXPECT_EQ(two.at(MemLevel::L0A), 2 * one.at(MemLevel::L0A));
  EXPECT_EQ(two.at(MemLevel::L0B), 2 * one.at(MemLevel::L0B));
  EXPECT_EQ(two.at(MemLevel::L0C), one.at(MemLevel::L0C));
  EXPECT_EQ(one.at(MemLevel::L1), (128 * 128 + 128 * 128) * 2);
  c.nbuffer.reset();  // two slots fit: the compiler takes them
  EXPECT_EQ(footprint_of(compile(g, c, npu())), two);
}

// An operand whose L1 tile spans the task's K is loaded once: a second slot would
// never be filled, so it gets one.
TEST(CompileBuffers, AnOperandLoadedOnceKeepsOneSlot) {
  const TensorGraph g = graph_of("matmul|256,256,256|fp16");
  const TileConfig c = TileConfig::parse(R"({"cube":{"m":[128,128],"k":[64,256,128],"n":[128,128]},"nbuffer":2})");
  EXPECT_EQ(footprint_of(compile(g, c, npu())).at(MemLevel::L1), (128 * 256 + 2 * 128 * 128) * 2);
}

// A2/A3 kernels hold Cube or Vector work, not both (PyPTO's sg_set_scope rule); the 950
// fuses a matmul with its epilogue.
TEST(CompileFusion, CubeAndVectorShareAKernelOnlyWhereTheTargetAllows) {
  const TensorGraph g = graph_of("matmul_bias_gelu|256,128,512|fp16");
  const TileConfig c = TileConfig::parse(R"({"cube":{"m":[128,128],"k":[64,128],"n":[256,256]},"vec":[32,256]})");
  const NodeId matmul = 3;
  ASSERT_EQ(g.node(matmul).kind, OpKind::Matmul);
  auto group_of_matmul = [&](const Compiled& out) {
    for (const std::vector<int>& group : *out.config.fusion)
      if (std::find(group.begin(), group.end(), matmul) != group.end()) return group;
    return std::vector<int>{};
  };
  EXPECT_EQ(group_of_matmul(compile(g, c, npu())), std::vector<int>{matmul});
  const Compiled fused = compile(g, c, cv_npu());
  EXPECT_GT(group_of_matmul(fused).size(), 1u);
  TileConfig mixed = c;
  mixed.fusion = fused.config.fusion;
  try {
    compile(g, mixed, npu());
    ADD_FAILURE() << "a Cube+Vector group compiled on ascend910b1";
  } catch (const Error& e) {
    EXPECT_EQ(e.category(), ErrorCategory::Usage);
    expect_contains(e.what(), {"fusion group", "matmul", "Cube or Vector work, not both"});
  }
}

TEST(CompileBuffers, UbTemporariesReuseSpaceAfterTheirLastUse) {
  const TensorGraph g = graph_of("layernorm|64,512|fp32");
  const Compiled c = compile(g, TileConfig::parse(R"({"vec":[8,512],"nbuffer":1})"), npu());
  ASSERT_EQ(c.program.blocks.size(), 1u);
  const BlockProgram& b = c.program.blocks[0];
  int64_t sum = 0;
  for (const LocalBuffer& buf : b.buffers) sum += buf.bytes();
  EXPECT_LT(b.footprint().at(MemLevel::UB), sum / 2);
}

int blocks_of(const Compiled& c, CoreType core) {
  return static_cast<int>(std::count_if(c.program.blocks.begin(), c.program.blocks.end(),
                                        [&](const BlockProgram& b) { return b.core == core; }));
}

TEST(CompileBlocks, DivisibleShapesHaveOneBlockPerKernelPart) {
  const Compiled mm = compile(graph_of("matmul|256,512,512|fp16"),
                              TileConfig::parse(R"({"cube":{"m":[128,128],"k":[64,256],"n":[256,256]}})"), npu());
  EXPECT_EQ(mm.program.blocks.size(), 1u);
  EXPECT_EQ(mm.program.tasks.size(), 4u);
  const Compiled sm = compile(graph_of("softmax|256,512|fp16"), TileConfig::parse(R"({"vec":[16,512]})"), npu());
  EXPECT_EQ(sm.program.blocks.size(), 1u);
  EXPECT_EQ(sm.program.tasks.size(), 16u);
  const Compiled fused =
      compile(graph_of("matmul_bias_gelu|256,128,512|fp16"),
              TileConfig::parse(R"({"cube":{"m":[128,128],"k":[64,128],"n":[256,256]},"vec":[32,256]})"), cv_npu());
  const Kernel& cube = *std::find_if(fused.program.kernels.begin(), fused.program.kernels.end(),
                                     [](const Kernel& k) { return k.uses_cube; });
  std::set<int> aic, aiv;
  for (int id : cube.tasks) (fused.program.tasks[id].core == CoreType::AIC ? aic : aiv).insert(fused.program.tasks[id].block);
  EXPECT_EQ(aic.size(), 1u);
  EXPECT_EQ(aiv.size(), 1u);
}

TEST(CompileBlocks, TailsGetTheirOwnBlocks) {
  const Compiled mm = compile(graph_of("matmul|200,300,400|fp16"),
                              TileConfig::parse(R"({"cube":{"m":[128,128],"k":[64,256],"n":[256,256]}})"), npu());
  EXPECT_EQ(blocks_of(mm, CoreType::AIC), 4);  // {128,72} x {256,144}
  std::set<std::string> names;
  for (const BlockProgram& b : mm.program.blocks) names.insert(b.name);
  EXPECT_TRUE(names.count("y.aic.72x144"));
}

std::vector<std::pair<int64_t, int64_t>> cube_visit_order(const Compiled& c) {
  std::vector<std::pair<int64_t, int64_t>> order;
  for (int id : c.program.kernels[0].tasks) {
    const Shape& i = c.program.tasks[id].tile_index;
    order.emplace_back(i[0], i[1]);
  }
  return order;
}

TEST(CompileDispatch, RowMajorWithoutL2Group) {
  const TensorGraph g = graph_of("matmul|256,64,384|fp16");
  const auto order = cube_visit_order(compile(g, TileConfig::parse(R"({"cube":{"m":[128,128],"k":[64,64],"n":[128,128]}})"), npu()));
  const std::vector<std::pair<int64_t, int64_t>> expected = {{0, 0}, {0, 1}, {0, 2}, {1, 0}, {1, 1}, {1, 2}};
  EXPECT_EQ(order, expected);
}

TEST(CompileDispatch, L2GroupVisitsGroupsOfMDimByNDim) {
  // 3 x 5 tiles in groups of 2 x 2: edge groups are smaller.
  const TensorGraph g = graph_of("matmul|48,16,80|fp16");
  const auto order = cube_visit_order(
      compile(g, TileConfig::parse(R"({"cube":{"m":[16,16],"k":[16,16],"n":[16,16]},"l2_group":[2,2]})"), npu()));
  const std::vector<std::pair<int64_t, int64_t>> expected = {
      {0, 0}, {0, 1}, {1, 0}, {1, 1}, {0, 2}, {0, 3}, {1, 2}, {1, 3}, {0, 4}, {1, 4},
      {2, 0}, {2, 1}, {2, 2}, {2, 3}, {2, 4}};
  EXPECT_EQ(order, expected);
}

// PyPTO's enable_split_k: K in kL1 parts, each part's sums stored, then added up by
// vector adds (fp32); int32 adds atomically into a zeroed output.
TEST(CompileSplitK, OneChunkPerKL1SummedByACombineKernel) {
  const TensorGraph g = graph_of("matmul|64,1024,64|fp32");  // K = 1024 in kL1 = 64 parts: 16 chunks
  const Compiled c =
      compile(g, TileConfig::parse(R"({"cube":{"m":[64,64],"k":[32,64],"n":[64,64],"split_k":true}})"), npu());
  ASSERT_EQ(c.program.kernels.size(), 2u);
  const Kernel& mm = c.program.kernels[0];
  const Kernel& combine = c.program.kernels[1];
  EXPECT_EQ(combine.name, "combine.y");
  EXPECT_FALSE(combine.uses_cube);
  EXPECT_EQ(combine.after, std::vector<int>{0});
  EXPECT_EQ(mm.tasks.size(), 16u);
  std::set<int64_t> partial_rows;
  for (int id : mm.tasks) {
    const Task& task = c.program.tasks[id];
    const BlockProgram& b = c.program.blocks[task.block];
    EXPECT_TRUE(b.instrs.back().op == Opcode::TSTORE && !b.instrs.back().accumulate);
    EXPECT_EQ(c.program.tensors[task.bindings[2].tensor].name, "y.partials");
    partial_rows.insert(task.bindings[2].origin[0]);
  }
  EXPECT_EQ(partial_rows.size(), 16u);  // chunk c at rows c*64
  EXPECT_EQ(*partial_rows.rbegin(), 15 * 64);

  const Compiled int32 = compile(graph_of("matmul|64,1024,64|int8"),
                                 TileConfig::parse(R"({"cube":{"m":[64,64],"k":[32,64],"n":[64,64],"split_k":true}})"),
                                 npu());
  ASSERT_EQ(int32.program.kernels.size(), 2u);
  EXPECT_EQ(int32.program.kernels[0].name, "zero.y");
  for (int id : int32.program.kernels[1].tasks) {
    const BlockProgram& b = int32.program.blocks[int32.program.tasks[id].block];
    EXPECT_TRUE(b.instrs.back().op == Opcode::TSTORE && b.instrs.back().accumulate);
  }

  // K within one kL1: one chunk, no second kernel, no partials.
  const Compiled wide = compile(graph_of("matmul|512,64,768|fp32"),
                                TileConfig::parse(R"({"cube":{"m":[64,64],"k":[32,64],"n":[64,64],"split_k":true}})"),
                                npu());
  ASSERT_EQ(wide.program.kernels.size(), 1u);
  EXPECT_FALSE(wide.program.blocks[0].instrs.back().accumulate);
}

// The matmul guide's manual K loop: K in views of k_view (a ragged last view), each
// view's sums stored as split-K's are and added by the same Combine kernel.
TEST(CompileSplitK, AKLoopCutsKIntoItsViews) {
  const TensorGraph g = graph_of("matmul|64,1000,64|fp32");  // views of 384: 384, 384, 232
  const Compiled c =
      compile(g, TileConfig::parse(R"({"cube":{"m":[64,64],"k":[32,128],"n":[64,64],"k_view":384}})"), npu());
  ASSERT_EQ(c.program.kernels.size(), 2u);
  EXPECT_EQ(c.program.kernels[1].name, "combine.y");
  EXPECT_EQ(c.program.kernels[0].tasks.size(), 3u);
  for (int id : c.program.kernels[0].tasks)
    EXPECT_EQ(c.program.tensors[c.program.tasks[id].bindings[2].tensor].name, "y.partials");
}

TEST(CompileSplitK, TheChunkCountIgnoresTheCores) {
  // 3 x 3 tiles and 6 K steps: 6 chunks, however many cores there are.
  const TensorGraph g = graph_of("matmul|48,96,48|fp32");
  const Compiled c =
      compile(g, TileConfig::parse(R"({"cube":{"m":[16,16],"k":[16,16],"n":[16,16],"split_k":true}})"), npu());
  const Kernel& mm = c.program.kernels.front();
  EXPECT_EQ(mm.tasks.size(), 9u * 6u);
  std::set<int64_t> chunks;
  for (int id : mm.tasks) chunks.insert(c.program.tasks[id].tile_index.back());
  EXPECT_EQ(chunks, (std::set<int64_t>{0, 1, 2, 3, 4, 5}));
}

// ---- Execute graph and dumps ------------------------------------------------------------------

TEST(CompileExec, KernelsWaitForTheTensorsTheyRead) {
  const TensorGraph g = graph_of("attention|1,2,64,32|fp16|causal=1");
  const Compiled c = compile(g, default_config(Workload::parse_key("attention|1,2,64,32|fp16|causal=1"), g, npu()), npu());
  ASSERT_EQ(c.program.kernels.size(), 3u);  // scores+scale+mask | softmax | p @ v
  EXPECT_TRUE(c.program.kernels[0].after.empty());
  EXPECT_EQ(c.program.kernels[1].after, std::vector<int>{0});
  EXPECT_EQ(c.program.kernels[2].after, std::vector<int>{1});
  for (int id : c.program.kernels[0].tasks) {
    const Task& t = c.program.tasks[id];
    if (t.core == CoreType::AIV) {
      ASSERT_EQ(t.deps.size(), 1u);
      EXPECT_EQ(c.program.tasks[t.deps[0]].core, CoreType::AIC);
    } else {
      EXPECT_TRUE(t.deps.empty());
    }
  }
}

TEST(CompileDumps, EveryStageNamesTheGraphTensors) {
  const Workload w = Workload::parse_key("matmul_bias_gelu|64,32,128|fp16");
  const TensorGraph g = build_graph(w);
  const Compiled c = compile(g, default_config(w, g, npu()), npu(), CompileOptions{.dumps = true});
  for (const char* stage : {"tensor", "tile", "block", "program", "exec"}) {
    const std::string text = c.dump(parse_stage(stage));
    SCOPED_TRACE(stage);
    EXPECT_NE(text.find("bias"), std::string::npos) << text;
    EXPECT_NE(text.find("acc"), std::string::npos) << text;
  }
  expect_contains(c.dump(Stage::Tile), {"feasible", "footprint", "L0C", "UB", "tiles"});
  expect_contains(c.dump(Stage::Program), {"TLOAD", "TMATMUL", "TSTORE", "SET_FLAG", "MTE2 -> MTE1", "TADD", "TERF"});
  expect_contains(c.dump(Stage::Exec), {"after: 0", "deps:"});
  EXPECT_THROW(parse_stage("asm"), Error);
}

// The tuner and the JIT compile without dumps: the Tile and Block Graph text is empty
// unless asked for, asking changes nothing else, and the text is the same each time.
TEST(CompileDumps, RenderedOnlyWhenAsked) {
  for (const char* key : {"matmul_bias_gelu|64,32,128|fp16", "softmax|77,300|fp32", "matmul|200,300,400|fp16",
                          "layernorm|33,256|fp16", "attention|1,2,64,32|fp16|causal=1"}) {
    SCOPED_TRACE(key);
    const Workload w = Workload::parse_key(key);
    const TensorGraph g = build_graph(w);
    const TileConfig config = default_config(w, g, npu());
    const Compiled quiet = compile(g, config, npu());
    const Compiled asked = compile(g, config, npu(), CompileOptions{.dumps = true});
    const Compiled again = compile(g, config, npu(), CompileOptions{.dumps = true});
    EXPECT_TRUE(quiet.tile_dump.empty());
    EXPECT_TRUE(quiet.block_dump.empty());
    EXPECT_FALSE(asked.tile_dump.empty());
    EXPECT_FALSE(asked.block_dump.empty());
    EXPECT_EQ(asked.tile_dump, again.tile_dump);
    EXPECT_EQ(asked.block_dump, again.block_dump);
    EXPECT_EQ(quiet.program.dump_blocks(), asked.program.dump_blocks());
    EXPECT_EQ(quiet.config, asked.config);
  }
}

TEST(CompileDumps, ExecElidesLongTaskLists) {
  const Compiled c = compile(graph_of("add|512,512|fp32"), TileConfig::parse(R"({"vec":[8,64]})"), npu());
  expect_contains(c.dump(Stage::Exec), {"more tasks"});
}

TEST(CompileConfig, ResolvedConfigCarriesTheFusionUsed) {
  const TensorGraph g = graph_of("softmax|64,128|fp32");
  const Compiled c = compile(g, TileConfig::parse(R"({"vec":[8,128]})"), npu());
  ASSERT_TRUE(c.config.fusion.has_value());
  const Compiled again = compile(g, c.config, npu());
  EXPECT_EQ(again.program.instruction_count(), c.program.instruction_count());
}

TEST(CompileConfig, BadFusionIsAUsageErrorNamingTheNode) {
  const TensorGraph g = graph_of("softmax|8,16|fp32");
  TileConfig c;
  c.fusion = std::vector<std::vector<int>>{{1, 2, 3, 4}};
  try {
    compile(g, c, npu());
    FAIL() << "accepted a fusion that leaves a node out";
  } catch (const Error& e) {
    EXPECT_EQ(e.category(), ErrorCategory::Usage);
    expect_contains(e.what(), {"div \"softmax\" is in no group"});
  }
}

// ---- Structural properties of every program --------------------------------------------------

// Windows inside their buffers / tensors, flags paired, TLOAD/TSTORE element counts equal.
void check_program(const Program& p, const std::string& where) {
  for (const Task& task : p.tasks) {
    const BlockProgram& b = p.blocks[task.block];
    std::map<int, const LocalBuffer*> bufs;
    for (const LocalBuffer& buf : b.buffers) bufs[buf.id] = &buf;
    auto check_operand = [&](const Operand& o, size_t i) {
      ASSERT_EQ(o.offset.size(), o.extent.size()) << where << " " << b.name << " #" << i;
      if (o.level == MemLevel::GM) {
        ASSERT_LT(o.id, static_cast<int>(task.bindings.size())) << where;
        const TensorBinding& bind = task.bindings[o.id];
        const GmTensor& t = p.tensors[bind.tensor];
        ASSERT_EQ(o.extent.size(), t.shape.size()) << where << " " << b.name << " #" << i;
        for (size_t d = 0; d < t.shape.size(); ++d) {
          EXPECT_GE(o.extent[d], 1);
          EXPECT_LE(bind.origin[d] + o.offset[d] + o.extent[d], t.shape[d])
              << where << " " << b.name << " #" << i << " tensor " << t.name << " dim " << d;
        }
        return;
      }
      ASSERT_TRUE(bufs.count(o.id)) << where << " " << b.name << " #" << i;
      const LocalBuffer& buf = *bufs[o.id];
      EXPECT_EQ(buf.level, o.level);
      ASSERT_EQ(o.extent.size(), buf.shape.size()) << where << " " << b.name << " #" << i;
      for (size_t d = 0; d < buf.shape.size(); ++d)
        EXPECT_LE(o.offset[d] + o.extent[d], buf.shape[d]) << where << " " << b.name << " #" << i << " " << buf.name;
    };
    std::map<std::tuple<Pipe, Pipe, int>, int> pending;
    for (size_t i = 0; i < b.instrs.size(); ++i) {
      const Instr& in = b.instrs[i];
      if (in.op == Opcode::SET_FLAG) {
        EXPECT_EQ(in.pipe, in.flag_src);
        ++pending[std::make_tuple(in.flag_src, in.flag_dst, in.event)];
        continue;
      }
      if (in.op == Opcode::WAIT_FLAG) {
        EXPECT_EQ(in.pipe, in.flag_dst);
        int& open = pending[std::make_tuple(in.flag_src, in.flag_dst, in.event)];
        EXPECT_GT(open, 0) << where << " " << b.name << " #" << i << ": WAIT_FLAG before its SET_FLAG";
        --open;
        continue;
      }
      check_operand(in.dst, i);
      for (const Operand& s : in.src) check_operand(s, i);
      if (in.op == Opcode::TLOAD || in.op == Opcode::TSTORE) {
        EXPECT_EQ(num_elements(in.dst.extent), num_elements(in.src[0].extent)) << where << " " << b.name << " #" << i;
      }
    }
    for (const auto& [key, n] : pending) EXPECT_EQ(n, 0) << where << " " << b.name << ": unmatched SET_FLAG";
  }
}

TEST(CompileProperties, RandomConfigsOfEveryOpGiveWellFormedPrograms) {
  std::mt19937 rng(2024);
  auto dim = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  for (const OpDef& op : op_library()) {
    for (int round = 0; round < 4; ++round) {
      Workload w;
      w.op = op.name;
      for (const std::string& d : op.dims) w.shape.push_back(d == "B" || d == "H" ? dim(1, 2) : dim(1, 200));
      if (op.name == "attention") w.shape[3] = 16 * dim(1, 4);
      w.dtype = op.dtypes.front();
      pto::testing::draw_attrs(op, w, rng);
      const TensorGraph g = build_graph(w);
      TileConfig c = default_config(w, g, npu());
      c.nbuffer = static_cast<int>(dim(1, 3));
      if (c.cube) c.l2_group = std::make_pair(dim(1, 3), dim(1, 3));
      if (!analyze(g, c, npu()).feasible) continue;
      check_program(compile(g, c, npu()).program, w.key() + " " + c.to_string());
    }
  }
}

TEST(CompileProperties, TransposedOperandsLoadTheirStoredLayout) {
  const TensorGraph g = graph_of("matmul|80,48,112|fp16|transpose_a=1,transpose_b=1");
  const Compiled c = compile(g, TileConfig::parse(R"({"cube":{"m":[32,64],"k":[16,32],"n":[32,64]}})"), npu());
  check_program(c.program, "transposed");
  bool saw = false;
  for (const BlockProgram& b : c.program.blocks)
    for (const Instr& in : b.instrs)
      if (in.op == Opcode::TLOAD) {
        EXPECT_TRUE(in.transpose);
        // dst is the logical tile: GM's last two extents swapped.
        EXPECT_EQ(in.dst.extent[0], in.src[0].extent[1]);
        EXPECT_EQ(in.dst.extent[1], in.src[0].extent[0]);
        saw = true;
      }
  EXPECT_TRUE(saw);
}


// ---- flash_attention's QK preload --------------------------------------------------------

// Slots of a flash_attention buffer in the compiled program ("p.ws[0]", "p.ws[1]", ...).
int slots_of(const Compiled& c, const std::string& name) {
  std::set<std::string> names;
  for (const BlockProgram& b : c.program.blocks)
    for (const LocalBuffer& buf : b.buffers)
      if (buf.name == name || buf.name.rfind(name + "[", 0) == 0) names.insert(buf.name);
  return static_cast<int>(names.size());
}

// pto-isa's kernel runs QK four blocks ahead of PV with double-buffered L1: its
// Cube-vector FIFOs (S, P, O_j, and the rescale that waits with them) hold preload + 1
// blocks where they land, the units' own buffers keep nbuffer slots. Through the
// workspace (910B) P lands in GM and L1 stays double-buffered; direct (cv_direct) it lands
// in L1.
TEST(CompileAttention, ThePreloadSizesTheHandOffFifosAndNbufferTheUnitsBuffers) {
  const TensorGraph g = graph_of("flash_attention|1,1,128,2048,128|fp16");
  const std::string config = R"({"attention":{"q_tile":128,"kv_tile":256,"preload":4},"nbuffer":2})";
  const Compiled ws = compile(g, TileConfig::parse(config), load_target("ascend910b2"));
  for (const char* fifo : {"s.ws", "p.ws", "o.ws", "alpha.ub"}) EXPECT_EQ(slots_of(ws, fifo), 5) << fifo;
  for (const char* own : {"k.l1", "v.l1", "p.l1", "a.l0a", "c.l0c", "p.ub"}) EXPECT_EQ(slots_of(ws, own), 2) << own;
  const std::string small = R"({"attention":{"q_tile":64,"kv_tile":128,"preload":2},"nbuffer":2})";
  const Compiled direct = compile(g, TileConfig::parse(small), load_target("ascend950pr"));
  for (const char* fifo : {"s.ub", "p.l1", "pv.ub", "alpha.ub"}) EXPECT_EQ(slots_of(direct, fifo), 3) << fifo;
  EXPECT_EQ(slots_of(direct, "k.l1"), 2);
  EXPECT_EQ(slots_of(direct, "s.ws"), 0);
  // Without a preload of its own the FIFOs are as deep as the units' buffers.
  const Compiled plain = compile(g, TileConfig::parse(R"({"attention":{"q_tile":64,"kv_tile":128},"nbuffer":3,"stages":{)"
                                                   R"("c1":{"cube":{"m":[64,64],"k":[64,64],"n":[64,64]}},)"
                                                   R"("c2":{"cube":{"m":[64,64],"k":[64,64],"n":[64,64]}}}})"),
                                 load_target("ascend910b2"));
  EXPECT_EQ(slots_of(plain, "p.ws"), 3);
  EXPECT_EQ(slots_of(plain, "k.l1"), 3);
}

TEST(CompileAttention, APreloadOutOfRangeIsAUsageErrorNamingIt) {
  const TensorGraph g = graph_of("flash_attention|1,1,128,2048,128|fp16");
  TileConfig c = TileConfig::parse(R"({"attention":{"q_tile":128,"kv_tile":256}})");
  c.attention->preload = 9;
  try {
    compile(g, c, load_target("ascend910b2"));
    ADD_FAILURE() << "compiled with preload 9";
  } catch (const Error& e) {
    EXPECT_EQ(e.category(), ErrorCategory::Usage);
    expect_contains(e.what(), {"attention.preload=9", "0..7"});
  }
}

// ---- Views ------------------------------------------------------------------------------------

TEST(CompileViews, ReshapeOfAStridedViewIsCopiedFirst) {
  GraphBuilder b;
  const NodeId x = b.input("x", {8, 12}, DType::F32);
  const NodeId window = b.slice(x, {0, 2}, {8, 8}, "window");
  const NodeId flat = b.reshape(window, {64}, "flat");
  b.mark_output(b.exp(flat, "e"));
  const TensorGraph g = b.build();
  const Compiled c = compile(g, TileConfig{}, npu());
  ASSERT_EQ(c.program.kernels.size(), 2u);
  EXPECT_EQ(c.program.kernels[0].name, "copy.flat.src");
  EXPECT_EQ(c.program.kernels[1].after, std::vector<int>{0});
  const GmTensor& reshaped = c.program.tensors[flat];
  ASSERT_GE(reshaped.alias_of, 0);
  EXPECT_EQ(c.program.tensors[reshaped.alias_of].name, "flat.src");
  EXPECT_EQ(c.program.tensors[window].alias_of, x);
  EXPECT_EQ(c.program.tensors[window].elem_offset, 2);
  check_program(c.program, "reshape of slice");
}

TEST(CompileViews, ContiguousViewsAreAliasesAndBroadcastsHaveStrideZero) {
  GraphBuilder b;
  const NodeId x = b.input("x", {4, 16}, DType::F32);
  const NodeId row = b.input("row", {16}, DType::F32);
  const NodeId wide = b.broadcast(row, {4, 16}, "wide");
  const NodeId flat = b.reshape(b.add(x, wide, "sum"), {64}, "flat");
  b.mark_output(b.exp(flat, "e"));
  const TensorGraph g = b.build();
  const Compiled c = compile(g, TileConfig{}, npu());
  EXPECT_EQ(c.program.tensors[wide].strides, (Shape{0, 1}));
  EXPECT_EQ(c.program.tensors[flat].alias_of, flat - 1);
  for (const Kernel& k : c.program.kernels) EXPECT_EQ(k.name.rfind("copy.", 0), std::string::npos);
  check_program(c.program, "broadcast");
}

TEST(CompileViews, AViewMarkedAsOutputIsCopiedIntoItsOwnTensor) {
  GraphBuilder b;
  const NodeId x = b.input("x", {4, 16}, DType::F32);
  const NodeId e = b.exp(x, "e");
  b.mark_output(b.slice(e, {1, 0}, {2, 16}, "rows"));
  const TensorGraph g = b.build();
  const Compiled c = compile(g, TileConfig{}, npu());
  const auto out = std::find_if(c.program.tensors.begin(), c.program.tensors.end(),
                                [](const GmTensor& t) { return t.role == TensorRole::Output; });
  ASSERT_NE(out, c.program.tensors.end());
  EXPECT_EQ(out->name, "rows");
  EXPECT_EQ(out->alias_of, -1);
  EXPECT_EQ(c.program.kernels.back().name, "copy.rows");
  check_program(c.program, "view output");
}

}  // namespace
}  // namespace pto
