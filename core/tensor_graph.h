// The Tensor Graph: what the user's operator computes, before any tiling.
//
// Nodes are kept in topological order (a node only reads nodes created before it),
// carry their inferred shape and dtype, and keep the name the user gave them so that
// every later dump can be traced back. GraphBuilder is the construction API; it infers
// shapes as nodes are added and throws a usage Error naming the node and the values
// when a graph is malformed (shape mismatch, wrong dtype, bad dim).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/shape.h"

namespace pto {

using NodeId = int;

enum class OpKind {
  Input,
  // Elementwise binary, numpy broadcasting; or tensor-scalar when Node::scalar is set.
  Add, Sub, Mul, Div, Max, Min,
  // Elementwise unary.
  Exp, Log, Sqrt, Rsqrt, Erf, Erfc, Tanh, Neg, Abs, Cast,
  // Sets elements with column > row + (cols - rows) of the last two dims to -inf
  // (a causal attention mask aligned to the bottom-right corner).
  CausalMask,
  // Reductions over one dim.
  Sum, Amax, Amin,
  Matmul,
  // softmax(q k^T * scale [causal]) v over q [B,H,SQ,D], k and v [B,KVH,SKV,D] (H a
  // multiple of KVH: grouped-query attention), fused: the score matrix never exists whole.
  // int8 k and v carry one fp32 scale per kKvQuantBlock tokens ([B,KVH,ceil(SKV/128)]),
  // inputs 3 and 4, dequantized before the matmuls.
  FlashAttention,
  // Views: no computation, only a different window onto another node's data.
  Broadcast, Slice, Reshape,
};

const char* op_kind_name(OpKind k);   // "add", "exp", "matmul", ...
bool is_elementwise(OpKind k);        // binary, unary, cast, causal_mask
bool is_binary(OpKind k);
bool is_unary(OpKind k);              // includes Cast and CausalMask
bool is_reduction(OpKind k);
bool is_view(OpKind k);

struct Node {
  NodeId id = -1;
  OpKind kind = OpKind::Input;
  std::string name;
  std::vector<NodeId> inputs;
  Shape shape;
  DType dtype = DType::F32;

  // Tensor-scalar form of a binary op: `x op scalar`, or `scalar op x` if scalar_first.
  std::optional<double> scalar;
  bool scalar_first = false;
  // Reductions: the reduced dim (non-negative after construction) and keepdim.
  int dim = -1;
  bool keepdim = false;
  // Matmul: operand transposes (of the last two dims).
  bool transpose_a = false;
  bool transpose_b = false;
  // Slice: start offset per dim (the node's shape is the slice extent).
  Shape slice_start;
  // FlashAttention: the causal mask (bottom-right aligned, as CausalMask); the softmax
  // scale is `scalar`.
  bool causal = false;
};

// Tokens of K/V that share one fp32 dequantization scale in an int8 KV cache.
constexpr int64_t kKvQuantBlock = 128;

class TensorGraph {
 public:
  const std::vector<Node>& nodes() const { return nodes_; }
  const Node& node(NodeId id) const;
  const std::vector<NodeId>& inputs() const { return inputs_; }
  const std::vector<NodeId>& outputs() const { return outputs_; }
  // Nodes that do computation (not inputs, not views), in topological order.
  std::vector<NodeId> compute_nodes() const;
  // Nodes that read `id` directly.
  std::vector<NodeId> consumers(NodeId id) const;
  // Readable text form, one node per line: "%3 exp(%2) : fp32[128,256]  \"e\"".
  std::string dump() const;

 private:
  friend class GraphBuilder;
  std::vector<Node> nodes_;
  std::vector<NodeId> inputs_;
  std::vector<NodeId> outputs_;
};

// Builds a TensorGraph node by node, inferring and checking shapes. Every method
// takes an optional name; unnamed nodes get "<op><id>".
class GraphBuilder {
 public:
  NodeId input(const std::string& name, const Shape& shape, DType dtype);

  NodeId add(NodeId a, NodeId b, const std::string& name = "");
  NodeId sub(NodeId a, NodeId b, const std::string& name = "");
  NodeId mul(NodeId a, NodeId b, const std::string& name = "");
  NodeId div(NodeId a, NodeId b, const std::string& name = "");
  NodeId max(NodeId a, NodeId b, const std::string& name = "");
  NodeId min(NodeId a, NodeId b, const std::string& name = "");
  NodeId binary(OpKind kind, NodeId a, NodeId b, const std::string& name = "");
  // x op s (or s op x when scalar_first, for sub/div).
  NodeId binary_scalar(OpKind kind, NodeId x, double s, bool scalar_first = false,
                       const std::string& name = "");

  NodeId unary(OpKind kind, NodeId x, const std::string& name = "");
  NodeId exp(NodeId x, const std::string& name = "") { return unary(OpKind::Exp, x, name); }
  NodeId cast(NodeId x, DType to, const std::string& name = "");
  NodeId causal_mask(NodeId x, const std::string& name = "");

  NodeId reduce(OpKind kind, NodeId x, int dim, bool keepdim, const std::string& name = "");
  NodeId sum(NodeId x, int dim, bool keepdim, const std::string& name = "") {
    return reduce(OpKind::Sum, x, dim, keepdim, name);
  }
  NodeId amax(NodeId x, int dim, bool keepdim, const std::string& name = "") {
    return reduce(OpKind::Amax, x, dim, keepdim, name);
  }

  // [..., M, K] x [..., K, N] -> [..., M, N]; batch dims must match. out_dtype
  // defaults to the input dtype.
  NodeId matmul(NodeId a, NodeId b, bool transpose_a = false, bool transpose_b = false,
                std::optional<DType> out_dtype = std::nullopt, const std::string& name = "");

  // q [B,H,SQ,D], k and v [B,KVH,SKV,D] of q's dtype, or int8 with fp32 scales
  // [B,KVH,ceil(SKV/kKvQuantBlock)] (k_scale, v_scale; -1 without); out [B,H,SQ,D], q's dtype.
  NodeId flash_attention(NodeId q, NodeId k, NodeId v, NodeId k_scale, NodeId v_scale, bool causal, double scale,
                         const std::string& name = "");

  NodeId broadcast(NodeId x, const Shape& shape, const std::string& name = "");
  NodeId slice(NodeId x, const Shape& start, const Shape& size, const std::string& name = "");
  NodeId reshape(NodeId x, const Shape& shape, const std::string& name = "");

  void mark_output(NodeId id);
  // Hands over the graph; requires at least one output.
  TensorGraph build();

 private:
  NodeId push(Node n);
  const Node& at(NodeId id, const char* what) const;
  TensorGraph g_;
};

}  // namespace pto
