// Pass 2, fusion partition (see fusion_partition.h).
//
// Map: gm_tensors() (gm_tensors.h) turns every graph node into a GM tensor; GraphFacts
// answers reachability for the convexity rule; Grouper produces the node groups (the
// default, or the config's validated); then each group becomes a KernelSpec, each view
// copy a Copy kernel, and the kernels are put in dependency order.
#include "core/passes/fusion_partition.h"

#include <algorithm>
#include <queue>
#include <set>

#include "core/error.h"
#include "core/passes/gm_tensors.h"
#include "core/passes/vector_body.h"

namespace pto::passes {
namespace {

// ---- Graph facts ----------------------------------------------------------------------

struct GraphFacts {
  explicit GraphFacts(const TensorGraph& g) : g(g), n(static_cast<int>(g.nodes().size())) {
    consumers.resize(n);
    for (const Node& node : g.nodes())
      for (NodeId in : node.inputs)
        if (consumers[in].empty() || consumers[in].back() != node.id) consumers[in].push_back(node.id);
    reach.assign(n, std::vector<char>(n, 0));
    for (int a = n - 1; a >= 0; --a)
      for (NodeId c : consumers[a]) {
        reach[a][c] = 1;
        for (int x = 0; x < n; ++x) reach[a][x] |= reach[c][x];
      }
    is_output.assign(n, false);
    for (NodeId o : g.outputs()) is_output[o] = true;
  }

  bool is_compute(NodeId id) const {
    const OpKind k = g.node(id).kind;
    return k != OpKind::Input && !is_view(k);
  }

  bool reached_from(const std::vector<NodeId>& group, NodeId x) const {
    return std::any_of(group.begin(), group.end(), [&](NodeId s) { return reach[s][x] != 0; });
  }

  // A node outside the group on a path that leaves it and comes back, or -1.
  NodeId convexity_witness(const std::vector<NodeId>& group) const {
    for (NodeId x = 0; x < n; ++x) {
      if (std::find(group.begin(), group.end(), x) != group.end() || !reached_from(group, x)) continue;
      if (std::any_of(group.begin(), group.end(), [&](NodeId s) { return reach[x][s] != 0; })) return x;
    }
    return -1;
  }

  const TensorGraph& g;
  int n;
  std::vector<std::vector<NodeId>> consumers;
  std::vector<std::vector<char>> reach;  // reach[a][b]: a path leads from a to b
  std::vector<bool> is_output;
};

std::string group_label(size_t index, const std::vector<NodeId>& group) {
  std::string ids;
  for (NodeId id : group) {
    if (!ids.empty()) ids += ',';
    ids += std::to_string(id);
  }
  return "fusion group " + std::to_string(index) + " [" + ids + "]";
}

// ---- Groups ---------------------------------------------------------------------------

class Grouper {
 public:
  Grouper(const TensorGraph& g, const GraphFacts& f, const std::vector<GmTensor>& t, bool cv_fusion)
      : g_(g), f_(f), t_(t), cv_fusion_(cv_fusion) {}

  // Does the group's vector part (all but a leading matmul) share one iteration space?
  bool body_fits(const std::vector<NodeId>& group, std::string& why) const {
    BodyRequest req;
    const Node& first = g_.node(group.front());
    const bool cube = first.kind == OpKind::Matmul;
    req.nodes.assign(group.begin() + (cube ? 1 : 0), group.end());
    if (cube) req.iteration = first.shape;
    if (req.nodes.empty()) return true;
    return build_vector_body(g_, t_, req, why).has_value();
  }

  std::vector<std::vector<NodeId>> default_groups() const {
    std::vector<std::vector<NodeId>> groups;
    std::vector<char> assigned(g_.nodes().size(), 0);
    int open = -1;  // the vector group new vector nodes may join
    for (NodeId id : g_.compute_nodes()) {
      if (assigned[id]) continue;
      assigned[id] = 1;
      if (g_.node(id).kind == OpKind::Matmul) {
        groups.push_back(cv_fusion_ ? with_epilogue(id, assigned) : std::vector<NodeId>{id});
        continue;
      }
      if (g_.node(id).kind == OpKind::FlashAttention) {
        groups.push_back({id});  // a kernel of its own, and no vector node joins it
        open = -1;
        continue;
      }
      if (open >= 0 && joins(groups[open], id)) {
        groups[open].push_back(id);
        continue;
      }
      groups.push_back({id});
      open = static_cast<int>(groups.size()) - 1;
    }
    return groups;
  }

