// Reference kernels of the op library (internal to core/op_library.cpp).
//
// Plain loops over the inputs in fp64, the result rounded once to the output dtype;
// they never go through a TensorGraph, so that comparing them with an interpretation
// of the op's graph checks the graph builders. Where an op's definition itself rounds
// (attention casts its probabilities to the input dtype), the reference rounds there
// too. Loops over independent rows run in parallel: verification calls these on
// full-size workloads.
#pragma once

#include <vector>

#include "core/expression.h"
#include "core/host_tensor.h"

namespace pto::reference {

// [..., M, K] x [..., K, N] -> [..., M, N] (operands stored transposed when flagged).
HostTensor matmul(const HostTensor& a, const HostTensor& b, bool transpose_a, bool transpose_b,
                  DType out);
// gelu(a x b + bias), bias [N], exact (erf) gelu, in the inputs' dtype.
HostTensor matmul_bias_gelu(const HostTensor& a, const HostTensor& b, const HostTensor& bias);

HostTensor add(const HostTensor& x, const HostTensor& y);
HostTensor mul(const HostTensor& x, const HostTensor& y);
HostTensor exp(const HostTensor& x);
HostTensor log(const HostTensor& x);
HostTensor sqrt(const HostTensor& x);
HostTensor erfc(const HostTensor& x);
HostTensor gelu(const HostTensor& x);
// The elementwise op: the expression at every element of its inputs (one per
// Expression::inputs entry, all of one shape and dtype), in fp64.
HostTensor elementwise(const Expression& e, const std::vector<HostTensor>& inputs);

// Over the last dim of [R, C] -> [R].
HostTensor sum_last(const HostTensor& x);
HostTensor amax_last(const HostTensor& x);
HostTensor amin_last(const HostTensor& x);
// Row-wise over the last dim; gamma and beta are [C].
HostTensor softmax(const HostTensor& x);
HostTensor layernorm(const HostTensor& x, const HostTensor& gamma, const HostTensor& beta, double eps);
HostTensor rmsnorm(const HostTensor& x, const HostTensor& gamma, double eps);

// q, k, v [B, H, S, D]: softmax(q k^T / sqrt(D), causal bottom-right mask) v.
HostTensor attention(const HostTensor& q, const HostTensor& k, const HostTensor& v, bool causal);

// q [B, H, SQ, D], k and v [B, KVH, SKV, D] (query head h reads KV head h / (H / KVH));
// int8 k and v are first multiplied by their scales [B, KVH, ceil(SKV / 128)], one per
// 128 tokens (null: not quantized). Probabilities round to q's dtype, as attention's.
HostTensor flash_attention(const HostTensor& q, const HostTensor& k, const HostTensor& v, const HostTensor* k_scale,
                           const HostTensor* v_scale, bool causal);

}  // namespace pto::reference
