// TensorGraph queries and dump, and GraphBuilder's shape/dtype inference.
//
// Every check names the node being built as `op "name"` (unnamed nodes are called
// "<op><id>", the name they will carry) and the offending operands with their dtype
// and shape, so that a malformed graph can be fixed from the message alone.
#include "core/tensor_graph.h"

#include <algorithm>
#include <charconv>
#include <cmath>

#include "core/error.h"
#include "core/size_limits.h"

namespace pto {
namespace {

std::string format_scalar(double v) {
  char buf[32];
  auto res = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, res.ptr);
}

// "%3". (Built by appending: GCC 12 warns falsely on "literal" + std::string&&.)
std::string ref(NodeId id) {
  std::string out = "%";
  out += std::to_string(id);
  return out;
}

std::string type_str(const Node& n) { return std::string(dtype_name(n.dtype)) + shape_str(n.shape); }

// "%2 \"x\" fp32[4,3]": an operand as error messages show it.
std::string describe(const Node& n) {
  return ref(n.id) + " \"" + n.name + "\" " + type_str(n);
}

std::string label(const Node& n) { return std::string(op_kind_name(n.kind)) + " \"" + n.name + "\""; }

Node new_node(OpKind kind, const std::string& name, NodeId id) {
  Node n;
  n.id = id;
  n.kind = kind;
  n.name = name.empty() ? op_kind_name(kind) + std::to_string(id) : name;
  return n;
}

// numpy broadcasting of two shapes, or nullopt with the first clashing dim (from the end).
std::optional<Shape> broadcast_shapes(const Shape& a, const Shape& b, int& clash_dim) {
  const size_t rank = std::max(a.size(), b.size());
  Shape out(rank);
  for (size_t i = 0; i < rank; ++i) {  // i counts from the last dim
    const int64_t da = i < a.size() ? a[a.size() - 1 - i] : 1;
    const int64_t db = i < b.size() ? b[b.size() - 1 - i] : 1;
    if (da != db && da != 1 && db != 1) {
      clash_dim = -1 - static_cast<int>(i);
      return std::nullopt;
    }
    out[rank - 1 - i] = std::max(da, db);
  }
  return out;
}

void check_dims_positive(const Node& n, const Shape& shape, const char* what) {
  for (int64_t d : shape)
    if (d <= 0)
      usage_error(label(n) + ": " + what + " " + shape_str(shape) + " has a non-positive size " +
                  std::to_string(d));
}

bool needs_float(OpKind k) {
  switch (k) {
    case OpKind::Div: case OpKind::Exp: case OpKind::Log: case OpKind::Sqrt: case OpKind::Rsqrt:
    case OpKind::Erf: case OpKind::Erfc: case OpKind::Tanh: case OpKind::CausalMask:
      return true;
    default:
      return false;
  }
}

// Arithmetic needs numbers: bool never, integers only where the op is exact on them.
void check_operand_dtype(const Node& n, const Node& operand) {
  if (operand.dtype == DType::Bool || (needs_float(n.kind) && !is_float(operand.dtype)))
    usage_error(label(n) + ": operand " + describe(operand) + " has dtype " +
                dtype_name(operand.dtype) + ", but " + op_kind_name(n.kind) + " needs " +
                (needs_float(n.kind) ? "fp32, fp16 or bf16" : "a numeric dtype"));
}

}  // namespace