  std::vector<std::vector<NodeId>> validate(const std::vector<std::vector<int>>& fusion) const {
    std::vector<int> group_of(g_.nodes().size(), -1);
    std::vector<std::vector<NodeId>> groups;
    for (size_t gi = 0; gi < fusion.size(); ++gi) {
      std::vector<NodeId> group(fusion[gi].begin(), fusion[gi].end());
      std::sort(group.begin(), group.end());
      if (group.empty()) usage_error("fusion group " + std::to_string(gi) + " is empty");
      for (NodeId id : group) {
        if (id < 0 || id >= static_cast<NodeId>(g_.nodes().size()))
          usage_error(group_label(gi, group) + ": node " + std::to_string(id) + " does not exist (the graph has " +
                      std::to_string(g_.nodes().size()) + " nodes)");
        if (!f_.is_compute(id))
          usage_error(group_label(gi, group) + ": " + node_label(g_.node(id)) + " is " +
                      (g_.node(id).kind == OpKind::Input ? "an input" : "a view") + ", not a compute node");
        if (group_of[id] >= 0)
          usage_error("fusion: " + node_label(g_.node(id)) + " is in groups " + std::to_string(group_of[id]) + " and " +
                      std::to_string(gi));
        group_of[id] = static_cast<int>(gi);
      }
      check_group(gi, group);
      groups.push_back(std::move(group));
    }
    for (NodeId id : g_.compute_nodes())
      if (group_of[id] < 0) usage_error("fusion: " + node_label(g_.node(id)) + " is in no group");
    return groups;
  }

 private:
  std::vector<NodeId> with_epilogue(NodeId mm, std::vector<char>& assigned) const {
    std::vector<NodeId> group = {mm};
    const Node& m = g_.node(mm);
    for (NodeId id : g_.compute_nodes()) {
      if (id <= mm || assigned[id]) continue;
      const Node& c = g_.node(id);
      if (!is_elementwise(c.kind) || c.shape != m.shape) continue;
      bool reads_group = false, convex = true;
      for (NodeId in : c.inputs) {
        const bool inside = std::find(group.begin(), group.end(), in) != group.end();
        reads_group |= inside;
        convex &= inside || !f_.reach[mm][in];
      }
      if (!reads_group || !convex) continue;
      group.push_back(id);
      std::string why;
      if (body_fits(group, why)) {
        assigned[id] = 1;
      } else {
        group.pop_back();
      }
    }
    return group;
  }

  bool joins(const std::vector<NodeId>& group, NodeId id) const {
    for (NodeId in : g_.node(id).inputs)
      if (std::find(group.begin(), group.end(), in) == group.end() && f_.reached_from(group, in)) return false;
    std::vector<NodeId> grown = group;
    grown.push_back(id);
    std::string why;
    return body_fits(grown, why);
  }

  void check_group(size_t gi, const std::vector<NodeId>& group) const {
    for (NodeId id : group)
      if (g_.node(id).kind == OpKind::FlashAttention && group.size() > 1)
        usage_error(group_label(gi, group) + ": " + node_label(g_.node(id)) +
                    " is a fused kernel of its own; it shares its group with no other node");
    if (group.size() == 1 && g_.node(group.front()).kind == OpKind::FlashAttention) return;
    std::vector<NodeId> matmuls;
    for (NodeId id : group)
      if (g_.node(id).kind == OpKind::Matmul) matmuls.push_back(id);
    if (matmuls.size() > 1)
      usage_error(group_label(gi, group) + ": has " + std::to_string(matmuls.size()) +
                  " matmuls; a kernel runs at most one");
    if (!matmuls.empty() && group.size() > 1 && !cv_fusion_)
      usage_error(group_label(gi, group) + ": fuses matmul " + node_label(g_.node(matmuls[0])) +
                  " with vector ops, but on this target a kernel holds Cube or Vector work, not both (PyPTO's "
                  "sg_set_scope takes no Cube+Vector scope on A2/A3: docs/zh/api/config/pypto-set_pass_options.md)");
    if (!matmuls.empty()) {
      if (matmuls[0] != group.front())
        usage_error(group_label(gi, group) + ": matmul " + node_label(g_.node(matmuls[0])) +
                    " must be the group's first node (its epilogue follows it)");
      for (NodeId id : group) {
        if (id == group.front()) continue;
        const Node& n = g_.node(id);
        const bool reads_group = std::any_of(n.inputs.begin(), n.inputs.end(), [&](NodeId in) {
          return std::find(group.begin(), group.end(), in) != group.end();
        });
        if (!reads_group)
          usage_error(group_label(gi, group) + ": " + node_label(n) + " does not consume the matmul's result, so it "
                      "cannot be in its epilogue");
      }
    }
    const NodeId witness = f_.convexity_witness(group);
    if (witness >= 0)
      usage_error(group_label(gi, group) + ": is not convex: " + node_label(g_.node(witness)) +
                  " depends on the group and feeds it");
    std::string why;
    if (!body_fits(group, why)) usage_error(group_label(gi, group) + ": " + why);
  }

