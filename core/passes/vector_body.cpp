// Builds the UB dataflow of a fused vector group (see vector_body.h).
//
// Every value gets an "ishape": its shape in the iteration space's rank, with 1 where
// it broadcasts. Tensors line up numpy-style (trailing dims), except the result of a
// reduction without keepdim: it keeps the reduced dim as a 1, so a later use that
// lines it up numpy-style would read it along the wrong dim — such a group is
// rejected. dim_map records, per tensor dim, the iteration dim it follows; GM windows
// are cut through it.
#include "core/passes/vector_body.h"

#include <algorithm>

namespace pto::passes {
namespace {

std::vector<int> right_aligned(int tensor_rank, int rank) {
  std::vector<int> map(tensor_rank);
  for (int t = 0; t < tensor_rank; ++t) map[t] = rank - tensor_rank + t;
  return map;
}

// The tensor's shape with broadcast (stride 0) dims as 1, lined up in `rank` dims.
Shape effective_ishape(const GmTensor& t, int rank) {
  Shape out(rank, 1);
  const int r = static_cast<int>(t.shape.size());
  for (int d = 0; d < r; ++d) {
    const bool broadcast = t.alias_of >= 0 && d < static_cast<int>(t.strides.size()) && t.strides[d] == 0;
    out[rank - r + d] = broadcast ? 1 : t.shape[d];
  }
  return out;
}

DimMask mask_of(const Shape& ishape) {
  DimMask m = 0;
  for (size_t d = 0; d < ishape.size(); ++d)
    if (ishape[d] > 1) m |= 1u << d;
  return m;
}

class BodyBuilder {
 public:
  BodyBuilder(const TensorGraph& g, const std::vector<GmTensor>& tensors, const BodyRequest& r)
      : g_(g), tensors_(tensors), req_(r), value_of_(tensors.size(), -1) {}

  std::optional<VectorBody> build(std::string& why) {
    rank_ = req_.iteration ? static_cast<int>(req_.iteration->size()) : widest_rank();
    for (NodeId id : req_.nodes)
      if (!add_node(g_.node(id), why)) return std::nullopt;
    if (!settle_iteration(why)) return std::nullopt;
    finish();
    return std::move(body_);
  }

 private:
  int widest_rank() const {
    size_t r = 0;
    for (NodeId id : req_.nodes) {
      r = std::max(r, g_.node(id).shape.size());
      for (NodeId in : g_.node(id).inputs) r = std::max(r, tensors_[in].shape.size());
    }
    return static_cast<int>(r);
  }

  bool in_group(NodeId id) const {
    return std::find(req_.nodes.begin(), req_.nodes.end(), id) != req_.nodes.end();
  }

  int new_value(ValueKind kind, const GmTensor& t, Shape ishape, std::vector<int> map) {
    VecValue v;
    v.kind = kind;
    v.name = t.name;
    v.dtype = t.dtype;
    body_.values.push_back(v);
    ishapes_.push_back(std::move(ishape));
    maps_.push_back(std::move(map));
    return static_cast<int>(body_.values.size()) - 1;
  }

  // The value an input of a group node reads: a group node's result or a TLOAD.
  int operand(const Node& user, NodeId in, std::string& why) {
    const GmTensor& t = tensors_[in];
    const int rank = static_cast<int>(t.shape.size());
    if (rank > rank_) {
      why = node_label(user) + " reads \"" + t.name + "\" of rank " + std::to_string(rank) +
            ", above the iteration rank " + std::to_string(rank_);
      return -1;
    }
    if (value_of_[in] >= 0) {
      const int v = value_of_[in];
      if (maps_[v] != right_aligned(rank, rank_)) {
        why = node_label(user) + " lines up \"" + t.name + "\" by trailing dims, but it is a reduction "
              "that dropped a dim in the middle";
        return -1;
      }
      return v;
    }
    const int v = new_value(ValueKind::Load, t, effective_ishape(t, rank_), right_aligned(rank, rank_));
    body_.loads.push_back({v, t.id, maps_[v], 0});
    value_of_[in] = v;
    return v;
  }

