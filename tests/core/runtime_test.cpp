// The CPU runtime on programs built by hand (independent of the compiler): its pieces
// (fp32 math, conversions, packing, micro-kernels) against plain references, then
// whole programs — tiled matmuls with tails, transposes, batches, split-K and both
// TMOV forms; vector chains with broadcasts and reductions; views; the causal mask;
// the execute graph — against fp64 references, and the error paths.
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
#include "core/runtime/block_plan.h"
#include "core/runtime/convert.h"
#include "core/runtime/microkernel.h"
#include "core/runtime/panels.h"
#include "core/runtime/scheduler.h"
#include "core/runtime/strided.h"
#include "core/runtime/vec_math.h"
#include "tests/core/error_testing.h"
#include "tests/core/graph_eval.h"

namespace pto {
namespace {

using testing::expect_error;

// ---- building programs by hand ------------------------------------------------------

Operand gm(int slot, Shape offset, Shape extent) { return {MemLevel::GM, slot, std::move(offset), std::move(extent)}; }
Operand loc(MemLevel level, int id, Shape offset, Shape extent) {
  return {level, id, std::move(offset), std::move(extent)};
}
Operand ub(int id, Shape offset, Shape extent) { return loc(MemLevel::UB, id, std::move(offset), std::move(extent)); }
Shape zeros(size_t rank) { return Shape(rank, 0); }

class ProgramBuilder {
 public:
  int tensor(const std::string& name, const Shape& shape, DType dtype, TensorRole role = TensorRole::Intermediate,
             int io_index = -1) {
    GmTensor t;
    t.id = static_cast<int>(p.tensors.size());
    t.name = name;
    t.role = role;
    t.io_index = io_index;
    t.dtype = dtype;
    t.shape = shape;
    t.strides = contiguous_strides(shape);
    p.tensors.push_back(t);
    return t.id;
  }
  int view(const std::string& name, int of, const Shape& shape, int64_t elem_offset, const Shape& strides,
           TensorRole role = TensorRole::Intermediate, int io_index = -1) {
    const int id = tensor(name, shape, p.tensors[of].dtype, role, io_index);
    p.tensors[id].alias_of = of;
    p.tensors[id].elem_offset = elem_offset;
    p.tensors[id].strides = strides;
    return id;
  }
  int kernel(const std::string& name, std::vector<int> after = {}, bool cube = false) {
    Kernel k;
    k.id = static_cast<int>(p.kernels.size());
    k.name = name;
    k.after = std::move(after);
    k.uses_cube = cube;
    p.kernels.push_back(k);
    return k.id;
  }
  // Starts a block: buffer() and emit() add to the latest one.
  int block(const std::string& name, CoreType core = CoreType::AIV) {
    BlockProgram b;
    b.id = static_cast<int>(p.blocks.size());
    b.name = name;
    b.core = core;
    p.blocks.push_back(b);
    return b.id;
  }
  int buffer(const std::string& name, MemLevel level, DType dtype, const Shape& shape, Layout layout = Layout::RowMajor) {
    BlockProgram& b = p.blocks.back();
    LocalBuffer buf;
    buf.id = static_cast<int>(b.buffers.size()) + 100;  // ids need not be indices
    buf.name = name;
    buf.level = level;
    buf.dtype = dtype;
    buf.shape = shape;
    buf.layout = layout;
    b.buffers.push_back(buf);
    return buf.id;
  }
  Instr& emit(Opcode op, Operand dst, std::vector<Operand> src = {}) {
    Instr in;
    in.op = op;
    in.dst = std::move(dst);
    in.src = std::move(src);
    p.blocks.back().instrs.push_back(in);
    return p.blocks.back().instrs.back();
  }
  Instr& vec(OpKind vop, Operand dst, std::vector<Operand> src) {
    Instr& in = emit(Opcode::TVEC, std::move(dst), std::move(src));
    in.vop = vop;
    return in;
  }
  // A pair of flags, to check the runtime ignores them.
  void flags(Pipe from, Pipe to) {
    Instr& set = emit(Opcode::SET_FLAG, {});
    set.flag_src = from;
    set.flag_dst = to;
    Instr& wait = emit(Opcode::WAIT_FLAG, {});
    wait.flag_src = from;
    wait.flag_dst = to;
  }
  int task(int kernel, std::vector<TensorBinding> bindings, std::vector<int> deps = {}) {
    Task t;
    t.id = static_cast<int>(p.tasks.size());
    t.kernel = kernel;
    t.block = static_cast<int>(p.blocks.size()) - 1;
    t.core = p.blocks.back().core;
    t.bindings = std::move(bindings);
    t.deps = std::move(deps);
    p.tasks.push_back(t);
    p.kernels[kernel].tasks.push_back(t.id);
    return t.id;
  }
  Program p;
};

HostTensor random_tensor(const Shape& shape, DType dtype, uint64_t seed, double lo = -1, double hi = 1) {
  return HostTensor::random(shape, dtype, seed, lo, hi);
}

std::vector<HostTensor> run_program(const Program& p, const std::vector<HostTensor>& inputs, int threads = 1) {
  CpuExecutor exec(p, ExecOptions{threads});
  return exec.run(inputs);
}

// ---- pieces: fp32 math -------------------------------------------------------------

struct MathCase {
  rt::MathFn fn;
  const char* name;
  double (*ref)(double);
};

const MathCase kMath[] = {
    {rt::MathFn::Exp, "exp", [](double x) { return std::exp(x); }},
    {rt::MathFn::Log, "log", [](double x) { return std::log(x); }},
    {rt::MathFn::Erf, "erf", [](double x) { return std::erf(x); }},
    {rt::MathFn::Erfc, "erfc", [](double x) { return std::erfc(x); }},
    {rt::MathFn::Tanh, "tanh", [](double x) { return std::tanh(x); }},
    {rt::MathFn::Sqrt, "sqrt", [](double x) { return std::sqrt(x); }},
    {rt::MathFn::Rsqrt, "rsqrt", [](double x) { return 1 / std::sqrt(x); }},
};

TEST(RuntimeMath, MatchesStdWithinFp32Rounding) {
  std::mt19937 rng(7);
  std::vector<float> x;
  for (int i = 0; i < 200000; ++i) {
    const float mantissa = std::uniform_real_distribution<float>(-1, 1)(rng);
    x.push_back(mantissa * std::pow(10.0f, std::uniform_real_distribution<float>(-6, 2.1f)(rng)));
  }
  const float inf = std::numeric_limits<float>::infinity();
  for (float special : {0.0f, -0.0f, inf, -inf, std::numeric_limits<float>::quiet_NaN(), 1e-40f, -1e-40f,
                        88.0f, 89.0f, -103.0f, -110.0f, 2.0f, -2.0f, 12.5f, -12.5f, 1e-5f})
    x.push_back(special);
  for (const MathCase& m : kMath) {
    std::vector<float> y(x.size());
    rt::apply_math(m.fn, y.data(), x.data(), static_cast<int64_t>(x.size()));
    double worst = 0;
    for (size_t i = 0; i < x.size(); ++i) {
      const double want = m.ref(x[i]);
      const float want_f = static_cast<float>(want);
      if (std::isnan(want_f)) {
        EXPECT_TRUE(std::isnan(y[i])) << m.name << "(" << x[i] << ") = " << y[i];
        continue;
      }
      if (std::isinf(want_f)) {
        EXPECT_EQ(y[i], want_f) << m.name << "(" << x[i] << ")";
        continue;
      }
      if (std::fabs(want) < 1e-37) {  // fp32 subnormal results: absolute error only
        EXPECT_NEAR(y[i], want_f, 1e-44) << m.name << "(" << x[i] << ")";
        continue;
      }
      worst = std::max(worst, std::fabs(y[i] - want) / std::fabs(want));
    }
    EXPECT_LT(worst, 1.5e-7) << m.name;
  }
}

TEST(RuntimeMath, WorksInPlaceAndOnShortRows) {
  std::vector<float> x = {0.5f, 1.5f, -2.0f};
  rt::apply_math(rt::MathFn::Exp, x.data(), x.data(), 3);
  EXPECT_FLOAT_EQ(x[0], std::exp(0.5f));
  EXPECT_FLOAT_EQ(x[2], std::exp(-2.0f));
  EXPECT_FLOAT_EQ(rt::apply_math(rt::MathFn::Tanh, 0.25f), std::tanh(0.25f));
}

// ---- pieces: conversions -----------------------------------------------------------

TEST(RuntimeConvert, Fp16AndBf16RowsMatchTheScalarConversions) {
  std::mt19937 rng(3);
  std::vector<float> f(4099);
  for (float& v : f) v = std::bit_cast<float>(static_cast<uint32_t>(rng()));  // every class of value
  f[0] = 65520.0f;  // rounds to fp16 inf
  f[1] = 5.96e-8f;  // fp16 subnormal
  for (DType t : {DType::F16, DType::BF16}) {
    std::vector<uint16_t> bits(f.size());
    rt::store_row(bits.data(), t, 1, f.data(), static_cast<int64_t>(f.size()), false);
    std::vector<float> back(f.size());
    rt::load_row(back.data(), bits.data(), t, 1, static_cast<int64_t>(f.size()));
    for (size_t i = 0; i < f.size(); ++i) {
      const uint16_t want = t == DType::F16 ? float_to_fp16(f[i]) : float_to_bf16(f[i]);
      if (std::isnan(f[i])) {
        EXPECT_TRUE(std::isnan(back[i]));
        continue;
      }
      ASSERT_EQ(bits[i], want) << dtype_name(t) << " of " << f[i];
      EXPECT_EQ(std::bit_cast<uint32_t>(back[i]),
                std::bit_cast<uint32_t>(t == DType::F16 ? fp16_to_float(want) : bf16_to_float(want)));
    }
    std::vector<float> rounded(f);
    rt::round_to_dtype(rounded.data(), static_cast<int64_t>(rounded.size()), t);
    for (size_t i = 0; i < f.size(); ++i) {
      if (std::isnan(f[i])) continue;
      EXPECT_EQ(std::bit_cast<uint32_t>(rounded[i]), std::bit_cast<uint32_t>(back[i]));
    }
  }
}

TEST(RuntimeConvert, IntegersRoundToNearestEvenAndSaturate) {
  const float f[] = {2.5f, 3.5f, -2.5f, 1e10f, -1e10f, std::numeric_limits<float>::quiet_NaN(), 200.0f};
  int32_t i32[7];
  rt::store_row(i32, DType::I32, 1, f, 7, false);
  EXPECT_EQ(std::vector<int32_t>(i32, i32 + 7),
            (std::vector<int32_t>{2, 4, -2, 2147483647, -2147483647 - 1, 0, 200}));
  int8_t i8[7];
  rt::store_row(i8, DType::I8, 1, f, 7, false);
  EXPECT_EQ(i8[6], 127);
  EXPECT_EQ(i8[4], -128);
  // Strided and broadcast loads.
  const uint16_t h[] = {float_to_fp16(1.0f), 0, float_to_fp16(2.0f), 0, float_to_fp16(3.0f)};
  float out[3];
  rt::load_row(out, h, DType::F16, 2, 3);
  EXPECT_EQ(std::vector<float>(out, out + 3), (std::vector<float>{1, 2, 3}));
  rt::load_row(out, h, DType::F16, 0, 3);
  EXPECT_EQ(std::vector<float>(out, out + 3), (std::vector<float>{1, 1, 1}));
}

// ---- pieces: strided iteration -----------------------------------------------------

TEST(RuntimeStrided, AlignsBroadcastAndSameElementWindows) {
  const auto dims = [](Shape s) { return rt::Dims::of(s); };
  // [1, 8] broadcast over [4, 8]; a missing leading dim too.
  rt::Dims st = rt::align_strides(dims({4, 8}), dims({1, 8}), dims({8, 1}), rt::Match::Broadcast, "t");
  EXPECT_EQ(st.shape(), (Shape{0, 1}));
  st = rt::align_strides(dims({4, 8}), dims({8}), dims({1}), rt::Match::Broadcast, "t");
  EXPECT_EQ(st.shape(), (Shape{0, 1}));
  // A GM row [8] stored from a UB column [8, 1] keeps its order rather than broadcasting.
  st = rt::align_strides(dims({8}), dims({8, 1}), dims({16, 1}), rt::Match::SameElements, "t");
  EXPECT_EQ(st.shape(), (Shape{16}));
  expect_error([&] { rt::align_strides(dims({4, 8}), dims({3, 8}), dims({8, 1}), rt::Match::Broadcast, "the op"); },
               ErrorCategory::Internal, {"the op", "[3,8]", "[4,8]"});
}

TEST(RuntimeStrided, RowsMergeContiguousDims) {
  std::vector<float> buf(4 * 6, 0);
  rt::View v{reinterpret_cast<char*>(buf.data()), DType::F32, rt::Dims::of({6, 1})};
  int rows = 0;
  int64_t total = 0;
  // A [4, 6] window of a [4, 6] buffer is one row of 24.
  rt::for_each_row<1>(rt::Dims::of({4, 6}), {&v}, [&](auto&, int64_t n, auto&) {
    ++rows;
    total += n;
  });
  EXPECT_EQ(rows, 1);
  EXPECT_EQ(total, 24);
  // A [4, 3] window of it is four rows of 3.
  rows = 0;
  rt::for_each_row<1>(rt::Dims::of({4, 3}), {&v}, [&](auto&, int64_t n, auto&) {
    ++rows;
    EXPECT_EQ(n, 3);
  });
  EXPECT_EQ(rows, 4);
}

// ---- pieces: packing and micro-kernels --------------------------------------------

TEST(RuntimePanels, EveryPackingPathMatchesTheLayoutFormula) {
  std::mt19937 rng(11);
  for (int trial = 0; trial < 40; ++trial) {
    const int width = trial % 2 ? rt::kPanelColsB : rt::kPanelRowsA;
    const int64_t lanes = 1 + rng() % 40, depth = 1 + rng() % 37;
    const int mode = trial % 3;  // lanes contiguous, depth contiguous, neither
    const int64_t lane_stride = mode == 0 ? 1 : (mode == 1 ? depth + 3 : 2 * depth + 1);
    const int64_t depth_stride = mode == 0 ? lanes + 5 : (mode == 1 ? 1 : 2);
    const DType dtype = trial % 4 == 3 ? DType::F16 : DType::F32;
    const int64_t span = (lanes - 1) * lane_stride + (depth - 1) * depth_stride + 1;
    HostTensor src = random_tensor({span}, dtype, trial);
    std::vector<float> packed(rt::panel_elements(width, lanes, depth), 42.0f);
    const rt::Panels dst{packed.data(), width, width * depth};
    rt::pack_panels(dst, lanes, depth, src.data(), dtype, lane_stride, depth_stride);
    for (int64_t l = 0; l < align_up(lanes, width); ++l)
      for (int64_t p = 0; p < depth; ++p) {
        const double want = l < lanes ? src.get(l * lane_stride + p * depth_stride) : 0.0;
        ASSERT_EQ(dst.at(l, p), static_cast<float>(want)) << "trial " << trial << " lane " << l << " depth " << p;
      }
  }
}

TEST(RuntimePanels, RepackCopiesAnySubWindowAndZeroesThePad) {
  std::mt19937 rng(13);
  for (int trial = 0; trial < 20; ++trial) {
    const int width = trial % 2 ? rt::kPanelColsB : rt::kPanelRowsA;
    const int64_t lanes_cap = 1 + rng() % 50, depth_cap = 1 + rng() % 40;
    std::vector<float> src_buf(rt::panel_elements(width, lanes_cap, depth_cap));
    for (float& v : src_buf) v = static_cast<float>(rng() % 1000);
    const rt::Panels src{src_buf.data(), width, width * depth_cap};
    // Every other trial starts on a panel boundary (the contiguous path).
    const int64_t lane0 = trial % 4 < 2 ? (rng() % (lanes_cap / width + 1)) * width % lanes_cap : rng() % lanes_cap;
    const int64_t depth0 = rng() % depth_cap;
    const int64_t lanes = 1 + rng() % (lanes_cap - lane0), depth = 1 + rng() % (depth_cap - depth0);
    std::vector<float> dst_buf(rt::panel_elements(width, lanes, depth), 42.0f);
    const rt::Panels dst{dst_buf.data(), width, width * depth};
    rt::repack_panels(dst, src, lane0, depth0, lanes, depth);
    for (int64_t l = 0; l < align_up(lanes, width); ++l)
      for (int64_t p = 0; p < depth; ++p)
        ASSERT_EQ(dst.at(l, p), l < lanes ? src.at(lane0 + l, depth0 + p) : 0.0f) << "trial " << trial;
  }
}

TEST(RuntimeMicroKernel, EveryCompiledIsaMatchesFp64) {
  std::mt19937 rng(5);
  for (rt::GemmIsa isa : rt::compiled_gemm_isas()) {
    for (int trial = 0; trial < 12; ++trial) {
      const int64_t m = 1 + rng() % 40, n = 1 + rng() % 70, k = 1 + rng() % 50;
      const int64_t ldc = n + rng() % 5;
      HostTensor a = random_tensor({m, k}, DType::F32, trial), b = random_tensor({k, n}, DType::F32, 100 + trial);
      std::vector<float> pa(rt::panel_elements(rt::kPanelRowsA, m, k)), pb(rt::panel_elements(rt::kPanelColsB, n, k));
      rt::pack_panels({pa.data(), rt::kPanelRowsA, rt::kPanelRowsA * k}, m, k, a.data(), DType::F32, k, 1);
      rt::pack_panels({pb.data(), rt::kPanelColsB, rt::kPanelColsB * k}, n, k, b.data(), DType::F32, 1, n);
      const float guard = 1234.5f;
      std::vector<float> c((m + 1) * ldc, guard);
      const bool accumulate = trial % 2;
      if (accumulate)
        for (int64_t i = 0; i < m; ++i)
          for (int64_t j = 0; j < n; ++j) c[i * ldc + j] = 0.25f;
      rt::gemm_panels(isa, m, n, k, pa.data(), rt::kPanelRowsA * k, pb.data(), rt::kPanelColsB * k, c.data(), ldc,
                      accumulate);
      for (int64_t i = 0; i <= m; ++i)
        for (int64_t j = 0; j < ldc; ++j) {
          if (i == m || j >= n) {
            ASSERT_EQ(c[i * ldc + j], guard) << rt::gemm_isa_name(isa) << ": wrote outside C at " << i << "," << j;
            continue;
          }
          double want = accumulate ? 0.25 : 0.0;
          for (int64_t p = 0; p < k; ++p) want += a.get(i * k + p) * b.get(p * n + j);
          ASSERT_NEAR(c[i * ldc + j], want, 1e-5 * std::sqrt(static_cast<double>(k)) + 1e-6)
              << rt::gemm_isa_name(isa) << " m=" << m << " n=" << n << " k=" << k;
        }
    }
  }
}

TEST(RuntimeMicroKernel, Int32IsExact) {
  const int64_t m = 3, n = 17, k = 40;
  std::vector<float> pa(rt::panel_elements(rt::kPanelRowsA, m, k)), pb(rt::panel_elements(rt::kPanelColsB, n, k));
  const rt::Panels a{pa.data(), rt::kPanelRowsA, rt::kPanelRowsA * k}, b{pb.data(), rt::kPanelColsB, rt::kPanelColsB * k};
  for (int64_t p = 0; p < k; ++p) {
    for (int64_t i = 0; i < m; ++i) a.at(i, p) = static_cast<float>((i * 7 + p) % 255 - 127);
    for (int64_t j = 0; j < n; ++j) b.at(j, p) = static_cast<float>((j * 5 + p * 3) % 255 - 128);
  }
  std::vector<int32_t> c(m * n, 1 << 28);
  rt::gemm_panels_int32(m, n, k, pa.data(), rt::kPanelRowsA * k, pb.data(), rt::kPanelColsB * k, c.data(), n, true);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      int64_t want = 1 << 28;
      for (int64_t p = 0; p < k; ++p) want += static_cast<int64_t>(a.at(i, p)) * static_cast<int64_t>(b.at(j, p));
      EXPECT_EQ(c[i * n + j], want);
    }
}


// ---- tiled matmul programs -----------------------------------------------------------

struct CubeCase {
  int64_t batch = 0;  // 0: rank-2 operands
  int64_t m = 1, n = 1, k = 1;
  int64_t mL0 = 16, mL1 = 16, nL0 = 16, nL1 = 16, kL0 = 16, kL1 = 16;
  bool ta = false, tb = false;
  DType in = DType::F32, out = DType::F32;
  int chunks = 1;           // split-K pieces (fp32 out)
  bool early_load = false;  // the next TLOAD sits between a step's TMOVs and its TMATMUL
  bool shared_l0c = false;  // one L0C [mL1, nL1] with windows instead of one per sub-tile
  int threads = 1;

