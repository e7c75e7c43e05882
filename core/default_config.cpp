// default_config: the op's hand-picked config, made to fit the shape and the target.
//
// A PyPTO user's hand-picked tiles are written for large shapes and one chip. Here they
// are first clamped to the graph (a tile larger than its dim shrinks to the dim, kept
// aligned and a multiple of its L0 size), then, while analyze() reports the config
// infeasible, the largest tile size behind the broken rule is halved: L1 sizes first
// (L1 and L0C capacity), then L0 sizes (L0A/L0B), then the vec tile's rows and, for a
// row too wide for UB, its reduced dim (UB). Rules that halving cannot fix get their
// direct fix (a reduction axis a Cube epilogue cannot split made whole, the
// vec tile padded to the iteration rank, split-K dropped). The result is the baseline
// the tuner must beat and what the JIT falls back to.
#include <algorithm>

#include "core/analyze.h"
#include "core/op_library.h"
#include "core/passes/attention_tiling.h"
#include "core/passes/cube_layout.h"
#include "core/passes/fusion_partition.h"
#include "core/passes/resolve_config.h"

namespace pto {
namespace {

constexpr int kMaxShrinkRounds = 128;

// What of the graph the clamping and shrinking need to know.
struct GraphExtents {
  bool has_cube = false;
  int64_t m = 0, n = 0, k = 0, align = 16;       // largest matmul dims, coarsest alignment
  std::vector<const passes::VectorBody*> bodies;  // every vector body (epilogues included)
  // flash_attention's smallest KV block: an int8 cache dequantizes whole 128-token scale
  // blocks (attention_tiling.cpp, rule "attention int8 block").
  int64_t attention_kv_floor = 16;
};

GraphExtents extents_of(const passes::Partition& p) {
  GraphExtents e;
  for (const passes::KernelSpec& k : p.kernels) {
    if (k.cube) {
      e.has_cube = true;
      e.m = std::max(e.m, k.cube->m);
      e.n = std::max(e.n, k.cube->n);
      e.k = std::max(e.k, k.cube->k);
      e.align = std::max(e.align, passes::cube_align(k.cube->in));
    }
    if (!k.body.empty()) e.bodies.push_back(&k.body);
    if (k.attention && k.attention->quantized())
      e.attention_kv_floor = std::min(kKvQuantBlock, k.attention->skv);
  }
  return e;
}

// L0 aligned and no larger than the aligned dim; L1 a multiple of L0, no larger than
// the dim rounded up to L0 (so L1 % L0 still holds).
void clamp_axis(int64_t& l0, int64_t& l1, int64_t dim, int64_t align) {
  l0 = std::min(align_up(l0, align), align_up(dim, align));
  l1 = std::min(align_up(l1, l0), align_up(dim, l0));
}

void clamp_cube(CubeTile& c, const GraphExtents& e) {
  clamp_axis(c.mL0, c.mL1, e.m, e.align);
  clamp_axis(c.nL0, c.nL1, e.n, e.align);
  int64_t k_l1 = std::min(c.kAL1, c.kBL1);
  clamp_axis(c.kL0, k_l1, e.k, e.align);
  int64_t& larger = c.kAL1 >= c.kBL1 ? c.kAL1 : c.kBL1;
  int64_t& smaller = c.kAL1 >= c.kBL1 ? c.kBL1 : c.kAL1;
  smaller = k_l1;
  larger = std::min(align_up(larger, smaller), align_up(e.k, smaller));
}

// The largest extent any vector body has at vec position `from_end` (0 = last dim).
int64_t widest_at(const GraphExtents& e, size_t from_end) {
  int64_t widest = 0;
  for (const passes::VectorBody* b : e.bodies)
    if (b->iteration.size() > from_end) widest = std::max(widest, b->iteration[b->iteration.size() - 1 - from_end]);
  return widest;
}

bool reduced_at(const GraphExtents& e, size_t from_end) {
  for (const passes::VectorBody* b : e.bodies)
    for (int d : b->reduce_dims)
      if (b->iteration.size() - 1 - d == from_end) return true;
  return false;
}

void clamp_vec(Shape& vec, const GraphExtents& e) {
  for (size_t i = 0; i < vec.size(); ++i) {
    const int64_t widest = widest_at(e, i);
    int64_t& v = vec[vec.size() - 1 - i];
    if (widest > 0) v = std::min(v, widest);
  }
}

bool has_rule(const std::vector<Violation>& v, const char* rule) {
  return std::any_of(v.begin(), v.end(), [&](const Violation& x) { return x.rule == rule; });
}

int64_t halved(int64_t v, int64_t align) { return std::max(align, v / 2 / align * align); }

// L0 no larger than L1 and dividing it, after L1 shrank.
void refit_l0(int64_t& l0, int64_t l1, int64_t align) {
  l0 = std::min(l0, l1);
  while (l0 > align && l1 % l0 != 0) l0 -= align;
}

// Halves the largest of `sizes` that can still shrink; false if none can.
bool halve_largest(std::initializer_list<int64_t*> sizes, int64_t align) {
  int64_t* largest = nullptr;
  for (int64_t* s : sizes)
    if (*s > align && (!largest || *s > *largest)) largest = s;
  if (!largest) return false;
  *largest = halved(*largest, align);
  return true;
}

// Keeps kL0 dividing the K step and the larger of kAL1/kBL1 a multiple of the smaller.
void refit_k(CubeTile& c, int64_t a) {
  int64_t& larger = c.kAL1 >= c.kBL1 ? c.kAL1 : c.kBL1;
  const int64_t smaller = std::min(c.kAL1, c.kBL1);
  larger = std::max(smaller, larger / smaller * smaller);
  refit_l0(c.kL0, smaller, a);
}

void refit_l0s(CubeTile& c, int64_t a) {
  refit_l0(c.mL0, c.mL1, a);
  refit_l0(c.nL0, c.nL1, a);
  refit_k(c, a);
}

bool shrink_l1(CubeTile& c, bool with_k, int64_t a) {
  int64_t& k_larger = c.kAL1 >= c.kBL1 ? c.kAL1 : c.kBL1;
  int64_t& k_smaller = c.kAL1 >= c.kBL1 ? c.kBL1 : c.kAL1;
  const bool equal = c.kAL1 == c.kBL1;
  if (!(with_k ? halve_largest({&c.mL1, &c.nL1, &k_larger}, a) : halve_largest({&c.mL1, &c.nL1}, a))) return false;
  if (equal) k_smaller = k_larger;
  refit_l0s(c, a);
  return true;
}

bool shrink_l0(CubeTile& c, bool a_side, int64_t a) {
  if (!(a_side ? halve_largest({&c.mL0, &c.kL0}, a) : halve_largest({&c.kL0, &c.nL0}, a))) return false;
  refit_l0s(c, a);
  return true;
}

// Halves the largest row dim of the vec tile that is not a reduction axis, else its
// last dim (kept a multiple of 16 elements): a row too wide for UB is then streamed in
// chunks (a split reduction, docs/compiler.md).
bool shrink_vec_rows(Shape& vec, const GraphExtents& e) {
  int64_t* largest = nullptr;
  for (size_t i = 1; i < vec.size(); ++i) {
    int64_t& v = vec[vec.size() - 1 - i];
    if (v > 1 && !reduced_at(e, i) && (!largest || v > *largest)) largest = &v;
  }
  if (largest) {
    *largest /= 2;
    return true;
  }
  int64_t& last = vec.back();
  if (last <= 16) return false;
  last = halved(last, 16);
  return true;
}

Shape widest_fallback_vec(const GraphExtents& e) {
  const passes::VectorBody* widest = e.bodies.front();
  for (const passes::VectorBody* b : e.bodies)
    if (b->iteration.size() > widest->iteration.size()) widest = b;
  return passes::fallback_vec(widest->iteration, widest->reduce_dims);
}

// Fixes for rules halving does not address.
bool fix_structure(TileConfig& c, const std::vector<Violation>& v, const GraphExtents& e) {
  bool changed = false;
  if (has_rule(v, "split_k") && c.cube && c.cube->split_k) {
    c.cube->split_k = false;
    changed = true;
  }
  if (has_rule(v, "k_view") && c.cube && c.cube->k_view > 0) {
    c.cube->k_view = 0;
    changed = true;
  }
  if (has_rule(v, "vec tile rank") && c.vec) {
    size_t rank = 0;
    for (const passes::VectorBody* b : e.bodies) rank = std::max(rank, b->iteration.size());
    c.vec->insert(c.vec->begin(), rank - std::min(rank, c.vec->size()), 1);
    changed = true;
  }
  if (has_rule(v, "reduction axis split") && c.vec) {
    for (size_t i = 0; i < c.vec->size(); ++i) {
      int64_t& x = (*c.vec)[c.vec->size() - 1 - i];
      if (reduced_at(e, i) && x < widest_at(e, i)) {
        x = widest_at(e, i);
        changed = true;
      }
    }
  }
  return changed;
}

// flash_attention: the deep QK preload first (on a direct target its FIFOs land in L1 and
// UB), then the vector slices' rows (UB), then the matmuls' L0 tiles when an L0
// overflows, then the KV block, the Q block and the pipeline's depth, each halved down
// to a floor. v1's rows stay whole 16-row fractals: on a direct target its slice of P goes
// straight into L1 (attention_tiling.cpp, rule "attention alignment").
bool shrink_attention(TileConfig& c, const std::vector<Violation>& v, int64_t kv_floor) {
  auto halve = [](int64_t& x, int64_t floor) {
    if (x <= floor) return false;
    x = std::max(floor, x / 2);
    return true;
  };
  if (c.attention->preload) {
    c.attention->preload.reset();
    return true;
  }
  for (const auto& [stage, floor] : {std::pair{"v1", 16}, std::pair{"v2", 8}}) {
    StageTiles& st = c.stages[stage];
    if (!st.vec) st.vec = passes::fallback_stage(stage).vec;
    if (halve(st.vec->front(), floor)) return true;
  }
  if (has_rule(v, "L0A capacity") || has_rule(v, "L0B capacity") || has_rule(v, "L0C capacity")) {
    bool changed = false;
    for (const char* stage : {"c1", "c2"}) {
      StageTiles& st = c.stages[stage];
      if (!st.cube) st.cube = passes::fallback_stage(stage).cube;
      changed |= halve_largest({&st.cube->mL0, &st.cube->kL0, &st.cube->nL0}, 16);
    }
    if (changed) return true;
  }
  AttentionTiles& a = *c.attention;
  if (halve(a.kv_tile, kv_floor) || halve(a.q_tile, 16)) return true;
  if (c.nbuffer_or_default() > 1) {
    c.nbuffer = c.nbuffer_or_default() - 1;
    return true;
  }
  return false;
}

// A long flash_attention (32 k tokens) in 128 x 256 blocks is more instructions than a
// program may hold (core/size_limits.h): larger blocks (the KV block, with one buffer
// where two no longer fit, else the Q block), the first that is feasible and smaller.
void grow_attention_into_limits(TileConfig& c, const Analyzer& analyzer) {
  for (TilingSummary s = analyzer.analyze(c); s.feasible && !s.within_program_limits();) {
    TileConfig kv = c, kv_single = c, q = c;
    kv.attention->kv_tile = kv_single.attention->kv_tile = 2 * c.attention->kv_tile;
    kv_single.nbuffer = 1;
    q.attention->q_tile *= 2;
    bool grown = false;
    for (TileConfig* larger : {&kv, &kv_single, &q}) {
      if (StageTiles& v1 = larger->stages["v1"]; v1.vec) v1.vec->back() = std::max(v1.vec->back(), larger->attention->kv_tile);
      const TilingSummary next = analyzer.analyze(*larger);
      if (!next.feasible || next.instructions() >= s.instructions()) continue;
      c = *larger;
      s = next;
      grown = true;
      break;
    }
    if (!grown) return;
  }
}

bool shrink(TileConfig& c, const std::vector<Violation>& v, const GraphExtents& e) {
  if (c.attention) return shrink_attention(c, v, e.attention_kv_floor);
  if (fix_structure(c, v, e)) return true;
  if (c.cube) {
    const int64_t a = e.align;
    if (has_rule(v, "L1 capacity") && shrink_l1(*c.cube, true, a)) return true;
    if (has_rule(v, "L0C capacity") && shrink_l1(*c.cube, false, a)) return true;
    if (has_rule(v, "L0A capacity") && shrink_l0(*c.cube, true, a)) return true;
    if (has_rule(v, "L0B capacity") && shrink_l0(*c.cube, false, a)) return true;
  }
  if (has_rule(v, "UB capacity") && !e.bodies.empty()) {
    if (!c.vec) c.vec = widest_fallback_vec(e);
    return shrink_vec_rows(*c.vec, e);
  }
  return false;
}

}  // namespace

TileConfig default_config(const Workload& w, const TensorGraph& g, const Target& t) {
  TileConfig c = find_op(w.op).hand_picked(w);
  const passes::Partition partition = passes::partition_graph(g, c.fusion, t.cv_fusion());
  const GraphExtents e = extents_of(partition);
  if (c.cube && e.has_cube) clamp_cube(*c.cube, e);
  if (c.vec && !e.bodies.empty()) clamp_vec(*c.vec, e);
  for (const passes::KernelSpec& k : partition.kernels)
    if (k.attention && c.attention) {  // the blocks no larger than what they cut
      c.attention->q_tile = std::min(c.attention->q_tile, k.attention->rows());
      c.attention->kv_tile = std::min(c.attention->kv_tile, k.attention->skv);
      // The output update reads head rows whole (attention_tiling.cpp, rule "attention v2").
      StageTiles& v2 = c.stages["v2"];
      if (!v2.vec) v2.vec = passes::fallback_stage("v2").vec;
      v2.vec->back() = std::max(v2.vec->back(), k.attention->dim);
    }
  const Analyzer analyzer(g, t);
  for (int round = 0; round < kMaxShrinkRounds; ++round) {
    const TilingSummary s = analyzer.analyze(c);
    if (s.feasible || !shrink(c, s.violations, e)) break;
  }
  if (c.attention) grow_attention_into_limits(c, analyzer);
  return c;
}

}  // namespace pto