const char* op_kind_name(OpKind k) {
  switch (k) {
    case OpKind::Input: return "input";
    case OpKind::Add: return "add";
    case OpKind::Sub: return "sub";
    case OpKind::Mul: return "mul";
    case OpKind::Div: return "div";
    case OpKind::Max: return "max";
    case OpKind::Min: return "min";
    case OpKind::Exp: return "exp";
    case OpKind::Log: return "log";
    case OpKind::Sqrt: return "sqrt";
    case OpKind::Rsqrt: return "rsqrt";
    case OpKind::Erf: return "erf";
    case OpKind::Erfc: return "erfc";
    case OpKind::Tanh: return "tanh";
    case OpKind::Neg: return "neg";
    case OpKind::Abs: return "abs";
    case OpKind::Cast: return "cast";
    case OpKind::CausalMask: return "causal_mask";
    case OpKind::Sum: return "sum";
    case OpKind::Amax: return "amax";
    case OpKind::Amin: return "amin";
    case OpKind::Matmul: return "matmul";
    case OpKind::FlashAttention: return "flash_attention";
    case OpKind::Broadcast: return "broadcast";
    case OpKind::Slice: return "slice";
    case OpKind::Reshape: return "reshape";
  }
  return "unknown";
}

// The ranges follow the grouping of OpKind in tensor_graph.h.
bool is_binary(OpKind k) { return k >= OpKind::Add && k <= OpKind::Min; }
bool is_unary(OpKind k) { return k >= OpKind::Exp && k <= OpKind::CausalMask; }
bool is_elementwise(OpKind k) { return is_binary(k) || is_unary(k); }
bool is_reduction(OpKind k) { return k == OpKind::Sum || k == OpKind::Amax || k == OpKind::Amin; }
bool is_view(OpKind k) {
  return k == OpKind::Broadcast || k == OpKind::Slice || k == OpKind::Reshape;
}

// ---- TensorGraph ----------------------------------------------------------------------

const Node& TensorGraph::node(NodeId id) const {
  if (id < 0 || id >= static_cast<NodeId>(nodes_.size()))
    usage_error("node " + ref(id) + " does not exist (the graph has " +
                std::to_string(nodes_.size()) + " nodes)");
  return nodes_[id];
}

std::vector<NodeId> TensorGraph::compute_nodes() const {
  std::vector<NodeId> out;
  for (const Node& n : nodes_)
    if (n.kind != OpKind::Input && !is_view(n.kind)) out.push_back(n.id);
  return out;
}

std::vector<NodeId> TensorGraph::consumers(NodeId id) const {
  std::vector<NodeId> out;
  for (const Node& n : nodes_)
    if (std::find(n.inputs.begin(), n.inputs.end(), id) != n.inputs.end()) out.push_back(n.id);
  return out;
}

std::string TensorGraph::dump() const {
  std::string out;
  for (const Node& n : nodes_) {
    std::vector<std::string> args;
    for (NodeId in : n.inputs) args.push_back(ref(in));
    if (n.scalar) {
      const std::string s = format_scalar(*n.scalar);
      args.insert(n.scalar_first ? args.begin() : args.end(), s);
    }
    if (is_reduction(n.kind)) {
      args.push_back("dim=" + std::to_string(n.dim));
      if (n.keepdim) args.push_back("keepdim");
    }
    if (n.transpose_a) args.push_back("transpose_a");
    if (n.transpose_b) args.push_back("transpose_b");
    if (n.causal) args.push_back("causal");
    if (n.kind == OpKind::Slice) args.push_back("start=" + shape_str(n.slice_start));

    out += ref(n.id) + " " + op_kind_name(n.kind);
    if (n.kind != OpKind::Input) {
      out += "(";
      for (size_t i = 0; i < args.size(); ++i) out += (i ? ", " : "") + args[i];
      out += ")";
    }
    out += " : " + type_str(n) + "  \"" + n.name + "\"";
    if (std::find(outputs_.begin(), outputs_.end(), n.id) != outputs_.end()) out += "  (output)";
    out += "\n";
  }
  return out;
}

// ---- GraphBuilder ---------------------------------------------------------------------