  std::string str() const {
    std::ostringstream o;
    o << "b" << batch << " " << m << "x" << n << "x" << k << " L0 " << mL0 << "," << nL0 << "," << kL0 << " L1 "
      << mL1 << "," << nL1 << "," << kL1 << (ta ? " ta" : "") << (tb ? " tb" : "") << " " << dtype_name(in) << "->"
      << dtype_name(out) << " chunks " << chunks << (early_load ? " early" : "") << (shared_l0c ? " sharedC" : "")
      << " threads " << threads;
    return o.str();
  }
};

// Prepends the batch dim (index `b`, extent 1 in windows) when the case has one.
Shape batched(const CubeCase& c, Shape s, int64_t b_value) {
  if (c.batch) s.insert(s.begin(), b_value);
  return s;
}

// What the compiler would emit for a Cube kernel, written out directly: per output
// tile (and K chunk) one task; K steps of kL1 load A/B tiles into L1; L0 sub-tiles
// move to L0A/L0B and accumulate in L0C; L0C stores to GM (atomically with split-K,
// after a zero-fill kernel).
Program matmul_program(const CubeCase& c) {
  ProgramBuilder pb;
  const int64_t B = std::max<int64_t>(c.batch, 1);
  const int a = pb.tensor("a", batched(c, c.ta ? Shape{c.k, c.m} : Shape{c.m, c.k}, c.batch), c.in, TensorRole::Input, 0);
  const int b = pb.tensor("b", batched(c, c.tb ? Shape{c.n, c.k} : Shape{c.k, c.n}, c.batch), c.in, TensorRole::Input, 1);
  const int out = pb.tensor("c", batched(c, {c.m, c.n}, c.batch), c.out, TensorRole::Output, 0);
  const int64_t m_tiles = ceil_div(c.m, c.mL1), n_tiles = ceil_div(c.n, c.nL1);
  const int64_t steps_total = ceil_div(c.k, c.kL1);
  const int64_t steps_per_chunk = ceil_div(steps_total, c.chunks);

  std::vector<int> after;
  if (c.chunks > 1) {
    const int zero = pb.kernel("zero");
    after.push_back(zero);
    for (int64_t bi = 0; bi < B; ++bi)
      for (int64_t mi = 0; mi < m_tiles; ++mi)
        for (int64_t ni = 0; ni < n_tiles; ++ni) {
          const int64_t mt = std::min(c.mL1, c.m - mi * c.mL1), nt = std::min(c.nL1, c.n - ni * c.nL1);
          pb.block("zero");
          const int z = pb.buffer("z.ub", MemLevel::UB, c.out, {c.mL1, c.nL1});
          pb.emit(Opcode::TFILL, ub(z, {0, 0}, {mt, nt})).scalar = 0.0;
          pb.emit(Opcode::TSTORE, gm(0, batched(c, {0, 0}, 0), batched(c, {mt, nt}, 1)), {ub(z, {0, 0}, {mt, nt})});
          pb.task(zero, {{out, batched(c, {mi * c.mL1, ni * c.nL1}, bi)}});
        }
  }
  const int cube = pb.kernel("mm", after, true);
  const int slots = c.early_load ? 1 : 2;
  for (int64_t bi = 0; bi < B; ++bi)
    for (int64_t mi = 0; mi < m_tiles; ++mi)
      for (int64_t ni = 0; ni < n_tiles; ++ni)
        for (int chunk = 0; chunk < c.chunks; ++chunk) {
          const int64_t first_step = chunk * steps_per_chunk;
          const int64_t steps = std::min(steps_total, first_step + steps_per_chunk) - first_step;
          if (steps <= 0) continue;
          const int64_t k_begin = first_step * c.kL1;
          const int64_t k_end = std::min(c.k, (first_step + steps) * c.kL1);
          const int64_t m0 = mi * c.mL1, n0 = ni * c.nL1;
          const int64_t mt = std::min(c.mL1, c.m - m0), nt = std::min(c.nL1, c.n - n0);
          const int64_t msub = ceil_div(mt, c.mL0), nsub = ceil_div(nt, c.nL0);

          pb.block("mm", CoreType::AIC);
          std::vector<int> l1a, l1b;
          for (int s = 0; s < slots; ++s) {
            l1a.push_back(pb.buffer("a.l1", MemLevel::L1, c.in, {c.mL1, c.kL1}, Layout::FractalA));
            l1b.push_back(pb.buffer("b.l1", MemLevel::L1, c.in, {c.kL1, c.nL1}, Layout::FractalB));
          }
          const int l0a = pb.buffer("a.l0", MemLevel::L0A, c.in, {c.mL0, c.kL0});
          const int l0b = pb.buffer("b.l0", MemLevel::L0B, c.in, {c.kL0, c.nL0});
          std::vector<int> l0c;
          if (c.shared_l0c) {
            l0c.push_back(pb.buffer("c.l0", MemLevel::L0C, DType::F32, {c.mL1, c.nL1}));
          } else {
            for (int64_t i = 0; i < msub * nsub; ++i)
              l0c.push_back(pb.buffer("c.l0", MemLevel::L0C, DType::F32, {c.mL0, c.nL0}));
          }
          auto c_operand = [&](int64_t i, int64_t j, int64_t ms, int64_t ns) {
            if (c.shared_l0c) return loc(MemLevel::L0C, l0c[0], {i * c.mL0, j * c.nL0}, {ms, ns});
            return loc(MemLevel::L0C, l0c[i * nsub + j], {0, 0}, {ms, ns});
          };
          auto k_len = [&](int64_t s) { return std::min(c.kL1, k_end - (k_begin + s * c.kL1)); };
          auto load = [&](int64_t s) {
            const int64_t kk = s * c.kL1, kl = k_len(s);
            const int slot = static_cast<int>(s % slots);
            Instr& la = pb.emit(Opcode::TLOAD, loc(MemLevel::L1, l1a[slot], {0, 0}, {mt, kl}),
                                {gm(0, batched(c, c.ta ? Shape{kk, 0} : Shape{0, kk}, 0),
                                    batched(c, c.ta ? Shape{kl, mt} : Shape{mt, kl}, 1))});
            la.transpose = c.ta;
            Instr& lb = pb.emit(Opcode::TLOAD, loc(MemLevel::L1, l1b[slot], {0, 0}, {kl, nt}),
                                {gm(1, batched(c, c.tb ? Shape{0, kk} : Shape{kk, 0}, 0),
                                    batched(c, c.tb ? Shape{nt, kl} : Shape{kl, nt}, 1))});
            lb.transpose = c.tb;
            pb.flags(Pipe::MTE2, Pipe::MTE1);
          };
          // One sub-tile's TMOVs and TMATMUL; `between` runs after the TMOVs.
          auto compute = [&](int64_t s, const std::function<void()>& between) {
            const int slot = static_cast<int>(s % slots);
            const int64_t kl = k_len(s);
            for (int64_t i = 0; i < msub; ++i)
              for (int64_t j = 0; j < nsub; ++j)
                for (int64_t kk = 0; kk * c.kL0 < kl; ++kk) {
                  const int64_t ms = std::min(c.mL0, mt - i * c.mL0), ns = std::min(c.nL0, nt - j * c.nL0);
                  const int64_t ks = std::min(c.kL0, kl - kk * c.kL0);
                  pb.emit(Opcode::TMOV, loc(MemLevel::L0A, l0a, {0, 0}, {ms, ks}),
                          {loc(MemLevel::L1, l1a[slot], {i * c.mL0, kk * c.kL0}, {ms, ks})});
                  pb.emit(Opcode::TMOV, loc(MemLevel::L0B, l0b, {0, 0}, {ks, ns}),
                          {loc(MemLevel::L1, l1b[slot], {kk * c.kL0, j * c.nL0}, {ks, ns})});
                  if (between) between();
                  pb.flags(Pipe::MTE1, Pipe::M);
                  pb.emit(Opcode::TMATMUL, c_operand(i, j, ms, ns),
                          {loc(MemLevel::L0A, l0a, {0, 0}, {ms, ks}), loc(MemLevel::L0B, l0b, {0, 0}, {ks, ns})})
                      .accumulate = !(s == 0 && kk == 0);
                }
          };
          if (c.early_load) {
            load(0);
            for (int64_t s = 0; s < steps; ++s)
              compute(s, [&, s] {
                if (s + 1 < steps) load(s + 1);
              });
          } else {
            for (int64_t s = 0; s < steps; ++s) {
              load(s);
              compute(s, nullptr);
            }
          }
          pb.flags(Pipe::M, Pipe::FIX);
          for (int64_t i = 0; i < msub; ++i)
            for (int64_t j = 0; j < nsub; ++j) {
              const int64_t ms = std::min(c.mL0, mt - i * c.mL0), ns = std::min(c.nL0, nt - j * c.nL0);
              pb.emit(Opcode::TSTORE, gm(2, batched(c, {i * c.mL0, j * c.nL0}, 0), batched(c, {ms, ns}, 1)),
                      {c_operand(i, j, ms, ns)})
                  .accumulate = c.chunks > 1;
            }
          pb.task(cube, {{a, batched(c, c.ta ? Shape{k_begin, m0} : Shape{m0, k_begin}, bi)},
                         {b, batched(c, c.tb ? Shape{n0, k_begin} : Shape{k_begin, n0}, bi)},
                         {out, batched(c, {m0, n0}, bi)}});
        }
  return pb.p;
}

HostTensor matmul_reference(const CubeCase& c, const HostTensor& a, const HostTensor& b) {
  const int64_t B = std::max<int64_t>(c.batch, 1);
  HostTensor out(batched(c, {c.m, c.n}, c.batch), c.out);
  for (int64_t bi = 0; bi < B; ++bi)
    for (int64_t i = 0; i < c.m; ++i)
      for (int64_t j = 0; j < c.n; ++j) {
        double acc = 0;
        for (int64_t p = 0; p < c.k; ++p) {
          const double x = a.get(bi * c.m * c.k + (c.ta ? p * c.m + i : i * c.k + p));
          const double y = b.get(bi * c.k * c.n + (c.tb ? j * c.k + p : p * c.n + j));
          acc += x * y;
        }
        out.set((bi * c.m + i) * c.n + j, acc);
      }
  return out;
}

void check_matmul(const CubeCase& c, uint64_t seed) {
  SCOPED_TRACE(c.str());
  const Program p = matmul_program(c);
  const HostTensor a = random_tensor(p.tensors[0].shape, c.in, seed);
  const HostTensor b = random_tensor(p.tensors[1].shape, c.in, seed + 1);
  const std::vector<HostTensor> got = run_program(p, {a, b}, c.threads);
  ASSERT_EQ(got.size(), 1u);
  const HostTensor want = matmul_reference(c, a, b);
  EXPECT_TRUE(all_close(got[0], want, c.k)) << "max diff " << max_abs_diff(got[0], want);
}

TEST(RuntimeMatmul, OneTile) {
  CubeCase c;
  c.m = 16, c.n = 16, c.k = 16;
  check_matmul(c, 1);
}

TEST(RuntimeMatmul, RandomTilesWithTailsTransposesAndDtypes) {
  std::mt19937 rng(2024);
  auto pick = [&](std::initializer_list<int64_t> v) { return *(v.begin() + rng() % v.size()); };
  for (int trial = 0; trial < 40; ++trial) {
    CubeCase c;
    c.batch = pick({0, 0, 2});
    c.m = 1 + rng() % 90, c.n = 1 + rng() % 110, c.k = 1 + rng() % 130;
    c.mL0 = pick({16, 32, 48}), c.mL1 = c.mL0 * pick({1, 2, 3});
    c.nL0 = pick({16, 32, 48}), c.nL1 = c.nL0 * pick({1, 2});
    c.kL0 = pick({16, 32}), c.kL1 = c.kL0 * pick({1, 2, 4});
    c.ta = rng() % 2, c.tb = rng() % 2;
    c.in = std::vector<DType>{DType::F32, DType::F16, DType::BF16}[rng() % 3];
    c.out = rng() % 2 ? DType::F32 : c.in;
    c.shared_l0c = rng() % 2;
    c.threads = 1 + rng() % 2;
    check_matmul(c, trial);
  }
}

TEST(RuntimeMatmul, SplitKAccumulatesAtomicallyAfterTheZeroKernel) {
  std::mt19937 rng(77);
  for (int trial = 0; trial < 10; ++trial) {
    CubeCase c;
    c.m = 1 + rng() % 70, c.n = 1 + rng() % 70, c.k = 40 + rng() % 200;
    c.mL0 = c.mL1 = 32, c.nL0 = c.nL1 = 32, c.kL0 = 16, c.kL1 = 32;
    c.chunks = 2 + static_cast<int>(rng() % 4);
    c.in = trial % 2 ? DType::F16 : DType::F32;
    c.threads = 2;
    check_matmul(c, 500 + trial);
  }
}

TEST(RuntimeMatmul, EarlyLoadForcesTmovCopiesAndStaysCorrect) {
  for (bool early : {false, true}) {
    CubeCase c;
    c.m = 40, c.n = 33, c.k = 100;
    c.mL0 = c.mL1 = 48, c.nL0 = c.nL1 = 48, c.kL0 = c.kL1 = 32;
    c.early_load = early;
    c.ta = early;
    const Program p = matmul_program(c);
    // The L0 buffers are views into L1 unless a TLOAD into the same L1 slot comes
    // between a TMOV and its TMATMUL.
    const rt::BlockPlan plan = rt::plan_block(p.blocks.back());
    for (const rt::BufferPlan& b : plan.buffers) {
      if (b.level != MemLevel::L0A && b.level != MemLevel::L0B) continue;
      EXPECT_EQ(b.l0_view, !early) << b.name;
    }
    check_matmul(c, 9);
  }
}

TEST(RuntimeMatmul, RepeatedRunsReuseScratchAndSeeNewInputs) {
  CubeCase c;
  c.m = 50, c.n = 70, c.k = 90;
  c.mL0 = 32, c.mL1 = 64, c.nL0 = 32, c.nL1 = 64, c.kL0 = 32, c.kL1 = 64;
  c.chunks = 2;
  const Program p = matmul_program(c);
  CpuExecutor exec(p, ExecOptions{2});
  for (uint64_t seed : {1, 2, 1}) {
    const HostTensor a = random_tensor(p.tensors[0].shape, c.in, seed), b = random_tensor(p.tensors[1].shape, c.in, seed + 7);
    const std::vector<HostTensor> got = exec.run({a, b});
    EXPECT_TRUE(all_close(got[0], matmul_reference(c, a, b), c.k)) << "seed " << seed;
  }
}

// ---- vector programs -----------------------------------------------------------------

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

// A single-tile program: out = op(x[, y]) with everything in one UB tile.
Program unary_or_binary_program(OpKind op, const Shape& shape, DType dtype, std::optional<double> scalar,
                                bool scalar_first, const Shape& y_shape) {
  ProgramBuilder pb;
  const bool binary = is_binary(op) && !scalar;
  const int x = pb.tensor("x", shape, dtype, TensorRole::Input, 0);
  const int y = binary ? pb.tensor("y", y_shape, dtype, TensorRole::Input, 1) : -1;
  const int out = pb.tensor("out", shape, dtype, TensorRole::Output, 0);
  const int k = pb.kernel("op");
  pb.block("op");
  const int ux = pb.buffer("x.ub", MemLevel::UB, dtype, shape);
  const int uy = binary ? pb.buffer("y.ub", MemLevel::UB, dtype, y_shape) : -1;
  const int uo = pb.buffer("o.ub", MemLevel::UB, dtype, shape);
  pb.emit(Opcode::TLOAD, ub(ux, zeros(shape.size()), shape), {gm(0, zeros(shape.size()), shape)});
  std::vector<Operand> src{ub(ux, zeros(shape.size()), shape)};
  if (binary) {
    pb.emit(Opcode::TLOAD, ub(uy, zeros(y_shape.size()), y_shape), {gm(1, zeros(y_shape.size()), y_shape)});
    src.push_back(ub(uy, zeros(y_shape.size()), y_shape));
  }
  Instr& in = pb.vec(op, ub(uo, zeros(shape.size()), shape), src);
  in.scalar = scalar;
  in.scalar_first = scalar_first;
  pb.emit(Opcode::TSTORE, gm(binary ? 2 : 1, zeros(shape.size()), shape), {ub(uo, zeros(shape.size()), shape)});
  std::vector<TensorBinding> bindings{{x, zeros(shape.size())}};
  if (binary) bindings.push_back({y, zeros(y_shape.size())});
  bindings.push_back({out, zeros(shape.size())});
  pb.task(k, bindings);
  return pb.p;
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

// ---- the execute graph ---------------------------------------------------------------

// A fused epilogue: each Cube task stores its tile to `mm`; AIV tasks depending on it
// load sub-windows back, add a bias and store the output. Without the dependencies
// the AIV tasks would read stale tiles.
TEST(RuntimeExecuteGraph, EpilogueTasksWaitForTheirCubeTask) {
  const int64_t M = 64, N = 96, K = 32, tile = 32, sub = 16;
  ProgramBuilder pb;
  const int a = pb.tensor("a", {M, K}, DType::F32, TensorRole::Input, 0);
  const int b = pb.tensor("b", {K, N}, DType::F32, TensorRole::Input, 1);
  const int bias = pb.tensor("bias", {N}, DType::F32, TensorRole::Input, 2);
  const int mm = pb.tensor("mm", {M, N}, DType::F32);
  const int out = pb.tensor("out", {M, N}, DType::F32, TensorRole::Output, 0);
  const int k = pb.kernel("mm_bias", {}, true);
  for (int64_t m0 = 0; m0 < M; m0 += tile)
    for (int64_t n0 = 0; n0 < N; n0 += tile) {
      pb.block("mm", CoreType::AIC);
      const int l1a = pb.buffer("a.l1", MemLevel::L1, DType::F32, {tile, K}, Layout::FractalA);
      const int l1b = pb.buffer("b.l1", MemLevel::L1, DType::F32, {K, tile}, Layout::FractalB);
      const int l0a = pb.buffer("a.l0", MemLevel::L0A, DType::F32, {tile, K});
      const int l0b = pb.buffer("b.l0", MemLevel::L0B, DType::F32, {K, tile});
      const int l0c = pb.buffer("c.l0", MemLevel::L0C, DType::F32, {tile, tile});
      pb.emit(Opcode::TLOAD, loc(MemLevel::L1, l1a, {0, 0}, {tile, K}), {gm(0, {0, 0}, {tile, K})});
      pb.emit(Opcode::TLOAD, loc(MemLevel::L1, l1b, {0, 0}, {K, tile}), {gm(1, {0, 0}, {K, tile})});
      pb.emit(Opcode::TMOV, loc(MemLevel::L0A, l0a, {0, 0}, {tile, K}), {loc(MemLevel::L1, l1a, {0, 0}, {tile, K})});
      pb.emit(Opcode::TMOV, loc(MemLevel::L0B, l0b, {0, 0}, {K, tile}), {loc(MemLevel::L1, l1b, {0, 0}, {K, tile})});
      pb.emit(Opcode::TMATMUL, loc(MemLevel::L0C, l0c, {0, 0}, {tile, tile}),
              {loc(MemLevel::L0A, l0a, {0, 0}, {tile, K}), loc(MemLevel::L0B, l0b, {0, 0}, {K, tile})});
      pb.emit(Opcode::TSTORE, gm(2, {0, 0}, {tile, tile}), {loc(MemLevel::L0C, l0c, {0, 0}, {tile, tile})});
      const int cube_task = pb.task(k, {{a, {m0, 0}}, {b, {0, n0}}, {mm, {m0, n0}}});
      for (int64_t i = 0; i < tile; i += sub)
        for (int64_t j = 0; j < tile; j += sub) {
          pb.block("bias");
          const int u = pb.buffer("mm.ub", MemLevel::UB, DType::F32, {sub, sub});
          const int ubias = pb.buffer("bias.ub", MemLevel::UB, DType::F32, {1, sub});
          pb.emit(Opcode::TLOAD, ub(u, {0, 0}, {sub, sub}), {gm(0, {0, 0}, {sub, sub})});
          pb.emit(Opcode::TLOAD, ub(ubias, {0, 0}, {1, sub}), {gm(1, {0}, {sub})});
          pb.vec(OpKind::Add, ub(u, {0, 0}, {sub, sub}), {ub(u, {0, 0}, {sub, sub}), ub(ubias, {0, 0}, {1, sub})});
          pb.emit(Opcode::TSTORE, gm(2, {0, 0}, {sub, sub}), {ub(u, {0, 0}, {sub, sub})});
          pb.task(k, {{mm, {m0 + i, n0 + j}}, {bias, {n0 + j}}, {out, {m0 + i, n0 + j}}}, {cube_task});
        }
    }
  const HostTensor ta = random_tensor({M, K}, DType::F32, 1), tb = random_tensor({K, N}, DType::F32, 2),
                   tbias = random_tensor({N}, DType::F32, 3);
  HostTensor want({M, N}, DType::F32);
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      double acc = tbias.get(j);
      for (int64_t p = 0; p < K; ++p) acc += ta.get(i * K + p) * tb.get(p * N + j);
      want.set(i * N + j, acc);
    }
  CpuExecutor exec(pb.p, ExecOptions{2});
  for (int rep = 0; rep < 5; ++rep) {
    const HostTensor got = exec.run({ta, tb, tbias})[0];
    ASSERT_TRUE(all_close(got, want, K)) << "run " << rep << ": " << max_abs_diff(got, want);
  }
}

// A chain of kernels, each adding 1 to the previous one's tensor, with many small
// tasks: any kernel starting before its `after` finished would read stale values.
TEST(RuntimeExecuteGraph, KernelBarriersOrderAChain) {
  const int64_t n = 512, tile = 16;
  const int stages = 6;
  ProgramBuilder pb;
  std::vector<int> t{pb.tensor("x", {n}, DType::F32, TensorRole::Input, 0)};
  for (int s = 0; s < stages; ++s)
    t.push_back(pb.tensor("t", {n}, DType::F32,
                          s + 1 == stages ? TensorRole::Output : TensorRole::Intermediate, s + 1 == stages ? 0 : -1));
  int prev = -1;
  for (int s = 0; s < stages; ++s) {
    prev = pb.kernel("inc", prev < 0 ? std::vector<int>{} : std::vector<int>{prev});
    for (int64_t i0 = 0; i0 < n; i0 += tile) {
      pb.block("inc");
      const int u = pb.buffer("u", MemLevel::UB, DType::F32, {tile});
      pb.emit(Opcode::TLOAD, ub(u, {0}, {tile}), {gm(0, {0}, {tile})});
      pb.vec(OpKind::Add, ub(u, {0}, {tile}), {ub(u, {0}, {tile})}).scalar = 1.0;
      pb.emit(Opcode::TSTORE, gm(1, {0}, {tile}), {ub(u, {0}, {tile})});
      pb.task(prev, {{t[s], {i0}}, {t[s + 1], {i0}}});
    }
  }
  const HostTensor x = random_tensor({n}, DType::F32, 5);
  CpuExecutor exec(pb.p, ExecOptions{2});
  for (int rep = 0; rep < 5; ++rep) {
    const HostTensor got = exec.run({x})[0];
    for (int64_t i = 0; i < n; ++i) ASSERT_FLOAT_EQ(static_cast<float>(got.get(i)), static_cast<float>(x.get(i) + stages));
  }
}

// The scheduler alone: dispatch order with one thread, and with two, no task starts
// before its dependencies and its kernel's `after` kernels have finished.
Program task_graph(std::mt19937& rng) {
  ProgramBuilder pb;
  pb.block("empty");
  const int kernels = 5;
  for (int k = 0; k < kernels; ++k) {
    std::vector<int> after;
    for (int a = 0; a < k; ++a)
      if (rng() % 3 == 0) after.push_back(a);
    pb.kernel("k", after);
    const int first = static_cast<int>(pb.p.tasks.size());
    const int n = static_cast<int>(rng() % 6);  // kernels without tasks too
    for (int t = 0; t < n; ++t) {
      std::vector<int> deps;
      for (int d = first; d < first + t; ++d)
        if (rng() % 3 == 0) deps.push_back(d);
      pb.task(k, {}, deps);
    }
    std::shuffle(pb.p.kernels[k].tasks.begin(), pb.p.kernels[k].tasks.end(), rng);  // dispatch order != ids
  }
  return pb.p;
}

TEST(RuntimeScheduler, OneThreadFollowsDispatchOrder) {
  ProgramBuilder pb;
  pb.block("empty");
  const int k0 = pb.kernel("first");
  for (int i = 0; i < 4; ++i) pb.task(k0, {});
  const int k1 = pb.kernel("second", {k0});
  pb.task(k1, {});
  pb.task(k1, {}, {4});
  pb.p.kernels[k0].tasks = {2, 0, 3, 1};
  std::vector<int> order;
  rt::TaskScheduler(pb.p).run(1, [&](int task, int) { order.push_back(task); });
  EXPECT_EQ(order, (std::vector<int>{2, 0, 3, 1, 4, 5}));
}

TEST(RuntimeScheduler, TwoThreadsRespectDependenciesAndBarriers) {
  std::mt19937 rng(19);
  for (int trial = 0; trial < 30; ++trial) {
    const Program p = task_graph(rng);
    std::vector<std::atomic<int>> done(p.tasks.size());
    std::atomic<int> runs{0};
    std::atomic<bool> early{false};
    rt::TaskScheduler(p).run(2, [&](int task, int) {
      for (int d : p.tasks[task].deps) early = early || !done[d];
      for (int a : p.kernels[p.tasks[task].kernel].after)
        for (int t : p.kernels[a].tasks) early = early || !done[t];
      ++runs;
      done[task] = 1;
    });
    EXPECT_FALSE(early) << "trial " << trial;
    EXPECT_EQ(runs, static_cast<int>(p.tasks.size()));
  }
}

// ---- error paths -----------------------------------------------------------------------

TEST(RuntimeErrors, InputsAreCheckedAgainstTheProgram) {
  const Program p = unary_or_binary_program(OpKind::Exp, {2, 3}, DType::F32, std::nullopt, false, {2, 3});
  CpuExecutor exec(p);
  expect_error([&] { exec.run({}); }, ErrorCategory::Usage, {"expected 1 inputs, got 0"});
  expect_error([&] { exec.run({HostTensor({3, 2}, DType::F32)}); }, ErrorCategory::Usage, {"input 0", "[3,2]", "[2,3]"});
  expect_error([&] { exec.run({HostTensor({2, 3}, DType::F16)}); }, ErrorCategory::Usage, {"input 0", "fp16", "fp32"});
}

TEST(RuntimeErrors, MalformedProgramsFailAtConstructionNamingTheCulprit) {
  const Program good = unary_or_binary_program(OpKind::Exp, {2, 3}, DType::F32, std::nullopt, false, {2, 3});
  {
    Program p = good;  // GM window past the tensor's end
    p.tasks[0].bindings[0].origin = {1, 0};
    expect_error([&] { CpuExecutor e(p); }, ErrorCategory::Internal, {"task 0", "TLOAD", "leaves tensor"});
  }
  {
    Program p = good;  // unknown buffer
    p.blocks[0].instrs[1].dst.id = 77;
    expect_error([&] { CpuExecutor e(p); }, ErrorCategory::Internal, {"instr 1", "no buffer with id 77"});
  }
  {
    Program p = good;  // local window outside its buffer
    p.blocks[0].instrs[0].dst.extent = {2, 4};
    expect_error([&] { CpuExecutor e(p); }, ErrorCategory::Internal, {"instr 0", "leaves buffer"});
  }
  {
    Program p = good;  // missing binding slot
    p.tasks[0].bindings.pop_back();
    expect_error([&] { CpuExecutor e(p); }, ErrorCategory::Internal, {"task 0", "binding slot 1"});
  }
  {
    Program p = good;  // a task waiting for itself through another
    p.tasks.push_back(p.tasks[0]);
    p.tasks[1].id = 1;
    p.kernels[0].tasks.push_back(1);
    p.tasks[0].deps = {1};
    p.tasks[1].deps = {0};
    expect_error([&] { CpuExecutor e(p); }, ErrorCategory::Internal, {"cycle"});
  }
  {
    CubeCase c;  // a TMATMUL whose extents do not chain
    Program p = matmul_program(c);
    for (Instr& in : p.blocks.back().instrs)
      if (in.op == Opcode::TMATMUL) in.src[1].extent = {8, 16};
    expect_error([&] { CpuExecutor e(p); }, ErrorCategory::Internal, {"TMATMUL", "do not form a matmul"});
  }
}

TEST(RuntimeErrors, ATaskFailureStopsTheRunAndPropagates) {
  const Program p = unary_or_binary_program(OpKind::Exp, {2, 3}, DType::F32, std::nullopt, false, {2, 3});
  Program bad = p;
  bad.blocks[0].instrs[1].vop = OpKind::Matmul;  // not a vector op: fails when executed
  CpuExecutor exec(bad, ExecOptions{2});
  expect_error([&] { exec.run({HostTensor({2, 3}, DType::F32)}); }, ErrorCategory::Internal, {"matmul"});
}
}  // namespace
}  // namespace pto
