// The tile-shape verifier (see tile_rules.h).
#include "core/passes/tile_rules.h"

#include <algorithm>

#include "core/passes/cube_layout.h"
#include "core/passes/number_text.h"

namespace pto::passes {
namespace {

std::string eq(const char* name, int64_t v) { return std::string(name) + "=" + num(v); }
std::string bytes_of(DType t) { return num(dtype_size(t)) + " B"; }

}  // namespace

void RuleCheck::fail(const char* rule, const std::string& detail, bool hard) {
  Violation v{rule, kernel_ ? "kernel \"" + *kernel_ + "\": " + detail : detail};
  const bool seen = std::any_of(plan_.violations.begin(), plan_.violations.end(), [&](const Violation& o) {
    return o.rule == v.rule && o.detail == v.detail;
  });
  if (!seen) plan_.violations.push_back(std::move(v));
  if (hard) plan_.feasible = false;
}

void RuleCheck::alignment(const char* rule, const char* name, int64_t v, int64_t align, DType dtype) {
  if (v % align == 0) return;
  fail(rule, eq(name, v) + " is not a multiple of " + num(align) + " (" + dtype_name(dtype) + ")",
       target_.hard_capacity);
}

void RuleCheck::cube(const CubeSpec& spec, const CubeTile& c, const CubeTiling& ct, bool has_epilogue) {
  const bool hard = target_.hard_capacity;
  const int64_t a = cube_align(spec.in);
  const std::pair<const char*, int64_t> sizes[] = {{"mL0", c.mL0}, {"mL1", c.mL1}, {"kAL1", c.kAL1},
                                                   {"kBL1", c.kBL1}, {"nL1", c.nL1}};
  for (const auto& [name, v] : sizes) alignment("cube alignment", name, v, a, spec.in);
  alignment("kL0 % 16", "kL0", c.kL0, a, spec.in);
  alignment("nL0 % 16", "nL0", c.nL0, a, spec.in);

  const int64_t kL1 = std::min(c.kAL1, c.kBL1);
  const char* kL1_name = c.kAL1 <= c.kBL1 ? "kAL1" : "kBL1";
  auto l0_in_l1 = [&](const char* l0_name, int64_t l0, const char* l1_name, int64_t l1) {
    if (l0 > l1) {
      fail("L0 <= L1", eq(l0_name, l0) + " > " + eq(l1_name, l1), hard);
    } else if (l1 % l0 != 0) {
      fail("L1 % L0", eq(l1_name, l1) + " is not a multiple of " + eq(l0_name, l0), hard);
    }
  };
  l0_in_l1("mL0", c.mL0, "mL1", c.mL1);
  l0_in_l1("kL0", c.kL0, kL1_name, kL1);
  if (c.kL0 <= kL1 && std::max(c.kAL1, c.kBL1) % c.kL0 != 0)
    l0_in_l1("kL0", c.kL0, c.kAL1 > c.kBL1 ? "kAL1" : "kBL1", std::max(c.kAL1, c.kBL1));
  l0_in_l1("nL0", c.nL0, "nL1", c.nL1);
  if (std::max(c.kAL1, c.kBL1) % kL1 != 0)
    fail("kAL1/kBL1", eq("kAL1", c.kAL1) + " and " + eq("kBL1", c.kBL1) + ": the larger must be a multiple of "
         "the smaller", true);

  // Strings only for rules that fail: analyze() runs this per candidate. The capacity
  // rules are PyPTO's (docs/zh/api/config/pypto-set_cube_tile_shapes.md, 空间约束): one
  // A and one B tile per level, times the slots the kernel's depth gives each.
  auto times = [&](int slots) { return slots > 1 ? num(slots) + " slots x " : std::string(); };
  if (ct.l0_slots * ct.a_l0 > target_.l0a)
    fail("L0A capacity", times(ct.l0_slots) + eq("mL0", align_up(ct.mL0, a)) + " x " + eq("kL0", align_up(ct.kL0, a)) +
         " x " + bytes_of(spec.in) + " = " + num(ct.l0_slots * ct.a_l0) + " B > L0A " + num(target_.l0a) + " B", hard);
  if (ct.l0_slots * ct.b_l0 > target_.l0b)
    fail("L0B capacity", times(ct.l0_slots) + eq("kL0", align_up(ct.kL0, a)) + " x " + eq("nL0", align_up(ct.nL0, a)) +
         " x " + bytes_of(spec.in) + " = " + num(ct.l0_slots * ct.b_l0) + " B > L0B " + num(target_.l0b) + " B", hard);
  if (ct.c_l0 > target_.l0c)
    fail("L0C capacity", eq("mL1", align_up(ct.mL1, 16)) + " x " + eq("nL1", align_up(ct.nL1, 16)) + " x " +
         bytes_of(spec.acc) + " = " + num(ct.c_l0) + " B > L0C " + num(target_.l0c) +
         " B (L0C holds the accumulators of the whole [mL1, nL1] tile)", hard);
  const int64_t l1 = ct.a_slots * ct.a_l1 + ct.b_slots * ct.b_l1;
  if (l1 > target_.l1)
    fail("L1 capacity", "(" + times(ct.a_slots) + eq("mL1", align_up(ct.mL1, a)) + " x " +
         eq("kAL1", align_up(ct.kAL1, a)) + " + " + times(ct.b_slots) + eq("kBL1", align_up(ct.kBL1, a)) + " x " +
         eq("nL1", align_up(ct.nL1, a)) + ") x " + bytes_of(spec.in) + " = " + num(l1) + " B > L1 " +
         num(target_.l1) + " B", hard);

  if (c.k_view > 0) k_loop(spec, c, has_epilogue);
  if (!c.split_k) return;
  if (spec.out != DType::F32 && spec.out != DType::I32)
    fail("split_k", std::string("split_k needs an fp32/int32 output (PyPTO: 多核切K约束); the matmul writes ") +
         dtype_name(spec.out), true);
  if (has_epilogue) fail("split_k", "split_k cannot run with a fused epilogue (partial sums are not final)", true);
  if (spec.batch.size() + 2 > 4)
    fail("split_k", "split_k takes 2-4-D inputs; the matmul's are " + num(spec.batch.size() + 2) + "-D", true);
}

// The manual K loop (matmul_performance_guide.md, 手动构图方式) adds fp32 partial sums
// of whole L1 K tiles: a view must hold whole kAL1 and kBL1 tiles, and be a real split.
void RuleCheck::k_loop(const CubeSpec& spec, const CubeTile& c, bool has_epilogue) {
  const int64_t kL1 = std::max(c.kAL1, c.kBL1);
  if (c.split_k) fail("k_view", "k_view and split_k are two ways to split K; give one", true);
  if (c.k_view % kL1 != 0)
    fail("k_view", eq("k_view", c.k_view) + " is not a multiple of " + eq(c.kAL1 >= c.kBL1 ? "kAL1" : "kBL1", kL1), true);
  if (c.k_view >= spec.k) fail("k_view", eq("k_view", c.k_view) + " >= K=" + num(spec.k) + ": one view, no K loop", true);
  if (spec.out != DType::F32)
    fail("k_view", std::string("the K loop adds fp32 partial sums; the matmul writes ") + dtype_name(spec.out), true);
  if (has_epilogue) fail("k_view", "a K loop cannot run with a fused epilogue (partial sums are not final)", true);
}

void RuleCheck::vec_rank(const Shape& given, const Shape& iteration) {
  if (given.size() >= iteration.size()) return;
  fail("vec tile rank", "vec " + shape_str(given) + " has " + num(given.size()) + " dims, the kernel iterates over " +
       shape_str(iteration) + " (rank " + num(iteration.size()) + ")", true);
}

// A value that leaves the kernel but is broadcast along a dim the tiles cut would be
// stored again, unordered, by every tile along that dim: a race between cores (and
// wasted writes). Such a value needs its own kernel, or tiles that keep that dim whole.
void RuleCheck::broadcast_stores(const VectorBody& body, const Shape& vt) {
  const Shape& it = body.iteration;
  for (const GmAccess& store : body.stores) {
    for (int d = 0; d < static_cast<int>(it.size()); ++d) {
      const bool reduced = std::find(body.reduce_dims.begin(), body.reduce_dims.end(), d) != body.reduce_dims.end();
      if (spans(store.mask, d) || reduced || vt[d] >= it[d]) continue;
      fail("broadcast store split", "\"" + body.values[store.value].name + "\" leaves the kernel but is broadcast along dim " +
           num(d) + " of " + shape_str(it) + ", which the tile " + shape_str(vt) +
           " cuts: every tile would store it again (give it its own fusion group)", true);
      break;
    }
  }
}

void RuleCheck::vector(const TensorGraph& g, const VectorBody& body, const Shape& vt, const VecTiling& layout,
                       const std::string& unstreamable) {
  const Shape& it = body.iteration;
  for (size_t i = 0; i < body.reduce_dims.size(); ++i) {
    const int d = body.reduce_dims[i];
    if (vt[d] >= it[d] || (layout.stream && layout.stream->dim == d)) continue;
    const Node& n = g.node(body.reduce_nodes[i]);
    fail("reduction axis split", std::string(op_kind_name(n.kind)) + " \"" + n.name + "\" reduces dim " + num(d) +
         " of " + shape_str(it) + " (size " + num(it[d]) + ") but the tile " + shape_str(vt) + " cuts it to " +
         num(vt[d]) + (unstreamable.empty() ? " (a Cube epilogue cannot stream it)" : ": " + unstreamable), true);
  }
  broadcast_stores(body, vt);
  const int last = static_cast<int>(it.size()) - 1;
  if (last >= 0 && vt[last] < it[last]) {
    for (const VecValue& v : body.values) {
      const int64_t row = vt[last] * dtype_size(v.dtype);
      if (!spans(v.mask, last) || row % target_.align_bytes == 0) continue;
      fail("UB alignment", "the tile's last dim " + num(vt[last]) + " x " + bytes_of(v.dtype) + " = " + num(row) +
           " B of \"" + v.name + "\" is not a multiple of " + num(target_.align_bytes) +
           " B and does not cover the dim (" + num(it[last]) + ")", target_.hard_capacity);
      break;
    }
  }
  if (layout.ub_bytes > target_.ub)
    fail("UB capacity", "the live UB buffers of tile " + shape_str(vt) + " need " + num(layout.ub_bytes) +
         " B > UB " + num(target_.ub) + " B", target_.hard_capacity);
}

}  // namespace pto::passes
