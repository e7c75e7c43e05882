// The op library: graph builders, hand-picked configs and the registry.
//
// Map of this file: graph fragments shared by several ops (gelu, softmax, the fp32
// widening of fp16/bf16 math) come first, then one builder per op, then the
// hand-picked configs (shared/ascend-facts.md, "What users hand-pick today"), then the
// registry that ties each op to its reference in core/reference_kernels.cpp, and last
// the workload checks and random inputs.
//
// fp16/bf16 ops that chain several vector steps compute in fp32 and cast back at the
// end, as PyPTO users write them: rounding each step to 16 bits would lose several ulps.
#include "core/op_library.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "core/error.h"
#include "core/join.h"
#include "core/shown_value.h"
#include "core/expression.h"
#include "core/reference_kernels.h"

namespace pto {
namespace {

constexpr double kLayernormEps = 1e-5;
constexpr double kRmsnormEps = 1e-6;

bool flag(const Workload& w, const std::string& name) {
  const auto it = w.attrs.find(name);
  return it != w.attrs.end() && it->second != 0;
}

// ---- Graph fragments --------------------------------------------------------------------

NodeId widen(GraphBuilder& b, NodeId x, DType t, const std::string& name) {
  return t == DType::F32 ? x : b.cast(x, DType::F32, name);
}

NodeId narrow(GraphBuilder& b, NodeId x, DType t, const std::string& name) {
  return t == DType::F32 ? x : b.cast(x, t, name);
}

// 0.5 * x * (1 + erf(x / sqrt(2))).
NodeId gelu_of(GraphBuilder& b, NodeId x) {
  const NodeId scaled = b.binary_scalar(OpKind::Mul, x, 1 / std::numbers::sqrt2, false, "x_over_sqrt2");
  const NodeId erf = b.unary(OpKind::Erf, scaled, "erf");
  const NodeId one_plus = b.binary_scalar(OpKind::Add, erf, 1.0, false, "one_plus_erf");
  const NodeId product = b.mul(x, one_plus, "x_one_plus_erf");
  return b.binary_scalar(OpKind::Mul, product, 0.5, false, "gelu");
}

// Over the last dim: exp(x - max) / sum.
NodeId softmax_of(GraphBuilder& b, NodeId x) {
  const NodeId peak = b.amax(x, -1, true, "row_max");
  const NodeId exps = b.exp(b.sub(x, peak, "shifted"), "exps");
  const NodeId total = b.sum(exps, -1, true, "row_sum");
  return b.div(exps, total, "softmax");
}

// sum over the last dim (keepdim) / cols.
NodeId row_mean(GraphBuilder& b, NodeId x, int64_t cols, const std::string& name) {
  return b.binary_scalar(OpKind::Mul, b.sum(x, -1, true, name + "_sum"), 1.0 / static_cast<double>(cols),
                         false, name);
}

TensorGraph finish(GraphBuilder& b, NodeId output) {
  b.mark_output(output);
  return b.build();
}

// ---- Builders ---------------------------------------------------------------------------

// [batch..., M, K] x [batch..., K, N], each operand stored transposed when flagged.
TensorGraph build_matmul_over(const Workload& w, const Shape& batch) {
  const int64_t m = w.shape[batch.size()], k = w.shape[batch.size() + 1], n = w.shape[batch.size() + 2];
  const bool ta = flag(w, "transpose_a"), tb = flag(w, "transpose_b");
  auto stored = [&](int64_t rows, int64_t cols, bool transposed) {
    Shape s = batch;
    s.push_back(transposed ? cols : rows);
    s.push_back(transposed ? rows : cols);
    return s;
  };
  GraphBuilder b;
  const NodeId a = b.input("a", stored(m, k, ta), w.dtype);
  const NodeId bm = b.input("b", stored(k, n, tb), w.dtype);
  return finish(b, b.matmul(a, bm, ta, tb, std::nullopt, "y"));
}

TensorGraph build_matmul(const Workload& w) { return build_matmul_over(w, {}); }
TensorGraph build_batch_matmul(const Workload& w) { return build_matmul_over(w, {w.shape[0]}); }

TensorGraph build_matmul_bias_gelu(const Workload& w) {
  const int64_t m = w.shape[0], k = w.shape[1], n = w.shape[2];
  GraphBuilder b;
  const NodeId a = b.input("a", {m, k}, w.dtype);
  const NodeId bm = b.input("b", {k, n}, w.dtype);
  const NodeId bias = b.input("bias", {n}, w.dtype);
  // The epilogue works on the fp32 accumulator, as a fused Cube kernel does.
  const NodeId acc = b.matmul(a, bm, false, false, DType::F32, "acc");
  const NodeId biased = b.add(acc, widen(b, bias, w.dtype, "bias_f32"), "biased");
  return finish(b, narrow(b, gelu_of(b, biased), w.dtype, "y"));
}

TensorGraph build_binary(const Workload& w, OpKind kind) {
  GraphBuilder b;
  const NodeId x = b.input("x", w.shape, w.dtype);
  const NodeId y = b.input("y", w.shape, w.dtype);
  return finish(b, b.binary(kind, x, y, "z"));
}
TensorGraph build_add(const Workload& w) { return build_binary(w, OpKind::Add); }
TensorGraph build_mul(const Workload& w) { return build_binary(w, OpKind::Mul); }

TensorGraph build_unary(const Workload& w, OpKind kind) {
  GraphBuilder b;
  return finish(b, b.unary(kind, b.input("x", w.shape, w.dtype), "y"));
}
TensorGraph build_erfc(const Workload& w) { return build_unary(w, OpKind::Erfc); }
TensorGraph build_exp(const Workload& w) { return build_unary(w, OpKind::Exp); }
TensorGraph build_log(const Workload& w) { return build_unary(w, OpKind::Log); }
TensorGraph build_sqrt(const Workload& w) { return build_unary(w, OpKind::Sqrt); }

TensorGraph build_gelu(const Workload& w) {
  GraphBuilder b;
  const NodeId x = widen(b, b.input("x", w.shape, w.dtype), w.dtype, "x_f32");
  return finish(b, narrow(b, gelu_of(b, x), w.dtype, "y"));
}

// The expression's tensors are inputs of the workload's shape, widened to fp32 for the
// chain (as gelu's), each call one node, the result narrowed back once.
TensorGraph build_elementwise(const Workload& w) {
  const Expression e = parse_expression(w.expr);
  GraphBuilder b;
  std::vector<NodeId> inputs, widened;
  for (const std::string& name : e.inputs) inputs.push_back(b.input(name, w.shape, w.dtype));
  for (size_t i = 0; i < inputs.size(); ++i) widened.push_back(widen(b, inputs[i], w.dtype, e.inputs[i] + "_f32"));
  return finish(b, narrow(b, build_expression(b, e, widened), w.dtype, "out"));
}

TensorGraph build_reduce_last(const Workload& w, OpKind kind) {
  GraphBuilder b;
  return finish(b, b.reduce(kind, b.input("x", w.shape, w.dtype), -1, false, "y"));
}
TensorGraph build_sum(const Workload& w) { return build_reduce_last(w, OpKind::Sum); }
TensorGraph build_amax(const Workload& w) { return build_reduce_last(w, OpKind::Amax); }
TensorGraph build_amin(const Workload& w) { return build_reduce_last(w, OpKind::Amin); }

TensorGraph build_softmax(const Workload& w) {
  GraphBuilder b;
  const NodeId x = widen(b, b.input("x", w.shape, w.dtype), w.dtype, "x_f32");
  return finish(b, narrow(b, softmax_of(b, x), w.dtype, "y"));
}

TensorGraph build_layernorm(const Workload& w) {
  const int64_t cols = w.shape[1];
  GraphBuilder b;
  const NodeId x = widen(b, b.input("x", w.shape, w.dtype), w.dtype, "x_f32");
  const NodeId gamma = widen(b, b.input("gamma", {cols}, w.dtype), w.dtype, "gamma_f32");
  const NodeId beta = widen(b, b.input("beta", {cols}, w.dtype), w.dtype, "beta_f32");
  const NodeId centred = b.sub(x, row_mean(b, x, cols, "mean"), "centred");
  const NodeId var = row_mean(b, b.mul(centred, centred, "squares"), cols, "var");
  const NodeId inv_std = b.unary(OpKind::Rsqrt, b.binary_scalar(OpKind::Add, var, kLayernormEps, false, "var_eps"),
                                 "inv_std");
  const NodeId scaled = b.mul(b.mul(centred, inv_std, "normed"), gamma, "scaled");
  return finish(b, narrow(b, b.add(scaled, beta, "shifted"), w.dtype, "y"));
}

TensorGraph build_rmsnorm(const Workload& w) {
  const int64_t cols = w.shape[1];
  GraphBuilder b;
  const NodeId x = widen(b, b.input("x", w.shape, w.dtype), w.dtype, "x_f32");
  const NodeId gamma = widen(b, b.input("gamma", {cols}, w.dtype), w.dtype, "gamma_f32");
  const NodeId mean_square = row_mean(b, b.mul(x, x, "squares"), cols, "mean_square");
  const NodeId inv_rms = b.unary(OpKind::Rsqrt, b.binary_scalar(OpKind::Add, mean_square, kRmsnormEps, false, "ms_eps"),
                                 "inv_rms");
  const NodeId scaled = b.mul(b.mul(x, inv_rms, "normed"), gamma, "scaled");
  return finish(b, narrow(b, scaled, w.dtype, "y"));
}

// flash_attention's K/V heads and element type (attributes kv_heads, kv_dtype).
int64_t kv_heads_of(const Workload& w) { return w.attr("kv_heads", w.shape[1]); }
DType kv_dtype_of(const Workload& w) { return static_cast<DType>(w.attr("kv_dtype", static_cast<int64_t>(w.dtype))); }

TensorGraph build_flash_attention(const Workload& w) {
  const int64_t batch = w.shape[0], heads = w.shape[1], sq = w.shape[2], skv = w.shape[3], dim = w.shape[4];
  const int64_t kv_heads = kv_heads_of(w);
  const DType kv = kv_dtype_of(w);
  GraphBuilder b;
  const NodeId q = b.input("q", {batch, heads, sq, dim}, w.dtype);
  const NodeId k = b.input("k", {batch, kv_heads, skv, dim}, kv);
  const NodeId v = b.input("v", {batch, kv_heads, skv, dim}, kv);
  NodeId k_scale = -1, v_scale = -1;
  if (kv == DType::I8) {
    const Shape scales = {batch, kv_heads, ceil_div(skv, kKvQuantBlock)};
    k_scale = b.input("k_scale", scales, DType::F32);
    v_scale = b.input("v_scale", scales, DType::F32);
  }
  return finish(b, b.flash_attention(q, k, v, k_scale, v_scale, flag(w, "causal"),
                                     1 / std::sqrt(static_cast<double>(dim)), "out"));
}

void check_flash_attention_attrs(const Workload& w) {
  const int64_t causal = w.attr("causal"), kv_heads = kv_heads_of(w);
  if (causal != 0 && causal != 1)
    usage_error("flash_attention: attribute causal=" + std::to_string(causal) + " must be 0 or 1");
  if (kv_heads < 1 || w.shape[1] % kv_heads != 0)
    usage_error("flash_attention: attribute kv_heads=" + std::to_string(kv_heads) + " must divide H=" +
                std::to_string(w.shape[1]) + " (grouped-query attention; kv_heads=1: multi-query)");
  if (causal && w.shape[3] < w.shape[2])
    usage_error("flash_attention: causal needs SKV >= SQ (got SQ=" + std::to_string(w.shape[2]) + ", SKV=" +
                std::to_string(w.shape[3]) + "): the first query rows would see no key");
  const int64_t kv = w.attr("kv_dtype", static_cast<int64_t>(w.dtype));
  if (kv != static_cast<int64_t>(w.dtype) && kv != static_cast<int64_t>(DType::I8))
    usage_error("flash_attention: attribute kv_dtype=" +
                (kv >= 0 && kv <= static_cast<int64_t>(DType::Bool) ? std::string(dtype_name(static_cast<DType>(kv)))
                                                                    : std::to_string(kv)) +
                " must be the workload's dtype " + dtype_name(w.dtype) + " or int8 (with one fp32 scale per " +
                std::to_string(kKvQuantBlock) + " tokens)");
}

TensorGraph build_attention(const Workload& w) {
  const int64_t head_dim = w.shape[3];
  GraphBuilder b;
  const NodeId q = b.input("q", w.shape, w.dtype);
  const NodeId k = b.input("k", w.shape, w.dtype);
  const NodeId v = b.input("v", w.shape, w.dtype);
  const NodeId scores = b.matmul(q, k, false, true, DType::F32, "scores");
  NodeId logits = b.binary_scalar(OpKind::Mul, scores, 1 / std::sqrt(static_cast<double>(head_dim)), false, "scaled");
  if (flag(w, "causal")) logits = b.causal_mask(logits, "masked");
  const NodeId probs = narrow(b, softmax_of(b, logits), w.dtype, "probs");
  return finish(b, b.matmul(probs, v, false, false, std::nullopt, "out"));
}

// ---- Hand-picked configs ----------------------------------------------------------------

// flash_attention's buffer depth and QK preload are its kernel's (pto-isa flash_atten:
// ping-pong L1 tiles, qkPreloadNum 4); every other op leaves the depth to the compiler,
// as PyPTO, which has no buffer-depth setter, does.
constexpr int kAttentionBuffers = 2;
constexpr int kAttentionPreload = 4;
constexpr int64_t kVecBlockBytes = 32 * 1024;  // vector blocks are computed in fp32
Shape elementwise_vec() { return {64, 512}; }  // the guide's starting point

CubeTile cube_tile(int64_t m, int64_t k0, int64_t k1, int64_t n) {
  CubeTile c;
  c.mL0 = c.mL1 = m;
  c.kL0 = k0;
  c.kAL1 = c.kBL1 = k1;
  c.k_short_form = true;
  c.nL0 = c.nL1 = n;
  return c;
}

// The matmul guide's tiles per input dtype; a small M (decode) takes the whole M.
TileConfig matmul_hand_picked(DType dtype, int64_t m) {
  CubeTile c = dtype == DType::F32  ? cube_tile(128, 64, 256, 128)
               : dtype == DType::I8 ? cube_tile(128, 128, 512, 256)
                                    : cube_tile(128, 64, 256, 256);
  if (m <= 128) c.mL0 = c.mL1 = align_up(m, 16);
  TileConfig t;
  t.cube = c;
  return t;
}

// Rows of a block that keeps the reduced last dim whole: the most (a power of two) that fit.
int64_t rows_per_block(int64_t cols) {
  int64_t rows = 1;
  while (2 * rows * cols * 4 <= kVecBlockBytes) rows *= 2;
  return rows;
}

TileConfig vec_config(const Shape& vec) {
  TileConfig t;
  t.vec = vec;
  return t;
}

TileConfig elementwise_hand_picked(const Workload&) { return vec_config(elementwise_vec()); }
TileConfig row_hand_picked(const Workload& w) {
  return vec_config({rows_per_block(w.shape[1]), w.shape[1]});
}

// PyPTO's flash attention samples keep a tile set per stage (c1/v1/c2/v2); these are the
// Q and KV blocks of the published PTO kernel (hw-native-sys/pto-isa flash_atten: CUBE_S0
// 128, TILE_S1 256) with each vector core owning half the rows in slices of 16.
TileConfig flash_attention_hand_picked(const Workload&) {
  TileConfig t;
  t.attention = AttentionTiles{128, 256, 1, TaskOrder::Bhq, kAttentionPreload};
  CubeTile c1 = cube_tile(128, 64, 128, 128);  // S = Q K^T: M the Q rows, K the head dim
  c1.nL1 = 256;                                 // N the KV block, in L0 sub-tiles of 128
  const CubeTile c2 = cube_tile(128, 128, 256, 128);  // O = P V: K the KV block, N the head dim
  t.stages["c1"].cube = c1;
  t.stages["v1"].vec = Shape{16, 256};
  t.stages["c2"].cube = c2;
  t.stages["v2"].vec = Shape{16, 128};
  t.nbuffer = kAttentionBuffers;
  return t;
}

TileConfig attention_hand_picked(const Workload& w) {
  const int64_t seq = w.shape[2];
  TileConfig t = vec_config({1, 1, rows_per_block(seq), seq});
  t.cube = cube_tile(64, 64, 64, 64);
  return t;
}

// ---- Registry ---------------------------------------------------------------------------

using Inputs = std::vector<HostTensor>;
using Outputs = std::vector<HostTensor>;

std::vector<OpDef> make_library() {
  const std::vector<DType> float_types = {DType::F16, DType::BF16, DType::F32};
  const std::vector<DType> matmul_types = {DType::F16, DType::BF16, DType::F32, DType::I8};
  auto matmul_ref = [](const Workload& w, const Inputs& in) -> Outputs {
    const DType out = w.dtype == DType::I8 ? DType::I32 : w.dtype;
    return {reference::matmul(in[0], in[1], flag(w, "transpose_a"), flag(w, "transpose_b"), out)};
  };
  auto matmul_pick = [](const Workload& w) { return matmul_hand_picked(w.dtype, w.shape[w.shape.size() - 3]); };
  const std::vector<DType> every_type = {DType::F16, DType::BF16, DType::F32, DType::I32, DType::I8};
  // [R, C] elementwise ops, y = f(x) or z = f(x, y), and reductions over C.
  using Unary = HostTensor (*)(const HostTensor&);
  using Binary = HostTensor (*)(const HostTensor&, const HostTensor&);
  auto unary = [&](const char* name, const char* summary, TensorGraph (*build)(const Workload&), Unary ref) {
    return OpDef{name, {"R", "C"}, summary, {}, float_types, build,
                 [ref](const Workload&, const Inputs& in) -> Outputs { return {ref(in[0])}; }, elementwise_hand_picked};
  };
  auto binary = [&](const char* name, const char* summary, TensorGraph (*build)(const Workload&), Binary ref) {
    return OpDef{name, {"R", "C"}, summary, {}, every_type, build,
                 [ref](const Workload&, const Inputs& in) -> Outputs { return {ref(in[0], in[1])}; },
                 elementwise_hand_picked};
  };
  auto row_reduce = [&](const char* name, const char* summary, std::vector<DType> types,
                        TensorGraph (*build)(const Workload&), Unary ref) {
    return OpDef{name, {"R", "C"}, summary, {}, std::move(types), build,
                 [ref](const Workload&, const Inputs& in) -> Outputs { return {ref(in[0])}; }, row_hand_picked};
  };
  return {
      {"matmul", {"M", "K", "N"}, "C[M,N] = A[M,K] x B[K,N] (Cube, fp32 accumulation)",
       {"transpose_a", "transpose_b"}, matmul_types, build_matmul, matmul_ref, matmul_pick},
      {"batch_matmul", {"B", "M", "K", "N"}, "C[B,M,N] = A[B,M,K] x B[B,K,N]",
       {"transpose_a", "transpose_b"}, matmul_types, build_batch_matmul, matmul_ref, matmul_pick},
      {"matmul_bias_gelu", {"M", "K", "N"}, "gelu(A[M,K] x B[K,N] + bias[N]), erf gelu, fp32 epilogue",
       {}, float_types, build_matmul_bias_gelu,
       [](const Workload&, const Inputs& in) -> Outputs { return {reference::matmul_bias_gelu(in[0], in[1], in[2])}; },
       [](const Workload& w) {
         TileConfig t = matmul_hand_picked(w.dtype, w.shape[0]);
         t.vec = elementwise_vec();
         return t;
       }},
      binary("add", "z = x + y", build_add, reference::add),
      binary("mul", "z = x * y", build_mul, reference::mul),
      unary("exp", "y = exp(x)", build_exp, reference::exp),
      unary("log", "y = log(x), x > 0", build_log, reference::log),
      unary("sqrt", "y = sqrt(x), x >= 0", build_sqrt, reference::sqrt),
      unary("erfc", "y = erfc(x)", build_erfc, reference::erfc),
      unary("gelu", "y = 0.5 x (1 + erf(x / sqrt 2)), in fp32", build_gelu, reference::gelu),
      {"elementwise", {"R", "C"}, "a fused chain of vector ops given by --expr, e.g. 'mul(add(a,b),2.0)', in fp32",
       {}, float_types, build_elementwise,
       [](const Workload& w, const Inputs& in) -> Outputs {
         return {reference::elementwise(parse_expression(w.expr), in)};
       },
       elementwise_hand_picked, nullptr, true},
      row_reduce("sum", "y[R] = sum of x[R,C] over C", {DType::F16, DType::BF16, DType::F32, DType::I32}, build_sum,
                 reference::sum_last),
      row_reduce("amax", "y[R] = max of x[R,C] over C", every_type, build_amax, reference::amax_last),
      row_reduce("amin", "y[R] = min of x[R,C] over C", every_type, build_amin, reference::amin_last),
      {"softmax", {"R", "C"}, "softmax over C: exp(x - max) / sum, in fp32", {}, float_types, build_softmax,
       [](const Workload&, const Inputs& in) -> Outputs { return {reference::softmax(in[0])}; },
       row_hand_picked},
      {"layernorm", {"R", "C"}, "(x - mean) / sqrt(var + 1e-5) * gamma[C] + beta[C] over C, in fp32", {},
       float_types, build_layernorm,
       [](const Workload&, const Inputs& in) -> Outputs {
         return {reference::layernorm(in[0], in[1], in[2], kLayernormEps)};
       },
       row_hand_picked},
      {"rmsnorm", {"R", "C"}, "x / sqrt(mean(x^2) + 1e-6) * gamma[C] over C, in fp32", {}, float_types,
       build_rmsnorm,
       [](const Workload&, const Inputs& in) -> Outputs { return {reference::rmsnorm(in[0], in[1], kRmsnormEps)}; },
       row_hand_picked},
      {"attention", {"B", "H", "S", "D"}, "softmax(q k^T / sqrt(D)) v, fp32 scores and softmax", {"causal"},
       float_types, build_attention,
       [](const Workload& w, const Inputs& in) -> Outputs {
         return {reference::attention(in[0], in[1], in[2], flag(w, "causal"))};
       },
       attention_hand_picked},
      {"flash_attention", {"B", "H", "SQ", "SKV", "D"},
       "attention fused: a loop over KV blocks, online softmax; GQA (kv_heads), int8 KV (kv_dtype)",
       {"causal", "kv_heads", "kv_dtype"}, float_types, build_flash_attention,
       [](const Workload& w, const Inputs& in) -> Outputs {
         const bool quantized = in.size() == 5;
         return {reference::flash_attention(in[0], in[1], in[2], quantized ? &in[3] : nullptr,
                                            quantized ? &in[4] : nullptr, flag(w, "causal"))};
       },
       flash_attention_hand_picked, check_flash_attention_attrs},
  };
}

// ---- Workload checks ----------------------------------------------------------------------

void check_workload(const OpDef& op, const Workload& w) {
  if (w.shape.size() != op.dims.size())
    usage_error(op.name + ": shape " + shape_str(w.shape) + " has " + std::to_string(w.shape.size()) +
                " sizes, expected " + std::to_string(op.dims.size()) + " (" + join(op.dims) + ")");
  for (size_t i = 0; i < w.shape.size(); ++i)
    if (w.shape[i] <= 0)
      usage_error(op.name + ": " + op.dims[i] + "=" + std::to_string(w.shape[i]) + " must be positive");
  if (std::find(op.dtypes.begin(), op.dtypes.end(), w.dtype) == op.dtypes.end()) {
    std::vector<std::string> names;
    for (DType t : op.dtypes) names.push_back(dtype_name(t));
    usage_error(op.name + ": dtype " + dtype_name(w.dtype) + " is not supported (supported: " + join(names) + ")");
  }
  for (const auto& [name, value] : w.attrs) {
    if (std::find(op.attrs.begin(), op.attrs.end(), name) == op.attrs.end())
      usage_error(op.name + ": unknown attribute '" + name + "' (accepted: " +
                  (op.attrs.empty() ? "none" : join(op.attrs)) + ")");
    if (!op.check_attrs && value != 0 && value != 1)
      usage_error(op.name + ": attribute " + name + "=" + std::to_string(value) + " must be 0 or 1");
  }
  if (op.check_attrs) op.check_attrs(w);
  if (!op.takes_expr && !w.expr.empty())
    usage_error(op.name + ": takes no expression (--expr is the elementwise op's), got " + shown_value(w.expr));
  if (op.takes_expr && w.expr.empty())
    usage_error(op.name + ": needs an expression, e.g. --expr 'mul(add(a,b),2.0)' (pto_tune: expr=...)");
  if (op.takes_expr && canonical_expression(w.expr) != w.expr)
    usage_error(op.name + ": expression " + shown_value(w.expr) + " is not in its canonical form " +
                shown_value(canonical_expression(w.expr)) + " (what keys hold; Workload::parse_key and the CLI write it)");
}

// The reference takes what the graph takes: same count, shapes and dtypes.
void check_reference_inputs(const OpDef& op, const Workload& w, const Inputs& inputs) {
  const TensorGraph g = op.build(w);
  if (inputs.size() != g.inputs().size())
    usage_error(op.name + " reference: got " + std::to_string(inputs.size()) + " inputs, expected " +
                std::to_string(g.inputs().size()));
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Node& n = g.node(g.inputs()[i]);
    if (inputs[i].shape() != n.shape || inputs[i].dtype() != n.dtype)
      usage_error(op.name + " reference: input " + std::to_string(i) + " (\"" + n.name + "\") is " +
                  dtype_name(inputs[i].dtype()) + shape_str(inputs[i].shape()) + ", expected " +
                  dtype_name(n.dtype) + shape_str(n.shape));
  }
}

// Every entry point of an op checks the workload against its signature first.
OpDef with_checks(const OpDef& op) {
  OpDef checked = op;
  checked.build = [op](const Workload& w) {
    check_workload(op, w);
    return op.build(w);
  };
  checked.reference = [op](const Workload& w, const Inputs& in) {
    check_workload(op, w);
    check_reference_inputs(op, w, in);
    return op.reference(w, in);
  };
  checked.hand_picked = [op](const Workload& w) {
    check_workload(op, w);
    return op.hand_picked(w);
  };
  return checked;
}

// Whether an input only makes sense positive: it reaches (unchanged by views and casts)
// a log, sqrt, rsqrt or a divisor.
bool needs_positive(const TensorGraph& g, NodeId id) {
  for (NodeId c : g.consumers(id)) {
    const Node& n = g.node(c);
    if (is_view(n.kind) || n.kind == OpKind::Cast) {
      if (needs_positive(g, c)) return true;
    } else if (n.kind == OpKind::Log || n.kind == OpKind::Sqrt || n.kind == OpKind::Rsqrt) {
      return true;
    } else if (n.kind == OpKind::Div && (n.scalar ? n.scalar_first : n.inputs[1] == id)) {
      return true;
    }
  }
  return false;
}

// Decorrelates the per-input streams of one seed (splitmix64 finaliser).
uint64_t mix(uint64_t seed, uint64_t index) {
  uint64_t z = seed + 0x9e3779b97f4a7c15ull * (index + 1);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

}  // namespace

const std::vector<OpDef>& op_library() {
  static const std::vector<OpDef> library = [] {
    std::vector<OpDef> ops;
    for (const OpDef& op : make_library()) ops.push_back(with_checks(op));
    return ops;
  }();
  return library;
}

const OpDef& find_op(const std::string& name) {
  std::vector<std::string> known;
  for (const OpDef& op : op_library()) {
    if (op.name == name) return op;
    known.push_back(op.name);
  }
  usage_error("unknown op " + shown_value(name) + " (known: " + join(known) + ")");
}

TensorGraph build_graph(const Workload& w) { return find_op(w.op).build(w); }

std::vector<HostTensor> random_inputs(const TensorGraph& g, uint64_t seed) {
  std::vector<HostTensor> out;
  for (size_t i = 0; i < g.inputs().size(); ++i) {
    const Node& n = g.node(g.inputs()[i]);
    const uint64_t stream = mix(seed, i);
    if (n.dtype == DType::Bool)
      out.push_back(HostTensor::random(n.shape, n.dtype, stream, 0, 2));
    else if (!is_float(n.dtype))  // small integers: sums and products stay exact in int32
      out.push_back(HostTensor::random(n.shape, n.dtype, stream, -4, 4));
    else if (needs_positive(g, n.id))
      out.push_back(HostTensor::random(n.shape, n.dtype, stream, 0.5, 2.0));
    else
      out.push_back(HostTensor::random(n.shape, n.dtype, stream, -1.0, 1.0));
  }
  return out;
}

}  // namespace pto