namespace {

// A tensor too large to count in int64, or larger than any device holds, is a usage
// error naming the limit, before anything sizes a buffer or a loop by it.
void check_tensor_size(const Node& n) {
  const std::optional<int64_t> elements = checked_num_elements(n.shape);
  const std::optional<int64_t> bytes = elements ? checked_mul(*elements, dtype_size(n.dtype)) : std::nullopt;
  if (bytes && *bytes <= kMaxTensorBytes) return;
  usage_error(label(n) + ": " + describe(n) + " is " +
              (bytes ? std::to_string(*bytes) + " bytes" : std::string("more bytes than a 64-bit count holds")) +
              ", over the limit of " + std::to_string(kMaxTensorBytes) + " bytes (1 TiB) per tensor");
}

}  // namespace

NodeId GraphBuilder::push(Node n) {
  check_tensor_size(n);
  g_.nodes_.push_back(std::move(n));
  return g_.nodes_.back().id;
}

const Node& GraphBuilder::at(NodeId id, const char* what) const {
  if (id < 0 || id >= static_cast<NodeId>(g_.nodes_.size()))
    usage_error(std::string(what) + ": operand " + ref(id) +
                " does not exist (the graph has " + std::to_string(g_.nodes_.size()) + " nodes)");
  return g_.nodes_[id];
}

NodeId GraphBuilder::input(const std::string& name, const Shape& shape, DType dtype) {
  Node n = new_node(OpKind::Input, name, static_cast<NodeId>(g_.nodes_.size()));
  check_dims_positive(n, shape, "shape");
  n.shape = shape;
  n.dtype = dtype;
  const NodeId id = push(std::move(n));
  g_.inputs_.push_back(id);
  return id;
}

NodeId GraphBuilder::add(NodeId a, NodeId b, const std::string& name) { return binary(OpKind::Add, a, b, name); }
NodeId GraphBuilder::sub(NodeId a, NodeId b, const std::string& name) { return binary(OpKind::Sub, a, b, name); }
NodeId GraphBuilder::mul(NodeId a, NodeId b, const std::string& name) { return binary(OpKind::Mul, a, b, name); }
NodeId GraphBuilder::div(NodeId a, NodeId b, const std::string& name) { return binary(OpKind::Div, a, b, name); }
NodeId GraphBuilder::max(NodeId a, NodeId b, const std::string& name) { return binary(OpKind::Max, a, b, name); }
NodeId GraphBuilder::min(NodeId a, NodeId b, const std::string& name) { return binary(OpKind::Min, a, b, name); }

NodeId GraphBuilder::binary(OpKind kind, NodeId a, NodeId b, const std::string& name) {
  Node n = new_node(kind, name, static_cast<NodeId>(g_.nodes_.size()));
  if (!is_binary(kind)) usage_error(label(n) + ": " + op_kind_name(kind) + " is not a binary op");
  const Node& x = at(a, label(n).c_str());
  const Node& y = at(b, label(n).c_str());
  check_operand_dtype(n, x);
  if (x.dtype != y.dtype)
    usage_error(label(n) + ": operands have different dtypes: " + describe(x) + " and " +
                describe(y) + " (cast one of them)");
  int clash = 0;
  const std::optional<Shape> shape = broadcast_shapes(x.shape, y.shape, clash);
  if (!shape)
    usage_error(label(n) + ": shapes of " + describe(x) + " and " + describe(y) +
                " do not broadcast (dim " + std::to_string(clash) + ")");
  n.inputs = {a, b};
  n.shape = *shape;
  n.dtype = x.dtype;
  return push(std::move(n));
}

NodeId GraphBuilder::binary_scalar(OpKind kind, NodeId x, double s, bool scalar_first,
                                   const std::string& name) {
  Node n = new_node(kind, name, static_cast<NodeId>(g_.nodes_.size()));
  if (!is_binary(kind)) usage_error(label(n) + ": " + op_kind_name(kind) + " is not a binary op");
  const Node& operand = at(x, label(n).c_str());
  check_operand_dtype(n, operand);
  if (!is_float(operand.dtype) && s != std::nearbyint(s))
    usage_error(label(n) + ": scalar " + format_scalar(s) + " is not an integer, but operand " +
                describe(operand) + " is");
  n.inputs = {x};
  n.shape = operand.shape;
  n.dtype = operand.dtype;
  n.scalar = s;
  n.scalar_first = scalar_first;
  return push(std::move(n));
}

