// Part of pass 2: the GM tensors of a graph (see gm_tensors.h).
#include "core/passes/gm_tensors.h"

#include <algorithm>

namespace pto::passes {
namespace {

bool is_contiguous(const Shape& shape, const Shape& strides) {
  int64_t expected = 1;
  for (int d = static_cast<int>(shape.size()) - 1; d >= 0; --d) {
    if (shape[d] == 1) continue;
    if (strides[d] != expected) return false;
    expected *= shape[d];
  }
  return true;
}

class TensorTable {
 public:
  explicit TensorTable(const TensorGraph& g) : g_(g) {
    result.tensors.resize(g.nodes().size());
    for (const Node& n : g.nodes()) add_node(n);
  }
  GmTensors result;

 private:
  int index_of(const std::vector<NodeId>& ids, NodeId id) const {
    const auto it = std::find(ids.begin(), ids.end(), id);
    return it == ids.end() ? -1 : static_cast<int>(it - ids.begin());
  }

  void own(GmTensor& t) {
    t.alias_of = -1;
    t.elem_offset = 0;
    t.strides = contiguous_strides(t.shape);
  }

  // A new owning tensor with src's contents, filled by a copy kernel.
  int materialise(int src, const std::string& name, NodeId anchor) {
    GmTensor t;
    t.id = static_cast<int>(result.tensors.size());
    t.name = name;
    t.node = anchor;
    t.dtype = result.tensors[src].dtype;
    t.shape = result.tensors[src].shape;
    own(t);
    result.tensors.push_back(t);
    result.copies.push_back({src, t.id, anchor});
    return t.id;
  }

  void alias_view(const Node& n, GmTensor& t) {
    const GmTensor base = result.tensors[n.inputs[0]];  // a copy: materialise() may grow the table
    int root = base.alias_of < 0 ? base.id : base.alias_of;
    int64_t offset = base.alias_of < 0 ? 0 : base.elem_offset;
    Shape strides = base.alias_of < 0 ? contiguous_strides(base.shape) : base.strides;
    if (n.kind == OpKind::Broadcast) {
      const int out_rank = static_cast<int>(n.shape.size()), in_rank = static_cast<int>(base.shape.size());
      Shape s(out_rank, 0);
      for (int d = 0; d < out_rank; ++d) {
        const int src = d - (out_rank - in_rank);
        if (src >= 0 && base.shape[src] == n.shape[d]) s[d] = strides[src];
      }
      strides = s;
    } else if (n.kind == OpKind::Slice) {
      for (size_t d = 0; d < n.slice_start.size(); ++d) offset += n.slice_start[d] * strides[d];
    } else {  // Reshape
      if (!is_contiguous(base.shape, strides)) {
        root = materialise(base.id, n.name + ".src", n.id);
        offset = 0;
      }
      strides = contiguous_strides(n.shape);
    }
    t.alias_of = root;
    t.elem_offset = offset;
    t.strides = strides;
  }

  void add_node(const Node& n) {
    GmTensor t;
    t.id = n.id;
    t.name = n.name;
    t.node = n.id;
    t.dtype = n.dtype;
    t.shape = n.shape;
    own(t);
    const int input_index = index_of(g_.inputs(), n.id);
    const int output_index = index_of(g_.outputs(), n.id);
    if (input_index >= 0) {
      t.role = TensorRole::Input;
      t.io_index = input_index;
    }
    if (is_view(n.kind)) alias_view(n, t);
    result.tensors[n.id] = t;
    if (output_index < 0) return;
    if (!is_view(n.kind)) {
      result.tensors[n.id].role = TensorRole::Output;
      result.tensors[n.id].io_index = output_index;
      return;
    }
    // An output must own its storage: the view is copied into it.
    result.tensors[n.id].name = n.name + ".view";
    const int owner = materialise(n.id, n.name, n.id);
    result.tensors[owner].role = TensorRole::Output;
    result.tensors[owner].io_index = output_index;
  }

  const TensorGraph& g_;
};

}  // namespace

GmTensors gm_tensors(const TensorGraph& g) { return std::move(TensorTable(g).result); }

}  // namespace pto::passes
