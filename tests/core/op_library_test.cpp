// The op library: each op's graph, interpreted in fp64, equals its hand-written
// reference on random (ragged) shapes, dtypes, attrs and seeds; hand-picked configs;
// workload checks; random inputs.
#include "core/op_library.h"

#include <cstring>
#include <random>
#include <set>

#include <gtest/gtest.h>

#include "tests/core/error_testing.h"
#include "tests/core/graph_eval.h"
#include "tests/random_attrs.h"

namespace pto {
namespace {

// Sizes that rarely divide a tile: 1, primes-ish, and a random one.
int64_t ragged_size(std::mt19937& rng, int64_t cap) {
  const int64_t pool[] = {1, 17, 33, 100, 1 + static_cast<int64_t>(rng() % cap)};
  return std::min(pool[rng() % 5], cap);
}

Workload random_workload(const OpDef& op, DType dtype, std::mt19937& rng) {
  Workload w;
  w.op = op.name;
  w.dtype = dtype;
  // Attention's S x S scores and the interpreter's per-element matmul set the caps.
  const int64_t cap = op.name == "attention" ? 40 : 100;
  for (const std::string& d : op.dims) w.shape.push_back(d == "B" || d == "H" ? 1 + rng() % 3 : ragged_size(rng, cap));
  pto::testing::draw_attrs(op, w, rng);
  return w;
}

// Both sides compute in fp64 and round once to the output dtype (the graph also rounds
// its fp32 intermediates), so they agree within the dtype's tolerance with no
// loosening for accumulation length.
TEST(OpLibrary, GraphsInterpretedInFp64MatchTheReferences) {
  std::mt19937 rng(2024);
  for (const OpDef& op : op_library()) {
    for (DType dtype : op.dtypes) {
      for (int trial = 0; trial < 12; ++trial) {
        const Workload w = random_workload(op, dtype, rng);
        const TensorGraph g = build_graph(w);
        const std::vector<HostTensor> inputs = random_inputs(g, rng());
        const std::vector<HostTensor> expected = op.reference(w, inputs);
        const std::vector<HostTensor> actual = testing::eval_graph(g, inputs);
        const std::string what = w.key();
        ASSERT_EQ(actual.size(), expected.size()) << what;
        for (size_t i = 0; i < actual.size(); ++i) {
          ASSERT_EQ(expected[i].shape(), actual[i].shape()) << what;
          ASSERT_EQ(expected[i].dtype(), actual[i].dtype()) << what;
          EXPECT_TRUE(all_close(actual[i], expected[i]))
              << what << ": max |diff| " << max_abs_diff(actual[i], expected[i]);
        }
      }
    }
  }
}

// The comparison above must be able to fail: a reference of a different op does not pass.
TEST(OpLibrary, ComparisonDetectsAWrongGraph) {
  const Workload gelu{"gelu", {17, 33}, DType::F32, {}};
  const Workload erfc{"erfc", {17, 33}, DType::F32, {}};
  const TensorGraph g = build_graph(gelu);
  const auto inputs = random_inputs(g, 3);
  EXPECT_FALSE(all_close(testing::eval_graph(g, inputs)[0], find_op("erfc").reference(erfc, inputs)[0]));
  Workload causal{"attention", {1, 2, 9, 8}, DType::F32, {{"causal", 1}}};
  Workload full = causal;
  full.attrs["causal"] = 0;
  const auto qkv = random_inputs(build_graph(causal), 4);
  EXPECT_FALSE(all_close(find_op("attention").reference(causal, qkv)[0], find_op("attention").reference(full, qkv)[0]));
}

TEST(OpLibrary, OutputDTypes) {
  auto output = [](const Workload& w) {
    const TensorGraph g = build_graph(w);
    return g.node(g.outputs()[0]);
  };
  EXPECT_EQ(output({"matmul", {8, 64, 16}, DType::I8, {}}).dtype, DType::I32);
  EXPECT_EQ(output({"matmul", {8, 64, 16}, DType::BF16, {}}).dtype, DType::BF16);
  EXPECT_EQ(output({"batch_matmul", {3, 8, 64, 16}, DType::F16, {}}).shape, (Shape{3, 8, 16}));
  EXPECT_EQ(output({"sum", {5, 7}, DType::F16, {}}).shape, (Shape{5}));
  EXPECT_EQ(output({"attention", {2, 4, 32, 16}, DType::F16, {{"causal", 1}}}).dtype, DType::F16);
  EXPECT_EQ(output({"matmul_bias_gelu", {8, 64, 16}, DType::F16, {}}).dtype, DType::F16);
  // Transposed operands are stored transposed.
  const TensorGraph g = build_graph({"matmul", {8, 64, 16}, DType::F16, {{"transpose_a", 1}, {"transpose_b", 1}}});
  EXPECT_EQ(g.node(g.inputs()[0]).shape, (Shape{64, 8}));
  EXPECT_EQ(g.node(g.inputs()[1]).shape, (Shape{16, 64}));
}

TEST(OpLibrary, AttentionGraphFollowsTheSpec) {
  const TensorGraph g = build_graph({"attention", {1, 2, 64, 32}, DType::BF16, {{"causal", 1}}});
  const Node& scores = g.node(g.consumers(g.inputs()[0])[0]);
  EXPECT_EQ(scores.kind, OpKind::Matmul);
  EXPECT_TRUE(scores.transpose_b);
  EXPECT_EQ(scores.dtype, DType::F32);
  int masks = 0, casts = 0;
  for (const Node& n : g.nodes()) {
    masks += n.kind == OpKind::CausalMask;
    casts += n.kind == OpKind::Cast;
  }
  EXPECT_EQ(masks, 1);
  EXPECT_EQ(casts, 1);  // probabilities back to bf16
}

TEST(OpLibrary, RegistryIsWellFormed) {
  std::set<std::string> names;
  for (const OpDef& op : op_library()) {
    EXPECT_TRUE(names.insert(op.name).second) << op.name;
    EXPECT_EQ(&find_op(op.name), &op);
    EXPECT_FALSE(op.dims.empty() || op.summary.empty() || op.dtypes.empty()) << op.name;
  }
  for (const char* expected : {"matmul", "batch_matmul", "matmul_bias_gelu", "add", "mul", "exp", "log", "sqrt",
                               "erfc", "gelu", "sum", "amax", "amin", "softmax", "layernorm", "rmsnorm", "attention",
                               "flash_attention"})
    EXPECT_TRUE(names.count(expected)) << expected;
}

TEST(OpLibrary, WorkloadErrorsNameTheBadValue) {
  using testing::expect_error;
  const auto usage = ErrorCategory::Usage;
  expect_error([] { find_op("conv2d"); }, usage, {"'conv2d'", "matmul", "attention"});
  expect_error([] { build_graph({"matmul", {64, 64}, DType::F16, {}}); }, usage, {"matmul", "[64,64]", "M, K, N"});
  expect_error([] { build_graph({"softmax", {64, 0}, DType::F16, {}}); }, usage, {"C=0"});
  expect_error([] { build_graph({"attention", {1, 1, 8, 8}, DType::F16, {{"casual", 1}}}); }, usage,
               {"'casual'", "causal"});
  expect_error([] { build_graph({"add", {4, 4}, DType::F16, {{"causal", 1}}}); }, usage, {"'causal'", "none"});
  expect_error([] { build_graph({"matmul", {4, 4, 4}, DType::F16, {{"transpose_b", 2}}}); }, usage,
               {"transpose_b=2"});
  expect_error([] { build_graph({"softmax", {4, 4}, DType::I32, {}}); }, usage, {"int32", "fp16"});
  expect_error([] { find_op("matmul").hand_picked({"matmul", {4}, DType::F16, {}}); }, usage, {"[4]"});
  const Workload w{"layernorm", {4, 8}, DType::F32, {}};
  const auto inputs = random_inputs(build_graph(w), 1);
  expect_error([&] { find_op("layernorm").reference(w, {inputs[0]}); }, usage, {"1 inputs", "expected 3"});
  expect_error([&] { find_op("layernorm").reference(w, {inputs[0], inputs[0], inputs[2]}); }, usage,
               {"input 1", "\"gamma\"", "fp32[4,8]", "fp32[8]"});
}

TileConfig picked(const std::string& op, const Shape& shape, DType dtype) {
  return find_op(op).hand_picked({op, shape, dtype, {}});
}

CubeTile cube(int64_t m0, int64_t m1, int64_t k0, int64_t k1, int64_t n0, int64_t n1) {
  CubeTile c;
  c.mL0 = m0, c.mL1 = m1, c.kL0 = k0, c.kAL1 = c.kBL1 = k1, c.nL0 = n0, c.nL1 = n1;
  c.k_short_form = true;
  return c;
}

TEST(HandPicked, MatmulTilesFromTheGuide) {
  EXPECT_EQ(picked("matmul", {4096, 4096, 4096}, DType::F16).cube, cube(128, 128, 64, 256, 256, 256));
  EXPECT_EQ(picked("matmul", {4096, 4096, 4096}, DType::BF16).cube, cube(128, 128, 64, 256, 256, 256));
  EXPECT_EQ(picked("matmul", {4096, 4096, 4096}, DType::F32).cube, cube(128, 128, 64, 256, 128, 128));
  EXPECT_EQ(picked("matmul", {4096, 4096, 4096}, DType::I8).cube, cube(128, 128, 128, 512, 256, 256));
  // Small M takes the whole (16-aligned) M; 129 is no longer small.
  EXPECT_EQ(picked("matmul", {96, 1536, 3072}, DType::F16).cube, cube(96, 96, 64, 256, 256, 256));
  EXPECT_EQ(picked("matmul", {100, 64, 64}, DType::F16).cube->mL1, 112);
  EXPECT_EQ(picked("matmul", {1, 64, 64}, DType::F16).cube->mL0, 16);
  EXPECT_EQ(picked("matmul", {129, 64, 64}, DType::F16).cube->mL0, 128);
  EXPECT_EQ(picked("batch_matmul", {8, 96, 64, 64}, DType::F16).cube->mL0, 96);
  const TileConfig t = picked("matmul", {4096, 4096, 4096}, DType::F16);
  EXPECT_FALSE(t.vec || t.fusion || t.l2_group || t.nbuffer);  // the compiler picks the depth
  EXPECT_EQ(picked("matmul_bias_gelu", {256, 256, 256}, DType::F16).vec, (Shape{64, 512}));
}

TEST(HandPicked, VectorTiles) {
  for (const char* op : {"add", "erfc", "gelu"}) EXPECT_EQ(picked(op, {1000, 1000}, DType::F16).vec, (Shape{64, 512}));
  // Reductions keep C whole and take the most rows (a power of two) within 32 KiB of fp32.
  EXPECT_EQ(picked("softmax", {4096, 256}, DType::F16).vec, (Shape{32, 256}));
  EXPECT_EQ(picked("layernorm", {4096, 1000}, DType::F32).vec, (Shape{8, 1000}));
  EXPECT_EQ(picked("sum", {10, 8192}, DType::F32).vec, (Shape{1, 8192}));
  EXPECT_EQ(picked("amax", {10, 100000}, DType::F32).vec, (Shape{1, 100000}));
  EXPECT_EQ(picked("rmsnorm", {10, 1}, DType::F32).vec, (Shape{8192, 1}));
  const TileConfig att = picked("attention", {2, 8, 512, 128}, DType::F16);
  EXPECT_EQ(att.cube, cube(64, 64, 64, 64, 64, 64));
  EXPECT_EQ(att.vec, (Shape{1, 1, 16, 512}));
  EXPECT_FALSE(att.fusion || att.nbuffer);
  const TileConfig fa = picked("flash_attention", {1, 2, 256, 256, 64}, DType::F16);
  EXPECT_EQ(fa.nbuffer, 2);  // its kernel's ping-pong L1 tiles ...
  EXPECT_EQ(fa.preload_or_default(), 4);  // ... and qkPreloadNum
}

TEST(RandomInputs, DeterministicPerSeedAndDistinctPerInput) {
  const TensorGraph g = build_graph({"add", {33, 17}, DType::F16, {}});
  const auto a = random_inputs(g, 9), b = random_inputs(g, 9), c = random_inputs(g, 10);
  ASSERT_EQ(a.size(), 2u);
  EXPECT_EQ(std::memcmp(a[0].data(), b[0].data(), a[0].bytes()), 0);
  EXPECT_EQ(std::memcmp(a[1].data(), b[1].data(), a[1].bytes()), 0);
  EXPECT_NE(std::memcmp(a[0].data(), c[0].data(), a[0].bytes()), 0);
  EXPECT_NE(std::memcmp(a[0].data(), a[1].data(), a[0].bytes()), 0);
}

TEST(RandomInputs, PositiveWhereTheGraphNeedsIt) {
  GraphBuilder b;
  const NodeId logged = b.input("logged", {64}, DType::F32);
  const NodeId divisor = b.input("divisor", {64}, DType::F32);
  const NodeId dividend = b.input("dividend", {64}, DType::F32);
  const NodeId rooted = b.input("rooted", {8, 8}, DType::F16);
  const NodeId inverted = b.input("inverted", {64}, DType::F32);
  const NodeId counts = b.input("counts", {64}, DType::I32);
  b.mark_output(b.unary(OpKind::Log, logged));
  b.mark_output(b.div(dividend, divisor));
  b.mark_output(b.unary(OpKind::Sqrt, b.cast(b.reshape(rooted, {64}), DType::F32)));
  b.mark_output(b.binary_scalar(OpKind::Div, inverted, 1.0, true));
  b.mark_output(b.binary_scalar(OpKind::Mul, counts, 2));
  const TensorGraph g = b.build();
  const auto in = random_inputs(g, 5);
  auto min_of = [](const HostTensor& t) {
    double m = t.get(0);
    for (int64_t i = 0; i < t.size(); ++i) m = std::min(m, t.get(i));
    return m;
  };
  EXPECT_GT(min_of(in[0]), 0);
  EXPECT_GT(min_of(in[1]), 0);
  EXPECT_LT(min_of(in[2]), 0);  // a dividend may be negative
  EXPECT_GT(min_of(in[3]), 0);
  EXPECT_GT(min_of(in[4]), 0);
  EXPECT_GE(min_of(in[5]), -4);
  for (int64_t i = 0; i < in[5].size(); ++i) EXPECT_LT(in[5].get(i), 4);
}

}  // namespace
}  // namespace pto
