// Test helper: an fp64 interpreter of a TensorGraph.
//
// Each node is computed in fp64 from its operands' stored values and then stored in
// its own dtype (HostTensor::set rounds), which is exactly what the graph means, with
// no tiling and no fusion. Tests check the op library's references, the compiler and
// the CPU runtime against it. Slow by design (element by element): for test shapes.
#pragma once

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/host_tensor.h"
#include "core/tensor_graph.h"

namespace pto::testing {
namespace graph_eval_detail {

// Visits every multi-index of `shape` in row-major order, with its flat index.
template <typename F>
void for_each_index(const Shape& shape, F f) {
  const int64_t total = num_elements(shape);
  Shape idx(shape.size(), 0);
  for (int64_t flat = 0; flat < total; ++flat) {
    f(idx, flat);
    for (int d = static_cast<int>(shape.size()) - 1; d >= 0; --d) {
      if (++idx[d] < shape[d]) break;
      idx[d] = 0;
    }
  }
}

// Flat index into `from` of an index of a shape that `from` broadcasts to (numpy rules).
inline int64_t broadcast_flat(const Shape& idx, const Shape& from) {
  const size_t lead = idx.size() - from.size();
  int64_t flat = 0;
  for (size_t d = 0; d < from.size(); ++d) flat = flat * from[d] + (from[d] == 1 ? 0 : idx[lead + d]);
  return flat;
}

inline int64_t flat_of(const Shape& idx, const Shape& shape) {
  int64_t flat = 0;
  for (size_t d = 0; d < shape.size(); ++d) flat = flat * shape[d] + idx[d];
  return flat;
}

inline double apply_binary(OpKind k, double a, double b) {
  switch (k) {
    case OpKind::Add: return a + b;
    case OpKind::Sub: return a - b;
    case OpKind::Mul: return a * b;
    case OpKind::Div: return a / b;
    case OpKind::Max: return a > b ? a : b;
    case OpKind::Min: return a < b ? a : b;
    default: internal_error(std::string("graph_eval: not binary: ") + op_kind_name(k));
  }
}

inline double apply_unary(OpKind k, double x) {
  switch (k) {
    case OpKind::Exp: return std::exp(x);
    case OpKind::Log: return std::log(x);
    case OpKind::Sqrt: return std::sqrt(x);
    case OpKind::Rsqrt: return 1 / std::sqrt(x);
    case OpKind::Erf: return std::erf(x);
    case OpKind::Erfc: return std::erfc(x);
    case OpKind::Tanh: return std::tanh(x);
    case OpKind::Neg: return -x;
    case OpKind::Abs: return std::abs(x);
    case OpKind::Cast: return x;  // the store into the node's dtype converts
    default: internal_error(std::string("graph_eval: not unary: ") + op_kind_name(k));
  }
}

// softmax(scale q k^T, causal bottom-right) v per query head, straight from the
// definition (no online softmax): KV head h / (H / KVH); int8 K/V times their block scales.
inline HostTensor eval_flash_attention(const Node& n, const std::vector<const HostTensor*>& in) {
  const HostTensor &q = *in[0], &k = *in[1], &v = *in[2];
  const bool quantized = in.size() == 5;
  const int64_t heads = q.shape()[1], sq = q.shape()[2], d = q.shape()[3];
  const int64_t kv_heads = k.shape()[1], skv = k.shape()[2];
  auto kv = [&](const HostTensor& t, int scale_input, int64_t b, int64_t kh, int64_t s, int64_t j) {
    const double x = t.get(((b * kv_heads + kh) * skv + s) * d + j);
    if (!quantized) return x;
    const HostTensor& sc = *in[scale_input];
    return x * sc.get((b * kv_heads + kh) * sc.shape()[2] + s / kKvQuantBlock);
  };
  HostTensor out(n.shape, n.dtype);
  std::vector<double> p(skv);
  for (int64_t b = 0; b < q.shape()[0]; ++b)
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t i = 0; i < sq; ++i) {
        const int64_t kh = h / (heads / kv_heads), row = (b * heads + h) * sq + i;
        const int64_t visible = n.causal ? std::min(skv, i + 1 + (skv - sq)) : skv;
        double top = -std::numeric_limits<double>::infinity(), sum = 0;
        for (int64_t s = 0; s < visible; ++s) {
          double dot = 0;
          for (int64_t j = 0; j < d; ++j) dot += q.get(row * d + j) * kv(k, 3, b, kh, s, j);
          p[s] = dot * *n.scalar;
          top = std::max(top, p[s]);
        }
        for (int64_t s = 0; s < visible; ++s) sum += p[s] = std::exp(p[s] - top);
        for (int64_t j = 0; j < d; ++j) {
          double acc = 0;
          for (int64_t s = 0; s < visible; ++s) acc += p[s] * kv(v, 4, b, kh, s, j);
          out.set(row * d + j, visible > 0 ? acc / sum : 0.0);
        }
      }
  return out;
}

inline HostTensor eval_node(const Node& n, const std::vector<const HostTensor*>& in) {
  HostTensor out(n.shape, n.dtype);
  const HostTensor& x = *in[0];
  switch (n.kind) {
    case OpKind::Matmul: {
      const HostTensor& y = *in[1];
      const size_t r = n.shape.size();
      const int64_t k = n.transpose_a ? x.shape()[r - 2] : x.shape()[r - 1];
      for_each_index(n.shape, [&](const Shape& idx, int64_t flat) {
        Shape ia = idx, ib = idx;
        double acc = 0;
        for (int64_t p = 0; p < k; ++p) {
          ia[r - 2] = n.transpose_a ? p : idx[r - 2];
          ia[r - 1] = n.transpose_a ? idx[r - 2] : p;
          ib[r - 2] = n.transpose_b ? idx[r - 1] : p;
          ib[r - 1] = n.transpose_b ? p : idx[r - 1];
          acc += x.get(flat_of(ia, x.shape())) * y.get(flat_of(ib, y.shape()));
        }
        out.set(flat, acc);
      });
      return out;
    }
    case OpKind::Sum: case OpKind::Amax: case OpKind::Amin: {
      const int64_t len = x.shape()[n.dim];
      for_each_index(n.shape, [&](const Shape& idx, int64_t flat) {
        Shape ix = idx;
        if (!n.keepdim) ix.insert(ix.begin() + n.dim, 0);
        double acc = n.kind == OpKind::Sum ? 0 : x.get(flat_of(ix, x.shape()));
        for (int64_t p = 0; p < len; ++p) {
          ix[n.dim] = p;
          const double v = x.get(flat_of(ix, x.shape()));
          acc = n.kind == OpKind::Sum ? acc + v : apply_binary(n.kind == OpKind::Amax ? OpKind::Max : OpKind::Min, acc, v);
        }
        out.set(flat, acc);
      });
      return out;
    }
    case OpKind::CausalMask: {
      const size_t r = n.shape.size();
      const int64_t rows = n.shape[r - 2], cols = n.shape[r - 1];
      for_each_index(n.shape, [&](const Shape& idx, int64_t flat) {
        const bool masked = idx[r - 1] > idx[r - 2] + (cols - rows);
        out.set(flat, masked ? -std::numeric_limits<double>::infinity() : x.get(flat));
      });
      return out;
    }
    case OpKind::Slice:
      for_each_index(n.shape, [&](const Shape& idx, int64_t flat) {
        Shape ix = idx;
        for (size_t d = 0; d < ix.size(); ++d) ix[d] += n.slice_start[d];
        out.set(flat, x.get(flat_of(ix, x.shape())));
      });
      return out;
    case OpKind::Reshape:
      for (int64_t i = 0; i < out.size(); ++i) out.set(i, x.get(i));
      return out;
    case OpKind::FlashAttention:
      return eval_flash_attention(n, in);
    case OpKind::Broadcast:
      for_each_index(n.shape, [&](const Shape& idx, int64_t flat) { out.set(flat, x.get(broadcast_flat(idx, x.shape()))); });
      return out;
    default:
      break;
  }
  if (is_binary(n.kind)) {
    for_each_index(n.shape, [&](const Shape& idx, int64_t flat) {
      const double a = x.get(broadcast_flat(idx, x.shape()));
      if (n.scalar)
        out.set(flat, n.scalar_first ? apply_binary(n.kind, *n.scalar, a) : apply_binary(n.kind, a, *n.scalar));
      else
        out.set(flat, apply_binary(n.kind, a, in[1]->get(broadcast_flat(idx, in[1]->shape()))));
    });
    return out;
  }
  for (int64_t i = 0; i < out.size(); ++i) out.set(i, apply_unary(n.kind, x.get(i)));
  return out;
}

}  // namespace graph_eval_detail