NodeId GraphBuilder::unary(OpKind kind, NodeId x, const std::string& name) {
  if (kind == OpKind::CausalMask) return causal_mask(x, name);
  Node n = new_node(kind, name, static_cast<NodeId>(g_.nodes_.size()));
  if (kind == OpKind::Cast) usage_error(label(n) + ": use cast() to give the target dtype");
  if (!is_unary(kind)) usage_error(label(n) + ": " + op_kind_name(kind) + " is not a unary op");
  const Node& operand = at(x, label(n).c_str());
  check_operand_dtype(n, operand);
  n.inputs = {x};
  n.shape = operand.shape;
  n.dtype = operand.dtype;
  return push(std::move(n));
}

NodeId GraphBuilder::cast(NodeId x, DType to, const std::string& name) {
  Node n = new_node(OpKind::Cast, name, static_cast<NodeId>(g_.nodes_.size()));
  const Node& operand = at(x, label(n).c_str());
  n.inputs = {x};
  n.shape = operand.shape;
  n.dtype = to;
  return push(std::move(n));
}

NodeId GraphBuilder::causal_mask(NodeId x, const std::string& name) {
  Node n = new_node(OpKind::CausalMask, name, static_cast<NodeId>(g_.nodes_.size()));
  const Node& operand = at(x, label(n).c_str());
  check_operand_dtype(n, operand);
  if (operand.shape.size() < 2)
    usage_error(label(n) + ": operand " + describe(operand) + " has rank " +
                std::to_string(operand.shape.size()) + ", but the mask needs rows and columns (rank >= 2)");
  n.inputs = {x};
  n.shape = operand.shape;
  n.dtype = operand.dtype;
  return push(std::move(n));
}

NodeId GraphBuilder::reduce(OpKind kind, NodeId x, int dim, bool keepdim, const std::string& name) {
  Node n = new_node(kind, name, static_cast<NodeId>(g_.nodes_.size()));
  if (!is_reduction(kind)) usage_error(label(n) + ": " + op_kind_name(kind) + " is not a reduction");
  const Node& operand = at(x, label(n).c_str());
  check_operand_dtype(n, operand);
  const int rank = static_cast<int>(operand.shape.size());
  if (dim < -rank || dim >= rank)
    usage_error(label(n) + ": dim " + std::to_string(dim) + " is out of range for " +
                describe(operand) + " (rank " + std::to_string(rank) + ")");
  n.dim = dim < 0 ? dim + rank : dim;
  n.keepdim = keepdim;
  n.inputs = {x};
  n.shape = operand.shape;
  if (keepdim)
    n.shape[n.dim] = 1;
  else
    n.shape.erase(n.shape.begin() + n.dim);
  n.dtype = operand.dtype;
  return push(std::move(n));
}

