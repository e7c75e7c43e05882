// GraphBuilder shape/dtype inference, graph queries, dump, and every error path.
#include "core/tensor_graph.h"

#include <random>

#include <gtest/gtest.h>

#include "tests/core/error_testing.h"
#include "tests/core/graph_eval.h"

namespace pto {
namespace {

template <class F>
void expect_usage_error(F&& build, const std::vector<std::string_view>& parts) {
  testing::expect_error(build, ErrorCategory::Usage, parts);
}

TEST(GraphBuilder, BinaryOpsBroadcastLikeNumpy) {
  GraphBuilder b;
  const NodeId x = b.input("x", {4, 1, 3}, DType::F32);
  const NodeId y = b.input("y", {5, 1}, DType::F32);
  const NodeId z = b.add(x, y, "z");
  const TensorGraph g = (b.mark_output(z), b.build());
  EXPECT_EQ(g.node(z).shape, (Shape{4, 5, 3}));
  EXPECT_EQ(g.node(z).dtype, DType::F32);
  EXPECT_EQ(g.node(z).inputs, (std::vector<NodeId>{x, y}));
}

// Random shapes and a partner made of the same dims, some set to 1 and some leading
// ones dropped: the result is the full shape, in either operand order.
TEST(GraphBuilder, BroadcastPropertyOnRandomShapes) {
  std::mt19937 rng(11);
  for (int trial = 0; trial < 200; ++trial) {
    Shape full(1 + rng() % 4);
    for (int64_t& d : full) d = 2 + rng() % 7;
    Shape partner(full.begin() + rng() % full.size(), full.end());
    for (int64_t& d : partner)
      if (rng() % 2) d = 1;
    for (bool swap : {false, true}) {
      GraphBuilder b;
      const NodeId x = b.input("x", full, DType::F16);
      const NodeId y = b.input("y", partner, DType::F16);
      const NodeId z = swap ? b.mul(y, x) : b.mul(x, y);
      ASSERT_EQ((b.mark_output(z), b.build()).node(z).shape, full);
    }
    // A dim that is neither equal nor 1 clashes.
    Shape clash = full;
    clash.back() += 1;
    GraphBuilder b;
    const NodeId x = b.input("x", full, DType::F32);
    const NodeId y = b.input("y", clash, DType::F32);
    expect_usage_error([&] { b.sub(x, y, "d"); }, {"sub \"d\"", shape_str(full), shape_str(clash), "dim -1"});
  }
}

TEST(GraphBuilder, ScalarUnaryCastAndMask) {
  GraphBuilder b;
  const NodeId x = b.input("x", {8, 16}, DType::F16);
  const NodeId s = b.binary_scalar(OpKind::Sub, x, 1.0, true, "one_minus");
  const NodeId e = b.exp(s);
  const NodeId c = b.cast(e, DType::F32, "c");
  const NodeId m = b.causal_mask(c, "m");
  const NodeId a = b.unary(OpKind::Abs, m);
  const NodeId k = b.unary(OpKind::CausalMask, a, "k");
  b.mark_output(k);
  const TensorGraph g = b.build();
  EXPECT_EQ(g.node(s).scalar, 1.0);
  EXPECT_TRUE(g.node(s).scalar_first);
  EXPECT_EQ(g.node(s).inputs, (std::vector<NodeId>{x}));
  EXPECT_EQ(g.node(e).dtype, DType::F16);
  EXPECT_EQ(g.node(c).dtype, DType::F32);
  EXPECT_EQ(g.node(m).shape, (Shape{8, 16}));
  EXPECT_EQ(g.node(k).kind, OpKind::CausalMask);
  EXPECT_EQ(g.node(e).name, "exp2");  // unnamed nodes are "<op><id>"
}

TEST(GraphBuilder, ReductionsNormaliseNegativeDims) {
  for (int dim = -3; dim < 3; ++dim)
    for (bool keep : {false, true}) {
      GraphBuilder b;
      const NodeId x = b.input("x", {2, 3, 4}, DType::F32);
      const NodeId r = b.reduce(OpKind::Amin, x, dim, keep);
      const TensorGraph g = (b.mark_output(r), b.build());
      const int d = (dim + 3) % 3;
      Shape expected = {2, 3, 4};
      if (keep)
        expected[d] = 1;
      else
        expected.erase(expected.begin() + d);
      EXPECT_EQ(g.node(r).dim, d);
      EXPECT_EQ(g.node(r).keepdim, keep);
      EXPECT_EQ(g.node(r).shape, expected) << dim << keep;
    }
}

TEST(GraphBuilder, MatmulTransposesBatchAndOutputDType) {
  GraphBuilder b;
  const NodeId a = b.input("a", {2, 3, 7, 5}, DType::F16);   // [B,H,K,M] with transpose_a
  const NodeId w = b.input("w", {2, 3, 9, 7}, DType::F16);   // [B,H,N,K] with transpose_b
  const NodeId y = b.matmul(a, w, true, true, std::nullopt, "y");
  const NodeId y32 = b.matmul(a, w, true, true, DType::F32, "y32");
  const NodeId q = b.input("q", {6, 32}, DType::I8);
  const NodeId r = b.input("r", {32, 4}, DType::I8);
  const NodeId qi = b.matmul(q, r);
  b.mark_output(y);
  b.mark_output(y32);
  b.mark_output(qi);
  const TensorGraph g = b.build();
  EXPECT_EQ(g.node(y).shape, (Shape{2, 3, 5, 9}));
  EXPECT_EQ(g.node(y).dtype, DType::F16);
  EXPECT_TRUE(g.node(y).transpose_a && g.node(y).transpose_b);
  EXPECT_EQ(g.node(y32).dtype, DType::F32);
  EXPECT_EQ(g.node(qi).shape, (Shape{6, 4}));
  EXPECT_EQ(g.node(qi).dtype, DType::I32);
}

TEST(GraphBuilder, Views) {
  GraphBuilder b;
  const NodeId x = b.input("x", {4, 6}, DType::BF16);
  const NodeId bc = b.broadcast(b.input("v", {6}, DType::BF16), {3, 4, 6}, "bc");
  const NodeId sl = b.slice(x, {1, 2}, {3, 4}, "sl");
  const NodeId rs = b.reshape(x, {2, 12}, "rs");
  b.mark_output(b.add(bc, x));
  const TensorGraph g = b.build();
  EXPECT_EQ(g.node(bc).shape, (Shape{3, 4, 6}));
  EXPECT_EQ(g.node(sl).shape, (Shape{3, 4}));
  EXPECT_EQ(g.node(sl).slice_start, (Shape{1, 2}));
  EXPECT_EQ(g.node(rs).shape, (Shape{2, 12}));
  EXPECT_EQ(g.node(rs).dtype, DType::BF16);
  EXPECT_TRUE(is_view(OpKind::Slice));
}

TEST(TensorGraph, QueriesAndDump) {
  GraphBuilder b;
  const NodeId x = b.input("x", {128, 256}, DType::F32);
  const NodeId m = b.amax(x, -1, true, "m");
  const NodeId d = b.sub(x, m, "d");
  const NodeId e = b.exp(d, "e");
  const NodeId h = b.binary_scalar(OpKind::Mul, e, 0.5, false, "h");
  const NodeId t = b.reshape(h, {256, 128}, "t");
  const NodeId w = b.input("w", {256, 64}, DType::F32);
  const NodeId y = b.matmul(t, w, true, false, std::nullopt, "y");
  const NodeId s = b.slice(y, {0, 8}, {128, 16}, "s");
  b.mark_output(y);
  b.mark_output(s);
  const TensorGraph g = b.build();

  EXPECT_EQ(g.inputs(), (std::vector<NodeId>{x, w}));
  EXPECT_EQ(g.outputs(), (std::vector<NodeId>{y, s}));
  EXPECT_EQ(g.compute_nodes(), (std::vector<NodeId>{m, d, e, h, y}));
  EXPECT_EQ(g.consumers(x), (std::vector<NodeId>{m, d}));
  EXPECT_EQ(g.consumers(s), std::vector<NodeId>{});
  EXPECT_EQ(g.dump(),
            "%0 input : fp32[128,256]  \"x\"\n"
            "%1 amax(%0, dim=1, keepdim) : fp32[128,1]  \"m\"\n"
            "%2 sub(%0, %1) : fp32[128,256]  \"d\"\n"
            "%3 exp(%2) : fp32[128,256]  \"e\"\n"
            "%4 mul(%3, 0.5) : fp32[128,256]  \"h\"\n"
            "%5 reshape(%4) : fp32[256,128]  \"t\"\n"
            "%6 input : fp32[256,64]  \"w\"\n"
            "%7 matmul(%5, %6, transpose_a) : fp32[128,64]  \"y\"  (output)\n"
            "%8 slice(%7, start=[0,8]) : fp32[128,16]  \"s\"  (output)\n");
  expect_usage_error([&] { g.node(9); }, {"%9", "9 nodes"});
}

TEST(TensorGraph, DumpShowsScalarFirstAndSum) {
  GraphBuilder b;
  const NodeId x = b.input("x", {4, 8}, DType::F16);
  const NodeId r = b.binary_scalar(OpKind::Div, x, 2.0, true, "r");
  b.mark_output(b.sum(r, 0, false, "s"));
  const std::string dump = b.build().dump();
  EXPECT_NE(dump.find("%1 div(2, %0) : fp16[4,8]  \"r\""), std::string::npos) << dump;
  EXPECT_NE(dump.find("%2 sum(%1, dim=0) : fp16[8]  \"s\"  (output)"), std::string::npos) << dump;
}

TEST(GraphBuilder, DTypeErrorsNameTheNodeAndOperands) {
  GraphBuilder b;
  const NodeId h = b.input("h", {4, 8}, DType::F16);
  const NodeId f = b.input("f", {4, 8}, DType::F32);
  const NodeId i = b.input("i", {4, 8}, DType::I32);
  const NodeId q = b.input("q", {8, 8}, DType::I32);
  const NodeId bl = b.input("bl", {4, 8}, DType::Bool);
  expect_usage_error([&] { b.add(h, f, "mix"); }, {"add \"mix\"", "%0 \"h\" fp16[4,8]", "%1 \"f\" fp32[4,8]"});
  expect_usage_error([&] { b.exp(i, "e"); }, {"exp \"e\"", "int32", "\"i\""});
  expect_usage_error([&] { b.unary(OpKind::Rsqrt, i); }, {"rsqrt \"rsqrt5\"", "int32"});
  expect_usage_error([&] { b.div(i, i, "q"); }, {"div \"q\"", "int32"});
  expect_usage_error([&] { b.causal_mask(i); }, {"causal_mask", "int32"});
  expect_usage_error([&] { b.sum(bl, 0, false, "s"); }, {"sum \"s\"", "bool"});
  expect_usage_error([&] { b.binary_scalar(OpKind::Mul, i, 0.5, false, "half"); }, {"mul \"half\"", "0.5", "int32"});
  expect_usage_error([&] { b.matmul(i, q, false, false, std::nullopt, "mm"); }, {"matmul \"mm\"", "int32"});
  expect_usage_error([&] { b.matmul(h, f, false, true, std::nullopt, "mm"); }, {"matmul \"mm\"", "fp16", "fp32"});
  const NodeId q8 = b.input("q8", {4, 8}, DType::I8);
  expect_usage_error([&] { b.matmul(q8, q8, false, true, DType::F32, "mm"); }, {"output dtype fp32", "int8"});
  expect_usage_error([&] { b.matmul(h, h, false, true, DType::I32, "mm"); }, {"output dtype int32", "fp16"});
  // Integer arithmetic that is exact is allowed.
  EXPECT_NO_THROW(b.binary_scalar(OpKind::Mul, i, 3, false));
  EXPECT_NO_THROW(b.unary(OpKind::Neg, i));
}

TEST(GraphBuilder, ShapeErrorsNameTheNodeAndValues) {
  GraphBuilder b;
  const NodeId x = b.input("x", {4, 8}, DType::F32);
  const NodeId w = b.input("w", {6, 3}, DType::F32);
  const NodeId bx = b.input("bx", {2, 4, 8}, DType::F32);
  const NodeId by = b.input("by", {3, 8, 5}, DType::F32);
  const NodeId v = b.input("v", {8}, DType::F32);
  expect_usage_error([&] { b.matmul(x, w, false, false, std::nullopt, "mm"); }, {"matmul \"mm\"", "K=8", "K=6"});
  expect_usage_error([&] { b.matmul(bx, by, false, false, std::nullopt, "bm"); }, {"batch dims", "[2,4,8]", "[3,8,5]"});
  expect_usage_error([&] { b.matmul(bx, x); }, {"batch dims"});
  expect_usage_error([&] { b.matmul(v, x); }, {"rank >= 2", "[8]"});
  expect_usage_error([&] { b.sum(x, 2, true, "s"); }, {"sum \"s\"", "dim 2", "[4,8]"});
  expect_usage_error([&] { b.amax(x, -3, true); }, {"amax", "dim -3"});
  expect_usage_error([&] { b.slice(x, {0, 6}, {4, 3}, "sl"); }, {"slice \"sl\"", "dim 1", "[6, 9)", "[4,8]"});
  expect_usage_error([&] { b.slice(x, {-1, 0}, {2, 2}); }, {"dim 0", "[-1, 1)"});
  expect_usage_error([&] { b.slice(x, {0}, {2}); }, {"one entry per dim"});
  expect_usage_error([&] { b.reshape(x, {5, 6}, "r"); }, {"reshape \"r\"", "32 elements", "[5,6]", "30"});
  expect_usage_error([&] { b.reshape(x, {-4, -8}); }, {"non-positive"});
  expect_usage_error([&] { b.broadcast(x, {4, 3}, "bc"); }, {"broadcast \"bc\"", "[4,8]", "to [4,3]"});
  expect_usage_error([&] { b.broadcast(bx, {4, 8}); }, {"[2,4,8]", "to [4,8]"});
  expect_usage_error([&] { b.causal_mask(v, "cm"); }, {"causal_mask \"cm\"", "rank 1"});
  expect_usage_error([&] { b.input("z", {4, 0}, DType::F32); }, {"input \"z\"", "[4,0]"});
  expect_usage_error([&] { b.add(x, 42, "a"); }, {"add \"a\"", "%42", "does not exist"});
}

TEST(GraphBuilder, MisusedBuilderCallsAreErrors) {
  GraphBuilder b;
  const NodeId x = b.input("x", {4, 8}, DType::F32);
  expect_usage_error([&] { b.binary(OpKind::Exp, x, x, "bad"); }, {"exp \"bad\"", "not a binary op"});
  expect_usage_error([&] { b.binary_scalar(OpKind::Sum, x, 1.0); }, {"not a binary op"});
  expect_usage_error([&] { b.unary(OpKind::Add, x); }, {"not a unary op"});
  expect_usage_error([&] { b.unary(OpKind::Cast, x); }, {"use cast()"});
  expect_usage_error([&] { b.reduce(OpKind::Mul, x, 0, false); }, {"not a reduction"});
  expect_usage_error([&] { b.build(); }, {"no outputs"});
  expect_usage_error([&] { b.mark_output(x); }, {"\"x\"", "graph input"});
  expect_usage_error([&] { b.mark_output(7); }, {"%7"});
  const NodeId e = b.exp(x);
  b.mark_output(e);
  expect_usage_error([&] { b.mark_output(e); }, {"already an output"});
  EXPECT_EQ(b.build().nodes().size(), 2u);
  // build() hands the graph over and leaves an empty builder.
  expect_usage_error([&] { b.build(); }, {"no outputs"});
}

// ---- The fp64 interpreter in tests/core/graph_eval.h, on values worked out by hand ----

HostTensor tensor(const Shape& shape, DType t, const std::vector<double>& values) {
  HostTensor out(shape, t);
  for (size_t i = 0; i < values.size(); ++i) out.set(static_cast<int64_t>(i), values[i]);
  return out;
}

std::vector<double> values_of(const HostTensor& t) {
  std::vector<double> v;
  for (int64_t i = 0; i < t.size(); ++i) v.push_back(t.get(i));
  return v;
}

TEST(GraphEval, ViewsBroadcastSliceReshape) {
  GraphBuilder b;
  const NodeId x = b.input("x", {2, 3}, DType::F32);
  const NodeId row = b.input("row", {3}, DType::F32);
  const NodeId bc = b.broadcast(row, {2, 3});
  const NodeId sl = b.slice(x, {0, 1}, {2, 2});
  const NodeId rs = b.reshape(x, {3, 2});
  const NodeId sum = b.add(x, bc);
  for (NodeId out : {bc, sl, rs, sum}) b.mark_output(out);
  const auto out = testing::eval_graph(
      b.build(), {tensor({2, 3}, DType::F32, {1, 2, 3, 4, 5, 6}), tensor({3}, DType::F32, {10, 20, 30})});
  EXPECT_EQ(values_of(out[0]), (std::vector<double>{10, 20, 30, 10, 20, 30}));
  EXPECT_EQ(values_of(out[1]), (std::vector<double>{2, 3, 5, 6}));
  EXPECT_EQ(out[2].shape(), (Shape{3, 2}));
  EXPECT_EQ(values_of(out[2]), (std::vector<double>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(values_of(out[3]), (std::vector<double>{11, 22, 33, 14, 25, 36}));
}

TEST(GraphEval, ReductionsMaskMatmulAndRounding) {
  GraphBuilder b;
  const NodeId x = b.input("x", {2, 3}, DType::F32);
  const NodeId w = b.input("w", {2, 3}, DType::F32);
  const NodeId colmax = b.amax(x, 0, false);
  const NodeId rowmin = b.reduce(OpKind::Amin, x, -1, true);
  const NodeId rowsum = b.sum(x, 1, false);
  const NodeId mask = b.causal_mask(x);
  const NodeId xwt = b.matmul(x, w, false, true);             // [2,2]
  const NodeId xtw = b.matmul(x, w, true, false);             // [3,3]
  const NodeId third = b.cast(b.binary_scalar(OpKind::Div, x, 1.0, true), DType::F16);
  const NodeId as_int = b.cast(b.binary_scalar(OpKind::Mul, x, 0.5), DType::I32);
  for (NodeId out : {colmax, rowmin, rowsum, mask, xwt, xtw, third, as_int}) b.mark_output(out);
  const auto out = testing::eval_graph(
      b.build(), {tensor({2, 3}, DType::F32, {1, 5, 3, 4, 2, 6}), tensor({2, 3}, DType::F32, {1, 0, 1, 0, 1, 0})});
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_EQ(values_of(out[0]), (std::vector<double>{4, 5, 6}));
  EXPECT_EQ(out[1].shape(), (Shape{2, 1}));
  EXPECT_EQ(values_of(out[1]), (std::vector<double>{1, 2}));
  EXPECT_EQ(values_of(out[2]), (std::vector<double>{9, 12}));
  // 2 rows x 3 cols: masked where c > r + 1.
  EXPECT_EQ(values_of(out[3]), (std::vector<double>{1, 5, -inf, 4, 2, 6}));
  EXPECT_EQ(values_of(out[4]), (std::vector<double>{4, 5, 10, 2}));
  EXPECT_EQ(values_of(out[5]), (std::vector<double>{1, 4, 1, 5, 2, 5, 3, 6, 3}));
  EXPECT_EQ(out[6].get(0), fp16_to_float(double_to_fp16(1.0)));
  EXPECT_EQ(out[6].get(2), fp16_to_float(double_to_fp16(1.0 / 3)));
  EXPECT_EQ(values_of(out[7]), (std::vector<double>{0, 2, 2, 2, 1, 3}));  // halves round to even
}

}  // namespace
}  // namespace pto