// The value of every node (index = NodeId), given the graph inputs in order.
inline std::vector<HostTensor> eval_all_nodes(const TensorGraph& g, const std::vector<HostTensor>& inputs) {
  if (inputs.size() != g.inputs().size())
    usage_error("eval_graph: " + std::to_string(inputs.size()) + " inputs for a graph of " +
                std::to_string(g.inputs().size()));
  std::vector<HostTensor> values(g.nodes().size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Node& n = g.node(g.inputs()[i]);
    if (inputs[i].shape() != n.shape || inputs[i].dtype() != n.dtype)
      usage_error("eval_graph: input \"" + n.name + "\" expects " + dtype_name(n.dtype) + shape_str(n.shape));
    values[n.id] = inputs[i];
  }
  for (const Node& n : g.nodes()) {
    if (n.kind == OpKind::Input) continue;
    std::vector<const HostTensor*> operands;
    for (NodeId id : n.inputs) operands.push_back(&values[id]);
    values[n.id] = graph_eval_detail::eval_node(n, operands);
  }
  return values;
}

// The graph's outputs, in order.
inline std::vector<HostTensor> eval_graph(const TensorGraph& g, const std::vector<HostTensor>& inputs) {
  std::vector<HostTensor> all = eval_all_nodes(g, inputs);
  std::vector<HostTensor> out;
  for (NodeId id : g.outputs()) out.push_back(all[id]);
  return out;
}

}  // namespace pto::testing