  bool add_node(const Node& n, std::string& why) {
    if (!is_elementwise(n.kind) && !is_reduction(n.kind)) {
      why = node_label(n) + " is not a vector op";
      return false;
    }
    if (static_cast<int>(n.shape.size()) > rank_) {
      why = node_label(n) + " has rank " + std::to_string(n.shape.size()) + ", above the iteration rank " +
            std::to_string(rank_);
      return false;
    }
    VecStep step;
    for (NodeId in : n.inputs) {
      const int v = operand(n, in, why);
      if (v < 0) return false;
      step.src.push_back(v);
    }
    Shape ishape;
    std::vector<int> map;
    if (is_reduction(n.kind)) {
      const int src = step.src[0];
      const int d = maps_[src][n.dim];
      ishape = ishapes_[src];
      ishape[d] = 1;
      map = maps_[src];
      if (!n.keepdim) map.erase(map.begin() + n.dim);
      step.op = Opcode::TREDUCE;
      step.reduce_dim = d;
      if (ishapes_[src][d] > 1) {
        body_.reduce_dims.push_back(d);
        body_.reduce_nodes.push_back(n.id);
      }
    } else {
      map = right_aligned(static_cast<int>(n.shape.size()), rank_);
      ishape = Shape(rank_, 1);
      for (size_t t = 0; t < n.shape.size(); ++t) ishape[map[t]] = n.shape[t];
    }
    step.vop = n.kind;
    step.scalar = n.scalar;
    step.scalar_first = n.scalar_first;
    const int dst = new_value(ValueKind::Node, tensors_[n.id], ishape, map);
    value_of_[n.id] = dst;
    step.dst = dst;
    if (n.kind == OpKind::CausalMask) {
      step.position = static_cast<int>(body_.positions.size());
      body_.positions.push_back({-1, n.id, map, 0});
    }
    body_.steps.push_back(std::move(step));
    nodes_.push_back(n.id);
    return true;
  }

  // The iteration space: forced, or the widest value; every value must broadcast into it.
  bool settle_iteration(std::string& why) {
    Shape it = req_.iteration ? *req_.iteration : Shape(rank_, 1);
    if (!req_.iteration)
      for (const Shape& s : ishapes_)
        for (int d = 0; d < rank_; ++d) it[d] = std::max(it[d], s[d]);
    for (size_t v = 0; v < ishapes_.size(); ++v)
      for (int d = 0; d < rank_; ++d)
        if (ishapes_[v][d] != 1 && ishapes_[v][d] != it[d]) {
          why = "\"" + body_.values[v].name + "\" " + shape_str(ishapes_[v]) +
                " does not broadcast into the iteration space " + shape_str(it);
          return false;
        }
    body_.iteration = it;
    return true;
  }

  void finish() {
    for (size_t v = 0; v < body_.values.size(); ++v) body_.values[v].mask = mask_of(ishapes_[v]);
    for (GmAccess& a : body_.loads) a.mask = body_.values[a.value].mask;
    for (size_t i = 0; i < body_.steps.size(); ++i) {
      VecStep& s = body_.steps[i];
      const int pos = static_cast<int>(i) + 1;
      body_.values[s.dst].def = body_.values[s.dst].last_use = pos;
      for (int v : s.src) body_.values[v].last_use = pos;
      if (s.position >= 0) body_.positions[s.position].mask = body_.values[s.dst].mask;
    }
    const int end = body_.end_position();
    for (NodeId id : nodes_) {
      if (!req_.stored || !(*req_.stored)[id]) continue;
      const int v = value_of_[id];
      body_.values[v].last_use = end;
      body_.stores.push_back({v, id, maps_[v], body_.values[v].mask});
    }
  }

  const TensorGraph& g_;
  const std::vector<GmTensor>& tensors_;
  const BodyRequest& req_;
  int rank_ = 0;
  VectorBody body_;
  std::vector<int> value_of_;         // per tensor id
  std::vector<Shape> ishapes_;        // per value
  std::vector<std::vector<int>> maps_;  // per value: tensor dim -> iteration dim
  std::vector<NodeId> nodes_;
};

}  // namespace

std::optional<VectorBody> build_vector_body(const TensorGraph& g, const std::vector<GmTensor>& tensors,
                                            const BodyRequest& request, std::string& why) {
  return BodyBuilder(g, tensors, request).build(why);
}

VectorBody build_copy_body(const GmTensor& src, const GmTensor& dst) {
  const int rank = static_cast<int>(dst.shape.size());
  VectorBody b;
  b.iteration = dst.shape;
  const std::vector<int> map = right_aligned(rank, rank);
  const DimMask in_mask = mask_of(effective_ishape(src, rank));
  const DimMask out_mask = mask_of(dst.shape);
  b.values.push_back({ValueKind::Load, src.name, src.dtype, in_mask, 0, 1});
  b.values.push_back({ValueKind::Node, dst.name, dst.dtype, out_mask, 1, 2});
  b.loads.push_back({0, src.id, map, in_mask});
  VecStep cast;
  cast.vop = OpKind::Cast;
  cast.dst = 1;
  cast.src = {0};
  b.steps.push_back(cast);
  b.stores.push_back({1, dst.id, map, out_mask});
  return b;
}

VectorBody build_zero_body(const GmTensor& dst) {
  const int rank = static_cast<int>(dst.shape.size());
  VectorBody b;
  b.iteration = dst.shape;
  const DimMask mask = mask_of(dst.shape);
  b.values.push_back({ValueKind::Fill, dst.name, dst.dtype, mask, 1, 2});
  VecStep fill;
  fill.op = Opcode::TFILL;
  fill.vop = OpKind::Input;  // no graph op: analyze records TFILL work under "input"
  fill.dst = 0;
  fill.scalar = 0.0;
  b.steps.push_back(fill);
  b.stores.push_back({0, dst.id, right_aligned(rank, rank), mask});
  return b;
}

}  // namespace pto::passes
