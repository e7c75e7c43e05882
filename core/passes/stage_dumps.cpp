// Text dumps of the Tile Graph and the Block Graph (see stage_dumps.h).
#include "core/passes/stage_dumps.h"

#include <algorithm>

#include "core/passes/block_partition.h"
#include "core/passes/number_text.h"

namespace pto::passes {
namespace {

std::string node_list(const TensorGraph& g, const std::vector<NodeId>& nodes) {
  std::string out;
  for (NodeId id : nodes) {
    if (!out.empty()) out += ", ";
    out += node_label(g.node(id));
  }
  return out.empty() ? "-" : out;
}

std::string tensor_type(const GmTensor& t) { return std::string(dtype_name(t.dtype)) + shape_str(t.shape); }

int64_t capacity(const Target& t, MemLevel l) {
  switch (l) {
    case MemLevel::L1: return t.l1;
    case MemLevel::L0A: return t.l0a;
    case MemLevel::L0B: return t.l0b;
    case MemLevel::L0C: return t.l0c;
    case MemLevel::UB: return t.ub;
    case MemLevel::GM:
    case MemLevel::WS: return 0;  // in GM: no capacity of its own
  }
  return 0;
}

std::string footprint_line(const TiledKernel& k, const Target& t) {
  std::string out = "  footprint:";
  bool any = false;
  for (int l = 1; l < kNumLevels; ++l) {
    if (k.footprint[l] == 0) continue;
    const MemLevel level = static_cast<MemLevel>(l);
    const int64_t cap = capacity(t, level);
    out += std::string(any ? "," : "") + " " + mem_level_name(level) + " " + num(k.footprint[l]) +
           (cap > 0 ? " / " + num(cap) : "") + " B";
    any = true;
  }
  return out + (any ? "" : " -") + "\n";
}

std::string grid_line(const std::vector<DimSplit>& dims) {
  Shape tile, counts, tails;
  for (const DimSplit& d : dims) {
    tile.push_back(d.tile);
    counts.push_back(d.count);
    tails.push_back(d.tail);
  }
  return "tile " + shape_str(tile) + "  tiles " + shape_str(counts) + "  tail " + shape_str(tails);
}

std::string step_names(const VectorBody& body, const std::vector<int>& steps) {
  std::string out;
  for (int s : steps) out += (out.empty() ? "" : ", ") + body.values[body.steps[s].dst].name;
  return out.empty() ? "-" : out;
}

// Which pass folds, merges and stores what.
void stream_lines(const VectorBody& body, const VecTiling& v, std::string& out) {
  const StreamPlan& plan = *v.stream;
  out += "  split reduction: each task streams dim " + num(plan.dim) + " in " + num(v.chunks.count) +
         " chunks of " + num(v.chunks.tile) + " (tail " + num(v.chunks.tail) + "), " +
         num(static_cast<int64_t>(plan.passes.size())) + " passes\n";
  for (size_t p = 0; p < plan.passes.size(); ++p) {
    const StreamPass& pass = plan.passes[p];
    std::vector<int> merged;
    for (const OnlineMerge& m : pass.merges) merged.insert(merged.end(), {m.first, m.second});
    std::string stores;
    for (int st : pass.stores) stores += (stores.empty() ? "" : ", ") + body.values[body.stores[st].value].name;
    out += "    pass " + num(static_cast<int64_t>(p)) + ": folds " + step_names(body, pass.reductions) +
           "; merged online " + step_names(body, merged) + "; stores " + (stores.empty() ? "-" : stores) +
           "; then " + step_names(body, pass.row_steps) + "\n";
  }
}

void ub_lines(const VectorBody& body, const VecTiling& v, int nbuffer, std::string& out) {
  out += "  UB buffers of one task (tile " + shape_str(v.tile) + ", nbuffer " + num(nbuffer) + "):\n";
  for (const UbBuffer& b : v.buffers) {
    if (b.value < 0) {
      out += "    " + b.scratch + "  " + dtype_name(b.dtype) + "  " + num(b.bytes) + " B @" + num(b.offset) +
             "  scratch\n";
      continue;
    }
    const VecValue& val = body.values[b.value];
    const bool load = val.kind == ValueKind::Load;
    const std::string name = b.pass >= 0 ? ".p" + num(b.pass) : load ? ".ub[" + num(b.slot) + "]" : ".ub";
    out += "    " + val.name + name + "  " + dtype_name(val.dtype) + "  " +
           num(b.bytes) + " B @" + num(b.offset) + "  " +
           (load ? "GM -> UB" : val.kind == ValueKind::Fill ? "fill" : "computed") + "\n";
  }
  for (const GmAccess& s : body.stores) out += "    " + body.values[s.value].name + "  UB -> GM\n";
}

void cube_lines(const Partition& p, const TiledKernel& k, const ResolvedConfig& rc, std::string& out) {
  const CubeSpec& s = *p.kernels[k.spec].cube;
  const CubeTiling& ct = k.cube;
  const CubeTile& c = rc.cube;
  out += "  matmul " + tensor_type(p.tensors[s.a]) + (s.transpose_a ? "^T" : "") + " x " +
         tensor_type(p.tensors[s.b]) + (s.transpose_b ? "^T" : "") + " -> " + tensor_type(p.tensors[s.c]) +
         "  M=" + num(s.m) + " K=" + num(s.k) + " N=" + num(s.n) + "\n";
  out += "  cube m=[" + num(c.mL0) + "," + num(c.mL1) + "] k=[" + num(c.kL0) + "," + num(c.kAL1) + "," + num(c.kBL1) +
         "] n=[" + num(c.nL0) + "," + num(c.nL1) + "]" + (c.split_k ? " split_k" : "") +
         (c.k_view > 0 ? " k_view=" + num(c.k_view) : "") + ", effective m=[" +
         num(ct.mL0) + "," + num(ct.mL1) + "] k=[" + num(ct.kL0) + "," + num(ct.kAL1) + "," + num(ct.kBL1) +
         "] n=[" + num(ct.nL0) + "," + num(ct.nL1) + "]\n";
  out += "  tiles: batch " + num(ct.batch) + " x m " + num(ct.m.count) + " (tail " + num(ct.m.tail) + ") x n " +
         num(ct.n.count) + " (tail " + num(ct.n.tail) + ");  K: " + num(ct.steps) + " steps of " + num(ct.k_step) +
         " (A every " + num(ct.ra) + ", B every " + num(ct.rb) + ")";
  if (ct.chunks > 1) out += ", split into " + num(ct.chunks) + " chunks of " + num(ct.chunk_steps) + " steps";
  out += "\n";
  auto slots = [](int n) { return n > 1 ? " x" + num(n) : std::string(); };
  const std::string& a = p.tensors[s.a].name;
  const std::string& b = p.tensors[s.b].name;
  out += "    " + a + "  GM -> L1 " + a + ".l1" + slots(ct.a_slots) + " (" + num(ct.a_l1) + " B) -> L0A " + a +
         ".l0a" + slots(ct.l0_slots) + " (" + num(ct.a_l0) + " B)\n";
  out += "    " + b + "  GM -> L1 " + b + ".l1" + slots(ct.b_slots) + " (" + num(ct.b_l1) + " B) -> L0B " + b +
         ".l0b" + slots(ct.l0_slots) + " (" + num(ct.b_l0) + " B)\n";
  out += "    " + p.tensors[s.c].name + "  L0C " + p.tensors[s.c].name + ".l0c (" + num(ct.c_l0) + " B, " +
         dtype_name(s.acc) + ") -> GM (FIX" + (ct.chunks > 1 ? ", atomic add" : "") + ")\n";
}

void attention_lines(const AttentionSpec& s, const AttentionTiling& a, std::string& out) {
  out += "  flash_attention B=" + num(s.batch) + " H=" + num(s.heads) + " KVH=" + num(s.kv_heads) + " SQ=" +
         num(s.sq) + " SKV=" + num(s.skv) + " D=" + num(s.dim) + (s.causal ? " causal" : "") +
         (s.quantized() ? " int8 KV" : "") + "\n";
  out += "  rows per KV head " + num(s.rows()) + " in blocks of " + num(a.row_blocks.tile) + " (tail " +
         num(a.row_blocks.tail) + "); KV " + num(s.skv) + " in blocks of " + num(a.kv_blocks.tile) + " (tail " +
         num(a.kv_blocks.tail) + ")" + (a.splits > 1 ? ", split " + num(a.splits) + " ways" : "") + "; order " +
         task_order_name(a.order) + "\n";
  out += "  c1 L0 m=" + num(a.qk.m) + " k=" + num(a.qk.k) + " n=" + num(a.qk.n) + "; c2 L0 m=" + num(a.pv.m) +
         " k=" + num(a.pv.k) + " n=" + num(a.pv.n) + "; v1 rows " + num(a.v1_rows) + ", v2 rows " + num(a.v2_rows) +
         "; " + num(a.units) + " vector unit" + (a.units > 1 ? "s" : "") + " of " + num(a.unit_rows(a.q_tile)) +
         " rows; hand-offs " + (a.direct ? "direct" : "through WS") + "; nbuffer " + num(a.nbuffer) + "\n";
  out += "  buffers of one cluster:\n";
  for (const ClusterBuffer& b : a.buffers)
    out += "    " + b.name + "  " + mem_level_name(b.level) + (b.unit ? " unit " + num(b.unit) : "") + "  " +
           dtype_name(b.dtype) + shape_str(b.shape) + "  " + num(b.bytes) + " B @" + num(b.offset) + "\n";
}

}  // namespace

std::string dump_tile_graph(const TensorGraph& g, const Partition& p, const TilePlan& plan,
                            const ResolvedConfig& rc, const Target& t) {
  std::string out = "target " + t.name + (t.hard_capacity ? " (hard capacities)" : " (soft capacities)") + "\n";
  for (size_t i = 0; i < plan.kernels.size(); ++i) {
    const TiledKernel& k = plan.kernels[i];
    const char* kind = k.kind == KernelKind::Cube ? "cube" : k.kind == KernelKind::Copy ? "copy"
                       : k.kind == KernelKind::Zero ? "zero" : k.kind == KernelKind::Attention ? "mix"
                       : k.kind == KernelKind::Combine ? "combine" : "vector";
    out += "kernel " + num(static_cast<int64_t>(i)) + " \"" + tiled_kernel_name(p, k) + "\" " + kind;
    if (!k.after.empty()) {
      out += "  after";
      for (int a : k.after) {
        out += ' ';
        out += num(a);
      }
    }
    out += "\n";
    if (k.kind != KernelKind::Zero && k.kind != KernelKind::Combine)
      out += "  nodes: " + node_list(g, p.kernels[k.spec].nodes) + "\n";
    if (k.kind == KernelKind::Cube) cube_lines(p, k, rc, out);
    if (k.attention) attention_lines(*p.kernels[k.spec].attention, *k.attention, out);
    if (!k.body->empty()) {
      out += "  iteration " + shape_str(k.body->iteration) + "  ";
      out += k.kind == KernelKind::Cube ? "epilogue sub-tile " + shape_str(k.vec.tile) + " per cube tile\n"
                                        : grid_line(k.vec.dims) + "\n";
      if (k.vec.stream) stream_lines(*k.body, k.vec, out);
      ub_lines(*k.body, k.vec, k.nbuffer, out);
    }
    out += footprint_line(k, t);
  }
  if (plan.violations.empty()) return out + "feasible\n";
  out += plan.feasible ? "feasible here (soft capacities), rules broken:\n" : "infeasible:\n";
  for (const Violation& v : plan.violations) out += "  " + v.rule + ": " + v.detail + "\n";
  return out;
}

std::string dump_block_graph(const Program& program) {
  std::vector<int> users(program.blocks.size(), 0);
  for (const Task& t : program.tasks) ++users[t.block];
  std::string out;
  for (const BlockProgram& b : program.blocks) {
    out += "block " + num(b.id) + " \"" + b.name + "\" " + core_type_name(b.core) + "  used by " + num(users[b.id]) +
           " tasks, " + num(static_cast<int64_t>(b.instrs.size())) + " instructions\n";
    for (const LocalBuffer& buf : b.buffers) {
      const char* layout = buf.layout == Layout::FractalA ? " FractalA" : buf.layout == Layout::FractalB ? " FractalB" : "";
      out += "    " + buf.name + "  " + mem_level_name(buf.level) + " " + dtype_name(buf.dtype) + shape_str(buf.shape) +
             layout + "  @" + num(buf.byte_offset) + "  " + num(buf.bytes()) + " B\n";
    }
  }
  return out;
}

}  // namespace pto::passes