NodeId GraphBuilder::flash_attention(NodeId q, NodeId k, NodeId v, NodeId k_scale, NodeId v_scale, bool causal,
                                     double scale, const std::string& name) {
  Node n = new_node(OpKind::FlashAttention, name, static_cast<NodeId>(g_.nodes_.size()));
  const std::string who = label(n);
  const Node& x = at(q, who.c_str());
  const Node& kk = at(k, who.c_str());
  const Node& vv = at(v, who.c_str());
  if (x.shape.size() != 4 || kk.shape.size() != 4 || vv.shape.size() != 4)
    usage_error(who + ": q " + describe(x) + ", k " + describe(kk) + " and v " + describe(vv) +
                " must be [B,H,S,D] (rank 4)");
  if (kk.shape != vv.shape || kk.dtype != vv.dtype)
    usage_error(who + ": k " + describe(kk) + " and v " + describe(vv) + " differ");
  if (kk.shape[0] != x.shape[0] || kk.shape[3] != x.shape[3])
    usage_error(who + ": batch or head dim of k " + describe(kk) + " differs from q " + describe(x));
  if (x.shape[1] % kk.shape[1] != 0)
    usage_error(who + ": q has " + std::to_string(x.shape[1]) + " heads, not a multiple of k's " +
                std::to_string(kk.shape[1]));
  if (!is_float(x.dtype)) usage_error(who + ": q " + describe(x) + " must be fp32, fp16 or bf16");
  const bool quantized = kk.dtype == DType::I8;
  if (!quantized && kk.dtype != x.dtype)
    usage_error(who + ": k and v are " + dtype_name(kk.dtype) + "; they take q's dtype " + dtype_name(x.dtype) +
                " or int8");
  n.inputs = {q, k, v};
  if (quantized != (k_scale >= 0 && v_scale >= 0))
    usage_error(who + (quantized ? ": int8 k and v need their scales" : ": scales are for int8 k and v only"));
  if (quantized) {
    const Shape scales = {kk.shape[0], kk.shape[1], ceil_div(kk.shape[2], kKvQuantBlock)};
    for (NodeId s : {k_scale, v_scale}) {
      const Node& sc = at(s, who.c_str());
      if (sc.shape != scales || sc.dtype != DType::F32)
        usage_error(who + ": scale " + describe(sc) + " must be fp32" + shape_str(scales) + " (one per " +
                    std::to_string(kKvQuantBlock) + " tokens)");
    }
    n.inputs.push_back(k_scale);
    n.inputs.push_back(v_scale);
  }
  n.shape = x.shape;
  n.dtype = x.dtype;
  n.causal = causal;
  n.scalar = scale;
  return push(std::move(n));
}

NodeId GraphBuilder::matmul(NodeId a, NodeId b, bool transpose_a, bool transpose_b,
                            std::optional<DType> out_dtype, const std::string& name) {
  Node n = new_node(OpKind::Matmul, name, static_cast<NodeId>(g_.nodes_.size()));
  const Node& x = at(a, label(n).c_str());
  const Node& y = at(b, label(n).c_str());
  const size_t rank = x.shape.size();
  if (rank < 2 || y.shape.size() < 2)
    usage_error(label(n) + ": operands " + describe(x) + " and " + describe(y) +
                " must have rank >= 2");
  if (y.shape.size() != rank || !std::equal(x.shape.begin(), x.shape.end() - 2, y.shape.begin()))
    usage_error(label(n) + ": batch dims of " + describe(x) + " and " + describe(y) + " differ");
  if (x.dtype != y.dtype)
    usage_error(label(n) + ": operands have different dtypes: " + describe(x) + " and " + describe(y));
  if (!is_float(x.dtype) && x.dtype != DType::I8)
    usage_error(label(n) + ": operand " + describe(x) + " has dtype " + dtype_name(x.dtype) +
                ", but the Cube takes fp32, fp16, bf16 or int8");

  const int64_t m = transpose_a ? x.shape[rank - 1] : x.shape[rank - 2];
  const int64_t ka = transpose_a ? x.shape[rank - 2] : x.shape[rank - 1];
  const int64_t kb = transpose_b ? y.shape[rank - 1] : y.shape[rank - 2];
  const int64_t nn = transpose_b ? y.shape[rank - 2] : y.shape[rank - 1];
  if (ka != kb)
    usage_error(label(n) + ": contraction sizes differ: K=" + std::to_string(ka) + " of " +
                describe(x) + (transpose_a ? " (transposed)" : "") + " vs K=" + std::to_string(kb) +
                " of " + describe(y) + (transpose_b ? " (transposed)" : ""));

  const DType natural = x.dtype == DType::I8 ? DType::I32 : x.dtype;
  const DType out = out_dtype.value_or(natural);
  if (is_float(x.dtype) != is_float(out) || (x.dtype == DType::I8 && out != DType::I32))
    usage_error(label(n) + ": output dtype " + dtype_name(out) + " does not fit " +
                dtype_name(x.dtype) + " inputs (" +
                (x.dtype == DType::I8 ? "int8 accumulates into int32" : "expected fp32, fp16 or bf16") + ")");

  n.inputs = {a, b};
  n.shape = Shape(x.shape.begin(), x.shape.end() - 2);
  n.shape.push_back(m);
  n.shape.push_back(nn);
  n.dtype = out;
  n.transpose_a = transpose_a;
  n.transpose_b = transpose_b;
  return push(std::move(n));
}