  const TensorGraph& g_;
  const GraphFacts& f_;
  const std::vector<GmTensor>& t_;
  bool cv_fusion_;
};

// ---- Kernels --------------------------------------------------------------------------

std::string kernel_name(const TensorGraph& g, const std::vector<NodeId>& group) {
  std::string name = g.node(group.front()).name;
  if (group.size() > 1) name += ".." + g.node(group.back()).name;
  return name;
}

// A contiguous view of tensor `base` with another shape (a reshape that needs no copy),
// or with stride 0 everywhere (a position operand that never reads).
int add_view(std::vector<GmTensor>& tensors, int base, const std::string& name, const Shape& shape, bool broadcast) {
  GmTensor t;
  t.id = static_cast<int>(tensors.size());
  t.name = name;
  t.node = tensors[base].node;
  t.dtype = tensors[base].dtype;
  t.shape = shape;
  t.alias_of = base;
  t.strides = broadcast ? Shape(shape.size(), 0) : contiguous_strides(shape);
  tensors.push_back(t);
  return t.id;
}

// flash_attention's spec, with the views its tasks bind: q and out with each KV head's
// query heads stacked as rows, and the score matrix's positions for the causal mask.
AttentionSpec attention_spec(const Node& n, std::vector<GmTensor>& tensors) {
  AttentionSpec a;
  a.node = n.id;
  a.q = n.inputs[0];
  a.k = n.inputs[1];
  a.v = n.inputs[2];
  if (n.inputs.size() == 5) a.k_scale = n.inputs[3], a.v_scale = n.inputs[4];
  a.out = n.id;
  const Shape& q = tensors[a.q].shape;
  const Shape& k = tensors[a.k].shape;
  a.batch = q[0], a.heads = q[1], a.sq = q[2], a.dim = q[3], a.kv_heads = k[1], a.skv = k[2];
  a.causal = n.causal;
  a.scale = n.scalar.value_or(1.0);
  a.in = tensors[a.q].dtype;
  a.kv = tensors[a.k].dtype;
  const Shape stacked = {a.batch, a.kv_heads, a.rows(), a.dim};
  a.q_rows = add_view(tensors, a.q, tensors[a.q].name + ".rows", stacked, false);
  a.out_rows = add_view(tensors, a.out, tensors[a.out].name + ".rows", stacked, false);
  a.positions = add_view(tensors, a.q, n.name + ".scores", {a.batch, a.heads, a.sq, a.skv}, true);
  return a;
}

KernelSpec group_kernel(const TensorGraph& g, std::vector<GmTensor>& tensors, const std::vector<NodeId>& group,
                        const std::vector<bool>& stored) {
  KernelSpec k;
  k.name = kernel_name(g, group);
  k.nodes = group;
  const Node& first = g.node(group.front());
  if (first.kind == OpKind::FlashAttention) {
    k.kind = KernelKind::Attention;
    k.attention = attention_spec(first, tensors);
    return k;
  }
  const bool cube = first.kind == OpKind::Matmul;
  k.kind = cube ? KernelKind::Cube : KernelKind::Vector;
  BodyRequest req;
  req.nodes.assign(group.begin() + (cube ? 1 : 0), group.end());
  req.stored = &stored;
  if (cube) {
    CubeSpec c;
    c.matmul = first.id;
    c.a = first.inputs[0];
    c.b = first.inputs[1];
    c.c = first.id;
    c.transpose_a = first.transpose_a;
    c.transpose_b = first.transpose_b;
    c.in = tensors[c.a].dtype;
    c.acc = c.in == DType::I8 ? DType::I32 : DType::F32;
    c.out = first.dtype;
    const size_t rank = first.shape.size();
    c.batch = Shape(first.shape.begin(), first.shape.end() - 2);
    c.m = first.shape[rank - 2];
    c.n = first.shape[rank - 1];
    const Shape& a = tensors[c.a].shape;
    c.k = c.transpose_a ? a[rank - 2] : a[rank - 1];
    k.cube = c;
    k.zero_body = build_zero_body(tensors[c.c]);
    req.iteration = first.shape;
  }
  if (!req.nodes.empty()) {
    std::string why;
    auto body = build_vector_body(g, tensors, req, why);
    if (!body) internal_error("kernel \"" + k.name + "\": " + why);
    k.body = std::move(*body);
  }
  return k;
}

int root_of(const std::vector<GmTensor>& tensors, int t) {
  return tensors[t].alias_of < 0 ? t : tensors[t].alias_of;
}

void accesses(const std::vector<GmTensor>& tensors, const KernelSpec& k, std::set<int>& reads,
              std::set<int>& writes) {
  if (k.attention) {
    const AttentionSpec& a = *k.attention;
    for (int t : {a.q, a.k, a.v, a.k_scale, a.v_scale})
      if (t >= 0) reads.insert(root_of(tensors, t));
    writes.insert(root_of(tensors, a.out));
  }
  if (k.cube) {
    reads.insert(root_of(tensors, k.cube->a));
    reads.insert(root_of(tensors, k.cube->b));
    writes.insert(root_of(tensors, k.cube->c));
  }
  for (const GmAccess& a : k.body.loads) reads.insert(root_of(tensors, a.tensor));
  for (const GmAccess& a : k.body.stores) writes.insert(root_of(tensors, a.tensor));
}

// Kernels in dependency order (ties: graph order); `after` filled in.
std::vector<KernelSpec> order_kernels(std::vector<KernelSpec> kernels, const std::vector<NodeId>& priority,
                                      const std::vector<GmTensor>& tensors) {
  const size_t n = kernels.size();
  std::vector<std::set<int>> reads(n), writes(n);
  for (size_t i = 0; i < n; ++i) accesses(tensors, kernels[i], reads[i], writes[i]);
  std::vector<std::vector<int>> deps(n);
  std::vector<int> pending(n, 0);
  std::vector<std::vector<int>> users(n);
  for (size_t i = 0; i < n; ++i)
    for (size_t j = 0; j < n; ++j) {
      if (i == j) continue;
      const bool depends = std::any_of(reads[i].begin(), reads[i].end(), [&](int t) { return writes[j].count(t) > 0; });
      if (!depends) continue;
      deps[i].push_back(static_cast<int>(j));
      users[j].push_back(static_cast<int>(i));
      ++pending[i];
    }
  using Entry = std::pair<NodeId, int>;
  std::priority_queue<Entry, std::vector<Entry>, std::greater<>> ready;
  for (size_t i = 0; i < n; ++i)
    if (pending[i] == 0) ready.push({priority[i], static_cast<int>(i)});
  std::vector<int> order, position(n, -1);
  while (!ready.empty()) {
    const int i = ready.top().second;
    ready.pop();
    position[i] = static_cast<int>(order.size());
    order.push_back(i);
    for (int u : users[i])
      if (--pending[u] == 0) ready.push({priority[u], u});
  }
  if (order.size() != n) {
    std::string stuck;
    for (size_t i = 0; i < n; ++i)
      if (position[i] < 0) stuck += (stuck.empty() ? "\"" : ", \"") + kernels[i].name + "\"";
    usage_error("fusion: the groups of kernels " + stuck + " depend on each other in a cycle");
  }
  std::vector<KernelSpec> out;
  for (int i : order) {
    KernelSpec k = std::move(kernels[i]);
    k.after.clear();
    for (int d : deps[i]) k.after.push_back(position[d]);
    std::sort(k.after.begin(), k.after.end());
    out.push_back(std::move(k));
  }
  return out;
}

}  // namespace

Partition partition_graph(const TensorGraph& g, const std::optional<std::vector<std::vector<int>>>& fusion,
                          bool cv_fusion) {
  GmTensors table = gm_tensors(g);
  const GraphFacts facts(g);
  const Grouper grouper(g, facts, table.tensors, cv_fusion);
  const std::vector<std::vector<NodeId>> groups = fusion ? grouper.validate(*fusion) : grouper.default_groups();

  std::vector<int> group_of(g.nodes().size(), -1);
  for (size_t gi = 0; gi < groups.size(); ++gi)
    for (NodeId id : groups[gi]) group_of[id] = static_cast<int>(gi);
  std::vector<bool> stored(g.nodes().size(), false);
  for (NodeId id : g.compute_nodes()) {
    stored[id] = facts.is_output[id];
    for (NodeId c : facts.consumers[id]) stored[id] = stored[id] || group_of[c] != group_of[id];
  }

  std::vector<KernelSpec> kernels;
  std::vector<NodeId> priority;
  for (const std::vector<NodeId>& group : groups) {
    kernels.push_back(group_kernel(g, table.tensors, group, stored));
    priority.push_back(group.front());
  }
  for (const ViewCopy& c : table.copies) {
    KernelSpec k;
    k.kind = KernelKind::Copy;
    k.name = "copy." + table.tensors[c.dst].name;
    k.body = build_copy_body(table.tensors[c.src], table.tensors[c.dst]);
    kernels.push_back(std::move(k));
    priority.push_back(c.anchor);
  }

  Partition p;
  p.kernels = order_kernels(std::move(kernels), priority, table.tensors);
  p.tensors = std::move(table.tensors);
  for (const KernelSpec& k : p.kernels)
    if (!k.nodes.empty()) p.fusion.push_back(std::vector<int>(k.nodes.begin(), k.nodes.end()));
  return p;
}

}  // namespace pto::passes
