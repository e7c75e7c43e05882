// Vector programs on the runtime against fp64 references: softmax with broadcasts
// and reductions over ragged tiles, every elementwise op, casts, int32, column
// reductions, views, the causal mask.

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <functional>
#include <cmath>
#include <limits>
#include <optional>
#include <random>
#include <sstream>

#include "core/cpu_runtime.h"
#include "core/error.h"
#include "core/runtime/decoded_block.h"
#include "core/runtime/convert.h"
#include "core/runtime/microkernel.h"
#include "core/runtime/panels.h"
#include "core/runtime/scheduler.h"
#include "core/runtime/strided.h"
#include "core/runtime/vec_math.h"
#include "tests/core/error_testing.h"
#include "tests/core/graph_eval.h"
#include "tests/core/runtime/runtime_programs.h"

namespace pto {
namespace {

using namespace testing;

// Row softmax of x + bias (bias broadcast over rows), tiled by `tile_rows` with a
// tail, plus the row sums stored from a [rows, 1] UB column into a rank-1 GM tensor.
Program softmax_program(int64_t rows, int64_t cols, int64_t tile_rows, DType dtype) {
  ProgramBuilder pb;
  const int x = pb.tensor("x", {rows, cols}, dtype, TensorRole::Input, 0);
  const int bias = pb.tensor("bias", {cols}, dtype, TensorRole::Input, 1);
  const int out = pb.tensor("y", {rows, cols}, dtype, TensorRole::Output, 0);
  const int sums = pb.tensor("sums", {rows}, DType::F32, TensorRole::Output, 1);
  const int k = pb.kernel("softmax");
  for (int64_t r0 = 0; r0 < rows; r0 += tile_rows) {
    const int64_t rt = std::min(tile_rows, rows - r0);
    pb.block("softmax");
    const int ux = pb.buffer("x.ub", MemLevel::UB, dtype, {tile_rows, cols});
    const int ubias = pb.buffer("bias.ub", MemLevel::UB, dtype, {1, cols});
    const int ut = pb.buffer("t.ub", MemLevel::UB, DType::F32, {tile_rows, cols});
    const int um = pb.buffer("max.ub", MemLevel::UB, DType::F32, {tile_rows, 1});
    const int us = pb.buffer("sum.ub", MemLevel::UB, DType::F32, {tile_rows, 1});
    const Shape full{rt, cols}, column{rt, 1};
    pb.emit(Opcode::TLOAD, ub(ux, {0, 0}, full), {gm(0, {0, 0}, full)});
    pb.emit(Opcode::TLOAD, ub(ubias, {0, 0}, {1, cols}), {gm(1, {0}, {cols})});
    pb.flags(Pipe::MTE2, Pipe::V);
    pb.vec(OpKind::Add, ub(ut, {0, 0}, full), {ub(ux, {0, 0}, full), ub(ubias, {0, 0}, {1, cols})});
    Instr& mx = pb.emit(Opcode::TREDUCE, ub(um, {0, 0}, column), {ub(ut, {0, 0}, full)});
    mx.vop = OpKind::Amax;
    mx.reduce_dim = 1;
    pb.vec(OpKind::Sub, ub(ut, {0, 0}, full), {ub(ut, {0, 0}, full), ub(um, {0, 0}, column)});
    pb.vec(OpKind::Exp, ub(ut, {0, 0}, full), {ub(ut, {0, 0}, full)});
    Instr& sm = pb.emit(Opcode::TREDUCE, ub(us, {0, 0}, column), {ub(ut, {0, 0}, full)});
    sm.vop = OpKind::Sum;
    sm.reduce_dim = 1;
    pb.vec(OpKind::Div, ub(ut, {0, 0}, full), {ub(ut, {0, 0}, full), ub(us, {0, 0}, column)});
    pb.emit(Opcode::TSTORE, gm(2, {0, 0}, full), {ub(ut, {0, 0}, full)});
    pb.emit(Opcode::TSTORE, gm(3, {0}, {rt}), {ub(us, {0, 0}, column)});
    pb.task(k, {{x, {r0, 0}}, {bias, {0}}, {out, {r0, 0}}, {sums, {r0}}});
  }
  return pb.p;
}

TEST(RuntimeVector, SoftmaxWithBroadcastAndReductionsOverRaggedTiles) {
  std::mt19937 rng(31);
  for (int trial = 0; trial < 12; ++trial) {
    const int64_t rows = 1 + rng() % 70, cols = 1 + rng() % 300, tile = 1 + rng() % 24;
    const DType dtype = std::vector<DType>{DType::F32, DType::F16, DType::BF16}[trial % 3];
    SCOPED_TRACE(std::to_string(rows) + "x" + std::to_string(cols) + " tile " + std::to_string(tile) + " " + dtype_name(dtype));
    const Program p = softmax_program(rows, cols, tile, dtype);
    const HostTensor x = random_tensor({rows, cols}, dtype, trial, -4, 4), bias = random_tensor({cols}, dtype, 99 + trial);
    const std::vector<HostTensor> got = run_program(p, {x, bias}, 1 + trial % 2);
    HostTensor want(p.tensors[2].shape, dtype), want_sums({rows}, DType::F32);
    for (int64_t r = 0; r < rows; ++r) {
      double mx = -INFINITY, sum = 0;
      for (int64_t c = 0; c < cols; ++c) mx = std::max(mx, x.get(r * cols + c) + bias.get(c));
      for (int64_t c = 0; c < cols; ++c) sum += std::exp(x.get(r * cols + c) + bias.get(c) - mx);
      for (int64_t c = 0; c < cols; ++c) want.set(r * cols + c, std::exp(x.get(r * cols + c) + bias.get(c) - mx) / sum);
      want_sums.set(r, sum);
    }
    EXPECT_TRUE(all_close(got[0], want, cols)) << max_abs_diff(got[0], want);
    EXPECT_TRUE(all_close(got[1], want_sums, cols)) << max_abs_diff(got[1], want_sums);
  }
}

double reference_op(OpKind op, double a, double b) {
  return is_binary(op) ? testing::graph_eval_detail::apply_binary(op, a, b) : testing::graph_eval_detail::apply_unary(op, a);
}

TEST(RuntimeVector, EveryElementwiseOpInTensorAndScalarForms) {
  const Shape shape{5, 37};
  const std::vector<OpKind> binary{OpKind::Add, OpKind::Sub, OpKind::Mul, OpKind::Div, OpKind::Max, OpKind::Min};
  const std::vector<OpKind> unary{OpKind::Exp, OpKind::Log, OpKind::Sqrt, OpKind::Rsqrt, OpKind::Erf,
                                  OpKind::Erfc, OpKind::Tanh, OpKind::Neg, OpKind::Abs};
  const HostTensor x = random_tensor(shape, DType::F32, 1, 0.25, 3.0);
  for (OpKind op : binary) {
    for (int form = 0; form < 4; ++form) {  // tensor, broadcast row, x op s, s op x
      SCOPED_TRACE(std::string(op_kind_name(op)) + " form " + std::to_string(form));
      const Shape y_shape = form == 1 ? Shape{1, 37} : shape;
      const std::optional<double> scalar = form >= 2 ? std::optional<double>(1.75) : std::nullopt;
      const Program p = unary_or_binary_program(op, shape, DType::F32, scalar, form == 3, y_shape);
      const HostTensor y = random_tensor(y_shape, DType::F32, 2, 0.25, 3.0);
      const std::vector<HostTensor> got = run_program(p, form < 2 ? std::vector<HostTensor>{x, y} : std::vector<HostTensor>{x});
      HostTensor want(shape, DType::F32);
      for (int64_t i = 0; i < want.size(); ++i) {
        const double a = x.get(i);
        const double b = form == 0 ? y.get(i) : (form == 1 ? y.get(i % 37) : 1.75);
        want.set(i, form == 3 ? reference_op(op, b, a) : reference_op(op, a, b));
      }
      EXPECT_TRUE(all_close(got[0], want)) << max_abs_diff(got[0], want);
    }
  }
  for (OpKind op : unary) {
    SCOPED_TRACE(op_kind_name(op));
    const Program p = unary_or_binary_program(op, shape, DType::F32, std::nullopt, false, shape);
    const HostTensor signed_x = random_tensor(shape, DType::F32, 3, -2.5, 2.5);
    const HostTensor& in = (op == OpKind::Log || op == OpKind::Sqrt || op == OpKind::Rsqrt) ? x : signed_x;
    const std::vector<HostTensor> got = run_program(p, {in});
    HostTensor want(shape, DType::F32);
    for (int64_t i = 0; i < want.size(); ++i) want.set(i, reference_op(op, in.get(i), 0));
    EXPECT_TRUE(all_close(got[0], want)) << max_abs_diff(got[0], want);
  }
}

// x -> Cast into a `to` UB buffer -> Cast to fp32 -> stored: the values must be exactly
// the `to`-rounded (or saturated) ones, from fp32 and from int32 lanes alike.
TEST(RuntimeVector, CastRoundsToTheDestinationDtype) {
  for (DType from : {DType::F32, DType::I32})
    for (DType to : {DType::F16, DType::BF16, DType::I32, DType::I8}) {
      ProgramBuilder pb;
      const Shape shape{3, 50};
      const int x = pb.tensor("x", shape, from, TensorRole::Input, 0);
      const int out = pb.tensor("out", shape, DType::F32, TensorRole::Output, 0);
      const int k = pb.kernel("cast");
      pb.block("cast");
      const int ux = pb.buffer("x.ub", MemLevel::UB, from, shape);
      const int uc = pb.buffer("c.ub", MemLevel::UB, to, shape);
      const int uo = pb.buffer("o.ub", MemLevel::UB, DType::F32, shape);
      pb.emit(Opcode::TLOAD, ub(ux, {0, 0}, shape), {gm(0, {0, 0}, shape)});
      pb.vec(OpKind::Cast, ub(uc, {0, 0}, shape), {ub(ux, {0, 0}, shape)});
      pb.vec(OpKind::Cast, ub(uo, {0, 0}, shape), {ub(uc, {0, 0}, shape)});
      pb.emit(Opcode::TSTORE, gm(1, {0, 0}, shape), {ub(uo, {0, 0}, shape)});
      pb.task(k, {{x, {0, 0}}, {out, {0, 0}}});
      const HostTensor in = from == DType::F32 ? random_tensor(shape, from, 4, -300, 300)
                                              : random_tensor(shape, from, 4, -70000, 70000);
      const HostTensor got = run_program(pb.p, {in})[0];
      HostTensor rounded(shape, to);
      for (int64_t i = 0; i < in.size(); ++i) rounded.set(i, in.get(i));
      for (int64_t i = 0; i < in.size(); ++i)
        ASSERT_EQ(got.get(i), rounded.get(i)) << dtype_name(from) << " -> " << dtype_name(to) << " of " << in.get(i);
    }
}

TEST(RuntimeVector, Int32ArithmeticAndReductionsAreExact) {
  ProgramBuilder pb;
  const Shape shape{4, 9};
  const int x = pb.tensor("x", shape, DType::I32, TensorRole::Input, 0);
  const int y = pb.tensor("y", shape, DType::I32, TensorRole::Input, 1);
  const int out = pb.tensor("out", {4, 1}, DType::I32, TensorRole::Output, 0);
  const int k = pb.kernel("int");
  pb.block("int");
  const int ux = pb.buffer("x.ub", MemLevel::UB, DType::I32, shape);
  const int uy = pb.buffer("y.ub", MemLevel::UB, DType::I32, shape);
  const int us = pb.buffer("s.ub", MemLevel::UB, DType::I32, {4, 1});
  pb.emit(Opcode::TLOAD, ub(ux, {0, 0}, shape), {gm(0, {0, 0}, shape)});
  pb.emit(Opcode::TLOAD, ub(uy, {0, 0}, shape), {gm(1, {0, 0}, shape)});
  pb.vec(OpKind::Add, ub(ux, {0, 0}, shape), {ub(ux, {0, 0}, shape), ub(uy, {0, 0}, shape)});
  Instr& add3 = pb.vec(OpKind::Add, ub(ux, {0, 0}, shape), {ub(ux, {0, 0}, shape)});
  add3.scalar = 3;
  Instr& sum = pb.emit(Opcode::TREDUCE, ub(us, {0, 0}, {4, 1}), {ub(ux, {0, 0}, shape)});
  sum.vop = OpKind::Sum;
  sum.reduce_dim = 1;
  pb.emit(Opcode::TSTORE, gm(2, {0, 0}, {4, 1}), {ub(us, {0, 0}, {4, 1})});
  pb.task(k, {{x, {0, 0}}, {y, {0, 0}}, {out, {0, 0}}});
  const HostTensor a = random_tensor(shape, DType::I32, 5, 16777000, 16777300);  // beyond fp32's exact integers
  const HostTensor b = random_tensor(shape, DType::I32, 6, -1000, 1000);
  const HostTensor got = run_program(pb.p, {a, b})[0];
  for (int64_t r = 0; r < 4; ++r) {
    int64_t want = 0;
    for (int64_t c = 0; c < 9; ++c) want += static_cast<int64_t>(a.get(r * 9 + c)) + static_cast<int64_t>(b.get(r * 9 + c)) + 3;
    EXPECT_EQ(static_cast<int64_t>(got.get(r)), want);
  }
}

TEST(RuntimeVector, ColumnReductionsOverTheLeadingDim) {
  for (OpKind op : {OpKind::Sum, OpKind::Amax, OpKind::Amin}) {
    ProgramBuilder pb;
    const int64_t rows = 29, cols = 70, tile_cols = 32;
    const int x = pb.tensor("x", {rows, cols}, DType::F32, TensorRole::Input, 0);
    const int out = pb.tensor("out", {1, cols}, DType::F32, TensorRole::Output, 0);
    const int k = pb.kernel("colreduce");
    for (int64_t c0 = 0; c0 < cols; c0 += tile_cols) {
      const int64_t ct = std::min(tile_cols, cols - c0);
      pb.block("colreduce");
      const int ux = pb.buffer("x.ub", MemLevel::UB, DType::F32, {rows, tile_cols});
      const int ur = pb.buffer("r.ub", MemLevel::UB, DType::F32, {1, tile_cols});
      pb.emit(Opcode::TLOAD, ub(ux, {0, 0}, {rows, ct}), {gm(0, {0, 0}, {rows, ct})});
      Instr& r = pb.emit(Opcode::TREDUCE, ub(ur, {0, 0}, {1, ct}), {ub(ux, {0, 0}, {rows, ct})});
      r.vop = op;
      r.reduce_dim = 0;
      pb.emit(Opcode::TSTORE, gm(1, {0, 0}, {1, ct}), {ub(ur, {0, 0}, {1, ct})});
      pb.task(k, {{x, {0, c0}}, {out, {0, c0}}});
    }
    const HostTensor in = random_tensor({rows, cols}, DType::F32, 8);
    const HostTensor got = run_program(pb.p, {in})[0];
    HostTensor want({1, cols}, DType::F32);
    for (int64_t c = 0; c < cols; ++c) {
      double acc = op == OpKind::Sum ? 0 : in.get(c);
      for (int64_t r = 0; r < rows; ++r)
        acc = op == OpKind::Sum ? acc + in.get(r * cols + c) : (op == OpKind::Amax ? std::max(acc, in.get(r * cols + c)) : std::min(acc, in.get(r * cols + c)));
      want.set(c, acc);
    }
    EXPECT_TRUE(all_close(got, want, rows)) << op_kind_name(op);
  }
}

// Views: a slice of x, its transpose by strides, and a stride-0 broadcast of a bias,
// read by an elementwise kernel whose result goes to an intermediate that a second
// kernel (after the first) copies out.
TEST(RuntimeVector, ViewsAddressStorageThroughOffsetsAndStrides) {
  ProgramBuilder pb;
  const int x = pb.tensor("x", {8, 12}, DType::F32, TensorRole::Input, 0);
  const int bias = pb.tensor("bias", {6}, DType::F16, TensorRole::Input, 1);
  const int slice = pb.view("slice", x, {4, 6}, 2 * 12 + 3, {12, 1});
  const int sliceT = pb.view("sliceT", x, {6, 4}, 2 * 12 + 3, {1, 12});
  const int bb = pb.view("bias_b", bias, {4, 6}, 0, {0, 1});
  const int mid = pb.tensor("mid", {4, 6}, DType::F32);
  const int out = pb.tensor("out", {4, 6}, DType::F32, TensorRole::Output, 0);
  const int outT = pb.tensor("outT", {6, 4}, DType::F32, TensorRole::Output, 1);
  const int k1 = pb.kernel("add");
  pb.block("add");
  const int ua = pb.buffer("a.ub", MemLevel::UB, DType::F32, {4, 6});
  const int ub2 = pb.buffer("b.ub", MemLevel::UB, DType::F32, {4, 6});
  const int ut = pb.buffer("t.ub", MemLevel::UB, DType::F32, {6, 4});
  pb.emit(Opcode::TLOAD, ub(ua, {0, 0}, {4, 6}), {gm(0, {0, 0}, {4, 6})});
  pb.emit(Opcode::TLOAD, ub(ub2, {0, 0}, {4, 6}), {gm(1, {0, 0}, {4, 6})});
  pb.vec(OpKind::Add, ub(ua, {0, 0}, {4, 6}), {ub(ua, {0, 0}, {4, 6}), ub(ub2, {0, 0}, {4, 6})});
  pb.emit(Opcode::TSTORE, gm(2, {0, 0}, {4, 6}), {ub(ua, {0, 0}, {4, 6})});
  pb.emit(Opcode::TLOAD, ub(ut, {0, 0}, {6, 4}), {gm(3, {0, 0}, {6, 4})});
  pb.emit(Opcode::TSTORE, gm(4, {0, 0}, {6, 4}), {ub(ut, {0, 0}, {6, 4})});
  pb.task(k1, {{slice, {0, 0}}, {bb, {0, 0}}, {mid, {0, 0}}, {sliceT, {0, 0}}, {outT, {0, 0}}});
  const int k2 = pb.kernel("copy", {k1});
  pb.block("copy");
  const int uc = pb.buffer("c.ub", MemLevel::UB, DType::F32, {2, 6});
  for (int64_t r0 : {0, 2}) {
    if (r0) pb.block("copy");
    const int buf = r0 ? pb.buffer("c.ub", MemLevel::UB, DType::F32, {2, 6}) : uc;
    pb.emit(Opcode::TLOAD, ub(buf, {0, 0}, {2, 6}), {gm(0, {0, 0}, {2, 6})});
    pb.emit(Opcode::TSTORE, gm(1, {0, 0}, {2, 6}), {ub(buf, {0, 0}, {2, 6})});
    pb.task(k2, {{mid, {r0, 0}}, {out, {r0, 0}}});
  }
  const HostTensor xin = random_tensor({8, 12}, DType::F32, 12), bin = random_tensor({6}, DType::F16, 13);
  const std::vector<HostTensor> got = run_program(pb.p, {xin, bin}, 2);
  for (int64_t r = 0; r < 4; ++r)
    for (int64_t c = 0; c < 6; ++c) {
      const double v = xin.get((2 + r) * 12 + 3 + c);
      EXPECT_FLOAT_EQ(static_cast<float>(got[0].get(r * 6 + c)), static_cast<float>(v + bin.get(c)));
      EXPECT_EQ(got[1].get(c * 4 + r), v);
    }
}

TEST(RuntimeVector, CausalMaskUsesGlobalPositions) {
  std::mt19937 rng(41);
  for (int trial = 0; trial < 6; ++trial) {
    const int64_t rows = 1 + rng() % 60, cols = 1 + rng() % 90, tr = 1 + rng() % 20, tc = 1 + rng() % 40;
    ProgramBuilder pb;
    const int x = pb.tensor("x", {2, rows, cols}, DType::F32, TensorRole::Input, 0);
    const int out = pb.tensor("out", {2, rows, cols}, DType::F32, TensorRole::Output, 0);
    const int k = pb.kernel("mask");
    for (int64_t b = 0; b < 2; ++b)
      for (int64_t r0 = 0; r0 < rows; r0 += tr)
        for (int64_t c0 = 0; c0 < cols; c0 += tc) {
          const Shape e{1, std::min(tr, rows - r0), std::min(tc, cols - c0)};
          pb.block("mask");
          const int ux = pb.buffer("x.ub", MemLevel::UB, DType::F32, {1, tr, tc});
          pb.emit(Opcode::TLOAD, ub(ux, {0, 0, 0}, e), {gm(0, {0, 0, 0}, e)});
          pb.vec(OpKind::CausalMask, ub(ux, {0, 0, 0}, e), {ub(ux, {0, 0, 0}, e), gm(1, {0, 0, 0}, e)});
          pb.emit(Opcode::TSTORE, gm(1, {0, 0, 0}, e), {ub(ux, {0, 0, 0}, e)});
          pb.task(k, {{x, {b, r0, c0}}, {out, {b, r0, c0}}});
        }
    const HostTensor in = random_tensor({2, rows, cols}, DType::F32, trial);
    const HostTensor got = run_program(pb.p, {in})[0];
    for (int64_t i = 0; i < in.size(); ++i) {
      const int64_t r = (i / cols) % rows, c = i % cols;
      const double want = c > r + (cols - rows) ? -INFINITY : in.get(i);
      ASSERT_EQ(got.get(i), want) << rows << "x" << cols << " at " << r << "," << c;
    }
  }
}

}  // namespace
}  // namespace pto