NodeId GraphBuilder::broadcast(NodeId x, const Shape& shape, const std::string& name) {
  Node n = new_node(OpKind::Broadcast, name, static_cast<NodeId>(g_.nodes_.size()));
  const Node& operand = at(x, label(n).c_str());
  check_dims_positive(n, shape, "target shape");
  int clash = 0;
  const std::optional<Shape> joint = broadcast_shapes(operand.shape, shape, clash);
  if (!joint || *joint != shape)
    usage_error(label(n) + ": " + describe(operand) + " does not broadcast to " + shape_str(shape));
  n.inputs = {x};
  n.shape = shape;
  n.dtype = operand.dtype;
  return push(std::move(n));
}

NodeId GraphBuilder::slice(NodeId x, const Shape& start, const Shape& size, const std::string& name) {
  Node n = new_node(OpKind::Slice, name, static_cast<NodeId>(g_.nodes_.size()));
  const Node& operand = at(x, label(n).c_str());
  if (start.size() != operand.shape.size() || size.size() != operand.shape.size())
    usage_error(label(n) + ": start " + shape_str(start) + " and size " + shape_str(size) +
                " must have one entry per dim of " + describe(operand));
  for (size_t d = 0; d < start.size(); ++d)
    if (start[d] < 0 || size[d] <= 0 || start[d] + size[d] > operand.shape[d])
      usage_error(label(n) + ": dim " + std::to_string(d) + " window [" + std::to_string(start[d]) +
                  ", " + std::to_string(start[d] + size[d]) + ") is out of range for " + describe(operand));
  n.inputs = {x};
  n.shape = size;
  n.dtype = operand.dtype;
  n.slice_start = start;
  return push(std::move(n));
}

NodeId GraphBuilder::reshape(NodeId x, const Shape& shape, const std::string& name) {
  Node n = new_node(OpKind::Reshape, name, static_cast<NodeId>(g_.nodes_.size()));
  const Node& operand = at(x, label(n).c_str());
  check_dims_positive(n, shape, "target shape");
  if (checked_num_elements(shape) != checked_num_elements(operand.shape))
    usage_error(label(n) + ": " + describe(operand) + " has " +
                std::to_string(num_elements(operand.shape)) + " elements, target shape " +
                shape_str(shape) + " has " + std::to_string(num_elements(shape)));
  n.inputs = {x};
  n.shape = shape;
  n.dtype = operand.dtype;
  return push(std::move(n));
}

void GraphBuilder::mark_output(NodeId id) {
  const Node& n = at(id, "mark_output");
  if (n.kind == OpKind::Input)
    usage_error("mark_output: " + describe(n) + " is a graph input; an output must be computed");
  if (std::find(g_.outputs_.begin(), g_.outputs_.end(), id) != g_.outputs_.end())
    usage_error("mark_output: " + describe(n) + " is already an output");
  g_.outputs_.push_back(id);
}

TensorGraph GraphBuilder::build() {
  if (g_.outputs_.empty())
    usage_error("build: the graph has no outputs (mark one with mark_output)");
  TensorGraph out = std::move(g_);
  g_ = TensorGraph{};
  return out;
}

}  // namespace pto
